"""Pairwise co-occurrence and the number-of-blocks histogram of a sample set."""

import numpy as np

from ._input import as_sample_set, sample_major
from ._kernels import cooccurrence_counts


def pairwise_cooccurrence(samples):
    """Mean number of blocks holding both ``i`` and ``j``.

    For partitions this is the posterior co-clustering probability
    ``P(i and j in the same block)`` estimated from the samples (ones on the
    diagonal), the sampled counterpart of
    ``ExactCorrelationClustering.pairwise_marginals_``. For feature allocations
    it is the paper's pairwise occurrence ``phi_2(PROJ(F, {i, j}))`` averaged
    over samples, and the diagonal holds the mean number of blocks holding ``i``.

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
    sample_set = as_sample_set(samples)
    return cooccurrence_counts(sample_major(sample_set)) / sample_set.n_samples


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
