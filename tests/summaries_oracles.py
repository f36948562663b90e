"""Naive oracles for the sample-set summaries: plain Python over explicit blocks."""

import math

import numpy as np


def blocks_from_labels(labels):
    """A label vector as a list of sets."""
    blocks = {}
    for i, label in enumerate(labels):
        blocks.setdefault(label, set()).add(i)
    return list(blocks.values())


def as_block_sets(samples):
    """A label array (T, n) or list of lists of blocks as a list of lists of sets."""
    if isinstance(samples, np.ndarray):
        return [blocks_from_labels(row) for row in samples]
    return [[set(block) for block in sample] for sample in samples]


def proj(blocks, subset):
    """Eq. 4: non-empty intersections."""
    subset = set(subset)
    return [block & subset for block in blocks if block & subset]


def phi(blocks, length):
    sizes = [len(block) for block in blocks]
    return [sum(size >= k for size in sizes) for k in range(1, length + 1)]


def entropy(blocks, m):
    """Per-element-information entropy of blocks of a set of size m (Eq. 11)."""
    return sum(len(b) / m * math.log(m / len(b)) for b in blocks)


def expected_projection_entropy(block_sets, subset):
    return float(np.mean([entropy(proj(blocks, subset), len(subset)) for blocks in block_sets]))


def cod(block_sets, order):
    m = len(order)
    out = np.zeros((m, m))
    for blocks in block_sets:
        for i in range(1, m + 1):
            out[i - 1] += phi(proj(blocks, order[:i]), m)
    return out / len(block_sets)


def entropy_agglomeration(block_sets, n, decimals=10):
    """EA by evaluating every pair at every step; ties: smallest (entropy, slot a, slot b)."""
    slots = [[i] for i in range(n)]
    ids = list(range(n))
    children, distances = [], []
    for step in range(n - 1):
        best = None
        for a in range(n):
            if slots[a] is None:
                continue
            for b in range(a + 1, n):
                if slots[b] is None:
                    continue
                h = round(expected_projection_entropy(block_sets, slots[a] + slots[b]), decimals)
                if best is None or h < best[0]:
                    best = (h, a, b)
        h, a, b = best
        children.append(sorted((ids[a], ids[b])))
        distances.append(h)
        slots[a] = slots[a] + slots[b]
        slots[b] = None
        ids[a] = n + step
    return np.array(children), np.array(distances)


def random_partition_samples(rng, n_samples, n, noise=0.3, n_base=3):
    """Noisy copies of a random base partition, as labels (T, n)."""
    base = rng.integers(0, n_base, n)
    noisy = rng.random((n_samples, n)) < noise
    return np.where(noisy, rng.integers(0, n_base + 2, (n_samples, n)), base)


def random_feature_allocations(rng, n_samples, n, max_blocks=4):
    """Random feature allocations as lists of blocks (overlapping, omitting elements)."""
    samples = []
    for _ in range(n_samples):
        blocks = []
        for _ in range(rng.integers(1, max_blocks + 1)):
            members = np.flatnonzero(rng.random(n) < 0.4)
            if members.size:
                blocks.append([int(e) for e in members])
        if not blocks:
            blocks.append([int(rng.integers(n))])
        samples.append(blocks)
    # make sure the last element appears so that n is inferred
    samples[0].append([n - 1])
    return samples
