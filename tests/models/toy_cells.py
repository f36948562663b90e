"""A toy cell type, as a newcomer would write one: exponential cells with a Gamma prior.

``x ~ Exponential(rate)``, ``rate ~ Gamma(a0, rate=b0)``. The kernels follow the
protocol of :mod:`sklearn_trellis.models.cell_kernels`; registered as
``CELL_MODELS["exponential"] = ExponentialCells`` and with the dispatch regenerated
(``python -m sklearn_trellis.models._cell_codegen``), every cell engine runs it.

params ``[a0, b0]``; stats ``[n, sum(x)]``; predictive cache (a Lomax density)
``[log(a_n) + a_n log(b_n), b_n]``; theta ``[rate, log rate]``.
"""

import math
import sys

import numpy as np
from numba import njit

from sklearn_trellis.models.cells import CellModel


@njit(cache=True)
def accumulate(params, p0, stats, s0, x, weight):
    stats[s0] += weight
    stats[s0 + 1] += weight * x


@njit(cache=True)
def _log_marginal_of(params, p0, n, total):
    a0, b0 = params[p0], params[p0 + 1]
    return (a0 * math.log(b0) - math.lgamma(a0) + math.lgamma(a0 + n)
            - (a0 + n) * math.log(b0 + total))


@njit(cache=True)
def log_marginal(params, p0, stats, s0):
    return _log_marginal_of(params, p0, stats[s0], stats[s0 + 1])


@njit(cache=True)
def log_predictive(params, p0, stats, s0, x):
    n, total = stats[s0], stats[s0 + 1]
    return _log_marginal_of(params, p0, n + 1.0, total + x) - _log_marginal_of(params, p0, n,
                                                                                total)


@njit(cache=True)
def predictive_cache(params, p0, stats, s0, cache, c0):
    a_n, b_n = params[p0] + stats[s0], params[p0 + 1] + stats[s0 + 1]
    cache[c0] = math.log(a_n) + a_n * math.log(b_n)
    cache[c0 + 1] = b_n


@njit(cache=True)
def cached_log_predictive(params, p0, stats, s0, cache, c0, x):
    return cache[c0] - (params[p0] + stats[s0] + 1.0) * math.log(cache[c0 + 1] + x)


@njit(cache=True)
def predictive_mean(params, stats):
    a_n, b_n = params[0] + stats[0], params[1] + stats[1]
    return b_n / (a_n - 1.0) if a_n > 1.0 else np.inf


@njit(cache=True)
def predictive_sample(params, stats):
    rate = np.random.gamma(params[0] + stats[0], 1.0 / (params[1] + stats[1]))
    return np.random.exponential(1.0 / rate)


@njit(cache=True)
def theta_size(params, p0):
    return 2


@njit(cache=True)
def posterior_draw(params, p0, stats, s0, theta, t0):
    rate = np.random.gamma(params[p0] + stats[s0], 1.0 / (params[p0 + 1] + stats[s0 + 1]))
    theta[t0] = rate
    theta[t0 + 1] = math.log(rate)


@njit(cache=True)
def log_kernel(theta, t0, x):
    return theta[t0 + 1] - theta[t0] * x


@njit(cache=True)
def add_log_kernels(theta, t0, x, i0, i1, out):
    rate, log_rate = theta[t0], theta[t0 + 1]
    for i in range(i0, i1):
        if x[i] == x[i]:
            out[i - i0] += log_rate - rate * x[i]


class ExponentialCells(CellModel):
    """Positive cells, ``x ~ Exponential(rate)`` with a Gamma(shape, rate=shape * mean) prior
    on ``rate`` (prior mean of ``1 / rate`` about ``mean``), fixed hyperparameters."""

    cell_type = sys.modules[__name__]
    n_stats = 2
    _param_names = {"shape": 0, "rate": 1}

    def __init__(self, shape=2.0, mean=None):
        self.shape = shape
        self.mean = mean

    def _check_domain(self, observed):
        if np.any(observed <= 0):
            raise ValueError("ExponentialCells needs positive cells (NaN for missing).")

    def fit(self, values, y=None):
        values = self.check_values(values)
        observed = values[~np.isnan(values)]
        self.mean_ = float(observed.mean()) if self.mean is None else float(self.mean)
        self.grid_scale_ = np.array([1.0])
        return self

    def _grid_params(self, g):
        return np.array([float(self.shape), float(self.shape) * self.mean_])

    def kernel_params(self):
        self._check_fitted()
        return self._grid_params(0)
