"""Numba kernel of CrossCat's view split-merge move: a view's columns split into two views,
or two views merged, with new row partitions for the views it makes.

Why: a chain with every column in one view (a row partition fine enough for all of them)
does not leave it by moving one column at a time. A column leaving alone scores its
cells under a partition of its own, but the view it leaves keeps its fine partition,
which still fits the columns that stay: the gain appears only once that view coarsens
too (on planted two-view tables, even the true partition proposed for one column, or
for the two columns of the other view, is rejected by 26 to 81 nats). This move
re-partitions the rows of both views it makes at once.

The move (state layout in :mod:`._crosscat_kernels`): an ordered pair of columns
``(i, j)`` is drawn uniformly, and a random order of the rows.

- Launch (auxiliary, independent of the state the move changes): the rows are
  allocated sequentially (:func:`._crosscat_kernels.sequential_allocation`) on column ``i``
  alone and on column ``j`` alone, at the row concentration of ``i``'s view.
- ``i`` and ``j`` share view ``v`` (columns ``C``, row partition ``z_C``): split.
  Every other column of ``C`` goes with ``j`` with probability
  ``sigmoid(score(l | launch_j) - score(l | launch_i))`` (``S``, ``j``'s side;
  ``R = C - S``, ``i``'s), then the rows are allocated sequentially on the columns of
  ``R`` jointly (``z_R``, ``v``'s concentration) and on those of ``S`` (``z_S``,
  a concentration drawn from the ``alpha_rows`` prior). ``R`` stays in slot ``v``,
  ``S`` opens a free slot.
- Otherwise: merge ``j``'s view into ``i``'s, the rows allocated sequentially on all
  their columns at ``v``'s concentration.

The split and the merge of one pair are each other's reverse, and each proposal's
reverse probability is computed on the same launch and row order: the Metropolis-
Hastings ratio is exact. (The launch is drawn from a distribution that the move does
not change, the row concentration of ``i``'s view being kept, so it is an auxiliary
variable refreshed before each proposal, as Jain & Neal's launch state; the new
view's concentration drawn from its prior cancels against its prior.)
"""

import math

import numpy as np
from numba import njit

from ..._core.random_draws import permutation
from ..._core.specialise import template
from ._crosscat_columns import _close_view, _draw_alpha, _free_slot, _open_view
from ._crosscat_kernels import (column_partition_score, column_table_score, crp_log_eppf,
                                fill_column, reseed, sequential_allocation)


@njit(cache=True)
def _n_clusters_of(labels):
    k = np.int64(0)
    for i in range(labels.size):
        k = max(k, labels[i] + 1)
    return k


@njit(cache=True)
def _partition_prior(alpha, labels, k, sizes):
    """``log CRP(alpha)`` of the compact ``labels`` (``k`` clusters); ``sizes`` scratch."""
    sizes[:k] = 0
    for i in range(labels.size):
        sizes[labels[i]] += 1
    return crp_log_eppf(alpha, sizes, k, labels.size)


@template
def _columns_score(members, m, codes, params, columns, constants, labels, k, scratch):
    total = 0.0
    for a in range(m):
        j = members[a]
        total += column_partition_score(codes[j], params[j], columns[j], constants[j], labels,
                                        k, scratch)
    return total


@template
def _side_probability(l, codes, params, columns, constants, launch_i, k_i, launch_j, k_j,
                      scratch):
    """``log`` of column ``l``'s probabilities of going with ``j`` and staying with ``i``."""
    s_i = column_partition_score(codes[l], params[l], columns[l], constants[l], launch_i, k_i,
                                 scratch)
    s_j = column_partition_score(codes[l], params[l], columns[l], constants[l], launch_j, k_j,
                                 scratch)
    top = max(s_i, s_j)
    log_norm = top + math.log(math.exp(s_i - top) + math.exp(s_j - top))
    return s_j - log_norm, s_i - log_norm


@template
def view_split_merge(n_proposals, columns, constants, codes, params, view_of, n_columns,
                     labels, counts, n_clusters, alphas, stats, alpha_views, rows_alpha,
                     rows_shape, rows_rate, seed):
    """``n_proposals`` view split-merge proposals (the module's move), each accepted by its
    exact Metropolis-Hastings ratio; returns ``(stats, counts)`` (grown when a new
    partition has more clusters than they hold)."""
    reseed(seed)
    d = codes.size
    n = labels.shape[1]
    if d < 2 or n == 0:
        return stats, counts
    work = new_view_move_work(d, n, stats.shape[2])
    launch_i, launch_j, z_stay, z_leave, stay, leave, merged = work[4:]
    for _ in range(n_proposals):
        i, j, _order, n_stay, n_leave, n_merged, alpha_u, k_a, k_b, log_ratio = \
            propose_view_move(columns, constants, codes, params, view_of, labels, counts,
                              n_clusters, alphas, stats, alpha_views, rows_alpha,
                              rows_shape, rows_rate, work)
        if not math.log(np.random.random()) < log_ratio:
            continue
        v, u = view_of[i], view_of[j]
        alpha_v = alphas[v]
        if u == v:   # split: z_stay (k_a clusters) stays in v, z_leave (k_b) opens a slot
            clear = n_clusters[v]
            target = _free_slot(n_columns)
            stats, counts = _open_view(target, z_leave, k_b, alpha_u, labels, counts,
                                       n_clusters, alphas, stats)
            stats, counts = _open_view(v, z_stay, k_a, alpha_v, labels, counts,
                                       n_clusters, alphas, stats)
            n_columns[v], n_columns[target] = n_stay, n_leave
            for a in range(n_leave):
                view_of[leave[a]] = target
            _refill_columns(stay, n_stay, v, codes, params, columns, constants, labels,
                            n_clusters, stats, clear)
            _refill_columns(leave, n_leave, target, codes, params, columns, constants,
                            labels, n_clusters, stats, clear)
        else:        # merge u into v: the merged rows z_stay (k_a clusters)
            clear = max(n_clusters[v], n_clusters[u])
            _close_view(u, counts, n_clusters, n_columns)
            stats, counts = _open_view(v, z_stay, k_a, alpha_v, labels, counts,
                                       n_clusters, alphas, stats)
            n_columns[v] = n_merged
            for a in range(n_merged):
                view_of[merged[a]] = v
            _refill_columns(merged, n_merged, v, codes, params, columns, constants,
                            labels, n_clusters, stats, clear)
    return stats, counts


@njit(cache=True)
def new_view_move_work(d, n, width):
    """Scratch of :func:`propose_view_move`: ``(scratch, sa_stats, seating, sizes,
    launch_i, launch_j, z_stay, z_leave, stay, leave, merged)``, where the proposal leaves
    the launch, the row partitions and the column sets it drew or scored."""
    return (np.empty((n + 1, width)), np.empty((d, n + 1, 2 * width)), np.zeros(n + 1),
            np.empty(n + 1, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty(n, np.int64), np.empty(d, np.int64),
            np.empty(d, np.int64), np.empty(d, np.int64))


@template
def propose_view_move(columns, constants, codes, params, view_of, labels, counts, n_clusters,
                      alphas, stats, alpha_views, rows_alpha, rows_shape, rows_rate, work):
    """One proposal of the view split-merge move (the module's docstring), drawn with
    numba's generator, and its log Metropolis-Hastings ratio; the state is not changed.

    Returns ``(i, j, order, n_stay, n_leave, n_merged, alpha_u, k_a, k_b, log_ratio)``;
    ``work`` (:func:`new_view_move_work`) then holds the launch, the column sets (``i``'s
    side, ``j``'s side, both) and the proposed rows: a split's ``z_stay`` (``k_a``
    clusters) and ``z_leave`` (``k_b``, concentration ``alpha_u``), a merge's rows in
    ``z_stay`` (``k_a``).
    """
    scratch, sa_stats, seating, sizes = work[:4]
    launch_i, launch_j, z_stay, z_leave, stay, leave, merged = work[4:]
    d = codes.size
    n = labels.shape[1]
    one = np.empty(1, np.int64)
    # typed values, not literals: numba compiles a callee once per literal argument
    draw, score, single = np.bool_(True), np.bool_(False), np.int64(1)
    i = np.random.randint(d)
    j = np.random.randint(d - 1)
    if j >= i:
        j += 1
    order = permutation(n)
    v, u = view_of[i], view_of[j]
    alpha_v = alphas[v]
    # the launch: rows allocated on column i alone and on column j alone
    one[0] = i
    sequential_allocation(one, single, codes, params, columns, alpha_v, order,
                          launch_i, sa_stats, seating, draw)
    one[0] = j
    sequential_allocation(one, single, codes, params, columns, alpha_v, order,
                          launch_j, sa_stats, seating, draw)
    k_i, k_j = _n_clusters_of(launch_i), _n_clusters_of(launch_j)
    # the columns of the merged view (C), i's side (R) and j's side (S), and log q of
    # the sides: drawn (split) or scored (merge)
    n_merged, n_stay, n_leave = np.int64(0), np.int64(0), np.int64(0)   # not literals
    log_q_sides = 0.0
    for l in range(d):
        if view_of[l] != v and view_of[l] != u:
            continue
        merged[n_merged] = l
        n_merged += 1
        if l == i:
            stay[n_stay] = l
            n_stay += 1
            continue
        if l == j:
            leave[n_leave] = l
            n_leave += 1
            continue
        to_j, to_i = _side_probability(l, codes, params, columns, constants, launch_i,
                                       k_i, launch_j, k_j, scratch)
        if u == v:
            goes = math.log(np.random.random()) < to_j
        else:
            goes = view_of[l] == u
        if goes:
            leave[n_leave] = l
            n_leave += 1
            log_q_sides += to_j
        else:
            stay[n_stay] = l
            n_stay += 1
            log_q_sides += to_i
    # log p(split state) - log p(merged state), except the row partitions and data
    log_view_prior = (math.log(alpha_views) + math.lgamma(float(n_stay))
                      + math.lgamma(float(n_leave)) - math.lgamma(float(n_merged)))
    if u == v:   # split
        alpha_u = _draw_alpha(rows_alpha, rows_shape, rows_rate)
        log_q_stay = sequential_allocation(stay, n_stay, codes, params, columns,
                                           alpha_v, order, z_stay, sa_stats,
                                           seating, draw)
        log_q_leave = sequential_allocation(leave, n_leave, codes, params, columns,
                                            alpha_u, order, z_leave, sa_stats,
                                            seating, draw)
        log_q_merge = sequential_allocation(merged, n_merged, codes, params,
                                            columns, alpha_v, order, labels[v],
                                            sa_stats, seating, score)
        k_stay, k_leave = _n_clusters_of(z_stay), _n_clusters_of(z_leave)
        log_split = (_partition_prior(alpha_v, z_stay, k_stay, sizes)
                     + _partition_prior(alpha_u, z_leave, k_leave, sizes)
                     + _columns_score(stay, n_stay, codes, params, columns, constants,
                                      z_stay, k_stay, scratch)
                     + _columns_score(leave, n_leave, codes, params, columns, constants,
                                      z_leave, k_leave, scratch))
        log_merge = crp_log_eppf(alpha_v, counts[v], n_clusters[v], n)
        for a in range(n_merged):
            l = merged[a]
            log_merge += column_table_score(codes[l], params[l], stats, l, n_clusters[v])
        log_ratio = (log_view_prior + log_split - log_merge + log_q_merge
                     - log_q_sides - log_q_stay - log_q_leave)
        return (i, j, order, n_stay, n_leave, n_merged, alpha_u, k_stay, k_leave,
                log_ratio)
    # merge u into v
    z_merged = z_stay
    log_q_merge = sequential_allocation(merged, n_merged, codes, params,
                                        columns, alpha_v, order, z_merged,
                                        sa_stats, seating, draw)
    log_q_stay = sequential_allocation(stay, n_stay, codes, params, columns,
                                       alpha_v, order, labels[v], sa_stats,
                                       seating, score)
    log_q_leave = sequential_allocation(leave, n_leave, codes, params, columns,
                                        alphas[u], order, labels[u], sa_stats,
                                        seating, score)
    k_merged = _n_clusters_of(z_merged)
    log_merge = (_partition_prior(alpha_v, z_merged, k_merged, sizes)
                 + _columns_score(merged, n_merged, codes, params, columns,
                                  constants, z_merged, k_merged, scratch))
    log_split = (crp_log_eppf(alpha_v, counts[v], n_clusters[v], n)
                 + crp_log_eppf(alphas[u], counts[u], n_clusters[u], n))
    for a in range(n_merged):
        l = merged[a]
        log_split += column_table_score(codes[l], params[l], stats, l,
                                        n_clusters[view_of[l]])
    log_ratio = (log_merge - log_split - log_view_prior + log_q_sides + log_q_stay
                 + log_q_leave - log_q_merge)
    return (i, j, order, n_stay, n_leave, n_merged, alphas[u], k_merged, np.int64(0),
            log_ratio)


@template
def _refill_columns(members, m, v, codes, params, columns, constants, labels, n_clusters,
                    stats, clear):
    for a in range(m):
        j = members[a]
        fill_column(j, codes[j], params[j], columns[j], constants[j], labels[v],
                    n_clusters[v], stats, clear)
