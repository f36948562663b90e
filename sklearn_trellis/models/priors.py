"""Exchangeable partition priors and the gamma hyperprior on their concentration.

Every prior's EPPF (exchangeable partition probability function) of a
partition of ``n`` items into clusters of sizes ``n_1..n_K`` is written::

    log EPPF = log_normaliser(n) + log_count(K) + sum_b log_block(n_b)

=============================  ===========================  =============================  ===================================
prior                          ``log_count(K)``             ``log_block(m)``               ``log_normaliser(n)``
=============================  ===========================  =============================  ===================================
``CRP(alpha)``                 ``K log alpha``              ``log Gamma(m)``               ``log G(alpha) - log G(alpha + n)``
``PitmanYor(alpha, d)``        ``sum_{j<K} log(alpha+jd)``  ``log G(m-d) - log G(1-d)``    same
``DirichletMultinomialPrior``  ``log k! - log (k-K)!``      ``log G(m+a/k) - log G(a/k)``  same
=============================  ===========================  =============================  ===================================

(``G`` is the gamma function; for the Dirichlet-multinomial ``a = alpha`` is the
total Dirichlet mass over ``k`` components and ``K > k`` has probability 0.)
The Gibbs predictive weights follow: joining a cluster of ``m`` other items
has weight ``m - d`` (``m + alpha/k``), a new cluster ``alpha + K d``
(``alpha (1 - K/k)``), all over the common ``n - 1 + alpha``
(Fidaner & Cemgil 2013, Eq. 2; Murphy, Eqs. 19-20).
"""

import math
import numbers

import numpy as np
from scipy.special import gammaln

from .._core.validation import check_scalar_param
from .prior_kernels import log_rising_factorial


class PartitionPrior:
    """Base class: an exchangeable partition prior with concentration ``alpha``."""

    discount = 0.0
    n_components = None

    def __repr__(self):
        extra = ""
        if self.discount:
            extra = f", discount={self.discount!r}"
        if self.n_components is not None:
            extra = f", n_components={self.n_components!r}"
        return f"{type(self).__name__}(alpha={self.alpha!r}{extra})"

    def kernel_params(self):
        """``[alpha, discount, n_components or 0]`` as read by ``prior_kernels``."""
        k = 0.0 if self.n_components is None else float(self.n_components)
        return np.array([float(self.alpha), float(self.discount), k])

    def with_alpha(self, alpha):
        """A copy with another concentration."""
        raise NotImplementedError

    def log_block(self, sizes):
        """Per-cluster EPPF factor for clusters of the given sizes (array)."""
        raise NotImplementedError

    def log_count(self, n_clusters):
        """EPPF factor depending on the number of clusters ``K`` only."""
        raise NotImplementedError

    def log_normaliser(self, n_items):
        """``log Gamma(alpha) - log Gamma(alpha + n)`` (exact for any ``alpha``, also ``>> n``)."""
        return -float(log_rising_factorial(self.alpha, float(n_items)))

    def log_count_table(self, n_items):
        """``log_count(K)`` for ``K = 0..n_items`` (array of length ``n_items + 1``)."""
        return np.array([self.log_count(k) for k in range(n_items + 1)])

    def log_eppf(self, sizes):
        """Log prior probability of one partition with these cluster sizes."""
        sizes = np.asarray(sizes, dtype=np.float64)
        sizes = sizes[sizes > 0]
        return float(self.log_normaliser(sizes.sum()) + self.log_count(sizes.size)
                     + np.sum(self.log_block(sizes)))

    def log_predictive_weights(self, sizes):
        """Unnormalised log weights of joining each cluster (sizes of the *other* items), then a new one."""
        raise NotImplementedError


class CRP(PartitionPrior):
    """Chinese restaurant process (Dirichlet process) prior with concentration ``alpha > 0``.

    Examples
    --------
    >>> from sklearn_trellis.models.priors import CRP
    >>> round(float(CRP(1.0).log_eppf([1, 1])), 6)   # P({1},{2}) = 1/2
    -0.693147
    """

    def __init__(self, alpha=1.0):
        check_scalar_param(alpha, "alpha", low=0.0, include_low=False)
        self.alpha = float(alpha)

    def with_alpha(self, alpha):
        return type(self)(alpha)

    def log_block(self, sizes):
        return gammaln(np.asarray(sizes, dtype=np.float64))

    def log_count(self, n_clusters):
        return n_clusters * math.log(self.alpha)

    def log_predictive_weights(self, sizes):
        sizes = np.asarray(sizes, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.append(np.log(sizes), math.log(self.alpha))


class PitmanYor(PartitionPrior):
    """Two-parameter CRP (Pitman-Yor) with ``0 <= discount < 1`` and ``alpha > 0``.

    Examples
    --------
    >>> from sklearn_trellis.models.priors import PitmanYor
    >>> round(float(PitmanYor(1.0, 0.5).log_eppf([1, 1])), 6)   # (alpha + d) / (alpha + 1)
    -0.287682
    """

    def __init__(self, alpha=1.0, discount=0.0):
        check_scalar_param(alpha, "alpha", low=0.0, include_low=False)
        check_scalar_param(discount, "discount", low=0.0)
        if discount >= 1:
            raise ValueError(f"discount must be < 1, got {discount!r}.")
        self.alpha = float(alpha)
        self.discount = float(discount)

    def with_alpha(self, alpha):
        return type(self)(alpha, self.discount)

    def log_block(self, sizes):
        sizes = np.asarray(sizes, dtype=np.float64)
        return gammaln(sizes - self.discount) - gammaln(1.0 - self.discount)

    def log_count(self, n_clusters):
        return float(np.sum(np.log(self.alpha + self.discount * np.arange(n_clusters))))

    def log_predictive_weights(self, sizes):
        sizes = np.asarray(sizes, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            existing = np.where(sizes > 0, np.log(np.maximum(sizes - self.discount, 0)), -np.inf)
        return np.append(existing, math.log(self.alpha + self.discount * sizes.size))


class DirichletMultinomialPrior(PartitionPrior):
    """Symmetric Dirichlet(alpha/k, ..., alpha/k) mixture weights over ``k`` components, labels forgotten.

    ``k -> infinity`` gives the CRP. At most ``n_components`` clusters.

    Examples
    --------
    >>> from sklearn_trellis.models.priors import DirichletMultinomialPrior
    >>> prior = DirichletMultinomialPrior(2.0, n_components=2)
    >>> round(float(prior.log_eppf([1, 1])), 6)   # log(2 * (1 * 1) / (2 * 3)) = log(1/3)
    -1.098612
    """

    def __init__(self, alpha=1.0, n_components=10):
        check_scalar_param(alpha, "alpha", low=0.0, include_low=False)
        check_scalar_param(n_components, "n_components", kind=numbers.Integral, low=1)
        self.alpha = float(alpha)
        self.n_components = int(n_components)

    def with_alpha(self, alpha):
        return type(self)(alpha, self.n_components)

    def log_block(self, sizes):
        a = self.alpha / self.n_components
        sizes = np.asarray(sizes, dtype=np.float64)
        return np.array([log_rising_factorial(a, m) for m in sizes.ravel()]).reshape(sizes.shape)

    def log_count(self, n_clusters):
        k = self.n_components
        if n_clusters > k:
            return -np.inf
        return float(gammaln(k + 1.0) - gammaln(k - n_clusters + 1.0))

    def log_predictive_weights(self, sizes):
        sizes = np.asarray(sizes, dtype=np.float64)
        k = self.n_components
        new = -np.inf if sizes.size >= k else math.log(self.alpha * (1.0 - sizes.size / k))
        return np.append(np.log(sizes + self.alpha / k), new)


class GammaHyperprior:
    """Gamma(shape, rate) prior on ``alpha``, resampled once per sweep.

    For the CRP the update is Escobar & West's (1995) exact auxiliary-variable
    draw; for Pitman-Yor and the Dirichlet-multinomial prior ``alpha`` is
    drawn by slice sampling of ``log alpha`` (Neal 2003) on its exact
    conditional ``Gamma(alpha) * EPPF(sizes | alpha)``.

    Parameters
    ----------
    shape, rate : float, default=1.0
        Prior mean ``shape / rate``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models.priors import CRP, GammaHyperprior
    >>> alpha = GammaHyperprior(2.0, 1.0).resample(CRP(1.0), [5, 3, 2], np.random.RandomState(0))
    >>> alpha > 0
    True
    """

    def __init__(self, shape=1.0, rate=1.0):
        check_scalar_param(shape, "shape", low=0.0, include_low=False)
        check_scalar_param(rate, "rate", low=0.0, include_low=False)
        self.shape = float(shape)
        self.rate = float(rate)

    def log_density(self, alpha):
        """Log prior density of ``alpha`` (up to a constant)."""
        return (self.shape - 1.0) * math.log(alpha) - self.rate * alpha

    def resample(self, prior, sizes, random_state):
        """Draw ``alpha`` from its conditional given the cluster sizes of the current partition."""
        sizes = np.asarray(sizes, dtype=np.float64)
        sizes = sizes[sizes > 0]
        n, k = float(sizes.sum()), sizes.size
        if type(prior) is CRP:
            return self._escobar_west(prior.alpha, n, k, random_state)
        return self._slice(prior, sizes, random_state)

    def _escobar_west(self, alpha, n, k, rng):
        eta = rng.beta(alpha + 1.0, n)
        rate = self.rate - math.log(eta)
        odds = (self.shape + k - 1.0) / (n * rate)
        shape = self.shape + k if rng.random_sample() < odds / (1.0 + odds) else self.shape + k - 1.0
        return float(rng.gamma(shape, 1.0 / rate))

    def _slice(self, prior, sizes, rng, width=1.0, max_steps=50):
        def log_target(log_alpha):
            alpha = math.exp(log_alpha)
            return prior.with_alpha(alpha).log_eppf(sizes) + self.log_density(alpha) + log_alpha

        x0 = math.log(prior.alpha)
        level = log_target(x0) + math.log(rng.random_sample())
        left = x0 - width * rng.random_sample()
        right = left + width
        steps = 0
        while steps < max_steps and log_target(left) > level:
            left -= width
            steps += 1
        steps = 0
        while steps < max_steps and log_target(right) > level:
            right += width
            steps += 1
        while True:
            x1 = left + (right - left) * rng.random_sample()
            if log_target(x1) > level:
                return math.exp(x1)
            if x1 < x0:
                left = x1
            else:
                right = x1


def make_prior(alpha, discount=0.0, n_components=None):
    """The prior named by ``(alpha, discount, n_components)``: CRP, Pitman-Yor or Dirichlet-multinomial."""
    if n_components is not None:
        if discount:
            raise ValueError("A Dirichlet-multinomial prior (n_components set) has no discount; "
                             f"got discount={discount!r}.")
        return DirichletMultinomialPrior(alpha, n_components)
    if discount:
        return PitmanYor(alpha, discount)
    return CRP(alpha)


__all__ = ["PartitionPrior", "CRP", "PitmanYor", "DirichletMultinomialPrior",
           "GammaHyperprior", "make_prior"]
