"""Numba dispatch over the split functions of the built-in split models.

The trellis kernels call :func:`split_log_potential` for every split; ``kind``
is constant during a pass, so the branch is perfectly predicted. A new
vectorised energy adds a ``KIND_*`` constant in ``_split``, its numba split
function in its module and a branch here.
"""

import numpy as np
from numba import njit

from ._split import KIND_DASGUPTA, KIND_GINKGO, KIND_HCC
from .callable_energy import table_split
from .dasgupta import dasgupta_split
from .ginkgo import ginkgo_split
from .hcc import hcc_split


@njit(cache=True, inline="always")
def split_log_potential(kind, params, stats, full, parent, left, right):
    """``beta * psi(left, right)`` of the split of ``parent``; ``-inf`` if forbidden."""
    if kind == KIND_DASGUPTA:
        value = dasgupta_split(params, stats, full, parent, left, right)
    elif kind == KIND_HCC:
        value = hcc_split(params, stats, full, parent, left, right)
    elif kind == KIND_GINKGO:
        value = ginkgo_split(params, stats, full, parent, left, right)
    else:
        value = table_split(params, stats, full, parent, left, right)
    if value == -np.inf:
        return value
    return params[0] * value


@njit(cache=True)
def evaluate_split(kind, params, stats, full, parent, left):
    """One split value, callable from Python (the right child is ``parent ^ left``)."""
    return split_log_potential(kind, params, stats, full, parent, left, parent ^ left)
