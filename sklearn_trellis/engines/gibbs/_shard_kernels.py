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
from ._subcluster_kernels import SCORE_ROWS, draw_thetas, members_of, row_at_rank, row_uniform


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


@template
def _launch_chunk(params, theta, log_pi, data, members, target, counted, key, ch, sides,
                  row_log_q):
    """Chunk ``ch`` (``SCORE_ROWS`` positions) of a launch pass: each position's side,
    drawn (uniform ``row_uniform(key, members[t])``) when ``target[t] < 0``, else forced to
    ``target[t]``, and the log probability of that side (0 for a row not ``counted``)."""
    m = members.size
    start = ch * SCORE_ROWS
    stop = min(m, start + SCORE_ROWS)
    rows = members[start:stop]
    lp = np.empty((2, stop - start))
    # a typed 2, not a literal: numba would compile the callee again for Literal[int](2)
    lik_log_density_block(params, theta, np.int64(2), data, rows, lp)
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


@template
def _launch_leaf(params, data, members, sides, row_log_q, lo, hi, leaves, leaf_q, leaf):
    """Leaf ``leaf`` (the positions ``[lo, hi)`` of one block of rows) of a launch pass:
    each side's sufficient statistics into ``leaves[leaf]`` (zeroed by the caller) and the
    log probability of the sides, added row after row, into ``leaf_q[leaf, 0, 0]``."""
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


@njit(cache=True)
def _n_leaves(node_levels):
    """Blocks covered by the nodes of levels ``node_levels``."""
    n_leaves = 0
    for node in range(node_levels.size):
        n_leaves += 1 << node_levels[node]
    return n_leaves


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
    for ch in prange(-(-m // SCORE_ROWS)):
        _launch_chunk(params, theta, log_pi, data, members, target, counted, key, ch, sides,
                      row_log_q)
    # the statistics: one leaf per block of rows, then the tree over the blocks
    n_leaves = _n_leaves(node_levels)
    bounds = np.searchsorted(members, np.arange(n_leaves + 1) * block_rows)
    leaves = np.zeros((n_leaves, 2, suff_out.shape[2]))
    leaf_q = np.zeros((n_leaves, 1, 1))
    for leaf in prange(n_leaves):
        _launch_leaf(params, data, members, sides, row_log_q, bounds[leaf], bounds[leaf + 1],
                     leaves, leaf_q, leaf)
    _combine_leaves(leaves, node_levels, suff_out)
    _combine_leaves(leaf_q, node_levels, log_q_out)


@njit(cache=True)
def _fold_nodes(nodes, out):
    """``out`` = the nodes' total, added from the right (as
    :func:`sklearn_trellis.engines.gibbs.shards.reduce_tree` adds the nodes of a shard
    holding every block)."""
    last = nodes.shape[0] - 1
    for s in range(out.shape[0]):
        for k in range(out.shape[1]):
            total = nodes[last, s, k]
            for t in range(last - 1, -1, -1):
                total = nodes[t, s, k] + total
            out[s, k] = total


@template(parallel=True)
def launch(params, data, labels, first, second, seeds, find, log_pi, theta_seeds, keys,
           log_fraction, forced, block_rows, node_levels, theta, stats, suff, counts,
           rows_out, sides_out):
    """A whole split/merge launch on a shard holding every block of rows: the driver's
    ``LAUNCH_ITERATIONS + 1`` passes (:func:`launch_pass_nodes`) and its parameter draws
    between them, in one call, bit for bit as the driver would run them.

    The rows of clusters ``first`` and ``second`` (equal for a split) go to two sides
    seeded at the local rows ``seeds`` (side 0, side 1); ``find[0] >= 0``: the side-1
    seed is instead the ``find[1]``-th row of cluster ``find[0]`` other than row
    ``find[2]``. The side-0 seed's parameters ``theta`` are drawn (:func:`draw_thetas`,
    seed ``theta_seeds[0]``) from the seeds' statistics; pass ``p`` (key ``keys[p]``)
    draws the sides from ``log_pi`` and ``theta``, then ``log_pi = log_fraction[counts]``
    (``log_fraction[c] = log(c / m)``, numpy's log, given by the caller) and ``theta``
    is drawn again (seed ``theta_seeds[p + 1]``); the last pass forces the sides to the
    current clusters when ``forced``. ``log_pi`` (initial weights), ``theta`` and
    ``stats`` (scratch) are overwritten; ``suff`` and ``counts`` receive the last pass's
    side statistics and counts, ``rows_out[:m]`` and ``sides_out[:m]`` the launch's ``m``
    rows (increasing) and their last sides (arrays as long as ``labels``: no arrays
    returned, whose boxing costs more than a small launch). Returns the last pass's
    ``log q``.
    """
    if find[0] >= 0:
        seeds[1] = row_at_rank(labels, find[0], find[1], find[2], True)
    rows, current = members_of(labels, first, second)
    m = rows.size
    free = np.full(m, -1, np.int64)
    counted = np.ones(m, np.bool_)
    suff[:] = 0.0
    for side in range(2):
        local = seeds[side]
        if 0 <= local < labels.size:
            position = np.searchsorted(rows, local)
            free[position] = side
            counted[position] = False
            lik_suff_add_rows(params, data, np.array([local]), suff, side)
    stats[:] = 0.0
    draw_thetas(params, suff, stats, theta, np.int64(2), theta_seeds[0])
    sides = np.empty(m, np.int64)
    row_log_q = np.empty(m)
    n_leaves = _n_leaves(node_levels)
    bounds = np.searchsorted(rows, np.arange(n_leaves + 1) * block_rows)
    leaves = np.zeros((n_leaves, 2, suff.shape[1]))
    leaf_q = np.zeros((n_leaves, 1, 1))
    nodes = np.zeros((node_levels.size, 2, suff.shape[1]))
    q_nodes = np.zeros((node_levels.size, 1, 1))
    log_q = np.zeros((1, 1))
    n_passes = keys.size
    for p in range(n_passes):
        final = p == n_passes - 1
        target = current if final and forced else free
        for ch in prange(-(-m // SCORE_ROWS)):
            _launch_chunk(params, theta, log_pi, data, rows, target, counted, keys[p], ch,
                          sides, row_log_q)
        leaves[:] = 0.0
        for leaf in prange(n_leaves):
            _launch_leaf(params, data, rows, sides, row_log_q, bounds[leaf],
                         bounds[leaf + 1], leaves, leaf_q, leaf)
        _combine_leaves(leaves, node_levels, nodes)
        _fold_nodes(nodes, suff)
        n_right = 0
        for t in range(m):
            n_right += sides[t]
        counts[0] = m - n_right
        counts[1] = n_right
        if final:
            _combine_leaves(leaf_q, node_levels, q_nodes)
            _fold_nodes(q_nodes, log_q)
        else:
            log_pi[0] = log_fraction[counts[0]]
            log_pi[1] = log_fraction[counts[1]]
            stats[:] = 0.0
            draw_thetas(params, suff, stats, theta, np.int64(2), theta_seeds[p + 1])
    rows_out[:m] = rows
    sides_out[:m] = sides
    return log_q[0, 0]


def specialise(likelihood):
    """A namespace of the block-tree kernels compiled for one likelihood."""
    return _specialise(globals(), uncollapsed_bindings(likelihood))
