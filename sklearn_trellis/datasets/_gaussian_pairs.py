"""Affinities drawn from the Gaussian pair model (the generative reading of correlation clustering)."""

import numpy as np
from sklearn.utils import Bunch, check_random_state


def crp_labels(n_samples, alpha, rng):
    """A partition of ``n_samples`` items from the Chinese restaurant process ``CRP(alpha)``.

    Labels ``0..K-1`` in order of first appearance (item ``i`` opens a new
    cluster with probability ``alpha / (alpha + i)``).
    """
    labels = np.zeros(n_samples, dtype=np.intp)
    counts = [1] if n_samples else []
    for i in range(1, n_samples):
        weights = np.append(counts, alpha) / (i + alpha)
        k = int(rng.choice(weights.size, p=weights))
        if k == len(counts):
            counts.append(1)
        else:
            counts[k] += 1
        labels[i] = k
    return labels


def make_gaussian_pairs(n_samples=12, *, beta=0.5, noise_variance=1.0, offset=0.0,
                        alpha=1.5, random_state=None):
    """Signed affinities of items drawn from the Gaussian pair model at known parameters.

    A partition is drawn from the Ewens prior (the Chinese restaurant process
    of concentration ``alpha``); then every pair's affinity independently::

        w_ij ~ N(offset + beta * noise_variance, noise_variance)   same cluster,
        w_ij ~ N(offset - beta * noise_variance, noise_variance)   different clusters.

    This is the model whose exact posterior
    :class:`~sklearn_trellis.ExactCorrelationClustering` computes
    (``affinity='precomputed'``, ``alpha=alpha``; :mod:`sklearn_trellis.models.gaussian_pairs`):
    its ``beta`` is ``(mu_same - mu_diff) / (2 noise_variance)`` and its
    affinity offset ``(mu_same + mu_diff) / 2``, so data drawn here test
    whether empirical Bayes and ``GridSearchCV`` recover them.

    Parameters
    ----------
    n_samples : int, default=12
        Number of items.
    beta : float, default=0.5
        Inverse temperature of the model (``beta >= 0``).
    noise_variance : float, default=1.0
        Variance ``s2`` of every pair's affinity (``> 0``).
    offset : float, default=0.0
        Midpoint ``c`` of the two pair means.
    alpha : float, default=1.5
        Concentration of the Chinese restaurant process (``> 0``).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    data : Bunch
        ``affinity``: the symmetric (n_samples, n_samples) affinity matrix
        (zero diagonal); ``target``: the planted partition's labels
        (``0..K-1`` in order of first appearance); ``beta``,
        ``noise_variance``, ``offset``, ``alpha``: the parameters.

    Examples
    --------
    >>> from sklearn_trellis.datasets import make_gaussian_pairs
    >>> data = make_gaussian_pairs(8, beta=2.0, random_state=0)
    >>> data.affinity.shape, bool((data.affinity == data.affinity.T).all())
    ((8, 8), True)
    >>> data.target[0]
    np.int64(0)
    """
    for name, value, low_open in (("beta", beta, False), ("noise_variance", noise_variance, True),
                                  ("alpha", alpha, True)):
        if not np.isfinite(value) or value < 0 or (low_open and value == 0):
            bound = "> 0" if low_open else ">= 0"
            raise ValueError(f"{name} must be a finite number {bound}, got {value!r}.")
    if not np.isfinite(offset):
        raise ValueError(f"offset must be finite, got {offset!r}.")
    if int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
    rng = check_random_state(random_state)
    n = int(n_samples)
    labels = crp_labels(n, float(alpha), rng)
    same = labels[:, None] == labels[None, :]
    half_gap = beta * noise_variance
    means = offset + np.where(same, half_gap, -half_gap)
    upper = np.triu(means + np.sqrt(noise_variance) * rng.standard_normal((n, n)), 1)
    return Bunch(affinity=upper + upper.T, target=labels, beta=float(beta),
                 noise_variance=float(noise_variance), offset=float(offset), alpha=float(alpha))


__all__ = ["make_gaussian_pairs"]
