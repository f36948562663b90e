"""Loops over the cells or blocks of one column, on the type-code dispatch of :mod:`.cell_kernels`.

What the engines and the cell models share: the offset-0 forms of the kernels, the
statistics of values, the log marginals of blocks over a hyperparameter grid, and a
column's statistics and predictives per row cluster (CrossCat's columns,
InfiniteBiclustering's exact posterior).
"""

import numpy as np
from numba import njit

from .._core.specialise import specialise as _specialise, template

from .cell_kernels import (accumulate_at, cached_log_predictive_at, log_density_at,
                           log_marginal_at, log_predictive_at, posterior_draw_at,
                           predictive_cache_at, predictive_mean, predictive_sample)


# ---------------------------------------------------------------- offset-0 forms
@njit(cache=True)
def cell_add(code, params, stats, x, weight):
    """``accumulate_at`` at offset 0."""
    accumulate_at(code, params, np.int64(0), stats, np.int64(0), x, weight)


@njit(cache=True)
def cell_log_marginal(code, params, stats):
    """``log_marginal_at`` at offset 0."""
    return log_marginal_at(code, params, np.int64(0), stats, np.int64(0))


@njit(cache=True)
def cell_log_predictive(code, params, stats, x):
    """``log_predictive_at`` at offset 0."""
    return log_predictive_at(code, params, np.int64(0), stats, np.int64(0), x)


@njit(cache=True)
def cell_predictive_cache(code, params, stats, cache):
    """The one-cell predictive constants of ``stats`` into ``cache`` (``n_stats`` entries)."""
    predictive_cache_at(code, params, 0, stats, 0, cache, 0)


@njit(cache=True)
def cell_cached_log_predictive(code, params, stats, cache, x):
    """``cell_log_predictive`` from the constants of :func:`cell_predictive_cache`."""
    return cached_log_predictive_at(code, params, 0, stats, 0, cache, 0, x)


@njit(cache=True)
def cell_posterior_draw(code, params, stats, theta):
    """theta (``theta_size`` entries) drawn from the posterior of the cells ``stats``."""
    posterior_draw_at(code, params, np.int64(0), stats, np.int64(0), theta, np.int64(0))


@njit(cache=True)
def cell_log_density(code, theta, x):
    """``log f(x | theta)`` (0 for a NaN ``x``)."""
    return log_density_at(code, theta, 0, x)


# ---------------------------------------------------------------- one cell type
# Templates (:mod:`sklearn_trellis._core.specialise`) compiled per cell-type module with its
# own ``type_accumulate`` / ``type_log_marginal``: a model of one type compiles no other
# type's code (the dispatch over every type is typed and compiled whole).
@template
def typed_values_stats(params, values, n_stats):
    """Statistics of the cells ``values`` (1-d, NaN = missing)."""
    stats = np.zeros(n_stats)
    for x in values:
        if x == x:
            type_accumulate(params, np.int64(0), stats, np.int64(0), x, 1.0)
    return stats


@template
def typed_grid_log_marginals(grid_params, rows, out):
    """``out[g, r] = log_marginal(grid_params[g], rows[r])`` (0 for an empty row)."""
    for g in range(grid_params.shape[0]):
        for r in range(rows.shape[0]):
            out[g, r] = (type_log_marginal(grid_params[g], np.int64(0), rows[r], np.int64(0))
                         if rows[r, 0] > 0 else 0.0)
    return out


@template
def typed_grid_sum_log_marginals(grid_params, rows, out):
    """``out[g] = sum_r log_marginal(grid_params[g], rows[r])`` (the grid hyperprior's
    update; empty rows contribute 0)."""
    for g in range(grid_params.shape[0]):
        total = 0.0
        for r in range(rows.shape[0]):
            if rows[r, 0] > 0:
                total += type_log_marginal(grid_params[g], np.int64(0), rows[r], np.int64(0))
        out[g] = total
    return out


def one_type(cell_type):
    """The ``typed_*`` loops compiled for the cell-type module ``cell_type``
    (:mod:`.cell_types`): a namespace by template name."""
    return _specialise(globals(), {"type_accumulate": cell_type.accumulate,
                                   "type_log_marginal": cell_type.log_marginal})


# ---------------------------------------------------------------- one column per row cluster
@njit(cache=True)
def column_stats(code, params, x, labels, stats):
    """Fill ``stats`` (zeroed here) with the column's cell statistics per slot of ``labels``."""
    stats[:, :] = 0.0
    width = stats.shape[1]
    flat = stats.ravel()   # offsets, not a row view per cell
    for i in range(x.size):
        c = labels[i]
        if c >= 0:
            accumulate_at(code, params, np.int64(0), flat, c * width, x[i], 1.0)


@njit(cache=True)
def column_log_score(code, params, stats):
    """``sum_c log m(x_c)`` over the slots of ``stats`` (empty slots contribute 0)."""
    total = 0.0
    for c in range(stats.shape[0]):
        total += cell_log_marginal(code, params, stats[c])
    return total


@njit(cache=True)
def grid_log_marginals(code, grid, stats, out):
    """``out[g, s] = log m(stats[g, s])`` at grid point ``grid[g]`` (empty blocks: 0)."""
    for g in range(grid.shape[0]):
        for s in range(stats.shape[1]):
            out[g, s] = cell_log_marginal(code, grid[g], stats[g, s])
    return out


@njit(cache=True)
def rows_log_predictive(code, params, stats, x_new, out):
    """``out[i, c] += log p(x_new[i] | slot c)`` (NaN cells add 0)."""
    for i in range(x_new.size):
        for c in range(stats.shape[0]):
            out[i, c] += cell_log_predictive(code, params, stats[c], x_new[i])


@njit(cache=True)
def predictive_means(code, params, stats, out):
    """Posterior-predictive mean (categorical: mode) of a new cell in each slot of ``stats``."""
    for c in range(stats.shape[0]):
        out[c] = predictive_mean(code, params, stats[c])


@njit(cache=True)
def value_log_predictive(code, params, stats, values, out):
    """``out[c, a] = log p(x = values[a] | slot c)``."""
    for c in range(stats.shape[0]):
        for a in range(values.size):
            out[c, a] = cell_log_predictive(code, params, stats[c], values[a])


@njit(cache=True)
def predictive_draws(code, params, stats, slots, seed, out):
    """``out[i]`` drawn from the posterior predictive of slot ``slots[i]``."""
    np.random.seed(seed)
    for i in range(slots.size):
        out[i] = predictive_sample(code, params, stats[slots[i]])
