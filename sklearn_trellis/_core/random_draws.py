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


@njit(cache=True)
def permutation(n):
    """``np.random.permutation(n)`` with the same draws from numba's generator.

    numba's own compiles its generic shuffle (about a second on a cold cache);
    this is the same Fisher-Yates loop (``j = randint(i + 1)`` for ``i = n - 1 .. 1``),
    so a kernel switching to it draws the same permutation.
    """
    order = np.arange(n)
    i = n - 1
    while i > 0:
        j = np.random.randint(i + 1)
        order[i], order[j] = order[j], order[i]
        i -= 1
    return order
