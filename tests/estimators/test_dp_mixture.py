"""DPMixture: scikit-learn integration, predictive methods, parameters."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score, make_scorer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import DPMixture
from sklearn_trellis.models import NormalInverseWishart
from sklearn_trellis.summaries.point_estimates import expected_loss


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(120, 2, centers=3, cluster_std=0.6, random_state=1)


def test_recovers_blobs_and_reports_posterior(blobs):
    X, y = blobs
    model = DPMixture(n_sweeps=40, random_state=0).fit(X)
    assert model.method_ == "gibbs"
    assert adjusted_rand_score(y, model.labels_) > 0.95
    assert model.samples_.shape == (20, 120) and model.samples_.dtype == np.int32
    assert model.log_marginal_likelihood_ is None
    # default labels_: expected VI no worse than that of any sample
    vi = expected_loss(model.samples_, model.labels_, loss="vi")
    assert all(vi <= expected_loss(model.samples_, s, loss="vi") + 1e-12 for s in model.samples_)
    mapped = DPMixture(n_sweeps=40, random_state=0, point_estimate="map").fit(X)
    assert mapped.labels_.tolist() == mapped.samples_[np.argmax(mapped.log_joints_)].tolist()
    p = model.pairwise_marginals_
    assert p.shape == (120, 120) and np.allclose(np.diag(p), 1) and np.allclose(p, p.T)
    assert model.n_clusters_distribution_.sum() == pytest.approx(1.0)
    assert np.argmax(model.n_clusters_distribution_) + 1 == 3


def test_large_data_falls_back_to_map_labels(blobs, monkeypatch):
    import sklearn_trellis._dp_mixture as module
    X, _ = blobs
    monkeypatch.setattr(module, "MAX_LOSS_ESTIMATE_ITEMS", X.shape[0] - 1)

    def no_search(*args, **kwargs):
        raise AssertionError("the n x n loss search must not run above the size limit")
    monkeypatch.setattr(module, "_loss_point_estimate", no_search)
    model = DPMixture(n_sweeps=10, random_state=0).fit(X)
    assert model.labels_.tolist() == model.samples_[np.argmax(model.log_joints_)].tolist()


def test_predict_proba_and_score(blobs):
    X, y = blobs
    model = DPMixture(n_sweeps=30, random_state=0).fit(X)
    proba = model.predict_proba(X[:10])
    assert proba.shape == (10, model.n_clusters_ + 1)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    far = model.predict_proba(np.array([[100.0, 100.0]]))
    assert far[0, -1] > 0.99   # a far-away point opens a new cluster
    assert model.predict(np.array([[100.0, 100.0]]))[0] == model.n_clusters_
    # score = mean log predictive density: typical points beat outliers
    assert model.score(X) > model.score(X + 20.0)
    np.testing.assert_allclose(model.score(X), model.score_samples(X).mean())


def test_posterior_predictive_integrates_to_one():
    """The predictive density of a 1-d model integrates to 1 (prior weights are normalised)."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 0.5, 15), rng.normal(4, 0.5, 15)][:, None]
    model = DPMixture(n_sweeps=10, random_state=0, discount=0.3).fit(X)
    grid = np.linspace(-60, 60, 20001)[:, None]
    density = np.exp(model.score_samples(grid))
    assert np.trapezoid(density[:, 0] if density.ndim > 1 else density, grid[:, 0]) == \
        pytest.approx(1.0, abs=2e-3)


def test_gridsearch_unsupervised_and_with_ari(blobs):
    X, y = blobs
    grid = {"alpha": [0.1, 1.0], "likelihood__kappa": [0.01, 0.1]}
    search = GridSearchCV(DPMixture(n_sweeps=10, random_state=0,
                                    likelihood=NormalInverseWishart()), grid, cv=2).fit(X)
    assert set(search.best_params_) == {"alpha", "likelihood__kappa"}
    ari = make_scorer(adjusted_rand_score)
    search = GridSearchCV(DPMixture(n_sweeps=10, random_state=0), {"alpha": [0.5, 2.0]},
                          scoring=ari, cv=2).fit(X, y)
    assert search.best_score_ > 0.8


def test_pipeline_with_scaler_and_pca(blobs):
    X, y = blobs
    pipe = make_pipeline(StandardScaler(), PCA(2), DPMixture(n_sweeps=20, random_state=0))
    labels = pipe.fit_predict(X)
    assert adjusted_rand_score(y, labels) > 0.9
    assert pipe.predict(X[:5]).shape == (5,)


def test_same_seed_same_result_and_chains(blobs):
    X, _ = blobs
    a = DPMixture(n_sweeps=10, n_chains=2, random_state=3).fit(X)
    b = DPMixture(n_sweeps=10, n_chains=2, random_state=3).fit(X)
    np.testing.assert_array_equal(a.samples_, b.samples_)
    assert a.samples_.shape == (10, 120)


def test_warm_start_appends_samples(blobs):
    X, _ = blobs
    model = DPMixture(n_sweeps=10, burn_in=4, random_state=0, warm_start=True).fit(X)
    assert model.samples_.shape[0] == 6
    model.fit(X)
    assert model.samples_.shape[0] == 16
    assert model._chains.states[0].n_sweeps_done == 20
    cold = DPMixture(n_sweeps=10, burn_in=4, random_state=0).fit(X).fit(X)
    assert cold.samples_.shape[0] == 6


@pytest.mark.parametrize("init", ["kmeans", "one", "singletons", "random"])
def test_inits_reach_the_blobs(blobs, init):
    X, y = blobs
    model = DPMixture(n_sweeps=30, init=init, random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.9


def test_other_likelihoods_cluster():
    rng = np.random.default_rng(0)
    protos = np.array([[0.9, 0.9, 0.1, 0.1, 0.9, 0.1], [0.1, 0.1, 0.9, 0.9, 0.1, 0.9]])
    y = np.repeat([0, 1], 40)
    binary = (rng.random((80, 6)) < protos[y]).astype(float)
    model = DPMixture(likelihood="bernoulli", n_sweeps=30, random_state=0).fit(binary)
    assert adjusted_rand_score(y, model.labels_) > 0.8
    rates = np.array([[8, 1, 1, 5], [1, 8, 5, 1]])
    counts = rng.poisson(rates[y]).astype(float)
    model = DPMixture(likelihood="multinomial", n_sweeps=30, random_state=0).fit(counts)
    assert adjusted_rand_score(y, model.labels_) > 0.8
    model = DPMixture(likelihood="diagonal", n_sweeps=30, random_state=0,
                      alpha_prior=(1.0, 1.0)).fit(counts)
    assert np.unique(model.alphas_).size > 1


def test_exact_and_gibbs_agree_on_small_data():
    rng = np.random.default_rng(2)
    X = np.r_[rng.normal(0, 0.4, (4, 2)), rng.normal(3, 0.4, (4, 2))]
    exact = DPMixture(method="exact", random_state=0).fit(X)
    sampled = DPMixture(method="gibbs", n_sweeps=3000, random_state=0).fit(X)
    assert np.abs(exact.pairwise_marginals_ - sampled.pairwise_marginals_).max() < 0.06
    auto = DPMixture(random_state=0).fit(X)
    assert auto.method_ == "exact"
    assert auto.log_marginal_likelihood_ == pytest.approx(exact.log_marginal_likelihood_)


@pytest.mark.parametrize("params, match", [
    (dict(alpha=0), "alpha"), (dict(discount=1.0), "discount"), (dict(n_sweeps=0), "n_sweeps"),
    (dict(burn_in=30, n_sweeps=30), "burn_in"), (dict(method="vb"), "method"),
    (dict(init="ward"), "init"), (dict(likelihood="poisson"), "likelihood"),
    (dict(n_prior_components=2, discount=0.5), "discount"), (dict(alpha_prior=(1.0,)), "alpha_prior"),
    (dict(point_estimate="mode"), "point_estimate"),
])
def test_invalid_parameters(params, match):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises((ValueError, TypeError), match=match):
        DPMixture(**params).fit(X)


def test_exact_refuses_large_n():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="max_exact_size"):
        DPMixture(method="exact").fit(X)
    with pytest.raises(ValueError, match="init"):
        DPMixture(init=np.zeros(5, int)).fit(X)


def _two_blobs():
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(4, 2)), rng.normal(size=(4, 2)) + 6.0])


@pytest.mark.parametrize("likelihood", ["gaussian", "diagonal",
                                        NormalInverseWishart(mean_prior=[3.0, 3.0])])
@pytest.mark.parametrize("method", ["exact", "gibbs", "subcluster"])
def test_a_large_offset_of_the_features_changes_nothing(likelihood, method):
    # Frequencies near 1e10 Hz: the kernels summed x**2 ~ 1e20, whose rounding (1e4)
    # swamped the spread (~10); the variance floor (1e-8 max|x|)**2 = 1e4 did too. The
    # default 'diagonal' model put the two blobs in one cluster. Features far from 0
    # are now centred first (the prior mean with them): a translation changes nothing.
    X, offset = _two_blobs(), 1e10
    if not isinstance(likelihood, str) and likelihood.mean_prior is not None:
        shifted = NormalInverseWishart(mean_prior=np.add(likelihood.mean_prior, offset))
    else:
        shifted = likelihood
    kwargs = dict(method=method, n_sweeps=30, random_state=0)
    near = DPMixture(likelihood, **kwargs).fit(X)
    far = DPMixture(shifted, **kwargs).fit(X + offset)
    np.testing.assert_array_equal(far.labels_, near.labels_)
    assert np.unique(near.labels_).size == 2
    # the shifted rows round at 1e10 * eps ~ 2e-6: scores agree to that
    np.testing.assert_allclose(far.score_samples(X[:3] + offset), near.score_samples(X[:3]),
                               rtol=1e-4)
