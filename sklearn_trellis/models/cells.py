"""PROVISIONAL (crosscat branch, replaced by the bicluster branch's module on merge).

Conjugate models of i.i.d. scalar cells; NaN cells are missing (skipped).
Each model's numba kernels work on a 1-d ``params`` slice and a 1-d ``stats``
slice whose all-zero state is the empty cell set.
"""

import math

import numpy as np
from numba import njit
from sklearn.base import BaseEstimator

_LOG_2PI = math.log(2.0 * math.pi)


# ------------------------------------------------------------------ Normal-Gamma
@njit(cache=True)
def normal_add_cell(params, stats, x, weight):
    if math.isnan(x):
        return
    n = stats[0] + weight
    if n <= 0.5:
        stats[0] = 0.0
        stats[1] = 0.0
        stats[2] = 0.0
        return
    mean = stats[1]
    new_mean = mean + weight * (x - mean) / n
    stats[2] += weight * (x - mean) * (x - new_mean)
    stats[1] = new_mean
    stats[0] = n


@njit(cache=True)
def _normal_posterior(params, stats):
    m0, kappa0, a0, b0 = params[0], params[1], params[2], params[3]
    n, mean, m2 = stats[0], stats[1], stats[2]
    kappa = kappa0 + n
    mu = (kappa0 * m0 + n * mean) / kappa
    a = a0 + 0.5 * n
    b = b0 + 0.5 * max(m2, 0.0) + 0.5 * kappa0 * n * (mean - m0) ** 2 / kappa
    return kappa, mu, a, b


@njit(cache=True)
def normal_log_marginal(params, stats):
    n = stats[0]
    if n == 0:
        return 0.0
    kappa0, a0, b0 = params[1], params[2], params[3]
    kappa, mu, a, b = _normal_posterior(params, stats)
    return (math.lgamma(a) - math.lgamma(a0) + a0 * math.log(b0) - a * math.log(b)
            + 0.5 * (math.log(kappa0) - math.log(kappa)) - 0.5 * n * _LOG_2PI)


@njit(cache=True)
def normal_log_predictive(params, stats, x):
    if math.isnan(x):
        return 0.0
    kappa, mu, a, b = _normal_posterior(params, stats)
    scale2 = b * (kappa + 1.0) / (a * kappa)
    nu = 2.0 * a
    z = (x - mu) ** 2 / (nu * scale2)
    return (math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * nu)
            - 0.5 * math.log(nu * math.pi * scale2) - 0.5 * (nu + 1.0) * math.log1p(z))


@njit(cache=True)
def normal_predictive_mean(params, stats):
    return _normal_posterior(params, stats)[1]


@njit(cache=True)
def normal_predictive_sample(params, stats):
    kappa, mu, a, b = _normal_posterior(params, stats)
    precision = np.random.gamma(a, 1.0 / b)
    return mu + np.random.standard_normal() * math.sqrt((kappa + 1.0) / (kappa * precision))


# ------------------------------------------------------------------ Beta-Bernoulli
@njit(cache=True)
def bernoulli_add_cell(params, stats, x, weight):
    if math.isnan(x):
        return
    stats[0] += weight
    stats[1] += weight * x


@njit(cache=True)
def bernoulli_log_marginal(params, stats):
    a, b = params[0], params[1]
    n, n1 = stats[0], stats[1]
    return (math.lgamma(a + n1) + math.lgamma(b + n - n1) - math.lgamma(a + b + n)
            - math.lgamma(a) - math.lgamma(b) + math.lgamma(a + b))


@njit(cache=True)
def bernoulli_log_predictive(params, stats, x):
    if math.isnan(x):
        return 0.0
    a, b = params[0], params[1]
    p = (a + stats[1]) / (a + b + stats[0])
    return math.log(p) if x > 0.5 else math.log1p(-p)


@njit(cache=True)
def bernoulli_predictive_mean(params, stats):
    return (params[0] + stats[1]) / (params[0] + params[1] + stats[0])


@njit(cache=True)
def bernoulli_predictive_sample(params, stats):
    return 1.0 if np.random.random() < bernoulli_predictive_mean(params, stats) else 0.0


# ------------------------------------------------------------------ Poisson-Gamma
@njit(cache=True)
def poisson_add_cell(params, stats, x, weight):
    if math.isnan(x):
        return
    stats[0] += weight
    stats[1] += weight * x
    stats[2] += weight * math.lgamma(x + 1.0)


@njit(cache=True)
def poisson_log_marginal(params, stats):
    a, b = params[0], params[1]
    n, s = stats[0], stats[1]
    if n == 0:
        return 0.0
    return (a * math.log(b) - math.lgamma(a) + math.lgamma(a + s) - (a + s) * math.log(b + n)
            - stats[2])


@njit(cache=True)
def poisson_log_predictive(params, stats, x):
    if math.isnan(x):
        return 0.0
    a = params[0] + stats[1]
    b = params[1] + stats[0]
    return (math.lgamma(a + x) - math.lgamma(a) - math.lgamma(x + 1.0)
            + a * math.log(b / (b + 1.0)) - x * math.log(b + 1.0))


@njit(cache=True)
def poisson_predictive_mean(params, stats):
    return (params[0] + stats[1]) / (params[1] + stats[0])


@njit(cache=True)
def poisson_predictive_sample(params, stats):
    rate = np.random.gamma(params[0] + stats[1], 1.0 / (params[1] + stats[0]))
    return float(np.random.poisson(rate))


# ------------------------------------------------------------------ Dirichlet-categorical
@njit(cache=True)
def categorical_add_cell(params, stats, x, weight):
    if math.isnan(x):
        return
    stats[0] += weight
    stats[1 + int(x)] += weight


@njit(cache=True)
def categorical_log_marginal(params, stats):
    k = int(params[0])
    alpha = params[1]
    n = stats[0]
    if n == 0:
        return 0.0
    total = math.lgamma(k * alpha) - math.lgamma(k * alpha + n)
    for c in range(k):
        total += math.lgamma(alpha + stats[1 + c]) - math.lgamma(alpha)
    return total


@njit(cache=True)
def categorical_log_predictive(params, stats, x):
    if math.isnan(x):
        return 0.0
    k = int(params[0])
    alpha = params[1]
    return math.log((alpha + stats[1 + int(x)]) / (k * alpha + stats[0]))


@njit(cache=True)
def categorical_predictive_mean(params, stats):
    """The predictive mode (the imputed value of a categorical cell)."""
    k = int(params[0])
    best = 0
    for c in range(1, k):
        if stats[1 + c] > stats[1 + best]:
            best = c
    return float(best)


@njit(cache=True)
def categorical_predictive_sample(params, stats):
    k = int(params[0])
    alpha = params[1]
    u = np.random.random() * (k * alpha + stats[0])
    acc = 0.0
    for c in range(k):
        acc += alpha + stats[1 + c]
        if acc > u:
            return float(c)
    return float(k - 1)


# ------------------------------------------------------------------ estimators
def _observed(values):
    values = np.asarray(values, dtype=np.float64).ravel()
    return values[~np.isnan(values)]


class _Cell(BaseEstimator):
    def hyperparameter_grid(self):
        grid = np.asarray(self._grid(), dtype=np.float64)
        return grid, np.full(grid.shape[0], -math.log(grid.shape[0]))


class NormalGammaCell(_Cell):
    n_stats = 3

    def __init__(self, kappa=1.0, shape=1.0):
        self.kappa = kappa
        self.shape = shape

    def fit(self, values):
        x = _observed(values)
        self.mean_ = float(x.mean()) if x.size else 0.0
        self.var_ = float(x.var()) if x.size > 1 and x.var() > 0 else 1.0
        return self

    def kernel_params(self):
        return np.array([self.mean_, self.kappa, self.shape, self.shape * self.var_])

    def _grid(self):
        return [[self.mean_, k, self.shape, self.shape * self.var_ * s]
                for k in (0.1, 1.0) for s in (0.1, 0.3, 1.0)]


class BetaBernoulliCell(_Cell):
    n_stats = 2

    def __init__(self, a=1.0, b=1.0):
        self.a = a
        self.b = b

    def fit(self, values):
        return self

    def kernel_params(self):
        return np.array([self.a, self.b], dtype=np.float64)

    def _grid(self):
        return [[s * self.a, s * self.b] for s in (0.5, 1.0, 2.0)]


class PoissonGammaCell(_Cell):
    n_stats = 3

    def __init__(self, shape=1.0):
        self.shape = shape

    def fit(self, values):
        x = _observed(values)
        self.mean_ = max(float(x.mean()), 1e-3) if x.size else 1.0
        return self

    def kernel_params(self):
        return np.array([self.shape, self.shape / self.mean_])

    def _grid(self):
        return [[s * self.shape, s * self.shape / self.mean_] for s in (0.3, 1.0, 3.0)]


class DirichletCategoricalCell(_Cell):
    def __init__(self, alpha=1.0, n_categories=None):
        self.alpha = alpha
        self.n_categories = n_categories

    def fit(self, values):
        x = _observed(values)
        k = int(x.max()) + 1 if x.size else 1
        self.n_categories_ = max(k, self.n_categories or 0, 1)
        return self

    @property
    def n_stats(self):
        return 1 + self.n_categories_

    def kernel_params(self):
        return np.array([self.n_categories_, self.alpha], dtype=np.float64)

    def _grid(self):
        return [[self.n_categories_, s * self.alpha] for s in (0.5, 1.0, 2.0)]


CELL_MODELS = {"normal": NormalGammaCell, "bernoulli": BetaBernoulliCell,
               "poisson": PoissonGammaCell, "categorical": DirichletCategoricalCell}
