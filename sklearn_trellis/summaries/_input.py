"""Normalise sample sets of partitions and feature allocations.

Accepted forms (elements are indexed ``0..n-1``):

- a label array of shape ``(T, n)``: one partition per row, the elements are
  the *columns* (any integer labels; integral floats are accepted);
- a list of ``T`` partitions or feature allocations, each a list of blocks,
  each block an iterable of element indices (``n`` = largest index + 1);
- a binary numpy array of shape ``(T, n_blocks, n)``: ``[t, b, i]`` is true
  when element ``i`` belongs to block ``b`` of sample ``t``; all-zero rows are
  padding, not blocks.

Every form becomes a :class:`SampleSet`. It is a sample set of *partitions*
when every element lies in exactly one block of every sample, otherwise of
*feature allocations* (blocks may overlap or omit elements).
"""

import numbers
from dataclasses import dataclass

import numpy as np

from .._core.validation import check_label_vector


@dataclass(frozen=True)
class SampleSet:
    """A sample set in the layout the kernels read.

    Attributes
    ----------
    memberships : ndarray of shape (n, T, depth), int32
        ``memberships[i, t]`` lists the blocks (local ids ``0..n_blocks[t]-1``)
        holding element ``i`` in sample ``t``, padded with ``-1``. For
        partitions ``depth == 1``.
    n_blocks : ndarray of shape (T,), int64
        Number of blocks of each sample.
    is_partition : bool
    """

    memberships: np.ndarray
    n_blocks: np.ndarray
    is_partition: bool

    @property
    def n_elements(self):
        return self.memberships.shape[0]

    @property
    def n_samples(self):
        return self.memberships.shape[1]

    @property
    def max_blocks(self):
        return int(self.n_blocks.max()) if self.n_blocks.size else 0

    @property
    def labels(self):
        """(T, n) int64 labels of a partition sample set (block ids, not canonical)."""
        if not self.is_partition:
            raise ValueError("This statistic is defined for partitions only; the samples "
                             "are feature allocations (blocks overlap or omit elements).")
        return np.ascontiguousarray(self.memberships[:, :, 0].T, dtype=np.int64)


def _is_iterable_block(obj):
    return isinstance(obj, (list, tuple, set, frozenset, range, np.ndarray)) and not (
        isinstance(obj, np.ndarray) and obj.ndim == 0)


def _integral(values, what):
    """Return ``values`` as int64, refusing non-integral or non-finite entries."""
    values = np.asarray(values)
    if values.dtype == bool:
        return values.astype(np.int64)
    if values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{what} contain NaN or infinite values.")
        if not np.all(values == np.round(values)):
            raise ValueError(
                f"{what} must be integers (category labels or element indices); got "
                "non-integral floats. A sample set holds posterior clusterings, not "
                "feature rows: pass an int array (T, n) of label vectors, one per sample.")
        return values.astype(np.int64)
    raise TypeError(f"{what} must be integers, got dtype {values.dtype}.")


def _codes(values):
    """Integer codes of any labels (strings, objects...): equal labels, equal codes."""
    values = np.asarray(values)
    try:
        return np.unique(values, return_inverse=True)[1].reshape(values.shape).astype(np.int64)
    except TypeError:  # objects that do not sort together, e.g. 0 and "a"
        seen = {}
        codes = [seen.setdefault(value, len(seen)) for value in values.ravel().tolist()]
        return np.asarray(codes, dtype=np.int64).reshape(values.shape)


def relabel_rows(labels):
    """Map each row of a (T, n) label array to block ids ``0..K_t-1`` (sorted label order)."""
    labels = np.asarray(labels, dtype=np.int64)
    n_samples, n = labels.shape
    order = np.argsort(labels, axis=1, kind="stable")
    sorted_labels = np.take_along_axis(labels, order, axis=1)
    new_block = np.ones_like(sorted_labels, dtype=bool)
    new_block[:, 1:] = sorted_labels[:, 1:] != sorted_labels[:, :-1]
    ids = np.cumsum(new_block, axis=1) - 1
    out = np.empty_like(labels)
    np.put_along_axis(out, order, ids, axis=1)
    n_blocks = ids[:, -1] + 1 if n else np.zeros(n_samples, np.int64)
    return out, n_blocks.astype(np.int64)


def _from_labels(labels):
    if labels.ndim != 2:
        raise ValueError(f"A label sample set must be 2-D (T, n), got shape {labels.shape}.")
    if labels.shape[0] == 0 or labels.shape[1] == 0:
        raise ValueError(f"A sample set needs at least one sample and one element, got "
                         f"shape {labels.shape} (rows are samples, columns elements).")
    labels = _integral(labels, "Labels")
    ids, n_blocks = relabel_rows(labels)
    memberships = np.ascontiguousarray(ids.T.astype(np.int32))[:, :, None]
    return SampleSet(memberships, n_blocks, True)


def _from_triples(n_samples, sample_of, block_of, element_of, n_elements=None):
    """Build a SampleSet from (sample, local block, element) membership triples."""
    n = int(element_of.max()) + 1 if element_of.size else 0
    if n_elements is not None:
        n = n_elements
    if n == 0:
        raise ValueError("The sample set contains no element.")
    n_blocks = np.zeros(n_samples, np.int64)
    if sample_of.size:
        np.maximum.at(n_blocks, sample_of, block_of + 1)
    key = element_of * n_samples + sample_of
    order = np.lexsort((block_of, key))
    key, block_sorted = key[order], block_of[order]
    counts = np.bincount(key, minlength=n * n_samples)
    depth = max(1, int(counts.max()) if counts.size else 1)
    memberships = np.full((n * n_samples, depth), -1, np.int32)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(key.size) - starts[key]
    memberships[key, rank] = block_sorted
    memberships = memberships.reshape(n, n_samples, depth)
    is_partition = bool(np.all(counts == 1))
    return SampleSet(memberships, n_blocks, is_partition)


def _from_binary(array):
    array = np.asarray(array)
    if array.dtype != bool:
        if array.dtype.kind not in "iuf" or not np.all((array == 0) | (array == 1)):
            raise ValueError("A binary (T, n_blocks, n) sample set must hold only 0/1 or booleans.")
    array = array.astype(bool)
    n_samples, _, n = array.shape
    if n_samples == 0 or n == 0:
        raise ValueError(f"A sample set needs at least one sample and one element, got "
                         f"shape {array.shape}.")
    nonempty = array.any(axis=2)
    local = np.cumsum(nonempty, axis=1) - 1
    t, b, i = np.nonzero(array)
    return _from_triples(n_samples, t.astype(np.int64), local[t, b].astype(np.int64),
                         i.astype(np.int64), n_elements=n)


def _from_block_lists(samples):
    sample_of, block_of, element_of = [], [], []
    for t, sample in enumerate(samples):
        if not _is_iterable_block(sample):
            raise TypeError(f"Sample {t} must be a list of blocks, got {type(sample).__name__}.")
        for b, block in enumerate(sample):
            if not _is_iterable_block(block):
                raise TypeError(f"Block {b} of sample {t} must be an iterable of element "
                                f"indices, got {type(block).__name__}.")
            members = _integral(list(block), f"Elements of block {b} of sample {t}")
            if members.ndim != 1 or members.size == 0:
                raise ValueError(f"Block {b} of sample {t} is empty or not flat.")
            if members.min() < 0:
                raise ValueError(f"Block {b} of sample {t} has a negative element index.")
            if np.unique(members).size != members.size:
                raise ValueError(f"Block {b} of sample {t} lists an element twice.")
            sample_of.append(np.full(members.size, t, np.int64))
            block_of.append(np.full(members.size, b, np.int64))
            element_of.append(members)
    if not element_of:
        raise ValueError("The sample set contains no element.")
    return _from_triples(len(samples), np.concatenate(sample_of), np.concatenate(block_of),
                         np.concatenate(element_of))


def is_block_list_format(samples):
    """True when ``samples`` is a (non-array) list of samples given as lists of blocks."""
    if isinstance(samples, np.ndarray) or not isinstance(samples, (list, tuple)):
        return False
    for sample in samples:
        if not _is_iterable_block(sample):
            return False
        for block in sample:
            return _is_iterable_block(block)
    return len(samples) > 0


def as_sample_set(samples):
    """Normalise any accepted sample-set form into a :class:`SampleSet`."""
    if isinstance(samples, SampleSet):
        return samples
    if samples is None or isinstance(samples, (str, bytes, numbers.Number)):
        raise TypeError(f"Expected a sample set, got {type(samples).__name__}.")
    if is_block_list_format(samples):
        return _from_block_lists(samples)
    try:
        array = np.asarray(samples)
    except ValueError as exc:  # ragged nested lists
        raise ValueError("Could not read the sample set: give a (T, n) label array, a list "
                         "of lists of blocks, or a binary (T, n_blocks, n) array.") from exc
    if array.dtype == object and array.ndim == 2:
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError):  # labels such as strings: any labels name blocks
            array = _codes(check_label_vector(array.ravel(), array.size, "Labels"))\
                .reshape(array.shape)
    elif array.dtype.kind in "USb" and array.ndim == 2:
        array = _codes(array)
    if array.dtype == object:
        raise ValueError("Could not read the sample set: label vectors must all have the "
                         "same length n (or give partitions as lists of blocks).")
    if array.ndim == 3:
        return _from_binary(array)
    if array.ndim == 1:
        raise ValueError("A sample set must be 2-D (T, n): got one label vector; wrap it "
                         "as [labels] for a sample set of one partition.")
    return _from_labels(array)


def as_single(partition):
    """Normalise one partition or feature allocation (label vector, blocks, binary matrix).

    Returns ``(SampleSet with T = 1, n_covered)`` where ``n_covered`` is the number
    of elements it is a structure of: the label vector's length, the binary
    matrix's column count, or the number of distinct elements in the blocks.
    """
    if isinstance(partition, np.ndarray) and partition.ndim == 2:
        sample_set = _from_binary(partition[None])
        return sample_set, sample_set.n_elements
    if _is_iterable_block(partition) and any(_is_iterable_block(b) for b in partition):
        sample_set = _from_block_lists([partition])
        covered = int(np.count_nonzero((sample_set.memberships[:, 0, :] >= 0).any(axis=1)))
        return sample_set, covered
    labels = np.asarray(partition)
    if labels.ndim != 1:
        raise ValueError("A partition must be a label vector, a list of blocks or a binary "
                         f"(n_blocks, n) array, got shape {labels.shape}.")
    sample_set = _from_labels(check_labels(labels)[None])
    return sample_set, sample_set.n_elements


def sample_major(sample_set):
    """The memberships in (T, n, depth) layout (contiguous per sample)."""
    return np.ascontiguousarray(sample_set.memberships.transpose(1, 0, 2))


def check_order(order, n_elements, name="order"):
    """Validate a sequence of distinct element indices (default: all in index order).

    A boolean mask of the ``n_elements`` elements selects them in index order.
    """
    if order is None:
        return np.arange(n_elements, dtype=np.int64)
    if np.asarray(order).dtype == bool:  # a mask of the elements (it read as indices 0, 1)
        mask = np.asarray(order)
        if mask.shape != (n_elements,):
            raise ValueError(f"A boolean {name} is a mask of the {n_elements} elements, "
                             f"got shape {mask.shape}.")
        order = np.flatnonzero(mask)
    order = _integral(np.asarray(order).reshape(-1) if np.ndim(order) else [order], name)
    if order.size == 0:
        raise ValueError(f"{name} must contain at least one element.")
    if order.min() < 0 or order.max() >= n_elements:
        raise ValueError(f"{name} holds indices outside 0..{n_elements - 1}.")
    if np.unique(order).size != order.size:
        raise ValueError(f"{name} lists an element twice.")
    return order


def check_labels(labels, name="labels"):
    """A single 1-D label vector as int64: integer labels kept, any other labels coded.

    As scikit-learn's clustering metrics, any labels name the clusters (strings,
    booleans, fractional floats, objects); NaN and infinity are refused.

    >>> check_labels([5, 5, -1]).tolist(), check_labels(["b", "a", "b"]).tolist()
    ([5, 5, -1], [1, 0, 1])
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {labels.shape}.")
    labels = check_label_vector(labels, labels.size, name)
    if labels.dtype.kind in "biu" or (labels.dtype.kind == "f"
                                      and np.all(labels == np.round(labels))):
        return _integral(labels, name)
    return _codes(labels)


__all__ = ["SampleSet", "as_sample_set", "as_single", "check_order", "check_labels",
           "relabel_rows", "is_block_list_format", "sample_major"]
