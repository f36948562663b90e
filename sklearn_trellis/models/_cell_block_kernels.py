"""Numba kernels of :class:`.cell_blocks.CellBlocks` (the Gibbs engine's likelihood protocol).

``params`` layout (float64): ``[G, D, W, Q, group of each column (D), then per group
g: [type code, cell params (Q - 1, zero-padded)]]``. ``stats`` rows: ``G`` blocks of
``W`` entries, the cell statistics (``W - 1``, zero-padded) then the cached
``log_marginal`` of the block. ``work``: the prepared item's statistics per group
(``G * W``) then ``W`` entries of scratch.
"""

from numba import njit

from ._cell_kernels import cell_add, cell_log_marginal

_HEADER = 4


@njit(cache=True)
def _group_params(params, g):
    n_columns = int(params[1])
    width = int(params[3])
    start = _HEADER + n_columns + g * width
    return int(params[start]), params[start + 1:start + width]


@njit(cache=True)
def blocks_reset(params, stats, c):
    stats[c, :] = 0.0


@njit(cache=True)
def blocks_prepare(params, data, labels, stats, shared, work, i):
    """The statistics of item ``i``'s cells in each group, into ``work[:G * W]``."""
    n_groups, n_columns, width = int(params[0]), int(params[1]), int(params[2])
    work[:n_groups * width] = 0.0
    for j in range(n_columns):
        g = int(params[_HEADER + j])
        code, p = _group_params(params, g)
        cell_add(code, p, work[g * width:(g + 1) * width], data[i, j], 1.0)


@njit(cache=True)
def _cache_log_marginals(params, stats, c):
    n_groups, width = int(params[0]), int(params[2])
    for g in range(n_groups):
        base = g * width
        code, p = _group_params(params, g)
        block = stats[c, base:base + width - 1]
        stats[c, base + width - 1] = cell_log_marginal(code, p, block) if block[0] > 0 else 0.0


@njit(cache=True)
def _update(params, data, stats, c, i, sign):
    # from the item's cells, not from ``work``: the whole-data helpers of
    # ClusterLikelihood call add without prepare
    n_columns, width = int(params[1]), int(params[2])
    for j in range(n_columns):
        g = int(params[_HEADER + j])
        code, p = _group_params(params, g)
        cell_add(code, p, stats[c, g * width:(g + 1) * width], data[i, j], sign)
    _cache_log_marginals(params, stats, c)


@njit(cache=True)
def blocks_add(params, data, stats, shared, work, c, i):
    _update(params, data, stats, c, i, 1.0)


@njit(cache=True)
def blocks_remove(params, data, stats, shared, work, c, i):
    _update(params, data, stats, c, i, -1.0)


@njit(cache=True)
def blocks_log_predictive(params, data, stats, shared, work, c, i):
    """``sum_g log m(block_g + item's cells) - log m(block_g)`` (the item prepared)."""
    n_groups, width = int(params[0]), int(params[2])
    scratch = work[n_groups * width:(n_groups + 1) * width]
    total = 0.0
    for g in range(n_groups):
        base = g * width
        if work[base] == 0.0:
            continue
        for s in range(width - 1):
            scratch[s] = stats[c, base + s] + work[base + s]
        code, p = _group_params(params, g)
        total += cell_log_marginal(code, p, scratch) - stats[c, base + width - 1]
    return total


@njit(cache=True)
def blocks_log_cluster(params, stats, shared, c):
    n_groups, width = int(params[0]), int(params[2])
    total = 0.0
    for g in range(n_groups):
        total += stats[c, g * width + width - 1]
    return total


@njit(cache=True)
def blocks_refresh(params, data, labels, stats, shared, active, n_active):
    """Recompute the occupied slots from their items (no drift of float sums; new params)."""
    n_columns, width = int(params[1]), int(params[2])
    for a in range(n_active):
        stats[active[a], :] = 0.0
    for i in range(labels.size):
        c = labels[i]
        if c < 0:
            continue
        for j in range(n_columns):
            g = int(params[_HEADER + j])
            code, p = _group_params(params, g)
            cell_add(code, p, stats[c, g * width:(g + 1) * width], data[i, j], 1.0)
    for a in range(n_active):
        _cache_log_marginals(params, stats, active[a])


@njit(cache=True)
def block_table(params, data, row_labels, n_row_clusters, out):
    """Cell statistics of every (row cluster, group) block: ``out (K, G, W)`` (cache not filled)."""
    n_columns, width = int(params[1]), int(params[2])
    out[:] = 0.0
    for i in range(row_labels.size):
        r = row_labels[i]
        for j in range(n_columns):
            g = int(params[_HEADER + j])
            code, p = _group_params(params, g)
            cell_add(code, p, out[r, g, :width], data[i, j], 1.0)
    return out


@njit(cache=True)
def sum_block_log_marginals(params, table):
    """``sum`` over the blocks of ``table (K, G, W)`` of their cell ``log_marginal``."""
    total = 0.0
    width = int(params[2])
    for r in range(table.shape[0]):
        for g in range(table.shape[1]):
            if table[r, g, 0] > 0:
                code, p = _group_params(params, g)
                total += cell_log_marginal(code, p, table[r, g, :width - 1])
    return total
