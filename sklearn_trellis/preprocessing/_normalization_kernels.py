"""Numba kernels of the tree-based normalisation of distance matrices (developer notes, fastTIWD (f)).

Trees use scipy's node numbering: leaves ``0..n-1``, the internal node made by
linkage row ``r`` is ``n + r``, the root is ``2n - 2``. ``parent[v]`` is the
parent of node ``v`` (``-1`` for the root) and ``lam[v]`` the length of the
edge from ``v`` to its parent (``0`` for the root). Every kernel is ``O(n)``
per call except :func:`single_linkage_mst`, :func:`max_excess_over_tree`,
:func:`row_weighted_sums` and :func:`project_distances`, which are ``O(n^2)``
and need no memory beyond ``O(n)`` (besides their output).
"""

import numpy as np
from numba import njit, prange

from .._core.parallel import parallel_kernel
from .._core.union_find import find_root


@njit(cache=True)
def single_linkage_mst(dist):
    """Prim's minimum spanning tree of a dense distance matrix, ``O(n^2)`` time, ``O(n)`` memory.

    Returns ``(a, b, w)``: the ``n - 1`` edges ``a[t] -- b[t]`` with weights ``w[t]``.
    """
    n = dist.shape[0]
    in_tree = np.zeros(n, dtype=np.bool_)
    best = np.full(n, np.inf)
    best_from = np.zeros(n, dtype=np.int64)
    a = np.empty(n - 1, dtype=np.int64)
    b = np.empty(n - 1, dtype=np.int64)
    w = np.empty(n - 1, np.float64)
    current = 0
    in_tree[0] = True
    for step in range(n - 1):
        nxt = -1
        nxt_value = np.inf
        for j in range(n):
            if in_tree[j]:
                continue
            value = float(dist[current, j])
            if value < best[j]:
                best[j] = value
                best_from[j] = current
            if best[j] < nxt_value or nxt == -1:
                nxt_value = best[j]
                nxt = j
        a[step] = best_from[nxt]
        b[step] = nxt
        w[step] = nxt_value
        in_tree[nxt] = True
        current = nxt
    return a, b, w


@njit(cache=True)
def mst_to_linkage(a, b, w, order, n):
    """Single-linkage matrix (scipy format) from MST edges, by union-find in weight order.

    ``order`` is ``np.argsort(w, kind="stable")``, sorted by the caller (a sort in the
    kernel would compile numba's sorting library).
    """
    roots = np.arange(2 * n - 1)
    node_of = np.arange(2 * n - 1)  # union-find root -> current cluster node id
    sizes = np.ones(2 * n - 1, np.float64)
    linkage = np.empty((n - 1, 4), np.float64)
    for r in range(n - 1):
        t = order[r]
        ra = find_root(roots, a[t])
        rb = find_root(roots, b[t])
        left = node_of[ra]
        right = node_of[rb]
        if left > right:
            left, right = right, left
        new = n + r
        linkage[r, 0] = left
        linkage[r, 1] = right
        linkage[r, 2] = w[t]
        sizes[new] = sizes[left] + sizes[right]
        linkage[r, 3] = sizes[new]
        roots[rb] = ra
        node_of[ra] = new
    return linkage


@njit(cache=True)
def leaf_ranges(children, n):
    """Leaf order in which every subtree is contiguous: ``(order, start, size)`` per node."""
    size = np.ones(2 * n - 1, dtype=np.int64)
    for r in range(n - 1):
        size[n + r] = size[children[r, 0]] + size[children[r, 1]]
    start = np.zeros(2 * n - 1, dtype=np.int64)
    for r in range(n - 2, -1, -1):
        node = n + r
        left = children[r, 0]
        right = children[r, 1]
        start[left] = start[node]
        start[right] = start[node] + size[left]
    order = np.empty(n, dtype=np.int64)
    for leaf in range(n):
        order[start[leaf]] = leaf
    return order, start, size


@njit(cache=True)
def max_excess_over_tree(dist, children, heights, n):
    """``max_ij (D_ij - U_ij)`` for the ultrametric ``U`` of a tree (each pair visited once)."""
    order, start, size = leaf_ranges(children, n)
    best = 0.0
    for r in range(n - 1):
        left = children[r, 0]
        right = children[r, 1]
        h = heights[r]
        for p in range(start[left], start[left] + size[left]):
            i = order[p]
            for q in range(start[right], start[right] + size[right]):
                value = float(dist[i, order[q]]) - h
                if value > best:
                    best = value
    return best


@njit(cache=True)
def tree_matvec(parent, lam, path_lam, y, n, subtree, path_lamy):
    """``S_tree @ y`` in ``O(n)`` (Lemma 1 of Adametz & Roth 2011, eq. 14-15).

    ``path_lam[v]`` is the sum of ``lam`` on the path from ``v`` to the root
    (precomputed once); ``subtree`` and ``path_lamy`` are work arrays of
    length ``2n - 1``. Children of node ``n + r`` have smaller ids, so one
    increasing pass sums subtrees and one decreasing pass sums along paths.
    """
    n_nodes = 2 * n - 1
    for v in range(n):
        subtree[v] = y[v]
    for v in range(n, n_nodes):
        subtree[v] = 0.0
    for v in range(n_nodes - 1):
        subtree[parent[v]] += subtree[v]
    total_y = subtree[n_nodes - 1]
    total_lam = 0.0
    weighted = 0.0
    for v in range(n_nodes - 1):
        total_lam += lam[v]
        weighted += lam[v] * subtree[v]
    path_lamy[n_nodes - 1] = 0.0
    for v in range(n_nodes - 2, -1, -1):
        path_lamy[v] = path_lamy[parent[v]] + lam[v] * subtree[v]
    out = np.empty(n, np.float64)
    for i in range(n):
        out[i] = total_y * total_lam - weighted + 2.0 * path_lamy[i] - total_y * path_lam[i]
    return out


@njit(cache=True)
def path_sums(parent, lam, n):
    """Sum of edge lengths from every node to the root."""
    n_nodes = 2 * n - 1
    out = np.zeros(n_nodes, np.float64)
    for v in range(n_nodes - 2, -1, -1):
        out[v] = out[parent[v]] + lam[v]
    return out


@parallel_kernel
def row_weighted_sums(matrix, weights):
    """``matrix @ weights`` accumulated in float64 whatever the matrix dtype (no copy)."""
    n = matrix.shape[0]
    out = np.empty(n, np.float64)
    for i in prange(n):
        acc = 0.0
        for j in range(matrix.shape[1]):
            acc += float(matrix[i, j]) * weights[j]
        out[i] = acc
    return out


@parallel_kernel
def project_distances(dist, u, inv_c, q, out):
    """``out = -D/2 - (u 1^T + 1 u^T)/c + q 1 1^T``, i.e. ``S* = -Q D Q^T / 2`` (eq. 16)."""
    n = dist.shape[0]
    for i in prange(n):
        ui = u[i]
        for j in range(n):
            out[i, j] = -0.5 * float(dist[i, j]) - (ui + u[j]) * inv_c + q
