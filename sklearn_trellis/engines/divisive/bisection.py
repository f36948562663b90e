"""Bisection of one cluster by K-means or K-medoids with ``K = 2`` (Murphy, ch. 25, 5.2).

numba kernels, one call per cluster, so a full tree over 20,000 points costs
``O(n log n)`` Lloyd steps instead of 20,000 estimator fits:

- :func:`two_means`: k-means++ seeding (Arthur & Vassilvitskii 2007) and Lloyd
  iterations on the cluster's feature rows;
- :func:`two_medoids`: PAM (Kaufman & Rousseeuw 1990, ch. 2) with ``K = 2``:
  BUILD then SWAP until no swap lowers the total dissimilarity;
- :func:`feature_diameter`: the exact diameter of a point set under the
  Euclidean or Manhattan metric without visiting all pairs: with ``r_i`` the
  distance to the centroid, ``d(i, j) <= r_i + r_j``, so only pairs whose radii
  can beat the best distance found so far are examined.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _distance(X, a, b, manhattan):
    acc = 0.0
    for k in range(X.shape[1]):
        diff = X[a, k] - X[b, k]
        acc += abs(diff) if manhattan else diff * diff
    return acc if manhattan else math.sqrt(acc)


@njit(cache=True)
def feature_diameter(X, members, manhattan):
    """Largest Euclidean (or Manhattan) distance between the rows ``X[members]``."""
    m = members.size
    if m < 2:
        return 0.0
    p = X.shape[1]
    center = np.zeros(p)
    for i in range(m):
        for k in range(p):
            center[k] += X[members[i], k]
    for k in range(p):
        center[k] /= m
    radius = np.empty(m)
    for i in range(m):
        acc = 0.0
        for k in range(p):
            diff = X[members[i], k] - center[k]
            acc += abs(diff) if manhattan else diff * diff
        radius[i] = acc if manhattan else math.sqrt(acc)
    order = np.argsort(-radius)
    # A first lower bound: the farthest point from the centroid against all others.
    far = members[order[0]]
    best = 0.0
    for i in range(m):
        value = _distance(X, far, members[i], manhattan)
        if value > best:
            best = value
    # Radii carry rounding; pruning keeps a relative margin so no pair is missed.
    # A pair that can at most equal the best cannot improve it (<=): coincident
    # points cost O(m), not O(m^2).
    slack = 1.0 + 1e-9
    for a in range(m):
        ra = radius[order[a]]
        if 2.0 * ra * slack <= best:
            break
        for b in range(a + 1, m):
            if (ra + radius[order[b]]) * slack <= best:
                break
            value = _distance(X, members[order[a]], members[order[b]], manhattan)
            if value > best:
                best = value
    return best


@njit(cache=True)
def two_means(X, members, seed, max_iter):
    """Labels (0/1, both used) of a 2-means clustering of ``X[members]``."""
    np.random.seed(seed)
    m = members.size
    p = X.shape[1]
    centers = np.empty((2, p))
    first = np.random.randint(m)
    for k in range(p):
        centers[0, k] = X[members[first], k]
    weights = np.empty(m)
    total = 0.0
    for i in range(m):
        acc = 0.0
        for k in range(p):
            diff = X[members[i], k] - centers[0, k]
            acc += diff * diff
        weights[i] = acc
        total += acc
    labels = np.zeros(m, np.int64)
    if total <= 0.0:
        labels[m - 1] = 1  # all points coincide: any split has cost 0
        return labels
    target = np.random.random() * total
    second = m - 1
    running = 0.0
    for i in range(m):
        running += weights[i]
        if running >= target and weights[i] > 0.0:
            second = i
            break
    for k in range(p):
        centers[1, k] = X[members[second], k]
    labels[:] = -1
    counts = np.zeros(2, np.int64)
    for _ in range(max_iter):
        changed = False
        for i in range(m):
            d0 = 0.0
            d1 = 0.0
            for k in range(p):
                x = X[members[i], k]
                d0 += (x - centers[0, k]) ** 2
                d1 += (x - centers[1, k]) ** 2
            label = 1 if d1 < d0 else 0
            if label != labels[i]:
                labels[i] = label
                changed = True
        if not changed:
            break
        counts[:] = 0
        centers[:, :] = 0.0
        for i in range(m):
            counts[labels[i]] += 1
            for k in range(p):
                centers[labels[i], k] += X[members[i], k]
        if counts[0] == 0 or counts[1] == 0:
            break
        for c in range(2):
            for k in range(p):
                centers[c, k] /= counts[c]
    _ensure_two_parts(labels)
    return labels


@njit(cache=True)
def _ensure_two_parts(labels):
    n_one = 0
    for i in range(labels.size):
        n_one += labels[i]
    if n_one == 0:
        labels[labels.size - 1] = 1
    elif n_one == labels.size:
        labels[labels.size - 1] = 0


@njit(cache=True)
def _pam_cost(D, members, a, b):
    total = 0.0
    for i in range(members.size):
        o = members[i]
        total += min(D[o, members[a]], D[o, members[b]])
    return total


@njit(cache=True)
def two_medoids(D, members, max_iter):
    """Labels (0/1, both used) of PAM with two medoids on ``D[members][:, members]``."""
    m = members.size
    # BUILD: the most central object, then the one that lowers the cost most.
    first = 0
    best = np.inf
    for i in range(m):
        total = 0.0
        for j in range(m):
            total += D[members[i], members[j]]
        if total < best:
            best = total
            first = i
    second = 0 if first != 0 else 1
    best_gain = -1.0
    for c in range(m):
        if c == first:
            continue
        gain = 0.0
        for j in range(m):
            gain += max(0.0, D[members[j], members[first]] - D[members[j], members[c]])
        if gain > best_gain:
            best_gain = gain
            second = c
    medoids = np.array([first, second])
    cost = _pam_cost(D, members, first, second)
    # SWAP: the best exchange of a medoid with a non-medoid, while it helps.
    for _ in range(max_iter):
        best_cost = cost
        best_slot = -1
        best_candidate = -1
        for slot in range(2):
            other = medoids[1 - slot]
            for h in range(m):
                if h == medoids[0] or h == medoids[1]:
                    continue
                value = _pam_cost(D, members, other, h)
                if value < best_cost - 1e-12 * max(1.0, abs(best_cost)):
                    best_cost = value
                    best_slot = slot
                    best_candidate = h
        if best_slot < 0:
            break
        medoids[best_slot] = best_candidate
        cost = best_cost
    labels = np.zeros(m, np.int64)
    for i in range(m):
        o = members[i]
        if D[o, members[medoids[1]]] < D[o, members[medoids[0]]]:
            labels[i] = 1
    labels[medoids[0]] = 0
    labels[medoids[1]] = 1
    return labels
