"""``ExactCorrelationClustering(beta='posterior')``: beta summed out over a grid prior.

The grid posterior, the evidence and every averaged probability against
enumeration of all partitions x the grid (tests/oracles.py), draws against
the exact averaged marginals.
"""

import numpy as np
import pytest
from scipy.special import logsumexp

from oracles import (cluster_probability, gaussian_pair_beta_grid_log_joints,
                     gaussian_pair_log_joint, set_partitions, together_probability)
from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.datasets import make_gaussian_pairs
from sklearn_trellis.engines.beta_posterior import LOG_B_GRID, beta_posterior


def grid_prior(w, betas):
    """The stated prior on the grid, from its definition: half-normal(scale 4) density of
    ``d = b sd`` times ``d`` (the log grid's Jacobian), normalised."""
    sd = np.sqrt(np.mean(w[np.triu_indices(w.shape[0], 1)] ** 2))
    d = 2.0 * np.asarray(betas) * sd
    density = d * np.exp(-0.5 * (d / 4.0) ** 2)
    return density / density.sum()


def brute_force(w, betas, alpha):
    """``(partitions, p(beta_k | W), p(pi | W), log p(W))`` by enumeration."""
    partitions = set_partitions(w.shape[0])
    joints = (gaussian_pair_beta_grid_log_joints(partitions, w, betas, alpha)
              + np.log(grid_prior(w, betas))[:, None])
    log_total = logsumexp(joints)
    return (partitions, np.exp(logsumexp(joints, axis=1) - log_total),
            np.exp(logsumexp(joints, axis=0) - log_total), log_total)


def affinities(n, seed, beta=0.5):
    data = make_gaussian_pairs(n, beta=beta, alpha=1.5, random_state=seed)
    return data.affinity


@pytest.mark.parametrize("alpha", [None, 1.5])
@pytest.mark.parametrize("n, seed, beta", [(3, 0, 0.5), (5, 1, 0.25), (6, 2, 1.0)])
def test_posterior_and_averaged_marginals_match_enumeration(n, seed, beta, alpha):
    w = affinities(n, seed, beta)
    est = ExactCorrelationClustering(beta="posterior", affinity="precomputed",
                                     alpha=alpha).fit(w)
    assert est.beta_grid_.shape == (len(LOG_B_GRID),)
    sd = np.sqrt(np.mean(w[np.triu_indices(n, 1)] ** 2))
    np.testing.assert_allclose(np.log(2 * est.beta_grid_ * sd), LOG_B_GRID, atol=1e-12)
    partitions, p_beta, p_pi, log_evidence = brute_force(w, est.beta_grid_, alpha)
    np.testing.assert_allclose(est.beta_posterior_, p_beta, atol=1e-12)
    assert est.log_evidence_ == pytest.approx(log_evidence, abs=1e-9)
    assert est.beta_ == est.beta_grid_[np.argmax(p_beta)]
    same = partitions[:, :, None] == partitions[:, None, :]
    np.testing.assert_allclose(est.pairwise_marginals_, np.tensordot(p_pi, same, axes=1),
                               atol=1e-12)
    counts = np.array([len(set(p)) for p in partitions])
    np.testing.assert_allclose(est.n_clusters_distribution_,
                               np.bincount(counts, weights=p_pi, minlength=n + 1)[1:],
                               atol=1e-12)
    for subset in ([0], [0, 1], list(range(n))):
        assert est.cluster_marginal(subset) == pytest.approx(
            cluster_probability(partitions, p_pi, subset), abs=1e-12)
        assert est.together_marginal(subset) == pytest.approx(
            together_probability(partitions, p_pi, subset), abs=1e-12)


@pytest.mark.parametrize("alpha", [None, 0.7])
def test_score_samples_match_enumeration(alpha):
    """``log p(w_x | W) = log sum_k p(beta_k | W) p(w_x | W, beta_k)``, each grid value at
    its noise variance of the N fitted items."""
    n = 5
    w = affinities(n + 2, 3)
    est = ExactCorrelationClustering(beta="posterior", affinity="precomputed",
                                     alpha=alpha).fit(w[:n, :n])
    betas, p_beta = est.beta_grid_, est.beta_posterior_
    mean_sq = np.mean(w[:n, :n][np.triu_indices(n, 1)] ** 2)
    for k in range(2):
        rows = list(range(n)) + [n + k]
        sub = w[np.ix_(rows, rows)]
        partitions = set_partitions(n + 1)
        # The noise variance of each grid value is the fitted items' (theirs is fixed).
        expected = []
        for beta in betas:
            b = 2.0 * beta
            variance = 2.0 * mean_sq / (1.0 + np.sqrt(1.0 + b * b * mean_sq))
            joint = gaussian_pair_log_joint(partitions, sub, beta * variance,
                                            -beta * variance, variance, alpha)
            marginal = gaussian_pair_log_joint(partitions, sub, beta * variance,
                                               -beta * variance, variance, alpha, n_scored=n)
            expected.append(logsumexp(joint) - logsumexp(marginal))
        keep = p_beta > 0
        want = logsumexp(np.log(p_beta[keep]) + np.array(expected)[keep])
        assert est.score_samples(sub[n:, :n])[0] == pytest.approx(want, abs=1e-9)


def test_draws_follow_the_averaged_marginals():
    w = affinities(5, 4, 0.25)
    est = ExactCorrelationClustering(beta="posterior", affinity="precomputed",
                                     random_state=0).fit(w)
    draws = est.sample(4000)
    together = (draws[:, :, None] == draws[:, None, :]).mean(axis=0)
    exact = est.pairwise_marginals_
    tolerance = 4.5 * np.sqrt(exact * (1 - exact) / 4000) + 1e-12
    assert np.all(np.abs(together - exact) <= tolerance)
    np.testing.assert_array_equal(draws, est.sample(4000))  # the estimator's seed


def test_engine_function_matches_the_estimator():
    w = affinities(6, 5)
    posterior = beta_posterior(w, alpha=1.5)
    est = ExactCorrelationClustering(beta="posterior", affinity="precomputed",
                                     alpha=1.5).fit(w)
    np.testing.assert_allclose(posterior.pairwise_marginals(), est.pairwise_marginals_)
    assert posterior.probabilities.sum() == pytest.approx(1.0)


def test_sparse_runs_on_one_family_and_says_so():
    rng = np.random.default_rng(6)
    X = np.r_[rng.normal(0, 0.3, (5, 2)), rng.normal(3, 0.3, (5, 2))]
    est = ExactCorrelationClustering(beta="posterior", method="sparse").fit(X)
    assert "beta summed out" in est.approximation_
    assert np.all(np.diag(est.pairwise_marginals_) == 1.0)
    assert est.beta_posterior_.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(est.labels_, np.repeat([0, 1], 5))


def test_refusals():
    w = affinities(4, 7)
    with pytest.raises(ValueError, match="perturb_and_map"):
        ExactCorrelationClustering(beta="posterior", affinity="precomputed",
                                   method="perturb_and_map").fit(w)
    with pytest.raises(ValueError, match="at least 3 items"):
        ExactCorrelationClustering(beta="posterior", affinity="precomputed").fit(w[:2, :2])


def test_alpha_auto_is_learned_then_beta_summed_out():
    w = affinities(6, 8)
    est = ExactCorrelationClustering(beta="posterior", affinity="precomputed",
                                     alpha="auto").fit(w)
    assert isinstance(est.alpha_, float) and est.alpha_ > 0
    partitions, p_beta, p_pi, _ = brute_force(w, est.beta_grid_, est.alpha_)
    np.testing.assert_allclose(est.beta_posterior_, p_beta, atol=1e-12)
