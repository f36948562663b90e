"""Projection entropy and entropy sequences (Fidaner & Cemgil 2013, Section 4)."""

from ._input import as_sample_set, check_order
from ._kernels import prefix_statistics


def entropy_sequence(samples, order=None):
    """Expected projection entropies along an order of the elements.

    ``h[i - 1] = mean_t H(PROJ(Z_t, S_i))`` with ``S_i`` the first ``i``
    elements of ``order`` (paper Section 4, Figure 4). Entropies are natural
    logs and use the per-element information of Eq. 10 with base ``|S_i|``::

        H(PROJ(Z, S)) = sum_{B in Z, B ∩ S nonempty} |B ∩ S| / |S| * log(|S| / |B ∩ S|),

    Shannon's entropy of the block proportions for partitions; the same
    per-element definition for feature allocations (blocks may overlap or omit
    elements; omitted elements contribute nothing).

    Parameters
    ----------
    samples : sample set
        Int array (T, n) of label vectors (elements are the columns), lists
        of blocks, or binary array (T, n_blocks, n).
    order : array-like of int, default=None
        Distinct elements; ``None`` means ``0, 1, ..., n-1``.

    Returns
    -------
    entropies : ndarray of shape (len(order),)

    Examples
    --------
    >>> from sklearn_trellis.summaries import entropy_sequence
    >>> entropy_sequence([[0, 1, 0], [0, 1, 1]]).round(4)
    array([0.    , 0.6931, 0.6365])
    """
    sample_set = as_sample_set(samples)
    order = check_order(order, sample_set.n_elements)
    _, sums = prefix_statistics(sample_set.memberships, sample_set.n_blocks, order, False)
    return sums / sample_set.n_samples


def projection_entropy(samples, subset):
    """Expected entropy of the projection onto ``subset`` (paper Section 4, Eq. 11).

    ``mean_t H(PROJ(Z_t, S))``: 0 when ``S`` always lies in one block, ``log |S|``
    when its elements are always apart. See :func:`entropy_sequence` for the
    definition, which also covers feature allocations.

    Parameters
    ----------
    samples : sample set
        Int array (T, n) of label vectors (elements are the columns), lists
        of blocks, or binary array (T, n_blocks, n).
    subset : array-like of int
        Distinct element indices.

    Returns
    -------
    entropy : float

    Examples
    --------
    >>> from sklearn_trellis.summaries import projection_entropy
    >>> round(projection_entropy([[0, 0, 1], [0, 1, 1]], [0, 1]), 4)
    0.3466
    """
    sample_set = as_sample_set(samples)
    subset = check_order(subset, sample_set.n_elements, name="subset")
    return float(entropy_sequence(sample_set, subset)[-1])


__all__ = ["entropy_sequence", "projection_entropy"]
