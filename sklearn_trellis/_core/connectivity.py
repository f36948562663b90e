"""Connectivity constraints of hierarchical clustering: which clusters a tree may hold.

As in scikit-learn's :class:`~sklearn.cluster.AgglomerativeClustering`, a
connectivity graph over the items restricts the tree to clusters that are
connected in the graph (every node of the tree is a connected set of items).
A graph with several components is first completed the way scikit-learn does
it (:func:`check_connectivity`, same warning), so the full set is connected.

- :func:`check_connectivity`: a callable or matrix -> the completed symmetric
  CSR graph and the number of components it had;
- :func:`connected_subset_masks`: every connected subset of a small graph
  (bitmasks; the vertices of the exact constrained trellis);
- :func:`window_union_connected`: which window unions of a sparse family are
  connected (their pieces are).
"""

import warnings

import numba
import numpy as np
from numba import njit
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from sklearn.cluster._agglomerative import _fix_connectivity
from sklearn.utils import check_array


#: Metrics whose closest pairs a k-d tree finds (Minkowski ``p``).
_MINKOWSKI_P = {"euclidean": 2, "l2": 2, "manhattan": 1, "l1": 1, "cityblock": 1}


def check_connectivity(connectivity, X, metric):
    """The completed connectivity graph (CSR, symmetric, no diagonal) and its component count.

    ``connectivity`` is a matrix or a callable ``connectivity(X)``, as in
    scikit-learn; a graph with several components is completed as
    scikit-learn completes it (it warns ``"... Completing it to avoid stopping
    the tree early."``): an edge joins the closest pair of samples of every
    two components, so the result has one component. With a Minkowski metric
    (euclidean, manhattan) the closest pairs come from k-d trees
    (:func:`_complete_components`) instead of scikit-learn's all-pairs
    distances (``O(N**2)`` time: a minute at N = 100,000).
    """
    if callable(connectivity):
        connectivity = connectivity(X)
    connectivity = check_array(connectivity, accept_sparse=["csr", "coo", "lil"])
    p = _MINKOWSKI_P.get(metric) if isinstance(metric, str) else None
    if p is None:
        graph, n_components = _fix_connectivity(X, connectivity, affinity=metric)
    else:
        graph, n_components = _fix_connectivity_kdtree(X, connectivity, metric, p)
    graph = sparse.csr_matrix(graph, dtype=np.float64)
    graph = ((graph + graph.T) != 0).astype(np.float64).tocsr()
    graph.setdiag(0)
    graph.eliminate_zeros()
    graph.sort_indices()
    return graph, int(n_components)


def _fix_connectivity_kdtree(X, connectivity, metric, p):
    """scikit-learn's ``_fix_connectivity`` with the completion of :func:`_complete_components`."""
    n_samples = X.shape[0]
    if connectivity.shape[0] != n_samples or connectivity.shape[1] != n_samples:
        raise ValueError("Wrong shape for connectivity matrix: %s when X is %s"
                         % (connectivity.shape, X.shape))
    connectivity = connectivity + connectivity.T
    if not sparse.issparse(connectivity):
        connectivity = sparse.lil_matrix(connectivity)
    if connectivity.format != "lil":
        connectivity = connectivity.tolil()
    n_components, labels = connected_components(connectivity)
    if n_components > 1:
        warnings.warn("the number of connected components of the connectivity matrix is "
                      "%d > 1. Completing it to avoid stopping the tree early."
                      % n_components, stacklevel=3)
        for a, b in _complete_components(X, labels, n_components, metric, p):
            connectivity[a, b] = 1
            connectivity[b, a] = 1
    return connectivity, n_components


def _complete_components(X, labels, n_components, metric, p):
    """The closest pair of samples of every two components, as scikit-learn picks it.

    scikit-learn's ``_fix_connected_components`` takes the first minimum
    (row-major) of the full distance matrix between each two components. Here
    a k-d tree of one component finds the smallest distance (bounded first by
    the points of the other nearest its centre, so most queries stop at
    once; points that cannot be that close, by the bounding box and the
    radius of the other component, are not queried); the pairs within
    ``1e-9`` of it are then measured with ``pairwise_distances`` and the
    first minimum in scikit-learn's order is kept. The two agree unless two
    pairs tie within rounding of the dot-product distances. The k-d tree
    queries run on
    ``numba.get_num_threads()`` threads (each query point's answer is its own:
    the same pairs for any number).
    """
    from scipy.spatial import cKDTree
    from sklearn.metrics import pairwise_distances

    workers = numba.get_num_threads()
    members = [np.flatnonzero(labels == c) for c in range(n_components)]
    trees = [None] * n_components
    boxes = [None] * n_components
    pairs = []
    for i in range(n_components):
        Xi = X[members[i]]
        for j in range(i):
            Xj = X[members[j]]
            if trees[j] is None:
                trees[j] = cKDTree(Xj)
            tree = trees[j]
            if boxes[j] is None:
                centre = Xj.mean(axis=0)
                boxes[j] = (Xj.min(axis=0), Xj.max(axis=0), centre,
                            _norm(Xj - centre, p).max())
            low, high, centre, spread = boxes[j]
            near = min(32, Xi.shape[0])
            centre_distance = ((Xi - centre) ** 2).sum(axis=1)
            probe = np.argpartition(centre_distance, near - 1)[:near]
            bound = tree.query(Xi[probe], k=1, p=p)[0].min()
            # distance_upper_bound is strict: a little above the bound
            limit = bound * (1 + 1e-9) + 1e-300
            # Lower bounds of each point's distance to component j (its box; the
            # triangle inequality from j's centre): the query would find none
            # within the limit for points beyond it (a margin for rounding).
            gap = np.maximum(low - Xi, 0.0) + np.maximum(Xi - high, 0.0)
            beyond = np.maximum(_norm(gap, p), _norm(Xi - centre, p) - spread)
            near_rows = np.flatnonzero(beyond <= limit * (1 + 1e-6))
            found = np.full(Xi.shape[0], np.inf)
            found[near_rows] = tree.query(Xi[near_rows], k=1, p=p, workers=workers,
                                          distance_upper_bound=limit)[0]
            radius = found.min() * (1 + 1e-9) + 1e-300
            rows = np.flatnonzero(found <= radius)
            cols = np.unique(np.concatenate(
                [np.asarray(c, dtype=np.int64) for c in
                 tree.query_ball_point(Xi[rows], r=radius, p=p, workers=workers)]))
            D = pairwise_distances(Xi[rows], Xj[cols], metric=metric)
            ii, jj = np.unravel_index(D.argmin(axis=None), D.shape)
            pairs.append((members[i][rows[ii]], members[j][cols[jj]]))
    return pairs


def _norm(rows, p):
    """Minkowski ``p``-norm (1 or 2) of each row."""
    return np.abs(rows).sum(axis=1) if p == 1 else np.sqrt((rows ** 2).sum(axis=1))


def connected_subset_masks(graph, n_items):
    """Bitmasks of the non-empty subsets that are connected in ``graph`` (``n_items <= 30``)."""
    neighbours = np.zeros(n_items, np.int64)
    coo = graph.tocoo()
    for i, j in zip(coo.row.tolist(), coo.col.tolist()):
        if i != j:
            neighbours[i] |= 1 << j
    return _connected_masks(neighbours, n_items)


@njit(cache=True)
def _connected_masks(neighbours, n):
    out = np.empty(1 << n, np.int64)
    count = 0
    for mask in range(1, 1 << n):
        reached = mask & -mask
        while True:
            grown = reached
            rest = reached
            while rest:
                low = rest & -rest
                item = 0
                while (low >> item) != 1:
                    item += 1
                grown |= neighbours[item] & mask
                rest ^= low
            if grown == reached:
                break
            reached = grown
        if reached == mask:
            out[count] = mask
            count += 1
    return out[:count]


def window_union_connected(family, graph):
    """``False`` for the window unions of ``family`` that are not connected in ``graph``.

    Every other vertex gets ``True``: the pieces of a window (clusters of a
    tree realised under the constraint) are connected, so a union of pieces is
    connected exactly when the pieces' adjacency graph is, restricted to it.
    """
    allowed = np.ones(family.n_vertices, dtype=bool)
    if family.window_table.size == 0:
        return allowed
    _mark_windows(family.window_table, family.items, family.starts, family.stops,
                  graph.indptr.astype(np.int64), graph.indices.astype(np.int64),
                  family.n_items, allowed)
    return allowed


@njit(cache=True)
def _mark_windows(table, items, starts, stops, indptr, indices, n_items, allowed):
    label = np.full(n_items, -1, np.int64)
    stamp = np.full(n_items, -1, np.int64)
    width = table.shape[1]
    for w in range(table.shape[0]):
        k = 0
        while (1 << k) < width and table[w, 1 << k] >= 0:
            k += 1
        for j in range(k):
            v = table[w, 1 << j]
            for a in range(starts[v], stops[v]):
                label[items[a]] = j
                stamp[items[a]] = w
        adjacent = np.zeros(k, np.int64)
        for j in range(k):
            v = table[w, 1 << j]
            for a in range(starts[v], stops[v]):
                i = items[a]
                for e in range(indptr[i], indptr[i + 1]):
                    other = indices[e]
                    if stamp[other] == w and label[other] != j:
                        adjacent[j] |= 1 << label[other]
        for mask in range(1, 1 << k):
            v = table[w, mask]
            if v < 0:
                continue
            reached = mask & -mask
            while True:
                grown = reached
                for j in range(k):
                    if reached >> j & 1:
                        grown |= adjacent[j] & mask
                if grown == reached:
                    break
                reached = grown
            if reached != mask:
                allowed[v] = False


__all__ = ["check_connectivity", "connected_subset_masks", "window_union_connected"]
