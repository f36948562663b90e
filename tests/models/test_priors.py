"""Partition priors: EPPFs against enumeration, predictive weights, kernels, hyperprior."""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import gammaln, logsumexp

from oracles import set_partitions
from sklearn_trellis.models import prior_kernels as pk
from sklearn_trellis.models.priors import (CRP, DirichletMultinomialPrior, GammaHyperprior,
                                             PitmanYor, make_prior)

PRIORS = [CRP(0.7), CRP(3.0), PitmanYor(0.8, 0.3), PitmanYor(2.0, 0.7),
          DirichletMultinomialPrior(1.5, 3), DirichletMultinomialPrior(4.0, 10)]


def sizes_of(row):
    return np.bincount(row)


def pitman_yor_eppf_reference(sizes, alpha, d):
    """Pitman (2006) Eq. 3.6: prod_{i<K}(alpha + i d) / (alpha + 1)_{n-1} prod (1 - d)_{n_b - 1}."""
    n, k = sum(sizes), len(sizes)
    value = math.prod(alpha + i * d for i in range(1, k))
    value /= math.prod(alpha + 1 + i for i in range(n - 1))
    for m in sizes:
        value *= math.prod(1 - d + i for i in range(m - 1))
    return math.log(value)


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_eppf_sums_to_one(prior):
    for n in (1, 4, 6):
        total = logsumexp([prior.log_eppf(sizes_of(row)) for row in set_partitions(n)])
        assert total == pytest.approx(0.0, abs=1e-10)


def test_eppf_matches_pitman_formula_and_dm_limit():
    rng = np.random.default_rng(0)
    for _ in range(20):
        sizes = rng.integers(1, 5, size=rng.integers(1, 5))
        alpha, d = rng.uniform(0.2, 3), rng.uniform(0, 0.9)
        assert PitmanYor(alpha, d).log_eppf(sizes) == pytest.approx(
            pitman_yor_eppf_reference(list(sizes), alpha, d), rel=1e-10)
        # the Dirichlet-multinomial prior tends to the CRP as k -> infinity
        assert DirichletMultinomialPrior(alpha, 10 ** 7).log_eppf(sizes) == pytest.approx(
            CRP(alpha).log_eppf(sizes), abs=1e-4)


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_predictive_weights_are_eppf_ratios(prior):
    rng = np.random.default_rng(1)
    for _ in range(10):
        sizes = rng.integers(1, 5, size=rng.integers(1, 4))
        if prior.n_components is not None and sizes.size > prior.n_components:
            continue
        weights = prior.log_predictive_weights(sizes)
        ratios = []
        for c in range(sizes.size + 1):
            new = np.append(sizes, 0)
            new[c] += 1
            ratios.append(prior.log_eppf(new))
        probs = np.exp(weights - logsumexp(weights))
        np.testing.assert_allclose(probs, np.exp(np.array(ratios) - logsumexp(ratios)),
                                   atol=1e-12)
        # denominators: the weights sum to n + alpha
        assert logsumexp(weights) == pytest.approx(np.log(sizes.sum() + prior.alpha))
        pp = prior.kernel_params()
        for c, m in enumerate(sizes):
            assert pk.log_weight_existing(pp, m) == pytest.approx(weights[c])
        assert pk.log_weight_new(pp, sizes.size) == pytest.approx(weights[-1])
        for m in sizes:
            assert pk.log_block(pp, m) == pytest.approx(prior.log_block([m])[0])
        assert pk.log_count(pp, sizes.size) == pytest.approx(prior.log_count(sizes.size))


def test_dirichlet_multinomial_caps_clusters():
    prior = DirichletMultinomialPrior(1.0, 2)
    assert prior.log_eppf([1, 1, 1]) == -np.inf
    assert prior.log_predictive_weights([2, 1])[-1] == -np.inf
    assert pk.log_weight_new(prior.kernel_params(), 2) == -np.inf


def test_invalid_priors():
    with pytest.raises(ValueError, match="alpha"):
        CRP(0.0)
    with pytest.raises(ValueError, match="discount"):
        PitmanYor(1.0, 1.0)
    with pytest.raises(TypeError, match="n_components"):
        DirichletMultinomialPrior(1.0, 2.5)
    with pytest.raises(ValueError, match="discount"):
        make_prior(1.0, 0.5, n_components=3)
    assert type(make_prior(1.0)) is CRP
    assert type(make_prior(1.0, 0.2)) is PitmanYor


def alpha_posterior_mean(prior, sizes, shape, rate):
    """E[alpha | sizes] by numerical integration of Gamma(alpha) * EPPF(sizes | alpha)."""
    def log_density(a):
        return (shape - 1) * math.log(a) - rate * a + prior.with_alpha(a).log_eppf(sizes)
    ref = log_density(shape / rate)
    norm = integrate.quad(lambda a: math.exp(log_density(a) - ref), 0, np.inf, limit=200)[0]
    first = integrate.quad(lambda a: a * math.exp(log_density(a) - ref), 0, np.inf,
                           limit=200)[0]
    return first / norm


@pytest.mark.parametrize("prior", [CRP(1.0), PitmanYor(1.0, 0.4),
                                   DirichletMultinomialPrior(1.0, 6)], ids=repr)
def test_alpha_resampling_targets_its_conditional(prior):
    sizes = np.array([6, 3, 2, 1])
    hyper = GammaHyperprior(2.0, 1.0)
    rng = np.random.RandomState(0)
    draws = []
    current = prior
    for _ in range(3000):
        current = current.with_alpha(hyper.resample(current, sizes, rng))
        draws.append(current.alpha)
    draws = np.array(draws)
    expected = alpha_posterior_mean(prior, sizes, 2.0, 1.0)
    # effective sample size is lower than 3000 for the slice sampler: generous 5 SE
    stderr = draws.std() / np.sqrt(len(draws) / 5)
    assert abs(draws.mean() - expected) < 5 * stderr


def test_gamma_function_identity_used_by_normaliser():
    assert CRP(2.5).log_normaliser(4) == pytest.approx(gammaln(2.5) - gammaln(6.5))
