"""Banners (Rousseeuw 1986): the order and heights of a divisive tree, and its merges.

A divisive tree over ``n`` objects is fully described by its *banner*: the
objects in the order ``order`` in which the splits leave them, and for every
position ``k >= 1`` the height ``banner[k]`` at which position ``k - 1`` was
separated from position ``k`` (the diameter of the cluster split there). R's
``cluster::diana`` reads its ``merge`` matrix off the banner (``twins.c``, step
500): repeatedly join the two neighbours at the lowest remaining height, the
rightmost one among equal heights. :func:`banner_to_merge` does exactly that;
:func:`merge_to_children` turns R's encoding into scikit-learn's ``children_``.

These converters belong with the other tree formats of ``_core/trees.py``; they
live here until the formats are consolidated.
"""

import numpy as np


def banner_to_merge(order, banner):
    """R's ``merge`` matrix (1-based, negative = object) and the merge heights.

    Parameters
    ----------
    order : ndarray of int, shape (n,)
        Objects (0-based) in banner order.
    banner : ndarray of float, shape (n,)
        ``banner[k]`` for ``k >= 1`` as above; ``banner[0]`` is ignored.

    Returns
    -------
    merge : ndarray of int64, shape (n - 1, 2)
        R's encoding: ``-j`` is object ``j - 1``, ``r > 0`` the cluster of row ``r``.
    heights : ndarray of float64, shape (n - 1,)
        Height of each merge (non-decreasing).
    """
    order = np.asarray(order, dtype=np.int64)
    banner = np.asarray(banner, dtype=np.float64)
    n = order.size
    positions = np.arange(1, n)
    # Lowest height first; among equal heights the last position (R scans with >=).
    sequence = positions[np.lexsort((-positions, banner[1:]))]
    parent = np.arange(n)
    cluster_code = -(order + 1)  # R's code of the cluster each root stands for

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    merge = np.empty((max(n - 1, 0), 2), dtype=np.int64)
    for row, position in enumerate(sequence):
        left = find(position - 1)
        right = find(position)
        merge[row] = cluster_code[left], cluster_code[right]
        parent[right] = left
        cluster_code[left] = row + 1
    return merge, banner[sequence].copy()


def merge_to_children(merge):
    """scikit-learn ``children_`` (int64) of an R ``merge`` matrix."""
    merge = np.asarray(merge, dtype=np.int64)
    n = merge.shape[0] + 1
    return np.where(merge < 0, -merge - 1, n + merge - 1).astype(np.int64)


def divisive_coefficient(banner):
    """R's divisive coefficient ``dc`` (``bncoef`` in ``twins.c``) of a banner.

    For each object, ``d(i)`` is the diameter of the last cluster it belonged to
    before being split off alone, over the diameter of the data; ``dc`` is the
    mean of ``1 - d(i)``. It is 0 when the banner is flat (all heights zero).
    """
    ban = np.asarray(banner, dtype=np.float64)
    n = ban.size
    if n < 2:
        return 0.0
    sup = float(ban[1:].max())
    if sup <= 0.0:
        return 0.0  # R divides 0 by 0 here (NaN); no height, no structure
    total = 0.0
    for k in range(n):
        early = k if k > 0 else 1
        after = k + 1 if k + 1 < n else n - 1
        total += 1.0 - min(ban[early], ban[after]) / sup
    return float(total / n)
