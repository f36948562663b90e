"""A stable argsort in numba, small to compile: the one sort the kernels share.

``np.argsort`` inside an ``njit`` function makes numba compile its generic
sorting library (about 2.5 s of CPU per process on a cold cache, more than the
rest of a typical kernel): a fit that sorts in a kernel pays it in its first
fit. :func:`stable_argsort` is one plain bottom-up merge sort that compiles in
a fraction of that and returns exactly ``np.argsort(values, kind="stable")``
(ties in index order, NaN last), so a kernel switching to it changes no
output. Where the Python side can sort before calling a kernel, it should.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def stable_argsort(values):
    """Indices sorting the 1-d array ``values``, as ``np.argsort(values, kind="stable")``.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Numbers (floats may hold NaN, which sort last, as in numpy).

    Returns
    -------
    order : ndarray of shape (n,), int64
        ``values[order]`` is non-decreasing; equal values keep their index order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis._core.sorting import stable_argsort
    >>> stable_argsort(np.array([2.0, np.nan, 1.0, 2.0]))
    array([2, 0, 3, 1])
    """
    n = values.shape[0]
    order = np.arange(n)
    merged = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                right, left = values[order[j]], values[order[i]]
                # take from the right run only when strictly before (stable); NaN is after all
                if right < left or (left != left and right == right):
                    merged[k] = order[j]
                    j += 1
                else:
                    merged[k] = order[i]
                    i += 1
                k += 1
            while i < mid:
                merged[k] = order[i]
                i += 1
                k += 1
            while j < hi:
                merged[k] = order[j]
                j += 1
                k += 1
        order, merged = merged, order
        width *= 2
    return order


__all__ = ["stable_argsort"]
