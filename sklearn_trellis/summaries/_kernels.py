"""Numba kernels for sample-set summaries and entropy agglomeration.

All kernels read the :class:`~sklearn_trellis.summaries._input.SampleSet`
layout: ``memberships[i, t, :]`` lists the local blocks holding element ``i``
in sample ``t`` (padded with ``-1``), so one element's row is contiguous.

For a subset ``S`` with ``u_b = |B_b ∩ S|`` elements in block ``b`` of one
sample, the projection entropy (Fidaner & Cemgil 2013, Eq. 11, with the
per-element-information base ``m = |S|``) is::

    H = sum_b (u_b / m) log(m / u_b) = (W log m - sum_b u_b log u_b) / m,

``W = sum_b u_b`` (``= m`` for partitions). The kernels accumulate ``W`` and
``sum u log u`` instead of the entropy itself.
"""

import math

import numpy as np
from numba import njit, prange

from .._core.parallel import parallel_kernel
from .._core.sorting import stable_argsort

# Entropies computed by agglomeration are rounded to this many decimals so that
# exact ties (common with few samples: many subsets have entropy exactly 0) are
# recognised despite rounding errors (below 1e-11 at n = T = 1000).
ENTROPY_DECIMALS = 10
_ROUND_SCALE = 10.0 ** ENTROPY_DECIMALS


@njit(cache=True)
def xlogx_table(size):
    """``[k log k for k in 0..size-1]`` (``0 log 0 = 0``)."""
    table = np.zeros(size)
    for k in range(2, size):
        table[k] = k * math.log(k)
    return table


@njit(cache=True)
def prefix_statistics(memberships, n_blocks, order, with_cod):
    """Incremental projections onto ``S_i = order[:i]``, summed over samples.

    Returns ``(events, entropy_sums)``: ``events[i, k-1]`` counts the blocks
    that reach size ``k`` when ``order[i]`` is added (so the cumulative sum over
    ``i`` counts the blocks of ``PROJ(Z, S_i)`` of size ``>= k``), and
    ``entropy_sums[i]`` is ``sum_t H(PROJ(Z_t, S_{i+1}))``. ``events`` is
    ``(1, 1)`` when ``with_cod`` is false.
    """
    n_samples = memberships.shape[1]
    depth = memberships.shape[2]
    m = order.shape[0]
    kmax = 1
    for t in range(n_samples):
        kmax = max(kmax, n_blocks[t])
    xl = xlogx_table(m + 2)
    events = np.zeros((m, m) if with_cod else (1, 1))
    entropy_sums = np.zeros(m)
    counts = np.zeros(kmax, np.int64)
    for t in range(n_samples):
        total = 0.0
        weight = 0
        for i in range(m):
            element = order[i]
            for d in range(depth):
                b = memberships[element, t, d]
                if b < 0:
                    break
                c = counts[b]
                total += xl[c + 1] - xl[c]
                counts[b] = c + 1
                weight += 1
                if with_cod:
                    events[i, c] += 1.0
            size = i + 1
            entropy_sums[i] += (weight * math.log(size) - total) / size
        for i in range(m):
            for d in range(depth):
                b = memberships[order[i], t, d]
                if b < 0:
                    break
                counts[b] = 0
    return events, entropy_sums


@parallel_kernel
def cooccurrence_counts(by_sample):
    """``C[i, j]`` = number of (sample, block) pairs holding both ``i`` and ``j``.

    ``by_sample`` is the sample-major layout ``(T, n, depth)`` so that the
    inner loop over ``j`` reads contiguous memory.
    """
    n_samples, n, depth = by_sample.shape
    counts = np.zeros((n, n), np.int64)
    for i in prange(n):
        row = np.zeros(n, np.int32)
        for t in range(n_samples):
            labels = by_sample[t]
            if depth == 1:
                b = labels[i, 0]
                if b < 0:
                    continue
                for j in range(n):
                    row[j] += labels[j, 0] == b
            else:
                for d in range(depth):
                    b = labels[i, d]
                    if b < 0:
                        break
                    for j in range(n):
                        for e in range(depth):
                            other = labels[j, e]
                            if other < 0:
                                break
                            if other == b:
                                row[j] += 1
        for j in range(n):
            counts[i, j] = row[j]
    return counts


@njit(cache=True, inline="always")
def _round_entropy(value):
    return round(value * _ROUND_SCALE) / _ROUND_SCALE


@njit(cache=True, inline="always")
def _clear_segment(pool_blocks, start, cap, n_samples, table):
    """Zero ``table[t, b]`` for every block ``b`` of the segment at ``start``."""
    for t in range(n_samples):
        base = start + t * cap
        for e in range(cap):
            b = pool_blocks[base + e]
            if b < 0:
                break
            table[t, b] = 0


@njit(cache=True, inline="always")
def _cross_term(pool_blocks, pool_counts, start, cap, n_samples, hist, xl):
    """``sum_{t,b} [(x+y) log(x+y) - x log x - y log y]``, ``x = hist[t, b] > 0``,
    ``y`` the counts of the subset stored at ``start`` (``cap`` entries per sample)."""
    total = 0.0
    for t in range(n_samples):
        base = start + t * cap
        for e in range(cap):
            b = pool_blocks[base + e]
            if b < 0:
                break
            x = hist[t, b]
            if x > 0:
                y = pool_counts[base + e]
                total += xl[x + y] - xl[x] - xl[y]
    return total


@njit(cache=True, inline="always")
def _row_minimum(distances, alive, n_slots, i):
    best = np.inf
    arg = -1
    for j in range(n_slots):
        if alive[j] and j != i and distances[i, j] < best:
            best = distances[i, j]
            arg = j
    return best, arg


@njit(cache=True, inline="always")
def _singleton_cross_terms(labels_by_sample, hist, xl, partial):
    """Cross terms of the new subset with every element as a singleton (partitions).

    ``partial[c]`` accumulates ``xl[x+1] - xl[x]`` with ``x`` the new subset's
    count in element ``c``'s block: a gather from a table of ``max_blocks``
    entries along contiguous label rows.
    """
    n_samples, n = labels_by_sample.shape
    max_blocks = hist.shape[1]
    partial[:] = 0.0
    table = np.empty(max_blocks)
    for t in range(n_samples):
        for blk in range(max_blocks):
            x = hist[t, blk]
            table[blk] = xl[x + 1] - xl[x] if x > 0 else 0.0
        row = labels_by_sample[t]
        for c in range(n):
            partial[c] += table[row[c]]


@njit(cache=True, inline="always")
def _singleton_columns(labels_by_sample, alive, size):
    """Label columns of the live singletons and the column of each slot (-1: none)."""
    n = alive.shape[0]
    column_of = np.full(n, -1, np.int64)
    count = 0
    for i in range(n):
        if alive[i] and size[i] == 1:
            column_of[i] = count
            count += 1
    columns = np.empty((labels_by_sample.shape[0], count), labels_by_sample.dtype)
    for i in range(n):
        if column_of[i] >= 0:
            for t in range(columns.shape[0]):  # a loop: numba's slice copy compiles slowly
                columns[t, column_of[i]] = labels_by_sample[t, i]
    return columns, column_of


@njit(cache=True, inline="always")
def _join_entropies(pool_blocks, pool_counts, seg_start, cap, alive, size, weight,
                    xlogx_sum, a, n_samples, hist, dense, use_dense, xl, log_table,
                    labels_by_sample, column_of, partial, new_row):
    """``new_row[c]`` = expected entropy of subset ``a`` joined with each live ``c``.

    The cross term walks the sparse histogram of whichever subset touches
    fewer blocks and looks the other one up in its dense histogram (``hist``
    for ``a``; ``dense[c]`` for a non-singleton ``c`` when ``use_dense``).
    Singletons of a partition sample set (``labels_by_sample`` non-empty: the
    label columns of the live singletons, ``column_of[slot]`` their column)
    are done all at once by :func:`_singleton_cross_terms`.
    """
    n = alive.shape[0]
    fast_singletons = labels_by_sample.shape[0] > 0
    if fast_singletons:
        _singleton_cross_terms(labels_by_sample, hist, xl, partial)
    for c in range(n):
        if not alive[c] or c == a:
            new_row[c] = np.inf
            continue
        if fast_singletons and size[c] == 1:
            cross = partial[column_of[c]]
        elif use_dense and size[c] > 1 and cap[a] < cap[c]:
            cross = _cross_term(pool_blocks, pool_counts, seg_start[a], cap[a],
                                n_samples, dense[c], xl)
        else:
            cross = _cross_term(pool_blocks, pool_counts, seg_start[c], cap[c],
                                n_samples, hist, xl)
        m = size[a] + size[c]
        h = ((weight[a] + weight[c]) * log_table[m] - xlogx_sum[a] - xlogx_sum[c]
             - cross) / (m * n_samples)
        new_row[c] = _round_entropy(max(h, 0.0))


@njit(cache=True)
def entropy_tables(n):
    """``(xlogx_table(n + 2), [log k for k in 0..n+1])`` (``log 0`` stored as 0): the
    logarithms of an agglomeration over ``n`` elements, computed compiled so that its
    other kernels only add, multiply and compare (and may run interpreted)."""
    log_table = np.zeros(n + 2)
    for k in range(1, n + 2):
        log_table[k] = math.log(k)
    return xlogx_table(n + 2), log_table


#: Entries of the agglomeration's ``counters``: end of the used pool, live singletons.
POOL_END, N_SINGLETONS = 0, 1


@njit(cache=True)
def entropy_agglomeration_start(memberships, labels_by_sample, max_blocks, cooccurrence,
                                degree, use_dense, xl, log_table):
    """The state of an entropy agglomeration (Fidaner & Cemgil 2013, Section 5) before
    its first merge; :func:`entropy_agglomeration_steps` makes the merges.

    Starting from singletons, repeatedly merge the two current subsets whose
    union has the smallest expected projection entropy (ties: the pair whose
    slot indices are lexicographically smallest; a merged subset takes the
    smaller slot). ``cooccurrence`` and ``degree`` (the number of blocks holding
    each element, summed over samples) give the singleton-pair entropies;
    ``labels_by_sample`` is the (T, n) label array of a partition sample set
    (shape (0, 0) for feature allocations). ``use_dense`` keeps an
    ``(n, T, max_blocks)`` int32 histogram of every live subset (faster, more
    memory). ``xl`` and ``log_table`` are :func:`entropy_tables` ``(n)``: the kernel
    takes no logarithm itself.

    Returns ``(state, outputs)``: the working arrays, and ``(children, distances,
    counts)`` in scikit-learn's encoding, filled by the steps.
    """
    n, n_samples, _ = memberships.shape
    log2 = log_table[2]

    distances = np.full((n, n), np.inf)
    for i in range(n):
        for j in range(n):
            if i != j:
                h = log2 * (degree[i] + degree[j] - 2.0 * cooccurrence[i, j]) / (2.0 * n_samples)
                distances[i, j] = _round_entropy(h)

    alive = np.ones(n, np.bool_)
    cluster_id = np.arange(n)
    size = np.ones(n, np.int64)
    weight = degree.astype(np.float64)  # sum over samples of W
    xlogx_sum = np.zeros(n)               # sum over samples of sum_b u log u
    nearest = np.empty(n, np.int64)
    nearest_value = np.empty(n)
    for i in range(n):
        nearest_value[i], nearest[i] = _row_minimum(distances, alive, n, i)

    # Sparse block histograms of the live subsets: for each slot a segment of
    # the pool holding, per sample, ``cap`` (block, count) entries padded with
    # block -1. A subset touches at most ``depth`` blocks per element, so the
    # live segments never exceed ``n * T * depth`` entries; dead ones are
    # compacted away when the pool is full.
    depth = memberships.shape[2]
    pool_size = 2 * n * n_samples * depth
    pool_blocks = np.full(pool_size, -1, np.int32)
    pool_counts = np.zeros(pool_size, np.int32)
    seg_start = np.empty(n, np.int64)
    cap = np.full(n, depth, np.int64)
    for i in range(n):
        seg_start[i] = i * n_samples * depth
        for t in range(n_samples):
            for d in range(depth):
                pool_blocks[seg_start[i] + t * depth + d] = memberships[i, t, d]
                pool_counts[seg_start[i] + t * depth + d] = 1
    pool_end = n * n_samples * depth

    children = np.empty((max(n - 1, 0), 2), np.int64)
    merge_distances = np.empty(max(n - 1, 0))
    counts = np.empty(max(n - 1, 0), np.int64)
    hist = np.zeros((n_samples, max_blocks), np.int32)
    dense = np.zeros((n, n_samples, max_blocks) if use_dense else (1, 1, 1), np.int32)
    new_row = np.empty(n)
    partial = np.zeros(n)
    n_singletons = n
    new_nnz = np.zeros(n_samples, np.int64)
    size_before = np.ones(n, np.int64)
    counters = np.zeros(2, np.int64)
    counters[POOL_END] = pool_end
    counters[N_SINGLETONS] = n_singletons
    state = (distances, alive, cluster_id, size, weight, xlogx_sum, nearest, nearest_value,
             pool_blocks, pool_counts, seg_start, cap, hist, dense, new_row, partial, new_nnz,
             size_before, xl, log_table, counters)
    return state, (children, merge_distances, counts)


@njit(cache=True)
def entropy_agglomeration_steps(state, outputs, labels_by_sample, singleton_labels, column_of,
                                use_dense, start, stop):
    """Merges ``start .. stop - 1`` of an entropy agglomeration (Fidaner & Cemgil 2013,
    Section 5) from :func:`entropy_agglomeration_start`'s state.

    Repeatedly merge the two current subsets whose union has the smallest
    expected projection entropy (ties: the pair whose slot indices are
    lexicographically smallest; a merged subset takes the smaller slot).
    ``singleton_labels`` and ``column_of`` are the label columns of the live
    singletons of a partition sample set (``labels_by_sample`` itself and
    ``arange(n)`` at the start); returns them, compacted as singletons merge,
    for the next call. Called on consecutive ranges, the merges are those of
    one call over ``0 .. n - 2``.
    """
    (distances, alive, cluster_id, size, weight, xlogx_sum, nearest, nearest_value,
     pool_blocks, pool_counts, seg_start, cap, hist, dense, new_row, partial, new_nnz,
     size_before, xl, log_table, counters) = state
    children, merge_distances, counts = outputs
    n = alive.shape[0]
    n_samples = hist.shape[0]
    pool_size = pool_blocks.shape[0]
    is_partition = labels_by_sample.shape[0] > 0
    pool_end = counters[POOL_END]
    n_singletons = counters[N_SINGLETONS]
    for step in range(start, stop):
        a = -1
        best = np.inf
        for i in range(n):
            if alive[i] and nearest_value[i] < best:
                best = nearest_value[i]
                a = i
        if a < 0:  # cannot happen (entropies are finite); keep the loop safe
            a = 0
            while not alive[a]:
                a += 1
        b = nearest[a]
        if b < a:
            a, b = b, a
        first, second = cluster_id[a], cluster_id[b]
        children[step, 0] = min(first, second)
        children[step, 1] = max(first, second)
        merge_distances[step] = best
        alive[b] = False
        size_before[a] = size[a]
        size_before[b] = size[b]
        size[a] += size[b]
        counts[step] = size[a]
        cluster_id[a] = n + step
        weight[a] += weight[b]

        if use_dense:  # clear the dense histograms of the two parts
            for s in (a, b):
                if size_before[s] > 1:
                    _clear_segment(pool_blocks, seg_start[s], cap[s], n_samples, dense[s])
        # dense histogram of the merged subset, and its sparse segment
        new_cap = 1
        for t in range(n_samples):
            nnz = 0
            for s in (a, b):
                base = seg_start[s] + t * cap[s]
                for e in range(cap[s]):
                    blk = pool_blocks[base + e]
                    if blk < 0:
                        break
                    if hist[t, blk] == 0:
                        nnz += 1
                    hist[t, blk] += pool_counts[base + e]
            new_nnz[t] = nnz
            new_cap = max(new_cap, nnz)
        needed = new_cap * n_samples
        if pool_end + needed > pool_size:  # compact the live segments
            order = stable_argsort(seg_start)  # live segments' starts are distinct
            end = 0
            for k in range(n):
                s = order[k]
                if not alive[s] and s != b:  # b's old segment is still read below
                    continue
                length = cap[s] * n_samples
                for e in range(length):
                    pool_blocks[end + e] = pool_blocks[seg_start[s] + e]
                    pool_counts[end + e] = pool_counts[seg_start[s] + e]
                seg_start[s] = end
                end += length
            pool_end = end
        new_start = pool_end
        pool_end += needed
        total = 0.0
        for t in range(n_samples):
            fill = 0
            out = new_start + t * new_cap
            for s in (a, b):
                base = seg_start[s] + t * cap[s]
                for e in range(cap[s]):
                    blk = pool_blocks[base + e]
                    if blk < 0:
                        break
                    x = hist[t, blk]
                    if x > 0:  # first visit: emit, then mark by negating
                        pool_blocks[out + fill] = blk
                        pool_counts[out + fill] = x
                        total += xl[x]
                        if use_dense:
                            dense[a, t, blk] = x
                        fill += 1
                        hist[t, blk] = -x
            for e in range(fill):
                blk = pool_blocks[out + e]
                hist[t, blk] = -hist[t, blk]
            for e in range(fill, new_cap):
                pool_blocks[out + e] = -1
        seg_start[a] = new_start
        cap[a] = new_cap
        xlogx_sum[a] = total

        # entropies of the new subset joined with every other live subset
        _join_entropies(pool_blocks, pool_counts, seg_start, cap, alive, size, weight,
                        xlogx_sum, a, n_samples, hist, dense, use_dense, xl, log_table,
                        singleton_labels, column_of, partial, new_row)
        n_singletons -= (size_before[a] == 1) + (size_before[b] == 1)
        if is_partition and 4 * n_singletons < singleton_labels.shape[1]:
            # keep only the live singletons' label columns (amortised O(T n))
            singleton_labels, column_of = _singleton_columns(labels_by_sample, alive, size)
        _clear_segment(pool_blocks, new_start, new_cap, n_samples, hist)

        for c in range(n):
            distances[a, c] = new_row[c]
            distances[c, a] = new_row[c]
            distances[b, c] = np.inf
            distances[c, b] = np.inf
        distances[a, a] = np.inf
        for i in range(n):
            if not alive[i]:
                continue
            if i == a or nearest[i] == a or nearest[i] == b:
                nearest_value[i], nearest[i] = _row_minimum(distances, alive, n, i)
            elif distances[i, a] < nearest_value[i] or (
                    distances[i, a] == nearest_value[i] and a < nearest[i]):
                nearest_value[i] = distances[i, a]
                nearest[i] = a
    counters[POOL_END] = pool_end
    counters[N_SINGLETONS] = n_singletons
    return singleton_labels, column_of


__all__ = ["prefix_statistics", "cooccurrence_counts", "entropy_tables",
           "entropy_agglomeration_start",
           "entropy_agglomeration_steps",
           "xlogx_table", "ENTROPY_DECIMALS"]
