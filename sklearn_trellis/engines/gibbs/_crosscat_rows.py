"""Numba kernels of CrossCat's row moves within one view, on the chain's flat state.

State layout in :mod:`._crosscat_kernels`. Data come twice: ``rows`` (n, d),
row-major, for scoring a row's cells against clusters, and ``columns`` (d, n)
with the cells' constants (poisson: ``log(x!)``) in ``constants`` (d, n), for
statistics.
Each kernel seeds numba's generator with its ``seed`` (drawn by the driver; a
negative one: the generator as it stands, as in :func:`._crosscat_sweep.sweep`), and
returns ``(stats, counts)``: the same arrays, or grown ones when a cluster was
opened beyond their room.

- :func:`slice_rows`: the uncollapsed slice-sampler move of every row of a view
  (Walker 2007; Kalli, Griffin & Walker 2011), as Lace does it;
- :func:`scan_rows`: the collapsed scan (Neal's Algorithm 3), one row at a time
  against the others' statistics;
- :func:`split_merge_rows`: Dahl's (2003) sequentially-allocated split-merge
  proposals with the exact Metropolis-Hastings ratio.
"""

import math

import numpy as np
from numba import njit, prange

from ..._core.random_draws import log_gamma_draw, permutation
from ..._core.specialise import template
from ...models.cell_kernels import (table_accumulate_with_constant_at, table_add_log_kernels_at,
                                    table_cached_log_predictive_at, table_log_marginal_at,
                                    table_posterior_draw_at, table_predictive_cache_at,
                                    table_theta_size)
from ._crosscat_kernels import fill_view, grown, refresh_due, reseed, view_columns
from ._gibbs_kernels import sample_log_weights


@njit(cache=True)
def _log_uniform():
    u = np.random.random()
    while u <= 0.0:
        u = np.random.random()
    return math.log(u)


# ---------------------------------------------------------------- slice sampler
#: Rows per block of the slice step's scoring (a block's scores stay in cache).
_BLOCK = 256


@template
def _assign_block(b, columns, cols, codes, offsets, log_w, log_u, theta, choice, old, out,
                  scores):
    """Rows ``[b * _BLOCK, ...)``: each one's cluster among ``{k : w_k > u_i}`` with
    probability proportional to ``prod_j f(x_ij | theta_kj)`` (NaN cells skipped), chosen
    by the pre-drawn uniform. Scores are summed column by column over the block's rows
    (contiguous cells, the type's branch outside the row loop: straight-line loops the
    compiler vectorises)."""
    i0 = b * _BLOCK
    i1 = min(out.size, i0 + _BLOCK)
    n_clusters = log_w.size
    scores[:, :i1 - i0] = 0.0
    for c in range(cols.size):
        code, o, x = codes[c], offsets[c], columns[cols[c]]
        for k in range(n_clusters):
            table_add_log_kernels_at(code, theta[k], o, x, i0, i1, scores[k])
    for i in range(i0, i1):
        largest = -np.inf
        for k in range(n_clusters):
            if log_w[k] > log_u[i]:
                largest = max(largest, scores[k, i - i0])
        if largest == -np.inf:
            # no candidate has a positive density (a draw at the edge of its support):
            # the row keeps its cluster, a candidate by construction
            out[i] = old[i]
            continue
        total = 0.0
        for k in range(n_clusters):
            weight = 0.0
            # a weight below exp(-40) of the largest does not change the sum in float64
            if log_w[k] > log_u[i] and scores[k, i - i0] > largest - 40.0:
                weight = math.exp(scores[k, i - i0] - largest)
            scores[k, i - i0] = weight
            total += weight
        u = choice[i] * total
        acc = 0.0
        chosen = -1
        for k in range(n_clusters):
            weight = scores[k, i - i0]
            if weight > 0.0:
                chosen = k
                acc += weight
                if u < acc:
                    break
        out[i] = chosen


@template(parallel=True)
def _assign_parallel(columns, cols, codes, offsets, log_w, log_u, theta, choice, old, out):
    # each row reads only its own pre-drawn uniform: the result does not depend on threads
    n_blocks = (out.size + _BLOCK - 1) // _BLOCK
    for b in prange(n_blocks):
        scores = np.empty((log_w.size, _BLOCK))
        _assign_block(b, columns, cols, codes, offsets, log_w, log_u, theta, choice, old, out,
                      scores)


@template
def _assign_serial(columns, cols, codes, offsets, log_w, log_u, theta, choice, old, out):
    scores = np.empty((log_w.size, _BLOCK))
    for b in range((out.size + _BLOCK - 1) // _BLOCK):
        _assign_block(b, columns, cols, codes, offsets, log_w, log_u, theta, choice, old, out,
                      scores)


@njit(cache=True)
def _stick_weights(counts, n_clusters, alpha, labels):
    """``log w`` of the occupied clusters and of the sticks needed, and ``log u`` per row.

    ``(w_1..w_K, w_rest) ~ Dirichlet(n_1..n_K, alpha)``, ``u_i ~ U(0, w_{z_i})``, and the
    rest broken into sticks ``v ~ Beta(1, alpha)`` until it is below ``min u`` (no atom
    left unlisted can exceed a slice).
    """
    log_g = np.empty(n_clusters + 1)
    for k in range(n_clusters):
        log_g[k] = log_gamma_draw(float(counts[k]))
    log_g[n_clusters] = log_gamma_draw(alpha)
    top = log_g[0]  # a loop, not ``.max()``: numba's reductions take seconds to compile
    for k in range(1, n_clusters + 1):
        if log_g[k] > top:
            top = log_g[k]
    total = 0.0
    for k in range(n_clusters + 1):
        total += math.exp(log_g[k] - top)
    log_norm = top + math.log(total)
    n = labels.size
    log_u = np.empty(n)
    smallest = np.inf
    for i in range(n):
        log_u[i] = _log_uniform() + log_g[labels[i]] - log_norm
        smallest = min(smallest, log_u[i])
    # v ~ Beta(1, alpha) is 1 - U^(1/alpha), so log(1 - v) = log(U) / alpha
    log_rest = log_g[n_clusters] - log_norm
    sticks = [0.0]
    sticks.clear()
    while log_rest > smallest:
        log_keep = _log_uniform() / alpha
        sticks.append(log_rest + math.log(-math.expm1(log_keep)) if log_keep < 0.0
                      else -np.inf)
        log_rest += log_keep
    log_w = np.empty(n_clusters + len(sticks))
    for k in range(n_clusters):
        log_w[k] = log_g[k] - log_norm
    for k in range(len(sticks)):
        log_w[n_clusters + k] = sticks[k]
    return log_w, log_u


@template
def slice_rows(v, columns, constants, codes, params, view_of, labels, counts, n_clusters,
               alphas, stats, parallel_cells, seed):
    """The slice-sampler move of every row of view slot ``v``.

    Draws the stick weights and slices (:func:`_stick_weights`), the explicit cell
    parameters of every (cluster, column) block from its conjugate posterior (those
    of new sticks from the prior), then every row's cluster independently (rows on
    numba's threads when the view has at least ``parallel_cells`` cells; ``None``: never,
    and numba then compiles the serial loop only), and rebuilds the view's counts and
    statistics.
    ``(w, theta, u)`` are drawn exactly given ``z`` and ``z`` exactly given them: a
    data-augmentation Gibbs kernel that leaves ``p(z | X)`` invariant.
    """
    reseed(seed)
    cols = view_columns(v, view_of)
    n_old = n_clusters[v]
    log_w, log_u = _stick_weights(counts[v], n_old, alphas[v], labels[v])
    n_new = log_w.size
    offsets = np.empty(cols.size, np.int64)
    col_codes = np.empty(cols.size, np.int64)
    width = 1
    for c in range(cols.size):
        col_codes[c] = codes[cols[c]]
        width = max(width, table_theta_size(codes[cols[c]], params[cols[c]], 0))
    for c in range(cols.size):
        offsets[c] = c * width
    theta = np.zeros((n_new, cols.size * width))
    empty = np.zeros(stats.shape[2])
    zero = np.int64(0)   # not a literal 0: the offset-0 callers' compilation serves here too
    for k in range(n_new):
        for c in range(cols.size):
            j = cols[c]
            if k < n_old:
                table_posterior_draw_at(codes[j], params[j], zero, stats[j, k], zero, theta[k],
                                        offsets[c])
            else:
                table_posterior_draw_at(codes[j], params[j], zero, empty, zero, theta[k],
                                        offsets[c])
    n = labels.shape[1]
    choice = np.empty(n)
    for i in range(n):
        choice[i] = np.random.random()
    out = np.empty(n, np.int64)
    if parallel_cells is not None and n * cols.size >= parallel_cells:
        _assign_parallel(columns, cols, col_codes, offsets, log_w, log_u, theta, choice,
                         labels[v], out)
    else:
        _assign_serial(columns, cols, col_codes, offsets, log_w, log_u, theta, choice,
                       labels[v], out)
    # clusters renumbered in order of their index (the occupied old ones keep their order)
    used = np.zeros(n_new, np.int64)
    for i in range(n):
        used[out[i]] = 1
    index = np.empty(n_new, np.int64)  # running count - 1 (loops: no np.cumsum to compile)
    n_used = 0
    for k in range(n_new):
        n_used += used[k]
        index[k] = n_used - 1
    n_clusters[v] = n_used
    for i in range(n):
        labels[v, i] = index[out[i]]
    stats, counts = grown(stats, counts, n_clusters[v] + 1)
    fill_view(v, codes, params, columns, constants, view_of, labels, counts, n_clusters,
              stats, max(n_old, n_clusters[v]))
    return stats, counts


# ---------------------------------------------------------------- collapsed moves
# _row_cells and _refresh are not inlined: each inlines every cell type's update (or
# predictive constants), which the split-merge move called six times (compile time)
@template
def _row_cells(i, k, sign, cols, codes, params, rows, constants, stats):
    """Add (``sign`` +1) or remove row ``i``'s cells to / from the blocks ``stats[j, k]``."""
    zero = np.int64(0)   # not a literal 0: the type's accumulate compiles once for every caller
    for c in range(cols.size):
        j = cols[c]
        table_accumulate_with_constant_at(codes[j], params[j], zero, stats[j, k], zero,
                                          rows[i, j], constants[j, i], sign)


@template
def _refresh(k, cols, codes, params, table, cache):
    """The one-cell predictive constants of cluster ``k``'s blocks (``table[j, k]``)."""
    for c in range(cols.size):
        j = cols[c]
        table_predictive_cache_at(codes[j], params[j], 0, table[j, k], 0, cache[c, k], 0)


@template(inline='always')
def _row_log_predictive(i, k, cols, codes, params, rows, table, cache):
    total = 0.0
    for c in range(cols.size):
        j = cols[c]
        total += table_cached_log_predictive_at(codes[j], params[j], 0, table[j, k], 0,
                                                cache[c, k], 0, rows[i, j])
    return total


@template
def scan_rows(v, rows, constants, codes, params, view_of, labels, counts, n_clusters,
              alphas, stats, seed):
    """One collapsed Gibbs scan (Neal's Algorithm 3) over the rows of view slot ``v``, in a
    random order: each row leaves its cluster and joins one with probability proportional
    to ``n_k p(x_i | cluster k)`` or a new one to ``alpha p(x_i)``."""
    reseed(seed)
    n = labels.shape[1]
    cols = view_columns(v, view_of)
    lab = labels[v]
    n_slots = n_clusters[v]
    stats, counts = grown(stats, counts, n_slots + 1)
    cache = np.empty((cols.size, stats.shape[1], stats.shape[2]))
    for k in range(n_slots + 1):
        _refresh(k, cols, codes, params, stats, cache)
    free = np.empty(n + 1, np.int64)   # emptied slots, reused before new ones
    n_free = 0
    log_alpha = math.log(alphas[v])
    weights = np.empty(n + 1)
    slots = np.empty(n + 1, np.int64)
    order = permutation(n)
    for i in order:
        k0 = lab[i]
        _row_cells(i, k0, -1.0, cols, codes, params, rows, constants, stats)
        counts[v, k0] -= 1
        if counts[v, k0] == 0:
            for c in range(cols.size):   # exact zeros, not the rounding left by removals
                stats[cols[c], k0, :] = 0.0
            free[n_free] = k0
            n_free += 1
        _refresh(k0, cols, codes, params, stats, cache)
        m = 0
        for k in range(n_slots):
            if counts[v, k] > 0:
                weights[m] = (math.log(counts[v, k])
                              + _row_log_predictive(i, k, cols, codes, params, rows, stats,
                                                    cache))
                slots[m] = k
                m += 1
        fresh = free[n_free - 1] if n_free > 0 else n_slots
        weights[m] = log_alpha + _row_log_predictive(i, fresh, cols, codes, params, rows,
                                                     stats, cache)
        slots[m] = fresh
        k = slots[sample_log_weights(weights, m + 1)]
        if k == fresh:
            if n_free > 0:
                n_free -= 1
            else:
                n_slots += 1
                if n_slots + 1 > stats.shape[1]:
                    stats, counts = grown(stats, counts, n_slots + 1)
                    bigger = np.empty((cols.size, stats.shape[1], stats.shape[2]))
                    for c in range(cols.size):   # loops, not a slice copy
                        for k2 in range(cache.shape[1]):
                            for q in range(cache.shape[2]):
                                bigger[c, k2, q] = cache[c, k2, q]
                    cache = bigger
                _refresh(n_slots, cols, codes, params, stats, cache)
        _row_cells(i, k, 1.0, cols, codes, params, rows, constants, stats)
        counts[v, k] += 1
        lab[i] = k
        _refresh(k, cols, codes, params, stats, cache)
    # compact: the occupied slots renumbered in order (the statistics move with them)
    index = np.full(n_slots, -1, np.int64)
    m = 0
    for k in range(n_slots):
        if counts[v, k] > 0:
            index[k] = m
            if m != k:
                counts[v, m] = counts[v, k]
                counts[v, k] = 0
                for c in range(cols.size):
                    for q in range(stats.shape[2]):
                        stats[cols[c], m, q] = stats[cols[c], k, q]
                        stats[cols[c], k, q] = 0.0
            m += 1
    for i in range(n):
        lab[i] = index[lab[i]]
    n_clusters[v] = m
    return stats, counts


@template
def _log_marginals(cols, codes, params, table, k):
    total = 0.0
    for c in range(cols.size):
        j = cols[c]
        # offsets into the flat table, as the other callers: one compiled specialisation
        total += table_log_marginal_at(codes[j], params[j], np.int64(0), table.ravel(),
                                       (j * table.shape[1] + k) * table.shape[2])
    return total


@template
def split_merge_rows(v, n_proposals, rows, constants, codes, params, view_of, labels,
                     counts, n_clusters, alphas, stats, seed):
    """Sequentially-allocated split-merge proposals on the rows of view slot ``v`` (Dahl 2003).

    Two distinct rows ``i, j``: if they share a cluster, propose to split it, ``i`` and
    ``j`` seeding the parts and the others allocated in random order by their restricted
    Gibbs conditionals; otherwise propose to merge the two clusters (the reverse
    probability is that of the allocation reproducing the current split). The parts
    are built in scratch blocks (``part[:, 0]`` with ``i``, ``part[:, 1]`` with ``j``),
    so a rejected proposal changes nothing; their predictive constants are refreshed
    on a schedule (:func:`._crosscat_kernels.refresh_due`). Accepted with the exact ratio of the log
    joints.
    """
    reseed(seed)
    n = labels.shape[1]
    if n < 2:
        return stats, counts
    cols = view_columns(v, view_of)
    lab = labels[v]
    d = stats.shape[0]
    n_stats = stats.shape[2]
    # scratch blocks laid out like stats (column, part, statistics) for the shared helpers
    part = np.zeros((d, 2, n_stats))
    first, second = np.int64(0), np.int64(1)   # typed: one specialisation per callee
    cache = np.empty((cols.size, 2, n_stats))
    items = np.empty(n, np.int64)
    side = np.empty(n, np.int64)
    log_alpha = math.log(alphas[v])
    for _ in range(n_proposals):
        i = np.random.randint(n)
        j = np.random.randint(n - 1)
        if j >= i:
            j += 1
        ci, cj = lab[i], lab[j]
        m = 0
        for r in range(n):
            if r != i and r != j and (lab[r] == ci or lab[r] == cj):
                items[m] = r
                m += 1
        for t in range(m - 1, 0, -1):
            s = np.random.randint(t + 1)
            items[t], items[s] = items[s], items[t]
        for c in range(cols.size):   # loops, not slices: numba's slice assignment
            for q in range(n_stats):   # compiles its shape-error message (~2 s)
                part[cols[c], 0, q] = 0.0
                part[cols[c], 1, q] = 0.0
        _row_cells(i, first, 1.0, cols, codes, params, rows, constants, part)
        _row_cells(j, second, 1.0, cols, codes, params, rows, constants, part)
        _refresh(first, cols, codes, params, part, cache)
        _refresh(second, cols, codes, params, part, cache)
        sizes = np.ones(2)
        log_q = 0.0
        split = ci == cj
        for t in range(m):
            r = items[t]
            w0 = w1 = 0.0
            for h in range(2):   # one call site: the inlined cell-type dispatch compiles once
                w = math.log(sizes[h]) + _row_log_predictive(r, h, cols, codes, params, rows,
                                                             part, cache)
                if h == 0:
                    w0 = w
                else:
                    w1 = w
            top = max(w0, w1)
            log_norm = top + math.log(math.exp(w0 - top) + math.exp(w1 - top))
            if split:
                s = first if np.random.random() < math.exp(w0 - log_norm) else second
            else:
                s = first if lab[r] == ci else second
            log_q += (w0 if s == 0 else w1) - log_norm
            _row_cells(r, s, 1.0, cols, codes, params, rows, constants, part)
            sizes[s] += 1.0
            if refresh_due(sizes[s]):
                _refresh(s, cols, codes, params, part, cache)
            side[t] = s
        if split:
            old = _log_marginals(cols, codes, params, stats, ci) + math.lgamma(counts[v, ci])
            new = (_log_marginals(cols, codes, params, part, first)
                   + _log_marginals(cols, codes, params, part, second)
                   + math.lgamma(sizes[0]) + math.lgamma(sizes[1]) + log_alpha)
            if math.log(np.random.random()) < new - old - log_q:
                k = n_clusters[v]
                stats, counts = grown(stats, counts, k + 2)
                for c in range(cols.size):
                    for q in range(n_stats):
                        stats[cols[c], ci, q] = part[cols[c], 0, q]
                        stats[cols[c], k, q] = part[cols[c], 1, q]
                lab[j] = k
                for t in range(m):
                    if side[t] == 1:
                        lab[items[t]] = k
                counts[v, ci] = int(sizes[0])
                counts[v, k] = int(sizes[1])
                n_clusters[v] = k + 1
        else:
            size = counts[v, ci] + counts[v, cj]
            old = (_log_marginals(cols, codes, params, stats, ci)
                   + _log_marginals(cols, codes, params, stats, cj)
                   + math.lgamma(counts[v, ci]) + math.lgamma(counts[v, cj]) + log_alpha)
            for c in range(cols.size):   # the merged blocks (statistics are additive)
                for q in range(n_stats):
                    part[cols[c], 0, q] += part[cols[c], 1, q]
            new = _log_marginals(cols, codes, params, part, first) + math.lgamma(size)
            if math.log(np.random.random()) < new - old + log_q:
                last = n_clusters[v] - 1
                for c in range(cols.size):
                    for q in range(n_stats):
                        stats[cols[c], ci, q] = part[cols[c], 0, q]
                counts[v, ci] = size
                for r in range(n):
                    if lab[r] == cj:
                        lab[r] = ci
                # the last cluster takes the merged one's index
                if cj != last:
                    for c in range(cols.size):
                        for q in range(n_stats):
                            stats[cols[c], cj, q] = stats[cols[c], last, q]
                    counts[v, cj] = counts[v, last]
                    for r in range(n):
                        if lab[r] == last:
                            lab[r] = cj
                for c in range(cols.size):
                    for q in range(n_stats):
                        stats[cols[c], last, q] = 0.0
                counts[v, last] = 0
                n_clusters[v] = last
    return stats, counts
