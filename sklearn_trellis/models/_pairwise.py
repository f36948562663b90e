"""Pairwise similarities of the hierarchical energies, from a distance matrix.

The estimators hand distance-based split models an (N, N) distance matrix
``D`` (computed from ``X`` with the estimator's ``metric``, or ``X`` itself
when ``metric='precomputed'``). ``'exp'`` turns it into similarities
``s_ij = exp(-d_ij / scale)`` in ``(0, 1]``, with ``scale`` defaulting to the
median off-diagonal distance (so the result does not depend on the units of
``X``). ``'precomputed'`` uses the matrix given to the model as the
similarities themselves.
"""

import numpy as np

from .._validation import check_scalar_param

SIMILARITIES = ("exp", "precomputed")


def check_pairwise_matrix(matrix, name):
    """An (N, N) finite symmetric float matrix, or a ValueError naming ``name``."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix, got shape {m.shape}.")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    scale = max(1.0, float(np.max(np.abs(m)))) if m.size else 1.0
    if m.size and float(np.max(np.abs(m - m.T))) > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric.")
    return 0.5 * (m + m.T)


def median_off_diagonal(matrix):
    """Median off-diagonal entry (1.0 if there is none or it is not positive)."""
    n = matrix.shape[0]
    if n < 2:
        return 1.0
    value = float(np.median(matrix[~np.eye(n, dtype=bool)]))
    return value if value > 0 else 1.0


def similarity_from_distances(distances, kind, scale):
    """Similarity matrix (zero diagonal) from a distance matrix, or the matrix itself.

    Validates the models' ``similarity`` and ``scale`` hyperparameters.
    """
    check_scalar_param(scale, "scale", low=0.0, include_low=False, allow_none=True)
    if kind == "precomputed":
        s = check_pairwise_matrix(distances, "The precomputed similarity matrix")
    elif kind == "exp":
        d = check_pairwise_matrix(distances, "The distance matrix")
        if np.any(d < 0):
            raise ValueError("Distances must be non-negative.")
        width = median_off_diagonal(d) if scale is None else float(scale)
        s = np.exp(-d / width)
    else:
        raise ValueError(f"similarity must be one of {SIMILARITIES}, got {kind!r}.")
    s = s.copy()
    np.fill_diagonal(s, 0.0)
    return s
