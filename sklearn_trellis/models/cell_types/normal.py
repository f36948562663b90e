"""Normal cells: ``x ~ N(mu, 1/tau)`` with a Normal-Gamma prior (:class:`..cells.NormalCells`).

Unit free at any scale a float64 holds: the kernels work on ``y = (x - m0) / unit``
with ``unit`` a power of two near the spread of the fitted values (exact, so scaling
the data by a power of two changes nothing but the log densities' Jacobian
``-n log unit``), and no square of a raw value is ever formed.

params ``[m0, kappa0, a0, b0, 1 / unit, log(1 / unit)]`` (``b0`` in units of
``unit**2``); stats ``[n, sum(y), sum(y^2)]``; predictive cache ``[c, location, r]``
of the Student-t of ``y`` (:mod:`.._normal_gamma_kernels`, ``c`` with the Jacobian);
theta ``[mean, precision, log(precision / (2 pi)) / 2 - log(unit), m0, 1 / unit]`` (mean
and precision of ``y``).
"""

import math

import numpy as np
from numba import njit

from .._normal_gamma_kernels import (normal_gamma_count_terms, normal_gamma_log_marginal,
                                     normal_gamma_scale_terms, student_t_constant,
                                     student_t_factor)

_LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True, inline='always')
def _standardized(params, p0, x):
    """``(x - m0) / unit``, as ``x / unit - m0 / unit`` (the same number: ``unit`` is a power
    of two) so that no difference of two huge values overflows."""
    return x * params[p0 + 4] - params[p0] * params[p0 + 4]


@njit(cache=True, inline='always')
def _log1p_square(r, d):
    """``log(1 + r d^2)`` without overflow (a value far in the tails)."""
    t = r * d * d
    if t < 1e300:
        return math.log1p(t)
    return math.log(r) + 2.0 * math.log(abs(d))


@njit(cache=True)
def accumulate(params, p0, stats, s0, x, weight):
    stats[s0] += weight
    y = _standardized(params, p0, x)
    stats[s0 + 1] += weight * y
    stats[s0 + 2] += weight * y * y


@njit(cache=True, inline='always')
def _log_marginal_of(params, p0, n, s1, s2):
    if n <= 0:
        return 0.0
    kappa0 = params[p0 + 1]
    # b_n = b0 + (SS + kappa0 n (mean - m0)^2 / (kappa0 + n)) / 2 = b0 + (s2 - s1^2 / (kappa0 + n)) / 2
    spread = s2 - s1 * s1 / (kappa0 + n)
    b_n = params[p0 + 3] + 0.5 * max(spread, 0.0)
    return (normal_gamma_log_marginal(kappa0, params[p0 + 2], params[p0 + 3], n, b_n)
            + n * params[p0 + 5])


@njit(cache=True, inline='always')
def log_marginal(params, p0, stats, s0):
    return _log_marginal_of(params, p0, stats[s0], stats[s0 + 1], stats[s0 + 2])


@njit(cache=True, inline='always')
def _student_t(params, p0, stats, s0):
    """``(a_n, c, location, r)`` of the one-cell predictive of ``y`` (``c`` with the Jacobian)."""
    n = stats[s0]
    kappa = params[p0 + 1] + n
    a = params[p0 + 2] + 0.5 * n
    s1 = stats[s0 + 1]
    b = params[p0 + 3] + 0.5 * max(stats[s0 + 2] - s1 * s1 / kappa, 0.0)
    r = student_t_factor(kappa, b)
    return a, student_t_constant(a, r) + params[p0 + 5], s1 / kappa, r


@njit(cache=True, inline='always')
def log_predictive(params, p0, stats, s0, x):
    a, c, location, r = _student_t(params, p0, stats, s0)
    return c - (a + 0.5) * _log1p_square(r, _standardized(params, p0, x) - location)


@njit(cache=True, inline='always')
def predictive_cache(params, p0, stats, s0, cache, c0):
    a, c, location, r = _student_t(params, p0, stats, s0)
    cache[c0] = c
    cache[c0 + 1] = location
    cache[c0 + 2] = r


@njit(cache=True, inline='always')
def cached_log_predictive(params, p0, stats, s0, cache, c0, x):
    d = _standardized(params, p0, x) - cache[c0 + 1]
    return cache[c0] - (params[p0 + 2] + 0.5 * stats[s0] + 0.5) * _log1p_square(cache[c0 + 2], d)


@njit(cache=True, inline='always')
def _posterior(params, stats):
    n, s1, s2 = stats[0], stats[1], stats[2]
    kappa = params[1] + n
    mean = s1 / kappa
    shape = params[2] + 0.5 * n
    rate = params[3] + 0.5 * max(s2 - s1 * s1 / kappa, 0.0)
    return kappa, mean, shape, rate


@njit(cache=True, inline='always')
def predictive_mean(params, stats):
    return params[0] + _posterior(params, stats)[1] / params[4]


@njit(cache=True, inline='always')
def predictive_sample(params, stats):
    kappa, mean, shape, rate = _posterior(params, stats)
    precision = np.random.gamma(shape, 1.0 / rate)
    y = mean + np.random.standard_normal() * math.sqrt((kappa + 1.0) / (kappa * precision))
    return params[0] + y / params[4]


@njit(cache=True, inline='always')
def theta_size(params, p0):
    return 5


@njit(cache=True, inline='always')
def posterior_draw(params, p0, stats, s0, theta, t0):
    n = stats[s0]
    kappa = params[p0 + 1] + n
    s1 = stats[s0 + 1]
    shape = params[p0 + 2] + 0.5 * n
    rate = params[p0 + 3] + 0.5 * max(stats[s0 + 2] - s1 * s1 / kappa, 0.0)
    precision = np.random.gamma(shape, 1.0 / rate)
    theta[t0] = s1 / kappa + np.random.standard_normal() / math.sqrt(kappa * precision)
    theta[t0 + 1] = precision
    theta[t0 + 2] = 0.5 * (math.log(precision) - _LOG_2PI) + params[p0 + 5]
    theta[t0 + 3] = params[p0]
    theta[t0 + 4] = params[p0 + 4]


@njit(cache=True)
def log_kernel(theta, t0, x):
    d = x * theta[t0 + 4] - theta[t0 + 3] * theta[t0 + 4] - theta[t0]
    return theta[t0 + 2] - 0.5 * theta[t0 + 1] * d * d


@njit(cache=True)
def add_log_kernels(theta, t0, x, i0, i1, out):
    mean, half_precision, const = theta[t0], 0.5 * theta[t0 + 1], theta[t0 + 2]
    inverse_unit = theta[t0 + 4]
    shift = theta[t0 + 3] * inverse_unit + mean
    for i in range(i0, i1):
        y = x[i] * inverse_unit - shift
        value = const - half_precision * y * y
        out[i - i0] += value if value == value else 0.0   # NaN cell: nothing


@njit(cache=True, inline='always')
def grid_log_scores(grid, n_points, log_prior, flat, base, width, n_clusters, out):
    """``out[g] = log_prior[g] + sum_k log m(block k | grid[g])`` (blocks at ``flat[base +
    k * width:]``). A grid over ``kappa0`` and ``b0`` at one shape ``a0`` computes the terms
    of a block that depend on ``a0`` and its count alone (two ``lgamma``) once per block."""
    shared_shape = True
    for g in range(1, n_points):
        shared_shape = shared_shape and grid[g, 2] == grid[0, 2] and grid[g, 5] == grid[0, 5]
    if not shared_shape:
        for g in range(n_points):
            total = 0.0
            for k in range(n_clusters):
                total += _log_marginal_of(grid[g], 0, flat[base + k * width],
                                          flat[base + k * width + 1], flat[base + k * width + 2])
            out[g] = log_prior[g] + total
        return
    a0 = grid[0, 2]
    counted = 0.0
    for k in range(n_clusters):
        n = flat[base + k * width]
        if n > 0:
            counted += normal_gamma_count_terms(a0, n) + n * grid[0, 5]   # one unit
    for g in range(n_points):
        kappa0, b0 = grid[g, 1], grid[g, 3]
        total = log_prior[g] + counted
        for k in range(n_clusters):
            o = base + k * width
            n = flat[o]
            if n > 0:
                s1 = flat[o + 1]
                b_n = b0 + 0.5 * max(flat[o + 2] - s1 * s1 / (kappa0 + n), 0.0)
                total += normal_gamma_scale_terms(kappa0, a0, b0, n, b_n)
        out[g] = total
