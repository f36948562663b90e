"""Cumulative statistics, projections and COD matrices (Fidaner & Cemgil 2013, Section 3)."""

import numpy as np

from ._input import as_sample_set, as_single, check_order, is_block_list_format
from ._kernels import prefix_statistics


def _blocks_of(sample_set):
    """Blocks of the single sample of ``sample_set`` as sorted int arrays."""
    memberships = sample_set.memberships[:, 0, :]
    n_blocks = int(sample_set.n_blocks[0])
    elements, depth = np.nonzero(memberships >= 0)
    block_ids = memberships[elements, depth]
    return [np.sort(elements[block_ids == b]) for b in range(n_blocks)]


def cumulative_statistic(partition):
    """Cumulative block-size statistic ``phi_k`` = number of blocks of size ``>= k``.

    For a partition of ``n`` elements ``phi`` sums to ``n`` and is the
    conjugate of the integer partition of block sizes (Fidaner & Cemgil 2013,
    Section 3 and Figure 1). ``phi_1`` is the number of blocks, and
    ``phi_k - phi_{k+1}`` the number of blocks of size exactly ``k``. For a
    feature allocation the same counts are returned (they need not sum to n).

    Parameters
    ----------
    partition : array-like of shape (n,), list of blocks, or ndarray of shape (n_blocks, n)
        A label vector, a list of blocks (iterables of element indices), or a
        binary membership matrix (feature allocations).

    Returns
    -------
    phi : ndarray of shape (n,)
        ``phi[k - 1]`` for ``k = 1..n``, where ``n`` is the label vector's
        length, the membership matrix's column count, or the number of
        distinct elements in the blocks.

    Examples
    --------
    >>> from sklearn_trellis.summaries import cumulative_statistic
    >>> cumulative_statistic([[0, 2, 5, 6], [1], [3, 4]])
    array([3, 2, 1, 1, 0, 0, 0])
    """
    sample_set, n_covered = as_single(partition)
    sizes = np.array([len(block) for block in _blocks_of(sample_set)], dtype=np.int64)
    length = max(n_covered, int(sizes.max()) if sizes.size else 0)
    return np.array([np.count_nonzero(sizes >= k) for k in range(1, length + 1)],
                    dtype=np.int64)


def projection(partition, subset):
    """The partition (or feature allocation) induced on ``subset`` (paper Eq. 4).

    ``PROJ(Z, S) = {B ∩ S : B in Z} minus the empty set``.

    Parameters
    ----------
    partition : array-like of shape (n,), list of blocks, or ndarray of shape (n_blocks, n)
        As in :func:`cumulative_statistic`.
    subset : array-like of int
        Distinct element indices.

    Returns
    -------
    blocks : list of list of int
        The non-empty intersections, each sorted, ordered by their smallest
        element (a feature allocation may repeat a block).

    Examples
    --------
    >>> from sklearn_trellis.summaries import projection
    >>> projection([[0, 2, 5, 6], [1], [3, 4]], [0, 1, 2, 3])
    [[0, 2], [1], [3]]
    """
    sample_set, _ = as_single(partition)
    if isinstance(partition, np.ndarray) or not is_block_list_format([partition]):
        # a label vector or a binary matrix has n elements: an index past them is an error
        subset = check_order(subset, sample_set.n_elements, name="subset")
    else:  # blocks name their elements: the subset may hold elements in no block
        subset = check_order(subset, max(sample_set.n_elements, int(np.max(subset)) + 1
                                         if np.size(subset) else 1), name="subset")
    in_subset = np.zeros(max(sample_set.n_elements, int(subset.max()) + 1), dtype=bool)
    in_subset[subset] = True
    blocks = []
    for block in _blocks_of(sample_set):
        kept = [int(e) for e in block if in_subset[e]]
        if kept:
            blocks.append(kept)
    blocks.sort()
    return blocks


def cumulative_occurrence_distribution(samples, order=None):
    """Averaged cumulative occurrence distribution (COD) matrix (paper Section 3).

    ``Delta[i - 1, k - 1] = mean_t phi_k(PROJ(Z_t, S_i))`` with
    ``S_i = {order[0], ..., order[i - 1]}``: row ``i`` is the cumulative
    statistic of the projection onto the first ``i`` elements, so the matrix
    is lower triangular and, for partitions, row ``i`` sums to ``i`` (Eq. 6).

    Parameters
    ----------
    samples : sample set
        Int array (T, n) of label vectors (elements are the columns), list of
        partitions or feature allocations given as lists of blocks, or binary
        array (T, n_blocks, n).
    order : array-like of int, default=None
        A sequence of distinct elements (a permutation of ``0..n-1`` or a
        prefix of one). ``None`` means ``0, 1, ..., n-1``.

    Returns
    -------
    cod : ndarray of shape (len(order), len(order))

    Examples
    --------
    >>> from sklearn_trellis.summaries import cumulative_occurrence_distribution
    >>> cumulative_occurrence_distribution([[0, 0, 1], [0, 1, 1]])
    array([[1. , 0. , 0. ],
           [1.5, 0.5, 0. ],
           [2. , 1. , 0. ]])
    """
    sample_set = as_sample_set(samples)
    order = check_order(order, sample_set.n_elements)
    events, _ = prefix_statistics(sample_set.memberships, sample_set.n_blocks, order, True)
    return np.cumsum(events, axis=0) / sample_set.n_samples


__all__ = ["cumulative_statistic", "projection", "cumulative_occurrence_distribution"]
