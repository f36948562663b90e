"""Category cells coded ``0..k-1``: ``x ~ Categorical(p)`` with a Dirichlet prior
(:class:`..cells.CategoricalCells`).

params ``[k, sum(beta), beta (k)]``; stats ``[n, counts (k)]``; predictive cache
``[log(beta_c + n_c) for each c, log(sum(beta) + n)]``; theta ``[log p_0, ..., log p_{k-1}]``.
"""

import math

import numpy as np
from numba import njit

from ..._core.random_draws import log_gamma_draw
from .._conjugate_kernels import dirichlet_counts_log_marginal


@njit(cache=True)
def accumulate(params, p0, stats, s0, x, weight):
    stats[s0] += weight
    stats[s0 + 1 + int(x)] += weight


@njit(cache=True, inline='always')
def log_marginal(params, p0, stats, s0):
    return dirichlet_counts_log_marginal(params, p0 + 2, params[p0 + 1], stats, s0 + 1,
                                         stats[s0], int(params[p0]))


@njit(cache=True, inline='always')
def log_predictive(params, p0, stats, s0, x):
    k = int(x)
    return math.log((params[p0 + 2 + k] + stats[s0 + 1 + k]) / (params[p0 + 1] + stats[s0]))


@njit(cache=True, inline='always')
def predictive_cache(params, p0, stats, s0, cache, c0):
    k = int(params[p0])
    for c in range(k):
        cache[c0 + c] = math.log(params[p0 + 2 + c] + stats[s0 + 1 + c])
    cache[c0 + k] = math.log(params[p0 + 1] + stats[s0])


@njit(cache=True, inline='always')
def cached_log_predictive(params, p0, stats, s0, cache, c0, x):
    return cache[c0 + int(x)] - cache[c0 + int(params[p0])]


@njit(cache=True, inline='always')
def predictive_mean(params, stats):
    """The most probable code."""
    best = 0
    for c in range(1, int(params[0])):
        if params[2 + c] + stats[1 + c] > params[2 + best] + stats[1 + best]:
            best = c
    return float(best)


@njit(cache=True, inline='always')
def predictive_sample(params, stats):
    u = np.random.random() * (params[1] + stats[0])
    total = 0.0
    k = int(params[0])
    for c in range(k):
        total += params[2 + c] + stats[1 + c]
        if u < total:
            return float(c)
    return float(k - 1)


@njit(cache=True, inline='always')
def theta_size(params, p0):
    return int(params[p0])


@njit(cache=True, inline='always')
def posterior_draw(params, p0, stats, s0, theta, t0):
    k = int(params[p0])
    top = -np.inf
    for c in range(k):
        g = log_gamma_draw(params[p0 + 2 + c] + stats[s0 + 1 + c])
        theta[t0 + c] = g
        if g > top:
            top = g
    total = 0.0
    for c in range(k):
        total += math.exp(theta[t0 + c] - top)
    log_total = top + math.log(total)
    for c in range(k):
        theta[t0 + c] -= log_total


@njit(cache=True)
def log_kernel(theta, t0, x):
    return theta[t0 + int(x)]


@njit(cache=True)
def add_log_kernels(theta, t0, x, i0, i1, out):
    for i in range(i0, i1):
        if x[i] == x[i]:
            out[i - i0] += theta[t0 + int(x[i])]
