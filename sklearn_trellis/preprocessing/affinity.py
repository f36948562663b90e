"""Signed pairwise affinities from feature rows.

``'exp_euclidean'`` is the similarity of Greenberg et al. (2018, Section 5.2),
``s_ij = exp(-||x_i - x_j||)``; ``'rbf'`` is ``exp(-gamma ||x_i - x_j||^2)``
(``gamma`` defaults to ``1 / n_features`` as in scikit-learn). With
``center=True`` the mean off-diagonal similarity of the training items is
subtracted, so affinities are positive for pairs more similar than average and
negative otherwise; the same offset is applied to new items in ``predict``.
"""

import numpy as np
from sklearn.metrics import pairwise_distances

AFFINITIES = ("exp_euclidean", "rbf", "precomputed")


def similarity(X, Y, kind, gamma=None):
    """Unshifted similarity matrix between the rows of ``X`` and ``Y``."""
    if callable(kind):
        return np.asarray(kind(X, Y), dtype=np.float64)
    if kind == "exp_euclidean":
        return np.exp(-pairwise_distances(X, Y, metric="euclidean"))
    if kind == "rbf":
        g = 1.0 / X.shape[1] if gamma is None else float(gamma)
        return np.exp(-g * pairwise_distances(X, Y, metric="sqeuclidean"))
    raise ValueError(f"Unknown affinity {kind!r}; expected one of {AFFINITIES} or a callable.")


def mean_off_diagonal(matrix):
    """Mean of the off-diagonal entries of a square matrix (0 for a 1x1 matrix)."""
    n = matrix.shape[0]
    if n < 2:
        return 0.0
    return float((matrix.sum() - np.trace(matrix)) / (n * (n - 1)))
