"""Numba kernels of the exact hierarchical cluster trellis (Greenberg et al. 2021).

Tables are indexed by bitmask subsets (see ``_subsets``). A split of a subset
``S`` is a pair ``(L, R)`` with ``L`` holding the lowest item ``l`` of ``S`` and
``R = S \\ L`` non-empty, so each unordered pair of children is met once::

    log Z(S) = logsumexp_{L} psi(L, R) + log Z(L) + log Z(R)     (Proposition 1)
    MAP(S)   = max_{L}       psi(L, R) + MAP(L) + MAP(R)         (Proposition 2)

with ``Z`` and ``MAP`` of a singleton equal to 1 (log 0). Both children are
smaller than ``S``, so all subsets of one size form an independent parallel
layer (``masks_by_popcount``). Counting allowed trees uses the same recursion
on integers modulo a few primes (exact after Chinese remaindering).

``psi`` is ``split_log_potential(params, stats, full, parent, left, right)``
(``engines._split_potential``), which calls the energy's split function
``split_fn``: the kernels that evaluate splits are templates, compiled per
energy by :func:`specialise` (``sklearn_trellis._core.specialise``) with the
energy's numba function bound in, so the split arithmetic is inlined into the
loops and the kernels know nothing of the model.
"""

import math

import numpy as np
from numba import njit, prange

from ..._core.specialise import specialise as _specialise, template
from ..._core.subsets import chunk_bounds, logsumexp_buffer, n_parallel_chunks, popcount
from .._split_potential import split_bindings, split_log_potential


@template(inline="always")
def _fill_subset(params, stats, full, subset, log_z, map_value, terms, scratch,
                 counts, with_counts):
    """``log Z`` and MAP value of one subset; returns (#forbidden, #invalid) splits.

    With ``with_counts``, also ``counts[S]`` = number of allowed trees of ``S``
    (int64: exact while ``(2|S| - 3)!! < 2**63``, i.e. ``|S| <= 18``).
    """
    low = subset & -subset
    rest = subset ^ low
    largest = -np.inf
    best = -np.inf
    n_terms = 0
    n_forbidden = 0
    n_invalid = 0
    n_trees = 0
    sub = (rest - 1) & rest
    while True:
        left = sub | low
        right = rest ^ sub
        psi = split_log_potential(params, stats, full, subset, left, right)
        if psi == -np.inf:
            n_forbidden += 1
        elif not psi < np.inf:
            n_invalid += 1
            psi = -np.inf
        elif with_counts:
            n_trees += counts[left] * counts[right]
        term = psi + log_z[left] + log_z[right]
        terms[n_terms] = term
        n_terms += 1
        if term > largest:
            largest = term
        candidate = psi + map_value[left] + map_value[right]
        if candidate > best:
            best = candidate
        if sub == 0:
            break
        sub = (sub - 1) & rest
    log_z[subset] = logsumexp_buffer(terms, scratch, n_terms, largest)
    map_value[subset] = best
    if with_counts:
        counts[subset] = n_trees
    return n_forbidden, n_invalid


@template(parallel=True)
def partition_layer(params, stats, full, masks, start, stop, log_z, map_value, flags):
    """Fill ``log_z`` and ``map_value`` of ``masks[start:stop]`` (all of one size >= 2).

    ``flags[chunk] = (#forbidden, #invalid)`` splits met by each parallel chunk.
    """
    total = stop - start
    width = 1 << (popcount(masks[start]) - 1)
    n_chunks, chunk_size = n_parallel_chunks(total)
    for chunk in prange(n_chunks):
        terms = np.empty(width)
        scratch = np.empty(width, np.int64)
        first, last = chunk_bounds(chunk, n_chunks, chunk_size, total)
        n_forbidden = 0
        n_invalid = 0
        for j in range(start + first, start + last):
            f, b = _fill_subset(params, stats, full, masks[j], log_z, map_value,
                                terms, scratch, flags[0], False)
            n_forbidden += f
            n_invalid += b
        flags[chunk, 0] = n_forbidden
        flags[chunk, 1] = n_invalid


@template
def partition_serial(params, stats, full, log_z, map_value, counts):
    """The whole pass on one thread, subsets in increasing order (small N).

    Also counts the allowed trees of every subset in ``counts`` (int64, exact
    for N <= 18; singletons must hold 1).
    """
    width = 1
    while (1 << width) <= full:
        width += 1
    terms = np.empty(1 << (width - 1))
    scratch = np.empty(1 << (width - 1), np.int64)
    n_forbidden = 0
    n_invalid = 0
    for subset in range(1, full + 1):
        if subset & (subset - 1) == 0:
            log_z[subset] = 0.0
            map_value[subset] = 0.0
            counts[subset] = 1
            continue
        f, b = _fill_subset(params, stats, full, subset, log_z, map_value,
                            terms, scratch, counts, True)
        n_forbidden += f
        n_invalid += b
    return n_forbidden, n_invalid


@template
def best_split(params, stats, full, subset, map_value):
    """Left child of the MAP split of ``subset`` (first maximiser, as in the pass)."""
    low = subset & -subset
    rest = subset ^ low
    best = -np.inf
    best_left = -1
    sub = (rest - 1) & rest
    while True:
        left = sub | low
        right = rest ^ sub
        psi = split_log_potential(params, stats, full, subset, left, right)
        if not psi < np.inf:
            psi = -np.inf
        candidate = psi + map_value[left] + map_value[right]
        if candidate > best:
            best = candidate
            best_left = left
        if sub == 0:
            break
        sub = (sub - 1) & rest
    return best_left


@template
def map_splits(params, stats, full, n_items, map_value):
    """Back-track the MAP tree: ``(parents, lefts)`` of its internal nodes, preorder."""
    parents = np.empty(max(n_items - 1, 0), np.int64)
    lefts = np.empty(max(n_items - 1, 0), np.int64)
    stack = np.empty(n_items + 1, np.int64)
    stack[0] = full
    top = 1
    k = 0
    while top:
        top -= 1
        subset = stack[top]
        if subset & (subset - 1) == 0:
            continue
        left = best_split(params, stats, full, subset, map_value)
        parents[k] = subset
        lefts[k] = left
        k += 1
        stack[top] = subset ^ left
        stack[top + 1] = left
        top += 2
    return parents, lefts


@template(parallel=True)
def count_layer(params, stats, full, masks, start, stop, counts, primes):
    """Allowed trees of ``masks[start:stop]`` modulo each prime (``counts[p, S]``).

    A split is allowed when its log-potential is finite; counts of singletons
    must be 1. Primes are below 2**31 so products fit in int64.
    """
    total = stop - start
    n_primes = primes.shape[0]
    n_chunks, chunk_size = n_parallel_chunks(total)
    for chunk in prange(n_chunks):
        acc = np.zeros(n_primes, np.int64)
        first, last = chunk_bounds(chunk, n_chunks, chunk_size, total)
        for j in range(start + first, start + last):
            subset = masks[j]
            low = subset & -subset
            rest = subset ^ low
            for p in range(n_primes):
                acc[p] = 0
            sub = (rest - 1) & rest
            while True:
                left = sub | low
                right = rest ^ sub
                psi = split_log_potential(params, stats, full, subset, left, right)
                if psi > -np.inf:
                    for p in range(n_primes):
                        q = primes[p]
                        acc[p] += (counts[p, left] * counts[p, right]) % q
                        if acc[p] >= q:
                            acc[p] -= q
                if sub == 0:
                    break
                sub = (sub - 1) & rest
            for p in range(n_primes):
                counts[p, subset] = acc[p]


@template(parallel=True)
def outside_layer(params, stats, full, masks, start, stop, log_z, log_out):
    """``log_out[X]`` for ``masks[start:stop]`` (one size below N), larger sizes done.

    ``out(X)`` sums, over every way of completing a tree of all items around a
    node ``X``, the product of the potentials outside the subtree of ``X``::

        out(X) = sum_{Y subset of full \\ X, Y != {}} out(X | Y) psi(X, Y) Z(Y)

    (``psi`` with the child holding the lowest item first), ``out(full) = 1``,
    so ``P(X is a node) = Z(X) out(X) / Z(full)``.
    """
    total = stop - start
    size = popcount(masks[start])
    n_items = popcount(full)
    width = 1 << (n_items - size)
    n_chunks, chunk_size = n_parallel_chunks(total)
    for chunk in prange(n_chunks):
        terms = np.empty(width)
        scratch = np.empty(width, np.int64)
        first, last = chunk_bounds(chunk, n_chunks, chunk_size, total)
        for j in range(start + first, start + last):
            node = masks[j]
            complement = full ^ node
            node_low = node & -node
            largest = -np.inf
            n_terms = 0
            other = complement
            while other:
                parent = node | other
                if node_low < (other & -other):
                    psi = split_log_potential(params, stats, full, parent, node, other)
                else:
                    psi = split_log_potential(params, stats, full, parent, other, node)
                if not psi < np.inf:
                    psi = -np.inf
                term = log_out[parent] + psi + log_z[other]
                terms[n_terms] = term
                n_terms += 1
                if term > largest:
                    largest = term
                other = (other - 1) & complement
            log_out[node] = logsumexp_buffer(terms, scratch, n_terms, largest)


@template
def _split_cdf(params, stats, full, subset, log_z):
    """Left children of every split of ``subset`` and their cumulative probabilities."""
    low = subset & -subset
    rest = subset ^ low
    n_splits = (1 << (popcount(rest))) - 1
    lefts = np.empty(n_splits, np.int64)
    cdf = np.empty(n_splits)
    acc = 0.0
    k = 0
    sub = (rest - 1) & rest
    while True:
        left = sub | low
        value = (split_log_potential(params, stats, full, subset, left, rest ^ sub)
                 + log_z[left] + log_z[rest ^ sub] - log_z[subset])
        if value > -745.0:
            acc += math.exp(value)
        lefts[k] = left
        cdf[k] = acc
        k += 1
        if sub == 0:
            break
        sub = (sub - 1) & rest
    return lefts, cdf


@template(parallel=True)
def sample_splits(params, stats, full, n_items, log_z, uniforms):
    """Exact top-down draws (Algorithm 3): ``(parents, lefts)`` per sample, preorder.

    The split ``(L, R)`` of ``S`` is drawn with probability
    ``exp(psi(L, R) + log Z(L) + log Z(R) - log Z(S))`` (Eq. 3), one uniform
    (row ``uniforms[s]``, length ``N - 1``) per internal node. The root's
    distribution, used by every draw, is tabulated once and searched by
    bisection; deeper nodes scan their splits until the uniform is reached.
    """
    n_samples = uniforms.shape[0]
    n_nodes = max(n_items - 1, 0)
    parents = np.empty((n_samples, n_nodes), np.int64)
    lefts = np.empty((n_samples, n_nodes), np.int64)
    if n_items < 2:
        return parents, lefts
    root_lefts, root_cdf = _split_cdf(params, stats, full, full, log_z)
    n_root = root_cdf.shape[0]
    for s in prange(n_samples):
        stack = np.empty(n_items + 1, np.int64)
        stack[0] = full
        top = 1
        k = 0
        while top:
            top -= 1
            subset = stack[top]
            if subset & (subset - 1) == 0:
                continue
            threshold = uniforms[s, k]
            chosen = -1
            if subset == full:
                index = np.searchsorted(root_cdf, threshold, side="right")
                if index >= n_root:
                    index = n_root - 1
                while index > 0 and root_cdf[index] == root_cdf[index - 1]:
                    index -= 1  # rounding: step back onto a split of positive weight
                chosen = root_lefts[index]
            else:
                low = subset & -subset
                rest = subset ^ low
                log_z_subset = log_z[subset]
                acc = 0.0
                fallback = -1
                sub = (rest - 1) & rest
                while True:
                    left = sub | low
                    right = rest ^ sub
                    psi = split_log_potential(params, stats, full, subset, left, right)
                    value = psi + log_z[left] + log_z[right] - log_z_subset
                    if value > -745.0:
                        fallback = left
                        acc += math.exp(value)
                        if acc > threshold:
                            chosen = left
                            break
                    if sub == 0:
                        break
                    sub = (sub - 1) & rest
                if chosen < 0:
                    chosen = fallback  # rounding left acc just below the uniform
            parents[s, k] = subset
            lefts[s, k] = chosen
            k += 1
            stack[top] = subset ^ chosen
            stack[top + 1] = chosen
            top += 2
    return parents, lefts


# -- separable split log-potentials -------------------------------------------
# Many energies have the form psi(L, R) = c(S) + a(|S|) * (u(L) + u(R))
# (Dasgupta's cost, hierarchical correlation clustering). Within one size layer
# ``a`` is a constant, so with G = log Z + a u and H = MAP + a u tabulated once
# per layer (O(2^N)), each split costs two table reads: no split function at all.

@njit(cache=True, parallel=True)
def separable_tables(log_z, map_value, u, scale, below, gh):
    """``gh[X] = (log Z(X) + scale u(X), MAP(X) + scale u(X))`` for ``X < below``."""
    for mask in prange(below):
        shift = scale * u[mask]
        gh[mask, 0] = log_z[mask] + shift
        gh[mask, 1] = map_value[mask] + shift


@njit(cache=True, parallel=True)
def separable_layer(masks, start, stop, gh, offset, log_z, map_value):
    """``log Z`` and MAP of ``masks[start:stop]`` (one size) from the ``gh`` tables.

    ``offset[S] = c(S)`` is added once per subset.
    """
    total = stop - start
    width = 1 << (popcount(masks[start]) - 1)
    n_chunks, chunk_size = n_parallel_chunks(total)
    for chunk in prange(n_chunks):
        terms = np.empty(width)
        scratch = np.empty(width, np.int64)
        first, last = chunk_bounds(chunk, n_chunks, chunk_size, total)
        for j in range(start + first, start + last):
            subset = masks[j]
            low = subset & -subset
            rest = subset ^ low
            largest = -np.inf
            best = -np.inf
            n_terms = 0
            sub = (rest - 1) & rest
            while True:
                left = sub | low
                right = rest ^ sub
                term = gh[left, 0] + gh[right, 0]
                terms[n_terms] = term
                n_terms += 1
                largest = max(largest, term)
                best = max(best, gh[left, 1] + gh[right, 1])
                if sub == 0:
                    break
                sub = (sub - 1) & rest
            log_z[subset] = logsumexp_buffer(terms, scratch, n_terms, largest) + offset[subset]
            map_value[subset] = best + offset[subset]


@template
def expected_split_value(params, stats, full, stat_params, log_z, log_out, log_total):
    """``E[sum over the splits of the tree of g(S, L, R)]`` under the distribution over trees.

    ``g`` is the split function at ``stat_params`` (``stat_params[0] = 1``),
    each split weighted by its posterior probability
    ``out(S) phi(L, R) Z(L) Z(R) / Z`` (one serial ``O(3^N)`` pass).
    """
    acc = 0.0
    for subset in range(1, full + 1):
        low = subset & -subset
        rest = subset ^ low
        if rest == 0 or (subset & full) != subset:
            continue
        base = log_out[subset] - log_total
        if base == -np.inf:
            continue
        sub = (rest - 1) & rest
        while True:
            left = sub | low
            right = rest ^ sub
            psi = split_log_potential(params, stats, full, subset, left, right)
            if psi > -np.inf:
                weight = math.exp(base + psi + log_z[left] + log_z[right])
                if weight > 0.0:
                    acc += weight * split_log_potential(stat_params, stats, full, subset,
                                                        left, right)
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return acc


@template
def evaluate_split(params, stats, full, parent, left):
    """``beta * psi`` of one split, callable from Python (the right child is ``parent ^ left``)."""
    return split_log_potential(params, stats, full, parent, left, parent ^ left)


def specialise(split):
    """The kernels of this module compiled for one energy's numba split function."""
    return _specialise(globals(), split_bindings(split))
