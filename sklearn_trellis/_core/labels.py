"""Label vectors: the one relabelling "in order of first appearance".

Every partition the package returns numbers its clusters ``0..K-1`` in the
order in which their first member appears, so two equal partitions have equal
label vectors. :func:`first_appearance_labels` is the Python entry point (any
integer labels, including negative ones); :func:`compact_labels` and
:func:`canonical_rows` are the numba kernels for non-negative labels that the
compiled engines call in their loops.
"""

import numpy as np
from numba import njit


def first_appearance_labels(labels):
    """Labels ``0..K-1`` numbered in order of first appearance.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
        Any integer (or hashable, sortable) labels.

    Returns
    -------
    ndarray of int64, shape (n,)

    Examples
    --------
    >>> first_appearance_labels([7, 7, 3, -1, 3])
    array([0, 0, 1, 2, 1])
    """
    labels = np.asarray(labels).reshape(-1)
    if labels.size == 0:
        return np.zeros(0, np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


@njit(cache=True)
def compact_labels(labels, out):
    """Write into ``out`` the non-negative ``labels`` renumbered by first appearance; return ``K``."""
    n = labels.size
    top = -1
    for i in range(n):
        top = max(top, labels[i])
    mapping = np.full(top + 1, -1, np.int64)
    n_clusters = 0
    for i in range(n):
        c = labels[i]
        if mapping[c] < 0:
            mapping[c] = n_clusters
            n_clusters += 1
        out[i] = mapping[c]
    return n_clusters


@njit(cache=True)
def canonical_rows(label_rows):
    """Each row of a 2-D array of non-negative labels renumbered by first appearance."""
    out = np.empty_like(label_rows)
    for s in range(label_rows.shape[0]):
        compact_labels(label_rows[s], out[s])
    return out


def set_partitions(n, max_clusters=None):
    """Every partition of ``n`` items as first-appearance labels, int64 ``(Bell(n), n)``.

    Rows are restricted growth strings (item ``i`` joins one of the clusters of
    items ``0..i-1`` or opens the next one), in lexicographic order; with
    ``max_clusters``, only those with at most that many clusters.

    Examples
    --------
    >>> set_partitions(3).tolist()
    [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]
    """
    top = n if max_clusters is None else max(1, min(int(max_clusters), n))
    rows = np.zeros((1, min(n, 1)), np.int64)
    for _ in range(1, n):
        n_clusters = rows.max(axis=1) + 1
        choices = np.minimum(n_clusters + 1, top)  # join a cluster or open one
        parent = np.repeat(np.arange(rows.shape[0]), choices)
        label = np.arange(parent.size) - np.repeat(np.cumsum(choices) - choices, choices)
        rows = np.column_stack([rows[parent], label])
    return rows


__all__ = ["first_appearance_labels", "compact_labels", "canonical_rows", "set_partitions"]
