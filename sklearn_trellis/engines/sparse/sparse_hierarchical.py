"""Sparse hierarchical cluster trellis: the exact recursions over a family of clusters.

Greenberg et al. (2021, Section 3): a trellis whose vertices are a chosen
:class:`~sklearn_trellis._core.family.ClusterFamily` (the nodes of seed
trees, plus extra clusters) and whose edges are **all** splits ``S -> (L, R)``
with ``S``, ``L`` and ``R`` in the family, not only the seed trees' own
splits. Every binary tree whose nodes all lie in the family is *realised* by
the trellis, and the partition function, MAP tree, cluster marginals, exact
samples and the number of trees are exact over that set of trees. The MAP is
therefore never worse than the best seed tree, and ``log Z`` never exceeds the
full trellis's.

Edges are found by hashing (see ``_sparse_hier_kernels``): a cluster is
identified by its size and a 128-bit sum of random item codes, and ``(L, R)``
is taken to split ``S`` when ``hash(S) - hash(L) = hash(R)`` and
``|S| = |L| + |R|``. For a fixed family and random codes, a wrong edge needs
the non-zero integer vector ``1_S - 1_L - 1_R`` (entries in ``{-2, ..., 1}``)
to have zero inner product with both 64-bit code vectors modulo ``2**64``:
probability at most ``2**-126`` per (candidate, vertex) pair, so below
``1e-24`` for ``1e9`` candidates against ``1e5`` vertices.
``verify_edges=True`` checks every edge's members exactly
(``O(sum over edges of |S|)``).

Cost: edge discovery visits, for each vertex ``S`` and seed tree, the
ancestors of the lowest item of ``S`` that are subsets of ``S``; the
recursions are single sweeps over the edges (``O(n_edges)``).
"""

import math
import time

import numpy as np

from ..._core.budget import BudgetExceeded, check_memory, format_bytes
from ..._core.family import ClusterFamily, item_codes
from ..._core.interpreted import call
from ..._core.trees import check_children, children_to_tree, tree_splits, tree_to_postorder_children
from ..._core.validation import MAX_LOG_POTENTIAL, check_indices, check_log_potential_scale
from ..._core.validation import check_random_state
from .._split_potential import OVERFLOW_REMEDY, refuse_overflow
from . import _sparse_hier_kernels as kernels

#: Bytes kept per edge at the peak: discovery rows (24, up to twice while the
#: buffer grows), CSR parent/left/right (24), log-potential and sampling CDF (16).
BYTES_PER_EDGE = 96

#: Bytes kept per vertex besides the family (hash table, tables of the recursions).
BYTES_PER_VERTEX = 96

#: Default cap on the number of edges (about 3.8 GB at ``BYTES_PER_EDGE``).
DEFAULT_MAX_EDGES = 40_000_000

#: Default cap on the edges whose log-potential is computed by a Python function
#: (about 10 microseconds each plus the function's own cost).
DEFAULT_MAX_PYTHON_EDGES = 200_000


def log_double_factorial_trees(n_items):
    """Natural log of ``(2N - 3)!!``, the number of binary trees over ``N`` items."""
    if n_items <= 2:
        return 0.0
    # (2N - 3)!! = (2N - 2)! / (2**(N - 1) (N - 1)!)
    return (math.lgamma(2 * n_items - 1) - (n_items - 1) * math.log(2.0)
            - math.lgamma(n_items))




def discovery_ranges(family, window_roots=True):
    """``(home, range_vertex)`` of every vertex for edge discovery.

    ``home[v]``: the seed tree whose leaf order holds the slice of
    ``range_vertex[v]`` (``-1`` if none). ``range_vertex[v]`` is ``v``, or for a
    window union outside every seed tree (``window_roots``), the window's root,
    a node of the tree the windows were cut from: its range then bounds the
    walks up the trees (an ancestor outside it is no subset of ``v``), which
    would otherwise go up to ``v``'s size.
    """
    n = family.n_items
    home = np.full(family.n_vertices, -1, np.int64)
    for t, offset in enumerate(family.seed_tree_offsets):
        inside = (family.starts >= offset) & (family.stops <= offset + n)
        home[inside] = t
    range_vertex = np.arange(family.n_vertices, dtype=np.int64)
    table = family.window_table
    if window_roots and table.shape[0]:
        width = table.shape[1]
        n_pieces = np.zeros(table.shape[0], np.int64)
        j = 0
        while (1 << j) < width:
            n_pieces += (n_pieces == j) & (table[:, 1 << j] >= 0)
            j += 1
        roots = table[np.arange(table.shape[0]), (1 << n_pieces) - 1]
        unions = np.flatnonzero((family.vertex_window >= 0) & (home < 0))
        root = roots[family.vertex_window[unions]]
        keep = (root >= 0) & (home[np.maximum(root, 0)] >= 0)
        unions, root = unions[keep], root[keep]
        range_vertex[unions] = root
        home[unions] = home[root]
    return home, range_vertex


class SparseHierarchicalTrellis:
    """Hierarchical cluster trellis over a family of clusters (exact within the family).

    Parameters
    ----------
    family : ClusterFamily
        The vertices: seed-tree nodes, extra clusters, singletons and the full set.
    split, params, stats : numba dispatcher, ndarray, ndarray of shape (k, n_vertices)
        A split model's :class:`~sklearn_trellis.models.SplitKernelInputs` over the
        family's vertices (``SplitModel.family_kernel_inputs``): its numba split
        function, called with vertex ids, its parameters (``params[0]`` is the
        inverse temperature) and its per-vertex statistics.
    split_function : callable, optional
        Instead of ``split, params, stats``: ``split_function(left, right) ->
        float``, the (already ``beta``-scaled) split log-potential of two sorted
        item arrays, ``left`` holding the lowest item; ``-inf`` forbids the split.
        Called once per edge (slow path, see ``max_python_edges``).
    max_edges : int, default=DEFAULT_MAX_EDGES
        Refuse families with more edges (discovery stops at the limit, before
        allocating more).
    max_python_edges : int, default=DEFAULT_MAX_PYTHON_EDGES
        With ``split_function``, refuse families with more edges than this.
    verify_edges : bool, default=False
        Check exactly that every edge's children partition its parent (instead
        of relying on the 128-bit hashes alone).
    allowed_vertices : ndarray of bool of shape (n_vertices,), optional
        Vertices a tree may hold as nodes (e.g. the clusters connected in a
        connectivity graph); every split with a child outside them is
        forbidden (``-inf``), so all results are over the trees made of
        allowed clusters only. The root must be allowed.
    verbose : int, default=0
        Print the time of each stage when positive.

    Attributes
    ----------
    n_items, n_vertices, n_edges : int
    n_forbidden_edges : int
        Edges whose log-potential is ``-inf``.
    edge_ptr : ndarray of shape (n_vertices + 1,)
        The edges of vertex ``v`` are ``edge_ptr[v]:edge_ptr[v + 1]``.
    edge_parent, edge_left, edge_right : ndarray of shape (n_edges,)
        Vertices of each split (``edge_left`` holds the parent's lowest item).
    edge_log_potential : ndarray of shape (n_edges,)
        ``beta * psi(L, R)`` of each edge.
    log_z : ndarray of shape (n_vertices,)
        ``log Z`` of every vertex over the trees of its items realised by the family.
    log_partition_function : float
    map_log_potential : float
    map_edges : ndarray of shape (N - 1,)
        Edge ids of the MAP tree, preorder.
    map_children, map_distances : ndarray
        The MAP tree as scikit-learn ``children_`` / ``distances_`` (levels).
    timings : dict
        Seconds spent per stage.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import DasguptaEnergy
    >>> from sklearn_trellis._core.family import ClusterFamily
    >>> from sklearn_trellis.engines.sparse.sparse_hierarchical import SparseHierarchicalTrellis
    >>> w = np.array([[0., 1., 0., 0.], [1., 0., 0., 0.], [0., 0., 0., 1.], [0., 0., 1., 0.]])
    >>> energy = DasguptaEnergy(similarity="precomputed").fit(w)
    >>> chain = np.array([[0, 2], [4, 1], [5, 3]])         # ((0, 2), 1), 3)
    >>> balanced = np.array([[0, 1], [2, 3], [4, 5]])      # ((0, 1), (2, 3))
    >>> family = ClusterFamily.from_trees([chain, balanced], 4)
    >>> trellis = SparseHierarchicalTrellis(
    ...     family, *energy.family_kernel_inputs(family)).fit()
    >>> trellis.map_tree, trellis.map_log_potential
    (((0, 1), (2, 3)), -4.0)
    >>> trellis.n_trees              # the two seeds and (((0, 1), 2), 3)
    3
    """

    def __init__(self, family, split=None, params=None, stats=None, *, split_function=None,
                 max_edges=DEFAULT_MAX_EDGES, max_python_edges=DEFAULT_MAX_PYTHON_EDGES,
                 verify_edges=False, allowed_vertices=None, verbose=0):
        if not isinstance(family, ClusterFamily):
            raise TypeError(f"family must be a ClusterFamily, got {type(family).__name__}.")
        self.family = family
        self.n_items = family.n_items
        self.n_vertices = family.n_vertices
        if split_function is None:
            if split is None or params is None or stats is None:
                raise TypeError("Give either split, params and stats (a model's "
                                "family_kernel_inputs) or split_function.")
            stats = np.ascontiguousarray(stats, dtype=np.float64)
            if stats.ndim != 2 or stats.shape[1] != family.n_vertices:
                raise ValueError(f"stats must have shape (k, {family.n_vertices}) "
                                 f"(one column per vertex), got {stats.shape}.")
            self.split = split
            self._kernels = kernels.specialise(split)
            self.params = np.ascontiguousarray(params, dtype=np.float64)
            self.stats = stats
        elif not callable(split_function):
            raise TypeError(f"split_function must be callable, got {split_function!r}.")
        elif split is not None or stats is not None:
            raise TypeError("Give split_function or split/params/stats, not both.")
        self.split_function = split_function
        for name, value in (("max_edges", max_edges), ("max_python_edges", max_python_edges)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        self.max_edges = int(max_edges)
        self.max_python_edges = int(max_python_edges)
        self.verify_edges = bool(verify_edges)
        if allowed_vertices is not None:
            allowed_vertices = np.asarray(allowed_vertices, dtype=bool)
            if allowed_vertices.shape != (family.n_vertices,):
                raise ValueError(f"allowed_vertices must have shape ({family.n_vertices},), "
                                 f"got {allowed_vertices.shape}.")
        self.allowed_vertices = allowed_vertices
        self.verbose = verbose
        check_memory(BYTES_PER_VERTEX * self.n_vertices, "sparse trellis's vertex tables")
        self._log_out = None
        self._cdf = None
        self._n_trees = None

    @classmethod
    def from_model(cls, family, model, beta=1.0, **kwargs):
        """The trellis of a fitted :class:`~sklearn_trellis.models.SplitModel`.

        Uses the model's vectorised ``family_kernel_inputs`` when it has them,
        else calls ``model.split_log_potential`` once per edge.
        """
        if family.n_items != model.n_items_:
            raise ValueError(f"The family has {family.n_items} items but the model was "
                             f"fitted on {model.n_items_}.")
        try:
            inputs = model.family_kernel_inputs(family, beta)
        except NotImplementedError:
            beta = float(beta)

            # Refuse beta * psi that could overflow a tree's sum (N - 1 splits),
            # as refuse_overflow does for the vectorised path after the pass.
            limit = MAX_LOG_POTENTIAL / max(family.n_items - 1, 1)

            def split_function(left, right):
                value = float(model.split_log_potential(left, right))
                if value == -np.inf:
                    return value
                scaled = beta * value
                if abs(scaled) > limit and math.isfinite(value):
                    check_log_potential_scale([value], beta * max(family.n_items - 1, 1),
                                              what="beta times the split log-potentials "
                                              "summed over a tree", remedy=OVERFLOW_REMEDY)
                return scaled

            return cls(family, split_function=split_function, **kwargs)
        return cls(family, *inputs, **kwargs)

    # ------------------------------------------------------------------ fit
    def _log(self, message):
        if self.verbose:
            print(f"[SparseHierarchicalTrellis] {message}", flush=True)

    def _discover(self):
        family = self.family
        n = self.n_items
        n_trees = len(family.seed_trees)
        if n_trees:
            children = np.ascontiguousarray(np.stack(family.seed_trees), dtype=np.int64)
            tree_vertex = np.ascontiguousarray(np.stack(family.seed_tree_vertices),
                                               dtype=np.int64)
        else:
            children = np.zeros((0, max(n - 1, 0), 2), np.int64)
            tree_vertex = np.zeros((0, 2 * n - 1), np.int64)
        offsets = family.seed_tree_offsets
        if offsets.size != n_trees:
            raise ValueError("The family does not record where its seed trees' leaf orders "
                             "are (seed_tree_offsets); build it with ClusterFamily.from_trees.")
        home, range_vertex = discovery_ranges(family)
        # Extra clusters (in no seed tree), listed under each of their items.
        in_tree = np.zeros(self.n_vertices, bool)
        in_tree[:n] = True
        for vertices in family.seed_tree_vertices:
            in_tree[vertices] = True
        extras = np.flatnonzero(~in_tree & (family.vertex_window < 0))
        extras = extras[family.sizes[extras] < n]
        lengths = family.stops[extras] - family.starts[extras]
        extra_items = np.concatenate([family.items[family.starts[v]:family.stops[v]]
                                      for v in extras]) if extras.size else np.zeros(0, np.int64)
        owners = np.repeat(extras, lengths)
        order = np.argsort(extra_items, kind="stable")
        extra_list = np.ascontiguousarray(owners[order], dtype=np.int64)
        extra_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(extra_items, minlength=n), out=extra_ptr[1:])
        self.lowest = call(kernels.lowest_items, family.items, family.starts, family.stops,
                           family.build_left, family.build_right,
                           small=self.n_vertices <= kernels.INTERPRETED_DISCOVERY_WORK)
        groups, n_edges = kernels.discover_edges(
            children, tree_vertex, offsets, home, range_vertex, n, family.items, family.starts,
            family.stops, family.sizes, family.hashes, self.lowest, extra_ptr, extra_list,
            family.vertex_window, family.vertex_window_mask, family.window_table,
            self.max_edges)
        if n_edges > self.max_edges:
            raise BudgetExceeded(
                f"The family of {self.n_vertices:,} clusters has more than "
                f"{self.max_edges:,} splits (max_edges), which would need more than "
                f"{format_bytes(BYTES_PER_EDGE * self.max_edges)}; use fewer or smaller "
                "seed trees / extra clusters, or raise max_edges.", resource="edges",
                limit=self.max_edges)
        check_memory(BYTES_PER_EDGE * n_edges, f"sparse trellis's {n_edges:,} edges")
        self.edge_ptr, self.edge_parent, self.edge_left, self.edge_right = \
            kernels.edges_to_csr(groups, self.n_vertices)
        self.n_edges = int(n_edges)
        if self.verify_edges:
            n_bad = kernels.verify_edges(self.edge_ptr, self.edge_left, self.edge_right,
                                         family.items, family.starts, family.stops, n)
            if n_bad:
                raise RuntimeError(f"{n_bad} edges do not partition their parent: a 128-bit "
                                   "hash collision (probability ~1e-38): please report it.")

    def _potentials(self):
        if self.split_function is None:
            psi, self._n_invalid = self._kernels.edge_potentials.for_work(self.n_edges)(
                self.params, self.stats, self.family.root, self.edge_ptr, self.edge_left,
                self.edge_right)
            return psi   # invalid splits (-inf here) are refused after the pass (fit)
        if self.n_edges > self.max_python_edges:
            raise BudgetExceeded(
                f"The family has {self.n_edges:,} splits; a Python split function is "
                f"called once per split, above the limit of {self.max_python_edges:,} "
                "(max_python_edges). Use a model with vectorised statistics, a smaller "
                "family, or raise max_python_edges.", resource="python_edges",
                limit=self.max_python_edges, reached=self.n_edges)
        family = self.family
        psi = np.empty(self.n_edges)
        for e in range(self.n_edges):
            value = float(self.split_function(family.members(self.edge_left[e]),
                                              family.members(self.edge_right[e])))
            if math.isnan(value) or value == math.inf:
                raise ValueError(f"The split function returned {value} for the split "
                                 f"{family.members(self.edge_left[e]).tolist()} | "
                                 f"{family.members(self.edge_right[e]).tolist()}; it must "
                                 "be finite or -inf.")
            psi[e] = value
        return psi

    def _at_unit_beta(self):
        """``((log Z, MAP), #invalid)`` of the inside pass at ``beta = 1`` (overflow diagnosis)."""
        params = self.params.copy()
        params[0] = 1.0
        forbidden = None
        if self.allowed_vertices is not None:
            allowed = self.allowed_vertices
            forbidden = ~(allowed[self.edge_left] & allowed[self.edge_right])
        _, n_invalid, log_z, map_value = self._inside_pass_at(params, forbidden)
        root = self.family.root
        return (log_z[root], map_value[root]), n_invalid

    def _inside_pass_at(self, params, forbidden):
        """``(psi, #invalid, log Z, MAP value)`` per vertex at other kernel ``params``,
        the splits where ``forbidden`` is true (if given) set to ``-inf``."""
        psi, n_invalid = self._kernels.edge_potentials.for_work(self.n_edges)(
            params, self.stats, self.family.root, self.edge_ptr, self.edge_left,
            self.edge_right)
        if forbidden is not None:
            psi[forbidden] = -np.inf
        log_z, map_value = np.empty(self.n_vertices), np.empty(self.n_vertices)
        kernels.inside_pass(self.edge_ptr, self.edge_left, self.edge_right, psi,
                            self._is_leaf, log_z, map_value,
                            np.empty(self.n_vertices, np.int64), True)
        return psi, n_invalid, log_z, map_value

    def fit(self):
        """Discover the edges, evaluate them, and run the inside pass (log Z, MAP)."""
        self._n_invalid = 0
        self.timings = {}
        clock = time.perf_counter()
        self._discover()
        self.timings["edges"] = time.perf_counter() - clock
        self._log(f"{self.n_vertices:,} vertices, {self.n_edges:,} edges "
                  f"({self.timings['edges']:.2f} s)")
        clock = time.perf_counter()
        self.edge_log_potential = self._potentials()
        if self.allowed_vertices is not None:
            allowed = self.allowed_vertices
            self.edge_log_potential[~(allowed[self.edge_left] & allowed[self.edge_right])] = \
                -np.inf
        self.n_forbidden_edges = int(np.count_nonzero(self.edge_log_potential == -np.inf))
        self.timings["potentials"] = time.perf_counter() - clock
        self._log(f"split log-potentials ({self.timings['potentials']:.2f} s)")
        clock = time.perf_counter()
        self._is_leaf = self.family.sizes == 1
        self.log_z = np.empty(self.n_vertices)
        self._map_value = np.empty(self.n_vertices)
        self._best_edge = np.empty(self.n_vertices, np.int64)
        kernels.inside_pass(self.edge_ptr, self.edge_left, self.edge_right,
                            self.edge_log_potential, self._is_leaf, self.log_z,
                            self._map_value, self._best_edge, True)
        root = self.family.root
        refuse_overflow([self.log_z[root], self._map_value[root]], self._n_invalid,
                        self.params[0] if self.split_function is None else 1.0,
                        self._at_unit_beta)
        if self._n_invalid:
            raise ValueError(f"The split log-potential is NaN or +inf for {self._n_invalid} "
                             "splits; it must be finite or -inf (forbidden).")
        self.log_partition_function = float(self.log_z[root])
        if not self.log_partition_function > -np.inf:
            raise ValueError("No tree realised by the family has a positive potential "
                             "(log Z = -inf): the model forbids every split they need.")
        self.map_log_potential = float(self._map_value[root])
        self.map_edges = call(kernels.tree_from_root, root, self.n_items, self._best_edge,
                              self.edge_left, self.edge_right,
                              small=self.n_items <= kernels.INTERPRETED_DISCOVERY_WORK)
        self.map_children, self.map_distances = self.tree_children(self.map_edges)
        self.timings["inside"] = time.perf_counter() - clock
        self._log(f"log Z and MAP ({self.timings['inside']:.2f} s)")
        return self

    # ------------------------------------------------------------ trees
    @property
    def map_splits(self):
        """``(parents, lefts, rights)`` vertex ids of the MAP tree's splits, preorder."""
        e = self.map_edges
        return self.edge_parent[e], self.edge_left[e], self.edge_right[e]

    @property
    def map_tree(self):
        """The MAP tree as nested tuples (left child holds the lowest item).

        Built iteratively, so any depth works, but Python cannot print nested
        tuples deeper than its recursion limit (about 1,000 levels).
        """
        return self.tree_nested(self.map_edges)

    def tree_children(self, edges, return_vertices=False):
        """scikit-learn ``children_`` and ``distances_`` of a tree given by its edge ids.

        The distance of a node is its number of levels above the leaves; nodes
        are ordered by (height, size, lowest item), so every child precedes its
        parent. With ``return_vertices``, also the vertex of each row.
        """
        edges = np.asarray(edges, dtype=np.int64)
        n = self.n_items
        if edges.size == 0:
            empty = (np.zeros((0, 2), np.intp), np.zeros(0))
            return empty + (np.zeros(0, np.int64),) if return_vertices else empty
        heights = call(kernels.node_heights, edges, self.edge_parent, self.edge_left,
                       self.edge_right, self.n_vertices,
                       small=n <= kernels.INTERPRETED_DISCOVERY_WORK)
        parents = self.edge_parent[edges]
        order = np.lexsort((self.lowest[parents], self.family.sizes[parents], heights))
        node_id = np.arange(self.n_vertices, dtype=np.int64)  # singletons: their item
        node_id[parents[order]] = n + np.arange(order.size)
        children = np.stack([node_id[self.edge_left[edges[order]]],
                             node_id[self.edge_right[edges[order]]]], axis=1).astype(np.intp)
        if return_vertices:
            return children, heights[order].astype(np.float64), parents[order]
        return children, heights[order].astype(np.float64)

    def tree_nested(self, edges):
        """Nested tuples of a tree given by its edge ids (iterative)."""
        children, _ = self.tree_children(edges)
        return children_to_tree(children.tolist(), self.n_items)

    def tree_edges(self, tree):
        """Edge ids of a tree (``children_`` array or nested tuples); ValueError if the
        trellis does not realise it."""
        if isinstance(tree, tuple) or (isinstance(tree, (int, np.integer)) and self.n_items == 1):
            tree = tree_to_postorder_children(tree, self.n_items)
        children = check_children(tree, self.n_items)
        if self._table is None:
            self._table = kernels.build_hash_table(self.family.hashes, self.family.sizes)
        edges = kernels.edges_of_children(
            np.ascontiguousarray(children), item_codes(self.n_items), self.n_items,
            self._table, self.family.hashes, self.family.sizes, self.lowest,
            self.edge_ptr, self.edge_left)
        if np.any(edges == -2):
            raise ValueError("The tree has a cluster that is not in the family.")
        if np.any(edges == -1):  # pragma: no cover - every split of family clusters is an edge
            raise ValueError("The tree has a split that is not an edge of the trellis.")
        return edges

    _table = None

    def log_potential(self, tree):
        """``log phi`` of a tree realised by the family (``children_`` or nested tuples)."""
        return float(self.edge_log_potential[self.tree_edges(tree)].sum())

    def seed_tree_log_potentials(self):
        """``log phi`` of each seed tree of the family."""
        return [self.log_potential(tree) for tree in self.family.seed_trees]

    # ------------------------------------------------------------ counting
    @property
    def n_trees(self):
        """Number of trees realised by the family with finite potential (exact int)."""
        if self._n_trees is None:
            self._n_trees = self._count_trees()
        return self._n_trees

    def _count_trees(self):
        counts, big = kernels.count_trees_int64(self.edge_ptr, self.edge_left,
                                                self.edge_right, self.edge_log_potential,
                                                self._is_leaf)
        root = self.family.root
        if not big[root]:
            return int(counts[root])
        # Python integers on the vertices whose count overflows int64 only; every
        # vertex's count in one list (Python ints), the edges read as lists.
        exact = counts.tolist()
        ptr = self.edge_ptr.tolist()
        allowed = self.edge_log_potential > -np.inf
        for s in np.flatnonzero(big).tolist():
            first, last = ptr[s], ptr[s + 1]
            keep = allowed[first:last]
            total = 0
            for a, b in zip(self.edge_left[first:last][keep].tolist(),
                            self.edge_right[first:last][keep].tolist()):
                total += exact[a] * exact[b]
            exact[s] = total
        return exact[root]

    @property
    def log10_n_trees(self):
        """``log10`` of :attr:`n_trees` (``-inf`` if zero), in floating point.

        From the log-space count (one ``O(n_edges)`` sweep), so it needs no
        exact count: at N = 10,000 the exact integers take a second.
        """
        if self._log10_n_trees is None:
            log_counts = kernels.log_count_trees(self.edge_ptr, self.edge_left,
                                                 self.edge_right, self.edge_log_potential,
                                                 self._is_leaf)
            self._log10_n_trees = float(log_counts[self.family.root]) / math.log(10.0)
        return self._log10_n_trees

    _log10_n_trees = None

    @property
    def log10_sparsity_index(self):
        """``log10(n_trees / (2N - 3)!!)``: the paper's sparsity index, in log10."""
        return self.log10_n_trees - log_double_factorial_trees(self.n_items) / math.log(10)

    # ------------------------------------------------------------ marginals
    def _outside(self):
        if self._log_out is None:
            self._log_out = kernels.outside_pass(self.edge_ptr, self.edge_left,
                                                 self.edge_right, self.edge_log_potential,
                                                 self.log_z, self.family.root)
        return self._log_out

    def cluster_marginals(self):
        """``P(v is a node of the tree)`` for every vertex ``v`` (shape (n_vertices,))."""
        log_p = self.log_z + self._outside() - self.log_partition_function
        out = np.exp(np.minimum(log_p, 0.0))
        # Every tree has every leaf and the root as nodes: exactly 1, not the
        # rounding of log Z(v) + log out(v) - log Z at large |log phi|.
        out[self.family.sizes == 1] = 1.0
        out[self.family.root] = 1.0
        return out

    def expected_split_value(self, stat_params):
        """``E[sum_{splits of H} g(L, R)]`` over the trees the family realises.

        As :meth:`ExactHierarchicalTrellis.expected_split_value`: ``g`` is the
        model's split function at ``stat_params``, each edge weighted by its
        posterior probability ``out(S) phi(L, R) Z(L) Z(R) / Z`` within the family.
        """
        if self.split_function is not None:
            raise ValueError("Expected split values need a model with vectorised "
                             "statistics (family_kernel_inputs).")
        stat_params = np.ascontiguousarray(stat_params, dtype=np.float64)
        values, _ = self._kernels.edge_potentials(stat_params, self.stats, self.family.root,
                                                  self.edge_ptr, self.edge_left,
                                                  self.edge_right)
        log_w = (self._outside()[self.edge_parent] + self.edge_log_potential
                 + self.log_z[self.edge_left] + self.log_z[self.edge_right]
                 - self.log_partition_function)
        allowed = log_w > -np.inf
        return float(np.sum(np.exp(log_w[allowed]) * values[allowed]))

    def inside_at(self, params):
        """``(edge log-potentials, log Z per vertex)`` of the same family at other ``params``.

        One ``O(edges)`` pass with the model's split function and statistics
        (forbidden and disallowed splits stay ``-inf``); the fitted tables are
        not changed. Used when a new item changes every split's parameters
        (:meth:`~sklearn_trellis.models.SplitModel.enlarged_params`).
        """
        if self.split_function is not None:
            raise ValueError("Other parameters need a model with vectorised statistics "
                             "(family_kernel_inputs).")
        psi, _, log_z, _ = self._inside_pass_at(np.ascontiguousarray(params, dtype=np.float64),
                                                self.edge_log_potential == -np.inf)
        return psi, log_z

    def cluster_marginal(self, indices):
        """Probability that exactly these items form a node (0 if not in the family)."""
        vertex = self.family.vertex_of(check_indices(indices, self.n_items))
        if vertex < 0:
            return 0.0
        return float(self.cluster_marginals()[vertex])

    def subtree_marginal(self, subtree):
        """Probability that the tree contains this sub-hierarchy (nested tuples of items;
        0 if the family does not realise it)."""
        family = self.family
        splits = tree_splits(subtree)  # postorder: the subtree's root split is last
        items = splits[-1][0] + splits[-1][1] if splits else [int(subtree)]
        top = family.vertex_of(items)
        if top < 0:
            return 0.0
        if not splits:   # a single leaf: in every tree
            return 1.0
        log_phi = 0.0
        for left, right in splits:
            if min(right) < min(left):
                left, right = right, left
            parent, child = family.vertex_of(left + right), family.vertex_of(left)
            if parent < 0 or child < 0 or family.vertex_of(right) < 0:
                return 0.0
            first, last = self.edge_ptr[parent], self.edge_ptr[parent + 1]
            log_phi += self.edge_log_potential[
                first + int(np.flatnonzero(self.edge_left[first:last] == child)[0])]
        value = log_phi + self._outside()[top] - self.log_partition_function
        return float(min(1.0, np.exp(value)))

    # ------------------------------------------------------------ sampling
    def sample_edges(self, n_samples, random_state=None):
        """Exact draws from the family's distribution: edge ids, shape (n_samples, N - 1)."""
        if self._cdf is None:
            self._cdf = kernels.split_cdfs(self.edge_ptr, self.edge_left, self.edge_right,
                                           self.edge_log_potential, self.log_z)
        rng = check_random_state(random_state)
        uniforms = rng.random_sample((int(n_samples), max(self.n_items - 1, 0)))
        return kernels.sample_trees(self.edge_ptr, self.edge_left, self.edge_right,
                                    self._cdf, self.family.root, self.n_items, uniforms)

    def sample(self, n_samples, random_state=None):
        """Exact draws as a list of nested-tuple trees."""
        return [self.tree_nested(row) for row in self.sample_edges(n_samples, random_state)]

    def vertex_frequencies(self, trees):
        """Fraction of the trees (rows of edge ids) that contain each vertex as a node."""
        trees = np.ascontiguousarray(trees, dtype=np.int64).reshape(-1, max(self.n_items - 1, 0))
        return kernels.vertex_frequencies(trees, self.edge_left, self.edge_right,
                                          self.family.root, self.n_vertices)

    # ------------------------------------------------------------ perturb-and-MAP
    def perturb_and_map(self, n_samples, scale=1.0, random_state=None):
        """Perturb-and-MAP trees: the MAP under i.i.d. Gumbel noise on every split.

        Each draw adds ``scale * G_e`` (``G_e`` standard Gumbel, independent per
        edge) to every split log-potential and returns the MAP tree of the
        perturbed model (Papandreou & Yuille 2011). With noise on the splits
        only (not on whole trees) the draws are *not* exact samples; their
        vertex frequencies are a baseline estimate of the cluster marginals.
        Forbidden splits stay forbidden.

        Parameters
        ----------
        n_samples : int
        scale : float, default=1.0
            Gumbel scale; 0 returns the MAP tree every time.
        random_state : int, RandomState instance or None

        Returns
        -------
        trees : ndarray of shape (n_samples, N - 1)
            Edge ids of each MAP tree (see :meth:`tree_children`).
        marginals : ndarray of shape (n_vertices,)
            Fraction of the trees in which each vertex is a node.
        """
        if not np.isfinite(scale) or scale < 0:
            raise ValueError(f"scale must be a finite non-negative number, got {scale!r}.")
        n_samples = int(n_samples)
        if n_samples < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}.")
        rng = check_random_state(random_state)
        root = self.family.root
        trees = np.empty((n_samples, max(self.n_items - 1, 0)), np.int64)
        log_z = np.empty(self.n_vertices)  # unused by the MAP-only pass
        map_value = np.empty(self.n_vertices)
        best = np.empty(self.n_vertices, np.int64)
        for k in range(n_samples):
            psi = self.edge_log_potential
            if scale > 0:
                psi = psi + scale * rng.gumbel(size=self.n_edges)
            kernels.inside_pass(self.edge_ptr, self.edge_left, self.edge_right, psi,
                                self._is_leaf, log_z, map_value, best, False)
            trees[k] = kernels.tree_from_root(root, self.n_items, best, self.edge_left,
                                              self.edge_right)
        return trees, self.vertex_frequencies(trees)


__all__ = ["SparseHierarchicalTrellis", "log_double_factorial_trees"]
