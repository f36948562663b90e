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
from scipy.spatial.distance import squareform

from .._validation import check_scalar_param

SIMILARITIES = ("exp", "precomputed")


#: Rows per block when checking and symmetrising a matrix (blocks of ~32 MB, so
#: an N = 10,000 matrix needs one output copy and no N x N temporaries).
_BLOCK_ENTRIES = 1 << 22


def check_pairwise_matrix(matrix, name):
    """An (N, N) finite symmetric float matrix, or a ValueError naming ``name``.

    Returns a new array, ``(m + m.T) / 2``, computed by blocks of rows.
    """
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix, got shape {m.shape}.")
    n = m.shape[0]
    out = np.empty((n, n))
    largest = 0.0
    asymmetry = 0.0
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    for start in range(0, n, step):
        rows = m[start:start + step]
        if not np.all(np.isfinite(rows)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        block = out[start:start + step]
        np.subtract(rows, m[:, start:start + step].T, out=block)
        asymmetry = max(asymmetry, float(np.max(np.abs(block))))
        largest = max(largest, float(np.max(np.abs(rows))))
        np.add(rows, m[:, start:start + step].T, out=block)
        block *= 0.5
    if n and asymmetry > 1e-10 * max(1.0, largest):
        raise ValueError(f"{name} must be symmetric.")
    return out


def median_off_diagonal(matrix):
    """Median off-diagonal entry of a symmetric matrix (1.0 if none or not positive)."""
    n = matrix.shape[0]
    if n < 2:
        return 1.0
    # Each off-diagonal value appears twice, so the upper triangle has the same median.
    upper = squareform(matrix, checks=False)
    value = float(np.median(upper, overwrite_input=True))
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
        s = d  # our own copy: transform it in place (N x N is 800 MB at N = 10,000)
        np.divide(s, -width, out=s)
        np.exp(s, out=s)
    else:
        raise ValueError(f"similarity must be one of {SIMILARITIES}, got {kind!r}.")
    np.fill_diagonal(s, 0.0)
    return s
