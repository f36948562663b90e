"""The grid hyperprior of NormalInverseWishart: exact mode and Gibbs against brute force."""

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp, multigammaln

from oracles import flat_summaries, partition_log_joints, set_partitions
from sklearn_trellis import DPMixture
from sklearn_trellis.models import NormalGamma, NormalInverseWishart
from sklearn_trellis.engines.exact.grid_marginal import GridMarginalPosterior
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.models.priors import CRP, PitmanYor


def textbook_log_marginal(X, kappa, dof, mean, psi):
    """NIW marginal likelihood (Murphy 2007, Eq. 266), written out independently."""
    n, d = X.shape
    xbar = X.mean(axis=0)
    centred = X - xbar
    diff = xbar - mean
    psi_n = psi + centred.T @ centred + kappa * n / (kappa + n) * np.outer(diff, diff)
    return (-0.5 * n * d * np.log(np.pi) + multigammaln(0.5 * (dof + n), d)
            - multigammaln(0.5 * dof, d) + 0.5 * dof * np.linalg.slogdet(psi)[1]
            - 0.5 * (dof + n) * np.linalg.slogdet(psi_n)[1]
            + 0.5 * d * (np.log(kappa) - np.log(kappa + n)))


def grid_points(lik):
    """(Psi_0, dof) of every grid point, from the documented definition."""
    return [(scale * lik._grid_base, dof) for scale, dof in zip(lik.grid_scale_, lik.grid_dof_)]


def enumerate_grid_posterior(prior, lik, X, cache=None):
    """log p(C, g, X) for every partition C and grid point g (uniform grid prior).

    ``cache``: a dict keeping each cluster's log marginal at each grid point, for another
    prior on the same ``X`` and ``lik`` (the same values, summed in the same order)."""
    cache = {} if cache is None else cache
    points = grid_points(lik)

    def log_marginal(g, members):
        key = (g, tuple(members))
        if key not in cache:
            psi, dof = points[g]
            cache[key] = textbook_log_marginal(X[members], lik.kappa, dof, lik.mean_prior_, psi)
        return cache[key]

    columns = []
    for g in range(len(points)):
        parts, column = partition_log_joints(
            X.shape[0], lambda counts: prior.log_eppf(counts) - np.log(len(points)),
            lambda members, g=g: log_marginal(g, members))
        columns.append(column)
    return parts, np.column_stack(columns)


def two_groups(rng, n, d=2):
    return np.vstack([rng.normal(0, 0.5, (n // 2, d)), rng.normal(2.5, 0.5, (n - n // 2, d))])


def test_default_grid_definition():
    X = np.random.default_rng(0).normal(size=(20, 3)) * [1.0, 2.0, 0.5]
    lik = NormalInverseWishart().fit(X)
    assert lik.grid_scale_.size == 31 * 6
    np.testing.assert_allclose(np.unique(lik.grid_scale_), np.logspace(-3, 2, 31))
    np.testing.assert_allclose(np.unique(lik.grid_dof_), 5.0 + 3.0 * np.array([0, .5, 1, 2, 4, 8]))
    np.testing.assert_allclose(lik._grid_base, np.diag(X.var(axis=0)))
    params, log_prior = lik.hyperparameter_grid()
    assert params.shape == (186, lik.kernel_params().size)
    assert logsumexp(log_prior) == pytest.approx(0.0)
    # each grid row is the kernel vector of the fixed likelihood at that point
    g = 40
    fixed = NormalInverseWishart(dof=lik.grid_dof_[g], hyperprior="fixed",
                                 covariance_prior=lik.grid_scale_[g] * lik._grid_base
                                 / max(lik.grid_dof_[g] - 4.0, 1.0)).fit(X)
    np.testing.assert_allclose(params[g], fixed.kernel_params(), rtol=1e-12, atol=1e-12)
    described = lik.describe_params(params)
    np.testing.assert_allclose(described["scale"], lik.grid_scale_, rtol=1e-10)
    np.testing.assert_allclose(described["dof"], lik.grid_dof_)


def test_which_hyperparameters_are_learned():
    X = np.random.default_rng(1).normal(size=(15, 2))
    assert NormalInverseWishart(hyperprior="fixed").fit(X).hyperparameter_grid() is None
    assert NormalInverseWishart(dof=5.0, covariance_prior=0.3).fit(X).hyperparameter_grid() is None
    only_dof = NormalInverseWishart(covariance_prior=0.3).fit(X)
    assert only_dof.grid_scale_.size == 6 and np.unique(only_dof.grid_dof_).size == 6
    # the expected covariance stays 0.3 diag(var) at every dof
    np.testing.assert_allclose(only_dof.grid_scale_, np.maximum(only_dof.grid_dof_ - 3.0, 1.0))
    only_scale = NormalInverseWishart(dof=7.0).fit(X)
    assert only_scale.grid_scale_.size == 31 and np.all(only_scale.grid_dof_ == 7.0)
    with pytest.raises(ValueError, match="hyperprior"):
        NormalInverseWishart(hyperprior="sample").fit(X)
    model = DPMixture(likelihood=NormalInverseWishart(hyperprior="fixed"), method="gibbs",
                      n_sweeps=4, random_state=0).fit(X)
    assert model.hyperparameters_ is None


def test_grid_conditional_matches_closed_form():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(25, 3)) * [1.0, 3.0, 0.2]
    lik = NormalInverseWishart(kappa=0.4).fit(X)
    labels = rng.integers(0, 4, size=25)
    state = gibbs.new_state(lik, lik.kernel_data(X), labels, 1.0)
    active = state.active[:state.meta[0]]
    d = 3
    rows = state.stats[active]
    factors = rows[:, 1 + d:1 + d + d * d].reshape(-1, d, d)
    scatters = factors @ np.swapaxes(factors, 1, 2) - lik.scale_matrix_
    fast = lik.grid_log_likelihoods(rows[:, 0], scatters)
    slow = np.array([sum(textbook_log_marginal(X[labels == c], lik.kappa, dof,
                                               lik.mean_prior_, psi)
                         for c in np.unique(labels)) for psi, dof in grid_points(lik)])
    np.testing.assert_allclose(fast - fast[0], slow - slow[0], atol=1e-8)


def test_grid_conditional_in_chunks(monkeypatch):
    """Clusters are processed in chunks of determinants; the result does not depend on it."""
    from sklearn_trellis.models import conjugate
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 3))
    lik = NormalInverseWishart().fit(X)
    sizes = np.array([10.0, 20.0, 5.0, 5.0])
    scatters = np.array([np.cov(X[:10].T) * 9, np.eye(3), np.diag([1.0, 2.0, 3.0]),
                         np.full((3, 3), 0.5) + np.eye(3)])
    whole = lik.grid_log_likelihoods(sizes, scatters)
    monkeypatch.setattr(conjugate, "GRID_CHUNK_ENTRIES", 1)
    np.testing.assert_allclose(lik.grid_log_likelihoods(sizes, scatters), whole, rtol=1e-13)


@pytest.fixture(scope="module")
def grid_marginal_cache():
    """The clusters' log marginals of test_exact_grid_posterior_matches_enumeration's data,
    computed once for both priors (11,718 textbook evaluations)."""
    return {}


@pytest.mark.parametrize("prior", [CRP(0.9), PitmanYor(0.8, 0.3)], ids=["CRP", "PY"])
def test_exact_grid_posterior_matches_enumeration(prior, grid_marginal_cache):
    rng = np.random.default_rng(3)
    X = two_groups(rng, 6)
    lik = NormalInverseWishart(kappa=0.5).fit(X)
    parts, table = enumerate_grid_posterior(prior, lik, X, grid_marginal_cache)
    ref = flat_summaries(parts, logsumexp(table, axis=1))
    post = GridMarginalPosterior(prior, lik, 12).fit(lik.kernel_data(X))
    assert post.log_marginal_likelihood == pytest.approx(ref["log_z"], abs=1e-8)
    np.testing.assert_allclose(post.pairwise_marginals(), ref["pairwise"], atol=1e-9)
    np.testing.assert_allclose(post.n_clusters_distribution(), ref["k_dist"], atol=1e-9)
    np.testing.assert_allclose(post.grid_weights, np.exp(logsumexp(table, axis=0)
                                                         - ref["log_z"]), atol=1e-9)
    best = np.unravel_index(np.argmax(table), table.shape)
    assert tuple(post.map_labels) == tuple(parts[best[0]])
    assert post.map_grid_index == best[1]
    some = parts[::37]
    np.testing.assert_allclose(post.log_joints(some), logsumexp(table, axis=1)[::37], atol=1e-8)
    # exact samples: partition frequencies within 5 standard errors
    draws, points = post.sample(20000, np.random.RandomState(0))
    index = {tuple(row): t for t, row in enumerate(parts)}
    freq = np.bincount([index[tuple(row)] for row in draws], minlength=len(parts)) / 20000
    se = np.sqrt(ref["probs"] * (1 - ref["probs"]) / 20000) + 1e-4
    assert np.all(np.abs(freq - ref["probs"]) < 5 * se)
    assert np.all(np.isin(points, np.arange(post.grid_weights.size)))


def test_dp_mixture_exact_mode_marginalises_the_grid():
    rng = np.random.default_rng(4)
    X = two_groups(rng, 6)   # Bell(6) = 203 partitions at each of the 186 grid points
    model = DPMixture(alpha=1.3, method="exact", n_sweeps=300, random_state=0).fit(X)
    parts, table = enumerate_grid_posterior(model.prior_, model.model_, X)
    ref = flat_summaries(parts, logsumexp(table, axis=1))
    assert model.log_marginal_likelihood_ == pytest.approx(ref["log_z"], abs=1e-8)
    np.testing.assert_allclose(model.pairwise_marginals_, ref["pairwise"], atol=1e-9)
    assert model.hyperparameters_["scale"].shape == (300,)
    assert set(model.hyperparameters_["dof"]) <= set(model.model_.grid_dof_)


# both starts and both priors in the fast set (one pairing each); the other pairings slow
@pytest.mark.parametrize("init, prior_kwargs", [
    pytest.param("one", {}, id="one-CRP"),
    pytest.param("singletons", {"discount": 0.4}, id="singletons-PY"),
    pytest.param("singletons", {}, id="singletons-CRP", marks=pytest.mark.slow),
    pytest.param("one", {"discount": 0.4}, id="one-PY", marks=pytest.mark.slow)])
def test_gibbs_with_grid_matches_exact(prior_kwargs, init):
    """Co-clustering and the hyperparameter posterior of the sampler match exact mode."""
    rng = np.random.default_rng(2)
    X = np.r_[rng.normal(0, 0.4, (4, 2)), rng.normal(3, 0.4, (4, 2))]
    sampled = DPMixture(method="gibbs", n_sweeps=6000, init=init, random_state=1,
                        **prior_kwargs).fit(X)
    # exact mode's own engine (what method="exact" fits; one grid posterior, not two)
    post = GridMarginalPosterior(sampled.prior_, sampled.model_, 12).fit(sampled._data)
    assert np.abs(post.pairwise_marginals() - sampled.pairwise_marginals_).max() < 0.04
    lik = sampled.model_
    exact_mean = np.sum(post.grid_weights * np.log(lik.grid_scale_))
    exact_sd = np.sqrt(np.sum(post.grid_weights * np.log(lik.grid_scale_) ** 2) - exact_mean ** 2)
    sampled_mean = np.mean(np.log(sampled.hyperparameters_["scale"]))
    assert abs(sampled_mean - exact_mean) < 0.15 * exact_sd + 0.05
    exact_dof = np.sum(post.grid_weights * lik.grid_dof_)
    assert np.mean(sampled.hyperparameters_["dof"]) == pytest.approx(exact_dof, rel=0.05)


def test_set_params_resets_free_slots():
    """A hyperparameter change must reach the empty slots that score new clusters."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 2))
    lik = NormalInverseWishart().fit(X)
    data = lik.kernel_data(X)
    params, _ = lik.hyperparameter_grid()
    state = gibbs.new_state(lik, data, rng.integers(0, 3, size=12), 1.0)
    gibbs.set_params(state, lik, data, params[100])
    fresh = gibbs.new_state(lik, data, state.labels, 1.0, params=params[100])
    for c in state.free[:state.meta[1]]:
        np.testing.assert_allclose(state.stats[c], fresh.stats[fresh.free[0]], atol=1e-12)
    for c in state.active[:state.meta[0]]:
        np.testing.assert_allclose(state.stats[c], fresh.stats[c], atol=1e-9)


def test_predictive_uses_each_samples_hyperparameters():
    rng = np.random.default_rng(6)
    X = two_groups(rng, 40)
    model = DPMixture(n_sweeps=40, random_state=0).fit(X)
    assert model.hyperparameters_["scale"].shape == (model.samples_.shape[0],)
    new = rng.normal(size=(5, 2))
    per_sample = []
    for labels, logw in model._predictive(new):
        per_sample.append(logsumexp(logw, axis=1))
    s = 0
    logw0 = gibbs.predictive_log_weights(model.model_, model.prior_.kernel_params(),
                                         model._data, model.samples_[s].astype(np.int64), new,
                                         model._sample_params[s])
    np.testing.assert_allclose(per_sample[0], logsumexp(logw0, axis=1))
    # the fitted likelihood's starting values give a different density
    start = gibbs.predictive_log_weights(model.model_, model.prior_.kernel_params(),
                                         model._data, model.samples_[s].astype(np.int64), new)
    if not np.array_equal(model._sample_params[s], model.model_.kernel_params()):
        assert not np.allclose(logsumexp(start, axis=1), per_sample[0])


def test_warm_start_and_seed_keep_hyperparameter_trace():
    rng = np.random.default_rng(7)
    X = two_groups(rng, 30)
    a = DPMixture(n_sweeps=20, random_state=3).fit(X)
    b = DPMixture(n_sweeps=20, random_state=3).fit(X)
    np.testing.assert_array_equal(a.hyperparameters_["scale"], b.hyperparameters_["scale"])
    a.set_params(warm_start=True).fit(X)
    assert a.hyperparameters_["dof"].shape == (a.samples_.shape[0],) == (30,)


# -- NormalGamma (diagonal) -------------------------------------------------------------
def textbook_ng_log_marginal(X, kappa, shape, mean, rate):
    """Normal-Gamma marginal likelihood per feature, summed (independent formula)."""
    n = X.shape[0]
    xbar = X.mean(axis=0)
    rate_n = (rate + 0.5 * ((X - xbar) ** 2).sum(axis=0)
              + kappa * n * (xbar - mean) ** 2 / (2 * (kappa + n)))
    return float(np.sum(gammaln(shape + 0.5 * n) - gammaln(shape) + shape * np.log(rate)
                        - (shape + 0.5 * n) * np.log(rate_n)
                        + 0.5 * np.log(kappa / (kappa + n)) - 0.5 * n * np.log(2 * np.pi)))


def test_normal_gamma_grid_conditional_and_exact_posterior():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(30, 3)) * [1.0, 4.0, 0.3]
    lik = NormalGamma(hyperprior="grid").fit(X)
    assert lik.grid_scale_.size == 31 * 6 and lik.resamples_hyperparameters
    np.testing.assert_allclose(np.unique(lik.grid_shape_), [1.5, 1.75, 2, 2.5, 3.5, 5.5])
    assert NormalGamma().fit(X).hyperparameter_grid() is None   # 'fixed' is the default
    labels = rng.integers(0, 4, size=30)
    state = gibbs.new_state(lik, lik.kernel_data(X), labels, 1.0)
    rows = state.stats[state.active[:state.meta[0]]]
    fast = lik._grid_log_likelihoods(state.params, rows)
    params, _ = lik.hyperparameter_grid()
    d = 3
    slow = np.array([sum(textbook_ng_log_marginal(X[labels == c], lik.kappa, row[2],
                                                  lik.mean_prior_, row[3 + d:])
                         for c in np.unique(labels)) for row in params])
    np.testing.assert_allclose(fast - fast[0], slow - slow[0], atol=1e-8)
    described = lik.describe_params(params)
    np.testing.assert_allclose(described["scale"], lik.grid_scale_)
    np.testing.assert_allclose(described["shape"], lik.grid_shape_)
    # exact mode marginalises the grid: against enumeration of partitions x grid points
    Xs = X[:6]
    small = NormalGamma(hyperprior="grid").fit(Xs)
    params, log_prior = small.hyperparameter_grid()
    parts = set_partitions(6)
    prior = CRP(1.0)
    table = np.column_stack([partition_log_joints(
        6, lambda counts, g=g: prior.log_eppf(counts) + log_prior[g],
        lambda members, g=g: textbook_ng_log_marginal(Xs[members], small.kappa, params[g, 2],
                                                      small.mean_prior_, params[g, 3 + d:]))[1]
        for g in range(len(params))])
    ref = flat_summaries(parts, logsumexp(table, axis=1))
    post = GridMarginalPosterior(prior, small, 12).fit(small.kernel_data(Xs))
    assert post.log_marginal_likelihood == pytest.approx(ref["log_z"], abs=1e-8)
    np.testing.assert_allclose(post.pairwise_marginals(), ref["pairwise"], atol=1e-9)


def test_normal_gamma_gibbs_with_grid_matches_exact():
    rng = np.random.default_rng(2)
    X = np.r_[rng.normal(0, 0.4, (4, 2)), rng.normal(3, 0.4, (4, 2))]
    sampled = DPMixture(likelihood=NormalGamma(hyperprior="grid"), method="gibbs",
                        n_sweeps=6000, random_state=1).fit(X)
    exact = GridMarginalPosterior(sampled.prior_, sampled.model_, 12).fit(sampled._data)
    assert np.abs(exact.pairwise_marginals() - sampled.pairwise_marginals_).max() < 0.04
    assert set(sampled.hyperparameters_) == {"scale", "shape"}
