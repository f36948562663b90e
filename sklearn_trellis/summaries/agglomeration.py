"""The entropy agglomeration (EA) tree of a sample set (Fidaner & Cemgil 2013, Section 5)."""

import numpy as np

from ._input import as_sample_set, sample_major
from .._core.interpreted import call
from .._core.progress import SILENT, run_in_chunks
from ._kernels import (cooccurrence_counts, entropy_agglomeration_start,
                       entropy_agglomeration_steps, entropy_tables)

# Above this, live subsets keep only sparse block histograms (slower, O(n T) memory).
DENSE_HISTOGRAM_BYTES = 1 << 30
# Refuse runs whose tables (two n x n matrices, the histogram pool) exceed this.
MAX_AGGLOMERATION_BYTES = 8 << 30


#: Up to this many inner steps (samples x elements^2 x depth) the co-occurrence counts
#: run the kernel's own Python source (:mod:`~sklearn_trellis._core.interpreted`:
#: integer counts, the same table): about 0.1 s, against 0.6 s of compilation.
INTERPRETED_COOCCURRENCE_WORK = 200_000

#: Up to this many elements^2 x samples x depth, the agglomeration itself (its start
#: and merges: integer histograms, sums of table entries, comparisons; the logarithm
#: tables are compiled) runs its kernels' own Python source: about 0.07 s at 40
#: elements and 50 samples, against about 4 s of compilation in a first fit.
INTERPRETED_AGGLOMERATION_WORK = 200_000

#: Merges of the first chunk (see :func:`~sklearn_trellis._core.progress.run_in_chunks`).
FIRST_CHUNK = 16


def entropy_agglomeration_tree(samples, progress=SILENT):
    """Merge sequence of entropy agglomeration.

    Starting from singletons, repeatedly merge the pair of current subsets
    whose union has the minimum expected projection entropy.

    Parameters
    ----------
    samples : sample set or SampleSet
    progress : Progress, default=SILENT
        Reporter of a fit with ``verbose``: the merges done, at most every 10 s.

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
    n, n_samples = sample_set.n_elements, sample_set.n_samples
    depth = sample_set.memberships.shape[2]
    needed = 16 * n * n + 16 * n * n_samples * depth + 4 * n_samples * max(sample_set.max_blocks, 1)
    if needed > MAX_AGGLOMERATION_BYTES:
        raise ValueError(f"Entropy agglomeration of n={n} elements over T={n_samples} samples "
                         f"needs about {needed / 2 ** 30:.1f} GiB (n x n entropy and "
                         f"co-occurrence tables); the limit is "
                         f"{MAX_AGGLOMERATION_BYTES / 2 ** 30:.0f} GiB. Use fewer elements.")
    by_sample = sample_major(sample_set)
    work = by_sample.size * by_sample.shape[1]
    counts = call(cooccurrence_counts.for_work(work), by_sample,
                  small=work <= INTERPRETED_COOCCURRENCE_WORK)
    degree = np.diagonal(counts).astype(np.int64).copy()
    dense_bytes = 4 * sample_set.n_elements * sample_set.n_samples * max(sample_set.max_blocks, 1)
    use_dense = dense_bytes <= DENSE_HISTOGRAM_BYTES
    labels = (np.ascontiguousarray(by_sample[:, :, 0]) if sample_set.is_partition
              else np.zeros((0, 0), np.int32))
    small = n * n * n_samples * depth <= INTERPRETED_AGGLOMERATION_WORK
    state, outputs = call(entropy_agglomeration_start,
                          sample_set.memberships, labels, max(sample_set.max_blocks, 1), counts,
                          degree, use_dense, *entropy_tables(n), small=small)
    n_merges = max(n - 1, 0)
    singletons = [labels, np.arange(n, dtype=np.int64)]   # live singletons' label columns
    made = 0

    def merges(size):
        nonlocal made
        stop = min(n_merges, made + size)
        singletons[:] = call(entropy_agglomeration_steps, state, outputs, labels,
                             *singletons, use_dense, made, stop, small=small)
        made = stop
        progress.update(made, n_merges, "merges")
        return made

    run_in_chunks(merges, n_merges, FIRST_CHUNK)
    children, distances, sizes = outputs
    return children, distances, sizes, counts


__all__ = ["entropy_agglomeration_tree"]
