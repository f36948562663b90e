"""The optimal bipartition of a small cluster, by enumerating all ``2^(m-1) - 1`` of them.

The lecture notes (Murphy, ch. 25, Section 5.2) call the optimal split hard
because a cluster of ``m`` items has ``2^(m-1) - 1`` bipartitions; up to about
24 items they are enumerated here with the bitmask tables of the trellis
engines. One table ``W[B] = sum_{i<j in B} a_ij`` over all ``2^m`` subsets
``B`` (built in ``O(2^m)`` from the subset machinery of ``_core/subsets.py``)
gives every criterion in ``O(1)`` per bipartition ``(L, R)``:

``'average'``
    minimise ``W(L)/|L| + W(R)/|R|`` on dissimilarities ``a = d``: half the sum
    over all objects of their average dissimilarity ``d_i^G`` to their own group
    (the notes' Eq. 30, ``G`` containing ``i``), the quantity DIANA's moves
    (Eqs. 31-32) decrease greedily. On squared Euclidean distances it is the
    within-group sum of squares: the exact 2-means split.
``'dasgupta'``
    minimise ``|S| * w(L, R)`` on similarities ``a = w``: the split's term of
    Dasgupta's cost (Dasgupta 2016), ``w(L, R) = W(S) - W(L) - W(R)``.
``'sparsest'``
    minimise ``w(L, R) / (|L| |R|)``, the mean similarity across the split
    (sparsest cut; recursive sparsest cuts approximate Dasgupta's optimum).

Ties go to the first bipartition in enumeration order (``L`` runs over the
subsets without the cluster's last item, in increasing bitmask order).
"""

import numpy as np
from numba import njit

from ..._core.budget import check_memory
from ..._core.subsets import lowest_bit_index, popcount

#: Split criteria and the matrix each one reads.
CRITERIA = {"average": "dissimilarity", "dasgupta": "similarity", "sparsest": "similarity"}

_CRITERION_CODE = {"average": 0, "dasgupta": 1, "sparsest": 2}

#: Largest cluster the enumeration accepts (2**24 subsets: 128 MiB per table).
MAX_EXACT_ITEMS = 24


def subset_table_bytes(m):
    """Peak bytes of :func:`pair_sum_table` on ``m`` items: the float64 table over the
    ``2**m`` subsets and its float64 row over the ``2**(m-1)`` lower ones."""
    return 12 * (1 << m)


@njit(cache=True)
def pair_sum_table(values):
    """``W[B] = sum_{i<j in B} values[i, j]`` for every bitmask ``B`` of ``m`` items."""
    m = values.shape[0]
    table = np.zeros(1 << m)
    if m < 2:
        return table
    # row[lower] = sum_{j in lower} values[top, j], one subset at a time.
    row = np.zeros(1 << (m - 1))
    for top in range(1, m):
        base = 1 << top
        for lower in range(1, base):
            row[lower] = row[lower & (lower - 1)] + values[top, lowest_bit_index(lower)]
            table[base | lower] = table[lower] + row[lower]
    return table


@njit(cache=True, inline="always")
def _criterion(code, table, full, left, m):
    right = full ^ left
    size_left = popcount(left)
    size_right = m - size_left
    if code == 0:
        return table[left] / size_left + table[right] / size_right
    cut = table[full] - table[left] - table[right]
    if code == 1:
        return m * cut
    return cut / (size_left * size_right)


@njit(cache=True)
def _best_bipartition(table, code, m):
    full = (1 << m) - 1
    best = np.inf
    best_left = 1
    for left in range(1, 1 << (m - 1)):
        value = _criterion(code, table, full, left, m)
        if value < best:
            best = value
            best_left = left
    return best_left, best


def split_criterion(values, left_mask, criterion):
    """The criterion of one bipartition (``left_mask``: bool, True = left part)."""
    values = np.asarray(values, dtype=np.float64)
    left_mask = np.asarray(left_mask, dtype=bool)
    m = values.shape[0]
    left = np.flatnonzero(left_mask)
    right = np.flatnonzero(~left_mask)
    if left.size == 0 or right.size == 0:
        raise ValueError("Both parts of a bipartition must be non-empty.")

    def inner(items):
        block = values[np.ix_(items, items)]
        return float(np.triu(block, 1).sum())

    if criterion == "average":
        return inner(left) / left.size + inner(right) / right.size
    cut = float(values[np.ix_(left, right)].sum())
    if criterion == "dasgupta":
        return m * cut
    if criterion == "sparsest":
        return cut / (left.size * right.size)
    raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {criterion!r}.")


def best_bipartition(values, criterion="average"):
    """The optimal bipartition of ``m <= 24`` items under ``criterion``.

    Parameters
    ----------
    values : ndarray of shape (m, m)
        Symmetric dissimilarities (``'average'``) or similarities (cut criteria)
        of the cluster's items.
    criterion : {'average', 'dasgupta', 'sparsest'}

    Returns
    -------
    left : ndarray of bool, shape (m,)
        True for the items of the part without the last item.
    value : float
        The optimal criterion value.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.divisive.exact_split import best_bipartition
    >>> x = np.array([0.0, 0.1, 0.2, 5.0, 5.1])
    >>> d = np.abs(x[:, None] - x[None, :]) ** 2
    >>> best_bipartition(d, "average")[0].tolist()
    [True, True, True, False, False]
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {criterion!r}.")
    values = np.ascontiguousarray(values, dtype=np.float64)
    m = values.shape[0]
    if m < 2:
        raise ValueError("A bipartition needs at least 2 items.")
    if m > MAX_EXACT_ITEMS:
        raise ValueError(f"Enumerating the bipartitions of {m} items is out of reach "
                         f"(the limit is {MAX_EXACT_ITEMS}: 2^(m-1) - 1 bipartitions).")
    check_memory(subset_table_bytes(m), f"the subset table of a cluster of {m} items",
                 way_out=f"Lower max_exact_size below {m} (larger clusters are split by "
                         "DIANA).")
    table = pair_sum_table(values)
    left, value = _best_bipartition(table, _CRITERION_CODE[criterion], m)
    mask = (left >> np.arange(m)) & 1
    return mask.astype(bool), float(value)
