"""Numba draws shared by the samplers of several layers (numba's generator: seed it first)."""

import math

import numpy as np
from numba import njit


@njit(cache=True)
def log_gamma_draw(shape):
    """``log g`` for ``g ~ Gamma(shape, 1)``, without underflow for small shapes.

    For ``shape < 1``, ``g = g' U^(1 / shape)`` with ``g' ~ Gamma(shape + 1)`` (Marsaglia &
    Tsang), so the log stays finite where ``g`` itself would round to 0.
    """
    if shape >= 1.0:
        return math.log(np.random.gamma(shape, 1.0))
    u = np.random.random()
    while u <= 0.0:
        u = np.random.random()
    return math.log(np.random.gamma(shape + 1.0, 1.0)) + math.log(u) / shape
