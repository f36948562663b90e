"""Numba kernels of the shard executors: sums over fixed global blocks of rows, pairwise.

Floating-point sums depend on their order. For the sub-cluster sampler to run the same
chain on any number of shards (Dask workers) and threads, every sum over rows is taken in
one fixed order, that of the *global* rows: rows ``[b * block_rows, (b + 1) * block_rows)``
form block ``b`` (a leaf, summed row after row), and leaves are added pairwise over a
perfect binary tree of blocks. A shard holds whole blocks ``[s, e)``; it returns the sums
of the maximal tree nodes inside ``[s, e)`` (its dyadic decomposition, at most
``2 log2(e - s)`` nodes), and the driver completes the tree
(:func:`sklearn_trellis.engines.gibbs.shards.reduce_tree`). A node's value is the same
whoever computes it, so the total is the same bit for bit on any sharding. Empty leaves
are zeros, and ``x + 0 == x``: absent nodes cost nothing and change nothing.
"""

import numpy as np
from numba import njit, prange

from ..._core.specialise import specialise as _specialise, template
from ...models.likelihood import uncollapsed_bindings


@njit(cache=True)
def _leaf_end(rows, pos, stop, end_row):
    """First position ``>= pos`` (below ``stop``) whose row is ``>= end_row``."""
    while pos < stop and rows[pos] < end_row:
        pos += 1
    return pos


@template(parallel=True)
def block_tree_suff(params, data, rows, offsets, block_rows, node_levels, out):
    """``out[node, g]``: sufficient statistics of group ``g``'s rows in the blocks of
    ``node``, added pairwise over the node's blocks.

    Group ``g`` holds the local rows ``rows[offsets[g]:offsets[g + 1]]`` (increasing); the
    shard starts on a block boundary, so local row ``r`` lies in its block
    ``r // block_rows``; the nodes (levels ``node_levels``, consecutive) cover its blocks.
    """
    n_groups = offsets.size - 1
    n_suff = out.shape[2]
    depth_max = 2
    for node in range(node_levels.size):
        depth_max = max(depth_max, node_levels[node] + 2)
    for g in prange(n_groups):
        stack = np.zeros((depth_max, n_suff))
        stack_level = np.zeros(depth_max, np.int64)
        pos = offsets[g]
        stop = offsets[g + 1]
        local_block = 0
        for node in range(node_levels.size):
            depth = 0
            for _ in range(1 << node_levels[node]):
                local_block += 1
                end = _leaf_end(rows, pos, stop, local_block * block_rows)
                for k in range(n_suff):
                    stack[depth, k] = 0.0
                if end > pos:
                    lik_suff_add_rows(params, data, rows[pos:end], stack, depth)
                pos = end
                stack_level[depth] = 0
                depth += 1
                while depth >= 2 and stack_level[depth - 1] == stack_level[depth - 2]:
                    for k in range(n_suff):
                        stack[depth - 2, k] += stack[depth - 1, k]
                    stack_level[depth - 2] += 1
                    depth -= 1
            for k in range(n_suff):
                out[node, g, k] = stack[0, k]


@njit(cache=True)
def block_tree_values(rows, values, block_rows, node_levels, out):
    """``out[node]``: ``values`` summed in row order within each block, then pairwise over
    the node's blocks (``rows`` increasing local rows, ``values[t]`` belongs to ``rows[t]``)."""
    depth_max = 2
    for node in range(node_levels.size):
        depth_max = max(depth_max, node_levels[node] + 2)
    stack = np.zeros(depth_max)
    stack_level = np.zeros(depth_max, np.int64)
    pos = 0
    local_block = 0
    for node in range(node_levels.size):
        depth = 0
        for _ in range(1 << node_levels[node]):
            local_block += 1
            end = _leaf_end(rows, pos, rows.size, local_block * block_rows)
            total = 0.0
            for t in range(pos, end):
                total += values[t]
            pos = end
            stack[depth] = total
            stack_level[depth] = 0
            depth += 1
            while depth >= 2 and stack_level[depth - 1] == stack_level[depth - 2]:
                stack[depth - 2] += stack[depth - 1]
                stack_level[depth - 2] += 1
                depth -= 1
        out[node] = stack[0]


def specialise(likelihood):
    """A namespace of the block-tree kernels compiled for one likelihood."""
    return _specialise(globals(), uncollapsed_bindings(likelihood))
