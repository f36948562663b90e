"""Independent brute-force oracles: enumerate every structure and sum.

Deliberately naive and separate from the library's engines, so the tests
compare two unrelated computations.
"""


import numpy as np
from scipy.special import logsumexp


def set_partitions(n):
    """All set partitions of ``n`` items as restricted growth strings, shape (Bell(n), n)."""
    out = []

    def grow(prefix, n_blocks):
        if len(prefix) == n:
            out.append(list(prefix))
            return
        for label in range(n_blocks + 1):
            prefix.append(label)
            grow(prefix, max(n_blocks, label + 1))
            prefix.pop()

    grow([], 0)
    return np.array(out, dtype=np.int64)


def correlation_log_potentials(partitions, affinity, beta):
    """``beta * (sum_same w - sum_diff w)`` for each partition (rows)."""
    n = affinity.shape[0]
    iu, ju = np.triu_indices(n, 1)
    w = affinity[iu, ju]
    same = partitions[:, iu] == partitions[:, ju]
    return beta * (same @ w - (~same) @ w)


def flat_summaries(partitions, log_phi):
    """Exact summaries of a distribution given all partitions and their log-potentials."""
    log_z = logsumexp(log_phi)
    probs = np.exp(log_phi - log_z)
    n = partitions.shape[1]
    same = partitions[:, :, None] == partitions[:, None, :]
    pairwise = np.einsum("t,tij->ij", probs, same)
    n_clusters = partitions.max(axis=1) + 1
    k_dist = np.bincount(n_clusters - 1, weights=probs, minlength=n)
    best = int(np.argmax(log_phi))
    return dict(log_z=log_z, probs=probs, pairwise=pairwise, k_dist=k_dist,
                map_index=best, map_log_phi=log_phi[best])


def cluster_probability(partitions, probs, indices):
    """P(exactly ``indices`` is a cluster) by enumeration."""
    indices = np.asarray(indices)
    mask = np.zeros(partitions.shape[1], bool)
    mask[indices] = True
    total = 0.0
    for row, p in zip(partitions, probs):
        label = row[indices[0]]
        if np.array_equal(row == label, mask):
            total += p
    return total


def together_probability(partitions, probs, indices):
    """P(all ``indices`` share a cluster) by enumeration."""
    sub = partitions[:, np.asarray(indices)]
    return float(probs[(sub == sub[:, :1]).all(axis=1)].sum())


def canonical(labels):
    """Relabel in order of first appearance."""
    mapping = {}
    return tuple(mapping.setdefault(v, len(mapping)) for v in labels)


def random_subsets(rng, n, count):
    """A few random non-empty subsets of range(n)."""
    subsets = []
    for _ in range(count):
        size = rng.integers(1, n + 1)
        subsets.append(np.sort(rng.choice(n, size=size, replace=False)))
    return subsets


__all__ = ["set_partitions", "correlation_log_potentials", "flat_summaries",
           "cluster_probability", "together_probability", "canonical",
           "random_subsets"]
