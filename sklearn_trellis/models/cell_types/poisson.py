"""Count cells: ``x ~ Poisson(lam)`` with a Gamma(a0, rate=b0) prior (:class:`..cells.PoissonCells`).

params ``[a0, b0]``; stats ``[n, sum(x), sum(log x!)]``; predictive cache (negative
binomial) ``[a_n log(b_n / (b_n + 1)), log(b_n + 1)]``; theta ``[rate, log rate]``. Its cell
constant is ``log x!``: engines that rebuild statistics often read it from a table
instead of calling ``lgamma`` per cell.
"""

import math

import numpy as np
from numba import njit

#: Largest count whose ``Gamma(a + x) / (Gamma(a) x!)`` is a product of ratios.
_SMALL_COUNT = 12


@njit(cache=True, inline='always')
def cell_constant(x):
    return math.lgamma(x + 1.0)


@njit(cache=True)
def accumulate_with_constant(params, p0, stats, s0, x, constant, weight):
    stats[s0] += weight
    stats[s0 + 1] += weight * x
    stats[s0 + 2] += weight * constant


@njit(cache=True)
def accumulate(params, p0, stats, s0, x, weight):
    accumulate_with_constant(params, p0, stats, s0, x, math.lgamma(x + 1.0), weight)


@njit(cache=True, inline='always')
def _log_marginal_of(params, p0, n, total, log_factorials):
    if n <= 0:
        return 0.0
    a0, b0 = params[p0], params[p0 + 1]
    return (a0 * math.log(b0) - math.lgamma(a0) + math.lgamma(a0 + total)
            - (a0 + total) * math.log(b0 + n) - log_factorials)


@njit(cache=True, inline='always')
def log_marginal(params, p0, stats, s0):
    return _log_marginal_of(params, p0, stats[s0], stats[s0 + 1], stats[s0 + 2])


@njit(cache=True, inline='always')
def log_predictive(params, p0, stats, s0, x):
    n, total, lf = stats[s0], stats[s0 + 1], stats[s0 + 2]
    return (_log_marginal_of(params, p0, n + 1.0, total + x, lf + math.lgamma(x + 1.0))
            - _log_marginal_of(params, p0, n, total, lf))


@njit(cache=True, inline='always')
def predictive_cache(params, p0, stats, s0, cache, c0):
    rate = params[p0 + 1] + stats[s0]
    log_next = math.log(rate + 1.0)
    cache[c0] = (params[p0] + stats[s0 + 1]) * (math.log(rate) - log_next)
    cache[c0 + 1] = log_next


@njit(cache=True, inline='always')
def cached_log_predictive(params, p0, stats, s0, cache, c0, x):
    a = params[p0] + stats[s0 + 1]
    if x <= _SMALL_COUNT:
        ratio = 1.0
        for m in range(int(x)):
            ratio *= (a + m) / (m + 1.0)
        head = math.log(ratio)
    else:
        head = math.lgamma(a + x) - math.lgamma(a) - math.lgamma(x + 1.0)
    return head + cache[c0] - x * cache[c0 + 1]


@njit(cache=True, inline='always')
def predictive_mean(params, stats):
    return (params[0] + stats[1]) / (params[1] + stats[0])


@njit(cache=True, inline='always')
def predictive_sample(params, stats):
    lam = np.random.gamma(params[0] + stats[1], 1.0 / (params[1] + stats[0]))
    return float(np.random.poisson(lam))


@njit(cache=True, inline='always')
def theta_size(params, p0):
    return 2


@njit(cache=True, inline='always')
def posterior_draw(params, p0, stats, s0, theta, t0):
    rate = np.random.gamma(params[p0] + stats[s0 + 1], 1.0 / (params[p0 + 1] + stats[s0]))
    theta[t0] = rate
    theta[t0 + 1] = math.log(rate) if rate > 0.0 else -np.inf


@njit(cache=True)
def log_kernel(theta, t0, x):
    """``log f(x | theta)`` without its ``-log x!`` (the same for every theta)."""
    if x == 0.0:
        return -theta[t0]
    return x * theta[t0 + 1] - theta[t0]


@njit(cache=True, inline='always')
def log_density(theta, t0, x):
    if x != 0.0:
        return log_kernel(theta, t0, x) - math.lgamma(x + 1.0)
    return log_kernel(theta, t0, x)


@njit(cache=True)
def add_log_kernels(theta, t0, x, i0, i1, out):
    rate, log_rate = theta[t0], theta[t0 + 1]
    for i in range(i0, i1):
        if x[i] == x[i]:
            out[i - i0] += (x[i] * log_rate if x[i] != 0.0 else 0.0) - rate
