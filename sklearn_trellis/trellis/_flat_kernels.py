"""Numba kernels of the exact flat cluster trellis (Greenberg et al. 2018).

Tables are indexed by bitmask subsets (see ``_subsets``). For a subset ``S`` with
lowest item ``l`` every flat clustering of ``S`` has exactly one cluster ``B``
containing ``l``, so with ``e`` the cluster log-potential table

    log Z(S)   = logsumexp_{B : l in B subset of S} e(B) + log Z(S \\ B)   (Fact 1)
    MAP(S)     = max_{B : l in B subset of S}       e(B) + MAP(S \\ B)     (Fact 3)

``S \\ B`` never contains ``l``, so all subsets whose lowest item is ``i`` can be
computed in parallel once the subsets whose lowest item is above ``i`` are done:
the kernels run one such *layer* at a time, from ``i = N-1`` down to ``0``.
"""

import math

import numpy as np
from numba import njit, prange

from ._subsets import (
    chunk_bounds,
    logsumexp_buffer,
    lowest_bit_index,
    n_parallel_chunks,
    popcount,
)


@njit(cache=True, parallel=True)
def partition_layer(log_potentials, log_z, map_value, lowest, n_items):
    """Fill ``log_z`` and ``map_value`` for every subset whose lowest item is ``lowest``."""
    low = 1 << lowest
    n_free = n_items - 1 - lowest
    total = 1 << n_free
    n_chunks, chunk_size = n_parallel_chunks(total)
    for chunk in prange(n_chunks):
        terms = np.empty(1 << n_free)
        scratch = np.empty(1 << n_free, np.int64)
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, total)
        for j in range(start, stop):
            rest = j << (lowest + 1)
            subset = rest | low
            best = -np.inf
            largest = -np.inf
            n_terms = 0
            sub = rest
            while True:  # every sub of rest, i.e. every B = low | sub
                e_b = log_potentials[sub | low]
                other = rest ^ sub
                term = e_b + log_z[other]
                terms[n_terms] = term
                n_terms += 1
                if term > largest:
                    largest = term
                candidate = e_b + map_value[other]
                if candidate > best:
                    best = candidate
                if sub == 0:
                    break
                sub = (sub - 1) & rest
            log_z[subset] = logsumexp_buffer(terms, scratch, n_terms, largest)
            map_value[subset] = best


@njit(cache=True)
def map_clusters(log_potentials, map_value, full):
    """Back-track the MAP clustering of ``full``; returns its cluster masks.

    Back-pointers are not stored (they would cost 4 bytes per subset); each
    step re-scans the candidates of one subset, ``O(2**N)`` in total.
    """
    clusters = []
    subset = full
    while subset:
        low = subset & -subset
        rest = subset ^ low
        best = -np.inf
        best_cluster = low
        sub = rest
        while True:
            value = log_potentials[sub | low] + map_value[rest ^ sub]
            if value > best:
                best = value
                best_cluster = sub | low
            if sub == 0:
                break
            sub = (sub - 1) & rest
        clusters.append(best_cluster)
        subset ^= best_cluster
    return clusters


@njit(cache=True, parallel=True)
def cluster_marginals(log_potentials, log_z, full, out):
    """``out[B] = P(B is a cluster) = exp(e(B) + log Z(full \\ B) - log Z(full))``."""
    size = full + 1
    log_z_full = log_z[full]
    for mask in prange(size):
        if mask == 0:
            out[mask] = 0.0
        else:
            value = log_potentials[mask] + log_z[full ^ mask] - log_z_full
            out[mask] = math.exp(value) if value > -745.0 else 0.0
    return out


@njit(cache=True, parallel=True)
def superset_sums_parallel(table, n_items):
    """In place: ``table[A] <- sum of table[B] over supersets B of A``."""
    half = 1 << (n_items - 1)
    for bit_index in range(n_items):
        bit = 1 << bit_index
        low_mask = bit - 1
        for k in prange(half):
            # k enumerates masks without ``bit``: insert a zero at bit_index
            mask = ((k & ~low_mask) << 1) | (k & low_mask)
            table[mask] += table[mask | bit]
    return table


@njit(cache=True, parallel=True)
def n_clusters_layer(log_potentials, log_z, probs, lowest, n_items):
    """P(K = k) for subsets with lowest item ``lowest`` >= 1 (not containing item 0).

    ``probs[S >> 1, k]`` is the probability that a clustering of ``S`` drawn
    from the model has ``k`` clusters. The recursion is in linear probability
    space: ``pi(B | S) = exp(e(B) + log Z(S\\B) - log Z(S))`` lies in [0, 1].
    """
    low = 1 << lowest
    n_free = n_items - 1 - lowest
    total = 1 << n_free
    n_chunks, chunk_size = n_parallel_chunks(total)
    width = probs.shape[1]
    for chunk in prange(n_chunks):
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, total)
        for j in range(start, stop):
            rest = j << (lowest + 1)
            subset = rest | low
            row = subset >> 1
            for k in range(width):
                probs[row, k] = 0.0
            log_z_subset = log_z[subset]
            if log_z_subset == -np.inf:
                continue
            max_k = popcount(rest)
            sub = rest
            while True:
                other = rest ^ sub
                value = log_potentials[sub | low] + log_z[other] - log_z_subset
                if value > -745.0:
                    weight = math.exp(value)
                    other_row = other >> 1
                    for k in range(max_k + 1):
                        probs[row, k + 1] += weight * probs[other_row, k]
                if sub == 0:
                    break
                sub = (sub - 1) & rest
    return probs


@njit(cache=True)
def n_clusters_full(log_potentials, log_z, probs, full):
    """P(K = k) for ``full``, which contains item 0, from the table of ``n_clusters_layer``."""
    width = probs.shape[1]
    out = np.zeros(width)
    low = 1
    rest = full ^ low
    log_z_full = log_z[full]
    sub = rest
    while True:
        other = rest ^ sub
        value = log_potentials[sub | low] + log_z[other] - log_z_full
        if value > -745.0:
            weight = math.exp(value)
            other_row = other >> 1
            for k in range(width - 1):
                out[k + 1] += weight * probs[other_row, k]
        if sub == 0:
            break
        sub = (sub - 1) & rest
    return out


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
            low = subset & -subset
            rest = subset ^ low
            threshold = uniforms[s, label]
            log_z_subset = log_z[subset]
            cumulative = 0.0
            chosen = -1
            last_positive = low
            sub = rest
            while True:
                value = log_potentials[sub | low] + log_z[rest ^ sub] - log_z_subset
                if value > -745.0:
                    cumulative += math.exp(value)
                    last_positive = sub | low
                    if cumulative > threshold:
                        chosen = sub | low
                        break
                if sub == 0:
                    break
                sub = (sub - 1) & rest
            if chosen < 0:  # rounding left the total a hair below the threshold
                chosen = last_positive
            members = chosen
            while members:
                bit = members & -members
                labels[s, lowest_bit_index(bit)] = label
                members ^= bit
            subset ^= chosen
            label += 1
    return labels
