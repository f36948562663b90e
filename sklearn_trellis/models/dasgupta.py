"""Dasgupta's cost (Dasgupta 2016; Greenberg et al. 2021, Eq. 4) as a split model.

For non-negative similarities ``w``, the cost of a binary tree is
``sum over internal nodes of (|L| + |R|) * sum_{x in L, y in R} w_xy``; the
split log-potential is its negative::

    psi(L, R) = -(|L| + |R|) * cut(L, R),   cut(L, R) = W(S) - W(L) - W(R),

with ``W(X) = sum_{i<j in X} w_ij`` computed once per subset, so the MAP tree
is the tree of minimum cost and ``beta`` is the inverse temperature.
"""

import numpy as np
from numba import njit

from scipy import sparse

from .._core.pairwise import new_item_similarities, similarity_from_distances
from .._core.subsets import subset_pair_sums
from .._core.validation import check_scalar_param
from ._family_stats import family_graph_pair_sums, family_item_sums_per_row, family_pair_sums
from ._split import InsertionInputs, SplitKernelInputs, SplitModel


@njit(cache=True, inline="always")
def dasgupta_split(params, stats, full, parent, left, right):
    """``-(|S|) * (W(S) - W(L) - W(R))``; ``stats = [W, |X|]``."""
    return -stats[1, parent] * (stats[0, parent] - stats[0, left] - stats[0, right])


class DasguptaEnergy(SplitModel):
    """Dasgupta's cost as a split log-potential.

    Parameters
    ----------
    similarity : {'exp', 'precomputed'}, default='exp'
        How the similarities ``w`` come from the matrix given to :meth:`fit`:
        ``'exp'``: it is a distance matrix ``D`` and ``w = exp(-D / scale)``;
        ``'precomputed'``: it is the non-negative similarity matrix itself.
    scale : float, default=None
        Length scale of ``'exp'``; ``None`` means the median off-diagonal distance.

    Attributes
    ----------
    similarity_ : ndarray or sparse matrix of shape (N, N)
        The similarities ``w`` (zero diagonal); sparse (CSR) when :meth:`fit`
        was given a sparse matrix: the similarities then live on its stored
        entries only (a graph's edges; ``O(edges)`` memory), and ``'exp'``
        takes ``scale`` as the median distance over those edges.
    scale_ : float or None
        The length scale of ``'exp'`` (``None`` for ``'precomputed'``); new
        items are placed on it (:meth:`insertion_inputs`).
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

    def __init__(self, similarity="exp", scale=None):
        self.similarity = similarity
        self.scale = scale

    def fit(self, data, y=None, *, copy=True):
        """Bind the model to an (N, N) distance (or similarity) matrix, dense or sparse.

        ``copy=False``: a dense float64 ``data`` may be overwritten by the
        similarities (one N x N array less; the caller gives it up).
        """
        if sparse.issparse(data):
            return self._fit_graph(data)
        w, self.scale_ = similarity_from_distances(data, self.similarity, self.scale,
                                                   return_scale=True, copy=copy)
        if np.any(w < 0):
            raise ValueError("Dasgupta's cost needs non-negative similarities.")
        self.similarity_ = w
        self.n_items_ = w.shape[0]
        return self

    def _fit_graph(self, data):
        """Similarities on the stored entries of a sparse (N, N) matrix (a graph's edges)."""
        check_scalar_param(self.scale, "scale", low=0.0, include_low=False, allow_none=True)
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
        if self.similarity == "exp":
            width = float(np.median(values)) if self.scale is None else float(self.scale)
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
        w = new_item_similarities(new_data, self.similarity, self.scale_, self.n_items_)
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


def _bordered(matrix, row):
    """``matrix`` with ``row`` appended as a last row and column (zero corner)."""
    n = matrix.shape[0]
    out = np.zeros((n + 1, n + 1))
    out[:n, :n] = matrix
    out[n, :n] = row
    out[:n, n] = row
    return out


def _sizes(n_items):
    """``|X|`` for every bitmask ``X`` as float64."""
    sizes = np.zeros(1 << n_items)
    for top in range(n_items):
        base = 1 << top
        sizes[base:2 * base] = sizes[:base] + 1.0
    return sizes


__all__ = ["DasguptaEnergy", "dasgupta_split"]
