"""Numba kernels of :class:`.cell_blocks.CellBlocks` (the Gibbs engine's likelihood protocol).

``params`` layout (float64): ``[G, D, W, Q, S, group of each column (D), then per group
g: [type code, its column (one-column group) or -1, cell params (Q - 2, zero-padded)]]``.
``S`` is the largest number of cell statistics and ``W = 2 S + 1``. ``stats`` rows:
``G`` blocks of ``W`` entries: the cell statistics (``S``, zero-padded), the block's
one-cell predictive constants (``S``, :func:`.cell_kernels.predictive_cache_at`) and
its ``log_marginal``.

A one-column group (every group of a CrossCat view) has at most one cell per item, so
its block keeps the predictive constants up to date (O(1) per add / remove, no
lgamma of the block) and scores the item's cell from them (a few flops, at most one
log); its ``log_marginal`` is computed when ``log_cluster`` asks (split-merge
acceptance, the log joint). A group of several columns (biclustering) keeps the
block's ``log_marginal`` and scores an item's cells by the marginal difference
``log m(block + cells) - log m(block)``.

``work``: the prepared item's statistics per group (``G * S``), ``S`` entries of
scratch, ``1 + index`` of the prepared item (0: none), ``1 + slot`` and ``1 + item`` of
the row saved by the last ``remove`` (0: none), that row (``G * W``), then, when it is longer, a
cache of the first ``m`` items' group statistics: ``m`` flags (1: cached) and ``m``
rows of ``G * S`` (``m`` follows from the length). An item's statistics depend on
its cells and the grouping only (the gridded hyperparameters do not enter them), so
a state's cache stays valid while it lives and ``prepare`` is a copy of ``G * S``
numbers after the first.

The saved row makes a Gibbs scan's common case cheap: an item removed from its
cluster and put back into it gets the cluster's row as it was (exactly the state
before the removal) instead of a second update. Any other ``add`` or ``remove``
forgets the saved row, and the engines change rows only through them or on slots
that are empty (``reset``) or hold other items, so a restore always finds the row it
saved.
"""

import numpy as np
from numba import njit

from .._core.specialise import specialise as _specialise, template
from .cell_kernels import (code_of, table_accumulate_at, table_cached_log_predictive_at,
                           table_log_marginal_at, table_predictive_cache_at, type_set_bindings)

_HEADER = 5

# The kernels are templates (:mod:`sklearn_trellis._core.specialise`) compiled per set of
# cell types in the table, on the ``table_*`` dispatch of :mod:`.cell_kernels` (see
# :func:`specialise`): an absent type's code is neither typed nor compiled (a one-type
# table, as biclustering's, compiles that type's functions alone).
# The offset helpers are inlined (``inline='always'``): as their own functions each was
# one more compilation for the Gibbs engine's kernels to link and optimise again;
# ``_update``, ``_prepare`` and ``_cache_block`` stay calls (one compiled body for all
# their call sites).


@njit(cache=True, inline='always')
def _param_start(params, g):
    """Offset of group ``g``'s ``[type code, column, cell params]`` in ``params``."""
    return _HEADER + int(params[1]) + g * int(params[3])


@template
def _accumulate_item(params, data, i, out, width, sign):
    """Add (``sign`` +1) or subtract the cells of item ``i`` to the group blocks of ``out``
    (1-d, one block of ``width`` entries per group)."""
    n_columns, q = int(params[1]), int(params[3])
    start = _HEADER + n_columns
    for j in range(n_columns):
        g = int(params[_HEADER + j])
        p0 = start + g * q
        table_accumulate_at(int(params[p0]), params, p0 + 2, out, g * width, data[i, j], sign)


@template
def _cache_block(params, row, g, everything):
    """The cached values of block ``g`` of ``row``: the predictive constants of a one-column
    group, the ``log_marginal`` of the others (of both with ``everything``)."""
    width, n_stats = int(params[2]), int(params[4])
    base = g * width
    p0 = _param_start(params, g)
    code = int(params[p0])
    single = params[p0 + 1] >= 0
    if single:
        table_predictive_cache_at(code, params, p0 + 2, row, base, row, base + n_stats)
    if everything or not single:
        row[base + width - 1] = table_log_marginal_at(code, params, p0 + 2, row, base)


@template(inline='always')
def _cache_row(params, row, everything):
    for g in range(int(params[0])):
        _cache_block(params, row, g, everything)


@template
def blocks_reset(params, stats, c):
    """The empty cluster: zero statistics, the prior's predictive constants."""
    stats[c, :] = 0.0
    _cache_row(params, stats[c], np.bool_(False))


@njit(cache=True, inline='always')
def _head(params):
    """Offset of the items' cache in ``work``."""
    n_groups, width, n_stats = int(params[0]), int(params[2]), int(params[4])
    return n_groups * (n_stats + width) + n_stats + 3


@template
def _prepare(params, data, work, i):
    n_groups, n_stats = int(params[0]), int(params[4])
    size = n_groups * n_stats
    head = _head(params)
    n_cached = (work.size - head) // (size + 1)
    # loops, not slice copies (numba compiles a slice assignment for seconds); the
    # cache (from head on) never overlaps the item's statistics work[:size]
    if i < n_cached and work[head + i] != 0.0:
        start = head + n_cached + i * size
        for s in range(size):
            work[s] = work[start + s]
    else:
        for s in range(size):
            work[s] = 0.0
        _accumulate_item(params, data, i, work, n_stats, 1.0)
        if i < n_cached:
            start = head + n_cached + i * size
            for s in range(size):
                work[start + s] = work[s]
            work[head + i] = 1.0
    work[size + n_stats] = i + 1.0


@template(inline='always')
def blocks_prepare(params, data, labels, stats, shared, work, i):
    """The statistics of item ``i``'s cells in each group, into ``work[:G * S]``."""
    _prepare(params, data, work, i)


@template
def _update(params, data, stats, work, c, i, sign):
    n_groups, width, n_stats = int(params[0]), int(params[2]), int(params[4])
    row = stats[c]
    prepared = n_groups * n_stats + n_stats
    if work[prepared] != i + 1.0:
        # not prepared (the whole-data helpers of ClusterLikelihood add without prepare)
        _prepare(params, data, work, i)
    saved = prepared + 1
    n_row = n_groups * width
    if sign > 0.0 and work[saved] == c + 1.0 and work[saved + 1] == i + 1.0:
        # the item goes back where the last remove took it from
        for s in range(n_row):
            row[s] = work[saved + 2 + s]
        work[saved] = 0.0
        return
    work[saved] = 0.0
    if sign < 0.0:
        for s in range(n_row):
            work[saved + 2 + s] = row[s]
        work[saved] = c + 1.0
        work[saved + 1] = i + 1.0
    for g in range(n_groups):
        item = g * n_stats
        if work[item] == 0.0:
            continue
        base = g * width
        for s in range(n_stats):
            row[base + s] += sign * work[item + s]
        if row[base] == 0.0:
            # an emptied block is exactly the empty one (no rounding left in its sums)
            for s in range(n_stats):
                row[base + s] = 0.0
        _cache_block(params, row, g, np.bool_(False))


@template(inline='always')
def blocks_add(params, data, stats, shared, work, c, i):
    _update(params, data, stats, work, c, i, 1.0)


@template(inline='always')
def blocks_remove(params, data, stats, shared, work, c, i):
    _update(params, data, stats, work, c, i, -1.0)


@template
def blocks_log_predictive(params, data, stats, shared, work, c, i):
    """``sum_g log p(item's cells of g | block (c, g))`` (the item prepared)."""
    n_groups, width, q, n_stats = int(params[0]), int(params[2]), int(params[3]), int(params[4])
    start = _HEADER + int(params[1])
    scratch = n_groups * n_stats
    row = stats[c]
    cells = data[i]
    total = 0.0
    for g in range(n_groups):
        item = g * n_stats
        if work[item] == 0.0:
            continue
        base = g * width
        p0 = start + g * q
        code = int(params[p0])
        column = int(params[p0 + 1])
        if column >= 0:
            total += table_cached_log_predictive_at(code, params, p0 + 2, row, base, row,
                                                    base + n_stats, cells[column])
            continue
        for s in range(n_stats):
            work[scratch + s] = row[base + s] + work[item + s]
        total += table_log_marginal_at(code, params, p0 + 2, work, scratch) - row[base + width - 1]
    return total


@template
def blocks_log_cluster(params, stats, shared, c):
    n_groups, width = int(params[0]), int(params[2])
    total = 0.0
    for g in range(n_groups):
        base = g * width
        p0 = _param_start(params, g)
        if params[p0 + 1] >= 0:
            total += table_log_marginal_at(int(params[p0]), params, p0 + 2, stats[c], base)
        else:
            total += stats[c, base + width - 1]
    return total


@template(nogil=True)
def blocks_refresh(params, data, labels, stats, shared, active, n_active):
    """Recompute the occupied slots from their items (no drift of float sums; new params)."""
    width = int(params[2])
    for a in range(n_active):
        stats[active[a], :] = 0.0
    for i in range(labels.size):
        if labels[i] >= 0:
            _accumulate_item(params, data, i, stats[labels[i]], width, 1.0)
    for a in range(n_active):
        _cache_row(params, stats[active[a]], np.bool_(False))


@template
def block_table(params, data, row_labels, n_row_clusters, out):
    """Cell statistics of every (row cluster, group) block: ``out (K, G * W)`` (all cached)."""
    width = int(params[2])
    out[:] = 0.0
    for i in range(row_labels.size):
        _accumulate_item(params, data, i, out[row_labels[i]], width, 1.0)
    for r in range(n_row_clusters):
        _cache_row(params, out[r], np.bool_(True))
    return out


@njit(cache=True)
def sum_block_log_marginals(params, table):
    """Sum of the block marginals of ``table (K, G * W)`` (from :func:`block_table`)."""
    n_groups, width = int(params[0]), int(params[2])
    total = 0.0
    for r in range(table.shape[0]):
        for g in range(n_groups):
            total += table[r, g * width + width - 1]
    return total


@template
def new_rows_log_predictive(params, table, data_new, out):
    """``out[m, c] = sum_g log p(new row m's cells of group g | block (c, g) of table)``.

    ``table`` (``K, G * W``) as :func:`block_table` fills it (every block cached);
    an all-zero row is an empty cluster (its blocks score the prior predictive).
    Each new row is scored alone, as the Gibbs scan scores a row: its group
    statistics in ``work``, then :func:`blocks_log_predictive` (NaN cells add 0).
    """
    n_groups, n_stats = int(params[0]), int(params[4])
    size = n_groups * n_stats
    work = np.zeros(size + n_stats)     # the row's statistics per group, then scratch
    shared = np.zeros(1)
    for m in range(data_new.shape[0]):
        for s in range(size):
            work[s] = 0.0
        _accumulate_item(params, data_new, m, work, n_stats, 1.0)
        for c in range(table.shape[0]):
            out[m, c] = blocks_log_predictive(params, data_new, table, shared, work, c, m)
    return out


def specialise(cell_types):
    """The kernels (a namespace by template name) for a table of the cell-type modules
    ``cell_types`` (:mod:`.cell_types`, one per cell model; memoised).

    Compiled for the set of types present (:func:`.cell_kernels.type_set_bindings`): one
    type, that module's functions alone; several, the dispatch over those types.
    """
    return _specialise(globals(), type_set_bindings(code_of(module) for module in cell_types))
