"""Pairwise co-occurrence and the number-of-blocks histogram of a sample set."""

import numpy as np
from scipy.linalg.blas import ssyrk

from .._core.budget import check_memory
from ._cooccurrence_kernels import coclustering_counts
from ._input import as_sample_set, sample_major
from ._kernels import cooccurrence_counts

#: Partition samples with at most this many label values on average go through
#: the indicator-matrix product (``O(n^2 K)`` in BLAS); more go through the
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


def _label_cooccurrence(samples):
    """Co-clustering frequencies of a non-empty (T, n) integer label array (any labels)."""
    spans = samples.max(axis=1).astype(np.int64) - samples.min(axis=1) + 1
    if spans.mean() <= MAX_MEAN_LABELS_FOR_BLAS and samples.shape[0] < _MAX_EXACT_FLOAT32:
        return _counts_by_indicator_products(samples) / samples.shape[0]
    small = samples.min() >= -32768 and samples.max() <= 32767
    samples = np.ascontiguousarray(samples, dtype=np.int16 if small else np.int32)
    out = np.zeros((samples.shape[1], samples.shape[1]))
    coclustering_counts(samples, out)
    return out / samples.shape[0]


#: Bytes per pair at the peak of :func:`pairwise_cooccurrence`: the float64
#: result, the float32 counts of the indicator products and their float64 copy.
COOCCURRENCE_BYTES_PER_PAIR = 20


def _check_cooccurrence_memory(n):
    """Refuse, before allocating, an (n, n) matrix the machine cannot hold."""
    check_memory(COOCCURRENCE_BYTES_PER_PAIR * n * n,
                 f"the ({n}, {n}) co-occurrence matrix of {n} elements",
                 "Summarise a subset of the elements (columns of the samples).")


def pairwise_cooccurrence(samples):
    """Mean number of blocks holding both ``i`` and ``j``.

    For partitions this is the posterior co-clustering probability
    ``P(i and j in the same block)`` estimated from the samples (ones on the
    diagonal), the sampled counterpart of
    ``ExactCorrelationClustering.pairwise_marginals_``. For feature allocations
    it is the paper's pairwise occurrence ``phi_2(PROJ(F, {i, j}))`` averaged
    over samples, and the diagonal holds the mean number of blocks holding ``i``.

    Partitions are counted with one symmetric rank-k update of their label
    indicators (BLAS) when they have few labels, otherwise by a parallel
    comparison kernel; both give exact counts.

    Parameters
    ----------
    samples : sample set
        Int array (T, n) of label vectors (elements are the columns), lists
        of blocks, or binary array (T, n_blocks, n).

    Returns
    -------
    cooccurrence : ndarray of shape (n, n)

    Examples
    --------
    >>> from sklearn_trellis.summaries import pairwise_cooccurrence
    >>> pairwise_cooccurrence([[0, 0, 1], [0, 1, 1]])
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """
    if (isinstance(samples, np.ndarray) and samples.ndim == 2 and samples.size
            and samples.dtype.kind in "iu"):
        _check_cooccurrence_memory(samples.shape[1])
        return _label_cooccurrence(samples)  # label vectors as the samplers keep them
    sample_set = as_sample_set(samples)
    _check_cooccurrence_memory(sample_set.n_elements)
    if sample_set.is_partition:
        return _label_cooccurrence(sample_set.labels)
    by_sample = sample_major(sample_set)
    counts = cooccurrence_counts.for_work(by_sample.size * by_sample.shape[1])(by_sample)
    return counts / sample_set.n_samples


def n_clusters_histogram(samples, *, normalize=True):
    """Distribution of the number of blocks over the sample set.

    Parameters
    ----------
    samples : sample set
        Int array (T, n) of label vectors (elements are the columns), lists
        of blocks, or binary array (T, n_blocks, n).
    normalize : bool, default=True
        Return frequencies (summing to 1) rather than counts.

    Returns
    -------
    histogram : ndarray of shape (max(n, K_max) + 1,)
        ``histogram[k]`` is the fraction (or number) of samples with exactly
        ``k`` blocks, ``k = 0, 1, ...`` (like ``numpy.bincount``). For
        partitions ``histogram[0] == 0`` and ``histogram[1:]`` is comparable
        with ``ExactCorrelationClustering.n_clusters_distribution_``.

    Examples
    --------
    >>> from sklearn_trellis.summaries import n_clusters_histogram
    >>> n_clusters_histogram([[0, 0, 1], [0, 1, 2], [0, 1, 1]])
    array([0.        , 0.        , 0.66666667, 0.33333333])
    """
    if not isinstance(normalize, (bool, np.bool_)):
        raise TypeError(f"normalize must be a bool, got {normalize!r}.")
    sample_set = as_sample_set(samples)
    length = max(sample_set.n_elements, sample_set.max_blocks) + 1
    counts = np.bincount(sample_set.n_blocks, minlength=length)
    return counts / sample_set.n_samples if normalize else counts


__all__ = ["pairwise_cooccurrence", "n_clusters_histogram"]
