"""Numba kernels of the slice-sampler row step (:mod:`.slice`) on a cell-block view.

``params`` is a :class:`~sklearn_trellis.models.cell_blocks.CellBlocks` kernel vector
(layout in :mod:`sklearn_trellis.models._cell_block_kernels`) and ``stats`` the view
state's block table (``G`` blocks of ``W`` entries per slot, the cell statistics first).
theta holds one row per cluster: ``G`` blocks of ``T`` entries, the explicit
parameters of :func:`~sklearn_trellis.models._cell_kernels.posterior_draw_at`.
"""

import math

import numpy as np
from numba import njit, prange

from ...models._cell_block_kernels import blocks_forget_saved, blocks_refresh, blocks_reset
from ...models._cell_kernels import log_density_at, posterior_draw_at, theta_size
from ._gibbs_kernels import occupy_slots

_HEADER = 5


@njit(cache=True)
def theta_width(params):
    """``T``: entries of theta per group (the largest ``theta_size`` of the groups)."""
    n_groups, d, q = int(params[0]), int(params[1]), int(params[3])
    width = 1
    for g in range(n_groups):
        p0 = _HEADER + d + g * q
        width = max(width, theta_size(int(params[p0]), params, p0 + 2))
    return width


@njit(cache=True)
def _log_uniform():
    u = np.random.random()
    while u <= 0.0:
        u = np.random.random()
    return math.log(u)


@njit(cache=True)
def _log_gamma(shape):
    """``log g``, ``g ~ Gamma(shape, 1)``, finite for small shapes (``g' U^(1/shape)``)."""
    if shape >= 1.0:
        return math.log(np.random.gamma(shape, 1.0))
    return math.log(np.random.gamma(shape + 1.0, 1.0)) + _log_uniform() / shape


@njit(cache=True)
def slice_draws(params, stats, active, n_active, counts, cluster, alpha, seed):
    """The auxiliary variables of one slice step, given the partition (numba's generator).

    ``cluster[i]``: index ``0..K-1`` into ``active[:n_active]`` of row ``i``'s cluster.
    Draws ``(w_1..w_K, w_rest) ~ Dirichlet(n_1..n_K, alpha)``, ``u_i ~ U(0, w_{z_i})``,
    breaks ``w_rest`` into sticks ``v ~ Beta(1, alpha)`` until it is below ``min u``,
    draws theta of the occupied clusters from their posteriors and of the new sticks
    from the prior, and one uniform per row for its choice. Returns ``(log_w (K'),
    log_u (n), theta (K', G * T), choice (n))``.
    """
    np.random.seed(seed)
    n = cluster.size
    k_old = n_active
    log_g = np.empty(k_old + 1)
    for k in range(k_old):
        log_g[k] = _log_gamma(float(counts[active[k]]))
    log_g[k_old] = _log_gamma(alpha)
    top = log_g.max()
    total = 0.0
    for k in range(k_old + 1):
        total += math.exp(log_g[k] - top)
    log_norm = top + math.log(total)
    log_u = np.empty(n)
    smallest = np.inf
    for i in range(n):
        log_u[i] = _log_uniform() + log_g[cluster[i]] - log_norm
        smallest = min(smallest, log_u[i])
    # sticks of the rest: v ~ Beta(1, alpha) is 1 - U^(1/alpha), so log(1 - v) = log(U) / alpha
    log_rest = log_g[k_old] - log_norm
    sticks = [0.0]
    sticks.clear()
    while log_rest > smallest:
        log_keep = _log_uniform() / alpha
        sticks.append(log_rest + math.log(-math.expm1(log_keep)) if log_keep < 0.0
                      else -np.inf)
        log_rest += log_keep
    n_clusters = k_old + len(sticks)
    log_w = np.empty(n_clusters)
    for k in range(k_old):
        log_w[k] = log_g[k] - log_norm
    for k in range(len(sticks)):
        log_w[k_old + k] = sticks[k]
    n_groups, d, width, q = int(params[0]), int(params[1]), int(params[2]), int(params[3])
    t = theta_width(params)
    theta = np.zeros((n_clusters, n_groups * t))
    empty = np.zeros(width)
    for k in range(n_clusters):
        for g in range(n_groups):
            p0 = _HEADER + d + g * q
            if k < k_old:
                posterior_draw_at(int(params[p0]), params, p0 + 2, stats[active[k]],
                                  g * width, theta[k], g * t)
            else:
                posterior_draw_at(int(params[p0]), params, p0 + 2, empty, 0, theta[k], g * t)
    choice = np.empty(n)
    for i in range(n):
        choice[i] = np.random.random()
    return log_w, log_u, theta, choice


@njit(cache=True, inline='always')
def _assign_row(i, data, log_w, log_u, theta, choice, cluster, codes, offsets, out):
    """Row ``i``'s new cluster among ``{k : w_k > u_i}`` with probability proportional to
    ``prod_j f(x_ij | theta_k)`` (NaN cells skipped), chosen by the pre-drawn ``choice[i]``."""
    n_clusters = log_w.size
    d = data.shape[1]
    scores = np.empty(n_clusters)
    largest = -np.inf
    for k in range(n_clusters):
        if log_w[k] > log_u[i]:
            s = 0.0
            for j in range(d):
                s += log_density_at(codes[j], theta[k], offsets[j], data[i, j])
            scores[k] = s
            if s > largest:
                largest = s
        else:
            scores[k] = -np.inf
    if largest == -np.inf:
        # no candidate has a positive density (a parameter draw at the edge of its
        # support): the row keeps its cluster, a candidate by construction
        out[i] = cluster[i]
        return
    total = 0.0
    for k in range(n_clusters):
        if scores[k] > -np.inf:
            scores[k] = math.exp(scores[k] - largest)
            total += scores[k]
        else:
            scores[k] = 0.0
    u = choice[i] * total
    chosen = -1
    acc = 0.0
    for k in range(n_clusters):
        if scores[k] > 0.0:
            chosen = k
            acc += scores[k]
            if u < acc:
                break
    out[i] = chosen


@njit(cache=True)
def _column_layout(params, theta):
    """Type code and theta offset of each column."""
    d, q = int(params[1]), int(params[3])
    t = theta.shape[1] // max(int(params[0]), 1)
    codes = np.empty(d, np.int64)
    offsets = np.empty(d, np.int64)
    for j in range(d):
        g = int(params[_HEADER + j])
        codes[j] = int(params[_HEADER + d + g * q])
        offsets[j] = g * t
    return codes, offsets


@njit(cache=True, parallel=True)
def slice_assign(params, data, log_w, log_u, theta, choice, cluster, out):
    """``out[i]``: row ``i``'s new cluster (:func:`_assign_row`), rows in parallel.

    Each row reads only its own pre-drawn uniform, so the result does not depend on
    the number of threads (and equals :func:`slice_assign_serial`'s).
    """
    codes, offsets = _column_layout(params, theta)
    for i in prange(data.shape[0]):
        _assign_row(i, data, log_w, log_u, theta, choice, cluster, codes, offsets, out)


@njit(cache=True)
def slice_assign_serial(params, data, log_w, log_u, theta, choice, cluster, out):
    """:func:`slice_assign` on the calling thread (small views: no parallel region)."""
    codes, offsets = _column_layout(params, theta)
    for i in range(data.shape[0]):
        _assign_row(i, data, log_w, log_u, theta, choice, cluster, codes, offsets, out)


@njit(cache=True)
def reset_partition(params, data, compact, labels, counts, active, where, free, meta, stats,
                    shared, work):
    """A view state holding the compact labels ``compact`` (``0..K-1``, capacity > K).

    The engine's ``rebuild`` without its per-item ``add`` (and the block caches that
    each ``add`` updates): the bookkeeping is laid out directly and ``blocks_refresh``
    computes every occupied block from its items once. The items' statistics cached
    in ``work`` stay (they do not depend on the partition); the row saved by the last
    ``remove`` is dropped (its slot now holds other items).
    """
    for c in range(stats.shape[0]):
        blocks_reset(params, stats, c)
    shared[:] = 0.0
    occupy_slots(compact, counts, active, where, free, meta)
    labels[:] = compact
    blocks_refresh(params, data, labels, stats, shared, active, meta[0])
    blocks_forget_saved(params, work)
