"""Numba forms of the partition priors, read from ``pp = [alpha, discount, n_components]``.

``n_components == 0`` means infinitely many (CRP / Pitman-Yor). The EPPF is
``log_normaliser(n) + log_count(K) + sum_b log_block(n_b)`` (see ``priors``).
"""

import math

import numpy as np
from numba import njit


@njit(cache=True)
def log_block(pp, size):
    """Per-cluster factor of the EPPF for a cluster of ``size`` items."""
    alpha, discount, k = pp[0], pp[1], pp[2]
    if k > 0:
        a = alpha / k
        return math.lgamma(size + a) - math.lgamma(a)
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


@njit(cache=True)
def log_weight_existing(pp, size):
    """Unnormalised log prior weight of joining a cluster of ``size`` other items."""
    alpha, discount, k = pp[0], pp[1], pp[2]
    if k > 0:
        return math.log(size + alpha / k)
    return math.log(size - discount)


@njit(cache=True)
def log_weight_new(pp, n_clusters):
    """Unnormalised log prior weight of opening a new cluster next to ``n_clusters``."""
    alpha, discount, k = pp[0], pp[1], pp[2]
    if k > 0:
        if n_clusters >= k:
            return -np.inf
        return math.log(alpha) + math.log1p(-n_clusters / k)
    return math.log(alpha + n_clusters * discount)
