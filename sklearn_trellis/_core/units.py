"""Distances in units where float64 holds their squares: rows scaled by a power of two.

Euclidean distances square the differences of the features: at a scale of
``1e-200`` the squares underflow to 0 (every height 0) and at ``1e160`` they
overflow, while the distances themselves are representable. The metrics below
are homogeneous, ``d(c x, c y) = |c|^degree d(x, y)``, so they are computed
on the rows divided by a power of two ``2^e`` (exact: only the exponents
change) that brings the largest ``|x|`` into ``[0.5, 1)``, and multiplied
back by ``2^(e * degree)``: the same bits as at scale 1 wherever float64
holds the result.
"""

import numpy as np
from sklearn.metrics import pairwise_distances

#: ``degree`` of the homogeneous metrics: ``d(c x, c y) = |c|^degree d(x, y)``.
METRIC_DEGREE = {"euclidean": 1, "l2": 1, "manhattan": 1, "cityblock": 1, "l1": 1,
                 "chebyshev": 1, "minkowski": 1, "sqeuclidean": 2, "cosine": 0,
                 "correlation": 0, "braycurtis": 0, "canberra": 0}


def metric_degree(metric):
    """The metric's degree of homogeneity, or None (callables, other metrics)."""
    return METRIC_DEGREE.get(metric) if isinstance(metric, str) else None


def unit_exponent(X, metric):
    """``e`` such that the largest finite ``|x| / 2^e`` lies in ``[0.5, 1)``.

    0 when the metric is not homogeneous or ``X`` has no finite non-zero entry.
    """
    if metric_degree(metric) is None:
        return 0
    X = np.asarray(X, dtype=np.float64)
    finite = np.abs(X[np.isfinite(X)])
    top = float(finite.max()) if finite.size else 0.0
    return int(np.frexp(top)[1]) if top > 0 else 0


def to_units(X, exponent):
    """``X / 2^exponent`` (exact; ``X`` itself, no copy, when ``exponent == 0``)."""
    X = np.asarray(X, dtype=np.float64)
    return X if exponent == 0 else np.ldexp(X, -exponent)


def from_units(values, exponent, metric, out=None):
    """Distances (or heights) computed on :func:`to_units` rows, back in the units of X.

    ``out=values`` works in place (no copy of an (N, N) matrix).
    """
    degree = metric_degree(metric)
    if not degree or exponent == 0:
        return values
    shift = exponent * degree
    with np.errstate(over="ignore", under="ignore"):  # the callers check the range
        if -1074 <= shift <= 1023:
            # 2**shift is a float64: the product is v * 2**shift rounded once, as
            # ldexp's, and several times faster on an (N, N) matrix.
            return np.multiply(values, 2.0 ** shift, out=out)
        return np.ldexp(values, shift, out=out)


def scaled_pairwise_distances(X, Y=None, *, metric, exponent):
    """:func:`sklearn.metrics.pairwise_distances` computed on the rows scaled by ``2^-exponent``."""
    Y = None if Y is None else to_units(Y, exponent)
    distances = pairwise_distances(to_units(X, exponent), Y, metric=metric)
    return from_units(distances, exponent, metric, out=distances)


#: A feature whose mean lies more than this many standard deviations from 0 is
#: centred before a Gaussian model sums its squares: ``sum x^2 - n mean^2`` loses
#: about ``eps * ratio**2`` of the spread (all of it at ``ratio = 1e8``).
OFFSET_RATIO = 1e3


def feature_offset(X):
    """Per-feature shift that centres the features far from 0 relative to their spread.

    ``mean_j`` where ``|mean_j| > OFFSET_RATIO * std_j > 0`` (frequencies near
    ``1e10`` Hz, UTM coordinates, timestamps), else 0; ``None`` when no feature
    needs it, so that ordinary data are used as they are (bitwise). Constant
    features are not shifted (their magnitude sets the Gaussian models' variance
    floor). Subtracting it changes nothing in a translation-equivariant model
    (the prior mean shifted alike) but the rounding of its sums of squares.

    >>> feature_offset(np.array([[1e10, 0.0], [1e10 + 2, 1.0]])).tolist()
    [10000000001.0, 0.0]
    >>> feature_offset(np.array([[3.0, 0.0], [5.0, 1.0]])) is None
    True
    """
    X = np.asarray(X)
    if X.shape[0] < 2:
        return None
    mean = X.mean(axis=0, dtype=np.float64)
    std = X.std(axis=0, dtype=np.float64)
    far = (std > 0) & (np.abs(mean) > OFFSET_RATIO * std)
    return np.where(far, mean, 0.0) if far.any() else None


def shift_rows(X, offset):
    """``X - offset`` in the dtype of ``X`` (``X`` itself when ``offset`` is None).

    ``offset`` is the one :func:`feature_offset` stored at fit, rounded to the fit's
    dtype, so that a float32 fit and float64 new rows subtract the same value.
    """
    if offset is None:
        return X
    return np.ascontiguousarray(X - offset.astype(X.dtype))


__all__ = ["OFFSET_RATIO", "feature_offset", "shift_rows", "METRIC_DEGREE", "from_units", "metric_degree", "scaled_pairwise_distances",
           "to_units", "unit_exponent"]
