"""Numba kernels of CrossCat's column moves, cell hyperparameters and log joint (flat state).

State layout in :mod:`._crosscat_kernels`; ``columns`` (d, n) is the data by
column, ``constants`` (d, n) its cells' constants (poisson: ``log(x!)``). The row
concentration of a view the moves open is drawn from the ``alpha_rows`` prior:
``rows_alpha`` when fixed (``rows_shape == 0``), else ``Gamma(rows_shape,
rows_rate)``. Each move kernel seeds numba's generator with ``seed`` (negative: as
it stands) and returns
``(stats, counts)`` (grown when a new view has more clusters than they hold).
"""

import math

import numpy as np
from numba import njit, prange

from ..._core.random_draws import permutation
from ..._core.specialise import template
from ._crosscat_kernels import (column_grid_scores, column_partition_score,
                                column_table_score, crp_draw,
                                crp_log_eppf, fill_column, fill_counts, grown, reseed,
                                sequential_allocation)
from ._gibbs_kernels import sample_log_weights


@njit(cache=True)
def _draw_alpha(rows_alpha, rows_shape, rows_rate):
    if rows_shape <= 0.0:
        return rows_alpha
    return np.random.gamma(rows_shape, 1.0 / rows_rate)


@njit(cache=True)
def _free_slot(n_columns):
    for v in range(n_columns.size):
        if n_columns[v] == 0:
            return v
    return -1


@njit(cache=True)
def _open_view(slot, new_labels, k, alpha, labels, counts, n_clusters, alphas, stats):
    """View slot ``slot`` takes the row partition ``new_labels`` (``k`` clusters)."""
    stats, counts = grown(stats, counts, k + 1)
    old = n_clusters[slot]
    for r in range(new_labels.size):   # a loop: a slice copy compiles numba's shape error
        labels[slot, r] = new_labels[r]
    n_clusters[slot] = k
    fill_counts(slot, labels, counts, n_clusters, old)
    alphas[slot] = alpha
    return stats, counts


@njit(cache=True)
def _close_view(v, counts, n_clusters, n_columns):
    counts[v, :n_clusters[v]] = 0
    n_clusters[v] = 0
    n_columns[v] = 0


@template(inline='always')
def _score_pair(pair, n_slots, columns, constants, codes, params, n_columns, labels,
                n_clusters, n_stats, table):
    j, v = pair // n_slots, pair % n_slots
    if n_columns[v] > 0:
        scratch = np.empty((n_clusters[v] + 1, n_stats))
        table[j, v] = column_partition_score(codes[j], params[j], columns[j], constants[j],
                                             labels[v], n_clusters[v], scratch)


@template(parallel=True)
def _score_table_parallel(columns, constants, codes, params, n_columns, labels,
                          n_clusters, n_stats, table):
    n_slots = n_columns.size
    for pair in prange(codes.size * n_slots):
        _score_pair(pair, n_slots, columns, constants, codes, params, n_columns, labels,
                    n_clusters, n_stats, table)


@template
def _score_table_serial(columns, constants, codes, params, n_columns, labels,
                        n_clusters, n_stats, table):
    n_slots = n_columns.size
    for pair in range(codes.size * n_slots):
        _score_pair(pair, n_slots, columns, constants, codes, params, n_columns, labels,
                    n_clusters, n_stats, table)


@template
def column_gibbs(order, columns, constants, codes, params, view_of, n_columns, labels,
                 counts, n_clusters, alphas, stats, alpha_views, n_aux, rows_alpha,
                 rows_shape, rows_rate, parallel_cells, seed):
    """Each column of ``order`` reassigned among the views and ``n_aux`` fresh ones
    (Neal's Algorithm 8 over views).

    A view holding ``m`` other columns has weight ``m``; each auxiliary view
    ``alpha_views / n_aux``, with a row partition drawn from CRP(alpha), alpha from
    the ``alpha_rows`` prior; a column alone in its view offers that view as the
    first auxiliary one. Each weight times ``sum_k log m(x_k)``, the column's
    marginal under the view's rows (:func:`._crosscat_kernels.column_partition_score`).
    The rows do not move during the step, so every column's score under every view
    is computed first, at once (on numba's threads when the table has at least
    ``parallel_cells`` cells; ``None``: never, and numba then compiles the serial loop
    only); only views opened during the step are scored as the columns come.
    """
    reseed(seed)
    table = np.zeros((codes.size, n_columns.size))
    if parallel_cells is not None and columns.size >= parallel_cells:
        _score_table_parallel(columns, constants, codes, params, n_columns, labels,
                              n_clusters, stats.shape[2], table)
    else:
        _score_table_serial(columns, constants, codes, params, n_columns, labels,
                            n_clusters, stats.shape[2], table)
    scored = n_columns > 0   # slots whose row partition the table holds
    n = labels.shape[1]
    n_slots = n_columns.size
    scratch = np.empty((n + 1, stats.shape[2]))
    aux_labels = np.empty((n_aux, n), np.int64)
    aux_k = np.empty(n_aux, np.int64)
    aux_alpha = np.empty(n_aux)
    scores = np.empty(n_slots + n_aux)
    log_aux = math.log(alpha_views / n_aux)
    for j in order:
        v0 = view_of[j]
        alone = n_columns[v0] == 1
        t, p, x, lf = codes[j], params[j], columns[j], constants[j]
        current = column_table_score(t, p, stats, j, n_clusters[v0])
        for v in range(n_slots):
            if n_columns[v] == 0 or (v == v0 and alone):
                scores[v] = -np.inf
            elif v == v0:
                scores[v] = math.log(n_columns[v] - 1) + current
            elif scored[v]:
                scores[v] = math.log(n_columns[v]) + table[j, v]
            else:
                scores[v] = math.log(n_columns[v]) + column_partition_score(
                    t, p, x, lf, labels[v], n_clusters[v], scratch)
        for a in range(n_aux):
            if a == 0 and alone:
                scores[n_slots] = log_aux + current
                continue
            aux_alpha[a] = _draw_alpha(rows_alpha, rows_shape, rows_rate)
            aux_k[a] = crp_draw(n, aux_alpha[a], aux_labels[a])
            scores[n_slots + a] = log_aux + column_partition_score(
                t, p, x, lf, aux_labels[a], aux_k[a], scratch)
        choice = sample_log_weights(scores, n_slots + n_aux)
        if choice == v0 or (choice == n_slots and alone):
            continue
        leaving = n_clusters[v0]
        if choice < n_slots:
            target = choice
            if alone:
                _close_view(v0, counts, n_clusters, n_columns)
            else:
                n_columns[v0] -= 1
        else:
            a = choice - n_slots
            if alone:
                target = v0            # the emptied slot holds the new view
            else:
                target = _free_slot(n_columns)
                n_columns[v0] -= 1
            stats, counts = _open_view(target, aux_labels[a], aux_k[a], aux_alpha[a], labels,
                                       counts, n_clusters, alphas, stats)
            n_columns[target] = 0
            scored[target] = False
        n_columns[target] += 1
        view_of[j] = target
        fill_column(j, t, p, x, lf, labels[target], n_clusters[target], stats, leaving)
    return stats, counts


@template
def column_split_merge(chosen, columns, constants, codes, params, view_of, n_columns,
                       labels, counts, n_clusters, alphas, stats, alpha_views, rows_alpha,
                       rows_shape, rows_rate, seed):
    """A Metropolis-Hastings split-merge proposal for each column of ``chosen``.

    A column sharing its view proposes a new view of its own whose row partition
    is drawn by a sequential allocation of its rows (a one-pass DP mixture of the
    column alone, :func:`._crosscat_kernels.sequential_allocation`); a column
    alone in its view proposes joining a uniformly chosen other view. Each move's
    reverse is the other one, so the acceptance ratio is exact. Algorithm 8's fresh
    views come from the prior and are rarely good enough for a column of a large
    table to leave; this data-driven proposal lets columns form new views.
    """
    reseed(seed)
    # typed values, not literals: numba compiles a callee once per literal argument
    draw, score, single = np.bool_(True), np.bool_(False), np.int64(1)
    n = labels.shape[1]
    width = stats.shape[2]
    table = np.zeros((1, n + 1, 2 * width))
    member = np.empty(1, np.int64)   # the one column the proposal allocates on
    seating = np.zeros(n + 1)
    scratch = np.empty((n + 1, width))
    new_labels = np.empty(n, np.int64)
    new_counts = np.zeros(n + 1, np.int64)
    log_alpha_views = math.log(alpha_views)
    for j in chosen:
        origin = view_of[j]
        t, p, x, lf = codes[j], params[j], columns[j], constants[j]
        member[0] = j
        n_views = 0
        for v in range(n_columns.size):
            if n_columns[v] > 0:
                n_views += 1
        order = permutation(n)
        current = column_table_score(t, p, stats, j, n_clusters[origin])
        size = n_columns[origin]
        if size > 1:
            alpha = _draw_alpha(rows_alpha, rows_shape, rows_rate)
            log_q = sequential_allocation(member, single, codes, params, columns, alpha,
                                          order, new_labels, table, seating, draw)
            k = np.int64(0)
            for i in range(n):
                k = max(k, new_labels[i] + 1)
            new_counts[:k] = 0
            for i in range(n):
                new_counts[new_labels[i]] += 1
            # view prior: origin loses a column, a view of one opens
            delta = (log_alpha_views - math.log(size - 1)
                     + crp_log_eppf(alpha, new_counts, k, n)
                     + column_partition_score(t, p, x, lf, new_labels, k, scratch) - current)
            if math.log(np.random.random()) < delta - math.log(n_views) - log_q:
                target = _free_slot(n_columns)
                stats, counts = _open_view(target, new_labels, k, alpha, labels, counts,
                                           n_clusters, alphas, stats)
                n_columns[origin] -= 1
                n_columns[target] = 1
                view_of[j] = target
                fill_column(j, t, p, x, lf, labels[target], k, stats, n_clusters[origin])
            continue
        if n_views == 1:
            continue
        pick = np.random.randint(n_views - 1)
        target = -1
        for v in range(n_columns.size):
            if n_columns[v] > 0 and v != origin:
                if pick == 0:
                    target = v
                    break
                pick -= 1
        log_q = sequential_allocation(member, single, codes, params, columns, alphas[origin],
                                      order, labels[origin], table, seating, score)
        delta = (-log_alpha_views + math.log(n_columns[target])
                 - crp_log_eppf(alphas[origin], counts[origin], n_clusters[origin], n)
                 + column_partition_score(t, p, x, lf, labels[target], n_clusters[target],
                                          scratch) - current)
        if math.log(np.random.random()) < delta + log_q + math.log(n_views - 1):
            leaving = n_clusters[origin]
            _close_view(origin, counts, n_clusters, n_columns)
            n_columns[target] += 1
            view_of[j] = target
            fill_column(j, t, p, x, lf, labels[target], n_clusters[target], stats, leaving)
    return stats, counts


@template
def resample_params(codes, grids, grid_log_prior, grid_sizes, params, view_of, n_clusters,
                    stats, seed):
    """Each column's cell params drawn exactly from their conditional on its grid.

    ``grids[j, :grid_sizes[j]]``: column ``j``'s grid points (cell params, padded),
    ``grid_log_prior`` their log prior; columns with one point are fixed. The
    statistics do not depend on the grid's hyperparameters, so they stay.
    """
    reseed(seed)
    scores = np.empty(grids.shape[1])
    for j in range(codes.size):
        size = grid_sizes[j]
        if size <= 1:
            continue
        column_grid_scores(codes[j], grids[j], size, grid_log_prior[j], stats, j,
                           n_clusters[view_of[j]], scores)
        g = sample_log_weights(scores, size)
        for p in range(params.shape[1]):   # a loop: a slice copy compiles numba's shape error
            params[j, p] = grids[j, g, p]


@template
def log_joint(codes, params, view_of, n_columns, counts, n_clusters, alphas, stats,
              alpha_views):
    """``log p(views, row partitions, X)`` at the state's concentrations and cell params."""
    n_slots = n_columns.size
    n_views = np.int64(0)   # not literals: a call typed before the loops unify them
    total = 0.0               # would compile a specialisation for the literal 0
    sizes = np.empty(n_slots, np.int64)
    n = np.int64(0)
    for v in range(n_slots):
        if n_columns[v] > 0:
            sizes[n_views] = n_columns[v]
            n_views += 1
            if n == 0:
                for k in range(n_clusters[v]):
                    n += counts[v, k]
    total += crp_log_eppf(alpha_views, sizes, n_views, codes.size)
    for v in range(n_slots):
        if n_columns[v] > 0:
            total += crp_log_eppf(alphas[v], counts[v], n_clusters[v], n)
    for j in range(codes.size):
        total += column_table_score(codes[j], params[j], stats, j, n_clusters[view_of[j]])
    return total
