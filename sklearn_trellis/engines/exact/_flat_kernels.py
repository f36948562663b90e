"""Numba kernels of the exact flat cluster trellis (Greenberg et al. 2018).

Tables are indexed by bitmask subsets (see ``_subsets``). For a subset ``S``
whose highest item is ``h``, every flat clustering of ``S`` has exactly one
cluster ``B`` containing ``h``; writing ``S = {h} | j`` and ``B = {h} | t``
with ``t`` a subset of ``j``, and ``e`` the cluster log-potential table,

    log Z(S)   = logsumexp_{t subset of j} e({h} | t) + log Z(j \\ t)   (Fact 1)
    MAP(S)     = max_{t subset of j}       e({h} | t) + MAP(j \\ t)     (Fact 3)

The subsets with highest item ``h`` are the contiguous *layer*
``[2**h, 2**(h+1))`` and depend only on the layer's own slice of ``e`` and on
the tables below ``2**h``: each layer is one subset convolution of contiguous
arrays, computed for ``h = 0, 1, ..., N-1``. The heavy convolutions are the
blocked kernels of ``_flat_block_kernels``; the functions here prepare their
inputs (linear-space scaling), give the log-space fallback and the small
layers, and the other passes (MAP back-track, marginals, number of clusters,
sampling).
"""

import math

import numpy as np
from numba import njit, prange

from ..._core.subsets import (chunk_bounds, logsumexp_buffer, lowest_bit_index, n_parallel_chunks,
                              popcount)

#: Log-space sums skip terms this far (plus ``n log 2``) below their largest.
LOG_CUT = 50.0

#: Probabilities below this are stored as zero (keeps the arithmetic away
#: from subnormal numbers, which are slow; the absolute error is negligible).
PROB_FLOOR = 1e-300


@njit(cache=True)
def finite_range(values):
    """``(min, max)`` over the finite entries; ``(inf, -inf)`` if there are none."""
    low = np.inf
    high = -np.inf
    for x in values:
        if x > -np.inf:
            if x < low:
                low = x
            if x > high:
                high = x
    return low, high


@njit(cache=True)
def exp_shifted_range(values, shift, out, start, stop):
    """``out[i] = exp(values[i] + shift)`` (``0`` for ``-inf``), ``start <= i < stop``."""
    for i in range(start, stop):
        x = values[i]
        out[i] = math.exp(x + shift) if x > -np.inf else 0.0


@njit(cache=True, parallel=True)
def exp_shifted_blocks(values, shift, out):
    """:func:`exp_shifted_range` over all entries, on all threads."""
    n_chunks, chunk_size = n_parallel_chunks(values.size)
    for chunk in prange(n_chunks):
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, values.size)
        exp_shifted_range(values, shift, out, start, stop)


@njit(cache=True)
def log_shifted_range(values, shift, start, stop):
    """``values[i] = log(values[i]) + shift`` (``-inf`` for ``0``), ``start <= i < stop``."""
    for i in range(start, stop):
        x = values[i]
        values[i] = math.log(x) + shift if x > 0.0 else -np.inf


@njit(cache=True, parallel=True)
def log_shifted_blocks(values, shift):
    """:func:`log_shifted_range` over all entries, on all threads."""
    n_chunks, chunk_size = n_parallel_chunks(values.size)
    for chunk in prange(n_chunks):
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, values.size)
        log_shifted_range(values, shift, start, stop)


@njit(cache=True)
def conv_logsumexp_range(a, b, out, start, stop):
    """``out[j] = logsumexp_{t subset of j} a[t] + b[j ^ t]`` in log space, ``start <= j < stop``.

    The fallback for layers whose values span too wide a range for the linear
    kernel, and for the small layers. On entry ``out[j]`` must hold the largest
    term ``max_t a[t] + b[j ^ t]`` (the ``(max, +)`` convolution). Terms more
    than ``LOG_CUT + |j| log 2`` below it are skipped: with ``2**|j|`` terms
    their sum is below ``exp(-LOG_CUT) = 2e-22`` times the result, far
    under its rounding. The kept terms go through the vectorised
    ``sum_exp_shifted``: for large potentials most terms are skipped.
    """
    size = 1
    while size <= stop - 1:
        size *= 2
    terms = np.empty(size)
    scratch = np.empty(size, np.int64)
    for j in range(start, stop):
        largest = out[j]
        if largest == -np.inf:
            continue
        cut = largest - (LOG_CUT + popcount(j) * 0.6931471805599453)
        n_terms = 0
        t = j
        while True:
            term = a[t] + b[j ^ t]
            if term >= cut:
                terms[n_terms] = term
                n_terms += 1
            if t == 0:
                break
            t = (t - 1) & j
        out[j] = logsumexp_buffer(terms, scratch, n_terms, largest)


@njit(cache=True, parallel=True)
def conv_logsumexp_blocks(a, b, out, n_bits):
    """:func:`conv_logsumexp_range` over all ``2**n_bits`` outputs, on all threads."""
    total = 1 << n_bits
    n_chunks, chunk_size = n_parallel_chunks(total)
    for chunk in prange(n_chunks):
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, total)
        conv_logsumexp_range(a, b, out, start, stop)


@njit(cache=True)
def conv_max_small(a, b, out, n_bits):
    """``out[j] = max_{t subset of j} a[t] + b[j ^ t]`` for small layers (any ``n_bits``)."""
    for j in range(1 << n_bits):
        best = -np.inf
        t = j
        while True:
            value = a[t] + b[j ^ t]
            if value > best:
                best = value
            if t == 0:
                break
            t = (t - 1) & j
        out[j] = best
    return out


@njit(cache=True)
def n_clusters_range(a, b, log_z_out, probs, dest, block_bits, first, start, stop,
                     linear):
    """Number-of-clusters distributions of the subsets ``{h} | j`` of one layer.

    ``probs[k, u]`` is the probability that a clustering of subset ``u`` (a
    column for every subset below ``2**h``) has ``k`` clusters. With ``pi(t | j)``
    the probability that the cluster of ``h`` is ``{h} | t``,

        P_j[k + 1] = sum_{t subset of j} pi(t | j) probs[k, j ^ t].

    ``j = (jh << block_bits) | jl`` for the blocks ``start <= jh < stop``; the
    distribution of ``j`` goes to ``dest[:, j - (first << block_bits)]``. Only
    the ``k <= |u|`` are visited.

    ``linear``: ``a`` and ``b`` hold scaled linear weights ``A, B`` with
    ``A[t] B[u] >= 1`` or ``0`` (one product per term, no exponential) and the
    row is normalised by its sum. Otherwise ``a`` is the log-potential slice,
    ``b`` the ``log Z`` below the layer, ``log_z_out`` the layer's ``log Z``,
    and ``pi = exp(a[t] + b[u] - log Z(S))``. Columns are stored normalised, with
    entries below ``PROB_FLOOR`` set to zero.
    """
    width = probs.shape[0]
    size = 1 << block_bits
    low_mask = size - 1
    acc = np.empty((size, width))
    for jh in range(start, stop):
        acc[:, :] = 0.0
        th = jh
        while True:
            uh = jh ^ th
            n_k_high = popcount(uh) + 1
            for tl in range(size):
                t = (th << block_bits) | tl
                a_t = a[t]
                if linear and a_t == 0.0:
                    continue
                free = low_mask & ~tl
                ul = free
                while True:
                    u = (uh << block_bits) | ul
                    jl = tl | ul
                    if linear:
                        weight = a_t * b[u]
                    else:
                        value = a_t + b[u] - log_z_out[(jh << block_bits) | jl]
                        weight = math.exp(value) if value > -745.0 else 0.0
                    if weight > 0.0:
                        for k in range(n_k_high + popcount(ul)):
                            acc[jl, k + 1] += weight * probs[k, u]
                    if ul == 0:
                        break
                    ul = (ul - 1) & free
            if th == 0:
                break
            th = (th - 1) & jh
        for jl in range(size):
            row = ((jh - first) << block_bits) | jl
            norm = 0.0
            for k in range(width):
                norm += acc[jl, k]
            for k in range(width):
                p = acc[jl, k] / norm if norm > 0.0 else 0.0
                dest[k, row] = p if p >= PROB_FLOOR else 0.0


@njit(cache=True, parallel=True)
def n_clusters_blocks(a, b, log_z_out, probs, dest, n_bits, block_bits, linear):
    """:func:`n_clusters_range` over a whole layer, on all threads."""
    n_blocks = 1 << (n_bits - block_bits)
    n_chunks, chunk_size = n_parallel_chunks(n_blocks)
    for chunk in prange(n_chunks):
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, n_blocks)
        n_clusters_range(a, b, log_z_out, probs, dest, block_bits, np.int64(0), start,
                         stop, linear)


@njit(cache=True)
def best_cluster(log_potentials, map_rest, subset, fallback):
    """The cluster ``B`` of the lowest item of ``subset`` maximising ``e(B) + map_rest[subset \\ B]``.

    ``map_rest`` is the MAP table of the remaining items (for count-resolved
    trellises, the column of one fewer cluster); ``fallback`` is returned when
    every candidate is ``-inf``.
    """
    low = subset & -subset
    rest = subset ^ low
    best = -np.inf
    chosen = fallback
    sub = rest
    while True:
        value = log_potentials[sub | low] + map_rest[rest ^ sub]
        if value > best:
            best = value
            chosen = sub | low
        if sub == 0:
            break
        sub = (sub - 1) & rest
    return chosen


@njit(cache=True)
def map_clusters(log_potentials, map_value, full):
    """Back-track the MAP clustering of ``full``; returns its cluster masks.

    Back-pointers are not stored (they would cost 4 bytes per subset); each
    step re-scans the candidates of one subset, ``O(2**N)`` in total.
    """
    clusters = []
    subset = full
    while subset:
        chosen = best_cluster(log_potentials, map_value, subset, subset & -subset)
        clusters.append(chosen)
        subset ^= chosen
    return clusters


@njit(cache=True)
def cluster_marginals_range(log_potentials, log_z, full, out, start, stop):
    """``out[B] = P(B is a cluster) = exp(e(B) + log Z(full \\ B) - log Z(full))``."""
    log_z_full = log_z[full]
    for mask in range(start, stop):
        if mask == 0:
            out[mask] = 0.0
        else:
            value = log_potentials[mask] + log_z[full ^ mask] - log_z_full
            out[mask] = math.exp(value) if value > -745.0 else 0.0


@njit(cache=True, parallel=True)
def cluster_marginals_blocks(log_potentials, log_z, full, out):
    """:func:`cluster_marginals_range` over all subsets, on all threads."""
    size = full + 1
    n_chunks, chunk_size = n_parallel_chunks(size)
    for chunk in prange(n_chunks):
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, size)
        cluster_marginals_range(log_potentials, log_z, full, out, start, stop)


@njit(cache=True, parallel=True)
def superset_sums_parallel(table, n_items, block_bits):
    """In place: ``table[A] <- sum of table[B] over supersets B of A``.

    The ``block_bits`` low bits are summed within contiguous blocks (one
    block per task, in cache); each higher bit is one pass over the table.
    """
    block_bits = min(block_bits, n_items)
    block = 1 << block_bits
    n_blocks = 1 << (n_items - block_bits)
    for index in prange(n_blocks):
        base = index * block
        for bit_index in range(block_bits):
            bit = 1 << bit_index
            for offset in range(block):
                if not offset & bit:
                    table[base + offset] += table[base + (offset | bit)]
    half = 1 << (n_items - 1)
    for bit_index in range(block_bits, n_items):
        bit = 1 << bit_index
        low_mask = bit - 1
        for k in prange(half):
            # k enumerates masks without ``bit``: insert a zero at bit_index
            mask = ((k & ~low_mask) << 1) | (k & low_mask)
            table[mask] += table[mask | bit]
    return table


@njit(cache=True)
def draw_cluster(log_potentials, log_z_rest, subset, log_z_subset, threshold):
    """The cluster of the lowest item of ``subset`` for one exact top-down draw.

    ``B`` (containing the lowest item) is chosen with probability
    ``exp(e(B) + log_z_rest[subset \\ B] - log_z_subset)`` by inverting the
    cumulative sum at ``threshold`` (a uniform draw). ``log_z_rest`` is the log
    partition function table of the remaining items (for count-resolved
    trellises, the column of one fewer cluster).
    """
    low = subset & -subset
    rest = subset ^ low
    cumulative = 0.0
    last_positive = low
    sub = rest
    while True:
        value = log_potentials[sub | low] + log_z_rest[rest ^ sub] - log_z_subset
        if value > -745.0:
            cumulative += math.exp(value)
            last_positive = sub | low
            if cumulative > threshold:
                return sub | low
        if sub == 0:
            break
        sub = (sub - 1) & rest
    return last_positive  # rounding left the total a hair below the threshold


@njit(cache=True, inline="always")
def write_label(labels_row, cluster, label):
    """Give every item of the bitmask ``cluster`` the label ``label``."""
    members = cluster
    while members:
        bit = members & -members
        labels_row[lowest_bit_index(bit)] = label
        members ^= bit


@njit(cache=True, parallel=True)
def sample_partitions(log_potentials, log_z, full, n_items, uniforms):
    """Exact draws, one per row of ``uniforms`` (shape ``(n_samples, n_items)``).

    Top-down: the cluster of the lowest remaining item is ``B`` with
    probability ``exp(e(B) + log Z(S\\B) - log Z(S))``; labels come out in order
    of first appearance because clusters are drawn by increasing lowest item.
    """
    n_samples = uniforms.shape[0]
    labels = np.empty((n_samples, n_items), np.int64)
    for s in prange(n_samples):
        subset = full
        label = 0
        while subset:
            chosen = draw_cluster(log_potentials, log_z, subset, log_z[subset],
                                  uniforms[s, label])
            write_label(labels[s], chosen, label)
            subset ^= chosen
            label += 1
    return labels
