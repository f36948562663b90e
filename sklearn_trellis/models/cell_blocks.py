"""PROVISIONAL (crosscat branch, replaced by the bicluster branch's module on merge).

Cell-block likelihood: items are rows of a table with mixed cell types; each
active column keeps its own cell statistics per cluster slot.

Kernel params: ``[d, type (d), poff (d), plen (d), soff (d), slen (d), active (d),
cell params...]``; stats rows hold every column's segment (``soff``, ``slen``).
"""

import numpy as np
from numba import njit

from . import cells
from .likelihood import ClusterLikelihood, GibbsKernels, no_prepare, no_refresh, zero_global

CELL_TYPES = ("normal", "bernoulli", "poisson", "categorical")


@njit(cache=True)
def cell_add(t, p, s, x, w):
    if t == 0:
        cells.normal_add_cell(p, s, x, w)
    elif t == 1:
        cells.bernoulli_add_cell(p, s, x, w)
    elif t == 2:
        cells.poisson_add_cell(p, s, x, w)
    else:
        cells.categorical_add_cell(p, s, x, w)


@njit(cache=True)
def cell_log_marginal(t, p, s):
    if t == 0:
        return cells.normal_log_marginal(p, s)
    elif t == 1:
        return cells.bernoulli_log_marginal(p, s)
    elif t == 2:
        return cells.poisson_log_marginal(p, s)
    return cells.categorical_log_marginal(p, s)


@njit(cache=True)
def cell_log_predictive(t, p, s, x):
    if t == 0:
        return cells.normal_log_predictive(p, s, x)
    elif t == 1:
        return cells.bernoulli_log_predictive(p, s, x)
    elif t == 2:
        return cells.poisson_log_predictive(p, s, x)
    return cells.categorical_log_predictive(p, s, x)


@njit(cache=True)
def cell_predictive_mean(t, p, s):
    if t == 0:
        return cells.normal_predictive_mean(p, s)
    elif t == 1:
        return cells.bernoulli_predictive_mean(p, s)
    elif t == 2:
        return cells.poisson_predictive_mean(p, s)
    return cells.categorical_predictive_mean(p, s)


@njit(cache=True)
def cell_predictive_sample(t, p, s):
    if t == 0:
        return cells.normal_predictive_sample(p, s)
    elif t == 1:
        return cells.bernoulli_predictive_sample(p, s)
    elif t == 2:
        return cells.poisson_predictive_sample(p, s)
    return cells.categorical_predictive_sample(p, s)


@njit(cache=True)
def block_reset(params, stats, c):
    stats[c, :] = 0.0


@njit(cache=True)
def _block_update(params, data, stats, c, i, w):
    d = int(params[0])
    for j in range(d):
        if params[1 + 6 * d - d + j] == 0.0:  # active flag
            continue
        t = int(params[1 + j])
        p0 = int(params[1 + d + j])
        s0 = int(params[1 + 3 * d + j])
        p = params[p0:p0 + int(params[1 + 2 * d + j])]
        s = stats[c, s0:s0 + int(params[1 + 4 * d + j])]
        cell_add(t, p, s, data[i, j], w)


@njit(cache=True)
def block_add(params, data, stats, shared, work, c, i):
    _block_update(params, data, stats, c, i, 1.0)


@njit(cache=True)
def block_remove(params, data, stats, shared, work, c, i):
    _block_update(params, data, stats, c, i, -1.0)


@njit(cache=True)
def block_log_predictive(params, data, stats, shared, work, c, i):
    d = int(params[0])
    total = 0.0
    for j in range(d):
        if params[1 + 5 * d + j] == 0.0:
            continue
        t = int(params[1 + j])
        p0 = int(params[1 + d + j])
        s0 = int(params[1 + 3 * d + j])
        p = params[p0:p0 + int(params[1 + 2 * d + j])]
        s = stats[c, s0:s0 + int(params[1 + 4 * d + j])]
        total += cell_log_predictive(t, p, s, data[i, j])
    return total


@njit(cache=True)
def block_log_cluster(params, stats, shared, c):
    d = int(params[0])
    total = 0.0
    for j in range(d):
        if params[1 + 5 * d + j] == 0.0:
            continue
        t = int(params[1 + j])
        p0 = int(params[1 + d + j])
        s0 = int(params[1 + 3 * d + j])
        p = params[p0:p0 + int(params[1 + 2 * d + j])]
        s = stats[c, s0:s0 + int(params[1 + 4 * d + j])]
        total += cell_log_marginal(t, p, s)
    return total


class CellBlockLikelihood(ClusterLikelihood):
    """Rows of a mixed-type table; one statistics segment per column (PROVISIONAL)."""

    kernels = GibbsKernels(block_reset, no_prepare, block_add, block_remove,
                           block_log_predictive, block_log_cluster, zero_global, no_refresh)

    def __init__(self, cell_models):
        self.cell_models = cell_models

    def fit(self, X, y=None):
        self.n_features_in_ = len(self.cell_models)
        slen = [m.n_stats for m in self.cell_models]
        self.stat_offsets_ = np.concatenate([[0], np.cumsum(slen)[:-1]]).astype(int)
        self.stat_lengths_ = np.array(slen, dtype=int)
        self.types_ = np.array([CELL_TYPES.index(_type_name(m)) for m in self.cell_models])
        return self

    @property
    def n_stats(self):
        return int(self.stat_lengths_.sum())

    def layout(self, column_params, active):
        """Kernel params for per-column cell params ``column_params`` and an active mask."""
        d = len(column_params)
        plen = np.array([len(p) for p in column_params], dtype=int)
        header = 1 + 6 * d
        poff = header + np.concatenate([[0], np.cumsum(plen)[:-1]]).astype(int)
        return np.concatenate([[d], self.types_, poff, plen, self.stat_offsets_,
                               self.stat_lengths_, np.asarray(active, dtype=np.float64),
                               *column_params]).astype(np.float64)

    def kernel_params(self):
        d = len(self.cell_models)
        return self.layout([m.kernel_params() for m in self.cell_models], np.ones(d))


def _type_name(model):
    for name, cls in cells.CELL_MODELS.items():
        if isinstance(model, cls):
            return name
    raise TypeError(f"unknown cell model {model!r}")
