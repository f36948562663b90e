"""Bitmask subset machinery shared by every trellis kernel.

A subset of the items ``0..N-1`` is an integer whose bit ``i`` is set when item
``i`` belongs to it. Tables indexed by subsets have ``2**N`` entries. Everything
here is a small numba function that the flat and hierarchical kernels inline or
call; nothing here knows which model or engine uses it.

Exponentials in the inner loops go through :func:`sum_exp_shifted`, a
branch-free polynomial ``exp`` that LLVM vectorises (relative error below
``2e-16`` per term, see ``tests/test_subsets.py``). It must *not* be inlined into
a function compiled with ``fastmath``: reassociation would fold its rounding
trick away.
"""

import math

import numpy as np
from numba import njit

from .validation import check_indices

# Splitting ln 2 in a high and a low part keeps the range reduction exact.
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
# Adding then subtracting 1.5 * 2**52 rounds a double to the nearest integer.
_ROUND_MAGIC = 6755399441055744.0
# exp(-700) ~ 1e-304: smaller terms are clamped there, which changes a sum whose
# largest term is 1 by less than 1e-290 per term.
_EXP_FLOOR = -700.0


@njit(cache=True, inline="always")
def popcount(x):
    """Number of set bits of a non-negative integer."""
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


@njit(cache=True, inline="always")
def lowest_bit_index(x):
    """Index of the lowest set bit of ``x`` (``x > 0``)."""
    index = 0
    while not (x >> index) & 1:
        index += 1
    return index


@njit(cache=True)
def sum_exp_shifted(values, scratch, n, shift):
    """Return ``sum(exp(values[:n] - shift))`` for ``values <= shift``.

    ``values`` is overwritten. ``scratch`` is an int64 work array of at least
    ``n`` entries. Terms below ``exp(-700)`` are clamped to it.
    """
    for j in range(n):
        x = values[j] - shift
        if x < _EXP_FLOOR:
            x = _EXP_FLOOR
        k = (x * _LOG2E + _ROUND_MAGIC) - _ROUND_MAGIC
        r = (x - k * _LN2_HI) - k * _LN2_LO
        # Taylor polynomial of exp on |r| <= ln(2)/2, degree 13 (error < 1e-17).
        p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (
            1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (
                1.0 / 40320.0 + r * (1.0 / 362880.0 + r * (1.0 / 3628800.0 + r * (
                    1.0 / 39916800.0 + r * (1.0 / 479001600.0 + r * (
                        1.0 / 6227020800.0)))))))))))))
        values[j] = p
        scratch[j] = (np.int64(k) + 1023) << 52  # bit pattern of 2**k
    powers = scratch[:n].view(np.float64)
    total = 0.0
    for j in range(n):
        total += values[j] * powers[j]
    return total


@njit(cache=True, inline="always")
def logaddexp(a, b):
    """``log(exp(a) + exp(b))``, exact for ``-inf`` arguments."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a >= b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(cache=True)
def logsumexp_buffer(values, scratch, n, max_value):
    """``log(sum(exp(values[:n])))`` given their maximum; ``-inf`` if all are."""
    if max_value == -np.inf:
        return -np.inf
    if max_value == np.inf:
        return np.inf
    return max_value + math.log(sum_exp_shifted(values, scratch, n, max_value))


@njit(cache=True, inline="always")
def chunk_bounds(chunk, n_chunks, chunk_size, total):
    """Bounds of the ``chunk``-th block of a parallel loop, in scrambled order.

    Work per subset grows with its number of bits, so contiguous ranges are
    unbalanced; multiplying by an odd constant permutes a power-of-two number
    of chunks so that each thread receives a mix of light and heavy ones.
    """
    # prange's index is unsigned and numba types unsigned + signed as float64:
    # int64 bounds keep the kernels below from compiling a float64 twin.
    chunk = np.int64(chunk)
    if n_chunks & (n_chunks - 1) == 0:
        chunk = (chunk * 0x9E3779B1) & (n_chunks - 1)
    start = chunk * chunk_size
    stop = min(total, start + chunk_size)
    return start, stop


@njit(cache=True, inline="always")
def n_parallel_chunks(total):
    """A power of two number of chunks for a loop over ``total`` items."""
    n_chunks = 1
    while n_chunks < 256 and n_chunks * 64 < total:
        n_chunks *= 2
    chunk_size = (total + n_chunks - 1) // n_chunks
    return n_chunks, chunk_size


@njit(cache=True)
def superset_sums_inplace(table, n_items):
    """Replace ``table[A]`` by ``sum(table[B] for B superset of A)``."""
    size = 1 << n_items
    for bit_index in range(n_items):
        bit = 1 << bit_index
        for mask in range(size):
            if not mask & bit:
                table[mask] += table[mask | bit]
    return table


def mask_of(indices):
    """Bitmask of a collection of item indices."""
    mask = 0
    for index in indices:
        mask |= 1 << int(index)
    return mask


def checked_mask(indices, n_items):
    """Bitmask of distinct item indices in ``[0, n_items)`` (:func:`.validation.check_indices`)."""
    return mask_of(check_indices(indices, n_items))


def members(mask):
    """Sorted item indices of a bitmask."""
    out = []
    index = 0
    while mask:
        if mask & 1:
            out.append(index)
        mask >>= 1
        index += 1
    return out


def membership_table(n_items):
    """``out[B, i] = 1`` when item ``i`` is in the bitmask ``B``, else 0: every subset's
    members as a (``2**n_items``, ``n_items``) int64 array (row 0: the empty set)."""
    return (np.arange(1 << n_items)[:, None] >> np.arange(n_items)) & 1


@njit(cache=True)
def masks_by_popcount(n_items):
    """All non-empty subsets of ``n_items`` items ordered by size, then by value.

    Returns ``(masks, offsets)``: the subsets of size ``k`` are
    ``masks[offsets[k]:offsets[k + 1]]`` (``offsets`` has ``n_items + 2``
    entries). Used by recursions whose terms for a subset need every smaller
    subset first (e.g. the hierarchical trellis): one size is one parallel layer.
    """
    size = 1 << n_items
    counts = np.zeros(n_items + 2, np.int64)
    for mask in range(1, size):
        counts[popcount(mask) + 1] += 1
    # offsets[k] = number of non-empty subsets of size < k
    offsets = np.zeros(n_items + 2, np.int64)
    for k in range(1, n_items + 1):
        offsets[k + 1] = offsets[k] + counts[k + 1]
    masks = np.empty(size - 1, np.int64)
    fill = offsets.copy()
    for mask in range(1, size):
        k = popcount(mask)
        masks[fill[k]] = mask
        fill[k] += 1
    return masks, offsets


@njit(cache=True)
def subset_sums(values):
    """``out[:, B] = sum_{i in B} values[i, :]`` for every bitmask ``B``.

    ``values`` has shape ``(N, k)``; the result has shape ``(k, 2**N)`` (one
    contiguous row per statistic) with zeros for the empty set.
    """
    n_items, width = values.shape
    out = np.zeros((width, 1 << n_items), np.float64)
    for top in range(n_items):
        base = 1 << top
        for lower in range(base):
            for c in range(width):
                out[c, base | lower] = out[c, lower] + values[top, c]
    return out


@njit(cache=True)
def _pair_sums(weights, n_items, scale):
    size = 1 << n_items
    table = np.zeros(size, np.float64)
    # row[lower] = sum of weights[top, i] over the items i of ``lower``, in increasing i:
    # each subset extends the one without its highest item (O(2**top) per top, not
    # O(top 2**top), and the same additions in the same order as a loop over the bits).
    row = np.zeros(max(1, size >> 1), np.float64)
    # Subsets whose highest item is h extend subsets below 2**h by item h.
    for top in range(1, n_items):
        base = 1 << top
        for item in range(top):
            step = 1 << item
            weight = weights[top, item]
            for lower in range(step):
                row[step | lower] = row[lower] + weight
        for lower in range(base):
            table[base | lower] = table[lower] + scale * row[lower]
    return table


def subset_pair_sums(weights, scale=1.0):
    """``out[B] = scale * sum_{i<j in B} weights[j, i]`` for every bitmask ``B``.

    Parameters
    ----------
    weights : ndarray of shape (N, N)
        Pair weights; only the lower triangle (``weights[j, i]``, ``i < j``) is read.
    scale : float, default=1.0
        Factor applied to every sum.

    Returns
    -------
    table : ndarray of shape (2**N,)
        Zero for the empty set and the singletons.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis._core.subsets import subset_pair_sums
    >>> w = np.array([[0., 1., 2.], [1., 0., 4.], [2., 4., 0.]])
    >>> subset_pair_sums(w)       # {0,1} = 1, {0,2} = 2, {1,2} = 4, {0,1,2} = 7
    array([0., 0., 0., 1., 0., 2., 4., 7.])
    """
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    n_items = weights.shape[0]
    return _pair_sums(weights, n_items, float(scale))
