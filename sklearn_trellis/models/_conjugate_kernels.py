"""Numba kernels of the conjugate cluster likelihoods (the Gibbs protocol of ``sampling``).

Row layouts (one row of ``stats`` per cluster slot, ``d`` features):

- NIW (full covariance): ``[n, mu_n (d), L_n (d*d, lower Cholesky of Psi_n, row-major), c_pred]``;
  params ``[d, kappa0, nu0, mu0 (d), L0 (d*d), log|Psi0|, log Gamma_d(nu0/2)]``.
- Normal-Gamma (diagonal): ``[n, mu_n (d), b_n (d), f_n (d), c_pred]`` with
  ``f = kappa_n / (2 b_n (kappa_n + 1))``; params ``[d, kappa0, a0, m0 (d), b0 (d)]``.
- Beta-Bernoulli: ``[n, n1 (d), diff (d), sum_lp0]`` with
  ``diff_j = log(a_j + n1_j) - log(b_j + n - n1_j)``; params ``[d, a (d), b (d)]``.
- Dirichlet-multinomial: ``[n, C, c (d), sum of log multinomial coefficients]``
  (``C`` total count); params ``[d, beta (d), sum(beta)]``.

``c_pred`` caches the part of the log predictive density that depends on the
cluster only, so that a predictive evaluation costs one triangular solve (NIW)
or one pass over the features.
"""

import math

import numpy as np
from numba import njit

from .._core.specialise import specialise, template
from ._normal_gamma_kernels import (normal_gamma_log_marginal, student_t_constant,
                                     student_t_factor)

_LOG_PI = math.log(math.pi)

# The NIW helpers below are inlined (numba's inline="always") into their few callers: each
# separately compiled function costs 0.15-0.3 s of CPU on a first fit, its wrappers included.


@njit(cache=True, inline="always")
def log_multigamma(a, d):
    """``log Gamma_d(a)``."""
    total = 0.25 * d * (d - 1) * _LOG_PI
    for j in range(d):
        total += math.lgamma(a - 0.5 * j)
    return total


# ---------------------------------------------------------------- NIW (full covariance)
@njit(cache=True, inline="always")
def _niw_c_pred(params, stats, c):
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    nu = params[2] + n
    dof = nu - d + 1.0
    half_logdet = 0.0
    base = 1 + d
    for k in range(d):
        half_logdet += math.log(stats[c, base + k * d + k])
    stats[c, 1 + d + d * d] = (math.lgamma(0.5 * (dof + d)) - math.lgamma(0.5 * dof)
                               - 0.5 * d * _LOG_PI - half_logdet
                               - 0.5 * d * math.log((kappa + 1.0) / kappa))


@njit(cache=True)
def niw_reset(params, stats, c):
    d = int(params[0])
    stats[c, 0] = 0.0
    for k in range(d):
        stats[c, 1 + k] = params[3 + k]
    for k in range(d * d):
        stats[c, 1 + d + k] = params[3 + d + k]
    _niw_c_pred(params, stats, c)


@njit(cache=True, inline="always")
def _chol_update(stats, c, base, d, v, sign):
    """``L L^T + sign v v^T`` in place (rank-one update / downdate of a row-major lower factor)."""
    for k in range(d):
        lkk = stats[c, base + k * d + k]
        r2 = lkk * lkk + sign * v[k] * v[k]
        r = math.sqrt(r2) if r2 > 0 else 1e-150
        cos = r / lkk
        sin = v[k] / lkk
        stats[c, base + k * d + k] = r
        for i in range(k + 1, d):
            lik = (stats[c, base + i * d + k] + sign * sin * v[i]) / cos
            stats[c, base + i * d + k] = lik
            v[i] = cos * v[i] - sin * lik


@njit(cache=True)
def niw_add(params, data, stats, shared, work, c, i):
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    scale = math.sqrt(kappa / (kappa + 1.0))
    for k in range(d):
        mu = stats[c, 1 + k]
        delta = data[i, k] - mu
        work[k] = scale * delta
        stats[c, 1 + k] = mu + delta / (kappa + 1.0)
    stats[c, 0] = n + 1.0
    _chol_update(stats, c, 1 + d, d, work, 1.0)
    _niw_c_pred(params, stats, c)


@njit(cache=True)
def niw_remove(params, data, stats, shared, work, c, i):
    d = int(params[0])
    n = stats[c, 0]
    kappa_new = params[1] + n          # before removal
    kappa_old = kappa_new - 1.0        # after removal
    scale = math.sqrt(kappa_old / kappa_new)
    for k in range(d):
        mu_old = (kappa_new * stats[c, 1 + k] - data[i, k]) / kappa_old
        work[k] = scale * (data[i, k] - mu_old)
        stats[c, 1 + k] = mu_old
    stats[c, 0] = n - 1.0
    _chol_update(stats, c, 1 + d, d, work, -1.0)
    _niw_c_pred(params, stats, c)


@njit(cache=True)
def niw_log_predictive(params, data, stats, shared, work, c, i):
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    nu = params[2] + n
    base = 1 + d
    largest = 0.0
    for k in range(d):
        acc = data[i, k] - stats[c, 1 + k]
        row = base + k * d
        for j in range(k):
            acc -= stats[c, row + j] * work[j]
        y = acc / stats[c, row + k]
        work[k] = y
        largest = max(largest, abs(y))
    return stats[c, base + d * d] - 0.5 * (nu + 1.0) * _log1p_scaled_squares(
        work, d, largest, kappa / (kappa + 1.0))


@njit(cache=True, inline='always')  # one call site: typed there, not compiled alone
def _log1p_scaled_squares(y, d, largest, factor):
    """``log(1 + factor * sum_k y_k**2)`` in log space: finite for points far away, where
    the sum of squares overflows (scaled by the largest ``|y_k|``)."""
    if largest < 1e100:
        quad = 0.0
        for k in range(d):
            quad += y[k] * y[k]
        return math.log1p(factor * quad)
    if not largest < math.inf:
        return math.inf
    scaled = 0.0
    for k in range(d):
        r = y[k] / largest
        scaled += r * r
    # 1 + factor * largest**2 * scaled, with the 1 negligible at this scale
    return math.log(factor * scaled) + 2.0 * math.log(largest)


@njit(cache=True)
def niw_log_cluster(params, stats, shared, c):
    d = int(params[0])
    n = stats[c, 0]
    if n == 0:
        return 0.0
    kappa0, nu0 = params[1], params[2]
    kappa, nu = kappa0 + n, nu0 + n
    logdet = 0.0
    base = 1 + d
    for k in range(d):
        logdet += 2.0 * math.log(stats[c, base + k * d + k])
    p_end = 3 + d + d * d
    return (-0.5 * n * d * _LOG_PI + log_multigamma(0.5 * nu, d) - params[p_end + 1]
            + 0.5 * nu0 * params[p_end] - 0.5 * nu * logdet
            + 0.5 * d * (math.log(kappa0) - math.log(kappa)))


# The NIW tabulated predictive (the exact predictive's table, one row per subset):
# ``[c_pred, (nu + 1) / 2, mu_n (d), M (d*d)]`` with ``M = sqrt(kappa / (kappa + 1)) L_n^-1``
# (lower, row-major), so that a new row costs a triangular product and one log.
@njit(cache=True, inline="always")
def niw_table_row(params, stats, c, table, row):
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    table[row, 0] = stats[c, 1 + d + d * d]
    table[row, 1] = 0.5 * (params[2] + n + 1.0)
    for k in range(d):
        table[row, 2 + k] = stats[c, 1 + k]
    scale = math.sqrt(kappa / (kappa + 1.0))
    low, out = 1 + d, 2 + d
    for j in range(d):   # column j of L^-1 by forward substitution
        for i in range(d):
            if i < j:
                table[row, out + i * d + j] = 0.0
                continue
            acc = 1.0 if i == j else 0.0
            for k in range(j, i):
                acc -= stats[c, low + i * d + k] * table[row, out + k * d + j]
            table[row, out + i * d + j] = acc / stats[c, low + i * d + i]
    for k in range(d * d):
        table[row, out + k] *= scale


@njit(cache=True, inline="always")
def niw_tabulated_log_predictive(params, data, table, shared, work, c, i):
    d = int(params[0])
    out = 2 + d
    quad = 0.0
    for k in range(d):
        acc = 0.0
        for j in range(k + 1):
            acc += table[c, out + k * d + j] * (data[i, j] - table[c, 2 + j])
        quad += acc * acc
    # log(1 + q): an absolute error of an ulp is all a density needs. Beyond 1e200 the 1
    # is negligible; a q that overflows has no density float64 can hold (NaN, as the
    # marginals of the rows with x give). No loop in these branches: one made every
    # evaluation half as fast again.
    if quad < 1e200:
        return table[c, 0] - table[c, 1] * math.log(1.0 + quad)
    if quad < math.inf:
        return table[c, 0] - table[c, 1] * math.log(quad)
    return math.nan


# ---------------------------------------------------------------- Normal-Gamma (diagonal)
@njit(cache=True)
def _ng_c_pred(params, stats, c):
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    a = params[2] + 0.5 * n
    total = 0.0
    # per feature a Student-t with 2a dof: c - (a + 1/2) log(1 + f delta^2)
    for k in range(d):
        f = student_t_factor(kappa, stats[c, 1 + d + k])
        stats[c, 1 + 2 * d + k] = f
        total += student_t_constant(a, f)
    stats[c, 1 + 3 * d] = total


@njit(cache=True)
def ng_reset(params, stats, c):
    d = int(params[0])
    stats[c, 0] = 0.0
    for k in range(d):
        stats[c, 1 + k] = params[3 + k]
        stats[c, 1 + d + k] = params[3 + d + k]
    _ng_c_pred(params, stats, c)


@njit(cache=True)
def ng_add(params, data, stats, shared, work, c, i):
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    for k in range(d):
        mu = stats[c, 1 + k]
        delta = data[i, k] - mu
        stats[c, 1 + k] = mu + delta / (kappa + 1.0)
        stats[c, 1 + d + k] += 0.5 * kappa * delta * delta / (kappa + 1.0)
    stats[c, 0] = n + 1.0
    _ng_c_pred(params, stats, c)


@njit(cache=True)
def ng_remove(params, data, stats, shared, work, c, i):
    d = int(params[0])
    n = stats[c, 0]
    kappa_new = params[1] + n
    kappa_old = kappa_new - 1.0
    for k in range(d):
        mu_old = (kappa_new * stats[c, 1 + k] - data[i, k]) / kappa_old
        delta = data[i, k] - mu_old
        stats[c, 1 + k] = mu_old
        b = stats[c, 1 + d + k] - 0.5 * kappa_old * delta * delta / kappa_new
        stats[c, 1 + d + k] = max(b, 1e-300)
    stats[c, 0] = n - 1.0
    _ng_c_pred(params, stats, c)


@njit(cache=True)
def ng_log_predictive(params, data, stats, shared, work, c, i):
    d = int(params[0])
    n = stats[c, 0]
    a = params[2] + 0.5 * n
    product = 1.0
    log_sum = 0.0
    for k in range(d):
        delta = abs(data[i, k] - stats[c, 1 + k])
        f = stats[c, 1 + 2 * d + k]
        t = f * delta * delta
        if t < 1e150:  # multiply the factors 1 + t while the product stays finite
            product *= 1.0 + t
            if product > 1e150:
                log_sum += math.log(product)
                product = 1.0
        else:  # log space: delta**2 may overflow; the 1 is negligible
            log_sum += math.log(f) + 2.0 * math.log(delta)
    return stats[c, 1 + 3 * d] - (a + 0.5) * (log_sum + math.log(product))


@njit(cache=True)
def ng_log_cluster(params, stats, shared, c):
    d = int(params[0])
    n = stats[c, 0]
    if n == 0:
        return 0.0
    total = 0.0
    for k in range(d):
        total += normal_gamma_log_marginal(params[1], params[2], params[3 + d + k], n,
                                           stats[c, 1 + d + k])
    return total


@template
def refresh_by_adding(params, data, labels, stats, shared, active, n_active):
    """``refresh`` that rebuilds every occupied slot from its items (``lik_reset``, ``lik_add``).

    For the likelihoods whose running statistics drift under repeated
    add / remove (NIW's Cholesky factor, Normal-Gamma's sums of squares).
    ``work`` has ``d = params[0]`` entries, what ``niw_add`` needs.
    """
    for a in range(n_active):
        lik_reset(params, stats, active[a])
    work = np.empty(int(params[0]))
    for i in range(labels.size):
        if labels[i] >= 0:
            lik_add(params, data, stats, shared, work, labels[i], i)


niw_refresh = specialise(globals(), {"lik_reset": niw_reset,
                                     "lik_add": niw_add}).refresh_by_adding
ng_refresh = specialise(globals(), {"lik_reset": ng_reset, "lik_add": ng_add}).refresh_by_adding


# ---------------------------------------------------------------- Beta-Bernoulli
@njit(cache=True)
def beta_bernoulli_log_marginal(a, b, n, n1):
    """``log m`` of ``n`` binary values with ``n1`` ones under a Beta(a, b) prior."""
    return (math.lgamma(a + n1) + math.lgamma(b + n - n1) - math.lgamma(a + b + n)
            - math.lgamma(a) - math.lgamma(b) + math.lgamma(a + b))


@njit(cache=True)
def _bb_cache(params, stats, c):
    d = int(params[0])
    n = stats[c, 0]
    total = 0.0
    for k in range(d):
        a, b = params[1 + k], params[1 + d + k]
        n1 = stats[c, 1 + k]
        lp1 = math.log(a + n1)
        lp0 = math.log(b + n - n1)
        stats[c, 1 + d + k] = lp1 - lp0
        total += lp0 - math.log(a + b + n)
    stats[c, 1 + 2 * d] = total


@njit(cache=True)
def bb_reset(params, stats, c):
    d = int(params[0])
    stats[c, 0] = 0.0
    for k in range(d):
        stats[c, 1 + k] = 0.0
    _bb_cache(params, stats, c)


@njit(cache=True)
def bb_add(params, data, stats, shared, work, c, i):
    d = int(params[0])
    stats[c, 0] += 1.0
    for k in range(d):
        stats[c, 1 + k] += data[i, k]
    _bb_cache(params, stats, c)


@njit(cache=True)
def bb_remove(params, data, stats, shared, work, c, i):
    d = int(params[0])
    stats[c, 0] -= 1.0
    for k in range(d):
        stats[c, 1 + k] -= data[i, k]
    _bb_cache(params, stats, c)


@njit(cache=True)
def bb_log_predictive(params, data, stats, shared, work, c, i):
    d = int(params[0])
    total = stats[c, 1 + 2 * d]
    for k in range(d):
        if data[i, k] != 0.0:
            total += stats[c, 1 + d + k]
    return total


@njit(cache=True)
def bb_log_cluster(params, stats, shared, c):
    d = int(params[0])
    n = stats[c, 0]
    total = 0.0
    for k in range(d):
        total += beta_bernoulli_log_marginal(params[1 + k], params[1 + d + k], n, stats[c, 1 + k])
    return total


# ---------------------------------------------------------------- Dirichlet-multinomial
@njit(cache=True)
def dirichlet_counts_log_marginal(beta, beta_start, total_beta, counts, counts_start, total,
                                  d):
    """``log m`` of a sequence with category counts ``counts[counts_start:+d]`` (sum ``total``)
    under a Dirichlet(``beta[beta_start:+d]``) prior, ``total_beta = sum(beta)``.

    (The probability of one ordered sequence: no multinomial coefficient.)
    """
    value = math.lgamma(total_beta) - math.lgamma(total_beta + total)
    for k in range(d):
        count = counts[counts_start + k]
        if count > 0:
            b = beta[beta_start + k]
            value += math.lgamma(b + count) - math.lgamma(b)
    return value


@njit(cache=True)
def _log_multinomial_coefficient(data, i, d):
    total_count = 0.0
    value = 0.0
    for k in range(d):
        x = data[i, k]
        if x > 0:
            total_count += x
            value -= math.lgamma(x + 1.0)
    return value + math.lgamma(total_count + 1.0)


@njit(cache=True)
def dm_reset(params, stats, c):
    d = int(params[0])
    for k in range(d + 3):
        stats[c, k] = 0.0


@njit(cache=True)
def dm_add(params, data, stats, shared, work, c, i):
    d = int(params[0])
    stats[c, 0] += 1.0
    for k in range(d):
        stats[c, 1] += data[i, k]
        stats[c, 2 + k] += data[i, k]
    stats[c, 2 + d] += _log_multinomial_coefficient(data, i, d)


@njit(cache=True)
def dm_remove(params, data, stats, shared, work, c, i):
    d = int(params[0])
    stats[c, 0] -= 1.0
    for k in range(d):
        stats[c, 1] -= data[i, k]
        stats[c, 2 + k] -= data[i, k]
    stats[c, 2 + d] -= _log_multinomial_coefficient(data, i, d)


@njit(cache=True)
def dm_log_predictive(params, data, stats, shared, work, c, i):
    d = int(params[0])
    total_beta = params[1 + d]
    big_c = total_beta + stats[c, 1]
    total_x = 0.0
    total = _log_multinomial_coefficient(data, i, d)
    for k in range(d):
        x = data[i, k]
        if x > 0:
            base = params[1 + k] + stats[c, 2 + k]
            total += math.lgamma(base + x) - math.lgamma(base)
            total_x += x
    return total + math.lgamma(big_c) - math.lgamma(big_c + total_x)


@njit(cache=True)
def dm_log_cluster(params, stats, shared, c):
    d = int(params[0])
    if stats[c, 0] == 0:
        return 0.0
    return stats[c, 2 + d] + dirichlet_counts_log_marginal(params, 1, params[1 + d],
                                                            stats[c], 2, stats[c, 1], d)


# The Dirichlet-multinomial tabulated predictive: ``[log Gamma(B + C), B + C, beta + c (d),
# log Gamma(beta + c) (d)]`` (``B = sum(beta)``, ``C`` the cluster's total count). A row of
# at most ``DM_PRODUCT_COUNTS`` counts is scored by products (``Gamma(b + x) / Gamma(b)`` is
# ``b (b + 1) ... (b + x - 1)``, its factorials likewise: each product has at most 80
# factors, 40 below 1e5 and 40 below 41, so no overflow (1e248) and a relative error of
# 160 ulps), one log instead of a log Gamma per count.
DM_PRODUCT_COUNTS = 40


@njit(cache=True, inline="always")
def dm_table_row(params, stats, c, table, row):
    d = int(params[0])
    big_c = params[1 + d] + stats[c, 1]
    table[row, 0] = math.lgamma(big_c)
    table[row, 1] = big_c
    for k in range(d):
        base = params[1 + k] + stats[c, 2 + k]
        table[row, 2 + k] = base
        table[row, 2 + d + k] = math.lgamma(base)


@njit(cache=True, inline="always")
def dm_tabulated_log_predictive(params, data, table, shared, work, c, i):
    d = int(params[0])
    big_c = table[c, 1]
    total_x = 0.0
    for k in range(d):
        total_x += data[i, k]
    if total_x <= DM_PRODUCT_COUNTS and big_c + total_x <= 1e5:
        num = 1.0   # two products without a division in their chains: one at the end
        den = 1.0
        for k in range(d):
            base = table[c, 2 + k]
            for j in range(int(data[i, k])):
                num *= base + j
                den *= j + 1.0
        for j in range(int(total_x)):
            num *= j + 1.0
            den *= big_c + j
        return math.log(num / den)
    value = math.lgamma(total_x + 1.0) + table[c, 0] - math.lgamma(big_c + total_x)
    for k in range(d):
        x = data[i, k]
        if x > 0:
            value += (math.lgamma(table[c, 2 + k] + x) - table[c, 2 + d + k]
                      - math.lgamma(x + 1.0))
    return value
