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

from .._core.compilation import CALLEE_ONLY


@njit(cache=True, inline="always")
def _f(m, s, theta):
    return theta * s / (1.0 + m * theta)


# -- the Wishart block likelihood as a plug-in of the shared Gibbs engine ------------------
# params = [theta, dof, exponent a, s0, 1/scale (0: scale integrated out), tr S,
#           translation invariant (1.0) or not (0.0), n, terms of dof alone (0 unless dof is
#           learned: they make log joints comparable across dof)]
# stats[c] = [n_c, Sbar_c, v_c, w_c]; v_c = sum_e M_ce w_e and w_c = 1 / (1 + n_c theta)
#           (translation-invariant mode only), M_ce = 1_c^T S 1_e the cross-block sums
# shared = [sum_b f(n_b, Sbar_b), sum_b log(1 + n_b theta), log-likelihood of the current
#           state, theta of the table, q = sum_bc w_b M_bc w_c, sigma = sum_b n_b w_b,
#           log(1 + m theta) for m = 0..n]
# work = [M_bc for b > c (translation-invariant mode only; triangular, index b (b - 1) / 2 + c)
#         | spare | N_BANKS banks of capacity + 1 row block sums | rho = sum_b w_b r_b]
# The row block sums r_c = sum_{j in c, j != i} S_ij of the current item are bank 0; the spare
# entry before it collects unassigned items (label -1).
SHARED_HEADER = 6

#: Independent accumulator banks of ``prepare``: consecutive items of one block would
#: otherwise chain every addition on the previous one (store-to-load latency).
N_BANKS = 4


@njit(cache=True, inline="always")
def _translation_invariant(params):
    return params[6] > 0.0


@njit(cache=True, inline="always")
def cross_size(capacity, translation_invariant):
    """Entries of the triangular store of ``M`` (0 without the translation invariance)."""
    return capacity * (capacity - 1) // 2 if translation_invariant else 0


@njit(cache=True, inline="always")
def _base(params, capacity):
    """Index of bank 0 in ``work`` (the spare entry is just before it)."""
    return cross_size(capacity, _translation_invariant(params)) + 1


@njit(cache=True, inline="always")
def _rho_index(params, capacity):
    return _base(params, capacity) + N_BANKS * (capacity + 1)


@njit(cache=True, inline="always")
def _cross_index(b, c):
    if b < c:
        b, c = c, b
    return b * (b - 1) // 2 + c


@njit(cache=True, inline="always")
def _log_lik(params, t_sum, l_sum, q, sigma):
    """The Wishart log-likelihood (scale integrated or fixed) from the running sums.

    Translation-invariant mode: ``tr(Psi~ S) = (T_B - q / sigma) / scale`` and
    ``-log pdet Psi~ = L_B + log(sigma / n)`` at ``scale = 1`` (the exponent
    ``a`` is then ``(n - 1 + r0) d / 2``).
    """
    dof, exponent, s0, inv_scale, trace = params[1], params[2], params[3], params[4], params[5]
    residual = trace - t_sum
    if _translation_invariant(params) and sigma > 0.0:
        residual -= q / sigma
        l_sum += math.log(sigma / params[7])
    if inv_scale > 0.0:
        return params[8] - 0.5 * dof * l_sum - 0.5 * dof * inv_scale * residual
    return params[8] - 0.5 * dof * l_sum - exponent * math.log(residual + s0)


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
    stats[c, 2] = 0.0
    stats[c, 3] = 1.0


@njit(cache=True)
def wishart_prepare(params, data, labels, stats, shared, work, i):
    """Row block sums ``r_c = sum_{j in c, j != i} S_ij`` into bank 0 of ``work``, ``O(n)``.

    Item ``j`` adds to bank ``j % 4``; the banks are then summed into bank 0.
    An unassigned item (label ``-1``) lands in the entry before its bank.
    Translation-invariant mode also sets ``rho = sum_c w_c r_c`` (``O(K)``).
    """
    capacity = stats.shape[0]
    width = capacity + 1
    base = _base(params, capacity)
    for c in range(base - 1, base + N_BANKS * width):
        work[c] = 0.0
    row = data[i]
    n = labels.shape[0]
    top = n - n % N_BANKS
    for j in range(0, top, N_BANKS):
        work[base + labels[j]] += row[j]
        work[base + width + labels[j + 1]] += row[j + 1]
        work[base + 2 * width + labels[j + 2]] += row[j + 2]
        work[base + 3 * width + labels[j + 3]] += row[j + 3]
    for j in range(top, n):
        work[base + labels[j]] += row[j]
    for c in range(capacity):
        work[base + c] += (work[base + width + c] + work[base + 2 * width + c]
                           + work[base + 3 * width + c])
    if labels[i] >= 0:
        work[base + labels[i]] -= row[i]
    if _translation_invariant(params):
        rho = 0.0
        for c in range(capacity):
            rho += work[base + c] * stats[c, 3]
        work[_rho_index(params, capacity)] = rho


@njit(cache=True, **CALLEE_ONLY)  # called by add and remove only
def _move(params, data, stats, shared, work, c, i, sign):
    theta = params[0]
    m = stats[c, 0]
    sbar = stats[c, 1]
    capacity = stats.shape[0]
    base = _base(params, capacity)
    r_c = work[base + c]
    new_m = m + sign
    new_sbar = sbar + sign * (2.0 * r_c + float(data[i, i]))
    shared[0] += _f(new_m, new_sbar, theta) - _f(m, sbar, theta)
    shared[1] += math.log1p(new_m * theta) - math.log1p(m * theta)
    stats[c, 0] = new_m
    stats[c, 1] = new_sbar
    if _translation_invariant(params):
        # M_cb += sign r_b for b != c and w_c changes: update v_b, v_c, q and sigma, O(K);
        # empty slots hold M = 0, v = 0 (and no r) and are skipped
        w_old = stats[c, 3]
        w_new = 1.0 / (1.0 + new_m * theta)
        empty = new_m <= 0.0
        v_c = 0.0
        q = 0.0
        for b in range(capacity):
            if b == c or stats[b, 0] == 0.0:
                continue
            k = _cross_index(b, c)
            old = work[k]
            new = 0.0 if empty else old + sign * work[base + b]
            work[k] = new
            w_b = stats[b, 3]
            v_b = stats[b, 2] + new * w_new - old * w_old
            stats[b, 2] = v_b
            v_c += new * w_b
            q += w_b * v_b
        v_c += new_sbar * w_new
        stats[c, 2] = 0.0 if empty else v_c
        stats[c, 3] = w_new
        q += w_new * stats[c, 2]
        shared[4] = q
        shared[5] += new_m * w_new - m * w_old
        work[_rho_index(params, capacity)] += (w_new - w_old) * r_c
    shared[2] = _log_lik(params, shared[0], shared[1], shared[4], shared[5])


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
    capacity = stats.shape[0]
    r_c = work[_base(params, capacity) + c]
    s_ii = float(data[i, i])
    new_sbar = sbar + 2.0 * r_c + s_ii
    t_sum = shared[0] + _f(m + 1.0, new_sbar, theta) - _f(m, sbar, theta)
    l_sum = shared[1] + _log_one_plus(params, shared, m + 1.0) - _log_one_plus(params, shared, m)
    q = shared[4]
    sigma = shared[5]
    if _translation_invariant(params):
        # q = w^T M w after the move, from its terms in w_c (developer notes, fastTIWD (f'))
        w = stats[c, 3]
        w_new = 1.0 / (1.0 + (m + 1.0) * theta)
        v_c = stats[c, 2]
        rho = work[_rho_index(params, capacity)]
        q = (q - 2.0 * w * v_c + w * w * sbar
             + 2.0 * w_new * (v_c - w * sbar + rho - w * r_c) + w_new * w_new * new_sbar)
        sigma += (m + 1.0) * w_new - m * w
    return _log_lik(params, t_sum, l_sum, q, sigma) - shared[2]


@njit(cache=True)
def wishart_log_cluster(params, stats, shared, c):
    """Zero: the Wishart likelihood does not split over blocks, all of it is global."""
    return 0.0


@njit(cache=True)
def wishart_log_global(params, shared):
    return _log_lik(params, shared[0], shared[1], shared[4], shared[5])


@njit(cache=True)
def wishart_refresh(params, data, labels, stats, shared, active, n_active):
    """Re-sum the running sums from the block statistics; rebuild the log(1 + m theta) table.

    Translation-invariant mode: ``v``, ``q`` and ``sigma`` depend on ``theta`` and
    on the cross-block sums in ``work``, which this protocol function cannot
    read; :func:`refresh_cross` (the likelihood's ``refresh_work``) recomputes
    them after it.
    """
    theta = params[0]
    t_sum = 0.0
    l_sum = 0.0
    for a in range(n_active):
        c = active[a]
        t_sum += _f(stats[c, 0], stats[c, 1], theta)
        l_sum += math.log1p(stats[c, 0] * theta)
        stats[c, 3] = 1.0 / (1.0 + stats[c, 0] * theta)
    shared[0] = t_sum
    shared[1] = l_sum
    for m in range(shared.shape[0] - SHARED_HEADER):
        shared[SHARED_HEADER + m] = math.log1p(m * theta)
    shared[3] = theta
    shared[2] = _log_lik(params, t_sum, l_sum, shared[4], shared[5])


@njit(cache=True)
def refresh_cross(params, stats, shared, work, active, n_active):
    """Recompute ``v``, ``q``, ``sigma`` and the log-likelihood from the cross-block sums, ``O(K^2)``."""
    if not _translation_invariant(params):
        return
    q = 0.0
    sigma = 0.0
    for a in range(n_active):
        b = active[a]
        w_b = stats[b, 3]
        v_b = stats[b, 1] * w_b
        for e in range(n_active):
            c = active[e]
            if c != b:
                v_b += work[_cross_index(b, c)] * stats[c, 3]
        stats[b, 2] = v_b
        q += w_b * v_b
        sigma += stats[b, 0] * w_b
    shared[4] = q
    shared[5] = sigma
    shared[2] = _log_lik(params, shared[0], shared[1], q, sigma)


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
    out = np.zeros((n_slots, n), np.float64)
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
