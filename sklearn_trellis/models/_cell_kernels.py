"""Numba kernels of the conjugate models of i.i.d. scalar cells (:mod:`.cells`).

Every cell model has the same three kernels, on 1-d float64 arrays:

``add_cell(params, stats, x, weight)``
    Add (``weight = +1``) or remove (``-1``) the value ``x`` to / from the
    statistics ``stats``; a NaN ``x`` is a missing cell and changes nothing.
``log_marginal(params, stats) -> float``
    ``log m`` of the cells summarised by ``stats`` (0 for no cells).
``log_predictive(params, stats, x) -> float``
    ``log p(x | cells of stats)`` (0 for a NaN ``x``).

Statistics are *additive*: the statistics of a union of disjoint cell sets are
the sum of theirs, and ``stats[0]`` is always the number of observed cells.
So a block's statistics are the sum of its rows' statistics, and the empty
block is the zero vector. Layouts (``s`` statistics, ``q`` parameters):

=====  ===========  ===============================  =================================
code   model        params                           stats
=====  ===========  ===============================  =================================
0      normal       ``[m0, kappa0, a0, b0]``         ``[n, sum(x - m0), sum((x - m0)^2)]``
1      bernoulli    ``[a, b]``                       ``[n, n_ones]``
2      poisson      ``[a0, b0]`` (shape, rate)       ``[n, sum(x), sum(log x!)]``
3      categorical  ``[k, sum(beta), beta (k)]``     ``[n, counts (k)]``
=====  ===========  ===============================  =================================

``cell_add``, ``cell_log_marginal`` and ``cell_log_predictive`` switch on the
type code (for likelihoods mixing cell types, e.g. CrossCat's columns);
``accumulate_at``, ``log_marginal_at`` and ``log_predictive_at`` are the same
on offsets into flat arrays (no array views in hot loops), and every kernel
above is one of them at offset 0. ``predictive_cache_at`` and
``cached_log_predictive_at`` (``cell_predictive_cache``,
``cell_cached_log_predictive``) give the same predictive from at most
``n_stats`` cached constants of a block, for code that scores many cells
against a block between its changes.
``cell_posterior_draw`` and ``cell_log_density`` (``posterior_draw_at``,
``log_density_at``) are the uncollapsed side: explicit parameters theta of a
block drawn from its conjugate posterior (numba's generator), and
``log f(x | theta)`` (layouts of theta above :func:`theta_size`).
The formulas of the Normal-Gamma, Beta-Bernoulli and Dirichlet marginals are
those of :mod:`._conjugate_kernels`, shared.
"""

import math

import numpy as np
from numba import njit

from ._conjugate_kernels import (beta_bernoulli_log_marginal, dirichlet_counts_log_marginal,
                                 normal_gamma_log_marginal)

NORMAL, BERNOULLI, POISSON, CATEGORICAL = 0, 1, 2, 3


# ---------------------------------------------------------------- the one implementation
# Offset forms: statistics at ``stats[s0:]`` and parameters at ``params[p0:]`` of flat
# arrays, so the block-model kernels run their cell loops without making array views.
# The per-type kernels below and the type-code switch are these, at offset 0.
@njit(cache=True)
def accumulate_at(code, params, p0, stats, s0, x, weight):
    """``add_cell`` of type ``code`` on ``stats[s0:]`` with parameters ``params[p0:]``."""
    if x != x:
        return
    stats[s0] += weight
    if code == NORMAL:
        y = x - params[p0]
        stats[s0 + 1] += weight * y
        stats[s0 + 2] += weight * y * y
    elif code == BERNOULLI:
        stats[s0 + 1] += weight * x
    elif code == POISSON:
        stats[s0 + 1] += weight * x
        stats[s0 + 2] += weight * math.lgamma(x + 1.0)
    else:
        stats[s0 + 1 + int(x)] += weight


@njit(cache=True)
def _normal_from(params, p0, n, s1, s2):
    if n <= 0:
        return 0.0
    kappa0 = params[p0 + 1]
    # b_n = b0 + (SS + kappa0 n (mean - m0)^2 / (kappa0 + n)) / 2 = b0 + (s2 - s1^2 / (kappa0 + n)) / 2
    spread = s2 - s1 * s1 / (kappa0 + n)
    b_n = params[p0 + 3] + 0.5 * max(spread, 0.0)
    return normal_gamma_log_marginal(kappa0, params[p0 + 2], params[p0 + 3], n, b_n)


@njit(cache=True)
def _poisson_from(params, p0, n, total, log_factorials):
    if n <= 0:
        return 0.0
    a0, b0 = params[p0], params[p0 + 1]
    return (a0 * math.log(b0) - math.lgamma(a0) + math.lgamma(a0 + total)
            - (a0 + total) * math.log(b0 + n) - log_factorials)


@njit(cache=True)
def log_marginal_at(code, params, p0, stats, s0):
    """``log_marginal`` of type ``code`` of ``stats[s0:]`` with parameters ``params[p0:]``."""
    n = stats[s0]
    if n <= 0:
        return 0.0
    if code == NORMAL:
        return _normal_from(params, p0, n, stats[s0 + 1], stats[s0 + 2])
    if code == BERNOULLI:
        return beta_bernoulli_log_marginal(params[p0], params[p0 + 1], n, stats[s0 + 1])
    if code == POISSON:
        return _poisson_from(params, p0, n, stats[s0 + 1], stats[s0 + 2])
    return dirichlet_counts_log_marginal(params, p0 + 2, params[p0 + 1], stats, s0 + 1, n,
                                         int(params[p0]))


@njit(cache=True)
def log_predictive_at(code, params, p0, stats, s0, x):
    """``log_predictive`` of type ``code`` (``stats[s0:]``, ``params[p0:]``)."""
    if x != x:
        return 0.0
    n = stats[s0]
    if code == NORMAL:
        y = x - params[p0]
        s1, s2 = stats[s0 + 1], stats[s0 + 2]
        return (_normal_from(params, p0, n + 1.0, s1 + y, s2 + y * y)
                - _normal_from(params, p0, n, s1, s2))
    if code == BERNOULLI:
        a, b, n1 = params[p0], params[p0 + 1], stats[s0 + 1]
        if x != 0.0:
            return math.log((a + n1) / (a + b + n))
        return math.log((b + n - n1) / (a + b + n))
    if code == POISSON:
        total, lf = stats[s0 + 1], stats[s0 + 2]
        return (_poisson_from(params, p0, n + 1.0, total + x, lf + math.lgamma(x + 1.0))
                - _poisson_from(params, p0, n, total, lf))
    k = int(x)
    return math.log((params[p0 + 2 + k] + stats[s0 + 1 + k]) / (params[p0 + 1] + n))


# ---------------------------------------------------------------- cached one-cell predictive
# ``log_predictive_at`` is a difference of two marginals (several lgamma). A block that is
# scored many times between changes (a Gibbs scan scores every item against every
# cluster) caches the constants of its one-cell posterior predictive instead, at most
# ``n_stats`` numbers (:func:`predictive_cache_at`, O(1) work after each change), and then
# scores a cell with a few flops and at most one log (:func:`cached_log_predictive_at`):
#
# - normal: Student-t with ``2 a_n`` dof, ``[lgamma(a_n + 1/2) - lgamma(a_n) + log(r / pi) / 2,
#   location - m0, r]`` with ``r = kappa_n / (2 b_n (kappa_n + 1))``; ``log p = c0 -
#   (a_n + 1/2) log(1 + r (y - loc)^2)``;
# - bernoulli: ``[log p(0), log p(1)]``;
# - poisson: negative binomial, ``[a_n log(b_n / (b_n + 1)), log(b_n + 1)]``; ``log p =
#   log(Gamma(a_n + x) / (Gamma(a_n) x!)) + c0 - x c1`` (a product of ``x`` ratios for small ``x``);
# - categorical: ``[log(beta_c + n_c) for each c, log(sum(beta) + n)]``.
_LOG_PI = math.log(math.pi)
#: Largest Poisson count whose ``Gamma(a + x) / (Gamma(a) x!)`` is a product of ratios.
_SMALL_COUNT = 12


#: From this ``a`` on, :func:`log_gamma_half_ratio` sums its asymptotic series.
_SERIES_FROM = 16.0


@njit(cache=True, inline='always')
def log_gamma_half_ratio(a):
    """``lgamma(a + 1/2) - lgamma(a)``, one ``log`` instead of two ``lgamma`` for ``a >= 16``.

    The asymptotic series ``log(a) / 2 - 1/(8a) + 1/(192a^3) - 1/(640a^5) +
    17/(14336a^7) - 31/(18432a^9) + ...`` (from ``log Gamma(z + h)``'s expansion in
    Bernoulli polynomials), cut after ``a^-11``: within 1e-14 (relative) for ``a >=
    16``, where the difference of two ``lgamma`` (each of size ``a log a``) loses
    digits to rounding (4e-7 at ``a = 1e9``). Below 16, the difference itself.
    """
    if a < _SERIES_FROM:
        return math.lgamma(a + 0.5) - math.lgamma(a)
    r = 1.0 / a
    r2 = r * r
    return 0.5 * math.log(a) + r * (-0.125 + r2 * (1.0 / 192.0 + r2 * (
        -1.0 / 640.0 + r2 * (17.0 / 14336.0 + r2 * (-31.0 / 18432.0
                                                     + r2 * 0.0038341175426136364)))))


@njit(cache=True, inline='always')
def predictive_cache_at(code, params, p0, stats, s0, cache, c0):
    """Fill ``cache[c0:]`` with the one-cell predictive constants of the cells ``stats[s0:]``."""
    n = stats[s0]
    if code == NORMAL:
        kappa = params[p0 + 1] + n
        a = params[p0 + 2] + 0.5 * n
        s1 = stats[s0 + 1]
        b = params[p0 + 3] + 0.5 * max(stats[s0 + 2] - s1 * s1 / kappa, 0.0)
        r = kappa / (2.0 * b * (kappa + 1.0))
        cache[c0] = log_gamma_half_ratio(a) + 0.5 * (math.log(r) - _LOG_PI)
        cache[c0 + 1] = s1 / kappa
        cache[c0 + 2] = r
    elif code == BERNOULLI:
        a, b, n1 = params[p0], params[p0 + 1], stats[s0 + 1]
        log_total = math.log(a + b + n)
        cache[c0] = math.log(b + n - n1) - log_total
        cache[c0 + 1] = math.log(a + n1) - log_total
    elif code == POISSON:
        rate = params[p0 + 1] + n
        log_next = math.log(rate + 1.0)
        cache[c0] = (params[p0] + stats[s0 + 1]) * (math.log(rate) - log_next)
        cache[c0 + 1] = log_next
    else:
        k = int(params[p0])
        for c in range(k):
            cache[c0 + c] = math.log(params[p0 + 2 + c] + stats[s0 + 1 + c])
        cache[c0 + k] = math.log(params[p0 + 1] + n)


@njit(cache=True, inline='always')
def cached_log_predictive_at(code, params, p0, stats, s0, cache, c0, x):
    """``log_predictive_at`` from the constants :func:`predictive_cache_at` left in ``cache[c0:]``."""
    if x != x:
        return 0.0
    if code == NORMAL:
        d = x - params[p0] - cache[c0 + 1]
        return cache[c0] - (params[p0 + 2] + 0.5 * stats[s0] + 0.5) * math.log(
            1.0 + cache[c0 + 2] * d * d)
    if code == BERNOULLI:
        return cache[c0 + 1] if x != 0.0 else cache[c0]
    if code == POISSON:
        a = params[p0] + stats[s0 + 1]
        if x <= _SMALL_COUNT:
            ratio = 1.0
            for m in range(int(x)):
                ratio *= (a + m) / (m + 1.0)
            head = math.log(ratio)
        else:
            head = math.lgamma(a + x) - math.lgamma(a) - math.lgamma(x + 1.0)
        return head + cache[c0] - x * cache[c0 + 1]
    return cache[c0 + int(x)] - cache[c0 + int(params[p0])]


# ---------------------------------------------------------------- the per-type kernels
@njit(cache=True)
def normal_add_cell(params, stats, x, weight):
    accumulate_at(NORMAL, params, 0, stats, 0, x, weight)


@njit(cache=True)
def normal_log_marginal(params, stats):
    return log_marginal_at(NORMAL, params, 0, stats, 0)


@njit(cache=True)
def normal_log_predictive(params, stats, x):
    return log_predictive_at(NORMAL, params, 0, stats, 0, x)


@njit(cache=True)
def bernoulli_add_cell(params, stats, x, weight):
    accumulate_at(BERNOULLI, params, 0, stats, 0, x, weight)


@njit(cache=True)
def bernoulli_log_marginal(params, stats):
    return log_marginal_at(BERNOULLI, params, 0, stats, 0)


@njit(cache=True)
def bernoulli_log_predictive(params, stats, x):
    return log_predictive_at(BERNOULLI, params, 0, stats, 0, x)


@njit(cache=True)
def poisson_add_cell(params, stats, x, weight):
    accumulate_at(POISSON, params, 0, stats, 0, x, weight)


@njit(cache=True)
def poisson_log_marginal(params, stats):
    return log_marginal_at(POISSON, params, 0, stats, 0)


@njit(cache=True)
def poisson_log_predictive(params, stats, x):
    return log_predictive_at(POISSON, params, 0, stats, 0, x)


@njit(cache=True)
def categorical_add_cell(params, stats, x, weight):
    accumulate_at(CATEGORICAL, params, 0, stats, 0, x, weight)


@njit(cache=True)
def categorical_log_marginal(params, stats):
    return log_marginal_at(CATEGORICAL, params, 0, stats, 0)


@njit(cache=True)
def categorical_log_predictive(params, stats, x):
    return log_predictive_at(CATEGORICAL, params, 0, stats, 0, x)


# ---------------------------------------------------------------- switch on the type code
@njit(cache=True)
def cell_add(code, params, stats, x, weight):
    """``add_cell`` of the cell model with type ``code``."""
    accumulate_at(code, params, 0, stats, 0, x, weight)


@njit(cache=True)
def cell_log_marginal(code, params, stats):
    """``log_marginal`` of the cell model with type ``code``."""
    return log_marginal_at(code, params, 0, stats, 0)


@njit(cache=True)
def cell_log_predictive(code, params, stats, x):
    """``log_predictive`` of the cell model with type ``code``."""
    return log_predictive_at(code, params, 0, stats, 0, x)


@njit(cache=True)
def cell_predictive_cache(code, params, stats, cache):
    """The one-cell predictive constants of ``stats`` into ``cache`` (``n_stats`` entries)."""
    predictive_cache_at(code, params, 0, stats, 0, cache, 0)


@njit(cache=True)
def cell_cached_log_predictive(code, params, stats, cache, x):
    """``cell_log_predictive`` from the constants of :func:`cell_predictive_cache`."""
    return cached_log_predictive_at(code, params, 0, stats, 0, cache, 0, x)


@njit(cache=True)
def values_stats(code, params, values, n_stats):
    """Statistics of the cells ``values`` (1-d, NaN = missing)."""
    stats = np.zeros(n_stats)
    for x in values:
        cell_add(code, params, stats, x, 1.0)
    return stats


@njit(cache=True)
def grid_sum_log_marginals(code, grid_params, rows, out):
    """``out[g] = sum_r log_marginal(grid_params[g], rows[r])`` (the grid hyperprior's update)."""
    for g in range(grid_params.shape[0]):
        total = 0.0
        for r in range(rows.shape[0]):
            if rows[r, 0] > 0:
                total += cell_log_marginal(code, grid_params[g], rows[r])
        out[g] = total
    return out


@njit(cache=True)
def grid_log_marginals(code, grid_params, rows, out):
    """``out[g, r] = log_marginal(grid_params[g], rows[r])`` (0 for an empty row)."""
    for g in range(grid_params.shape[0]):
        for r in range(rows.shape[0]):
            out[g, r] = (cell_log_marginal(code, grid_params[g], rows[r]) if rows[r, 0] > 0
                         else 0.0)
    return out


# ---------------------------------------------------------------- predictive means and draws
# (added for CrossCat's impute / simulate: the posterior predictive of one new cell)
@njit(cache=True)
def _normal_posterior(params, stats):
    n, s1, s2 = stats[0], stats[1], stats[2]
    kappa = params[1] + n
    mean = params[0] + s1 / kappa
    shape = params[2] + 0.5 * n
    rate = params[3] + 0.5 * max(s2 - s1 * s1 / kappa, 0.0)
    return kappa, mean, shape, rate


@njit(cache=True)
def cell_predictive_mean(code, params, stats):
    """Mean of the posterior predictive of a new cell (categorical: its most probable code)."""
    if code == NORMAL:
        return _normal_posterior(params, stats)[1]
    if code == BERNOULLI:
        return (params[0] + stats[1]) / (params[0] + params[1] + stats[0])
    if code == POISSON:
        return (params[0] + stats[1]) / (params[1] + stats[0])
    best = 0
    for c in range(1, int(params[0])):
        if params[2 + c] + stats[1 + c] > params[2 + best] + stats[1 + best]:
            best = c
    return float(best)


@njit(cache=True)
def cell_predictive_sample(code, params, stats):
    """A draw from the posterior predictive of a new cell (numba's generator)."""
    if code == NORMAL:
        kappa, mean, shape, rate = _normal_posterior(params, stats)
        precision = np.random.gamma(shape, 1.0 / rate)
        return mean + np.random.standard_normal() * math.sqrt((kappa + 1.0) / (kappa * precision))
    if code == BERNOULLI:
        p = (params[0] + stats[1]) / (params[0] + params[1] + stats[0])
        return 1.0 if np.random.random() < p else 0.0
    if code == POISSON:
        lam = np.random.gamma(params[0] + stats[1], 1.0 / (params[1] + stats[0]))
        return float(np.random.poisson(lam))
    u = np.random.random() * (params[1] + stats[0])
    total = 0.0
    k = int(params[0])
    for c in range(k):
        total += params[2 + c] + stats[1 + c]
        if u < total:
            return float(c)
    return float(k - 1)


# ---------------------------------------------------------------- explicit parameters
# (added for the slice-sampler row move of CrossCat, :mod:`...engines.gibbs._crosscat_rows`: an
# *uncollapsed* move draws each block's parameters theta from their conjugate posterior and
# then scores cells by log f(x | theta).) theta is kept in the form the density reads,
# ``theta_size`` entries:
#
# - normal: ``[mean, precision, log(precision / (2 pi)) / 2]``;
# - bernoulli: ``[log(1 - p), log p]``;
# - poisson: ``[rate, log rate]``;
# - categorical: ``[log p_0, ..., log p_{k-1}]``.
_LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True)
def theta_size(code, params, p0):
    """Number of entries of theta of type ``code`` with parameters ``params[p0:]``."""
    if code == NORMAL:
        return 3
    if code == CATEGORICAL:
        return int(params[p0])
    return 2


@njit(cache=True)
def log_gamma_draw(shape):
    """``log g`` for ``g ~ Gamma(shape, 1)``, without underflow for small shapes.

    For ``shape < 1``, ``g = g' U^(1 / shape)`` with ``g' ~ Gamma(shape + 1)`` (Marsaglia &
    Tsang), so the log stays finite where ``g`` itself would round to 0.
    """
    if shape >= 1.0:
        return math.log(np.random.gamma(shape, 1.0))
    u = np.random.random()
    while u <= 0.0:
        u = np.random.random()
    return math.log(np.random.gamma(shape + 1.0, 1.0)) + math.log(u) / shape


@njit(cache=True)
def posterior_draw_at(code, params, p0, stats, s0, theta, t0):
    """theta of type ``code`` drawn from its posterior given the cells ``stats[s0:]``.

    Prior parameters ``params[p0:]``; the statistics of no cells (zeros) give a prior
    draw. Uses numba's generator (seed it first).
    """
    n = stats[s0]
    if code == NORMAL:
        kappa = params[p0 + 1] + n
        s1 = stats[s0 + 1]
        shape = params[p0 + 2] + 0.5 * n
        rate = params[p0 + 3] + 0.5 * max(stats[s0 + 2] - s1 * s1 / kappa, 0.0)
        precision = np.random.gamma(shape, 1.0 / rate)
        theta[t0] = (params[p0] + s1 / kappa
                     + np.random.standard_normal() / math.sqrt(kappa * precision))
        theta[t0 + 1] = precision
        theta[t0 + 2] = 0.5 * (math.log(precision) - _LOG_2PI)
    elif code == BERNOULLI:
        n1 = stats[s0 + 1]
        log_one = log_gamma_draw(params[p0] + n1)
        log_zero = log_gamma_draw(params[p0 + 1] + n - n1)
        top = max(log_one, log_zero)
        log_total = top + math.log(math.exp(log_one - top) + math.exp(log_zero - top))
        theta[t0] = log_zero - log_total
        theta[t0 + 1] = log_one - log_total
    elif code == POISSON:
        rate = np.random.gamma(params[p0] + stats[s0 + 1], 1.0 / (params[p0 + 1] + n))
        theta[t0] = rate
        theta[t0 + 1] = math.log(rate) if rate > 0.0 else -np.inf
    else:
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


@njit(cache=True, inline='always')
def log_kernel_at(code, theta, t0, x):
    """``log f(x | theta)`` up to a term of ``x`` alone (the poisson's ``-log x!``).

    What a row's choice between parameter draws needs: the left-out term is the same
    for every theta, and costs an ``lgamma`` per cell. 0 for a NaN ``x``.
    """
    if x != x:
        return 0.0
    if code == NORMAL:
        d = x - theta[t0]
        return theta[t0 + 2] - 0.5 * theta[t0 + 1] * d * d
    if code == BERNOULLI:
        return theta[t0 + 1] if x != 0.0 else theta[t0]
    if code == POISSON:
        if x == 0.0:
            return -theta[t0]
        return x * theta[t0 + 1] - theta[t0]
    return theta[t0 + int(x)]


@njit(cache=True, inline='always')
def log_density_at(code, theta, t0, x):
    """``log f(x | theta)`` of type ``code`` with theta at ``theta[t0:]`` (0 for a NaN ``x``)."""
    if code == POISSON and x == x and x != 0.0:
        return log_kernel_at(code, theta, t0, x) - math.lgamma(x + 1.0)
    return log_kernel_at(code, theta, t0, x)


@njit(cache=True)
def cell_posterior_draw(code, params, stats, theta):
    """theta (``theta_size`` entries) drawn from the posterior of the cells ``stats``."""
    posterior_draw_at(code, params, 0, stats, 0, theta, 0)


@njit(cache=True)
def cell_log_density(code, theta, x):
    """``log f(x | theta)`` of the cell model with type ``code`` (0 for a NaN ``x``)."""
    return log_density_at(code, theta, 0, x)
