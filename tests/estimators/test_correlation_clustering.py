"""ExactCorrelationClustering against brute-force enumeration, plus API behaviour."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import logsumexp
from sklearn.model_selection import GridSearchCV

from oracles import (canonical, cluster_probability, correlation_log_potentials,
                         flat_summaries, random_subsets, set_partitions,
                         together_probability)
from sklearn_trellis import ExactCorrelationClustering


def random_affinity(rng, n, scale=1.0):
    a = scale * rng.standard_normal((n, n))
    a = (a + a.T) / 2
    np.fill_diagonal(a, 0.0)
    return a


def assert_matches_enumeration(model, w, beta, rng, n_subsets=5):
    n = w.shape[0]
    parts = set_partitions(n)
    log_phi = correlation_log_potentials(parts, w, beta)
    ref = flat_summaries(parts, log_phi)
    tol = 1e-9 * max(1.0, abs(ref["log_z"]))
    assert model.log_partition_function_ == pytest.approx(ref["log_z"], abs=tol)
    assert model.map_log_potential_ == pytest.approx(ref["map_log_phi"], abs=tol)
    assert model.log_potential(model.labels_) == pytest.approx(ref["map_log_phi"], abs=tol)
    np.testing.assert_allclose(model.pairwise_marginals_, ref["pairwise"], atol=1e-9)
    np.testing.assert_allclose(model.n_clusters_distribution_, ref["k_dist"], atol=1e-9)
    for subset in random_subsets(rng, n, n_subsets):
        assert model.cluster_marginal(subset) == pytest.approx(
            cluster_probability(parts, ref["probs"], subset), abs=1e-9)
        assert model.together_marginal(subset) == pytest.approx(
            together_probability(parts, ref["probs"], subset), abs=1e-9)
    return ref


@pytest.mark.parametrize("n", [1, 2, 4, 6, 9])
@pytest.mark.parametrize("beta", [0.0, 0.5, 3.0, 800.0])
def test_precomputed_matches_enumeration(n, beta):
    rng = np.random.default_rng(n * 1000 + int(beta))
    w = random_affinity(rng, n)
    model = ExactCorrelationClustering(beta=beta, affinity="precomputed").fit(w)
    assert_matches_enumeration(model, w, beta, rng)


def test_large_beta_overflows_phi_but_not_log_z():
    rng = np.random.default_rng(3)
    w = random_affinity(rng, 8, scale=5.0)
    model = ExactCorrelationClustering(beta=200.0, affinity="precomputed").fit(w)
    assert model.map_log_potential_ > 800  # exp() of it overflows float64
    assert model.partition_function_ == np.inf
    assert_matches_enumeration(model, w, 200.0, rng)


@pytest.mark.parametrize("affinity", ["exp_euclidean", "rbf"])
def test_feature_affinities_match_enumeration(affinity):
    rng = np.random.default_rng(11)
    X = rng.standard_normal((7, 3))
    model = ExactCorrelationClustering(beta=2.0, affinity=affinity).fit(X)
    w = model.affinity_matrix_
    assert np.allclose(w, w.T) and np.all(np.diag(w) == 0)
    off = w[~np.eye(7, dtype=bool)]
    assert off.mean() == pytest.approx(0.0, abs=1e-12)  # centred
    assert_matches_enumeration(model, w, 2.0, rng)


def test_exp_euclidean_is_the_papers_similarity():
    X = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    model = ExactCorrelationClustering(beta=1.0, center=False).fit(X)
    assert model.affinity_matrix_[0, 1] == pytest.approx(np.exp(-5.0))
    assert model.affinity_offset_ == 0.0


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 7), beta=st.floats(0.0, 50.0),
       seed=st.integers(0, 2 ** 31 - 1))
def test_property_random_instances(n, beta, seed):
    rng = np.random.default_rng(seed)
    w = random_affinity(rng, n, scale=rng.uniform(0.1, 5.0))
    model = ExactCorrelationClustering(beta=beta, affinity="precomputed").fit(w)
    assert_matches_enumeration(model, w, beta, rng, n_subsets=2)
    # invariants that hold for any instance
    assert model.n_clusters_distribution_.sum() == pytest.approx(1.0)
    assert model.map_log_potential_ <= model.log_partition_function_ + 1e-9


def constant_affinity_summaries(n, c, beta):
    """log Z, the number-of-clusters distribution and its joint with one pair being
    together (``P(K = k, i ~ j)``; summed over k, the pairwise marginal) of correlation
    clustering with every affinity equal to ``c``, by the recursion on the block of the
    last item (the exponential formula; no trellis): a block of ``m`` items has
    log-potential ``beta * c * m * (m - 1)``, less ``beta * c * n * (n - 1) / 2`` overall."""
    def log_binom(a, b):
        return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)

    log_block = [beta * c * m * (m - 1) for m in range(n + 1)]
    # log_a[i, k]: log of the sum over partitions of i items into k blocks of their potential
    log_a = np.full((n + 1, n + 1), -np.inf)
    log_a[0, 0] = 0.0
    for i in range(1, n + 1):
        for k in range(1, i + 1):
            log_a[i, k] = logsumexp([log_binom(i - 1, m - 1) + log_block[m] + log_a[i - m, k - 1]
                                     for m in range(1, i - k + 2)])
    log_all = logsumexp(log_a, axis=1)   # every number of blocks, for each number of items
    log_z = log_all[n] - beta * c * n * (n - 1) / 2
    # the pair is the last two items; their block has m >= 2 items, the rest k - 1 blocks
    together_and_k = np.array([np.exp(logsumexp(
        [log_binom(n - 2, m - 2) + log_block[m] + log_a[n - m, k - 1]
         for m in range(2, n - k + 2)]) - log_all[n]) if k < n else 0.0
        for k in range(1, n + 1)])
    return log_z, np.exp(log_a[n, 1:] - log_all[n]), together_and_k


def test_exact_engine_at_n20_matches_the_closed_form():
    """At n = 20, the largest exact size, and n = 19, the smallest that runs every
    parallel and linear-space kernel in every pass (a layer of 2**18 subsets), against an
    independent computation: constant affinities (the recursion above) at n = 20 for log Z,
    the MAP and the pairwise marginals; then at n = 19 one pair's affinity shifted by
    delta, which multiplies each partition's potential by e^(beta delta) if the pair is
    together, else by e^(-beta delta): so log Z, that pair's marginal and the number of
    clusters distribution follow exactly from the constant-affinity recursion. (One fit
    per size: the number-of-clusters pass at n = 20 alone costs 2.5 CPU s.)"""
    parts = set_partitions(7)   # the recursion itself, against enumeration
    w7 = np.full((7, 7), 0.4) - 0.4 * np.eye(7)
    ref = flat_summaries(parts, correlation_log_potentials(parts, w7, 1.5))
    log_z, n_clusters, together_and_k = constant_affinity_summaries(7, 0.4, 1.5)
    assert log_z == pytest.approx(ref["log_z"], rel=1e-13)
    np.testing.assert_allclose(n_clusters, ref["k_dist"], atol=1e-13)
    pair_together = parts[:, 5] == parts[:, 6]
    np.testing.assert_allclose(together_and_k, np.bincount(
        parts.max(axis=1)[pair_together], weights=ref["probs"][pair_together], minlength=7),
        atol=1e-13)
    assert together_and_k.sum() == pytest.approx(ref["pairwise"][2, 5], rel=1e-12)
    c, beta, delta = 0.03, 1.0, 0.7
    n = 20
    w = np.full((n, n), c)
    np.fill_diagonal(w, 0.0)
    model = ExactCorrelationClustering(beta=beta, affinity="precomputed", method="exact").fit(w)
    log_z, n_clusters, together_and_k = constant_affinity_summaries(n, c, beta)
    assert model.log_partition_function_ == pytest.approx(log_z, rel=1e-12)
    assert model.map_log_potential_ == pytest.approx(beta * c * n * (n - 1) / 2, rel=1e-12)
    assert model.n_clusters_ == 1
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(model.pairwise_marginals_[off], together_and_k.sum(),
                               rtol=1e-10)
    n = 19
    log_z, n_clusters, together_and_k = constant_affinity_summaries(n, c, beta)
    together = together_and_k.sum()
    assert 0.1 < n_clusters.max() < 0.5   # spread over several numbers of clusters
    shifted = np.full((n, n), c)
    np.fill_diagonal(shifted, 0.0)
    shifted[3, 17] = shifted[17, 3] = c + delta
    moved = ExactCorrelationClustering(beta=beta, affinity="precomputed",
                                       method="exact").fit(shifted)
    gain = moved.log_partition_function_ - log_z
    up, down = np.exp(beta * delta), np.exp(-beta * delta)
    assert gain == pytest.approx(np.log(together * up + (1 - together) * down), abs=1e-10)
    p_moved = moved.pairwise_marginals_[3, 17]
    assert -gain == pytest.approx(np.log(p_moved * down + (1 - p_moved) * up), abs=1e-10)
    assert moved.map_log_potential_ == pytest.approx(
        beta * (c * n * (n - 1) / 2 + delta), rel=1e-12)
    np.testing.assert_allclose(
        moved.n_clusters_distribution_,
        (together_and_k * up + (n_clusters - together_and_k) * down) / np.exp(gain), atol=1e-12)


def test_samples_follow_the_exact_distribution():
    rng = np.random.default_rng(5)
    n = 5
    w = random_affinity(rng, n)
    model = ExactCorrelationClustering(beta=1.0, affinity="precomputed",
                                       random_state=0).fit(w)
    parts = set_partitions(n)
    ref = flat_summaries(parts, correlation_log_potentials(parts, w, 1.0))
    draws = model.sample(30000)
    index = {tuple(p): i for i, p in enumerate(parts)}
    counts = np.bincount([index[canonical(d)] for d in draws], minlength=len(parts))
    expected = ref["probs"] * len(draws)
    keep = expected > 5
    chi2 = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4
    # empirical co-clustering is within Monte Carlo error of the exact marginals
    same = (draws[:, :, None] == draws[:, None, :]).mean(axis=0)
    se = np.sqrt(model.pairwise_marginals_ * (1 - model.pairwise_marginals_) / len(draws))
    assert np.all(np.abs(same - model.pairwise_marginals_) <= 5 * se + 1e-12)


def test_sample_random_state():
    X = np.random.default_rng(0).standard_normal((6, 2))
    model = ExactCorrelationClustering(beta=1.0, random_state=3).fit(X)
    np.testing.assert_array_equal(model.sample(20), model.sample(20))
    np.testing.assert_array_equal(model.sample(20, random_state=1),
                                  model.sample(20, random_state=1))
    assert not np.array_equal(model.sample(20, random_state=1),
                              model.sample(20, random_state=2))
    assert model.sample(4).shape == (4, 6)


def test_predict_assigns_to_best_cluster():
    X = np.array([[0.0], [0.2], [0.1], [6.0], [6.2], [6.1]])
    model = ExactCorrelationClustering(beta=5.0).fit(X)
    assert model.n_clusters_ == 2
    pred = model.predict(np.array([[0.05], [6.05]]))
    assert pred[0] == model.labels_[0] and pred[1] == model.labels_[3]
    gains = model.model_.assignment_gains(
        np.exp(-np.abs(np.array([[0.05]]) - X.T)) - model.affinity_offset_, model.labels_)
    assert np.argmax(gains[0, :-1]) == pred[0]


def test_precomputed_predicts_from_affinities_to_the_fitted_items():
    w = random_affinity(np.random.default_rng(0), 6)
    model = ExactCorrelationClustering(beta=1.0, affinity="precomputed").fit(w[:4, :4])
    gains = model.model_.assignment_gains(w[4:, :4], model.labels_)
    np.testing.assert_array_equal(model.predict(w[4:, :4]), np.argmax(gains[:, :-1], axis=1))
    assert np.isfinite(model.score(w[4:, :4]))
    with pytest.raises(ValueError, match="features"):
        model.predict(w[4:, :5])


def test_fit_predict_equals_labels():
    X = np.random.default_rng(2).standard_normal((8, 2))
    model = ExactCorrelationClustering(beta=3.0)
    np.testing.assert_array_equal(model.fit_predict(X), model.labels_)


def test_grid_search_over_beta():
    X = np.random.default_rng(2).standard_normal((12, 2))
    search = GridSearchCV(ExactCorrelationClustering(), {"beta": [0.5, 2.0]}, cv=2)
    search.fit(X)
    assert search.best_params_["beta"] in (0.5, 2.0)


@pytest.mark.parametrize("X, match", [
    (np.array([[0.0, np.nan], [1.0, 2.0]]), "NaN"),
    (np.array([[0.0, np.inf], [1.0, 2.0]]), "infinity"),
    (np.zeros((0, 2)), "0 sample"),
])
def test_bad_feature_input(X, match):
    with pytest.raises(ValueError, match=match):
        ExactCorrelationClustering().fit(X)


def test_bad_precomputed_input():
    with pytest.raises(ValueError, match="square"):
        ExactCorrelationClustering(affinity="precomputed").fit(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="symmetric"):
        ExactCorrelationClustering(affinity="precomputed").fit(np.arange(9.0).reshape(3, 3))
    with pytest.raises(ValueError, match="NaN"):
        ExactCorrelationClustering(affinity="precomputed").fit(np.full((3, 3), np.nan))


def test_too_many_items_refused_before_work():
    X = np.zeros((40, 2))
    with pytest.raises(ValueError, match=r"N=40 is above the exact limit.*memory.*CPU time"):
        ExactCorrelationClustering(method="exact").fit(X)
    with pytest.raises(ValueError, match="above the exact limit of 5"):
        ExactCorrelationClustering(max_exact_size=5, method="exact").fit(np.zeros((6, 1)))


@pytest.mark.parametrize("params, error", [
    ({"beta": -1.0}, ValueError), ({"beta": "a"}, TypeError),
    ({"affinity": "cosine"}, ValueError), ({"method": "fast"}, ValueError),
    ({"center": "yes"}, TypeError), ({"gamma": 0.0}, ValueError),
    ({"max_exact_size": 0}, ValueError), ({"seed_linkages": "median"}, ValueError),
    ({"seed_linkages": []}, ValueError), ({"seed_linkages": 3}, TypeError),
    ({"time_limit": 0.0}, ValueError), ({"n_perturbations": 0}, ValueError),
])
def test_bad_parameters(params, error):
    with pytest.raises(error):
        ExactCorrelationClustering(**params).fit(np.zeros((3, 2)))


def test_callable_affinity():
    X = np.random.default_rng(0).standard_normal((5, 2))
    model = ExactCorrelationClustering(beta=1.0, affinity=lambda A, B: A @ B.T,
                                       center=False).fit(X)
    expected = X @ X.T
    np.fill_diagonal(expected, 0)
    np.testing.assert_allclose(model.affinity_matrix_, expected)


@pytest.mark.parametrize("method", ["exact", "sparse"])
def test_log_potential_refuses_nan_labels(method):
    # NaN equals no label: its items silently joined no cluster, and log_potential
    # returned the value of a partition of the other items.
    rng = np.random.default_rng(0)
    model = ExactCorrelationClustering(affinity="precomputed", method=method).fit(
        random_affinity(rng, 5))
    labels = np.array([0.0, 0.0, 1.0, 1.0, 2.0])
    value = model.log_potential(labels)
    assert model.log_potential(labels * 7 - 3) == value  # gaps and signs name the same clusters
    labels[4] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values \(items 4\)"):
        model.log_potential(labels)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_vi_estimate_is_the_brute_force_minimiser(seed, monkeypatch):
    """On the exact trellis point_estimate='vi' is searched on its exact expected value
    (cluster marginals), not on draws: the minimiser over all 203 partitions of 6 items
    under the enumerated posterior, whatever random_state."""
    from oracles import partition_losses, set_partitions

    from sklearn_trellis.engines.exact.flat import ExactFlatTrellis

    def no_draws(*args, **kwargs):
        raise AssertionError("the exact VI estimate read draws")

    monkeypatch.setattr(ExactFlatTrellis, "sample", no_draws)
    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 1.0, (6, 6))
    w = (w + w.T) / 2
    np.fill_diagonal(w, 0.0)
    fits = [ExactCorrelationClustering(affinity="precomputed", beta=1.5, point_estimate="vi",
                                       random_state=r).fit(w) for r in (0, 1)]
    partitions = set_partitions(6)
    log_p = np.array([fits[0].log_potential(z) for z in partitions])
    posterior = np.exp(log_p - logsumexp(log_p))
    expected = partition_losses(partitions, partitions, "vi") @ posterior
    for fitted in fits:
        got = expected[np.flatnonzero([np.array_equal(z, fitted.labels_)
                                       for z in set_partitions(6)])]
        assert got.size == 1 and got[0] == pytest.approx(expected.min(), abs=1e-10)
