"""Numba kernels of the point-estimate search: posterior expected Binder and VI losses.

Notation: ``labels`` is the candidate clustering (slots ``0..n-1``, ``-1`` for
an element not yet allocated), ``samples`` the (T, n) sampled partitions with
block ids ``0..L-1``, ``Q = 1 - 2 P`` with ``P`` the pairwise co-clustering
probabilities.

Binder (unit costs): ``E L(c) = sum_{i<j} P_ij + sum_{i<j, c_i = c_j} Q_ij``.
VI: ``n E VI(c) = sum_k x(n_k) + mean_t sum_l x(m_tl) - 2 mean_t sum_kl x(N_tkl)``
with ``x(u) = u log u``, ``n_k`` the cluster sizes, ``m_tl`` the block sizes
of sample ``t`` and ``N_tkl`` the contingency counts.
"""

import numpy as np
from numba import njit

from ._kernels import xlogx_table

BINDER = 0
VI = 1


@njit(cache=True)
def binder_objectives(candidates, q):
    """``sum_{i<j, c_i = c_j} Q_ij`` for each row of ``candidates``."""
    n_candidates, n = candidates.shape
    out = np.zeros(n_candidates)
    for r in range(n_candidates):
        row = candidates[r]
        order = np.argsort(row, kind="mergesort")
        start = 0
        total = 0.0
        while start < n:
            stop = start
            while stop < n and row[order[stop]] == row[order[start]]:
                stop += 1
            for u in range(start, stop):
                i = order[u]
                for v in range(u + 1, stop):
                    total += q[i, order[v]]
            start = stop
        out[r] = total
    return out


@njit(cache=True)
def vi_objectives(candidates, samples, n_sample_blocks):
    """``sum_k x(n_k) - 2 mean_t sum_kl x(N_tkl)`` for each row of ``candidates``.

    Candidate labels must be ``0..K-1``.
    """
    n_candidates, n = candidates.shape
    n_samples = samples.shape[0]
    xl = xlogx_table(n + 2)
    out = np.zeros(n_candidates)
    for r in range(n_candidates):
        row = candidates[r]
        n_clusters = row.max() + 1
        sizes = np.zeros(n_clusters, np.int64)
        for i in range(n):
            sizes[row[i]] += 1
        own = 0.0
        for k in range(n_clusters):
            own += xl[sizes[k]]
        table = np.zeros((n_clusters, n_sample_blocks), np.int64)
        cross = 0.0
        for t in range(n_samples):
            for i in range(n):
                table[row[i], samples[t, i]] += 1
            for i in range(n):
                k, blk = row[i], samples[t, i]
                u = table[k, blk]
                if u > 0:
                    cross += xl[u]
                    table[k, blk] = 0
        out[r] = own - 2.0 * cross / n_samples
    return out


@njit(cache=True)
def _add(kind, i, k, labels, sizes, counts, samples, delta):
    labels[i] = k
    sizes[k] += delta
    if kind == VI:
        for t in range(samples.shape[0]):
            counts[k, t, samples[t, i]] += delta


@njit(cache=True)
def _costs(kind, i, labels, sizes, counts, q, samples, xl, out):
    """Increase of the objective if ``i`` joins each slot (empty slots: 0)."""
    n = labels.shape[0]
    out[:] = 0.0
    if kind == BINDER:
        for j in range(n):
            k = labels[j]
            if k >= 0 and j != i:
                out[k] += q[i, j]
    else:
        n_samples = samples.shape[0]
        for k in range(n):
            if sizes[k] == 0:
                continue
            cross = 0.0
            for t in range(n_samples):
                u = counts[k, t, samples[t, i]]
                cross += xl[u + 1] - xl[u]
            out[k] = xl[sizes[k] + 1] - xl[sizes[k]] - 2.0 * cross / n_samples


@njit(cache=True)
def _best_slot(sizes, costs, current):
    """Cheapest non-empty slot or the first empty one; ``current`` kept on ties."""
    best_slot = current
    best = costs[current] if current >= 0 else np.inf
    empty = -1
    for k in range(sizes.shape[0]):
        if sizes[k] == 0:
            if empty < 0:
                empty = k
            continue
        if costs[k] < best - 1e-12:
            best = costs[k]
            best_slot = k
    if empty >= 0 and 0.0 < best - 1e-12:
        best_slot = empty
    return best_slot


@njit(cache=True)
def greedy_search(kind, labels, order, q, samples, n_sample_blocks, max_sweeps):
    """SALSO-style search, in place on ``labels`` (``-1`` = not yet allocated).

    1. Sequential allocation: elements still at ``-1`` join, in ``order``, the
       cluster (or a new one) that least increases the expected loss of the
       elements allocated so far.
    2. Sweetening: sweep over ``order`` moving each element to its best
       cluster (strict improvements only) until a sweep changes nothing or
       ``max_sweeps`` sweeps are done. Every move lowers the expected loss.
    """
    n = labels.shape[0]
    xl = xlogx_table(n + 2)
    sizes = np.zeros(n, np.int64)
    if kind == VI:
        counts = np.zeros((n, samples.shape[0], n_sample_blocks), np.int32)
    else:
        counts = np.zeros((1, 1, 1), np.int32)
    costs = np.zeros(n)
    for i in range(n):
        if labels[i] >= 0:
            _add(kind, i, labels[i], labels, sizes, counts, samples, 1)
    for i in order:
        if labels[i] < 0:
            _costs(kind, i, labels, sizes, counts, q, samples, xl, costs)
            _add(kind, i, _best_slot(sizes, costs, -1), labels, sizes, counts, samples, 1)
    for _ in range(max_sweeps):
        changed = False
        for i in order:
            current = labels[i]
            _add(kind, i, current, labels, sizes, counts, samples, -1)
            labels[i] = -1
            _costs(kind, i, labels, sizes, counts, q, samples, xl, costs)
            if sizes[current] == 0:  # leaving a singleton: staying costs 0 as well
                costs[current] = 0.0
            best = _best_slot(sizes, costs, current)
            _add(kind, i, best, labels, sizes, counts, samples, 1)
            changed |= best != current
        if not changed:
            break
    return labels


__all__ = ["binder_objectives", "vi_objectives", "greedy_search", "BINDER", "VI"]
