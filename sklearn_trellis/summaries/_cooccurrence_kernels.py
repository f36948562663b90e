"""Numba kernel of the co-clustering counts of partition samples (label vectors)."""

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def coclustering_counts(samples, out):
    """``out[i, j]`` = number of rows of ``samples`` with ``samples[:, i] == samples[:, j]``.

    Row ``i`` of the output is accumulated by one thread, sample by sample, in
    a buffer of the samples' integer type (int16 labels give the widest SIMD
    comparison loop), flushed to ``out`` every 32,000 samples so that it
    cannot overflow; only ``j >= i`` is computed and mirrored. ``out`` must be
    zero on entry.
    """
    n_samples, n = samples.shape
    block = 32000
    for i in prange(n):
        acc = np.zeros(n, samples.dtype)
        for start in range(0, n_samples, block):
            acc[:] = 0
            for s in range(start, min(n_samples, start + block)):
                row = samples[s]
                label = row[i]
                for j in range(i, n):
                    acc[j] += row[j] == label
            for j in range(i, n):
                out[i, j] += acc[j]
        for j in range(i + 1, n):
            out[j, i] = out[i, j]
    return out
