"""Numba kernels of the count-resolved exact flat trellis.

For a flat model whose log-potential adds a term depending on the number of
clusters ``K`` (``log phi(C) = w_K + sum_{B in C} e(B)``, e.g. the Pitman-Yor
or Dirichlet-multinomial partition priors), the partition function splits by
``K``:

    log Z_k(S)   = logsumexp_{B : l in B subset of S} e(B) + log Z_{k-1}(S \\ B)
    MAP_k(S)     = max_{B : l in B subset of S}       e(B) + MAP_{k-1}(S \\ B)

(``l`` the lowest item of ``S``). Tables have shape ``(2**N, N + 1)``; rows of
subsets whose lowest item is ``i`` are filled in parallel once all subsets
with a higher lowest item are done, as in ``_flat_kernels``.
"""

import math

import numpy as np
from numba import njit, prange

from ..._core.parallel import parallel_kernel
from ..._core.subsets import chunk_bounds, n_parallel_chunks, popcount
from ._flat_kernels import best_cluster, draw_cluster, write_label


@parallel_kernel
def count_layer(log_potentials, log_zk, map_k, lowest, n_items):
    """Fill rows ``log_zk[S]`` and ``map_k[S]`` for every ``S`` whose lowest item is ``lowest``.

    Each ``S`` reads only rows of subsets without ``lowest`` (earlier layers) and
    writes its own rows: the serial and parallel twins give the same tables.
    """
    low = 1 << lowest
    n_free = n_items - 1 - lowest
    total = 1 << n_free
    width = log_zk.shape[1]
    n_chunks, chunk_size = n_parallel_chunks(total)
    for chunk in prange(n_chunks):
        largest = np.empty(width)
        sums = np.empty(width)
        start, stop = chunk_bounds(chunk, n_chunks, chunk_size, total)
        for j in range(start, stop):
            rest = j << (lowest + 1)
            subset = rest | low
            max_k = popcount(subset)
            for k in range(width):
                largest[k] = -np.inf
                sums[k] = 0.0
                map_k[subset, k] = -np.inf
            sub = rest
            while True:
                e_b = log_potentials[sub | low]
                other = rest ^ sub
                if e_b > -np.inf:
                    for k in range(1, max_k + 1):
                        value = e_b + log_zk[other, k - 1]
                        if value == -np.inf:
                            continue
                        if value > largest[k]:
                            sums[k] = sums[k] * math.exp(largest[k] - value) + 1.0
                            largest[k] = value
                        else:
                            sums[k] += math.exp(value - largest[k])
                        candidate = e_b + map_k[other, k - 1]
                        if candidate > map_k[subset, k]:
                            map_k[subset, k] = candidate
                if sub == 0:
                    break
                sub = (sub - 1) & rest
            for k in range(width):
                if largest[k] == -np.inf:
                    log_zk[subset, k] = -np.inf
                else:
                    log_zk[subset, k] = largest[k] + math.log(sums[k])


@njit(cache=True)
def count_map_clusters(log_potentials, map_k, full, n_clusters):
    """Back-track the best clustering of ``full`` with exactly ``n_clusters`` clusters."""
    clusters = []
    subset = full
    k = n_clusters
    while subset:
        chosen = best_cluster(log_potentials, map_k[:, k - 1], subset, subset)
        clusters.append(chosen)
        subset ^= chosen
        k -= 1
    return clusters


@parallel_kernel
def count_cluster_marginals(log_potentials, log_zk, log_count, log_z, full, out):
    """``out[B] = P(B is a cluster) = sum_k exp(w_k + e(B) + log Z_{k-1}(full \\ B) - log Z)``."""
    width = log_zk.shape[1]
    for mask in prange(full + 1):
        if mask == 0:
            out[mask] = 0.0
            continue
        total = 0.0
        e_b = log_potentials[mask]
        other = full ^ mask
        for k in range(1, width):
            value = log_count[k] + e_b + log_zk[other, k - 1] - log_z
            if value > -745.0:
                total += math.exp(value)
        out[mask] = total


@parallel_kernel
def count_sample_partitions(log_potentials, log_zk, full, n_items, n_clusters, uniforms):
    """Exact draws given the number of clusters of each draw (``n_clusters[s]``)."""
    n_samples = uniforms.shape[0]
    labels = np.empty((n_samples, n_items), np.int64)
    for s in prange(n_samples):
        subset = full
        k = n_clusters[s]
        label = 0
        while subset:
            chosen = draw_cluster(log_potentials, log_zk[:, k - 1], subset,
                                  log_zk[subset, k], uniforms[s, label])
            write_label(labels[s], chosen, label)
            subset ^= chosen
            label += 1
            k -= 1
    return labels
