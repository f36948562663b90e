"""A user-supplied split log-potential ``energy(X, left, right) -> float``.

This is the slow path: the callable is called once per split, and an exact
trellis over N items has ``(3**N - 2**(N+1) + 1) / 2`` splits (265,720 for
N = 12), so :class:`CallableEnergy` refuses N above ``max_items`` (default 12,
a few seconds of Python calls). The values are stored in a table with one entry
per ``(L, R)`` pair, indexed by the base-3 code ``sum_{i in L} 3**i + 2 *
sum_{i in R} 3**i``; the kernels read it like any other split function.
"""

import math
import numbers

import numpy as np
from numba import njit

from .._core.subsets import members
from .._core.validation import check_scalar_param
from ._split import SplitKernelInputs, SplitModel

#: Largest N a callable energy accepts by default.
DEFAULT_MAX_CALLABLE_ITEMS = 12


@njit(cache=True, inline="always")
def table_split(params, stats, full, parent, left, right):
    """``params[1 + code(L, R)]`` with ``stats[0, X] = sum_{i in X} 3**i``."""
    return params[1 + np.int64(stats[0, left]) + 2 * np.int64(stats[0, right])]


def base3_codes(n_items):
    """``sum_{i in X} 3**i`` for every bitmask ``X`` (float64, exact for N <= 33)."""
    codes = np.zeros(1 << n_items)
    for top in range(n_items):
        base = 1 << top
        codes[base:2 * base] = codes[:base] + float(3 ** top)
    return codes


def split_table_from_function(n_items, function):
    """Table of ``function(left_indices, right_indices)`` over all splits.

    Returns the array read by :func:`table_split` (without the leading
    ``beta`` entry); entries that are not splits stay ``nan``.
    """
    codes = base3_codes(n_items).astype(np.int64)
    table = np.full(3 ** n_items, np.nan)
    for parent in range(3, 1 << n_items):
        low = parent & -parent
        rest = parent ^ low
        if rest == 0:
            continue
        sub = (rest - 1) & rest
        while True:
            left = sub | low
            right = parent ^ left
            table[codes[left] + 2 * codes[right]] = function(members(left), members(right))
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return table


class CallableEnergy(SplitModel):
    """Split log-potential given by a Python function (slow path, small N only).

    Parameters
    ----------
    function : callable
        ``function(X, left, right) -> float``: the log-potential of splitting
        ``left + right`` into the two children ``left`` and ``right`` (int
        index arrays into the rows of ``X``; ``left`` holds the lowest index).
        Return ``-inf`` to forbid a split. ``X`` is the data given to
        :meth:`fit` (the estimator's ``X``, features or a precomputed matrix).
    max_items : int, default=12
        Refuse the exact (all-splits) tables above this many items: the
        function would be called ``(3**N - 2**(N+1) + 1) / 2`` times (265,720
        for N = 12). Sparse trellises call it once per edge of their family.

    Attributes
    ----------
    data_ : ndarray
        The data the model was fitted on.
    n_items_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import CallableEnergy
    >>> def balanced(X, left, right):
    ...     return -abs(len(left) - len(right))
    >>> energy = CallableEnergy(balanced).fit(np.zeros((4, 1)))
    >>> energy.log_potential(((0, 1), (2, 3)))
    0.0
    """

    python_splits = True

    input_kind = "features"

    def __init__(self, function, max_items=DEFAULT_MAX_CALLABLE_ITEMS):
        self.function = function
        self.max_items = max_items

    def fit(self, data, y=None):
        """Bind the model to the data (its first axis indexes the items)."""
        if not callable(self.function):
            raise TypeError(f"function must be callable, got {self.function!r}.")
        check_scalar_param(self.max_items, "max_items", kind=numbers.Integral, low=1)
        data = np.asarray(data)
        n = data.shape[0]
        self.data_ = data
        self.n_items_ = n
        return self

    def split_log_potential(self, left, right):
        value = float(self.function(self.data_, np.asarray(left, dtype=np.int64),
                                    np.asarray(right, dtype=np.int64)))
        if math.isnan(value) or value == math.inf:
            raise ValueError(f"The energy returned {value} for the split {list(left)} | "
                             f"{list(right)}; it must be finite or -inf.")
        return value

    def with_new_item(self, new_row):
        """The energy on the fitted rows plus ``new_row`` (the function sees ``N + 1`` rows)."""
        row = np.asarray(new_row).reshape(1, -1)
        if self.data_.ndim != 2 or row.shape[1] != self.data_.shape[1]:
            raise ValueError(f"A new item must be one row like the fitted data's "
                             f"({self.data_.shape[1:]}), got shape {np.shape(new_row)}.")
        return CallableEnergy(self.function, self.max_items).fit(np.vstack([self.data_, row]))

    def kernel_inputs(self, beta=1.0):
        n = self.n_items_
        if n > self.max_items:
            n_splits = (3 ** n - 2 ** (n + 1) + 1) // 2
            raise ValueError(
                f"A callable energy is evaluated once per split: the exact trellis of "
                f"N={n} items has {n_splits:,} splits, above the limit of "
                f"N={self.max_items} (max_items). Use a sparse trellis, a built-in energy, "
                "or raise max_items.")
        table = split_table_from_function(
            n, lambda left, right: self.split_log_potential(left, right))
        params = np.concatenate([[float(beta)], table])
        return SplitKernelInputs(table_split, params, base3_codes(n)[None, :])


__all__ = ["CallableEnergy", "table_split", "split_table_from_function", "base3_codes"]
