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
from .._core.validation import check_log_potential_scale

#: How a hierarchical engine's overflow error ends.
OVERFLOW_REMEDY = "rescale the energy (its similarities or data) or lower beta"


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


def refuse_overflow(values, n_invalid, beta, at_unit_beta):
    """Refuse a hierarchical trellis whose tree log-potentials overflow float64.

    ``values`` are ``(log Z, MAP value)`` of the root after the inside pass at
    ``beta`` and ``n_invalid`` the splits that came out NaN or ``+inf``. Finite
    values must stay within ``MAX_LOG_POTENTIAL`` (``check_log_potential_scale``,
    as the flat engines). Non-finite values (or invalid splits) are overflow
    when the same pass at ``beta = 1``, given by ``at_unit_beta() -> (values,
    n_invalid)`` (called only then), has neither invalid splits nor ``-inf``:
    then ``beta * psi`` overflowed, and the error says so. Otherwise the
    caller's own error (forbidden or invalid splits) stands.
    """
    values = np.asarray(values, dtype=np.float64)
    if not n_invalid and np.isfinite(values).all():
        check_log_potential_scale([np.abs(values).max()], 1.0,
                                  what="The tree log-potentials (log Z, MAP)",
                                  remedy=OVERFLOW_REMEDY)
        return
    beta = float(beta)
    if beta == 0.0:
        return
    unit, unit_invalid = (values, n_invalid) if beta == 1.0 else at_unit_beta()
    unit = np.asarray(unit, dtype=np.float64)
    if unit_invalid or np.isnan(unit).any() or not (unit > -np.inf).all():
        return
    top = min(float(np.abs(unit).max()), np.finfo(np.float64).max)
    what = "beta times the split log-potentials summed over a tree"
    check_log_potential_scale([top], beta, what=what, remedy=OVERFLOW_REMEDY)
    raise ValueError(f"{what} overflow float64 for some split (beta = {beta:g}); "
                     f"{OVERFLOW_REMEDY}.")


__all__ = ["split_log_potential", "split_bindings", "refuse_overflow"]
