"""Numba forms of the partition priors, read from ``pp = [alpha, discount, n_components]``.

``n_components == 0`` means infinitely many (CRP / Pitman-Yor). The EPPF is
``log_normaliser(n) + log_count(K) + sum_b log_block(n_b)`` (see ``priors``).
"""

import math

import numpy as np
from numba import njit


#: From this ``a`` on, :func:`log_rising_factorial` uses Stirling's series (truncation
#: error below ``1e-24``) instead of two log-gammas that cancel.
STIRLING_FROM = 1e3


@njit(cache=True, inline='always')
def _stirling_correction(x):
    """``log Gamma(x) - ((x - 1/2) log x - x + log(2 pi) / 2)`` for ``x >= 1000``."""
    inverse = 1.0 / x
    square = inverse * inverse
    return inverse * (1.0 / 12.0 - square * (1.0 / 360.0 - square / 1260.0))


@njit(cache=True)
def log_rising_factorial(a, n):
    """``log Gamma(a + n) - log Gamma(a)`` for ``a > 0``, ``n >= 0``, without cancellation.

    Two log-gammas lose ``eps * a log a`` to rounding, all of the answer (about
    ``n log a``) once ``a >> n`` (a CRP at ``alpha = 1e16``). From ``a = 1000`` on,
    Stirling's series gives the difference as ``(a - 1/2) log1p(n / a) + n log(a + n)
    - n`` plus the difference of the series' corrections: relative error ~ ``1e-15``
    at every ``a`` up to ``1e308``.
    """
    if n == 0:
        return 0.0
    if a < STIRLING_FROM:
        return math.lgamma(a + n) - math.lgamma(a)
    return ((a - 0.5) * math.log1p(n / a) + n * math.log(a + n) - n
            + (_stirling_correction(a + n) - _stirling_correction(a)))


@njit(cache=True)
def log_block(pp, size):
    """Per-cluster factor of the EPPF for a cluster of ``size`` items."""
    alpha, discount, k = pp[0], pp[1], pp[2]
    if k > 0:
        # a float size: the signature the other callers use (one compilation)
        return log_rising_factorial(alpha / k, float(size))
    return math.lgamma(size - discount) - math.lgamma(1.0 - discount)


@njit(cache=True)
def log_count(pp, n_clusters):
    """The factor of the EPPF that depends on the number of clusters only."""
    alpha, discount, k = pp[0], pp[1], pp[2]
    if k > 0:
        if n_clusters > k:
            return -np.inf
        return math.lgamma(k + 1.0) - math.lgamma(k - n_clusters + 1.0)
    total = 0.0
    for j in range(n_clusters):
        total += math.log(alpha + j * discount)
    return total


@njit(cache=True, inline='always')
def log_weight_existing(pp, size):
    """Unnormalised log prior weight of joining a cluster of ``size`` other items."""
    alpha, discount, k = pp[0], pp[1], pp[2]
    if k > 0:
        return math.log(size + alpha / k)
    return math.log(size - discount)


@njit(cache=True, inline='always')
def log_weight_new(pp, n_clusters):
    """Unnormalised log prior weight of opening a new cluster next to ``n_clusters``."""
    alpha, discount, k = pp[0], pp[1], pp[2]
    if k > 0:
        if n_clusters >= k:
            return -np.inf
        return math.log(alpha) + math.log1p(-n_clusters / k)
    return math.log(alpha + n_clusters * discount)
