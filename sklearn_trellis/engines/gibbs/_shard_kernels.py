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

import math

import numpy as np
from numba import njit, prange

from ..._core.specialise import specialise as _specialise, template
from ...models.likelihood import uncollapsed_bindings
from ._subcluster_kernels import SCORE_ROWS, row_uniform


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
def _combine_leaves(leaves, node_levels, out):
    """``out[node]``: the leaves of ``node`` (``leaves[b]``: local block ``b``; the nodes,
    levels ``node_levels``, cover the blocks in order) added pairwise, as
    :func:`block_tree_suff` adds its leaves."""
    depth_max = 2
    for node in range(node_levels.size):
        depth_max = max(depth_max, node_levels[node] + 2)
    stack = np.zeros((depth_max,) + leaves.shape[1:])
    stack_level = np.zeros(depth_max, np.int64)
    leaf = 0
    for node in range(node_levels.size):
        depth = 0
        for _ in range(1 << node_levels[node]):
            stack[depth] = leaves[leaf]
            leaf += 1
            stack_level[depth] = 0
            depth += 1
            while depth >= 2 and stack_level[depth - 1] == stack_level[depth - 2]:
                stack[depth - 2] += stack[depth - 1]
                stack_level[depth - 2] += 1
                depth -= 1
        out[node] = stack[0]


@template(parallel=True)
def launch_pass_nodes(params, theta, log_pi, data, members, target, counted, key, block_rows,
                      node_levels, sides, suff_out, log_q_out):
    """One pass of a two-sub-cluster launch over the increasing local rows ``members``,
    with its statistics: one call instead of a pass and two sums.

    Position ``t`` goes to side 0 or 1 with probability proportional to
    ``pi_s f(x | theta_s)``: drawn (uniform ``row_uniform(key, members[t])``) when
    ``target[t] < 0``, else forced to ``target[t]``; ``sides[t]`` receives it.
    ``suff_out[node, s]``: sufficient statistics of side ``s``'s rows in the blocks of
    ``node``, and ``log_q_out[node, 0, 0]`` the sum of the log probabilities of the sides
    of the ``counted`` rows there, each summed row after row per block and added pairwise
    over the node's blocks (as :func:`block_tree_suff`: the same on any sharding).
    """
    m = members.size
    row_log_q = np.empty(m)
    # the densities in chunks of SCORE_ROWS members (a row's density is the same whatever
    # the chunk; they are the threads' shares)
    n_chunks = -(-m // SCORE_ROWS)
    for ch in prange(n_chunks):
        start = ch * SCORE_ROWS
        stop = min(m, start + SCORE_ROWS)
        rows = members[start:stop]
        lp = np.empty((2, stop - start))
        lik_log_density_block(params, theta, 2, data, rows, lp)
        for t in range(stop - start):
            a = lp[0, t] + log_pi[0]
            b = lp[1, t] + log_pi[1]
            largest = max(a, b)
            if largest == -np.inf:
                a = 0.0
                b = 0.0
                largest = 0.0
            norm = largest + math.log(math.exp(a - largest) + math.exp(b - largest))
            side = target[start + t]
            if side < 0:
                side = 0 if row_uniform(key, rows[t]) < math.exp(a - norm) else 1
            sides[start + t] = side
            row_log_q[start + t] = ((a if side == 0 else b) - norm) if counted[start + t] else 0.0
    # the statistics: one leaf per block of rows, then the tree over the blocks
    n_leaves = 0
    for node in range(node_levels.size):
        n_leaves += 1 << node_levels[node]
    bounds = np.searchsorted(members, np.arange(n_leaves + 1) * block_rows)
    leaves = np.zeros((n_leaves, 2, suff_out.shape[2]))
    leaf_q = np.zeros((n_leaves, 1, 1))
    for leaf in prange(n_leaves):
        lo = bounds[leaf]
        hi = bounds[leaf + 1]
        total = 0.0
        n_left = 0
        for t in range(lo, hi):
            total += row_log_q[t]
            n_left += 1 - sides[t]
        leaf_q[leaf, 0, 0] = total
        by_side = np.empty(hi - lo, np.int64)   # side 0's rows, then side 1's, increasing
        left = 0
        right = n_left
        for t in range(lo, hi):
            if sides[t] == 0:
                by_side[left] = members[t]
                left += 1
            else:
                by_side[right] = members[t]
                right += 1
        if n_left > 0:
            lik_suff_add_rows(params, data, by_side[:n_left], leaves[leaf], 0)
        if hi - lo > n_left:
            lik_suff_add_rows(params, data, by_side[n_left:], leaves[leaf], 1)
    _combine_leaves(leaves, node_levels, suff_out)
    _combine_leaves(leaf_q, node_levels, log_q_out)


def specialise(likelihood):
    """A namespace of the block-tree kernels compiled for one likelihood."""
    return _specialise(globals(), uncollapsed_bindings(likelihood))
