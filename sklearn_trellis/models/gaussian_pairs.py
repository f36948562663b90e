"""The Gaussian pair model: correlation clustering as a generative model of the affinities.

A partition ``pi`` of the N items is drawn from a partition prior ``p(pi)``;
given ``pi`` every pair's affinity is independent and Gaussian::

    w_ij ~ N(mu_same, s2)   if i and j share a cluster of pi,
    w_ij ~ N(mu_diff, s2)   otherwise.

Derivation. For one pair,
``log N(w; mu_same, s2) - log N(w; mu_diff, s2) = b * (w - c)`` with
``b = (mu_same - mu_diff) / s2`` and ``c = (mu_same + mu_diff) / 2`` (expand
the two squares: the ``w**2`` terms cancel). Writing every pair's likelihood
as the "different clusters" one times that ratio for the pairs that share a
cluster::

    p(W | pi) = prod_{i<j} N(w_ij; mu_diff, s2) * exp(b * sum_{i<j same in pi} (w_ij - c))

so the posterior ``p(pi | W)`` is a correlation-clustering Gibbs
distribution over the shifted affinities ``w' = w - c``. In the Greenberg et
al. parametrisation of :class:`~sklearn_trellis.models.CorrelationClusteringModel`,
``log phi(pi) = beta * (sum_same w' - sum_diff w') = b * sum_same w' - (b / 2) * D1``
with ``D1 = sum_{i<j} w'_ij``, so ``beta = b / 2 = (mu_same - mu_diff) / (2 s2)``.

The evidence. With ``Z = sum_pi p(pi) phi(pi)`` (the model's partition
function with the prior's cluster terms, and its constant) and
``mu_diff = c - b s2 / 2``, ``sum_{i<j} log N(w_ij; mu_diff, s2) + (b / 2) D1``
simplifies to the *pair term*::

    g(s2) = -P/2 log(2 pi s2) - D2 / (2 s2) - P b**2 s2 / 8,

``P`` the number of pairs and ``D2 = sum_{i<j} w'_ij**2``, hence::

    log p(W) = g(s2) + log Z + log prior normaliser.

Only ``g`` depends on ``s2`` once ``b`` and ``c`` are fixed: its maximiser is
closed-form, ``s2 = 2 (D2 / P) / (1 + sqrt(1 + b**2 D2 / P))``
(:func:`noise_variance`), and the gradient of the profile evidence in
``(b, c)`` needs only the pairwise marginals ``P_ij`` of the posterior
(:func:`evidence_gradient`).

Partition priors that keep the trellis factorisation (a product of cluster
terms times a normaliser):

- ``alpha=None``: the uniform prior over the ``Bell(N)`` partitions: no
  cluster term, normaliser ``-log Bell(N)``; the posterior is exactly the
  classical correlation-clustering Gibbs distribution.
- ``alpha > 0``: the Ewens (Chinese restaurant process) prior: cluster term
  ``log(alpha) + log((|B| - 1)!)``, normaliser
  ``log Gamma(alpha) - log Gamma(alpha + N)``. It is projective (the prior of
  N items is the marginal of the prior of N + 1), so held-out predictive
  densities are those of one coherent model.

A new item's predictive density given the fitted ones
(:func:`new_item_log_predictive`) follows from the cluster marginals of the
fitted posterior: a new item joins a cluster ``B`` of ``pi`` or opens its own,
so::

    Z_{N+1} / Z_N = E_pi[ r_new + sum_{B in pi} r_B exp(b * sum_{j in B} w'_xj) ]
                  = r_new + sum_B P(B is a cluster) r_B exp(b * sum_{j in B} w'_xj)

with the prior's sequential weights ``r`` (Ewens: ``alpha / (alpha + N)``
for a new cluster, ``|B| / (alpha + N)`` to join ``B``). Under the uniform
prior of N + 1 items the marginal prior of the first N is proportional to
``K + 1`` (each partition of N items has ``K + 1`` extensions), so the exact
predictive density of that model is the same sum with ``r = 1`` divided by
``E[K] + 1``, ``K`` the number of clusters of the fitted posterior.
"""

import functools

import numpy as np
from scipy.special import digamma, gammaln, logsumexp


def pair_moments(shifted):
    """``(P, D1, D2)``: the number of pairs, sum and sum of squares of ``w'_ij``, ``i < j``.

    Parameters
    ----------
    shifted : ndarray of shape (N, N)
        The shifted affinities ``w' = w - c`` (the diagonal is ignored).

    Examples
    --------
    >>> import numpy as np
    >>> pair_moments(np.array([[0., 1., -2.], [1., 0., 3.], [-2., 3., 0.]]))
    (3, 2.0, 14.0)
    """
    upper = shifted[np.triu_indices(shifted.shape[0], 1)]
    return int(upper.size), float(upper.sum()), float(np.dot(upper, upper))


def noise_variance(b, n_pairs, sum_sq):
    """The pair noise variance ``s2`` maximising the evidence at fixed ``b`` and ``c``.

    The root of ``g'(s2) = 0`` for the pair term of the module docstring,
    written so that it stays accurate as ``b -> 0`` (where it is ``D2 / P``).

    Parameters
    ----------
    b : float
        ``(mu_same - mu_diff) / s2`` (twice the estimator's ``beta``).
    n_pairs : int
    sum_sq : float
        ``D2``, the sum of squared shifted affinities over the pairs.

    Examples
    --------
    >>> noise_variance(0.0, 10, 20.0)
    2.0
    >>> round(noise_variance(2.0, 10, 20.0), 6)   # 2 (sqrt(1 + 8) - 1) / 4
    1.0
    """
    if n_pairs == 0:
        raise ValueError("The Gaussian pair model needs at least two items (one pair).")
    mean_sq = sum_sq / n_pairs
    with np.errstate(over="ignore"):
        signal = b * b * mean_sq
    if np.isfinite(signal):
        variance = 2.0 * mean_sq / (1.0 + np.sqrt(1.0 + signal))
    else:   # (b sd)**2 beyond float64: the same root without squaring b sd
        variance = 2.0 * mean_sq / (1.0 + np.hypot(1.0, b * np.sqrt(mean_sq)))
    # All affinities equal to c: a degenerate (zero-variance) fit; keep it finite.
    return float(max(variance, np.finfo(np.float64).tiny))


def pair_term(b, variance, n_pairs, sum_sq):
    """``g(s2) = -P/2 log(2 pi s2) - D2 / (2 s2) - P b**2 s2 / 8`` (module docstring)."""
    with np.errstate(over="ignore"):
        spread = n_pairs * b * b * variance / 8.0
    if not np.isfinite(spread):     # b**2 beyond float64, b**2 s2 not
        spread = n_pairs * b * (b * variance) / 8.0
    return float(-0.5 * n_pairs * np.log(2.0 * np.pi * variance) - sum_sq / (2.0 * variance)
                 - spread)


@functools.lru_cache(maxsize=32)
def log_bell(n):
    """``log Bell(n)``, the log of the number of partitions of ``n`` items.

    By ``Bell(m + 1) = sum_k C(m, k) Bell(k)`` in log space (``O(n**2)``: 0.2 s
    at ``n = 300``, memoised since every evidence of empirical Bayes needs it).

    Examples
    --------
    >>> [round(float(np.exp(log_bell(n)))) for n in range(6)]
    [1, 1, 2, 5, 15, 52]
    """
    logs = np.zeros(int(n) + 1)
    for m in range(int(n)):
        k = np.arange(m + 1)
        log_binom = gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1)
        logs[m + 1] = logsumexp(log_binom + logs[:m + 1])
    return float(logs[int(n)])


def log_prior_normaliser(n_items, alpha):
    """The partition prior's term outside the clusters: ``-log Bell(N)`` or Ewens'.

    Parameters
    ----------
    n_items : int
    alpha : float or None
        ``None`` for the uniform prior, else the Ewens concentration.
    """
    if alpha is None:
        return -log_bell(n_items)
    return float(gammaln(alpha) - gammaln(alpha + n_items))


def evidence_gradient(b, variance, shifted, pairwise):
    """Gradient of the profile log evidence in ``(b, c)`` at ``s2 = noise_variance``.

    ``dL/db = sum_{i<j} (P_ij - 1/2) w'_ij - P b s2 / 4`` and
    ``dL/dc = D1 / s2 + b (P / 2 - sum_{i<j} P_ij)``: the derivative of
    ``log Z`` is a posterior expectation of pair co-membership, and
    ``dg/ds2 = 0`` at the profile variance (envelope theorem).

    Parameters
    ----------
    b, variance : float
    shifted : ndarray of shape (N, N)
        ``w' = w - c``.
    pairwise : ndarray of shape (N, N)
        The posterior pairwise marginals ``P_ij`` at ``(b, c)``.

    Returns
    -------
    ndarray of shape (2,)
    """
    rows, cols = np.triu_indices(shifted.shape[0], 1)
    upper, together = shifted[rows, cols], pairwise[rows, cols]
    n_pairs = upper.size
    d_b = float(np.dot(together - 0.5, upper) - n_pairs * b * variance / 4.0)
    d_c = float(upper.sum() / variance + b * (n_pairs / 2.0 - together.sum()))
    return np.array([d_b, d_c])


def log_alpha_gradient(alpha, n_items, expected_n_clusters):
    """``d log p(W) / d log alpha`` under the Ewens prior: ``E[K] - alpha (psi(alpha + N) - psi(alpha))``.

    Every cluster of a partition carries the prior term ``log alpha``, so the
    derivative of ``log Z`` in ``log alpha`` is the posterior mean number of
    clusters ``E[K]``; that of the normaliser
    ``log Gamma(alpha) - log Gamma(alpha + N)`` is minus the prior mean
    number of clusters, ``alpha (psi(alpha + N) - psi(alpha))``. The
    evidence is stationary where the posterior and prior means agree.

    Parameters
    ----------
    alpha : float
        Ewens concentration.
    n_items : int
    expected_n_clusters : float
        ``E[K]`` under the posterior at ``alpha``.

    Examples
    --------
    >>> round(log_alpha_gradient(1.0, 3, 11 / 6), 12)   # E[K] of the prior: zero
    0.0
    """
    return float(expected_n_clusters
                 - alpha * (digamma(alpha + n_items) - digamma(alpha)))


def new_item_log_predictive(log_cluster_marginals, member_sums, sizes, n_items, b, variance,
                            new_sums, new_sum_sq, alpha):
    """``log p(w'_x | W)`` of new items, from the fitted posterior's cluster marginals.

    Parameters
    ----------
    log_cluster_marginals : ndarray of shape (n_clusters,)
        ``log P(B is a cluster)`` of every cluster ``B`` the posterior can use.
    member_sums : ndarray of shape (n_new, n_clusters)
        ``sum_{j in B} w'_xj`` for each new item ``x`` and cluster ``B``.
    sizes : ndarray of shape (n_clusters,)
        ``|B|``.
    n_items : int
        N, the number of fitted items.
    b, variance : float
        The model's ``b`` and ``s2``.
    new_sums, new_sum_sq : ndarray of shape (n_new,)
        ``sum_j w'_xj`` and ``sum_j w'_xj**2`` over the N fitted items.
    alpha : float or None
        Ewens concentration (``None``: uniform prior).

    Returns
    -------
    ndarray of shape (n_new,)
    """
    # The new pairs' "different clusters" densities N(w; mu_diff, s2), mu_diff = c - b s2 / 2.
    base = (-0.5 * n_items * np.log(2.0 * np.pi * variance)
            - (new_sum_sq + b * variance * new_sums + n_items * (b * variance) ** 2 / 4.0)
            / (2.0 * variance))
    join = log_cluster_marginals[None, :] + b * member_sums
    if alpha is None:
        log_new, log_join = 0.0, join
        log_norm = np.log1p(np.exp(logsumexp(log_cluster_marginals)))   # log(E[K] + 1)
    else:
        with np.errstate(divide="ignore"):   # an empty set (size 0) never joins
            log_new, log_join = np.log(alpha), join + np.log(sizes)[None, :]
        log_norm = np.log(alpha + n_items)
    total = np.logaddexp(log_new, logsumexp(log_join, axis=1))
    return base + total - log_norm


#: Largest and smallest ``|w - c|`` whose squares the noise variance sums over up to
#: 2**100 pairs without overflow or underflow; beyond them the model is evaluated in
#: units of a power of 2 (:func:`unit_exponent`).
UNIT_FREE_RANGE = (2.0 ** -450, 2.0 ** 450)


def unit_exponent(top):
    """The power of 2 in whose units the model is evaluated, given the largest ``|w - c|``.

    The model is scale-equivariant: dividing the affinities (and ``c``) by ``2**e`` (exact
    in float64) multiplies ``b`` by ``2**e``, divides ``s2`` by ``2**(2 e)`` and raises
    the log density of every affinity by ``e log 2`` (:func:`log_density_shift`). 0 inside
    :data:`UNIT_FREE_RANGE` (no rescaling: ordinary scales keep their arithmetic), else
    the ``e`` that brings ``top`` into ``[0.5, 1)``.

    Examples
    --------
    >>> unit_exponent(3.0), unit_exponent(2.0 ** 600), unit_exponent(0.75 * 2.0 ** -600)
    (0, 601, -600)
    """
    low, high = UNIT_FREE_RANGE
    if top == 0.0 or low <= top <= high:
        return 0
    return int(np.frexp(top)[1])


def log_density_shift(n_values, exponent):
    """What the log density of ``n_values`` affinities gains when their unit is ``2**exponent``
    times larger: ``-n_values * exponent * log 2`` (a density in the affinities' units)."""
    return -float(n_values) * float(exponent) * float(np.log(2.0))


__all__ = ["UNIT_FREE_RANGE", "unit_exponent", "log_density_shift", "pair_moments",
           "noise_variance", "pair_term", "log_bell", "log_prior_normaliser",
           "evidence_gradient", "log_alpha_gradient", "new_item_log_predictive"]
