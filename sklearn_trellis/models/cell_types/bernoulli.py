"""Binary cells: ``x ~ Bernoulli(p)`` with a Beta(a, b) prior (:class:`..cells.BernoulliCells`).

params ``[a, b]``; stats ``[n, n_ones]``; predictive cache ``[log p(0), log p(1)]``; theta
``[log(1 - p), log p]``.
"""

import math

import numpy as np

from numba import njit

from .._conjugate_kernels import beta_bernoulli_log_marginal
from ..._core.random_draws import log_gamma_draw


@njit(cache=True)
def accumulate(params, p0, stats, s0, x, weight):
    stats[s0] += weight
    stats[s0 + 1] += weight * x


@njit(cache=True, inline='always')
def log_marginal(params, p0, stats, s0):
    return beta_bernoulli_log_marginal(params[p0], params[p0 + 1], stats[s0], stats[s0 + 1])


@njit(cache=True, inline='always')
def log_predictive(params, p0, stats, s0, x):
    a, b, n, n1 = params[p0], params[p0 + 1], stats[s0], stats[s0 + 1]
    if x != 0.0:
        return math.log((a + n1) / (a + b + n))
    return math.log((b + n - n1) / (a + b + n))


@njit(cache=True, inline='always')
def predictive_cache(params, p0, stats, s0, cache, c0):
    a, b, n, n1 = params[p0], params[p0 + 1], stats[s0], stats[s0 + 1]
    log_total = math.log(a + b + n)
    cache[c0] = math.log(b + n - n1) - log_total
    cache[c0 + 1] = math.log(a + n1) - log_total


@njit(cache=True, inline='always')
def cached_log_predictive(params, p0, stats, s0, cache, c0, x):
    return cache[c0 + 1] if x != 0.0 else cache[c0]


@njit(cache=True, inline='always')
def predictive_mean(params, stats):
    return (params[0] + stats[1]) / (params[0] + params[1] + stats[0])


@njit(cache=True, inline='always')
def predictive_sample(params, stats):
    p = (params[0] + stats[1]) / (params[0] + params[1] + stats[0])
    return 1.0 if np.random.random() < p else 0.0


@njit(cache=True, inline='always')
def theta_size(params, p0):
    return 2


@njit(cache=True, inline='always')
def posterior_draw(params, p0, stats, s0, theta, t0):
    n, n1 = stats[s0], stats[s0 + 1]
    log_one = log_gamma_draw(params[p0] + n1)
    log_zero = log_gamma_draw(params[p0 + 1] + n - n1)
    top = max(log_one, log_zero)
    log_total = top + math.log(math.exp(log_one - top) + math.exp(log_zero - top))
    theta[t0] = log_zero - log_total
    theta[t0 + 1] = log_one - log_total


@njit(cache=True)
def log_kernel(theta, t0, x):
    return theta[t0 + 1] if x != 0.0 else theta[t0]


@njit(cache=True)
def add_log_kernels(theta, t0, x, i0, i1, out):
    log_zero, log_one = theta[t0], theta[t0 + 1]
    for i in range(i0, i1):
        out[i - i0] += log_one if x[i] == 1.0 else (log_zero if x[i] == 0.0 else 0.0)
