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


__all__ = ["METRIC_DEGREE", "from_units", "metric_degree", "scaled_pairwise_distances",
           "to_units", "unit_exponent"]
