"""An energy's split function as the hierarchical engine kernels call it.

The kernels of the exact trellis, the sparse trellis and greedy / beam search
are templates (:mod:`sklearn_trellis._core.specialise`) that evaluate a split
through :func:`split_log_potential`, which calls ``split_fn``: the numba split
function of one energy (``SplitKernelInputs.split``, see
:mod:`sklearn_trellis.models._split`), bound per energy by each kernel module's
``specialise(split)``. The engines thus know no energy by name, and a new
energy touches no engine file.
"""

import numpy as np

from .._core.specialise import template


@template(inline="always")
def split_log_potential(params, stats, full, parent, left, right):
    """``beta * psi(left, right)`` of the split of ``parent`` (``params[0]`` is ``beta``).

    ``-inf`` (a forbidden split) stays ``-inf``, also for ``beta = 0``.
    """
    value = split_fn(params, stats, full, parent, left, right)  # noqa: F821 (bound per energy)
    if value == -np.inf:
        return value
    return params[0] * value


def split_bindings(split):
    """The bindings of :func:`~sklearn_trellis._core.specialise.specialise` for one energy.

    Parameters
    ----------
    split : numba dispatcher
        The energy's ``numba.njit`` split function ``(params, stats, full,
        parent, left, right) -> float``.

    Returns
    -------
    dict
        ``{"split_fn": split}``.
    """
    if not hasattr(split, "py_func"):
        raise TypeError("split must be a numba.njit split function (params, stats, full, "
                        f"parent, left, right) -> float, got {split!r}.")
    return {"split_fn": split}


__all__ = ["split_log_potential", "split_bindings"]
