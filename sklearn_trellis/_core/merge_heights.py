"""Merge heights of any binary tree in scikit-learn's units: the linkage distance of each merge.

``AgglomerativeClustering.distances_`` holds, for each merge of *its* greedy
tree, the linkage distance between the two merged clusters (Ward, complete,
average or single, in the units of the data and its metric). A tree that was
not built greedily (e.g. a MAP tree) has the same distances, measured the same
way, for each of its merges (:func:`linkage_heights`); only the greedy tree is
guaranteed to have them non-decreasing from the leaves up, so
:func:`monotone_heights` lifts each node to the largest height below it (a
cumulative maximum along every path to the root, the usual monotone correction
of dendrogram heights) and :func:`order_by_height` lists the merges by that
height, so that ``distance_threshold`` and ``n_clusters`` cut the tree exactly
as scikit-learn cuts its own.

Linkage distances between clusters ``L`` and ``R``:

- ``'single'`` / ``'complete'`` / ``'average'``: the minimum / maximum / mean
  distance over the pairs ``(x in L, y in R)`` (every pair crosses exactly one
  merge, so all heights cost one pass over the pairs). With a connectivity
  graph, as scikit-learn's :func:`~sklearn.cluster.linkage_tree` measures
  them: the minimum / maximum over the graph's edges between ``L`` and ``R``,
  and for ``'average'`` scikit-learn's recursive size-weighted average of the
  children's distances to each neighbouring cluster (replayed along the tree's
  own merge order);
- ``'ward'``: ``sqrt(2 |L| |R| / (|L| + |R|)) * ||mean(L) - mean(R)||``, the
  distance of scipy's and scikit-learn's Ward trees (with or without a graph).
"""

import math

import numpy as np
from numba import njit
from sklearn.metrics import pairwise_distances
from sklearn.metrics.pairwise import paired_distances

from .budget import check_memory
from .trees import leaf_order

#: The linkages whose distances :func:`linkage_heights` measures.
HEIGHT_LINKAGES = ("ward", "complete", "average", "single")
_LINKAGE_CODE = {"single": 0, "complete": 1, "average": 2}
#: Metrics computed pair by pair from the features (no N x N matrix).
_FEATURE_METRICS = {"euclidean": 0, "l2": 0, "manhattan": 1, "l1": 1, "cityblock": 1,
                    "cosine": 2}


def dense_heights_bytes(n, linkage, metric, connectivity=None):
    """Bytes :func:`linkage_heights` allocates for ``n`` items: the (N, N) distances of
    ``pairwise_distances`` and its temporaries (measured: 12 N**2 bytes for a named
    metric, condensed then square; 16 N**2 for a callable) when the metric is neither
    precomputed nor one the kernels compute from the features; else 0."""
    if (linkage == "ward" or connectivity is not None or metric == "precomputed"
            or (isinstance(metric, str) and metric in _FEATURE_METRICS)):
        return 0
    return (16 if callable(metric) else 12) * n * n


def linkage_heights(children, linkage, *, X=None, distances=None, metric="euclidean",
                    connectivity=None):
    """The ``linkage`` distance of each merge (row) of a ``children_`` tree.

    Parameters
    ----------
    children : ndarray of shape (N - 1, 2)
        scikit-learn ``children_`` (children precede their parents).
    linkage : {'ward', 'complete', 'average', 'single'}
    X : ndarray of shape (N, n_features), optional
        Feature rows (needed by Ward and by every metric but ``'precomputed'``).
    distances : ndarray of shape (N, N), optional
        The distance matrix, with ``metric='precomputed'``.
    metric : str or callable, default='euclidean'
        Any :func:`sklearn.metrics.pairwise_distances` metric.
    connectivity : sparse matrix of shape (N, N), optional
        Restrict single/complete/average to the graph's edges (a connected
        graph: every merge has an edge across).

    Returns
    -------
    heights : ndarray of shape (N - 1,)
    """
    children = np.ascontiguousarray(children, dtype=np.int64)
    n = children.shape[0] + 1
    if n == 1:
        return np.zeros(0, np.float64)
    if linkage == "ward":
        return _ward_heights(children, np.ascontiguousarray(X, dtype=np.float64))
    code = _LINKAGE_CODE[linkage]
    order, start, stop = leaf_order(children, n)
    if connectivity is not None:
        graph = connectivity.tocoo()
        keep = graph.row < graph.col
        rows, cols = graph.row[keep].astype(np.int64), graph.col[keep].astype(np.int64)
        if metric == "precomputed":
            weights = np.asarray(distances[rows, cols], dtype=np.float64).ravel()
        else:
            weights = paired_distances(X[rows], X[cols], metric=metric)
        if code == 2:
            return _graph_average_heights(children, rows, cols, weights)
        position = np.empty(n, np.int64)
        position[order] = np.arange(n)
        return _graph_heights(children, start, stop, position, rows, cols,
                              np.ascontiguousarray(weights, dtype=np.float64), code)
    if metric == "precomputed" or not (isinstance(metric, str) and metric in _FEATURE_METRICS):
        if metric != "precomputed":
            check_memory(dense_heights_bytes(n, linkage, metric),
                         f"the ({n}, {n}) distance matrix of the merge heights")
            distances = pairwise_distances(X, metric=metric)
        return _dense_heights(children, order, start, stop,
                              np.ascontiguousarray(distances, dtype=np.float64), 3, code)
    features = np.ascontiguousarray(X, dtype=np.float64)
    kind = _FEATURE_METRICS[metric]
    if kind == 2:
        norms = np.linalg.norm(features, axis=1)
        if np.any(norms == 0):
            raise ValueError("Cosine affinity cannot be used when X contains zero vectors")
        features = features / norms[:, None]
    return _dense_heights(children, order, start, stop, features, kind, code)


def monotone_heights(children, heights):
    """Each node lifted to the largest height in its subtree (non-decreasing to the root)."""
    children = np.asarray(children, dtype=np.int64)
    n = children.shape[0] + 1
    lifted = np.zeros(2 * n - 1, np.float64)
    for row, (a, b) in enumerate(children.tolist()):   # children precede parents
        lifted[n + row] = max(heights[row], lifted[a], lifted[b])
    return lifted[n:]


def order_by_height(children, heights):
    """``children_`` and heights relisted by non-decreasing height (ties keep their order).

    ``heights`` must not decrease from a node to its parent (e.g. from
    :func:`monotone_heights`), so every child still precedes its parent.
    """
    children = np.asarray(children, dtype=np.int64)
    n = children.shape[0] + 1
    order = np.argsort(heights, kind="stable")
    new_id = np.arange(2 * n - 1, dtype=np.int64)
    new_id[n + order] = n + np.arange(order.size)
    return new_id[children[order]].astype(np.intp).reshape(-1, 2), np.asarray(heights)[order]


def _graph_average_heights(children, rows, cols, weights):
    """scikit-learn's constrained average linkage replayed on a given merge sequence.

    Each active cluster keeps its distance to each neighbouring cluster; a
    merge of ``i`` and ``j`` gives the new cluster the size-weighted average
    of ``i``'s and ``j``'s distances to a common neighbour, or the one that
    exists (``sklearn.cluster._hierarchical_fast.average_merge``).
    """
    n = children.shape[0] + 1
    near = [dict() for _ in range(2 * n - 1)]
    for a, b, w in zip(rows.tolist(), cols.tolist(), weights.tolist()):
        near[a][b] = w
        near[b][a] = w
    size = np.ones(2 * n - 1, np.float64)
    out = np.zeros(n - 1, np.float64)
    for row, (i, j) in enumerate(children.tolist()):
        k = n + row
        out[row] = near[i].get(j, 0.0)
        n_i, n_j = size[i], size[j]
        size[k] = n_i + n_j
        merged = {c: d for c, d in near[i].items() if c != j}
        for c, d in near[j].items():
            if c == i:
                continue
            merged[c] = (n_i * merged[c] + n_j * d) / (n_i + n_j) if c in merged else d
        for c, d in merged.items():
            near[c].pop(i, None)
            near[c].pop(j, None)
            near[c][k] = d
        near[k] = merged
        near[i] = near[j] = None
    return out


@njit(cache=True)
def _ward_heights(children, X):
    n = children.shape[0] + 1
    d = X.shape[1]
    centroid = np.zeros((2 * n - 1, d), np.float64)
    size = np.ones(2 * n - 1, np.float64)
    for i in range(n):      # loops: numba's 2-d slice assignment compiles for seconds
        for c in range(d):
            centroid[i, c] = X[i, c]
    out = np.empty(n - 1, np.float64)
    for row in range(n - 1):
        a, b = children[row, 0], children[row, 1]
        na, nb = size[a], size[b]
        sq = 0.0
        for c in range(d):
            diff = centroid[a, c] - centroid[b, c]
            sq += diff * diff
        out[row] = math.sqrt(2.0 * na * nb / (na + nb) * sq)
        size[n + row] = na + nb
        for c in range(d):
            centroid[n + row, c] = (na * centroid[a, c] + nb * centroid[b, c]) / (na + nb)
    return out


@njit(cache=True, inline="always")
def _pair_distance(data, i, j, kind):
    if kind == 3:
        return data[i, j]
    total = 0.0
    if kind == 0:
        for c in range(data.shape[1]):
            diff = data[i, c] - data[j, c]
            total += diff * diff
        return np.sqrt(total)
    if kind == 1:
        for c in range(data.shape[1]):
            total += abs(data[i, c] - data[j, c])
        return total
    for c in range(data.shape[1]):
        total += data[i, c] * data[j, c]
    return max(1.0 - total, 0.0)


@njit(cache=True)
def _dense_heights(children, order, start, stop, data, kind, code):
    """Single/complete/average over all pairs across each merge (each pair once)."""
    n = children.shape[0] + 1
    out = np.empty(n - 1, np.float64)
    for row in range(n - 1):
        a, b = children[row, 0], children[row, 1]
        best = np.inf if code == 0 else (-np.inf if code == 1 else 0.0)
        for p in range(start[a], stop[a]):
            i = order[p]
            for q in range(start[b], stop[b]):
                value = _pair_distance(data, i, order[q], kind)
                if code == 0:
                    best = min(best, value)
                elif code == 1:
                    best = max(best, value)
                else:
                    best += value
        if code == 2:
            best /= (stop[a] - start[a]) * (stop[b] - start[b])
        out[row] = best
    return out


@njit(cache=True)
def _graph_heights(children, start, stop, position, rows, cols, weights, code):
    """Single/complete/average over the graph edges across each merge.

    An edge crosses the merge of the lowest node holding both ends: walking
    up from the deeper-in-order leaf, the first node whose leaf range holds
    both positions (O(depth) per edge)."""
    n = children.shape[0] + 1
    parent = np.full(2 * n - 1, -1, np.int64)
    for row in range(n - 1):
        parent[children[row, 0]] = n + row
        parent[children[row, 1]] = n + row
    best = np.full(n - 1, np.inf if code == 0 else (-np.inf if code == 1 else 0.0))
    count = np.zeros(n - 1, np.float64)
    for e in range(rows.size):
        pi, pj = position[rows[e]], position[cols[e]]
        node = rows[e]
        while not (start[node] <= pj < stop[node] and start[node] <= pi < stop[node]):
            node = parent[node]
        k = node - n
        if code == 0:
            best[k] = min(best[k], weights[e])
        elif code == 1:
            best[k] = max(best[k], weights[e])
        else:
            best[k] += weights[e]
        count[k] += 1
    for k in range(n - 1):
        if count[k] == 0:
            best[k] = 0.0      # no edge across (a disconnected graph): no height of its own
        elif code == 2:
            best[k] /= count[k]
    return best


__all__ = ["HEIGHT_LINKAGES", "linkage_heights", "monotone_heights", "order_by_height"]
