"""Posterior co-clustering frequencies from samples of partitions."""

import numpy as np

from ._coclustering_kernels import coclustering_counts


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
    >>> from sklearn_trellis.sampling.coclustering import coclustering_matrix
    >>> coclustering_matrix([[0, 0, 1], [0, 1, 1]])
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """
    samples = np.ascontiguousarray(samples, dtype=np.int32)
    if samples.ndim != 2 or samples.shape[0] == 0:
        raise ValueError(f"samples must be a non-empty 2-d array, got shape {samples.shape}.")
    out = np.empty((samples.shape[1], samples.shape[1]))
    coclustering_counts(samples, out)
    return out / samples.shape[0]


__all__ = ["coclustering_matrix"]
