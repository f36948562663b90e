"""Numba kernels of the sub-cluster sampler (templates over a likelihood's kernels).

The templates call a likelihood's uncollapsed kernels (``lik_suff_add_rows``,
``lik_suff_to_stats``, ``lik_draw_theta``, ``lik_log_density_block``: a block of rows
against every cluster) and its collapsed
``lik_log_cluster``; :func:`specialise` compiles them for one likelihood
(:mod:`sklearn_trellis._core.specialise`).

Random numbers of the row passes are counter based: row ``i`` of a pass keyed ``key``
uses the uniform :func:`row_uniform` ``(key, i)``, so a pass draws the same numbers
whatever the number of threads, the block each row falls in or the order blocks run in
(the same chain on any number of threads, and on any sharding of the rows).
"""

import math

import numpy as np
from numba import njit, prange

from ..._core.specialise import specialise as _specialise, template
from ...models.likelihood import uncollapsed_bindings
from ...models.prior_kernels import log_block

#: Rows per block of the parallel label pass (fixed: the chain does not depend on threads).
BLOCK_ROWS = 4096

#: Rows scored at a time inside a block (their cluster-by-row table fits in cache).
SCORE_ROWS = 256

#: Below this, ``math.exp`` returns 0.0 (the smallest subnormal is ``exp(-744.4)``; a
#: margin for any libm).
EXP_UNDERFLOW = -800.0

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def row_uniform(key, i):
    """A uniform in ``[0, 1)`` from the pass key and the row index (splitmix64 finaliser)."""
    x = np.uint64(key) + np.uint64(i + 1) * _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _MIX_1
    x = (x ^ (x >> np.uint64(27))) * _MIX_2
    x = x ^ (x >> np.uint64(31))
    return float(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)


#: An entry whose log weight lies this far below one already summed is not computed:
#: ``exp(-38) < 2**-54`` (with a margin for the rounding of ``exp``), and a weight below
#: ``2**-54`` times a running sum is less than half its last bit: adding it changes nothing.
NEGLIGIBLE_NATS = 38.0


@njit(cache=True)
def _pick(logw, n, u):
    """Index drawn with probability proportional to ``exp(logw[:n])`` from the uniform ``u``.

    The index is, bit for bit, that of the plain draw: the weights ``exp(logw[a] - max)``
    summed in order, then the first cumulative sum above ``u`` times the total. Two kinds
    of entries are not computed, since their weights leave every sum unchanged: those
    below ``EXP_UNDERFLOW`` (``exp`` is exactly 0.0) and those ``NEGLIGIBLE_NATS`` below
    an entry already summed (less than half the running sum's last bit). ``logw`` is
    overwritten with the weights: 0.0 below ``EXP_UNDERFLOW``, and for a negligible
    entry its (negative) log weight relative to the largest.
    """
    largest = -np.inf
    for a in range(n):
        if logw[a] > largest:
            largest = logw[a]
    total = 0.0
    summed = -np.inf  # the largest log weight summed so far: the sum is at least its exp
    for a in range(n):
        delta = logw[a] - largest
        if not delta > EXP_UNDERFLOW:   # exp is exactly 0.0 (a NaN weight counts as 0)
            logw[a] = 0.0
        elif delta < summed - NEGLIGIBLE_NATS:
            logw[a] = delta
        else:
            logw[a] = math.exp(delta)
            total += logw[a]
            summed = max(summed, delta)
    target = u * total
    cumulative = 0.0
    for a in range(n):
        if logw[a] > 0.0:
            cumulative += logw[a]
        if cumulative > target:
            return a
    for a in range(n - 1, -1, -1):  # rounding: the last positive weight
        if logw[a] > 0.0 or (logw[a] < 0.0 and math.exp(logw[a]) > 0.0):
            return a
    return n - 1


@template(parallel=True)
def propose_labels(params, theta, log_pi, n_clusters, data, labels, pinned, key, out_labels,
                   block_counts, n_slots):
    """Every unpinned row drawn from ``pi_k f(x_i | theta_k)``, ``k < n_clusters``, into
    ``out_labels`` (pinned rows keep their label); ``block_counts[b, k]``: rows of block
    ``b`` given ``k``; ``n_slots``: the threads (any number gives the same labels).

    The threads share out chunks of ``SCORE_ROWS`` rows (a block holds a whole number of
    them), not whole blocks: 10^4 rows are 40 chunks but only 3 blocks. A row's chunk is
    the same either way, so are its density and its label. Each thread takes every
    ``n_slots``-th chunk with one table for all of them: a table per chunk (128 KiB from
    64 clusters on) can be a fresh mapping of pages to fault in when the allocator
    returns freed memory to the OS at once (Dask's workers set ``MALLOC_TRIM_THRESHOLD_``
    to 64 KiB; ten passes over 200,000 x 16 rows, 64 clusters: 20,530 to 150,050 page
    faults with a table per chunk, 21,020 with one per thread).
    """
    n = labels.size
    n_chunks = -(-n // SCORE_ROWS)
    chunk_counts = np.zeros((n_chunks, n_clusters), np.int64)
    n_slots = max(1, min(n_slots, n_chunks))
    for slot in prange(n_slots):
        # the (clusters, rows) table of one chunk stays in cache
        table = np.empty(n_clusters * SCORE_ROWS)
        logw = np.empty(n_clusters)
        for ch in range(slot, n_chunks, n_slots):
            start = ch * SCORE_ROWS
            size = min(n, start + SCORE_ROWS) - start
            logp = table[:n_clusters * size].reshape((n_clusters, size))
            # -inf where a weight is certainly below exp(-NEGLIGIBLE_NATS - 1) of the row's
            # largest: less than 2**-54 of the total, as the entries _pick leaves out
            lik_log_density_screen(params, theta, n_clusters, data,
                                   np.arange(start, start + size), log_pi,
                                   NEGLIGIBLE_NATS + 1.0, logp)
            for t in range(size):
                i = start + t
                if pinned[i]:
                    choice = labels[i]
                else:
                    for c in range(n_clusters):
                        logw[c] = log_pi[c] + logp[c, t]
                    choice = _pick(logw, n_clusters, row_uniform(key, i))
                out_labels[i] = choice
                chunk_counts[ch, choice] += 1
    block_counts[:] = 0
    per_block = BLOCK_ROWS // SCORE_ROWS
    for ch in range(n_chunks):
        for c in range(n_clusters):
            block_counts[ch // per_block, c] += chunk_counts[ch, c]


@njit(cache=True)
def group_rows(labels, n_clusters):
    """Rows sorted by label (stable): ``(rows, offsets)``; cluster ``c`` holds
    ``rows[offsets[c]:offsets[c + 1]]``."""
    offsets = np.zeros(n_clusters + 1, np.int64)
    for i in range(labels.size):
        offsets[labels[i] + 1] += 1
    for c in range(n_clusters):
        offsets[c + 1] += offsets[c]
    fill = offsets[:-1].copy()
    rows = np.empty(labels.size, np.int64)
    for i in range(labels.size):
        c = labels[i]
        rows[fill[c]] = i
        fill[c] += 1
    return rows, offsets


@template
def accumulate_suff(params, data, rows, offsets, suff):
    """``suff[c]`` = sufficient statistics of ``data[rows[offsets[c]:offsets[c+1]]]``, rows
    added in fixed chunks (the predictive's per-row statistics; the sampler's sums go per
    global block, :mod:`._shard_kernels`)."""
    n_clusters = offsets.size - 1
    for c in range(n_clusters):
        for k in range(suff.shape[1]):
            suff[c, k] = 0.0
        for start in range(offsets[c], offsets[c + 1], BLOCK_ROWS):
            stop = min(offsets[c + 1], start + BLOCK_ROWS)
            lik_suff_add_rows(params, data, rows[start:stop], suff, c)


@template
def draw_thetas(params, suff, stats, theta, n_clusters, seed):
    """``theta[c]`` ~ posterior given ``suff[c]`` for ``c < n_clusters`` (``stats`` is scratch)."""
    np.random.seed(seed)
    for c in range(n_clusters):
        lik_suff_to_stats(params, suff, stats, c)
        lik_draw_theta(params, stats, c, theta)


@template
def log_marginals(params, suff, stats, n_clusters, out):
    """``out[c] = log m(X_c)`` from ``suff[c]``; ``stats`` receives the collapsed rows."""
    shared = np.zeros(1)
    for c in range(n_clusters):
        lik_suff_to_stats(params, suff, stats, c)
        out[c] = lik_log_cluster(params, stats, shared, c)


#: Weight of the uniform choice in a merge's choice of partner (the rest follows the
#: partners' merge scores); it keeps every merge possible whatever the scores.
PARTNER_UNIFORM = 0.1


@template
def partner_log_weights(params, pp, suff, counts, k, stats, out):
    """``out[c]``: log probability that a merge of cluster ``k`` picks cluster ``c``.

    Mostly in proportion to ``exp(score)``, the score being the merge's log posterior
    ratio ``log p(z merged) - log p(z)`` without the count factor shared by all partners,
    mixed with a uniform choice (weight :data:`PARTNER_UNIFORM`); ``out[k] = -inf``.
    ``suff`` and ``counts`` are the clusters' statistics and sizes, ``stats`` is scratch
    with as many rows.
    """
    n_clusters = counts.size
    shared = np.zeros(1)
    single = np.empty(n_clusters)
    for c in range(n_clusters):
        lik_suff_to_stats(params, suff, stats, c)
        single[c] = lik_log_cluster(params, stats, shared, c)
    merged = np.empty((1, suff.shape[1]))
    merged_stats = np.zeros((1, stats.shape[1]))
    largest = -np.inf
    for c in range(n_clusters):
        out[c] = -np.inf
        if c == k:
            continue
        for a in range(suff.shape[1]):
            merged[0, a] = suff[k, a] + suff[c, a]
        lik_suff_to_stats(params, merged, merged_stats, 0)
        out[c] = (log_block(pp, counts[k] + counts[c]) - log_block(pp, counts[k])
                  - log_block(pp, counts[c]) + lik_log_cluster(params, merged_stats, shared, 0)
                  - single[k] - single[c])
        largest = max(largest, out[c])
    if n_clusters < 2:
        return
    total = 0.0
    for c in range(n_clusters):
        if c != k:
            total += math.exp(out[c] - largest)
    for c in range(n_clusters):
        if c != k:
            out[c] = math.log((1.0 - PARTNER_UNIFORM) * math.exp(out[c] - largest) / total
                              + PARTNER_UNIFORM / (n_clusters - 1))


@njit(cache=True)
def members_of(labels, first, second):
    """Rows whose label is ``first`` or ``second`` (increasing), and their labels' side (0 or 1)."""
    count = 0
    for i in range(labels.size):
        if labels[i] == first or labels[i] == second:
            count += 1
    rows = np.empty(count, np.int64)
    sides = np.empty(count, np.int64)
    count = 0
    for i in range(labels.size):
        if labels[i] == first or labels[i] == second:
            rows[count] = i
            sides[count] = 0 if labels[i] == first else 1
            count += 1
    return rows, sides


@njit(cache=True)
def row_at_rank(labels, cluster, rank, skip, inside):
    """The ``rank``-th row (increasing) of ``cluster`` other than ``skip`` (``inside``), or
    of the rows outside ``cluster`` (not ``inside``)."""
    seen = 0
    for i in range(labels.size):
        if i == skip or (labels[i] == cluster) != inside:
            continue
        if seen == rank:
            return i
        seen += 1
    return -1


@njit(cache=True)
def rows_at_ranks(labels, ranks, out):
    """``out[c]`` = the ``ranks[c]``-th row (increasing) of cluster ``c``."""
    seen = np.zeros(ranks.size, np.int64)
    for i in range(labels.size):
        c = labels[i]
        if seen[c] == ranks[c]:
            out[c] = i
        seen[c] += 1


@njit(cache=True)
def relabel(labels, rows, sides, side, new_label):
    """``labels[rows[t]] = new_label`` where ``sides[t] == side``."""
    for t in range(rows.size):
        if sides[t] == side:
            labels[rows[t]] = new_label


@njit(cache=True)
def replace_label(labels, old, new):
    for i in range(labels.size):
        if labels[i] == old:
            labels[i] = new


def specialise(likelihood):
    """A namespace of the sub-cluster kernels compiled for one likelihood."""
    return _specialise(globals(), uncollapsed_bindings(likelihood))
