"""Numba kernels of CrossCat: a column's statistics and score under a partition, and the chain state.

A column ``x`` (NaN = missing) of cell type ``t`` with cell params ``p`` is
scored under a view's row partition (slot ``labels``) by
``sum_c log m(x_c)`` (Murphy Eq. 41, one column's factor); the statistics
table ``stats`` (one row per slot) is what the view keeps for that column.

The chain state (:class:`.crosscat.CrossCatState`) is a few flat arrays, read
and written by the move kernels (:mod:`._crosscat_rows`, :mod:`._crosscat_columns`):

- ``view_of (d,)``: view slot of each column; ``n_columns (V,)``: columns per
  slot (0: a free slot; ``V = d + 1``, so a free slot always exists);
- ``labels (V, n)``: row cluster of each row in each occupied slot, ``0..K_v-1``
  with ``K_v = n_clusters[v]``; ``counts (V, Kc)``: rows per cluster;
  ``alphas (V,)``: the row concentration of each view;
- ``stats (d, Kc, S)``: each column's cell statistics per cluster of its view.

Invariant: ``counts[v, k]`` and ``stats[j, k]`` are zero for ``k >= K`` of the
view, so a new cluster's block is ready, and :func:`grown` extends both to more
clusters (the kernels that open clusters return the possibly new arrays).
"""

import math

import numpy as np
from numba import njit

from ..._core.specialise import template
from ...models.cell_kernels import (table_accumulate_at, table_accumulate_with_constant_at,
                                    table_cell_constant,
                                    table_cached_log_predictive_at, table_grid_log_scores_at,
                                    table_log_marginal_at, table_predictive_cache_at)
from ...models.prior_kernels import log_rising_factorial


@template
def column_partition_score(t, p, x, constants, labels, n_slots, scratch):
    """``sum_c log m(x_c)`` of the column under the slot ``labels`` in one pass.

    ``scratch`` (``(n_slots', n_stats)``, ``n_slots' >= n_slots``) holds the statistics
    (zeroed here): a column move scores every view without an allocation per view.
    ``constants``: the column's :func:`cell_constants`,
    read instead of computed per cell (the same sums as
    :func:`~sklearn_trellis.models.cell_loops.column_stats`).
    """
    width = scratch.shape[1]
    flat = scratch.ravel()
    flat[:n_slots * width] = 0.0
    for i in range(x.size):
        c = labels[i]
        if c >= 0:
            table_accumulate_with_constant_at(t, p, np.int64(0), flat, c * width, x[i],
                                              constants[i], 1.0)
    total = 0.0
    for c in range(n_slots):
        total += table_log_marginal_at(t, p, np.int64(0), flat, c * width)
    return total


@template
def cell_constants(t, x):
    """:func:`~sklearn_trellis.models.cell_kernels.cell_constant` of each cell of a column of
    type ``t`` (0 for a missing one)."""
    out = np.zeros(x.size)
    for i in range(x.size):
        out[i] = table_cell_constant(t, x[i])
    return out


@njit(cache=True)
def reseed(seed):
    """Seed numba's generator with ``seed``; a negative seed leaves it as it stands."""
    if seed >= 0:
        np.random.seed(seed)


@njit(cache=True)
def draw_below(n):
    """``np.random.randint(n)`` on numba's generator (for a sweep sequenced in Python)."""
    return np.random.randint(n)


@njit(cache=True)
def crp_labels(n, alpha, seed, labels):
    """A partition of ``n`` items drawn from CRP(alpha) (sequential seating), labels ``0..K-1``."""
    np.random.seed(seed)
    return crp_draw(n, alpha, labels)


@njit(cache=True, inline='always')
def _splitmix64(state):
    """The next SplitMix64 state and its uniform on ``[0, 1)`` (Steele, Lea & Flood 2014)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return state, float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def crp_draw(n, alpha, labels):
    """:func:`crp_labels` on numba's generator as it stands; returns the number of clusters.

    Item ``i`` opens a cluster with probability ``alpha / (i + alpha)``, else joins
    the cluster of a uniformly drawn earlier item, which is joining cluster ``c``
    with probability ``n_c / (i + alpha)``: the CRP's seating in O(1) per item, with
    one uniform ``u`` on ``[0, i + alpha)``: below ``alpha`` a new cluster, else item
    ``floor(u - alpha)``. The uniforms come from SplitMix64 seeded by numba's generator
    (a third of the cost of a ``np.random.random`` per item: an auxiliary view of a
    column move draws one per row).
    """
    state = np.uint64(np.random.randint(0, 2 ** 62))
    k = 0
    for i in range(n):
        state, u = _splitmix64(state)
        u *= i + alpha
        if u < alpha:
            labels[i] = k
            k += 1
        else:
            labels[i] = labels[min(int(u - alpha), i - 1)]
    return k


#: A cluster being built by a sequential-allocation proposal refreshes its predictive
#: constants after each new member while it holds at most this many, then after every
#: ``REFRESH_EVERY``-th.
REFRESH_ALWAYS = 32
REFRESH_EVERY = 8


@njit(cache=True, inline='always')
def refresh_due(size):
    """Whether a cluster of ``size`` members built by a proposal refreshes its predictive
    constants now.

    The constants only shape the proposal: a predictive a few members out of date is
    as valid a proposal (the reverse move's probability is computed on the same
    schedule, so the Metropolis-Hastings ratio stays exact), and a large cluster
    barely changes with one more member. Refreshing costs a few logs per column;
    scoring a member, one.
    """
    return size <= REFRESH_ALWAYS or size % REFRESH_EVERY == 0


@template
def _refresh_cluster(t, p, flat, base, n_stats):
    """The one-cell predictive constants of the cluster at ``flat[base:]`` into
    ``flat[base + n_stats:]`` (a call, not the inlined dispatch over every cell type at
    each of the proposal's three refreshes: compile time)."""
    table_predictive_cache_at(t, p, 0, flat, base, flat, base + n_stats)


@template
def sequential_allocation(members, m, codes, params, columns, alpha, order, labels, stats,
                          counts, sample):
    """Rows allocated in ``order`` to CRP(alpha) clusters by the joint predictive of the
    columns ``members[:m]``: the proposal of the column and view split-merge moves (a
    one-pass DP mixture of those columns alone; of one column for the column move and
    the view move's launch).

    Row ``order[k]`` joins cluster ``c`` with probability proportional to
    ``n_c prod_l p(x_l | c)`` (missing cells: a factor 1), a new one to
    ``alpha prod_l p(x_l)``. ``sample``: draw ``labels`` (numba's generator, in order of
    first appearance along ``order``); otherwise score the given ``labels``. Returns
    ``log q(labels)``. ``stats`` (``>= m``, n + 1, 2 n_stats) and ``counts`` (n + 1) are
    scratch: per column, each cluster's statistics then its one-cell predictive constants
    (refreshed on the schedule of :func:`refresh_due`).
    """
    n = labels.size
    relabel = np.full(n + 1, -1, np.int64)
    weights = np.empty(n + 1)
    probs = np.empty(n + 1)
    log_counts = np.empty(n + 1)
    n_stats = stats.shape[2] // 2
    width = 2 * n_stats
    counts[:] = 0.0
    for a in range(m):
        flat = stats[a].ravel()
        for q in range(flat.size):   # a loop: an array-wide assignment compiles more code
            flat[q] = 0.0
        _refresh_cluster(codes[members[a]], params[members[a]], flat, np.int64(0), n_stats)
    k = 0
    log_q = 0.0
    log_counts[0] = math.log(alpha)
    for pos in range(n):
        i = order[pos]
        for c in range(k + 1):
            weights[c] = log_counts[c]
        for a in range(m):
            j = members[a]
            t, p, x, flat = codes[j], params[j], columns[j, i], stats[a].ravel()
            if x == x:
                for c in range(k + 1):
                    weights[c] += table_cached_log_predictive_at(t, p, 0, flat, c * width, flat,
                                                                 c * width + n_stats, x)
        largest = -np.inf
        for c in range(k + 1):
            if weights[c] > largest:
                largest = weights[c]
        total = 0.0
        for c in range(k + 1):
            probs[c] = math.exp(weights[c] - largest)
            total += probs[c]
        if sample:
            u = np.random.random() * total
            chosen = k
            acc = 0.0
            for c in range(k + 1):
                acc += probs[c]
                if u < acc:
                    chosen = c
                    break
            labels[i] = chosen
        else:   # replay: the given labels renumbered in order of first appearance
            if relabel[labels[i]] < 0:
                relabel[labels[i]] = k
            chosen = relabel[labels[i]]
        log_q += weights[chosen] - largest - math.log(total)
        if chosen == k:
            k += 1
            log_counts[k] = log_counts[k - 1]   # alpha's weight moves to the next new cluster
            for a in range(m):
                _refresh_cluster(codes[members[a]], params[members[a]], stats[a].ravel(),
                                 k * width, n_stats)
        counts[chosen] += 1.0
        for a in range(m):
            j = members[a]
            x = columns[j, i]
            if x == x:
                flat = stats[a].ravel()
                table_accumulate_at(codes[j], params[j], np.int64(0), flat, chosen * width, x, 1.0)
                if refresh_due(counts[chosen]):
                    _refresh_cluster(codes[j], params[j], flat, chosen * width, n_stats)
        log_counts[chosen] = math.log(counts[chosen])
    return log_q



# ---------------------------------------------------------------- the chain state
@njit(cache=True)
def crp_log_eppf(alpha, counts, n_clusters, n):
    """``log`` CRP(alpha) probability of a partition of ``n`` items with these cluster sizes."""
    total = n_clusters * math.log(alpha) - log_rising_factorial(alpha, float(n))
    for k in range(n_clusters):
        total += math.lgamma(float(counts[k]))
    return total


@njit(cache=True)
def view_columns(v, view_of):
    """The columns of view slot ``v``, in increasing order."""
    m = 0
    for j in range(view_of.size):
        if view_of[j] == v:
            m += 1
    out = np.empty(m, np.int64)
    m = 0
    for j in range(view_of.size):
        if view_of[j] == v:
            out[m] = j
            m += 1
    return out


@njit(cache=True)
def grown(stats, counts, needed):
    """``(stats, counts)`` with room for ``needed`` clusters per view (the same arrays if
    they have it; otherwise at least twice the clusters, zero-filled)."""
    have = stats.shape[1]
    if needed <= have:
        return stats, counts
    size = max(needed, 2 * have)
    # loops, not slice copies: numba compiles a strided slice assignment for seconds
    new_stats = np.zeros((stats.shape[0], size, stats.shape[2]))
    for j in range(stats.shape[0]):
        for k in range(have):
            for s in range(stats.shape[2]):
                new_stats[j, k, s] = stats[j, k, s]
    new_counts = np.zeros((counts.shape[0], size), np.int64)
    for v in range(counts.shape[0]):
        for k in range(have):
            new_counts[v, k] = counts[v, k]
    return new_stats, new_counts


@template
def fill_column(j, t, p, x, constants, labels, n_clusters, stats, clear):
    """``stats[j]``: column ``j``'s statistics per cluster of ``labels`` (``0..n_clusters-1``).

    ``clear`` blocks are zeroed first (at least ``n_clusters``: also those of a view
    the column leaves, which may have more clusters).
    """
    width = stats.shape[2]
    stats[j, :max(clear, n_clusters), :] = 0.0
    flat = stats.ravel()
    base = j * stats.shape[1] * width
    for i in range(x.size):
        table_accumulate_with_constant_at(t, p, np.int64(0), flat, base + labels[i] * width, x[i],
                                          constants[i], 1.0)


@njit(cache=True)
def fill_counts(v, labels, counts, n_clusters, clear):
    """``counts[v]`` from ``labels[v]`` (the first ``max(clear, n_clusters[v])`` zeroed)."""
    counts[v, :max(clear, n_clusters[v])] = 0
    for i in range(labels.shape[1]):
        counts[v, labels[v, i]] += 1


@template
def fill_view(v, codes, params, columns, constants, view_of, labels, counts,
              n_clusters, stats, clear):
    """Counts and every column's statistics of view slot ``v`` from its labels."""
    fill_counts(v, labels, counts, n_clusters, clear)
    for j in range(view_of.size):
        if view_of[j] == v:
            fill_column(j, codes[j], params[j], columns[j], constants[j], labels[v],
                        n_clusters[v], stats, clear)


@template
def column_table_score(t, p, stats, j, n_clusters):
    """``sum_k log m`` of column ``j``'s first ``n_clusters`` blocks of ``stats``."""
    width = stats.shape[2]
    flat = stats.ravel()
    base = j * stats.shape[1] * width
    total = 0.0
    for k in range(n_clusters):
        total += table_log_marginal_at(t, p, np.int64(0), flat, base + k * width)
    return total


@template
def column_grid_scores(t, grid, n_points, log_prior, stats, j, n_clusters, out):
    """``out[g] = log_prior[g] + sum_k log m(x_k | grid[g])`` over column ``j``'s first
    ``n_clusters`` blocks, for the first ``n_points`` grid points."""
    width = stats.shape[2]
    table_grid_log_scores_at(t, grid, n_points, log_prior, stats.ravel(),
                             j * stats.shape[1] * width, width, n_clusters, out)
