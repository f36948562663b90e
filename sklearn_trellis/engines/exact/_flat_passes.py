"""Layer-by-layer passes of the exact flat trellis over whole tables.

Speed: the subsets whose highest item is ``h`` form one contiguous layer, a
subset convolution over ``h`` bits of contiguous slices (see
``_flat_kernels``), done by cache-blocked, unrolled kernels
(``_flat_block_kernels``). ``log Z`` of a layer is computed in *linear* space
(one multiply-add per term, no exponential) when the layer's values allow it
(:func:`linear_shifts`), otherwise in log space with one exponential per term;
the MAP is a ``(max, +)`` convolution of the same shape.

Precision: every term ``e(B) + log Z(S \\ B)`` is exponentiated relative to a
common shift and every sum is of non-negative terms, so the relative error of
each ``Z(S)`` is at most about ``(terms summed) * 1.1e-16`` per layer plus the
rounding of the exponent arguments (``|argument| * 1.1e-16``): in linear space
the arguments are ``a - max a`` and ``b - max b`` (no larger than in log
space) unless a layer's value range exceeds ``LINEAR_FLOOR`` (650), where they
grow by at most ``LINEAR_CEIL`` (690), i.e. a relative error below ``1e-13``
per term. No term under- or overflows in either path (linear products lie in
``[exp(-650), exp(690)]``; log-space terms are shifted by their maximum), so
any ``beta`` or ``-inf`` entry is exact to rounding. Marginals and the
number-of-clusters distribution (normalised per subset) carry absolute errors
below ``1e-12`` (checked against enumeration in the tests).
"""

import math

import numpy as np

from ..._core.subsets import superset_sums_inplace
from . import _flat_kernels as kernels
from ._block_codegen import BLOCK_BITS
from ._flat_block_kernels import conv_max_blocks, conv_max_range, conv_sum_blocks, conv_sum_range

#: In the linear-space kernel every non-zero product of two scaled weights is
#: at least ``exp(-LINEAR_FLOOR)`` (far above the smallest normal double,
#: ``exp(-708)``) ...
LINEAR_FLOOR = 650.0
#: ... and every sum at most ``exp(LINEAR_CEIL)`` (below ``DBL_MAX = exp(709.78)``).
LINEAR_CEIL = 690.0
#: Scaled weights stay within ``[exp(-LINEAR_EXP_LIMIT), exp(LINEAR_EXP_LIMIT)]``.
LINEAR_EXP_LIMIT = 700.0

#: Subset convolutions over fewer bits run on the calling thread: waking the
#: thread pool costs more than their work (and much more on a loaded machine).
PARALLEL_MIN_BITS = 14
#: Same for the ``O(2**n)`` passes (exponentials, logarithms, superset sums).
PARALLEL_MIN_BITS_LINEAR_WORK = 18
#: Low bits of the superset sums done within one cache-resident block.
SUPERSET_BLOCK_BITS = 12
#: Layers over fewer bits run the plain one-loop kernels (``log Z`` in log
#: space): their work is small (under 3 ms for all the layers below 12 bits),
#: and the blocked, unrolled kernels cost seconds of numba compilation that a
#: fit of up to ``BLOCKED_MIN_BITS + 1`` items then never pays. At least
#: ``BLOCK_BITS``.
BLOCKED_MIN_BITS = 12


def linear_shifts(range_a, range_b, n_bits):
    """Scalings ``(sa, sb)`` making a layer's subset convolution safe in linear space.

    With ``A = exp(a - max a + sa)`` and ``B = exp(b - max b + sb)`` over the
    finite entries (``range_a``, ``range_b`` are their max - min), every
    non-zero product ``A[t] B[u]`` lies in ``[exp(-LINEAR_FLOOR), exp(T)]``
    with ``T = sa + sb``, and a sum of ``2**n_bits`` of them stays below
    ``exp(LINEAR_CEIL)``: nothing under- or overflows, so the linear sums are
    as exact as the log-space ones. ``T`` is zero unless the ranges exceed
    ``LINEAR_FLOOR`` (then the exponent arguments grow up to ``T`` and the
    relative error of a term to about ``T * 1.1e-16``). Returns ``None`` when
    no such scaling exists (the layer then runs in log space).
    """
    spread = range_a + range_b
    total = max(0.0, spread - LINEAR_FLOOR)
    if total + n_bits * math.log(2.0) > LINEAR_CEIL:
        return None
    lowest = max(range_a, total) - LINEAR_EXP_LIMIT
    highest = min(LINEAR_EXP_LIMIT, total - range_b + LINEAR_EXP_LIMIT)
    if lowest > highest:  # pragma: no cover (excluded by the two limits above)
        return None
    share = total * range_a / spread if spread > 0.0 else 0.0
    shift_a = min(max(share, lowest), highest)
    return shift_a, total - shift_a


def _exp_into(values, shift, out):
    """``out = exp(values + shift)``."""
    if values.size >= 1 << PARALLEL_MIN_BITS_LINEAR_WORK:
        kernels.exp_shifted_blocks(values, shift, out)
    else:
        kernels.exp_shifted_range(values, shift, out, 0, values.size)
    return out


def _log_z_layer(a, b, out, buffer, scratch, n_bits, linear):
    """``out[j] = logsumexp_{t subset of j} a[t] + b[j ^ t]``; True if done in linear space.

    ``buffer`` and ``scratch`` (``2**n_bits`` entries each, not aliasing the
    inputs) receive the linear weights.
    """
    parallel = n_bits >= PARALLEL_MIN_BITS
    if linear and n_bits >= max(BLOCKED_MIN_BITS, BLOCK_BITS):
        a_low, a_high = kernels.finite_range(a)
        if a_high == -np.inf:
            out[:] = -np.inf
            return True
        b_low, b_high = kernels.finite_range(b)
        shifts = linear_shifts(a_high - a_low, b_high - b_low, n_bits)
        if shifts is not None:
            shift_a, shift_b = shifts
            weights_a = _exp_into(a, shift_a - a_high, buffer)
            weights_b = _exp_into(b, shift_b - b_high, scratch)
            shift = a_high + b_high - shift_a - shift_b
            if parallel:
                conv_sum_blocks(weights_a, weights_b, out, n_bits, 0)
            else:
                conv_sum_range(weights_a, weights_b, out, 0, 1 << (n_bits - BLOCK_BITS), 0)
            if n_bits >= PARALLEL_MIN_BITS_LINEAR_WORK:
                kernels.log_shifted_blocks(out, shift)
            else:
                kernels.log_shifted_range(out, shift, 0, out.size)
            return True
    _max_layer(a, b, out, n_bits)  # the largest term of each sum
    if parallel:
        kernels.conv_logsumexp_blocks(a, b, out, n_bits)
    else:
        kernels.conv_logsumexp_range(a, b, out, 0, 1 << n_bits)
    return False


def _max_layer(a, b, out, n_bits):
    """``out[j] = max_{t subset of j} a[t] + b[j ^ t]``."""
    if n_bits >= PARALLEL_MIN_BITS:
        conv_max_blocks(a, b, out, n_bits)
    elif n_bits >= max(BLOCKED_MIN_BITS, BLOCK_BITS):
        conv_max_range(a, b, out, 0, 1 << (n_bits - BLOCK_BITS))
    else:
        kernels.conv_max_small(a, b, out, n_bits)


def partition_pass(log_potentials, log_z, map_value, scratch, n_items, linear=True,
                   progress=None, with_map=True):
    """Fill ``log_z`` and ``map_value`` (``2**N`` entries) layer by layer.

    ``scratch`` holds ``2**(N-1)`` entries. ``linear=False`` forces every layer
    into log space (for tests). ``with_map=False`` leaves out the MAP
    convolutions (``map_value`` is then only a buffer; ``log_z`` is the same).
    Returns a boolean array: which layers ran their ``log Z`` convolution in
    linear space.
    """
    log_z[0] = 0.0
    map_value[0] = 0.0
    used = np.zeros(n_items, dtype=bool)
    for highest in range(n_items):
        low, high = 1 << highest, 2 << highest
        a = log_potentials[low:high]
        out_map = map_value[low:high]
        # The MAP slice of this layer is still free: it buffers the weights.
        used[highest] = _log_z_layer(a, log_z[:low], log_z[low:high], out_map,
                                     scratch[:low], highest, linear)
        if with_map:
            _max_layer(a, map_value[:low], out_map, highest)
        if progress is not None:
            progress(highest)
    return used


def map_pass(log_potentials, map_value, n_items):
    """Fill ``map_value`` (``2**N`` entries) with the MAP value of every subset only."""
    map_value[0] = 0.0
    for highest in range(n_items):
        low, high = 1 << highest, 2 << highest
        _max_layer(log_potentials[low:high], map_value[:low], map_value[low:high], highest)


def together_marginals(log_potentials, log_z, full, n_items, out):
    """``out[A] = P(all of A share a cluster)``: cluster marginals, then superset sums."""
    if n_items >= PARALLEL_MIN_BITS_LINEAR_WORK:
        kernels.cluster_marginals_blocks(log_potentials, log_z, full, out)
        kernels.superset_sums_parallel(out, n_items, SUPERSET_BLOCK_BITS)
    else:
        kernels.cluster_marginals_range(log_potentials, log_z, full, out, 0, full + 1)
        superset_sums_inplace(out, n_items)
    return out


def _n_clusters_linear_layer(weights_a, weights_b, probs, dest, n_bits, inputs):
    """One layer of :func:`n_clusters_pass` in linear space, one convolution per ``k``.

    ``dest[k + 1] = sum_t A[t] B[u] probs[k, u]``: the blocked sum kernel over
    the inputs ``B * probs[k]``, skipping the block pairs whose inputs all have
    fewer than ``k`` items (their ``probs[k]`` is zero); then every column is
    normalised. All products are ``>= 1`` times a probability ``>= PROB_FLOOR``
    or zero, so nothing underflows.
    """
    low = 1 << n_bits
    n_blocks = 1 << (n_bits - BLOCK_BITS)
    dest[0] = 0.0
    dest[1] = weights_a * (weights_b[0] * probs[0, 0])  # k = 0: only u = {} has 0 clusters
    for k in range(1, n_bits + 1):
        np.multiply(weights_b, probs[k, :low], out=inputs)
        skip = max(0, k - BLOCK_BITS)
        if n_bits >= PARALLEL_MIN_BITS:
            conv_sum_blocks(weights_a, inputs, dest[k + 1], n_bits, skip)
        else:
            conv_sum_range(weights_a, inputs, dest[k + 1], 0, n_blocks, skip)
    dest[n_bits + 2:] = 0.0
    norm = dest.sum(axis=0)
    np.divide(dest, norm, out=dest, where=norm > 0.0)
    dest[:, norm <= 0.0] = 0.0
    dest[dest < kernels.PROB_FLOOR] = 0.0


def n_clusters_pass(log_potentials, log_z, n_items, linear=True):
    """``P(K = k)`` for ``k = 0..N`` (up to rounding) and the linear-layer flags.

    Keeps a ``(N+1, 2**(N-1))`` table: the distribution for every subset of the
    items ``0..N-2``; the last layer only computes the block holding the full
    set. A layer runs in linear space (no exponential per term) when its
    weights ``A = exp(a - min a)``, ``B = exp(b - min b)`` cannot overflow, i.e.
    ``range(a) + range(b) + n_bits log 2 <= LINEAR_CEIL``; every product is
    then ``>= 1``, so no term is lost to underflow.
    """
    half = 1 << (n_items - 1)
    width = n_items + 1
    probs = np.zeros((width, half))
    probs[0, 0] = 1.0  # the empty set has zero clusters
    weights_a = np.empty(half)
    weights_b = np.empty(half)
    inputs = np.empty(half)
    used = np.zeros(n_items, dtype=bool)
    for highest in range(n_items):
        low, high = 1 << highest, 2 << highest
        a = log_potentials[low:high]
        b = log_z[:low]
        block_bits = min(BLOCK_BITS, highest)
        n_blocks = 1 << (highest - block_bits)
        is_linear = False
        if linear:
            a_low, a_high = kernels.finite_range(a)
            b_low, b_high = kernels.finite_range(b)
            is_linear = bool(a_high > -np.inf and a_high - a_low + b_high - b_low
                             + highest * math.log(2.0) <= LINEAR_CEIL)
        if is_linear:
            a = _exp_into(a, -a_low, weights_a[:low])
            b = _exp_into(b, -b_low, weights_b[:low])
        used[highest] = is_linear
        if highest == n_items - 1:
            # Only the full set is needed: do its block alone, into a column slice like
            # the other layers' ``probs[:, low:high]`` (one compiled version of the kernel).
            dest = np.zeros((width, 2 << block_bits))[:, :1 << block_bits]
            kernels.n_clusters_range(a, b, log_z[low:high], probs, dest, block_bits,
                                     n_blocks - 1, n_blocks - 1, n_blocks, is_linear)
            return dest[:, -1], used
        dest = probs[:, low:high]
        if is_linear and highest >= max(BLOCKED_MIN_BITS, BLOCK_BITS):
            _n_clusters_linear_layer(a, b, probs, dest, highest, inputs[:low])
        elif highest >= PARALLEL_MIN_BITS:
            kernels.n_clusters_blocks(a, b, log_z[low:high], probs, dest, highest,
                                      block_bits, is_linear)
        else:
            kernels.n_clusters_range(a, b, log_z[low:high], probs, dest, block_bits,
                                     0, 0, n_blocks, is_linear)
    raise AssertionError("unreachable")  # pragma: no cover
