"""Affinities drawn from the Gaussian pair model (the generative reading of correlation clustering)."""

import numpy as np
from scipy.special import gammaln
from sklearn.utils import Bunch

from .._core.labels import first_appearance_labels
from .._core.validation import check_random_state

#: Terms of Dobinski's series below this fraction of its largest are left out of the
#: draw of the number of urns (Stam's algorithm): their total is below 1e-20 of the sum.
NEGLIGIBLE_TERM = 1e-22


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


def uniform_partition_labels(n_samples, rng):
    """A partition of ``n_samples`` items drawn uniformly from all ``Bell(n_samples)``.

    Stam's algorithm (A. J. Stam, J. Combin. Theory A 35, 1983): draw a
    number of urns ``k >= 1`` with probability ``k**n / (e k! Bell(n))`` (the
    terms of Dobinski's formula ``Bell(n) = sum_k k**n / (e k!)``), throw
    every item into one of the ``k`` urns uniformly, and keep the non-empty
    urns as the clusters. A partition with ``b`` blocks arises from
    ``k! / (k - b)!`` of the ``k**n`` throws, so its probability is
    ``sum_{k >= b} 1 / (e (k - b)! Bell(n)) = 1 / Bell(n)`` whatever its
    shape. ``O(n)`` time and memory (:func:`urn_count_probabilities`).

    Labels ``0..K-1`` in order of first appearance.
    """
    probabilities = urn_count_probabilities(n_samples)
    n_urns = 1 + int(rng.choice(probabilities.size, p=probabilities))
    return first_appearance_labels(rng.randint(0, n_urns, size=int(n_samples))).astype(np.intp)


def urn_count_probabilities(n_samples):
    """``P(k urns)``, ``k = 1, 2, ...``, of Stam's algorithm: ``k**n / (e k! Bell(n))``.

    Computed in log space (``n log k - log k!``) and normalised over the
    terms kept, so no Bell number is formed; the series is cut past its peak
    where a term is below ``NEGLIGIBLE_TERM`` of the largest and less than
    half the one before (the ratio ``(1 + 1/k)**n / (k + 1)`` of consecutive
    terms decreases, so the terms left out sum to less than the last kept).
    """
    n = int(n_samples)
    k = np.arange(1, max(2 * n, 8) + 1, dtype=np.float64)
    while True:
        log_terms = n * np.log(k) - gammaln(k + 1)
        if (np.exp(log_terms[-1] - log_terms.max()) < NEGLIGIBLE_TERM
                and log_terms[-1] < log_terms[-2] - np.log(2)):
            break
        k = np.arange(1, 2 * k.size + 1, dtype=np.float64)
    weights = np.exp(log_terms - log_terms.max())
    return weights / weights.sum()


def make_gaussian_pairs(n_samples=12, *, beta=0.5, noise_variance=1.0, offset=0.0,
                        alpha=1.5, random_state=None):
    """Signed affinities of items drawn from the Gaussian pair model at known parameters.

    A partition is drawn from the partition prior: the Ewens prior (the
    Chinese restaurant process of concentration ``alpha``), or with
    ``alpha=None`` the uniform prior over all set partitions (the default
    model of :class:`~sklearn_trellis.ExactCorrelationClustering`); then every
    pair's affinity independently::

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
    alpha : float or None, default=1.5
        Concentration of the Chinese restaurant process (``> 0``); ``None``:
        the partition is uniform over all ``Bell(n_samples)`` set partitions
        (:func:`uniform_partition_labels`, exact).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    data : Bunch
        ``affinity``: the symmetric (n_samples, n_samples) affinity matrix
        (zero diagonal); ``target``: the planted partition's labels
        (``0..K-1`` in order of first appearance); ``beta``,
        ``noise_variance``, ``offset``, ``alpha``: the parameters (``alpha``
        None for the uniform prior).

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
                                  ("alpha", 1.0 if alpha is None else alpha, True)):
        if not np.isfinite(value) or value < 0 or (low_open and value == 0):
            bound = "> 0" if low_open else ">= 0"
            raise ValueError(f"{name} must be a finite number {bound}, got {value!r}.")
    if not np.isfinite(offset):
        raise ValueError(f"offset must be finite, got {offset!r}.")
    if int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
    rng = check_random_state(random_state)
    n = int(n_samples)
    labels = (uniform_partition_labels(n, rng) if alpha is None
              else crp_labels(n, float(alpha), rng))
    same = labels[:, None] == labels[None, :]
    half_gap = beta * noise_variance
    means = offset + np.where(same, half_gap, -half_gap)
    upper = np.triu(means + np.sqrt(noise_variance) * rng.standard_normal((n, n)), 1)
    return Bunch(affinity=upper + upper.T, target=labels, beta=float(beta),
                 noise_variance=float(noise_variance), offset=float(offset),
                 alpha=None if alpha is None else float(alpha))


__all__ = ["make_gaussian_pairs"]
