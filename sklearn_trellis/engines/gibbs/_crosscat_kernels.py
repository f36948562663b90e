"""Numba kernels of CrossCat's column moves: a column's statistics and score under a partition.

A column ``x`` (NaN = missing) of cell type ``t`` with cell params ``p`` is
scored under a view's row partition (slot ``labels``) by
``sum_c log m(x_c)`` (Murphy Eq. 41, one column's factor); the statistics
table ``stats`` (one row per slot) is what the view keeps for that column.
"""

import math

import numpy as np
from numba import njit

from ...models._cell_kernels import (POISSON, accumulate_at, cached_log_predictive_at,
                                     cell_log_marginal, cell_log_predictive,
                                     cell_predictive_mean, cell_predictive_sample,
                                     log_marginal_at, predictive_cache_at)


@njit(cache=True)
def column_stats(t, p, x, labels, stats):
    """Fill ``stats`` (zeroed here) with the column's cell statistics per slot of ``labels``."""
    stats[:, :] = 0.0
    width = stats.shape[1]
    flat = stats.ravel()   # offsets, not a row view per cell
    for i in range(x.size):
        c = labels[i]
        if c >= 0:
            accumulate_at(t, p, 0, flat, c * width, x[i], 1.0)


@njit(cache=True)
def column_log_score(t, p, stats):
    """``sum_c log m(x_c)`` over the slots of ``stats`` (empty slots contribute 0)."""
    total = 0.0
    for c in range(stats.shape[0]):
        total += cell_log_marginal(t, p, stats[c])
    return total


@njit(cache=True)
def log_factorials(x):
    """``log(x!)`` of each cell (0 for a missing one)."""
    out = np.zeros(x.size)
    for i in range(x.size):
        if x[i] == x[i]:
            out[i] = math.lgamma(x[i] + 1.0)
    return out


@njit(cache=True)
def column_partition_score(t, p, x, log_factorials, labels, n_slots, scratch):
    """:func:`column_log_score` of the column under the slot ``labels`` in one pass.

    ``scratch`` (``(n_slots', n_stats)``, ``n_slots' >= n_slots``) holds the statistics
    (zeroed here): a column move scores every view without an allocation per view.
    ``log_factorials``: :func:`log_factorials` of a poisson column, read instead of an
    ``lgamma`` per cell (the same sums as :func:`column_stats`).
    """
    width = scratch.shape[1]
    flat = scratch.ravel()
    flat[:n_slots * width] = 0.0
    poisson = t == POISSON
    for i in range(x.size):
        c = labels[i]
        if c < 0 or x[i] != x[i]:
            continue
        o = c * width
        if poisson:
            flat[o] += 1.0
            flat[o + 1] += x[i]
            flat[o + 2] += log_factorials[i]
        else:
            accumulate_at(t, p, 0, flat, o, x[i], 1.0)
    total = 0.0
    for c in range(n_slots):
        total += log_marginal_at(t, p, 0, flat, c * width)
    return total


@njit(cache=True)
def grid_log_scores(t, grid, log_prior, stats, out):
    """``log prior(g) + sum_c log m(x_c | g)`` for each grid row ``g`` of cell params."""
    for g in range(grid.shape[0]):
        out[g] = log_prior[g] + column_log_score(t, grid[g], stats)


@njit(cache=True)
def crp_labels(n, alpha, seed, labels):
    """A partition of ``n`` items drawn from CRP(alpha) (sequential seating), labels ``0..K-1``."""
    np.random.seed(seed)
    counts = np.zeros(n + 1)
    k = 0
    for i in range(n):
        u = np.random.random() * (i + alpha)
        chosen = k
        acc = 0.0
        for c in range(k):
            acc += counts[c]
            if u < acc:
                chosen = c
                break
        if chosen == k:
            k += 1
        counts[chosen] += 1.0
        labels[i] = chosen
    return k


@njit(cache=True)
def log_sum_exp(values):
    largest = -np.inf
    for v in values:
        if v > largest:
            largest = v
    if largest == -np.inf:
        return largest
    total = 0.0
    for v in values:
        total += math.exp(v - largest)
    return largest + math.log(total)


@njit(cache=True)
def rows_log_predictive(t, p, stats, x_new, out):
    """``out[i, c] += log p(x_new[i] | slot c)`` (NaN cells add 0)."""
    for i in range(x_new.size):
        for c in range(stats.shape[0]):
            out[i, c] += cell_log_predictive(t, p, stats[c], x_new[i])


@njit(cache=True)
def predictive_means(t, p, stats, out):
    """Posterior-predictive mean (categorical: mode) of a new cell in each slot of ``stats``."""
    for c in range(stats.shape[0]):
        out[c] = cell_predictive_mean(t, p, stats[c])


@njit(cache=True)
def value_log_predictive(t, p, stats, values, out):
    """``out[c, a] = log p(x = values[a] | slot c)``."""
    for c in range(stats.shape[0]):
        for a in range(values.size):
            out[c, a] = cell_log_predictive(t, p, stats[c], values[a])


@njit(cache=True)
def predictive_draws(t, p, stats, slots, seed, out):
    """``out[i]`` drawn from the posterior predictive of slot ``slots[i]``."""
    np.random.seed(seed)
    for i in range(slots.size):
        out[i] = cell_predictive_sample(t, p, stats[slots[i]])


@njit(cache=True)
def sequential_allocation(t, p, x, alpha, order, labels, stats, counts, sample, seed):
    """Rows of one column allocated in ``order`` to CRP(alpha) clusters by their predictive.

    The proposal of the column split-merge move (a one-pass DP mixture of the
    column alone): row ``order[k]`` joins cluster ``c`` with probability
    proportional to ``n_c p(x | c)``, a new one to ``alpha p(x)``. ``sample``:
    draw ``labels`` (returned in order of first appearance along ``order``);
    otherwise score the given ``labels``. Returns ``log q(labels)``.
    ``stats`` (n + 1, 2 n_stats) and ``counts`` (n + 1) are scratch: each cluster's
    statistics, then its one-cell predictive constants.
    """
    if sample:
        np.random.seed(seed)
    n = x.size
    relabel = np.full(n + 1, -1, np.int64)
    weights = np.empty(n + 1)
    probs = np.empty(n + 1)
    log_counts = np.empty(n + 1)
    n_stats = stats.shape[1] // 2
    width = 2 * n_stats
    stats[:, :] = 0.0
    counts[:] = 0.0
    flat = stats.ravel()   # offsets instead of a row view per cluster and row
    predictive_cache_at(t, p, 0, flat, 0, flat, n_stats)
    k = 0
    log_q = 0.0
    log_counts[0] = math.log(alpha)
    for pos in range(n):
        i = order[pos]
        largest = -np.inf
        for c in range(k + 1):
            w = log_counts[c] + cached_log_predictive_at(t, p, 0, flat, c * width, flat,
                                                         c * width + n_stats, x[i])
            weights[c] = w
            if w > largest:
                largest = w
        total = 0.0
        for c in range(k + 1):
            probs[c] = math.exp(weights[c] - largest)
            total += probs[c]
        if sample:
            u = np.random.random() * total
            chosen = k
            acc = 0.0
            for c in range(k + 1):
                acc += probs[c]
                if u < acc:
                    chosen = c
                    break
            labels[i] = chosen
        else:
            if relabel[labels[i]] < 0:
                relabel[labels[i]] = k
            chosen = relabel[labels[i]]
        log_q += weights[chosen] - largest - math.log(total)
        if chosen == k:
            k += 1
            log_counts[k] = log_counts[k - 1]   # alpha's weight moves to the next new cluster
            predictive_cache_at(t, p, 0, flat, k * width, flat, k * width + n_stats)
        if x[i] == x[i]:
            accumulate_at(t, p, 0, flat, chosen * width, x[i], 1.0)
            predictive_cache_at(t, p, 0, flat, chosen * width, flat, chosen * width + n_stats)
        counts[chosen] += 1.0
        log_counts[chosen] = math.log(counts[chosen])
    return log_q
