"""Dasgupta's cost (Dasgupta 2016; Greenberg et al. 2021, Eq. 4) as a split model.

For non-negative similarities ``w``, the cost of a binary tree is
``sum over internal nodes of (|L| + |R|) * sum_{x in L, y in R} w_xy``; the
split log-potential is its negative::

    psi(L, R) = -(|L| + |R|) * cut(L, R),   cut(L, R) = W(S) - W(L) - W(R),

with ``W(X) = sum_{i<j in X} w_ij`` computed once per subset, so the MAP tree
is the tree of minimum cost and ``beta`` is the inverse temperature.

:class:`ExponentialTreeEnergy` is its generative reading: similarities drawn
from exponential distributions whose rate is ``beta`` times the size of the
pair's lowest common ancestor over the number of items, so that ``log phi`` is
the exact log-likelihood
of the similarities given the tree and ``log Z`` the exact evidence.
"""

import math
import numbers

import numpy as np
from numba import njit

from scipy import sparse

from .._core.pairwise import (check_scale, local_scales, new_item_similarities,
                              similarity_from_distances)
from .._core.subsets import subset_pair_sums
from .._core.trees import check_tree, tree_splits
from .._core.validation import check_random_state, check_scalar_param
from ._family_stats import family_graph_pair_sums, family_item_sums_per_row, family_pair_sums
from ._split import InsertionInputs, SplitKernelInputs, SplitModel


@njit(cache=True, inline="always")
def dasgupta_split(params, stats, full, parent, left, right):
    """``-(|S|) * (W(S) - W(L) - W(R))``; ``stats = [W, |X|]``."""
    return -stats[1, parent] * (stats[0, parent] - stats[0, left] - stats[0, right])


@njit(cache=True, inline="always")
def exponential_tree_split(params, stats, full, parent, left, right):
    """``-params[1] |S| cut(L, R) + |L||R| (params[2] + params[3] log |S|)``; ``stats = [W, |X|]``.

    With ``params = [1, beta / N, log(beta / N), 1]`` it is the log-likelihood
    of the pairs split at ``S`` (:class:`ExponentialTreeEnergy`, ``N`` items);
    with ``[1, 1 / N, 1 / beta, 0]`` its derivative in ``beta``.
    """
    size = stats[1, parent]
    cut = stats[0, parent] - stats[0, left] - stats[0, right]
    return (-params[1] * size * cut
            + stats[1, left] * stats[1, right] * (params[2] + params[3] * math.log(size)))


class DasguptaEnergy(SplitModel):
    """Dasgupta's cost as a split log-potential.

    Parameters
    ----------
    similarity : {'exp', 'precomputed'}, default='exp'
        How the similarities ``w`` come from the matrix given to :meth:`fit`:
        ``'exp'``: it is a distance matrix ``D`` and ``w = exp(-D / scale)``;
        ``'precomputed'``: it is the non-negative similarity matrix itself.
    scale : {'local', 'median'}, float or None, default='local'
        Length scale of ``'exp'``. ``'local'``: each pair's own,
        ``w_ij = exp(-d_ij / sqrt(sigma_i sigma_j))`` with ``sigma_i`` the
        distance of item ``i`` to its ``n_neighbors``-th nearest neighbour
        (self-tuning scale). ``'median'`` (or ``None``): the median
        off-diagonal distance for every pair; a float: that length.
    n_neighbors : int, default=20
        The neighbour whose distance is ``sigma_i`` with ``scale='local'``.

    Notes
    -----
    Why local scales by default: the top split of Dasgupta's cost,
    ``|S| cut(L, R)``, is weighted by the size of the whole set, so splitting
    off one item whose similarities to all others are small saves one unit of
    ``|S|`` on every pair cut by the next (balanced) split at the price of that
    item's few similarities. With one length scale for all pairs (the
    median), items far from everything (outliers, the tails of a standardised
    variable) have total similarities far below the clusters' cut, and the MAP
    tree peels them off one by one at its top: the ``n_clusters`` cut then
    returns a few singletons and one big cluster. Local scales give every item
    similarities of the same order to its own neighbourhood, and the MAP tree
    splits clusters first (see the user guide, "Choosing ... the energies'
    parameters", for the figures).

    Attributes
    ----------
    similarity_ : ndarray or sparse matrix of shape (N, N)
        The similarities ``w`` (zero diagonal); sparse (CSR) when :meth:`fit`
        was given a sparse matrix: the similarities then live on its stored
        entries only (a graph's edges; ``O(edges)`` memory), and ``'exp'``
        takes ``scale`` as the median distance over those edges.
    scale_ : float, ndarray of shape (N,) or None
        The length scale of ``'exp'``: one float, or ``sigma_i`` per item with
        ``scale='local'`` (``None`` for ``'precomputed'``); new items are
        placed on it (``insertion_inputs``), a new item's own ``sigma``
        being its distance to its ``n_neighbors``-th nearest fitted item.
    n_items_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import DasguptaEnergy
    >>> w = np.array([[0., 1., 0.], [1., 0., 0.], [0., 0., 0.]])
    >>> energy = DasguptaEnergy(similarity="precomputed").fit(w)
    >>> energy.log_potential(((0, 1), 2))   # cost 2 * w_01 at the node {0, 1}
    -2.0
    """

    input_kind = "distances"

    def __init__(self, similarity="exp", scale="local", n_neighbors=20):
        self.similarity = similarity
        self.scale = scale
        self.n_neighbors = n_neighbors

    def fit(self, data, y=None, *, copy=True):
        """Bind the model to an (N, N) distance (or similarity) matrix, dense or sparse.

        ``copy=False``: a dense float64 ``data`` may be overwritten by the
        similarities (one N x N array less; the caller gives it up).
        """
        if sparse.issparse(data):
            return self._fit_graph(data)
        w, self.scale_ = similarity_from_distances(data, self.similarity, self.scale,
                                                   return_scale=True, copy=copy,
                                                   n_neighbors=self.n_neighbors)
        if w.size and w.min() < 0:  # a reduction: no (N, N) temporary
            raise ValueError("Dasgupta's cost needs non-negative similarities.")
        self.similarity_ = w
        self.n_items_ = w.shape[0]
        return self

    def _fit_graph(self, data):
        """Similarities on the stored entries of a sparse (N, N) matrix (a graph's edges)."""
        check_scale(self.scale, self.n_neighbors)
        graph = sparse.csr_matrix(data, dtype=np.float64)
        n = graph.shape[0]
        if graph.shape != (n, n):
            raise ValueError(f"The graph must be square (N, N), got shape {graph.shape}.")
        if not np.all(np.isfinite(graph.data)) or np.any(graph.data < 0):
            raise ValueError("The graph's entries must be finite and non-negative.")
        # One value per unordered pair (explicit zeros, i.e. zero distances, kept).
        off = graph.tocoo()
        keep = off.row != off.col
        low = np.minimum(off.row[keep], off.col[keep]).astype(np.int64)
        high = np.maximum(off.row[keep], off.col[keep]).astype(np.int64)
        _, first = np.unique(low * n + high, return_index=True)
        low, high, values = low[first], high[first], off.data[keep][first]
        self.scale_ = None
        if self.similarity == "exp" and self.scale == "local":
            self.scale_ = _graph_local_scales(low, high, values, n, self.n_neighbors)
            values = np.exp(-values / np.sqrt(self.scale_[low] * self.scale_[high]))
        elif self.similarity == "exp":
            width = (float(np.median(values)) if self.scale in (None, "median")
                     else float(self.scale))
            self.scale_ = width if width > 0 else 1.0
            values = np.exp(-values / self.scale_)
        elif self.similarity != "precomputed":
            raise ValueError(f"similarity must be 'exp' or 'precomputed', got "
                             f"{self.similarity!r}.")
        w = sparse.csr_matrix((np.concatenate([values, values]),
                               (np.concatenate([low, high]), np.concatenate([high, low]))),
                              shape=(n, n))
        w.sort_indices()
        self.similarity_ = w
        self.n_items_ = n
        return self

    def _dense_similarity(self):
        w = self.similarity_
        return w.toarray() if sparse.issparse(w) else w

    def split_log_potential(self, left, right):
        left = np.asarray(left, dtype=np.int64)
        right = np.asarray(right, dtype=np.int64)
        cut = float(self.similarity_[np.ix_(left, right)].sum())
        return -(left.size + right.size) * cut

    def kernel_inputs(self, beta=1.0):
        n = self.n_items_
        stats = np.empty((2, 1 << n))
        stats[0] = subset_pair_sums(self._dense_similarity())
        stats[1] = _sizes(n)
        return SplitKernelInputs(dasgupta_split, np.array([float(beta)]), stats)

    def family_kernel_inputs(self, family, beta=1.0):
        self._check_family(family)
        stats = np.empty((2, family.n_vertices))
        stats[0] = (family_graph_pair_sums(self.similarity_, family)
                    if sparse.issparse(self.similarity_)
                    else family_pair_sums(self.similarity_, family))
        stats[1] = family.sizes
        return SplitKernelInputs(dasgupta_split, np.array([float(beta)]), stats)

    def _new_similarities(self, new_data):
        w = new_item_similarities(new_data, self.similarity, self.scale_, self.n_items_,
                                  n_neighbors=self.n_neighbors)
        if np.any(w < 0):
            raise ValueError("Dasgupta's cost needs non-negative similarities.")
        return w

    def insertion_inputs(self, family, fitted, new_data):
        # W(S + x) = W(S) + sum_{i in S} w_ix; |S + x| = |S| + 1
        w = self._new_similarities(new_data)
        m = w.shape[0]
        joined = np.empty((m, 2, family.n_vertices))
        joined[:, 0] = fitted.stats[0] + family_item_sums_per_row(w, family)
        joined[:, 1] = fitted.stats[1] + 1.0
        alone = np.tile([0.0, 1.0], (m, 1))
        return InsertionInputs(np.tile(fitted.params, (m, 1)), joined, alone)

    def with_new_item(self, new_row):
        w = self._new_similarities(np.asarray(new_row, dtype=np.float64).reshape(1, -1))[0]
        return DasguptaEnergy(similarity="precomputed").fit(
            _bordered(self._dense_similarity(), w))

    def separable_form(self, beta=1.0):
        # psi = -|S| W(S) + |S| (W(L) + W(R))
        n = self.n_items_
        pair_sums = subset_pair_sums(self._dense_similarity())
        sizes = _sizes(n)
        scale = float(beta) * np.arange(n + 1, dtype=np.float64)
        return pair_sums, scale, -float(beta) * sizes * pair_sums


class ExponentialTreeEnergy(DasguptaEnergy):
    """The generative reading of Dasgupta's cost: a likelihood with exact evidence.

    Given a binary tree ``T`` of ``N`` items, each similarity ``s_ij`` is
    drawn independently from an exponential distribution of rate
    ``beta |S| / N``, ``S`` the lowest common ancestor of ``i`` and ``j``
    (pairs that part early, in large clusters, are dissimilar)::

        log p(s | T) = sum_{i<j} [log(beta |S_ij| / N) - beta |S_ij| s_ij / N]
                     = sum_{splits S -> (L, R)} [|L||R| log(beta |S| / N)
                                                 - (beta / N) |S| cut(L, R)]

    since the pairs whose common ancestor is ``S`` are those across its two
    children. The rate depends on the common ancestor's *fraction* of the
    data, ``|S| / N``: a subsample's common ancestors shrink with it, so
    ``beta`` means the same at any ``N`` (pairs split at the root have rate
    ``beta``, mean similarity ``1 / beta``) and a model fitted on a training
    fold is comparable with one fitted on all the data. Every term is a split
    term, so ``log phi(T) = log p(s | T)`` is computed by the trellis like any
    energy: Dasgupta's log-potential times ``beta / N`` plus ``|L||R|
    log(beta |S| / N)``, the normaliser of the exponential densities (which,
    unlike Dasgupta's cost, changes with the tree: the MAP tree depends on
    ``beta``). A new item makes the model one of ``N + 1`` items, with rates
    ``beta |S| / (N + 1)`` for every pair (:meth:`insertion_inputs`,
    :meth:`with_new_item`). With the uniform prior over the ``(2N - 3)!!``
    binary trees, the evidence is exact::

        log p(s | beta) = log Z - log (2N - 3)!!,   Z = sum_T phi(T).

    With ``similarity='exp'`` the data are the distances ``d`` and
    ``s = exp(-d / tau)`` (``tau`` the pair's length scale): the density of
    ``d`` given the scales adds the Jacobian ``sum_{i<j} (-d_ij / tau_ij -
    log tau_ij)`` (``log_jacobian_``), so the evidence also compares
    values of ``scale``. (The exponential puts mass on
    ``s > 1``, which distances cannot give: a misspecification the evidence
    pays for, not a bias of its value.)

    ``beta`` is the rate of the likelihood at the root (in units of one over
    the similarity), not a temperature: the engines evaluate the split
    function at ``params = [1, beta / N, log(beta / N), 1]``, so ``beta`` must
    be positive.

    Parameters
    ----------
    similarity : {'exp', 'precomputed'}, default='exp'
        As in :class:`DasguptaEnergy`.
    scale : {'local', 'median'}, float or None, default='local'
        As in :class:`DasguptaEnergy`.
    n_neighbors : int, default=20
        As in :class:`DasguptaEnergy`.

    Attributes
    ----------
    similarity_, scale_, n_items_ :
        As in :class:`DasguptaEnergy`. With a sparse matrix (a graph), pairs
        that are not edges count as observed similarities ``0``.
    log_jacobian_ : float
        ``log |ds / dd|`` summed over the pairs (0 for ``'precomputed'``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import ExponentialTreeEnergy
    >>> s = np.array([[0., 2., .1], [2., 0., .1], [.1, .1, 0.]])
    >>> energy = ExponentialTreeEnergy(similarity="precomputed").fit(s)
    >>> # pair (0, 1) meets at {0, 1} (rate 3 * 2 / 3), the others at the root (rate 3)
    >>> round(energy.log_potential(((0, 1), 2), beta=3.0), 4)
    -1.7096
    """

    def fit(self, data, y=None, *, copy=True):
        """Bind the model to an (N, N) distance (or similarity) matrix, dense or sparse.

        The Jacobian needs the distances after the similarities are made, so
        ``data`` is never overwritten (``copy`` is accepted and ignored).
        """
        super().fit(data, y, copy=True)
        self.log_jacobian_ = 0.0
        if self.similarity == "exp":
            if sparse.issparse(data):
                graph = self.similarity_.tocoo()
                upper = graph.row < graph.col
                rows, cols = graph.row[upper], graph.col[upper]
                tau = self._pair_scales(rows, cols)
                d = -np.log(graph.data[upper]) * tau   # exact up to the last bits
                self.log_jacobian_ = float(-(d / tau).sum() - np.log(tau).sum())
            else:
                self.log_jacobian_ = self._dense_log_jacobian(np.asarray(data, np.float64))
        return self

    def _pair_scales(self, rows, cols):
        """The length scale ``tau_ij`` of each fitted pair ``(rows[k], cols[k])``."""
        if np.ndim(self.scale_):
            return np.sqrt(self.scale_[rows] * self.scale_[cols])
        return np.full(len(rows), float(self.scale_))

    def _dense_log_jacobian(self, d):
        """``sum_{i<j} (-d_ij / tau_ij - log tau_ij)``, by blocks of rows (O(N) memory)."""
        n = d.shape[0]
        n_pairs = n * (n - 1) / 2.0
        if not np.ndim(self.scale_):
            total = (float(d.sum()) - float(np.trace(d))) / 2.0
            return -total / self.scale_ - n_pairs * math.log(self.scale_)
        root = np.sqrt(self.scale_)
        total = 0.0
        for start in range(0, n, 256):
            block = d[start:start + 256] / root[start:start + 256, None] / root[None, :]
            total += float(block.sum()) - float(np.trace(block, offset=start))
        log_sigma = np.log(self.scale_)
        return -total / 2.0 - (n - 1) / 2.0 * float(log_sigma.sum())

    def likelihood_params(self, beta, n_items=None):
        """Kernel parameters ``[1, beta / N, log(beta / N), 1]`` of the log-likelihood.

        ``N`` is ``n_items`` (default: the fitted ``n_items_``; ``n_items_ + 1``
        for the model enlarged by a new item), ``beta > 0``.
        """
        beta = float(beta)
        if not beta > 0 or not math.isfinite(beta):
            raise ValueError(f"The exponential tree likelihood needs a rate beta > 0, got "
                             f"beta={beta!r}.")
        unit = beta / (self.n_items_ if n_items is None else n_items)
        return np.array([1.0, unit, math.log(unit), 1.0])

    def gradient_params(self, beta):
        """Kernel parameters of ``d log phi / d beta`` per split: ``|L||R| / beta - |S| cut / N``."""
        return np.array([1.0, 1.0 / self.n_items_, 1.0 / float(beta), 0.0])

    def split_log_potential(self, left, right, beta=1.0):
        """``|L||R| log(beta |S| / N) - (beta / N) |S| cut(L, R)``: the log-likelihood of the
        pairs split here."""
        left = np.asarray(left, dtype=np.int64)
        right = np.asarray(right, dtype=np.int64)
        size = left.size + right.size
        cut = float(self.similarity_[np.ix_(left, right)].sum())
        unit = float(beta) / self.n_items_
        return left.size * right.size * math.log(unit * size) - unit * size * cut

    def log_potential(self, tree, beta=1.0):
        """``log p(s | T)`` of a tree given as nested tuples (``beta`` is the rate)."""
        tree = check_tree(tree, self.n_items_)
        total = 0.0
        for left, right in tree_splits(tree):
            total += self.split_log_potential(left, right, beta)
        return total

    def kernel_inputs(self, beta=1.0):
        split, _, stats = super().kernel_inputs()
        return SplitKernelInputs(exponential_tree_split, self.likelihood_params(beta), stats)

    def family_kernel_inputs(self, family, beta=1.0):
        _, _, stats = super().family_kernel_inputs(family)
        return SplitKernelInputs(exponential_tree_split, self.likelihood_params(beta), stats)

    def insertion_inputs(self, family, fitted, new_data):
        # the model of N + 1 items: every rate is beta |S| / (N + 1)
        block = super().insertion_inputs(family, fitted, new_data)
        params = self.enlarged_params(fitted.params)
        return block._replace(params=np.tile(params, (block.params.shape[0], 1)))

    def enlarged_params(self, params):
        """The kernel ``params`` of the fitted model turned into those of ``N + 1`` items.

        A new item changes every rate ``beta |S| / N`` to ``beta |S| / (N + 1)``,
        so the trees of the fitted items alone are weighted anew too (the
        engines recompute their partition functions with these parameters).
        """
        beta = params[1] * self.n_items_      # the fitted rate at the root
        return self.likelihood_params(beta, self.n_items_ + 1)

    def with_new_item(self, new_row):
        w = self._new_similarities(np.asarray(new_row, dtype=np.float64).reshape(1, -1))[0]
        return ExponentialTreeEnergy(similarity="precomputed").fit(
            _bordered(self._dense_similarity(), w))

    def separable_form(self, beta=1.0):
        return None   # |L||R| log(beta |S| / N) is not of the separable form

    def log_evidence(self, log_partition_function):
        """``log p(data | beta)`` from the trellis's ``log Z`` (uniform tree prior, Jacobian)."""
        return (float(log_partition_function) - log_double_factorial(self.n_items_)
                + self.log_jacobian_)

    def new_item_log_jacobian(self, new_data):
        """``log |ds / dd|`` of each new item's values (shape (m,); 0 for 'precomputed')."""
        d = np.asarray(new_data, dtype=np.float64)
        if self.similarity != "exp":
            return np.zeros(d.shape[0])
        if np.ndim(self.scale_):
            sigma = local_scales(d, self.n_neighbors, fitted=False)
            tau = np.sqrt(sigma[:, None] * self.scale_[None, :])
        else:
            tau = np.full(d.shape, float(self.scale_))
        return -(d / tau).sum(axis=1) - np.log(tau).sum(axis=1)


def sample_exponential_tree(n_items, beta, random_state=None):
    """Draw a tree and similarities from the exponential tree model.

    The tree is uniform over the ``(2N - 3)!!`` rooted binary trees (items
    inserted one at a time above a uniformly chosen node: each tree arises
    from exactly one sequence), then ``s_ij ~ Exponential(rate = beta |S_ij| / N)``
    with ``S_ij`` the pair's lowest common ancestor and ``N = n_items``: the
    generative model of :class:`ExponentialTreeEnergy`.

    Parameters
    ----------
    n_items : int
    beta : float
        The rate at the root (``> 0``); a pair whose common ancestor holds the
        fraction ``|S| / N`` of the items has rate ``beta |S| / N``.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    similarities : ndarray of shape (n_items, n_items)
        Symmetric, zero diagonal.
    tree : nested tuples

    Examples
    --------
    >>> from sklearn_trellis._core.trees import tree_splits
    >>> from sklearn_trellis.models import sample_exponential_tree
    >>> s, tree = sample_exponential_tree(4, beta=2.0, random_state=0)
    >>> s.shape, bool((s == s.T).all()), len(tree_splits(tree))
    ((4, 4), True, 3)
    """
    check_scalar_param(n_items, "n_items", kind=numbers.Integral, low=1)
    check_scalar_param(beta, "beta", low=0.0, include_low=False)
    rng = check_random_state(random_state)
    nodes = [0]                      # every node, as nested tuples, grown in place
    parent = {0: None}
    tree = 0
    for item in range(1, n_items):
        target = nodes[rng.randint(len(nodes))]
        joined = (target, item)
        if parent[target] is None:
            tree = joined
        else:
            up = parent[target]
            replaced = (joined, up[1]) if up[0] == target else (up[0], joined)
            tree = _replace(tree, up, replaced, parent)
        parent = _parents(tree)
        nodes = list(parent)
    s = np.zeros((n_items, n_items))
    for left, right in tree_splits(tree):
        rate = beta * (len(left) + len(right)) / n_items
        block = rng.exponential(1.0 / rate, size=(len(left), len(right)))
        s[np.ix_(left, right)] = block
        s[np.ix_(right, left)] = block.T
    return s, tree


def _parents(tree):
    """``{node: parent}`` of every node of a nested-tuple tree (the root's is None)."""
    out = {tree: None}
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            for child in node:
                out[child] = node
                stack.append(child)
    return out


def _replace(tree, old, new, parent):
    """``tree`` with the node ``old`` replaced by ``new`` (rebuilt up to the root)."""
    while parent[old] is not None:
        up = parent[old]
        new = (new, up[1]) if up[0] == old else (up[0], new)
        old = up
    return new


def _graph_local_scales(low, high, values, n_items, n_neighbors):
    """``sigma_i`` on a graph: the ``n_neighbors``-th smallest distance of ``i``'s edges
    (its largest with fewer edges; the smallest positive scale for none or zero)."""
    rows = np.concatenate([low, high])
    dist = np.concatenate([values, values])
    order = np.lexsort((dist, rows))
    rows, dist = rows[order], dist[order]
    starts = np.searchsorted(rows, np.arange(n_items))
    counts = np.bincount(rows, minlength=n_items)
    sigma = np.zeros(n_items)
    has = counts > 0
    pick = starts[has] + np.minimum(counts[has], int(n_neighbors)) - 1
    sigma[has] = dist[pick]
    positive = sigma[sigma > 0]
    sigma[~(sigma > 0)] = positive.min() if positive.size else 1.0
    return sigma


def _bordered(matrix, row):
    """``matrix`` with ``row`` appended as a last row and column (zero corner)."""
    n = matrix.shape[0]
    out = np.zeros((n + 1, n + 1))
    out[:n, :n] = matrix
    out[n, :n] = row
    out[:n, n] = row
    return out


def log_double_factorial(n_items):
    """``log (2N - 3)!!``: the number of rooted binary trees of ``N`` labelled leaves."""
    return float(sum(math.log(k) for k in range(3, 2 * n_items - 2, 2)))


def _sizes(n_items):
    """``|X|`` for every bitmask ``X`` as float64."""
    sizes = np.zeros(1 << n_items)
    for top in range(n_items):
        base = 1 << top
        sizes[base:2 * base] = sizes[:base] + 1.0
    return sizes


__all__ = ["DasguptaEnergy", "ExponentialTreeEnergy", "sample_exponential_tree", "dasgupta_split",
           "exponential_tree_split"]
