"""Numba kernels of the Wishart block likelihood for the shared collapsed Gibbs engine (developer notes, fastTIWD (c)).

They implement the cluster likelihood protocol of :mod:`sklearn_trellis.engines.gibbs`.
For each item the row block sums ``r_c = sum_{j in c, j != i} S_ij`` cost
``O(n)`` (``prepare``); removing the item, scoring each candidate block from
the running sums ``T_B`` and ``L_B`` and adding it back cost ``O(1)`` per
block, so a sweep costs ``O(n^2 + n K)``.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _f(m, s, theta):
    return theta * s / (1.0 + m * theta)


# -- the Wishart block likelihood as a plug-in of the shared Gibbs engine ------------------
# params = [theta, dof, exponent a, s0, 1/scale (0: scale integrated out), tr S]
# stats[c] = [n_c, Sbar_c]
# shared = [sum_b f(n_b, Sbar_b), sum_b log(1 + n_b theta), log-likelihood of the current
#           state, theta of the table, log(1 + m theta) for m = 0..n]
# work[c] = sum_{j in c, j != i} S_ij for the current item (work[-1] collects unassigned items).
SHARED_HEADER = 4


@njit(cache=True, inline="always")
def _log_lik(params, t_sum, l_sum):
    """The Wishart log-likelihood (scale integrated or fixed) from the running sums."""
    dof, exponent, s0, inv_scale, trace = params[1], params[2], params[3], params[4], params[5]
    if inv_scale > 0.0:
        return -0.5 * dof * l_sum - 0.5 * dof * inv_scale * (trace - t_sum)
    return -0.5 * dof * l_sum - exponent * math.log(trace - t_sum + s0)


@njit(cache=True, inline="always")
def _log_one_plus(params, shared, m):
    """``log(1 + m theta)`` from the table in ``shared`` when it is current."""
    if shared[3] == params[0]:
        return shared[SHARED_HEADER + int(m)]
    return math.log1p(m * params[0])


@njit(cache=True)
def wishart_reset(params, stats, c):
    stats[c, 0] = 0.0
    stats[c, 1] = 0.0


#: Independent accumulator banks of ``prepare``: consecutive items of one block would
#: otherwise chain every addition on the previous one (store-to-load latency).
N_BANKS = 4


@njit(cache=True)
def wishart_prepare(params, data, labels, stats, shared, work, i):
    """Row block sums ``work[c] = sum_{j in c, j != i} S_ij``, ``O(n)``.

    ``work`` holds ``N_BANKS = 4`` banks of ``capacity + 1`` entries; item
    ``j`` adds to bank ``j % 4`` and the banks are then summed into bank 0.
    An unassigned item (label ``-1``) lands in the spare last entry of a bank.
    """
    width = stats.shape[0] + 1
    for c in range(N_BANKS * width):
        work[c] = 0.0
    row = data[i]
    n = labels.shape[0]
    top = n - n % N_BANKS
    for j in range(0, top, N_BANKS):
        work[labels[j]] += row[j]
        work[width + labels[j + 1]] += row[j + 1]
        work[2 * width + labels[j + 2]] += row[j + 2]
        work[3 * width + labels[j + 3]] += row[j + 3]
    for j in range(top, n):
        work[labels[j]] += row[j]
    for c in range(width - 1):
        work[c] += work[width + c] + work[2 * width + c] + work[3 * width + c]
    if labels[i] >= 0:
        work[labels[i]] -= row[i]


@njit(cache=True)
def _move(params, data, stats, shared, work, c, i, sign):
    theta = params[0]
    m = stats[c, 0]
    sbar = stats[c, 1]
    new_m = m + sign
    new_sbar = sbar + sign * (2.0 * work[c] + float(data[i, i]))
    shared[0] += _f(new_m, new_sbar, theta) - _f(m, sbar, theta)
    shared[1] += math.log1p(new_m * theta) - math.log1p(m * theta)
    shared[2] = _log_lik(params, shared[0], shared[1])
    stats[c, 0] = new_m
    stats[c, 1] = new_sbar


@njit(cache=True)
def wishart_add(params, data, stats, shared, work, c, i):
    _move(params, data, stats, shared, work, c, i, 1.0)


@njit(cache=True)
def wishart_remove(params, data, stats, shared, work, c, i):
    _move(params, data, stats, shared, work, c, i, -1.0)


@njit(cache=True)
def wishart_log_predictive(params, data, stats, shared, work, c, i):
    """Change of the log-likelihood when item ``i`` joins slot ``c`` (developer notes, fastTIWD (c) step 4), O(1)."""
    theta = params[0]
    m = stats[c, 0]
    sbar = stats[c, 1]
    new_sbar = sbar + 2.0 * work[c] + float(data[i, i])
    t_sum = shared[0] + _f(m + 1.0, new_sbar, theta) - _f(m, sbar, theta)
    l_sum = shared[1] + _log_one_plus(params, shared, m + 1.0) - _log_one_plus(params, shared, m)
    return _log_lik(params, t_sum, l_sum) - shared[2]


@njit(cache=True)
def wishart_log_cluster(params, stats, shared, c):
    """Zero: the Wishart likelihood does not split over blocks, all of it is global."""
    return 0.0


@njit(cache=True)
def wishart_log_global(params, shared):
    return _log_lik(params, shared[0], shared[1])


@njit(cache=True)
def wishart_refresh(params, data, labels, stats, shared, active, n_active):
    """Re-sum the running sums from the block statistics; rebuild the log(1 + m theta) table."""
    theta = params[0]
    t_sum = 0.0
    l_sum = 0.0
    for a in range(n_active):
        c = active[a]
        t_sum += _f(stats[c, 0], stats[c, 1], theta)
        l_sum += math.log1p(stats[c, 0] * theta)
    shared[0] = t_sum
    shared[1] = l_sum
    shared[2] = _log_lik(params, t_sum, l_sum)
    for m in range(shared.shape[0] - SHARED_HEADER):
        shared[SHARED_HEADER + m] = math.log1p(m * theta)
    shared[3] = theta


@njit(cache=True)
def block_sums(S, labels, n_clusters, sizes, sbars):
    """``sizes[b] = n_b`` and ``sbars[b] = sum_{i,j in b} S_ij`` in one ``O(n^2)`` pass."""
    n = labels.shape[0]
    for i in range(n):
        own = labels[i]
        sizes[own] += 1.0
        row = S[i]
        acc = 0.0
        for j in range(n):
            if labels[j] == own:
                acc += row[j]
        sbars[own] += acc


@njit(cache=True)
def label_column_sums(S, labels, n_slots):
    """``C[b, i] = sum_{j: labels[j] = b} S_ij`` (``O(n^2)``, one pass over ``S``)."""
    n = labels.shape[0]
    out = np.zeros((n_slots, n))
    for i in range(n):
        row = S[i]
        for j in range(n):
            out[labels[j], i] += row[j]
    return out


@njit(cache=True)
def move_rows(sums, values, moved, old, new):
    """``sums[new[a]] += values[i]`` and ``sums[old[a]] -= values[i]`` for each moved ``i``."""
    for a in range(moved.shape[0]):
        row = values[moved[a]]
        to = sums[new[a]]
        back = sums[old[a]]
        for j in range(row.shape[0]):
            to[j] += row[j]
            back[j] -= row[j]


@njit(cache=True)
def add_rows(sums, values, labels):
    """``sums[labels[i]] += values[i]`` for every ``i``."""
    for i in range(labels.shape[0]):
        row = values[i]
        to = sums[labels[i]]
        for j in range(row.shape[0]):
            to[j] += row[j]
