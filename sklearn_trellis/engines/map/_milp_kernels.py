"""Numba kernels of the correlation-clustering MILP: triangle separation and a greedy start.

Pairs ``i < j`` are numbered row by row (``scipy``'s ``triu_indices`` order);
``x`` and ``w`` are passed as full symmetric (N, N) matrices so that the
kernels index them directly.
"""

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def pair_index(i, j, n_items):
    """Index of the pair ``{i, j}`` (``i != j``) in row-major upper-triangle order."""
    if i > j:
        i, j = j, i
    return i * n_items - (i * (i + 1)) // 2 + (j - i - 1)


@njit(cache=True)
def violated_triangles(x, positive, tol, limit):
    """Triangle inequalities ``x_ab + x_bc - x_ac <= 1`` violated by more than ``tol``.

    Only inequalities with a positive leg (``w_ab > 0`` or ``w_bc > 0``) are
    returned: the others are redundant for the maximisation (a clustering
    that satisfies the rest is repaired by the components of the positive
    same-cluster pairs without losing objective; see ``milp.py``).

    At most ``limit`` are recorded (the first found); ``total`` counts all.

    Returns
    -------
    legs_a, legs_b, base : int64 arrays
        Pair indices of the two legs and of the base of each violated inequality.
    violation : float64 array
        ``x_ab + x_bc - x_ac - 1`` of each.
    total : int
        Number of violated inequalities, recorded or not.
    """
    n = x.shape[0]
    total = 0
    size = 0
    count = 0
    legs_a = np.empty(0, np.int64)
    legs_b = np.empty(0, np.int64)
    base = np.empty(0, np.int64)
    violation = np.empty(0)
    for phase in range(2):
        if phase == 1:
            size = min(total, limit)
            legs_a = np.empty(size, np.int64)
            legs_b = np.empty(size, np.int64)
            base = np.empty(size, np.int64)
            violation = np.empty(size)
            count = 0
        for a in range(n):
            for b in range(n):
                if b == a:
                    continue
                xab = x[a, b]
                if xab <= tol:
                    continue
                for c in range(a + 1, n):  # the legs are unordered: c > a
                    if c == b:
                        continue
                    if not (positive[a, b] or positive[b, c]):
                        continue
                    v = xab + x[b, c] - x[a, c] - 1.0
                    if v > tol:
                        if phase == 0:
                            total += 1
                        elif count < size:
                            legs_a[count] = pair_index(a, b, n)
                            legs_b[count] = pair_index(b, c, n)
                            base[count] = pair_index(a, c, n)
                            violation[count] = v
                            count += 1
    return legs_a, legs_b, base, violation, total


@njit(cache=True)
def greedy_clustering(w):
    """Greedy agglomeration then :func:`local_moves`: a fast feasible clustering.

    Merges, while one exists, the two clusters with the largest positive sum
    of cross weights. ``O(N^3)`` at worst.
    """
    n = w.shape[0]
    labels = np.arange(n)
    # cross[a, b]: sum of weights between clusters a and b (clusters are ids < n).
    cross = w.copy()
    alive = np.ones(n, np.bool_)
    for _ in range(n - 1):
        best = 0.0
        ba = -1
        bb = -1
        for a in range(n):
            if not alive[a]:
                continue
            for b in range(a + 1, n):
                if alive[b] and cross[a, b] > best:
                    best = cross[a, b]
                    ba = a
                    bb = b
        if ba < 0:
            break
        alive[bb] = False
        for c in range(n):
            cross[ba, c] += cross[bb, c]
            cross[c, ba] = cross[ba, c]
        cross[ba, ba] = 0.0
        for i in range(n):
            if labels[i] == bb:
                labels[i] = ba
    return local_moves(w, labels)


@njit(cache=True)
def local_moves(w, labels):
    """Move single items to the cluster (or a new singleton) that gains most, until none gains.

    ``labels`` must lie in ``0..N-1``; returns a new label vector (same range).
    """
    n = w.shape[0]
    labels = labels.copy()
    # The gain of item i in cluster k is sum_{j in k} w_ij; an empty id
    # (value 0) is the option of a new singleton.
    to_cluster = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if j != i:
                to_cluster[i, labels[j]] += w[i, j]
    for _sweep in range(100):
        moved = False
        for i in range(n):
            own = labels[i]
            best = to_cluster[i, own]
            target = own
            for k in range(n):
                if k == own:
                    continue
                if to_cluster[i, k] > best + 1e-12 * (1.0 + abs(best)):
                    best = to_cluster[i, k]
                    target = k
            if target != own:
                for j in range(n):
                    if j != i:
                        to_cluster[j, own] -= w[i, j]
                        to_cluster[j, target] += w[i, j]
                labels[i] = target
                moved = True
        if not moved:
            break
    return labels
