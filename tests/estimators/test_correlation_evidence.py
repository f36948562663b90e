"""The Gaussian pair reading of ExactCorrelationClustering: evidence, score, empirical Bayes.

Every quantity against enumeration of all partitions (tests/oracles.py), the
gradient against finite differences, and recovery of beta on data drawn from
the model.
"""

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.model_selection import GridSearchCV, KFold

from oracles import (family_partitions, gaussian_pair_log_evidence, gaussian_pair_log_joint,
                     gaussian_pair_log_predictive, set_partitions)
from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.datasets import make_gaussian_pairs
from sklearn_trellis.engines.gaussian_pair_evidence import expected_n_clusters, log_alpha_prior
from sklearn_trellis.models.gaussian_pairs import (evidence_gradient, log_alpha_gradient,
                                                   log_bell, noise_variance, pair_moments)

PRIORS = [None, 0.7]


def random_similarity(rng, n):
    s = rng.standard_normal((n, n))
    s = (s + s.T) / 2
    np.fill_diagonal(s, 0.0)
    return s


def pair_means(est):
    """``(mu_same, mu_diff)`` of a fitted estimator."""
    half_gap = est.beta_ * est.noise_variance_
    return est.affinity_offset_ + half_gap, est.affinity_offset_ - half_gap


def draw_gaussian_pairs(seed, n, beta, alpha):
    """Affinities drawn from the model (CRP(alpha) partition, pairs N(+-beta, 1)) and labels."""
    data = make_gaussian_pairs(n, beta=beta, alpha=alpha, random_state=seed)
    return data.affinity, data.target


@pytest.mark.parametrize("alpha", PRIORS)
@pytest.mark.parametrize("n, seed", [(1, 0), (2, 1), (4, 2), (6, 3), (7, 4)])
def test_evidence_matches_enumeration(n, seed, alpha):
    rng = np.random.default_rng(seed)
    s = random_similarity(rng, n)
    est = ExactCorrelationClustering(beta=rng.uniform(0.1, 2.0), affinity="precomputed",
                                     center="auto" if n > 2 else True, alpha=alpha)
    est.set_params(beta="auto" if seed % 2 and n > 2 else est.beta).fit(s)
    if n == 1:
        assert est.log_evidence_ == pytest.approx(0.0, abs=1e-12)   # no pair, no data
        return
    mu_same, mu_diff = pair_means(est)
    assert est.alpha_ == alpha
    assert est.log_evidence_ == pytest.approx(
        gaussian_pair_log_evidence(s, mu_same, mu_diff, est.noise_variance_, alpha), abs=1e-9)


@pytest.mark.parametrize("params", [dict(), dict(beta="auto"),
                                    dict(beta="auto", center="auto")])
@pytest.mark.parametrize("n, seed", [(3, 30), (6, 31), (7, 32)])
@pytest.mark.parametrize("alpha_prior", [None, (1.0, 1.0), (2.0, 0.5)])
def test_learned_alpha_evidence_matches_enumeration(n, seed, params, alpha_prior):
    s = random_similarity(np.random.default_rng(seed), n)
    est = ExactCorrelationClustering(beta=1.0, affinity="precomputed", center=False,
                                     alpha="auto", alpha_prior=alpha_prior
                                     ).set_params(**params).fit(s)
    assert est.alpha == "auto" and 0 < est.alpha_ < np.inf
    mu_same, mu_diff = pair_means(est)
    assert est.log_evidence_ == pytest.approx(
        gaussian_pair_log_evidence(s, mu_same, mu_diff, est.noise_variance_, est.alpha_),
        abs=1e-9)
    # a maximum in log alpha of the evidence (+ the hyperprior's shape log alpha - rate alpha):
    # the gradient vanishes there
    prior = 0.0 if alpha_prior is None else alpha_prior[0] - alpha_prior[1] * est.alpha_
    assert log_alpha_gradient(est.alpha_, n, expected_n_clusters(est._trellis)) + prior == \
        pytest.approx(0.0, abs=1e-3)


def test_alpha_prior_posterior_mode_matches_a_grid():
    """The type-II MAP of alpha beats every alpha of a fine grid on evidence + log prior
    (the evidence itself from enumeration-checked fits at fixed alpha)."""
    s = random_similarity(np.random.default_rng(35), 7)
    params = dict(beta=0.7, affinity="precomputed", center=False)
    found = ExactCorrelationClustering(alpha="auto", alpha_prior=(2.0, 1.0), **params).fit(s)

    def objective(a):
        return (ExactCorrelationClustering(alpha=a, **params).fit(s).log_evidence_
                + log_alpha_prior(a, 2.0, 1.0))
    best = objective(found.alpha_)
    assert all(objective(a) <= best + 1e-8 for a in found.alpha_ * np.geomspace(0.5, 2, 9))
    plain = ExactCorrelationClustering(alpha="auto", alpha_prior=None, **params).fit(s)
    assert plain.log_evidence_ >= found.log_evidence_ - 1e-9


@pytest.mark.parametrize("alpha_prior", [(1.0,), (1.0, 0.0), (-1.0, 1.0), (np.nan, 1.0)])
def test_bad_alpha_prior_is_refused(alpha_prior):
    with pytest.raises(ValueError, match="alpha_prior must be a"):
        ExactCorrelationClustering(alpha="auto", alpha_prior=alpha_prior,
                                   affinity="precomputed").fit(np.eye(4))


@pytest.mark.parametrize("alpha", [0.3, 2.0])
def test_alpha_gradient_matches_enumeration_and_finite_differences(alpha):
    s = random_similarity(np.random.default_rng(33), 6)

    def fit(a):
        return ExactCorrelationClustering(beta=0.8, affinity="precomputed", center=False,
                                          alpha=a).fit(s)
    est = fit(alpha)
    parts = set_partitions(6)
    mu_same, mu_diff = pair_means(est)
    joint = gaussian_pair_log_joint(parts, s, mu_same, mu_diff, est.noise_variance_, alpha)
    posterior = np.exp(joint - logsumexp(joint))
    n_clusters = parts.max(axis=1) + 1
    assert expected_n_clusters(est._trellis) == pytest.approx(posterior @ n_clusters,
                                                              abs=1e-10)
    h = 1e-5   # the noise variance depends on beta only, so it stays fixed here
    numeric = (fit(alpha * np.exp(h)).log_evidence_
               - fit(alpha * np.exp(-h)).log_evidence_) / (2 * h)
    assert log_alpha_gradient(alpha, 6, expected_n_clusters(est._trellis)) == \
        pytest.approx(numeric, rel=1e-6, abs=1e-7)


def test_alpha_auto_sparse_runs_on_the_family():
    s = random_similarity(np.random.default_rng(34), 9)
    est = ExactCorrelationClustering(beta=1.0, affinity="precomputed", method="sparse",
                                     alpha="auto").fit(s)
    fixed = ExactCorrelationClustering(beta=1.0, affinity="precomputed", method="sparse",
                                       alpha=est.alpha_).fit(s)
    assert fixed.log_evidence_ == pytest.approx(est.log_evidence_, abs=1e-9)
    # the mode of evidence + the default hyperprior Gamma(1, 1): 1 - alpha in log alpha
    assert log_alpha_gradient(est.alpha_, 9, expected_n_clusters(est._trellis)) \
        + 1.0 - est.alpha_ == pytest.approx(0.0, abs=1e-3)


@pytest.mark.parametrize("alpha", PRIORS)
def test_feature_affinities_evidence_matches_enumeration(alpha):
    X = np.random.default_rng(5).standard_normal((6, 2))
    est = ExactCorrelationClustering(beta=3.0, alpha=alpha).fit(X)
    s = est.affinity_matrix_ + est.affinity_offset_
    np.fill_diagonal(s, 0.0)
    mu_same, mu_diff = pair_means(est)
    assert est.log_evidence_ == pytest.approx(
        gaussian_pair_log_evidence(s, mu_same, mu_diff, est.noise_variance_, alpha), abs=1e-9)


@pytest.mark.parametrize("alpha", PRIORS)
def test_noise_variance_maximises_the_evidence(alpha):
    s = random_similarity(np.random.default_rng(6), 5)
    est = ExactCorrelationClustering(beta=0.9, affinity="precomputed", alpha=alpha).fit(s)
    b, c = 2 * est.beta_, est.affinity_offset_

    def evidence(variance):   # (b, c) fixed: the means move with the variance
        return gaussian_pair_log_evidence(s, c + b * variance / 2, c - b * variance / 2,
                                          variance, alpha)
    best = evidence(est.noise_variance_)
    for factor in (0.9, 0.99, 1.01, 1.1):
        assert evidence(factor * est.noise_variance_) < best


def test_noise_variance_small_b_limit():
    assert noise_variance(1e-12, 10, 20.0) == pytest.approx(2.0)
    assert noise_variance(0.0, 10, 20.0) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="two items"):
        noise_variance(1.0, 0, 0.0)


def test_log_bell():
    assert [round(float(np.exp(log_bell(n)))) for n in range(9)] == \
        [1, 1, 2, 5, 15, 52, 203, 877, 4140]


@pytest.mark.parametrize("alpha", PRIORS)
@pytest.mark.parametrize("n, seed", [(1, 10), (3, 11), (5, 12), (6, 13)])
def test_score_samples_match_enumeration(n, seed, alpha):
    rng = np.random.default_rng(seed)
    s = random_similarity(rng, n + 3)
    if n == 1:
        est = ExactCorrelationClustering(affinity="precomputed").fit(s[:1, :1])
        with pytest.raises(ValueError, match="at least two items"):
            est.score(s[1:, :1])
        return
    est = ExactCorrelationClustering(beta=rng.uniform(0.2, 2.0), affinity="precomputed",
                                     center="auto", alpha=alpha).fit(s[:n, :n])
    mu_same, mu_diff = pair_means(est)
    got = est.score_samples(s[n:, :n])
    for k in range(3):
        rows = list(range(n)) + [n + k]
        assert got[k] == pytest.approx(gaussian_pair_log_predictive(
            s[np.ix_(rows, rows)], mu_same, mu_diff, est.noise_variance_, alpha), abs=1e-9)
    assert est.score(s[n:, :n]) == pytest.approx(got.mean())


def test_score_with_feature_rows_matches_precomputed():
    rng = np.random.default_rng(14)
    X = rng.standard_normal((9, 2))
    est = ExactCorrelationClustering(beta=2.0, alpha=1.0).fit(X[:6])
    s = np.exp(-np.linalg.norm(X[:, None] - X[None, :], axis=2))
    np.fill_diagonal(s, 0.0)
    pre = ExactCorrelationClustering(beta=2.0, alpha=1.0, affinity="precomputed",
                                     center="auto").fit(s[:6, :6])
    mu_same, mu_diff = pair_means(est)
    rows = list(range(6)) + [7]
    assert est.score_samples(X[7:8])[0] == pytest.approx(gaussian_pair_log_predictive(
        s[np.ix_(rows, rows)], mu_same, mu_diff, est.noise_variance_, 1.0), abs=1e-9)
    assert np.isfinite(pre.score(s[6:, :6]))
    np.testing.assert_array_equal(pre.predict(s[6:, :6]), est.predict(X[6:]))


@pytest.mark.parametrize("alpha", PRIORS)
def test_sparse_evidence_and_score_are_the_familys(alpha):
    rng = np.random.default_rng(15)
    s = random_similarity(rng, 8)
    est = ExactCorrelationClustering(beta=1.2, affinity="precomputed", method="sparse",
                                     alpha=alpha).fit(s[:7, :7])
    family = est._trellis.family
    clusters = [frozenset(family.members(v).tolist()) for v in range(family.n_vertices)]
    parts, _ = family_partitions(7, clusters, lambda cluster: 0.0)
    mu_same, mu_diff = pair_means(est)
    var = est.noise_variance_
    # the full space's prior, summed over the family's partitions only
    exact_prior = gaussian_pair_log_joint(parts, s[:7, :7], mu_same, mu_diff, var, alpha)
    if alpha is None:
        exact_prior += np.log(len(parts)) - log_bell(7)
    assert est.log_evidence_ == pytest.approx(logsumexp(exact_prior), abs=1e-9)
    exact = ExactCorrelationClustering(beta=1.2, affinity="precomputed",
                                       alpha=alpha).fit(s[:7, :7])
    assert est.log_evidence_ <= exact.log_evidence_ + 1e-12
    assert np.isfinite(est.score(s[7:, :7]))


@pytest.mark.parametrize("alpha", PRIORS)
def test_evidence_gradient_matches_finite_differences(alpha):
    s = random_similarity(np.random.default_rng(16), 6)

    def evidence(b, c):
        est = ExactCorrelationClustering(beta=b / 2, affinity="precomputed", center=False,
                                         alpha=alpha).fit(s - c)
        return est.log_evidence_, est

    for b, c in [(0.7, 0.1), (2.5, -0.3)]:
        _, est = evidence(b, c)
        grad = evidence_gradient(b, est.noise_variance_, est.affinity_matrix_,
                                 est.pairwise_marginals_)
        h = 1e-5
        d_b = (evidence(b + h, c)[0] - evidence(b - h, c)[0]) / (2 * h)
        d_c = (evidence(b, c + h)[0] - evidence(b, c - h)[0]) / (2 * h)
        np.testing.assert_allclose(grad, [d_b, d_c], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("center", ["auto", False])
def test_auto_maximises_the_evidence(center):
    s, _ = draw_gaussian_pairs(18, 7, 1.5, 1.0)   # four clusters: structure to find
    auto = ExactCorrelationClustering(beta="auto", affinity="precomputed", center=center,
                                      alpha=1.0).fit(s)
    assert auto.beta_ >= 0 and auto.beta != auto.beta_
    for factor in (0.8, 1.25):
        other = ExactCorrelationClustering(beta=factor * auto.beta_, affinity="precomputed",
                                           center=False, alpha=1.0)
        assert other.fit(s - auto.affinity_offset_).log_evidence_ < auto.log_evidence_
    if center == "auto":
        for shift in (-0.05, 0.05):
            other = ExactCorrelationClustering(beta=auto.beta_, affinity="precomputed",
                                               center=False, alpha=1.0)
            assert other.fit(s - auto.affinity_offset_ - shift).log_evidence_ < \
                auto.log_evidence_
    else:
        assert auto.affinity_offset_ == 0.0


@pytest.mark.parametrize("params", [dict(center="auto"), dict(beta="auto")])
def test_auto_needs_three_items(params):
    with pytest.raises(ValueError, match="at least 3 items"):
        ExactCorrelationClustering(affinity="precomputed", **params).fit(np.eye(2))


def test_given_beta_is_kept_and_center_offset_is_the_mean():
    X = np.random.default_rng(18).standard_normal((6, 2))
    est = ExactCorrelationClustering(beta=0.4).fit(X)
    assert est.beta_ == 0.4
    s = est.affinity_matrix_ + est.affinity_offset_
    np.fill_diagonal(s, 0.0)
    assert est.affinity_offset_ == pytest.approx(s.sum() / 30)
    assert ExactCorrelationClustering(beta=0.4, center=False).fit(X).affinity_offset_ == 0.0


def test_auto_recovers_beta_on_model_data():
    """Median over draws of 12 items, CRP(1.5) partitions, pairs N(+-0.5, 1): beta = 0.5."""
    selected = []
    for seed in range(3):
        w, _ = draw_gaussian_pairs(seed, 12, 0.5, 1.5)
        est = ExactCorrelationClustering(beta="auto", affinity="precomputed", center=False,
                                         alpha=1.5).fit(w)
        selected.append(est.beta_)
    assert 0.3 < np.median(selected) < 0.8


def test_grid_search_default_scoring_recovers_beta():
    w, _ = draw_gaussian_pairs(3, 14, 0.5, 1.5)
    grid = GridSearchCV(ExactCorrelationClustering(affinity="precomputed", center=False,
                                                   alpha=1.5),
                        {"beta": [0.05, 0.5, 5.0]}, cv=KFold(3, shuffle=True, random_state=0))
    assert grid.fit(w).best_params_["beta"] == 0.5


def test_score_is_not_maximised_by_large_beta():
    X = np.r_[np.random.default_rng(19).normal(0, 0.3, (5, 2)),
              np.random.default_rng(20).normal(3, 0.3, (5, 2))]
    scores = [ExactCorrelationClustering(beta=beta).fit(X[::2]).score(X[1::2])
              for beta in (0.1, 3.0, 1000.0)]
    assert scores[2] < scores[1]


@pytest.mark.slow
def test_grid_search_default_scoring_recovers_beta_within_15_percent():
    selected = []
    grid_values = np.geomspace(0.2, 1.25, 9)
    for seed in range(5):
        w, _ = draw_gaussian_pairs(100 + seed, 16, 0.5, 1.5)
        grid = GridSearchCV(ExactCorrelationClustering(affinity="precomputed", center=False,
                                                       alpha=1.5),
                            {"beta": grid_values}, cv=KFold(4, shuffle=True, random_state=0))
        selected.append(grid.fit(w).best_params_["beta"])
    assert abs(np.median(selected) / 0.5 - 1) < 0.3


@pytest.mark.slow
def test_alpha_hyperprior_calibrates_marginals_on_model_data():
    """On data from the model with few clusters (true beta 0.5, alpha 0.5), plain empirical
    Bayes of alpha runs to alpha -> 0 and its marginals are overconfident; the default
    hyperprior keeps the pooled ECE of 16 draws near the goal (bench_calibration: 0.045)."""
    from sklearn_trellis.metrics import expected_calibration_error, pair_targets

    def pooled_ece(alpha_prior):
        targets, probabilities = [], []
        for draw in range(16):
            data = make_gaussian_pairs(12, beta=0.5, alpha=0.5, random_state=100 + draw)
            est = ExactCorrelationClustering(beta="auto", alpha="auto", alpha_prior=alpha_prior,
                                             affinity="precomputed").fit(data.affinity)
            t, p = pair_targets(data.target, est.pairwise_marginals_)
            targets.append(t)
            probabilities.append(p)
        return expected_calibration_error([0], np.concatenate(probabilities)[None, :],
                                          y_reference=1 - np.concatenate(targets))
    with_prior, plain = pooled_ece((1.0, 1.0)), pooled_ece(None)
    assert with_prior < 0.06 and with_prior < plain - 0.02


def test_the_default_beta_is_empirical_bayes():
    X = np.random.default_rng(21).standard_normal((7, 2))
    default, auto = ExactCorrelationClustering().fit(X), ExactCorrelationClustering(
        beta="auto").fit(X)
    assert default.beta_ == auto.beta_ != 1.0
    np.testing.assert_array_equal(default.pairwise_marginals_, auto.pairwise_marginals_)
    # one item has one clustering: nothing to learn, nothing depends on beta
    single = ExactCorrelationClustering().fit(X[:1])
    assert single.beta_ == 1.0 and single.labels_.tolist() == [0]
    assert single.log_partition_function_ == 0.0
    with pytest.raises(ValueError, match=r"the default.*beta=1\.0"):
        ExactCorrelationClustering().fit(X[:2])


def test_grid_search_over_beta_with_the_default_estimator():
    # The default (beta='auto') is overridden by a grid of floats, which the default scoring
    # compares on the same held-out affinities; 'auto' may join the grid as a candidate.
    w = make_gaussian_pairs(14, beta=0.5, alpha=None, random_state=5).affinity
    cv = KFold(3, shuffle=True, random_state=0)
    grid = GridSearchCV(ExactCorrelationClustering(affinity="precomputed"),
                        {"beta": [0.05, 0.5, 5.0]}, cv=cv).fit(w)
    assert grid.best_params_["beta"] == 0.5 and grid.best_estimator_.beta_ == 0.5
    mixed = GridSearchCV(ExactCorrelationClustering(affinity="precomputed"),
                         {"beta": [0.05, 0.5, 5.0, "auto"]}, cv=cv).fit(w)
    scores = mixed.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    np.testing.assert_array_equal(scores[:3], grid.cv_results_["mean_test_score"])
    assert scores[2] < scores[3] and scores[3] > scores[:3].max() - 0.5   # -13.24 vs -13.14


def test_the_default_is_unit_free_on_precomputed_affinities():
    # Scaling the affinities by c scales the learned beta_ by 1 / c: the same distribution.
    w = make_gaussian_pairs(8, beta=0.5, alpha=None, random_state=2).affinity
    base = ExactCorrelationClustering(affinity="precomputed").fit(w)
    for c in (0.01, 1e3):
        scaled = ExactCorrelationClustering(affinity="precomputed").fit(c * w)
        assert scaled.beta_ * c == pytest.approx(base.beta_, rel=1e-9)
        np.testing.assert_allclose(scaled.pairwise_marginals_, base.pairwise_marginals_,
                                   atol=1e-10)


@pytest.mark.parametrize("alpha", PRIORS)
def test_evidence_bound_lies_above_the_evidence(alpha):
    """The bound the empirical Bayes grid skips points by: its largest pair sum is the
    largest over all partitions, and above a fitted ``b0`` it is at least the evidence
    (equal at ``b0`` but for its rounding slack), against enumeration."""
    from sklearn_trellis.engines.exact.flat import ExactFlatTrellis
    from sklearn_trellis.engines.gaussian_pair_evidence import EvidenceBound
    from sklearn_trellis.models.correlation import CorrelationClusteringModel
    rng = np.random.default_rng(11)
    s = random_similarity(rng, 6) + 0.3
    np.fill_diagonal(s, 0.0)
    offset = 0.2
    bound = EvidenceBound(s, offset, 22)
    shifted = s - offset
    rows, cols = np.triu_indices(6, 1)
    largest = max(sum(shifted[i, j] for i, j in zip(rows, cols) if labels[i] == labels[j])
                  for labels in set_partitions(6))
    assert bound.largest_pair_sum == pytest.approx(largest, abs=1e-12)
    n_pairs, _, sum_sq = pair_moments(np.where(np.eye(6, dtype=bool), 0.0, shifted))
    for b0 in (0.3, 2.0):
        model = CorrelationClusteringModel(beta=b0 / 2.0, alpha=alpha).fit(shifted)
        log_z = ExactFlatTrellis(model.log_potential_table()).fit().log_partition_function
        for factor in (1.0, 1.5, 4.0, 30.0):
            b = factor * b0
            variance = noise_variance(b, n_pairs, sum_sq)
            half_gap = b * variance / 2.0
            exact = gaussian_pair_log_evidence(s, offset + half_gap, offset - half_gap,
                                               variance, alpha)
            upper = bound.upper(b, alpha, b0, log_z)
            assert upper >= exact
            if factor == 1.0:   # equal up to the rounding slack
                assert upper - exact < 1e-7


@pytest.mark.parametrize("learn", [dict(), dict(learn_offset=True),
                                   dict(learn_alpha=True, alpha=1.0)])
def test_grid_skipping_changes_nothing_but_the_fits(learn, monkeypatch):
    """Empirical Bayes with the grid's bound finds bit for bit what it finds with every
    grid point fitted, in fewer trellis fits."""
    from sklearn_trellis.engines import gaussian_pair_evidence
    s, _ = draw_gaussian_pairs(3, 7, 1.5, 1.0)
    kwargs = dict(beta=1.0, offset=0.1, learn_beta=True, learn_offset=False)
    kwargs.update(learn)
    lean = gaussian_pair_evidence.maximise_evidence(s, **kwargs)
    monkeypatch.setattr(gaussian_pair_evidence.EvidenceBound, "upper",
                        lambda self, *args: np.inf)
    every = gaussian_pair_evidence.maximise_evidence(s, **kwargs)
    assert (lean.beta, lean.offset, lean.alpha, lean.log_evidence) == \
        (every.beta, every.offset, every.alpha, every.log_evidence)
    assert lean.n_evaluations < every.n_evaluations
