"""Numba kernel of the co-clustering (pairwise) frequency matrix of partition samples."""

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def coclustering_counts(samples, out):
    """``out[i, j]`` = number of rows of ``samples`` with ``samples[:, i] == samples[:, j]``.

    Row ``i`` of the output is accumulated by one thread, sample by sample, in
    an int32 buffer (the comparison loop vectorises); only ``j >= i`` is
    computed and mirrored.
    """
    n_samples, n = samples.shape
    for i in prange(n):
        acc = np.zeros(n, np.int32)
        for s in range(n_samples):
            row = samples[s]
            label = row[i]
            for j in range(i, n):
                acc[j] += row[j] == label
        for j in range(i, n):
            out[i, j] = acc[j]
            out[j, i] = acc[j]
    return out
