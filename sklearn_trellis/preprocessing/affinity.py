"""Signed pairwise affinities from feature rows.

``'exp_euclidean'`` is the similarity of Greenberg et al. (2018, Section 5.2),
``s_ij = exp(-||x_i - x_j||)``; ``'rbf'`` is ``exp(-gamma ||x_i - x_j||^2)``
(``gamma`` defaults to ``1 / n_features`` as in scikit-learn). With
``center=True`` the mean off-diagonal similarity of the training items is
subtracted, so affinities are positive for pairs more similar than average and
negative otherwise; the same offset is applied to new items in ``predict``.
"""

import numpy as np
from scipy.spatial.distance import cdist

AFFINITIES = ("exp_euclidean", "rbf", "precomputed")


def similarity(X, Y, kind, gamma=None):
    """Unshifted similarity matrix between the rows of ``X`` and ``Y``."""
    if callable(kind):
        # A user's function: check what it returns before anything reads it.
        result = kind(X, Y)
        try:
            out = np.asarray(result, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("The affinity callable must return a numeric array, got "
                            f"{type(result).__name__}.") from None
        expected = (X.shape[0], Y.shape[0])
        if out.shape != expected:
            raise ValueError(f"The affinity callable returned shape {out.shape}; expected "
                             f"{expected} (one row per row of X, one column per row of Y).")
        if not np.all(np.isfinite(out)):
            raise ValueError("The affinity callable returned NaN or infinite values.")
        if X is Y and not np.allclose(out, out.T, rtol=1e-10, atol=1e-12):
            raise ValueError("The affinity callable must be symmetric: affinity(X, X) "
                             f"differs from its transpose by up to {np.abs(out - out.T).max():.3g}.")
        return out
    # cdist sums squared differences: a row's distance to itself is exactly 0 whichever
    # rows are asked for together (the dot-product expansion leaves ~1e-8 noise), so the
    # affinities of new rows do not depend on their batch.
    if kind == "exp_euclidean":
        return np.exp(-cdist(X, Y, metric="euclidean"))
    if kind == "rbf":
        g = 1.0 / X.shape[1] if gamma is None else float(gamma)
        return np.exp(-g * cdist(X, Y, metric="sqeuclidean"))
    raise ValueError(f"Unknown affinity {kind!r}; expected one of {AFFINITIES} or a callable.")


def mean_off_diagonal(matrix):
    """Mean of the off-diagonal entries of a square matrix (0 for a 1x1 matrix)."""
    n = matrix.shape[0]
    if n < 2:
        return 0.0
    return float((matrix.sum() - np.trace(matrix)) / (n * (n - 1)))
