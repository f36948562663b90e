"""Issue 18 items 1, 3, 5-11: no silent wrong answer, clear errors, unit-free priors."""

import numpy as np
import pytest
from oracles import correlation_pairwise_by_enumeration

from sklearn_trellis import DPMixture, ExactCorrelationClustering, FastTIWD
from sklearn_trellis.datasets import make_wishart_blocks
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.models import BetaBernoulli
from sklearn_trellis.summaries import point_estimate


def _binary(seed, p, n=40):
    return (np.random.default_rng(seed).random((n, 5)) < p).astype(float)


def _blobs(n=30, seed=0, gap=8.0):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    X[n // 2:] += gap
    return X


# -- item 1: warm start with new data -------------------------------------------------
def test_dp_mixture_warm_start_with_new_data_recomputes_statistics():
    X1, X2 = _binary(0, 0.2), _binary(1, 0.8)
    params = dict(likelihood=BetaBernoulli(a=1.0, b=3.0), method="gibbs", n_sweeps=30,
                  random_state=0)
    model = DPMixture(warm_start=True, **params).fit(X1)
    model.fit(X2)
    cold = DPMixture(**params).fit(X2)
    # the samples of X1 are dropped; a burn-in is run as the old state only initialises
    assert model.samples_.shape == cold.samples_.shape
    lik = BetaBernoulli(a=1.0, b=3.0).fit(X2)
    data = lik.kernel_data(X2)
    for labels, log_joint, alpha in zip(model.samples_, model.log_joints_, model.alphas_):
        state = gibbs.new_state(lik, data, labels, alpha)
        expected = gibbs.log_joint(state, lik, model.prior_.with_alpha(alpha).kernel_params())
        assert np.isfinite(log_joint)
        assert log_joint == pytest.approx(expected, rel=1e-10, abs=1e-8)


def test_dp_mixture_warm_start_new_data_starts_from_the_last_state(monkeypatch):
    X1 = _blobs(seed=0)
    model = DPMixture(method="gibbs", n_sweeps=10, warm_start=True, random_state=0).fit(X1)
    last = [s.compact_labels() for s in model._chains.states]
    seen = {}
    original = gibbs.run_chains

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(gibbs, "run_chains", spy)
    model.fit(X1 + 0.01)
    starts = [s.compact_labels() for s in seen["states"]]
    for a, b in zip(last, starts):
        np.testing.assert_array_equal(a, b)
    assert model.samples_.shape[0] == 5  # new burn-in, the old samples dropped


def test_fast_tiwd_warm_start_with_new_data_uses_it():
    D1 = make_wishart_blocks(n_samples=30, random_state=1).distances
    D2 = make_wishart_blocks(n_samples=30, random_state=2).distances
    model = FastTIWD(n_sweeps=20, warm_start=True, random_state=0).fit(D1)
    model.fit(D2)
    cold = FastTIWD(n_sweeps=20, random_state=0).fit(D2)
    np.testing.assert_allclose(model.inner_products_, cold.inner_products_)
    assert model.samples_.shape == cold.samples_.shape
    # the learned dof goes on from the chain's last state (as theta): the new data's
    # complete likelihood scores every sample at its dof
    assert model.dof_ == pytest.approx(np.mean(model.dof_samples_))
    for labels, log_joint, theta, dof in zip(model.samples_, model.log_joints_,
                                             model.theta_samples_, model.dof_samples_):
        assert log_joint == pytest.approx(model.log_posterior(labels, theta, dof), rel=1e-9)


def test_warm_start_with_other_n_is_refused_clearly():
    model = DPMixture(method="gibbs", n_sweeps=4, warm_start=True, random_state=0).fit(_blobs())
    with pytest.raises(ValueError, match="same number of samples"):
        model.fit(_blobs(n=20))


# -- item 3: estimators keep copies -------------------------------------------------
def test_dp_mixture_predictions_do_not_follow_the_callers_array():
    X = _blobs()
    original = X.copy()
    model = DPMixture(n_sweeps=20, method="gibbs", random_state=0).fit(X)
    before = model.predict_proba(original[:3])
    X[:] = 100.0
    np.testing.assert_array_equal(model.predict_proba(original[:3]), before)


def test_correlation_clustering_predictions_do_not_follow_the_callers_array():
    X = _blobs(n=10)
    original = X.copy()
    model = ExactCorrelationClustering(beta=1.0).fit(X)
    before = model.predict(original[:3]), model.score(original[:3])
    X[:] = 100.0
    np.testing.assert_array_equal(model.predict(original[:3]), before[0])
    assert model.score(original[:3]) == before[1]


# -- item 5: overflowing scaled potentials ---------------------------------------------
@pytest.mark.parametrize("max_exact_size", [12, 5])
def test_overflowing_potentials_are_refused(max_exact_size):
    W = np.random.default_rng(0).normal(size=(8, 8))
    W = W + W.T
    W[0, 1] = W[1, 0] = -1e306
    with pytest.raises(ValueError, match="overflow"):
        ExactCorrelationClustering(beta=100, affinity="precomputed",
                                   max_exact_size=max_exact_size).fit(W)


def test_large_but_finite_potentials_still_work():
    W = np.random.default_rng(0).normal(size=(6, 6))
    W = (W + W.T) * 1e250
    model = ExactCorrelationClustering(beta=2.0, affinity="precomputed").fit(W)
    assert np.isfinite(model.log_partition_function_)
    # fitted in units of 2**834, where b sd ~ 2**835 squares beyond float64: the noise
    # variance's root is taken without the square (it was NaN: the squares overflowed)
    e = model._unit_exponent
    unit = ExactCorrelationClustering(beta=np.ldexp(2.0, e),
                                      affinity="precomputed").fit(np.ldexp(W, -e))
    assert model.noise_variance_ == np.ldexp(unit.noise_variance_, 2 * e)
    assert model.log_partition_function_ >= model.map_log_potential_


# -- item 6: the DPMixture predictive in log space -----------------------------------------
@pytest.mark.parametrize("likelihood, distance", [("gaussian", 1e155), ("gaussian", 1e300),
                                                  ("diagonal", 1e100), ("diagonal", 1e300)])
def test_far_points_get_a_finite_predictive(likelihood, distance):
    X = _blobs(n=20)
    model = DPMixture(likelihood=likelihood, n_sweeps=20, method="gibbs",
                      random_state=0).fit(X)
    far = np.array([[distance, distance], [-distance, 0.0]])
    proba = model.predict_proba(far)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(model.predict(far) == model.n_clusters_)  # a new cluster
    assert np.all(np.isfinite(model.score_samples(far)))


# -- items 7 and 10: unit-free priors, no deep errors at extreme scales -------------------
SCALES = [1e-150, 1e-3, 1.0, 1e3, 1e150]


def test_fast_tiwd_partition_does_not_depend_on_the_units():
    D = make_wishart_blocks(n_samples=40, random_state=1).distances
    reference = FastTIWD(n_sweeps=30, random_state=0).fit(D)
    for c in SCALES + [1e-200, 1e200, 1e-300, 1e300]:
        model = FastTIWD(n_sweeps=30, random_state=0).fit(c * D)
        np.testing.assert_array_equal(model.labels_, reference.labels_, err_msg=str(c))
        assert model.data_scale_ == pytest.approx(c * reference.data_scale_, rel=1.0)
        assert model.scale_posterior_["mean"] == pytest.approx(
            c * reference.scale_posterior_["mean"], rel=1e-6)


def test_fast_tiwd_feature_rows_do_not_depend_on_the_units():
    X = _blobs(n=40, gap=4.0)
    for normalization in ("single", "none"):
        ref = FastTIWD(metric="sqeuclidean", normalization=normalization, n_sweeps=30,
                       random_state=0).fit(X)
        for c in SCALES:
            model = FastTIWD(metric="sqeuclidean", normalization=normalization, n_sweeps=30,
                             random_state=0).fit(c * X)
            np.testing.assert_array_equal(model.labels_, ref.labels_, err_msg=str(c))
        # squared distances outside float64: a clear error, not a deep one
        for c in (1e-300, 1e300):
            with pytest.raises(ValueError, match="rescale X"):
                FastTIWD(metric="sqeuclidean", normalization=normalization).fit(c * X)


@pytest.mark.parametrize("likelihood", ["gaussian", "diagonal"])
def test_dp_mixture_partition_does_not_depend_on_the_units(likelihood):
    X = _blobs(n=30, gap=5.0)
    reference = DPMixture(likelihood=likelihood, method="gibbs", n_sweeps=20,
                          random_state=0).fit(X)
    for c in SCALES:
        model = DPMixture(likelihood=likelihood, method="gibbs", n_sweeps=20,
                          random_state=0).fit(c * X)
        np.testing.assert_array_equal(model.labels_, reference.labels_, err_msg=str(c))


@pytest.mark.parametrize("c", [1e-300, 1e300])
@pytest.mark.parametrize("method", ["gibbs", "exact"])
def test_dp_mixture_extreme_scales_give_a_clear_error_or_a_result(c, method):
    X = _blobs(n=10, gap=5.0)
    try:
        model = DPMixture(method=method, n_sweeps=10, random_state=0).fit(c * X)
    except ValueError as error:
        assert "scale" in str(error)
    else:
        assert np.all(np.isfinite(model.log_joints_))


def test_correlation_clustering_precomputed_scale_is_beta():
    """``fit(c W)`` with ``beta`` is ``fit(W)`` with ``c beta``: the documented rule."""
    W = np.random.default_rng(3).normal(size=(7, 7))
    W = W + W.T
    for c in SCALES:
        a = ExactCorrelationClustering(beta=1.0, affinity="precomputed").fit(c * W)
        b = ExactCorrelationClustering(beta=c, affinity="precomputed").fit(W)
        np.testing.assert_array_equal(a.labels_, b.labels_)
        np.testing.assert_allclose(a.pairwise_marginals_, b.pairwise_marginals_, atol=1e-12)


# -- item 9: point_estimate reads a pairwise matrix only with a unit diagonal ------------------
def test_point_estimate_refuses_a_pairwise_matrix_without_unit_diagonal():
    P = np.full((4, 4), 0.5)
    np.fill_diagonal(P, 0.0)
    with pytest.raises(ValueError, match="diagonal"):
        point_estimate(P, loss="binder")
    np.fill_diagonal(P, 1.0)
    assert point_estimate(P, loss="binder", random_state=0).shape == (4,)


# -- item 8: the precision bound, relative to max |log phi| ----------------------------------
@pytest.mark.parametrize("scale", [1.0, 1e4, 1e8, 1e11])
def test_marginals_meet_the_stated_precision_bound(scale):
    """|P - P_exact| <= 1e-12 + N * eps * max |log phi| (README, Precision)."""
    rng = np.random.default_rng(int(np.log10(scale)))
    eps = np.finfo(float).eps
    cases = [np.array([[0, 1, 1], [1, 0, -1], [1, -1, 0.0]]) * scale]
    for _ in range(3):
        w = rng.normal(size=(6, 6))
        cases.append((w + w.T) * scale)
    for w in cases:
        beta = 500.0 if w.shape[0] == 3 else 1.0
        model = ExactCorrelationClustering(beta=beta, affinity="precomputed").fit(w)
        n = w.shape[0]
        max_log_phi = beta * np.abs(np.triu(w, 1)).sum()
        bound = 1e-12 + n * eps * max_log_phi
        exact = correlation_pairwise_by_enumeration(w, beta)
        error = np.abs(model.pairwise_marginals_ - exact).max()
        assert error <= bound, (error, bound)


# -- item 11: refusals before allocation -----------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: ExactCorrelationClustering(),
    lambda: FastTIWD(metric="sqeuclidean"),
    lambda: DPMixture(method="gibbs"),
])
def test_memory_refusal_before_allocating(monkeypatch, make):
    import tracemalloc

    from sklearn_trellis._core import budget
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 1 << 20)  # 1 MiB free
    X = np.random.default_rng(0).normal(size=(2000, 2))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"Not enough memory: .* needs about .* but only "
                                             r"1 MiB is available\. .*(fewer|float32)"):
            make().fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * X.nbytes  # nothing of size N x N (32 MB) was allocated


def test_divisive_clustering_refuses_overflowing_distances():
    """Found by tests/test_fuzz.py: 1e299-apart points gave distances_ = [inf]. Since
    issue 31 the distances are computed on rows scaled by a power of two: a distance
    float64 holds is returned, one it cannot hold is refused."""
    from sklearn_trellis import DivisiveClustering
    for method in ("diana", "kmeans"):
        model = DivisiveClustering(method=method).fit(np.array([[1.26e299], [-1.32e299]]))
        assert model.distances_[0] == pytest.approx(2.58e299, rel=1e-12)
        with pytest.raises(ValueError, match="overflow float64"):
            DivisiveClustering(method=method).fit(np.array([[1.7e308], [-1.7e308]]))


@pytest.mark.parametrize("scale", [1e250, 1e-250])
def test_learning_beta_from_affinities_float64_cannot_square(scale):
    """The default beta='auto' profiles the noise variance out from the sum of squared
    affinities: at 1e250 it overflowed and the search returned beta_ = 0 (one cluster).
    Fitted in units of a power of 2, it learns the unit fit's beta (tests of every output:
    test_correlation_scale.py)."""
    W = np.random.default_rng(0).normal(size=(6, 6))
    W = W + W.T
    unit = ExactCorrelationClustering(affinity="precomputed").fit(W)
    with pytest.warns(UserWarning, match="noise_variance_ is"):   # s2 ~ 1e+-500
        model = ExactCorrelationClustering(affinity="precomputed").fit(W * scale)
    assert model.beta_ * scale == pytest.approx(unit.beta_, rel=1e-4)
    assert np.array_equal(model.labels_, unit.labels_)
    assert np.isfinite(model.log_evidence_) and np.isfinite(model.score(W[:2] * scale))


def test_learned_beta_is_unit_free_far_from_unit_scale():
    W = np.random.default_rng(0).normal(size=(6, 6))
    W = W + W.T
    unit = ExactCorrelationClustering(affinity="precomputed").fit(W)
    far = ExactCorrelationClustering(affinity="precomputed").fit(W * 2.0 ** 300)
    assert far.beta_ * 2.0 ** 300 == pytest.approx(unit.beta_, rel=1e-4)
    assert np.array_equal(far.labels_, unit.labels_)
