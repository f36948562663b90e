"""Numba kernels of :class:`.cell_blocks.CellBlocks` (the Gibbs engine's likelihood protocol).

``params`` layout (float64): ``[G, D, W, Q, group of each column (D), then per group
g: [type code, cell params (Q - 1, zero-padded)]]``. ``stats`` rows: ``G`` blocks of
``W`` entries, the cell statistics (``W - 1``, zero-padded) then the cached
``log_marginal`` of the block. ``work``: the prepared item's statistics per group
(``G * W``), ``W`` entries of scratch, then ``1 + index`` of the prepared item
(0: none).

The cell loops use the offset forms of :mod:`._cell_kernels` (no array views per
cell): one pass over the ``D`` cells of the item in ``prepare``; ``add``,
``remove`` and ``log_predictive`` then cost ``O(G)`` cell marginals.
"""

from numba import njit

from ._cell_kernels import accumulate_at, log_marginal_at

_HEADER = 4


@njit(cache=True)
def _param_start(params, g):
    """Offset of group ``g``'s ``[type code, cell params]`` in ``params``."""
    return _HEADER + int(params[1]) + g * int(params[3])


@njit(cache=True)
def _accumulate_item(params, data, i, out, sign):
    """Add (``sign`` +1) or subtract the cells of item ``i`` to the group blocks of ``out`` (1-d)."""
    n_columns, width, q = int(params[1]), int(params[2]), int(params[3])
    start = _HEADER + n_columns
    for j in range(n_columns):
        g = int(params[_HEADER + j])
        p0 = start + g * q
        accumulate_at(int(params[p0]), params, p0 + 1, out, g * width, data[i, j], sign)


@njit(cache=True)
def _cache_log_marginals(params, row):
    n_groups, width = int(params[0]), int(params[2])
    for g in range(n_groups):
        p0 = _param_start(params, g)
        row[g * width + width - 1] = log_marginal_at(int(params[p0]), params, p0 + 1, row,
                                                     g * width)


@njit(cache=True)
def blocks_reset(params, stats, c):
    stats[c, :] = 0.0


@njit(cache=True)
def _prepare(params, data, work, i):
    n_groups, width = int(params[0]), int(params[2])
    work[:n_groups * width] = 0.0
    _accumulate_item(params, data, i, work, 1.0)
    work[(n_groups + 1) * width] = i + 1.0


@njit(cache=True)
def blocks_prepare(params, data, labels, stats, shared, work, i):
    """The statistics of item ``i``'s cells in each group, into ``work[:G * W]``."""
    _prepare(params, data, work, i)


@njit(cache=True)
def _update(params, data, stats, work, c, i, sign):
    n_groups, width = int(params[0]), int(params[2])
    row = stats[c]
    if work[(n_groups + 1) * width] != i + 1.0:
        # not prepared (the whole-data helpers of ClusterLikelihood add without prepare)
        _prepare(params, data, work, i)
    for g in range(n_groups):
        base = g * width
        if work[base] == 0.0:
            continue
        for s in range(width - 1):
            row[base + s] += sign * work[base + s]
        p0 = _param_start(params, g)
        row[base + width - 1] = log_marginal_at(int(params[p0]), params, p0 + 1, row, base)


@njit(cache=True)
def blocks_add(params, data, stats, shared, work, c, i):
    _update(params, data, stats, work, c, i, 1.0)


@njit(cache=True)
def blocks_remove(params, data, stats, shared, work, c, i):
    _update(params, data, stats, work, c, i, -1.0)


@njit(cache=True)
def blocks_log_predictive(params, data, stats, shared, work, c, i):
    """``sum_g log m(block_g + item's cells) - log m(block_g)`` (the item prepared)."""
    n_groups, width = int(params[0]), int(params[2])
    scratch = n_groups * width
    total = 0.0
    for g in range(n_groups):
        base = g * width
        if work[base] == 0.0:
            continue
        for s in range(width - 1):
            work[scratch + s] = stats[c, base + s] + work[base + s]
        p0 = _param_start(params, g)
        total += (log_marginal_at(int(params[p0]), params, p0 + 1, work, scratch)
                  - stats[c, base + width - 1])
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
    for a in range(n_active):
        stats[active[a], :] = 0.0
    for i in range(labels.size):
        if labels[i] >= 0:
            _accumulate_item(params, data, i, stats[labels[i]], 1.0)
    for a in range(n_active):
        _cache_log_marginals(params, stats[active[a]])


@njit(cache=True)
def block_table(params, data, row_labels, n_row_clusters, out):
    """Cell statistics of every (row cluster, group) block: ``out (K, G * W)`` (cache filled)."""
    out[:] = 0.0
    for i in range(row_labels.size):
        _accumulate_item(params, data, i, out[row_labels[i]], 1.0)
    for r in range(n_row_clusters):
        _cache_log_marginals(params, out[r])
    return out


@njit(cache=True)
def sum_block_log_marginals(params, table):
    """Sum of the cached block marginals of ``table (K, G * W)`` (from :func:`block_table`)."""
    n_groups, width = int(params[0]), int(params[2])
    total = 0.0
    for r in range(table.shape[0]):
        for g in range(n_groups):
            total += table[r, g * width + width - 1]
    return total
