"""``ExactCorrelationClustering(beta='posterior')``: beta (and with ``alpha='posterior'``
alpha) summed out over a grid prior.

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
from sklearn_trellis.engines.beta_posterior import LOG_ALPHA_GRID, LOG_B_GRID, beta_posterior


def log_grid_prior(w, betas):
    """The log of the stated prior on the grid, from its definition: half-normal(scale 4)
    density of ``d = b sd`` times ``d`` (the log grid's Jacobian), normalised. In logs:
    the weights of the grid's largest values are below double precision (6 items: four
    of 41 near exp(-5000))."""
    sd = np.sqrt(np.mean(w[np.triu_indices(w.shape[0], 1)] ** 2))
    d = 2.0 * np.asarray(betas) * sd
    log_density = np.log(d) - 0.5 * (d / 4.0) ** 2
    return log_density - logsumexp(log_density)


def brute_force(w, betas, alpha):
    """``(partitions, p(beta_k | W), p(pi | W), log p(W))`` by enumeration."""
    partitions = set_partitions(w.shape[0])
    joints = (gaussian_pair_beta_grid_log_joints(partitions, w, betas, alpha)
              + log_grid_prior(w, betas)[:, None])
    log_total = logsumexp(joints)
    return (partitions, np.exp(logsumexp(joints, axis=1) - log_total),
            np.exp(logsumexp(joints, axis=0) - log_total), log_total)


def assert_marginals_are_enumerations(est, partitions, p_pi):
    """Pairwise, number-of-clusters, cluster and together marginals of ``est`` equal the
    sums over the enumerated ``partitions`` weighed by their posterior ``p_pi``."""
    n = partitions.shape[1]
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
    assert_marginals_are_enumerations(est, partitions, p_pi)


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


def log_alpha_grid_prior(alphas, shape=1.0, rate=1.0):
    """The log of the Gamma(shape, rate) prior on ``alpha`` taken on its logarithmic grid,
    from its definition: density times ``alpha`` (the Jacobian), normalised."""
    alphas = np.asarray(alphas)
    log_density = (shape - 1.0) * np.log(alphas) - rate * alphas + np.log(alphas)
    return log_density - logsumexp(log_density)


def brute_force_alpha_beta(w, alphas, betas, alpha_prior=(1.0, 1.0)):
    """``(partitions, p(alpha_i, beta_k | W), p(pi | W), log p(W))`` by enumeration of
    all partitions x the two grids."""
    partitions = set_partitions(w.shape[0])
    log_beta_prior = log_grid_prior(w, betas)
    log_alpha_prior = log_alpha_grid_prior(alphas, *alpha_prior)
    joints = np.array([gaussian_pair_beta_grid_log_joints(partitions, w, betas, alpha)
                       + log_beta_prior[:, None] + log_a
                       for alpha, log_a in zip(alphas, log_alpha_prior)])
    log_total = logsumexp(joints)
    return (partitions, np.exp(logsumexp(joints, axis=2) - log_total),
            np.exp(logsumexp(joints, axis=(0, 1)) - log_total), log_total)


@pytest.mark.parametrize("n, seed, beta, alpha_prior", [(4, 0, 0.25, (1.0, 1.0)),
                                                        (5, 1, 0.5, (2.0, 0.5))])
def test_alpha_summed_out_matches_enumeration(n, seed, beta, alpha_prior):
    w = affinities(n, seed, beta)
    est = ExactCorrelationClustering(beta="posterior", alpha="posterior",
                                     alpha_prior=alpha_prior, affinity="precomputed").fit(w)
    np.testing.assert_allclose(np.log(est.alpha_grid_), LOG_ALPHA_GRID, atol=1e-12)
    partitions, p_grid, p_pi, log_evidence = brute_force_alpha_beta(
        w, est.alpha_grid_, est.beta_grid_, alpha_prior)
    np.testing.assert_allclose(est.alpha_posterior_, p_grid.sum(axis=1), atol=1e-12)
    np.testing.assert_allclose(est.beta_posterior_, p_grid.sum(axis=0), atol=1e-12)
    assert est.log_evidence_ == pytest.approx(log_evidence, abs=1e-9)
    mode = np.unravel_index(np.argmax(p_grid), p_grid.shape)
    assert (est.alpha_, est.beta_) == (est.alpha_grid_[mode[0]], est.beta_grid_[mode[1]])
    assert_marginals_are_enumerations(est, partitions, p_pi)


def test_alpha_summed_out_score_samples_match_enumeration():
    """``log p(w_x | W) = log sum_{i,k} p(alpha_i, beta_k | W) p(w_x | W, alpha_i, beta_k)``."""
    n = 3
    w = affinities(n + 1, 9)
    est = ExactCorrelationClustering(beta="posterior", alpha="posterior",
                                     affinity="precomputed").fit(w[:n, :n])
    _, p_grid, _, _ = brute_force_alpha_beta(w[:n, :n], est.alpha_grid_, est.beta_grid_)
    partitions = set_partitions(n + 1)
    terms = [(i, k, alpha, beta) for i, alpha in enumerate(est.alpha_grid_)
             for k, beta in enumerate(est.beta_grid_) if p_grid[i, k] > 0]
    want = []
    mean_sq = np.mean(w[:n, :n][np.triu_indices(n, 1)] ** 2)
    for i, k, alpha, beta in terms:
        b = 2.0 * beta
        variance = 2.0 * mean_sq / (1.0 + np.sqrt(1.0 + b * b * mean_sq))
        joint = gaussian_pair_log_joint(partitions, w, beta * variance, -beta * variance,
                                        variance, alpha)
        marginal = gaussian_pair_log_joint(partitions, w, beta * variance, -beta * variance,
                                           variance, alpha, n_scored=n)
        want.append(np.log(p_grid[i, k]) + logsumexp(joint) - logsumexp(marginal))
    assert est.score_samples(w[n:, :n])[0] == pytest.approx(logsumexp(want), abs=1e-9)


def test_alpha_summed_out_refusals():
    w = affinities(4, 7)
    with pytest.raises(ValueError, match="needs beta='posterior'"):
        ExactCorrelationClustering(beta="auto", alpha="posterior",
                                   affinity="precomputed").fit(w)
    with pytest.raises(ValueError, match="needs a prior on alpha"):
        ExactCorrelationClustering(beta="posterior", alpha="posterior", alpha_prior=None,
                                   affinity="precomputed").fit(w)
    with pytest.raises(ValueError, match="not both"):
        beta_posterior(w, alpha=1.0, alpha_prior=(1.0, 1.0))


# -- the grid's cost: no MAP, no marginals until used, no fit of a zero weight -------------
def _every_point_with_its_map(monkeypatch):
    """Make beta_posterior fit every grid point with the MAP and marginals (as it did)."""
    from sklearn_trellis.engines import beta_posterior as module
    fit = module.fit_flat_trellis
    monkeypatch.setattr(module.EvidenceBound, "upper", lambda self, *args: np.inf)
    monkeypatch.setattr(module, "fit_flat_trellis",
                        lambda model, family, *, max_items, **_: fit(model, family,
                                                                     max_items=max_items))


@pytest.mark.parametrize("params", [dict(), dict(alpha="posterior"),
                                    dict(method="sparse", alpha=1.0)], ids=str)
def test_lean_grid_changes_no_output(params, monkeypatch):
    """Fitting the grid without the MAP, the marginals deferred and the points of zero
    weight skipped gives bit for bit the outputs of fitting every point in full."""
    n = 40 if params.get("method") == "sparse" else 6 if params.get("alpha") else 7
    data = make_gaussian_pairs(n, beta=1.0, alpha=1.5, random_state=3)
    new = np.random.default_rng(0).normal(size=(2, n))
    fits = []
    for every in (False, True):
        if every:
            _every_point_with_its_map(monkeypatch)
        model = ExactCorrelationClustering(beta="posterior", affinity="precomputed",
                                           **params).fit(data.affinity)
        fits.append((model.beta_, model.alpha_, model.log_evidence_, model.noise_variance_,
                     model.beta_posterior_.tobytes(), model.labels_.tobytes(),
                     model.pairwise_marginals_.tobytes(),
                     model.n_clusters_distribution_.tobytes(),
                     model.score_samples(new).tobytes(), model.sample(3, 0).tobytes()))
    assert fits[0] == fits[1]


@pytest.mark.parametrize("alpha_prior", [None, (1.0, 1.0)])
def test_skipped_grid_points_weigh_exactly_zero(alpha_prior, monkeypatch):
    """Every skipped point's evidence (fitted anyway here) lies more than 746 nats below
    the largest: its weight exp(-746) is 0 in float64, and its bound was above it."""
    from sklearn_trellis.engines.beta_posterior import SKIPPED_LOG_WEIGHT
    from sklearn_trellis.engines.gaussian_pair_evidence import EvidenceBound, fit_flat_trellis
    from sklearn_trellis.models.correlation import CorrelationClusteringModel
    data = make_gaussian_pairs(8, beta=1.0, alpha=1.5, random_state=4)
    kwargs = dict(alpha=None if alpha_prior else 1.5, alpha_prior=alpha_prior)
    lean = beta_posterior(data.affinity, **kwargs)
    _every_point_with_its_map(monkeypatch)
    every = beta_posterior(data.affinity, **kwargs)
    skipped = np.flatnonzero(np.isnan(lean.log_evidences))
    assert skipped.size >= 5
    log_joint = every.log_evidences + every.log_prior
    assert np.all(log_joint[skipped] < log_joint.max() - SKIPPED_LOG_WEIGHT)
    assert np.all(np.exp(log_joint[skipped] - log_joint.max()) == 0.0)
    assert lean.log_evidence == every.log_evidence
    np.testing.assert_array_equal(lean.probabilities, every.probabilities)
    fitted = ~np.isnan(lean.log_evidences)
    np.testing.assert_array_equal(lean.log_evidences[fitted], every.log_evidences[fitted])
    # the bound the skips used, from each skipped point's fitted neighbour below
    bound = EvidenceBound(data.affinity, 0.0, 22)
    n_beta = lean.betas.size
    for k in skipped:
        below = max(j for j in np.flatnonzero(fitted) if j < k and j // n_beta == k // n_beta)
        b_below = 2.0 * lean.betas[below % n_beta]
        alpha_k = lean.alpha_of(k) if alpha_prior else 1.5
        fit = fit_flat_trellis(CorrelationClusteringModel(beta=b_below / 2.0, alpha=alpha_k)
                               .fit(data.affinity), max_items=22)
        upper = bound.upper(2.0 * lean.betas[k % n_beta], alpha_k, b_below,
                            fit.log_partition_function)
        assert upper >= every.log_evidences[k]


def test_the_family_bound_is_at_least_the_largest_pair_sum():
    """exact=False bounds the slope of log Z by the positive pairs' sum: at least the
    exact largest pair sum over all partitions (enumerated)."""
    from sklearn_trellis.engines.gaussian_pair_evidence import EvidenceBound
    w = make_gaussian_pairs(7, beta=1.0, random_state=5).affinity
    rows, cols = np.triu_indices(7, 1)
    largest = max(sum(w[i, j] for i, j in zip(rows, cols) if labels[i] == labels[j])
                  for labels in set_partitions(7))
    loose = EvidenceBound(w, 0.0, 22, exact=False).largest_pair_sum
    assert loose >= largest - 1e-12
    assert EvidenceBound(w, 0.0, 22).largest_pair_sum == pytest.approx(largest, abs=1e-12)
