"""Posterior co-clustering frequencies from samples of partitions."""

import numpy as np
from scipy.linalg.blas import ssyrk

from ._coclustering_kernels import coclustering_counts

#: Samples with at most this many label values on average go through the
#: indicator-matrix product (``O(n^2 K)`` in BLAS); more go through the
#: comparison kernel (``O(n^2 S)``). Measured crossover at n = 2,000: about 50.
MAX_MEAN_LABELS_FOR_BLAS = 32
#: Columns of one indicator block (``n x 2048`` float32).
INDICATOR_BLOCK = 2048
#: float32 sums of 0/1 products are exact up to 2**24.
_MAX_EXACT_FLOAT32 = 1 << 24


def _counts_by_indicator_products(samples):
    """Co-clustering counts as ``A A^T``, ``A`` the one-hot label indicators of all samples.

    Rows are cut into blocks of at most :data:`INDICATOR_BLOCK` indicator
    columns; each block adds ``A_b A_b^T`` with a symmetric rank-k update
    (``ssyrk``). Entries are integer counts below ``2**24``, exact in float32.
    """
    n_samples, n = samples.shape
    lows = samples.min(axis=1).astype(np.int64)
    widths = samples.max(axis=1).astype(np.int64) - lows + 1
    upper = np.zeros((n, n), np.float32, order="F")
    items = np.arange(n)[None, :]
    start = 0
    while start < n_samples:
        stop = start + max(1, int(np.searchsorted(np.cumsum(widths[start:]), INDICATOR_BLOCK,
                                                  side="right")))
        offsets = np.concatenate([[0], np.cumsum(widths[start:stop - 1])])
        indicators = np.zeros((n, int(widths[start:stop].sum())), np.float32, order="F")
        indicators[items, samples[start:stop] - lows[start:stop, None] + offsets[:, None]] = 1.0
        upper = ssyrk(1.0, indicators, beta=1.0, c=upper, overwrite_c=1)
        start = stop
    counts = np.triu(upper).astype(np.float64)
    counts += np.triu(counts, 1).T
    return counts


def coclustering_matrix(samples):
    """Fraction of samples in which items ``i`` and ``j`` share a cluster.

    Parameters
    ----------
    samples : array-like of int, shape (n_samples, n_items)
        One label vector per row (any labels).

    Returns
    -------
    matrix : ndarray of shape (n_items, n_items)
        Ones on the diagonal.

    Examples
    --------
    >>> from sklearn_trellis.engines.gibbs.coclustering import coclustering_matrix
    >>> coclustering_matrix([[0, 0, 1], [0, 1, 1]])
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """
    samples = np.asarray(samples)
    if samples.ndim != 2 or samples.shape[0] == 0:
        raise ValueError(f"samples must be a non-empty 2-d array, got shape {samples.shape}.")
    if samples.shape[1] == 0:
        return np.zeros((0, 0))
    if not np.issubdtype(samples.dtype, np.integer):
        raise TypeError(f"samples must hold integer labels, got dtype {samples.dtype}.")
    spans = samples.max(axis=1).astype(np.int64) - samples.min(axis=1) + 1
    if spans.mean() <= MAX_MEAN_LABELS_FOR_BLAS and samples.shape[0] < _MAX_EXACT_FLOAT32:
        return _counts_by_indicator_products(samples) / samples.shape[0]
    small = samples.size == 0 or (samples.min() >= -32768 and samples.max() <= 32767)
    samples = np.ascontiguousarray(samples, dtype=np.int16 if small else np.int32)
    out = np.zeros((samples.shape[1], samples.shape[1]))
    coclustering_counts(samples, out)
    return out / samples.shape[0]


__all__ = ["coclustering_matrix"]
