"""Sparse flat cluster trellis: a flat model's distribution over a family of clusters.

The exact flat trellis (:class:`~sklearn_trellis.engines.exact.flat.ExactFlatTrellis`)
sums over all partitions of ``N`` items and stops near ``N = 22``. The sparse
trellis (Greenberg et al. 2018, Section 4) gives zero potential to every
cluster outside a :class:`~sklearn_trellis._core.family.ClusterFamily`, so
it sums exactly over the partitions whose every cluster is a vertex of the
family, for any ``N`` the family allows:

- the node set of one seed tree (the *tree-structured* family, Appendix J):
  the partitions consistent with the tree (its cuts, also non-horizontal
  ones), ``O(N)`` time and memory;
- unions of seed trees, or any family (Section 4.1, Fact 5): a dynamic
  programme over *remainder states* (the items left once the clusters of the
  lowest-ranked items are chosen), each split into independent components;
  their number depends on how the trees disagree, it is capped
  (``max_states``) and reported (``n_states_``).

The log partition function is a lower bound of the exact one (fewer
partitions), the MAP is the best partition within the family (at least as
good as the best cut of each seed tree), and marginals, samples and the
number-of-clusters distribution are those of the distribution restricted to
the family.
"""

import numbers
import weakref

import numpy as np

from ..._core import budget as memory_budget
from ..._core.budget import BudgetExceeded, check_memory, format_bytes
from ..._core.family import ClusterFamily, item_codes
from ..._core.interpreted import call, interpreting, run_interpreted
from ..._core.labels import canonical_rows
from ..._core.trees import leaf_order
from ..._core.validation import check_indices, check_label_vector, check_random_state
from . import _sparse_flat_kernels as kernels

#: Default cap of the number of remainder states of the state engine.
DEFAULT_MAX_STATES = 2_000_000

#: Default largest output of :meth:`SparseFlatTrellis.pairwise_marginals` (bytes).
DEFAULT_MAX_PAIRWISE_BYTES = 2 ** 30

#: Bytes kept per remainder state besides its bitset (hashes, size, lowest rank,
#: transition pointer, two hash slots, log Z, MAP value, back-pointer, outside).
_STATE_OVERHEAD = 8 * 11

#: Bytes per transition (vertex, pointer to its components, about two components).
_TRANSITION_BYTES = 32

#: Up to this many items the state enumeration runs its kernels' own Python source
#: (:mod:`~sklearn_trellis._core.interpreted`: the same steps and values) before
#: compiling them: the union of a small fit's linkage trees takes tens of
#: milliseconds (40 blobs: 56 states, 144 transitions, 30 ms), against about 4 s
#: of compiling :func:`~._sparse_flat_kernels.enumerate_states` in a first fit.
INTERPRETED_STATE_ITEMS = 48

#: Up to this many items the MAP's read-off and its labels (``O(N)`` steps) run
#: their kernels' Python source too (about 0.6 s of compilation in a first fit).
INTERPRETED_MAP_ITEMS = 1_000

#: States and transitions the interpreted enumeration may reach (up to about
#: 0.4 ms a transition at 48 items): beyond, the compiled kernel starts over with
#: the caller's caps.
INTERPRETED_MAX_STATES = 500
INTERPRETED_MAX_TRANSITIONS = 1_000

#: The remainder states of each family, kept while the family lives: they do not
#: depend on the potentials, so the trellises of one family at other parameters
#: (empirical Bayes, ``beta='posterior'``) reuse them.
_STATES = weakref.WeakKeyDictionary()


def _enumerate_states(family, rank, max_states, max_transitions):
    """:func:`~._sparse_flat_kernels.enumerate_states` on a family, memoised per family.

    A memoised enumeration is reused when it fits the caps: below them, a new
    run would reach the same states and stop at the same point. A small
    family is enumerated by the kernel's Python source within
    ``INTERPRETED_MAX_STATES``; if that cap, below the caller's, is hit, the
    compiled kernel runs with the caller's.
    """
    known = _STATES.get(family)
    if known is not None and np.array_equal(known[0], rank):
        result = known[1]
        if result[1] <= max_states and result[2] <= max_transitions:
            return result
    f = family
    n = f.n_items
    small = n <= INTERPRETED_STATE_ITEMS and interpreting()
    anchor, word_lo, word_ptr, words = call(kernels.vertex_bitsets, f.items, f.starts,
                                            f.stops, rank, (n + 63) >> 6, small=small)
    order = np.argsort(anchor, kind="stable")
    anchor_ptr = np.searchsorted(anchor[order], np.arange(n + 1)).astype(np.int64)
    arguments = (n, rank, item_codes(n), f.items, f.starts, f.stops, f.sizes, f.build_left,
                 f.build_right, anchor, word_lo, word_ptr, words, anchor_ptr,
                 order.astype(np.int64))
    result = None
    if small:
        caps = (min(max_states, INTERPRETED_MAX_STATES),
                min(max_transitions, INTERPRETED_MAX_TRANSITIONS))
        result = run_interpreted(kernels.enumerate_states, *arguments, *caps)
        status = result[0]
        if (status == kernels.STATES_CAP and caps[0] < max_states
                or status == kernels.TRANSITIONS_CAP and caps[1] < max_transitions):
            result = None
    if result is None:
        result = kernels.enumerate_states(*arguments, max_states, max_transitions)
    if result[0] == kernels.STATES_OK:
        _STATES[family] = (rank.copy(), result)
    return result


def _tree_inside(e, left, right):
    """``(log_z, best, cut)`` of :func:`._sparse_flat_kernels.tree_inside`, allocated here."""
    n = e.size
    log_z, best, cut = np.empty(n), np.empty(n), np.empty(n, np.bool_)
    kernels.tree_inside(e, left, right, log_z, best, cut)
    return log_z, best, cut


def tree_log_partition_functions(log_potentials, left, right):
    """``log Z`` of every vertex of a tree-structured family (the inside pass).

    ``log Z(v) = logaddexp(e(v), log Z(left(v)) + log Z(right(v)))``: the log
    of the sum, over the partitions of ``v``'s items into vertices of the tree,
    of ``prod exp(e)``.

    Parameters
    ----------
    log_potentials : ndarray of shape (n_vertices,)
        Cluster log-potential ``e(v)`` of each vertex (``-inf`` forbids it).
    left, right : ndarray of shape (n_vertices,), dtype int64
        Children of each vertex (``-1`` for a leaf), children before parents.

    Returns
    -------
    log_z : ndarray of shape (n_vertices,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.sparse.sparse_flat import tree_log_partition_functions
    >>> left, right = np.array([-1, -1, 0]), np.array([-1, -1, 1])
    >>> z = np.exp(tree_log_partition_functions(np.zeros(3), left, right))
    >>> [round(float(value), 6) for value in z]   # the root: {0, 1} or {0}, {1}
    [1.0, 1.0, 2.0]
    """
    return _tree_inside(np.asarray(log_potentials, dtype=np.float64), left, right)[0]


def vertex_labels(vertices, family):
    """Label vector (labels in order of first appearance) of a partition given by vertices."""
    cluster_of = np.empty((1, family.n_items), dtype=np.int64)
    for k, v in enumerate(vertices):
        cluster_of[0, family.items[family.starts[v]:family.stops[v]]] = k
    return call(canonical_rows, cluster_of, small=family.n_items <= INTERPRETED_MAP_ITEMS)[0]


class SparseFlatTrellis:
    """A flat model's distribution over the partitions into clusters of a family.

    Parameters
    ----------
    family : ClusterFamily
        The allowed clusters (always including the singletons and the full set).
    log_potentials : array-like of shape (family.n_vertices,)
        ``e(v)`` of every vertex, e.g. ``model.family_log_potentials(family)``;
        ``-inf`` forbids a cluster.
    method : {'auto', 'tree', 'states'}, default='auto'
        ``'tree'`` needs a family made of the nodes of one seed tree (Appendix
        J recursion, ``O(N)``); ``'states'`` works for any family;
        ``'auto'`` picks ``'tree'`` when it applies.
    max_states : int, default=DEFAULT_MAX_STATES
        Cap of the number of remainder states of the ``'states'`` engine; it
        refuses, saying how far it got, rather than exceed it (or the memory
        available).
    order : {'auto', 'first'} or array-like of int, default='auto'
        Item ranking of the ``'states'`` engine (the results do not depend on
        it, the number of states does, by an order of magnitude between the
        leaf orders of different linkage trees). ``'first'``: the leaf order
        of the first seed tree; ``'auto'``: the seed tree leaf order whose
        vertices leave the fewest holes in their rank spans; or a permutation
        of the items (rank ``r`` is item ``order[r]``).

    Attributes
    ----------
    n_items, n_vertices : int
    method_ : str
        The engine used, ``'tree'`` or ``'states'``.
    n_states_ : int or None
        Remainder states (connected components of remainders) of the
        ``'states'`` engine; ``None`` for ``'tree'``.
    n_transitions_ : int or None
        Its (state, cluster) pairs: the number of terms of the recursion.
    rank_ : ndarray of shape (N,)
        Rank of every item in the ``'states'`` engine: its position in the
        leaf order chosen by ``order``, item order if the family has no seed
        tree. ``None`` for ``'tree'``.
    log_partition_function : float
        ``log Z`` over the family's partitions (without the model's constant).
    map_log_potential : float
        ``sum of e(B)`` over the clusters of the family's MAP partition.
    map_labels : ndarray of shape (N,)
        The MAP partition, labels in order of first appearance.
    map_vertices : ndarray of int
        Its clusters as vertices of the family.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis._core.family import ClusterFamily
    >>> from sklearn_trellis.engines.sparse.sparse_flat import SparseFlatTrellis
    >>> tree = np.array([[0, 1], [2, 3], [4, 5]])        # ((0, 1), (2, 3))
    >>> family = ClusterFamily.from_trees([tree], n_items=4)
    >>> trellis = SparseFlatTrellis(family, np.zeros(family.n_vertices)).fit()
    >>> round(float(np.exp(trellis.log_partition_function)))  # cuts of the tree
    5
    >>> trellis.method_
    'tree'
    """

    def __init__(self, family, log_potentials, *, method="auto",
                 max_states=DEFAULT_MAX_STATES, order="auto"):
        if not isinstance(family, ClusterFamily):
            raise TypeError(f"family must be a ClusterFamily, got {type(family).__name__}.")
        e = np.asarray(log_potentials, dtype=np.float64)
        if e.shape != (family.n_vertices,):
            raise ValueError(f"log_potentials must have shape ({family.n_vertices},) (one "
                             f"per vertex of the family), got {e.shape}.")
        if np.isnan(e).any() or np.isposinf(e).any():
            raise ValueError("log_potentials contains NaN or +inf.")
        if method not in ("auto", "tree", "states"):
            raise ValueError(f"method must be 'auto', 'tree' or 'states', got {method!r}.")
        if (isinstance(max_states, (bool, np.bool_))
                or not isinstance(max_states, numbers.Integral) or max_states < 1):
            raise ValueError(f"max_states must be a positive int, got {max_states!r}.")
        is_tree = (len(family.seed_trees) > 0
                   and family.n_vertices == 2 * family.n_items - 1)
        if method == "tree" and not is_tree:
            raise ValueError("method='tree' needs the family of one seed tree "
                             f"({2 * family.n_items - 1} vertices), got "
                             f"{family.n_vertices} vertices; use method='states'.")
        if isinstance(order, str):
            if order not in ("auto", "first"):
                raise ValueError(f"order must be 'auto', 'first' or a permutation, got "
                                 f"{order!r}.")
        else:
            order = np.asarray(order, dtype=np.int64)
            if order.shape != (family.n_items,) or not np.array_equal(
                    np.sort(order), np.arange(family.n_items)):
                raise ValueError(f"order must be a permutation of 0..{family.n_items - 1}.")
        self.order = order
        self.family = family
        self.log_potentials = np.ascontiguousarray(e)
        self.method = method
        self.max_states = int(max_states)
        self.method_ = "tree" if (method == "tree" or (method == "auto" and is_tree)) \
            else "states"
        self.n_items = family.n_items
        self.n_vertices = family.n_vertices

    @classmethod
    def from_model(cls, model, family, **kwargs):
        """The sparse trellis of a fitted :class:`~sklearn_trellis.models.FlatModel`."""
        return cls(family, model.family_log_potentials(family), **kwargs)

    # ------------------------------------------------------------------ fit
    def fit(self):
        """Run the inside pass (``log Z``, MAP); the outside pass (cluster marginals)
        runs on the first query that needs it.

        Seed-family searches fit many trellises and read only ``log Z`` and the
        MAP of most, and a small fit need not compile the outside kernels at all.
        """
        if self.method_ == "tree":
            self._fit_tree()
        else:
            self._fit_states()
        if not np.isfinite(self.log_partition_function):
            raise ValueError("Every partition of the family has zero potential "
                             "(log Z = -inf).")
        self.map_labels = vertex_labels(self.map_vertices, self.family)
        self._outside = None
        return self

    def _outside_pass(self):
        """``(marginals, acc)``: every vertex's cluster marginal (linear space: what the
        queries sum) and the weight :func:`push_down` gives its cross pairs, computed once."""
        if self._outside is None:
            f = self.family
            e = self.log_potentials
            if self.method_ == "tree":
                log_marginals = kernels.tree_cluster_log_marginals(e, self._log_z,
                                                                   f.build_left, f.build_right)
            else:
                sizes, ptr, t_vertex, c_ptr, children = self._states
                log_marginals = kernels.states_cluster_log_marginals(
                    e, self._log_z, np.argsort(-sizes, kind="mergesort"), ptr, t_vertex,
                    c_ptr, children, f.n_vertices)
            marginals = np.exp(log_marginals)
            self._outside = (marginals, kernels.push_down(marginals, f.build_left,
                                                          f.build_right))
        return self._outside

    @property
    def _marginals(self):
        return self._outside_pass()[0]

    @property
    def _acc(self):
        return self._outside_pass()[1]

    def _fit_tree(self):
        f = self.family
        self.n_states_ = None
        self.n_transitions_ = None
        self.rank_ = None
        e = self.log_potentials
        self._log_z, best, self._cut = _tree_inside(e, f.build_left, f.build_right)
        self.log_partition_function = float(self._log_z[f.root])
        self.map_log_potential = float(best[f.root])
        self.map_vertices = call(kernels.tree_map_vertices, self._cut, f.build_left,
                                 f.build_right, small=f.n_items <= INTERPRETED_MAP_ITEMS)

    def _leaf_orders(self):
        """Leaf order of every seed tree."""
        f = self.family
        return [leaf_order(tree, f.n_items)[0] for tree in f.seed_trees]

    def _rank(self):
        f = self.family
        n = f.n_items
        if not isinstance(self.order, str):
            order = self.order
        elif not f.seed_trees:
            order = np.arange(n)
        else:
            candidates = self._leaf_orders()
            if self.order == "first" or len(candidates) == 1:
                order = candidates[0]
            else:
                best = None
                for candidate in candidates:
                    rank = np.empty(n, dtype=np.int64)
                    rank[candidate] = np.arange(n)
                    holes = call(kernels.rank_holes, f.items, f.starts, f.stops, rank,
                                 small=n <= INTERPRETED_STATE_ITEMS)
                    if best is None or holes < best[0]:
                        best = (holes, candidate)
                order = best[1]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        return rank

    def _fit_states(self):
        f = self.family
        n = f.n_items
        rank = self._rank()
        self.rank_ = rank
        n_words = (n + 63) >> 6
        state_bytes = 8 * n_words + _STATE_OVERHEAD
        # Growth doubles the arrays: a factor 2 of headroom within 40% of the memory.
        states_cap, available = memory_budget.memory_cap(2 * state_bytes)
        transitions_cap, _ = memory_budget.memory_cap(2 * _TRANSITION_BYTES)
        max_states = self.max_states if states_cap is None else min(self.max_states,
                                                                    states_cap)
        max_transitions = np.iinfo(np.int64).max if transitions_cap is None else transitions_cap
        status, n_states, n_trans, sizes, ptr, t_vertex, c_ptr, children = \
            _enumerate_states(f, rank, max_states, max_transitions)
        if status == kernels.STATES_CAP:
            # Raising max_states lifts only its own cap, not the memory's.
            by_parameter = max_states == self.max_states
            limit = ("max_states" if by_parameter else
                     f"the memory available ({format_bytes(available)})")
            raise BudgetExceeded(
                f"The family needs more than {max_states:,} remainder states "
                f"({format_bytes(state_bytes)} each at N={n}; {n_trans:,} transitions "
                f"so far), the limit set by {limit}. Use fewer or more similar seed "
                "trees" + (", or raise max_states." if by_parameter else "."),
                resource="states", limit=max_states, reached=int(n_states))
        if status == kernels.TRANSITIONS_CAP:
            raise BudgetExceeded(
                f"The family needs more than {n_trans:,} transitions "
                f"({format_bytes(n_trans * _TRANSITION_BYTES)}) after {n_states:,} states: "
                "not enough memory. Use fewer or more similar seed trees.",
                resource="transitions", limit=max_transitions, reached=int(n_trans))
        self.n_states_ = int(n_states)
        self.n_transitions_ = int(n_trans)
        self._states = (sizes, ptr, t_vertex, c_ptr, children)
        e = self.log_potentials
        smaller_first = np.argsort(sizes, kind="mergesort")
        self._log_z, best, self._back = kernels.states_inside(e, smaller_first, ptr, t_vertex,
                                                              c_ptr, children)
        self.log_partition_function = float(self._log_z[0])
        self.map_log_potential = float(best[0])
        self.map_vertices = call(kernels.states_map_vertices, self._back, t_vertex, c_ptr,
                                 children, small=n <= INTERPRETED_MAP_ITEMS)

    # ------------------------------------------------------------ queries
    def _check_fitted(self):
        if not hasattr(self, "_outside"):
            raise RuntimeError("Call fit() first.")

    def _items(self, indices, what="indices"):
        return np.sort(check_indices(indices, self.n_items, what))

    def log_potential(self, labels):
        """``sum e(B)`` of a partition; ``-inf`` if one of its clusters is not a vertex."""
        labels = check_label_vector(labels, self.n_items)
        total = 0.0
        for value in np.unique(labels):
            v = self.family.vertex_of(np.flatnonzero(labels == value))
            if v < 0:
                return -np.inf
            total += self.log_potentials[v]
        return float(total)

    def cluster_marginals(self):
        """``P(vertex v is a cluster)`` for every vertex, shape ``(n_vertices,)``."""
        self._check_fitted()
        return self._marginals.copy()

    def cluster_marginal(self, indices):
        """Probability that exactly these items form one cluster (0 outside the family)."""
        self._check_fitted()
        v = self.family.vertex_of(self._items(indices))
        return 0.0 if v < 0 else float(self._marginals[v])

    def together_marginal(self, indices):
        """Probability that all these items share a cluster."""
        self._check_fitted()
        idx = self._items(indices)
        f = self.family
        holds = kernels.containment(idx, f.items, f.starts, f.stops, f.build_left,
                                    f.build_right, f.n_items)
        return float(min(1.0, self._marginals[holds == idx.size].sum()))

    def pairwise_marginals(self, rows=None, *, max_bytes=DEFAULT_MAX_PAIRWISE_BYTES):
        """``P(i and j in the same cluster)``: all pairs, or the rows of some items.

        Parameters
        ----------
        rows : array-like of int, optional
            Items whose rows are wanted (``O(n_vertices + N)`` each on a tree
            family); default all items, the ``(N, N)`` matrix, in
            ``O(sum over vertices of |L| |R|)`` (``O(N**2)`` per seed tree).
        max_bytes : int, default=2**30
            Refuse an output larger than this (``8 N**2`` bytes for the full
            matrix: 800 MB at ``N = 10,000``); ask for rows instead.

        Returns
        -------
        ndarray of shape (len(rows), N) or (N, N)
            Ones at ``(i, i)``.
        """
        self._check_fitted()
        f = self.family
        n = self.n_items
        if rows is None:
            n_rows = n
        else:
            rows = np.asarray(rows, dtype=np.int64).ravel()
            if rows.size and (rows.min() < 0 or rows.max() >= n):
                raise ValueError(f"rows must lie in [0, {n - 1}].")
            n_rows = rows.size
        n_bytes = 8 * n_rows * n
        if n_bytes > max_bytes:
            raise ValueError(f"The pairwise marginals asked for need {format_bytes(n_bytes)} "
                             f"({n_rows} x {n} floats), above max_bytes="
                             f"{format_bytes(max_bytes)}: ask for some rows, or raise "
                             "max_bytes.")
        check_memory(n_bytes, f"the pairwise marginals asked for ({n_rows} x {n} floats)")
        if rows is None:
            out = kernels.pairwise_full(self._acc, f.items, f.starts, f.stops, f.build_left,
                                        f.build_right, n)
        else:
            out = kernels.pairwise_rows(self._acc, rows, f.items, f.starts, f.stops,
                                        f.build_left, f.build_right, n)
        np.clip(out, 0.0, 1.0, out=out)
        return out

    def n_clusters_distribution(self):
        """``P(K = k)`` for ``k = 1..N`` over the family's partitions, length ``N``.

        ``O(N**2)`` on a tree family; ``O(n_transitions N)`` time and
        ``8 N n_states`` bytes with the state engine.
        """
        self._check_fitted()
        f = self.family
        if self.method_ == "tree":
            log_zk = kernels.tree_n_clusters(self.log_potentials, self._log_z, f.build_left,
                                             f.build_right, f.sizes)
        else:
            n_bytes = 8 * (f.n_items + 1) * self.n_states_
            check_memory(n_bytes, "the number-of-clusters pass")
            sizes, ptr, t_vertex, c_ptr, children = self._states
            log_zk = kernels.states_n_clusters(self.log_potentials, sizes,
                                               np.argsort(sizes, kind="mergesort"), ptr,
                                               t_vertex, c_ptr, children, f.n_items)
        probs = np.exp(log_zk[1:] - self.log_partition_function)
        return probs / probs.sum()

    def sample(self, n_samples, random_state=None):
        """Exact draws from the family's distribution: int array ``(n_samples, N)`` of labels.

        Parameters
        ----------
        n_samples : int
        random_state : int, RandomState instance or None
        """
        self._check_fitted()
        if (isinstance(n_samples, (bool, np.bool_))
                or not isinstance(n_samples, numbers.Integral) or n_samples < 0):
            raise ValueError(f"n_samples must be a non-negative int, got {n_samples!r}.")
        rng = check_random_state(random_state)
        f = self.family
        width = f.n_vertices if self.method_ == "tree" else f.n_items
        # Uniforms in chunks of at most ~64 MB.
        chunk = max(1, (1 << 23) // width)
        out = []
        for start in range(0, int(n_samples), chunk):
            uniforms = rng.random_sample((min(chunk, n_samples - start), width))
            if self.method_ == "tree":
                out.append(kernels.tree_sample(self.log_potentials, self._log_z,
                                               f.build_left, f.build_right, f.items,
                                               f.starts, f.stops, f.n_items, uniforms))
            else:
                _, ptr, t_vertex, c_ptr, children = self._states
                out.append(kernels.states_sample(self.log_potentials, self._log_z, ptr,
                                                 t_vertex, c_ptr, children, f.items, f.starts,
                                                 f.stops, f.n_items, uniforms))
        if not out:
            return np.empty((0, f.n_items), dtype=np.int64)
        return np.concatenate(out)


__all__ = ["SparseFlatTrellis", "vertex_labels", "DEFAULT_MAX_STATES"]
