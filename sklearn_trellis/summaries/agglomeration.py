"""The entropy agglomeration (EA) tree of a sample set (Fidaner & Cemgil 2013, Section 5)."""

import numpy as np

from ._input import as_sample_set, sample_major
from ._kernels import cooccurrence_counts, entropy_agglomeration_kernel


# Above this, live subsets keep only sparse block histograms (slower, O(n T) memory).
DENSE_HISTOGRAM_BYTES = 1 << 30


def entropy_agglomeration_tree(samples):
    """Merge sequence of entropy agglomeration.

    Starting from singletons, repeatedly merge the pair of current subsets
    whose union has the minimum expected projection entropy.

    Parameters
    ----------
    samples : sample set or SampleSet

    Returns
    -------
    children : ndarray of shape (n - 1, 2)
        scikit-learn's encoding: ids below ``n`` are elements, id ``n + s`` is
        the subset formed at step ``s``.
    distances : ndarray of shape (n - 1,)
        Expected projection entropy of each merged subset (rounded to
        ``ENTROPY_DECIMALS`` decimals so that exact ties are recognised).
    counts : ndarray of shape (n - 1,)
        Number of elements of each merged subset.
    cooccurrence_counts : ndarray of shape (n, n)
        Number of (sample, block) pairs holding both elements (a by-product).
    """
    sample_set = as_sample_set(samples)
    by_sample = sample_major(sample_set)
    counts = cooccurrence_counts(by_sample)
    degree = np.diagonal(counts).astype(np.int64).copy()
    dense_bytes = 4 * sample_set.n_elements * sample_set.n_samples * max(sample_set.max_blocks, 1)
    use_dense = dense_bytes <= DENSE_HISTOGRAM_BYTES
    labels = (np.ascontiguousarray(by_sample[:, :, 0]) if sample_set.is_partition
              else np.zeros((0, 0), np.int32))
    children, distances, sizes = entropy_agglomeration_kernel(
        sample_set.memberships, labels, max(sample_set.max_blocks, 1), counts, degree,
        use_dense)
    return children, distances, sizes, counts


__all__ = ["entropy_agglomeration_tree"]
