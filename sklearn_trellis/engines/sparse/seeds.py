"""Seed trees of sparse trellises: agglomerative linkages and beam search.

A sparse trellis runs the exact recursions over the union of the nodes of a few
*seed trees* (Greenberg et al. 2021, Section 3.1; Greenberg et al. 2018,
Section 4). Two sources live here, both returning scikit-learn ``children_``
arrays (int64, shape ``(N - 1, 2)``: leaves are ``0..N-1``, merge ``k`` creates
node ``N + k``) ready for :meth:`ClusterFamily.from_trees
<sklearn_trellis._core.family.ClusterFamily.from_trees>`:

- :func:`linkage_seed_trees`: the classical agglomerative trees (single,
  average, complete, Ward) from :func:`scipy.cluster.hierarchy.linkage`, for
  any ``N`` that fits the condensed distance matrix in memory;
- :func:`beam_seed_trees`: the best distinct trees of the final beam of a beam
  search on the model's own split log-potential (the paper's "Beam Search
  trellis"); it reads the model's ``2**N`` statistics table, so it shares the
  exact engines' size limit.
"""

import numbers

import numpy as np

from ..._core.budget import check_memory
from ..._core.family import ClusterFamily
from ..._core.pairwise import (SMALL_CHECK_ENTRIES, check_pairwise_matrix,
                               finite_nonnegative, upper_triangle)
from ..._core.trees import check_children, leaf_order, scipy_to_children, tree_to_postorder_children
from ..map.search import beam_search_trees
from ._nn_chain import condensed_items, euclidean_linkage_matrices, linkage_matrices

#: The linkages ``'all'`` names, in this order.
LINKAGES = ("single", "average", "complete", "ward")
#: Seed trees that are not linkages, available by name but not part of ``'all'``:
#: ``'diana'``, Kaufman & Rousseeuw's divisive tree (:mod:`sklearn_trellis.engines.divisive`).
OTHER_SEEDS = ("diana",)


def check_linkages(linkage):
    """The linkage names of ``'all'``, one name or a list of names (validated)."""
    if isinstance(linkage, str):
        names = list(LINKAGES) if linkage == "all" else [linkage]
    else:
        try:
            names = list(linkage)
        except TypeError:
            raise TypeError("linkage must be 'all', a linkage name or a list of names, "
                            f"got {linkage!r}.") from None
    if not names:
        raise ValueError("linkage names no linkage (empty list).")
    for name in names:
        if name not in LINKAGES + OTHER_SEEDS:
            raise ValueError(f"Unknown linkage {name!r}: expected 'all' or one of "
                             f"{list(LINKAGES + OTHER_SEEDS)}.")
    return names


def _condensed_from_square(distances):
    # The shared checks scan the matrix once without N x N temporaries.
    distances = check_pairwise_matrix(distances, "distances")
    if np.any(np.diag(distances) != 0):
        raise ValueError("distances must have a zero diagonal.")
    return upper_triangle(distances)



def _square_fits(n, work):
    """Whether the linkages of ``n`` points get a square ``(n, n)`` working array."""
    if work is not None:
        return True
    try:
        check_memory(8 * n * n, "a square working copy of the distances")
    except ValueError:
        return False
    return True


def linkage_seed_trees(X=None, *, distances=None, linkage="all", metric="euclidean",
                       progress=None, work=None):
    """Agglomerative seed trees (scipy's linkages) as scikit-learn ``children_`` arrays.

    Parameters
    ----------
    X : array-like of shape (N, n_features), optional
        Feature vectors; distances are ``scipy.spatial.distance.pdist(X, metric)``.
    distances : array-like, optional
        Precomputed dissimilarities instead of ``X``: a square symmetric
        ``(N, N)`` matrix with a zero diagonal, or a condensed vector of length
        ``N (N - 1) / 2``. With ``'ward'`` they are treated as euclidean
        distances: scipy applies the Lance-Williams update of Ward's method to
        whatever it is given, so for non-euclidean dissimilarities the result is
        a well-defined binary tree (still a valid seed: any tree is) but not
        the minimum-variance merge sequence of any point set.
    linkage : {'all', 'single', 'average', 'complete', 'ward'} or list of them, \
default='all'
        Which trees to build; ``'all'`` builds the four, in that order.
    metric : str, default='euclidean'
        Metric of ``pdist`` when ``X`` is given. Ward needs ``'euclidean'``.
    progress : Progress, optional
        Reporter of a fit with ``verbose`` (:mod:`sklearn_trellis._core.progress`):
        a stage line per linkage, progress lines within each.
    work : ndarray of shape (N, N), optional
        float64 scratch space for the linkages' square working copy (overwritten):
        a caller that needs an N x N array afterwards lends it, and no other is made.
        With euclidean ``X`` it is all the memory of size N x N the linkages use.

    Returns
    -------
    list of ndarray of int64, shape (N - 1, 2)
        One ``children_`` array per linkage, in the order asked.

    Notes
    -----
    With euclidean ``X``, the linkages share one square ``(N, N)`` array
    (``8 N**2`` bytes, ``work`` if given) refilled with ``pdist``'s distances
    (bit for bit) before each nearest-neighbour chain; no condensed copy is
    made. Up to ``_nn_chain.SECOND_CHAIN_BYTES`` (1 GiB: N <= 11,585) a second
    such array lets two chains run at once on two threads (the same trees). Otherwise the condensed distance matrix is computed once and shared
    by the linkages: ``4 N (N - 1)`` bytes (400 MB at ``N = 10,000``), and
    average, complete and Ward linkage (scipy's nearest-neighbour chain,
    compiled without the GIL in the private module ``_nn_chain``) each work on
    a square copy when it fits (``8 N**2`` bytes; twice as fast as scipy's
    condensed one), else on a condensed copy. The memory is checked before
    anything is allocated.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees
    >>> X = np.array([[0.0], [0.1], [5.0], [5.3]])
    >>> [t.tolist() for t in linkage_seed_trees(X, linkage=["single", "ward"])]
    [[[0, 1], [2, 3], [4, 5]], [[0, 1], [2, 3], [4, 5]]]
    """
    from scipy.spatial.distance import pdist

    names = check_linkages(linkage)
    if (X is None) == (distances is None):
        raise ValueError("Give exactly one of X (features) and distances (precomputed).")
    if X is not None:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d (N, n_features), got shape {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinity.")
        if "ward" in names and metric != "euclidean":
            raise ValueError(f"Ward linkage needs metric='euclidean', got {metric!r}; "
                             "choose other linkages or the euclidean metric.")
        n = X.shape[0]
        if n < 1:
            raise ValueError("X has no rows.")
        if n == 1:
            return [np.zeros((0, 2), dtype=np.int64) for _ in names]
        if metric in ("euclidean", "l2") and _square_fits(n, work):
            # One (N, N) array refilled with pdist's values: no condensed copy.
            work = np.empty((n, n)) if work is None else work
            return [scipy_to_children(Z) for Z in
                    euclidean_linkage_matrices(names, X, work, progress=progress)]
        # pdist output, plus scipy's working copy for all but single linkage.
        check_memory(8 * (n * (n - 1) // 2) * 2, f"the distances of {n} points")
        condensed = pdist(X, metric=metric)
    else:
        distances = np.asarray(distances, dtype=np.float64)
        if distances.ndim == 2:
            if distances.shape[0] != distances.shape[1]:
                raise ValueError("A square distance matrix must be (N, N), got shape "
                                 f"{distances.shape}.")
            n = distances.shape[0]
            check_memory(8 * (n * (n - 1) // 2) * 2, f"the distances of {n} points")
            condensed = _condensed_from_square(distances) if n > 1 else np.zeros(0)
        elif distances.ndim == 1:
            m = distances.size
            n = condensed_items(m)
            if n * (n - 1) // 2 != m:
                raise ValueError(f"A condensed distance vector has length N (N - 1) / 2; "
                                 f"{m} is not of that form.")
            condensed = distances
        else:
            raise ValueError("distances must be a square matrix or a condensed vector, "
                             f"got shape {distances.shape}.")
        if n == 1:
            return [np.zeros((0, 2), dtype=np.int64) for _ in names]
        if condensed.size <= SMALL_CHECK_ENTRIES:     # numpy: no kernel to compile
            finite = bool(np.isfinite(condensed).all())
            nonnegative = bool((condensed >= 0).all())
        else:
            finite, nonnegative = finite_nonnegative(condensed)   # no N**2 / 2 temporaries
        if not finite:
            raise ValueError("distances contain NaN or infinity.")
        if not nonnegative:
            raise ValueError("distances must be non-negative.")
    return [scipy_to_children(Z) for Z in
            linkage_matrices([(name, condensed) for name in names], progress=progress,
                             work=work)]


def beam_seed_trees(model, n_trees, *, beam_width=None, beta=1.0):
    """The ``n_trees`` best distinct trees of a beam search on a split model's energy.

    Runs :func:`~sklearn_trellis.engines.map.search.beam_search_trees` (merge
    sequences scored by the model's split log-potential, paper Section 4.2)
    and returns the distinct complete trees of its final beam, best first:
    the seeds of the paper's "Beam Search trellis" (Figure 7).

    Parameters
    ----------
    model : fitted SplitModel
        Any hierarchical model with ``kernel_inputs`` (its ``2**N`` statistics
        table limits ``N`` to the exact engines' range).
    n_trees : int
        Number of seed trees wanted. The final beam holds at most
        ``beam_width`` trees (at most one per two-cluster forest it reached),
        so fewer may come back.
    beam_width : int, optional
        Default ``max(N (N - 1) / 2, n_trees)`` (the paper's beam, widened to
        hold ``n_trees`` trees).
    beta : float, default=1.0
        Inverse temperature of the split log-potential.

    Returns
    -------
    trees : list of ndarray of int64, shape (N - 1, 2)
        ``children_`` arrays, best first.
    log_potentials : ndarray of float
        Their log-potentials (``beta * sum psi``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import DasguptaEnergy
    >>> from sklearn_trellis.engines.sparse.seeds import beam_seed_trees
    >>> x = np.array([[0.0], [0.2], [3.0], [3.1], [7.0]])
    >>> model = DasguptaEnergy().fit(np.abs(x - x.T))     # a distance matrix
    >>> trees, values = beam_seed_trees(model, 3)
    >>> len(trees), trees[0].shape, bool(values[0] >= values[-1])
    (3, (4, 2), True)
    """
    if isinstance(n_trees, (bool, np.bool_)) or not isinstance(n_trees, numbers.Integral):
        raise TypeError(f"n_trees must be an int, got {n_trees!r}.")
    if n_trees < 1:
        raise ValueError(f"n_trees must be >= 1, got {n_trees}.")
    n = model.n_items_
    if beam_width is None:
        beam_width = max(n * (n - 1) // 2, int(n_trees), 1)
    _check_table_memory(model)
    found = beam_search_trees(*model.kernel_inputs(float(beta)), beam_width=beam_width,
                              n_trees=int(n_trees))
    trees = [tree_to_postorder_children(tree, n) if n > 1 else np.zeros((0, 2), dtype=np.int64)
             for tree, _ in found]
    return trees, np.array([value for _, value in found])


def _check_table_memory(model):
    """Refuse, before it is built, a ``2**N`` statistics table that does not fit in memory.

    Its rows are those of the model's per-vertex statistics (read on the family of the
    singletons); building it peaks at up to twice the table (N = 24: Dasgupta's 256 MiB
    table peaked at 400 MiB, Ginkgo's 640 MiB at 1.1 GiB). A callable energy's table of
    splits has its own limit (``max_items``).
    """
    n = model.n_items_
    if n < 2 or model.python_splits:
        return
    singletons = ClusterFamily.from_clusters([], n)
    rows = model.family_kernel_inputs(singletons).stats.shape[0]
    check_memory(2 * 8 * rows * 2.0 ** n,
                 f"the beam search's table of the model over all 2**{n} subsets",
                 "Set n_beam_trees=0 (TrellisHierarchical's beam seeds; its linkage seed "
                 "trees remain), or use fewer items.")


def tree_windows(children, n_items, size=8, max_union_items=None):
    """Windows of a tree: groups of ``size`` nodes whose unions enrich a sparse trellis.

    Starting at the root, a window is grown by replacing its largest internal
    node by that node's two children until it holds ``size`` nodes (or only
    leaves); each internal node of the window then starts a window of its own.
    Every node of the tree is a window member once, so there are about
    ``(N - 1) / (size - 1)`` windows. Passed to
    ``ClusterFamily.from_trees(..., windows=...)``, each window adds all
    ``2**size - 1`` unions of its nodes: the trellis then realises every tree
    over the window's nodes, i.e. it re-optimises the tree exactly ``size``
    clusters at a time, at every level (the "exact sub-problem" seeds of the
    sparse trellis).

    Parameters
    ----------
    children : array-like of shape (N - 1, 2)
        A scikit-learn ``children_`` tree (e.g. the MAP tree of a first sparse fit).
    n_items : int
    size : int, default=8
        Nodes per window (2 to 16); the cost grows as ``3**size`` splits per window.
    max_union_items : int, optional
        Memory budget: a window of ``s`` items adds unions holding
        ``2**(size - 1) * s`` item entries in total (stored by the family and
        listed again by edge discovery). When given, windows are kept from the
        smallest up while their total stays within it (deep, unbalanced
        trees have large windows at every level).

    Returns
    -------
    list of lists of ndarray of int64
        The item sets of each window's nodes.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.sparse.seeds import tree_windows
    >>> chain = np.array([[0, 1], [4, 2], [5, 3]])         # (((0, 1), 2), 3)
    >>> [[piece.tolist() for piece in w] for w in tree_windows(chain, 4, size=3)]
    [[[0, 1], [2], [3]], [[0], [1]]]
    """
    import heapq

    if isinstance(size, (bool, np.bool_)) or not isinstance(size, numbers.Integral):
        raise TypeError(f"size must be an int, got {size!r}.")
    if not 2 <= size <= 16:
        raise ValueError(f"size must be between 2 and 16, got {size}.")
    n = int(n_items)
    if n < 2:
        return []
    children = check_children(children, n)
    order, start, stop = leaf_order(children, n)
    windows = []
    stack = [2 * n - 2]
    while stack:
        node = stack.pop()
        frontier = []
        heap = [(-(stop[node] - start[node]), node)]
        while heap and len(frontier) + len(heap) < size:
            _, largest = heapq.heappop(heap)
            for child in children[largest - n]:
                child = int(child)
                if child < n:
                    frontier.append(child)
                else:
                    heapq.heappush(heap, (-(stop[child] - start[child]), child))
        pieces = frontier + [member for _, member in heap]
        pieces.sort(key=lambda p: start[p])
        windows.append([order[start[p]:stop[p]] for p in pieces])
        stack.extend(p for p in pieces if p >= n)
    if max_union_items is not None:
        windows = windows_within_budget(windows, max_union_items)
    return windows


def windows_within_budget(windows, max_union_items):
    """The smallest windows whose unions hold at most ``max_union_items`` entries.

    A window of ``k`` clusters and ``s`` items adds unions holding
    ``2**(k - 1) * s`` item entries; windows are kept from the cheapest up,
    in their original order.
    """
    cost = [(1 << (len(w) - 1)) * sum(piece.size for piece in w) for w in windows]
    keep = np.cumsum(np.sort(cost)) <= max_union_items
    order_by_cost = np.argsort(cost, kind="stable")
    return [windows[i] for i in sorted(order_by_cost[keep].tolist())]


__all__ = ["LINKAGES", "tree_windows", "windows_within_budget", "check_linkages",
           "linkage_seed_trees", "beam_seed_trees"]
