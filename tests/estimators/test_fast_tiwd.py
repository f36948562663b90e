"""``FastTIWD``: exact mode vs enumeration, sampler vs exact, semi-supervised mode, benchmark."""

import joblib
import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist, squareform
from sklearn.metrics import adjusted_rand_score

from oracles import translation_invariant_posterior_summaries, wishart_posterior_summaries
from sklearn_trellis import FastTIWD
from sklearn_trellis.datasets import make_wishart_blocks
from sklearn_trellis.models.wishart import data_log_density_terms


def _small_rows(seed, n, dim=3):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0] * dim, [1.2] * dim])
    return rng.standard_normal((n, dim)) * 0.8 + centres[np.arange(n) % 2]


def _small_distances(seed, n, dim=3):
    return squareform(pdist(_small_rows(seed, n, dim), "sqeuclidean"))


@pytest.mark.parametrize("k", [None, 3])
def test_exact_mode_matches_enumeration(k):
    X = _small_rows(0, 7)
    model = FastTIWD(metric="sqeuclidean", normalization="none", scale=0.5, theta=2.0,
                     dof=8.0, n_blocks=k, alpha=0.7, method="exact", n_sweeps=50,
                     random_state=0).fit(X)
    assert model.method_ == "exact"
    exact = wishart_posterior_summaries(model.inner_products_, 0.5, 2.0, 8.0, 0.7, k)
    np.testing.assert_allclose(model.pairwise_marginals_, exact["pairwise"], atol=1e-10)
    # the oracle sums the partition-dependent terms; the data's own Wishart terms are added
    data_terms, _ = data_log_density_terms(model.inner_products_, dof=8.0)
    assert np.isclose(model.log_marginal_likelihood_, exact["log_z"] + data_terms, rtol=1e-10)
    assert model.samples_.shape == (50, 7)
    if k is not None:
        assert model.samples_.max() < k


def test_exact_mode_refuses_distances():
    """The translation-invariant likelihood of distances does not factorise: no exact mode,
    and 'auto' samples."""
    D = _small_distances(0, 7)
    with pytest.raises(ValueError, match="normalization='none'"):
        FastTIWD(scale=0.5, theta=2.0, dof=3.0, method="exact").fit(D)
    model = FastTIWD(scale=0.5, theta=2.0, dof=3.0, n_sweeps=4, random_state=0).fit(D)
    assert model.method_ == "gibbs"


def test_exact_mode_semi_supervised_matches_enumeration():
    X = _small_rows(1, 7)
    y = np.array([0, -1, 0, 1, -1, -1, 1])
    model = FastTIWD(metric="sqeuclidean", normalization="none", scale=0.5, theta=2.0,
                     dof=8.0, method="exact").fit(X, y)
    exact = wishart_posterior_summaries(model.inner_products_, 0.5, 2.0, 8.0, 1.0, None,
                                        known=y)
    np.testing.assert_allclose(model.pairwise_marginals_, exact["pairwise"], atol=1e-10)
    assert model.labels_[0] == model.labels_[2] != model.labels_[3] == model.labels_[6]


def _assert_co_clustering_matches(samples, exact, n_batches):
    """Co-clustering frequencies of ``samples`` within 5 batch-means standard errors
    (+ 5e-3) of the ``exact`` pairwise marginals, on a spread-out posterior."""
    iu = np.triu_indices(exact.shape[0], 1)
    assert np.sum((exact[iu] > 0.1) & (exact[iu] < 0.9)) >= 4  # a spread-out posterior
    together = samples[:, iu[0]] == samples[:, iu[1]]
    freq = together.mean(axis=0)
    batches = together.reshape(n_batches, -1, together.shape[1]).mean(axis=1)
    se = batches.std(axis=0, ddof=1) / np.sqrt(n_batches)
    assert np.all(np.abs(freq - exact[iu]) < 5 * se + 5e-3), np.abs(freq - exact[iu]) / se


@pytest.mark.parametrize("semi_supervised", [False, True])
def test_sampler_matches_translation_invariant_enumeration(semi_supervised):
    """Distances, scale and theta fixed: sampled co-clustering frequencies within Monte Carlo
    error of the translation-invariant posterior enumerated with dense matrices."""
    D = _small_distances(2, 6)
    y = np.array([0, -1, -1, 1, -1, -1]) if semi_supervised else None
    exact = translation_invariant_posterior_summaries(D, 1.5, 2.0, 1.0, scale=0.6,
                                                      known=y)["pairwise"]
    n_sweeps, n_batches = 8000, 20
    sampled = FastTIWD(method="gibbs", n_sweeps=n_sweeps + 50, burn_in=50, scale=0.6,
                       theta=1.5, dof=2.0, random_state=0).fit(D, y)
    _assert_co_clustering_matches(sampled.samples_, exact, n_batches)
    np.testing.assert_allclose(sampled.theta_samples_, 1.5)


@pytest.mark.parametrize("distances", [True, False], ids=["distances", "rows"])
def test_split_merge_sampler_matches_exact(distances):
    """``n_split_merge`` > 0 (proposals after each Gibbs scan): co-clustering frequencies
    within Monte Carlo error of the exact posterior, that of ``method='exact'`` on feature
    rows (``normalization='none'``) and the translation-invariant one enumerated with dense
    matrices on distances."""
    params = dict(scale=0.6, theta=1.5, dof=2.0, alpha=0.7)   # alpha != 1: K matters
    if distances:
        X = _small_distances(2, 6)
        exact = translation_invariant_posterior_summaries(X, 1.5, 2.0, 0.7,
                                                          scale=0.6)["pairwise"]
    else:
        X = _small_rows(2, 6)
        params.update(metric="sqeuclidean", normalization="none")
        exact = FastTIWD(method="exact", **params).fit(X).pairwise_marginals_
    n_sweeps, n_batches = 3000, 20
    sampled = FastTIWD(method="gibbs", n_sweeps=n_sweeps + 50, burn_in=50, n_split_merge=8,
                       random_state=0, **params).fit(X)
    _assert_co_clustering_matches(sampled.samples_, exact, n_batches)


def _benchmark_scores(seed, n_sweeps=200):
    data = make_wishart_blocks(random_state=seed)
    D = data.distances
    model = FastTIWD(n_sweeps=n_sweeps, random_state=seed).fit(D)
    wd_c = FastTIWD(n_sweeps=n_sweeps, normalization="center", random_state=seed).fit(D)
    scores = {"fastTIWD": adjusted_rand_score(data.target, model.labels_),
              "WD C": adjusted_rand_score(data.target, wd_c.labels_)}
    for method in ("single", "complete"):
        cut = fcluster(linkage(squareform(D, checks=False), method), 3, "maxclust")
        scores[method] = adjusted_rand_score(data.target, cut)
    return scores, model


def test_benchmark_fast():
    scores, model = _benchmark_scores(1, n_sweeps=100)
    assert scores["fastTIWD"] > 0.8
    assert scores["fastTIWD"] > max(scores["single"], scores["complete"])
    assert 0.02 < np.median(model.theta_samples_) < 0.12  # true theta = 0.05
    assert 1.5 < model.scale_posterior_["mean"] < 2.5  # true scale = 2
    big = np.bincount(model.labels_) >= 20
    assert np.all(np.abs(model.block_scale_means_[big] - 2.0) < 0.5)
    assert model.pairwise_marginals_.shape == (200, 200)
    assert model.samples_.shape == (50, 200)


@pytest.mark.slow
def test_benchmark_median_over_seeds():
    table = [_benchmark_scores(seed)[0] for seed in range(10)]
    median = {key: np.median([row[key] for row in table]) for key in table[0]}
    assert median["fastTIWD"] >= 0.85
    assert median["fastTIWD"] > max(median["single"], median["complete"])
    # the likelihood of distances is translation invariant: column centring ("WD C") is
    # another representative of the same posterior
    assert median["WD C"] >= 0.85


def test_semi_supervised_keeps_clamped_labels_and_finds_new_class():
    data = make_wishart_blocks(n_samples=150, proportions="uniform", random_state=3)
    rng = np.random.default_rng(0)
    y = np.full(150, -1)
    for cls in (0, 1):
        members = np.flatnonzero(data.target == cls)
        chosen = rng.choice(members, size=max(2, members.size // 5), replace=False)
        y[chosen] = cls
    model = FastTIWD(n_sweeps=80, random_state=0).fit(data.distances, y)
    for cls in (0, 1):
        clamped = model.samples_[:, y == cls]
        assert np.all(clamped == clamped[:, :1])  # one block per class in every sample
    assert np.all(model.samples_[:, y == 0][:, 0] != model.samples_[:, y == 1][:, 0])
    labels = model.labels_
    class_blocks = {labels[y == 0][0], labels[y == 1][0]}
    unlabelled_2 = (data.target == 2)
    in_new = np.mean([label not in class_blocks for label in labels[unlabelled_2]])
    assert in_new > 0.9
    free = y < 0
    assert adjusted_rand_score(data.target[free], labels[free]) > 0.7


@pytest.mark.parametrize("init", ["singletons", "random"])
def test_renaming_the_known_classes_changes_nothing(init):
    # The model does not see class names: known classes are numbered by first
    # appearance (they were numbered in sorted order, so [2, 0, 1] for [0, 1, 2]
    # changed a fixed-seed chain: 1 or 2 of 15 samples, log joints by up to 6.5).
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 1.0, (15, 3)) for c in (0, 3, 6)])
    y = np.full(45, -1)
    known = rng.choice(45, 12, replace=False)
    y[known] = np.repeat([0, 1, 2], 15)[known]
    renamed = np.where(y >= 0, np.array([2, 0, 1])[np.maximum(y, 0)], -1)
    fits = [FastTIWD(metric="sqeuclidean", method="gibbs", n_sweeps=30, init=init,
                     random_state=0).fit(X, labels) for labels in (y, renamed)]
    assert adjusted_rand_score(fits[0].labels_, fits[1].labels_) == 1.0
    for a, b in zip(fits[0].samples_, fits[1].samples_):
        assert adjusted_rand_score(a, b) == 1.0
    np.testing.assert_array_equal(fits[0].log_joints_, fits[1].log_joints_)


def test_reproducible_and_parallel_chains_agree():
    D = make_wishart_blocks(n_samples=40, random_state=0).distances
    a = FastTIWD(n_sweeps=20, n_chains=2, random_state=5).fit(D)
    # threads: two process workers would each import the package and load the kernels
    # (about 5 CPU s); InfiniteBiclustering's chains run on process workers
    # (test_warm_start_appends_samples_and_chains_run_in_parallel)
    with joblib.parallel_config(backend="threading"):
        b = FastTIWD(n_sweeps=20, n_chains=2, n_jobs=2, random_state=5).fit(D)
    np.testing.assert_array_equal(a.samples_, b.samples_)
    np.testing.assert_array_equal(a.theta_samples_, b.theta_samples_)
    assert a.samples_.shape == (20, 40)


def test_a_relabelled_init_partition_runs_the_same_chain():
    """``init`` is a partition: its label values (any order, negative) do not matter. They
    were numbered in sorted order, so a relabelling started another chain."""
    rng = np.random.default_rng(1)
    X = rng.normal(0, 4, (2, 2))[np.arange(7) % 2] + rng.normal(0, 1, (7, 2))
    D = squareform(pdist(X, "sqeuclidean"))
    init = np.array([0, 0, 1, 1, 2, 2, 0])
    runs = [FastTIWD(init=labels, n_sweeps=4, burn_in=0, random_state=0).fit(D)
            for labels in (init, np.array([5, 5, -3, -3, 9, 9, 5]), (init + 1) % 3)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.samples_, runs[0].samples_)
        np.testing.assert_array_equal(run.theta_samples_, runs[0].theta_samples_)


def test_warm_start_appends_samples_and_float32_matches():
    D = make_wishart_blocks(n_samples=60, random_state=1).distances
    model = FastTIWD(n_sweeps=20, warm_start=True, random_state=0).fit(D)
    first = model.samples_.copy()
    model.set_params(dof=400.0)
    model.fit(D)
    assert model.samples_.shape == (30, 60)  # 10 kept after the burn-in, then 20
    np.testing.assert_array_equal(model.samples_[:10], first)
    single = FastTIWD(n_sweeps=30, random_state=0).fit(D)
    half = FastTIWD(n_sweeps=30, dtype="float32", random_state=0).fit(D.astype(np.float32))
    assert half.inner_products_.dtype == np.float32
    assert adjusted_rand_score(single.labels_, half.labels_) > 0.8


def test_feature_rows_and_unnormalised_inner_products():
    rng = np.random.default_rng(4)
    X = np.vstack([rng.standard_normal((15, 20)), rng.standard_normal((15, 20)) + 1.5])
    truth = np.repeat([0, 1], 15)
    for normalization in ("single", "none"):
        model = FastTIWD(metric="sqeuclidean", normalization=normalization, n_sweeps=40,
                         random_state=0).fit(X)
        assert adjusted_rand_score(truth, model.labels_) > 0.8, normalization


def test_log_posterior_of_labels_matches_trace():
    D = make_wishart_blocks(n_samples=30, random_state=2).distances
    model = FastTIWD(n_sweeps=10, random_state=0).fit(D)
    best = int(np.argmax(model.log_joints_))
    assert np.isclose(model.log_posterior(model.labels_, model.theta_samples_[best]),
                      model.log_joints_[best], rtol=1e-9)


@pytest.mark.parametrize("params,X_kind,y,match", [
    (dict(method="exact"), "D", None, "scale and theta fixed"),
    (dict(method="exact", scale=1.0, theta=1.0), "big", None, "max_exact_size"),
    (dict(method="exact", scale=1.0, theta=1.0), "D", None, "normalization='none'"),
    (dict(normalization="none"), "D", None, "feature rows"),
    (dict(normalization="tree"), "D", None, "normalization"),
    (dict(dof=-1.0), "D", None, "dof"),
    (dict(), "negative", None, "Negative values"),
    (dict(), "diagonal", None, "zero diagonal"),
    (dict(), "D", "short", "shape"),
    (dict(n_blocks=1), "D", "two", "n_blocks"),
    (dict(burn_in=5, n_sweeps=5), "D", None, "burn_in"),
    (dict(method="vb"), "D", None, "method"),
    (dict(warm_start="yes"), "D", None, "warm_start"),
    (dict(n_split_merge=-1), "D", None, "n_split_merge"),
    (dict(n_split_merge=1.5), "D", None, "n_split_merge"),
])
def test_invalid_input(params, X_kind, y, match):
    D = _small_distances(0, 8)
    X = {"D": D, "big": _small_distances(0, 14), "negative": D - 1.0,
         "diagonal": D + np.eye(8)}[X_kind]
    y = {None: None, "short": np.zeros(3, int), "two": np.array([0, 1, -1, -1, -1, -1, -1, -1])}[y]
    with pytest.raises(ValueError, match=match):
        FastTIWD(**params).fit(X, y)


def test_ctrl_c_keeps_samples_so_far_and_verbose_reports(monkeypatch, capsys):
    from sklearn_trellis.models.wishart_likelihood import WishartBlockLikelihood

    D = make_wishart_blocks(n_samples=30, random_state=0).distances
    calls = {"n": 0}
    original = WishartBlockLikelihood.resample_params

    def interrupt_after_15(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 15:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(WishartBlockLikelihood, "resample_params", interrupt_after_15)
    model = FastTIWD(n_sweeps=40, burn_in=10, n_chains=2, verbose=1, random_state=0).fit(D)
    assert model.interrupted_
    assert model.samples_.shape == (5, 30)  # sweeps 10..14 of the first chain; no second chain
    assert "interrupted after 15 sweeps" in capsys.readouterr().out


def test_finite_blocks_filled_by_known_classes():
    D = make_wishart_blocks(n_samples=40, n_blocks=2, random_state=0).distances
    y = np.full(40, -1)
    y[:3], y[3:6] = 0, 1
    model = FastTIWD(n_blocks=2, n_sweeps=10, random_state=0).fit(D, y)
    assert model.samples_.max() <= 1
    assert np.all(model.samples_[:, :3] == model.samples_[:, :1])


def test_log_posterior_refuses_nan_labels():
    D = make_wishart_blocks(n_samples=6, random_state=2).distances
    model = FastTIWD(n_sweeps=4, random_state=0).fit(D)
    labels = model.labels_.astype(float)
    assert model.log_posterior(labels * 5 + 2) == pytest.approx(model.log_posterior(labels))
    labels[[1, 3]] = [np.nan, np.inf]
    with pytest.raises(ValueError, match=r"items 1, 3"):
        model.log_posterior(labels)
