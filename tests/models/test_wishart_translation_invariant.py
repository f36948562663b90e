"""The translation-invariant (TIWD) likelihood of distances: block formulas, kernels, predictive
and data terms against dense brute force (explicit n x n matrices, pseudo-determinants)."""

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.spatial.distance import pdist, squareform

from oracles import translation_invariant_wishart_log_likelihood as dense_log_likelihood
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.models.priors import make_prior
from sklearn_trellis.models.wishart import (block_cross_sums, block_statistics,
                                            collapsed_log_likelihood, data_log_density_terms,
                                            log_likelihood_exponent, new_item_data_terms,
                                            new_item_log_likelihoods)
from sklearn_trellis.models.wishart_likelihood import WishartBlockLikelihood


def _points(rng, n, dim=3):
    X = rng.standard_normal((n, dim))
    return X, squareform(pdist(X, "sqeuclidean"))


def _any_inner_products(rng, D):
    """A member ``-D/2 + 1 u^T + u 1^T`` of the inner products with distances ``D``."""
    u = rng.standard_normal(D.shape[0])
    return -0.5 * D + np.add.outer(u, u)


def _prior_constant(n_items, dof, r0=0.01, s0=0.01):
    """The factors of ``scale``'s integral that the block formula leaves out."""
    a = log_likelihood_exponent(n_items - 1, dof, r0)
    a0, b0 = 0.5 * r0 * dof, 0.5 * s0 * dof
    return gammaln(a) - a * np.log(0.5 * dof) + a0 * np.log(b0) - gammaln(a0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [None, 0.7])
def test_block_formula_matches_dense(seed, scale):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    dof, theta = float(rng.choice([2.0, 5.0, 11.0])), float(rng.choice([0.1, 1.0, 3.0]))
    _, D = _points(rng, n)
    S = _any_inner_products(rng, D)
    labels = np.unique(rng.integers(0, 3, n), return_inverse=True)[1]
    sizes, sbars = block_statistics(S, labels)
    ours = collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=dof, scale=scale,
                                    cross=block_cross_sums(S, labels))
    ours += (_prior_constant(n, dof) if scale is None else -0.5 * dof * (n - 1) * np.log(scale))
    assert np.isclose(ours, dense_log_likelihood(D, labels, theta, dof=dof, scale=scale),
                      rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("scale", [None, 0.8])
def test_kernels_match_formula(scale):
    """Running sums after sweeps and theta updates, and every candidate's conditional."""
    rng = np.random.RandomState(3)
    n, dof = 9, 6.0
    _, D = _points(np.random.default_rng(3), n, dim=4)
    S = _any_inner_products(np.random.default_rng(4), D)
    likelihood = WishartBlockLikelihood(dof=dof, scale=scale,
                                        translation_invariant=True).fit(S)
    data = likelihood.kernel_data(S)
    # a small capacity makes the sampler grow the slots (grow_work)
    state = gibbs.new_state(likelihood, data, rng.randint(0, 3, n), 1.0, capacity=4)
    kernels = likelihood.kernels

    def formula(labels, theta):
        z = np.unique(labels, return_inverse=True)[1]
        sizes, sbars = block_statistics(S, z)
        return collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=dof,
                                        scale=scale, cross=block_cross_sums(S, z))

    pp = make_prior(1.0).kernel_params()
    for _ in range(6):
        gibbs.sweep(state, likelihood, pp, data, rng)
        theta = state.params[0]
        assert np.isclose(kernels.log_global(state.params, state.shared),
                          formula(state.labels, theta), rtol=1e-11)
        gibbs.set_params(state, likelihood, data, likelihood.resample_state_params(state, rng))
        assert np.isclose(kernels.log_global(state.params, state.shared),
                          formula(state.labels, state.params[0]), rtol=1e-11)
    i = 4
    kernels.prepare(state.params, data, state.labels, state.stats, state.shared, state.work, i)
    kernels.remove(state.params, data, state.stats, state.shared, state.work, state.labels[i], i)
    labels = state.labels.copy()
    base = kernels.log_global(state.params, state.shared)
    free = state.free[state.meta[1] - 1]
    for c in list(state.active[:state.meta[0]]) + [free]:
        labels[i] = c
        value = base + kernels.log_predictive(state.params, data, state.stats, state.shared,
                                              state.work, c, i)
        assert np.isclose(value, formula(labels, state.params[0]), rtol=1e-11)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scale", [None, 0.9])
def test_new_item_matches_dense(seed, scale):
    """Joining each block or a new one: the dense likelihood of n + 1 items minus that of n."""
    rng = np.random.default_rng(seed)
    n, dof, theta = int(rng.integers(2, 7)), float(rng.choice([3.0, 8.0])), 0.6
    _, D = _points(rng, n + 1)
    S_big = _any_inner_products(rng, D)
    S, rows, sxx = S_big[:n, :n], S_big[n:, :n], np.diag(S_big)[n:]
    labels = np.unique(rng.integers(0, 3, n), return_inverse=True)[1]
    k = labels.max() + 1
    sizes, sbars = block_statistics(S, labels)
    row_sums = np.stack([np.bincount(labels, weights=r, minlength=k) for r in rows])
    ours = new_item_log_likelihoods(sizes, sbars, row_sums, sxx, np.trace(S), n, theta,
                                    dof=dof, r0=0.01, s0=0.01, scale=scale,
                                    cross=block_cross_sums(S, labels))
    before = dense_log_likelihood(D[:n, :n], labels, theta, dof=dof, scale=scale)
    for c in range(k + 1):
        after = dense_log_likelihood(D, np.append(labels, c), theta, dof=dof, scale=scale)
        assert np.isclose(ours[0, c], after - before, rtol=1e-8, atol=1e-8)


def _contrast(n):
    """``(n - 1, n)`` orthonormal rows orthogonal to ``1``."""
    q, _ = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, :n - 1]]))
    return q[:, 1:].T


@pytest.mark.parametrize("dof", [7.0, 12.5])
def test_translation_invariant_data_terms_match_contrasts(dof):
    """The data terms of a new item: those of ``L S L^T`` for n + 1 items minus those for n."""
    rng = np.random.default_rng(5)
    n = 5
    _, D = _points(rng, n + 1, dim=6)
    S_big = _any_inner_products(rng, D)
    S = S_big[:n, :n]
    ours, rank = new_item_data_terms(S, S_big[n:, :n], np.diag(S_big)[n:], dof=dof,
                                     translation_invariant=True)
    big = _contrast(n + 1)
    small = _contrast(n)
    expected = (data_log_density_terms(big @ S_big @ big.T, dof=dof)[0]
                - data_log_density_terms(small @ S @ small.T, dof=dof)[0])
    assert rank == n - 1
    assert np.isclose(ours[0], expected, rtol=1e-10)


@pytest.mark.parametrize("scale", [None, 0.8])
def test_interpreted_refresh_work_is_the_kernels(monkeypatch, scale):
    """``refresh_work`` run interpreted on few clusters: the same chain as the compiled
    kernel (threshold 0), states and log joints bit for bit."""
    from sklearn_trellis._core import interpreted
    from sklearn_trellis.models import wishart_likelihood
    interpreted_runs = []

    def counted_call(kernel, *args, small, **options):
        interpreted_runs.append(bool(small and interpreted.interpreting()))
        return interpreted.call(kernel, *args, small=small, **options)

    monkeypatch.setattr(wishart_likelihood, "call", counted_call)
    n = 12
    _, D = _points(np.random.default_rng(5), n, dim=3)
    S = _any_inner_products(np.random.default_rng(6), D)
    likelihood = WishartBlockLikelihood(dof=5.0, scale=scale, translation_invariant=True).fit(S)
    data = likelihood.kernel_data(S)
    pp = make_prior(1.0).kernel_params()

    def run(clusters):
        monkeypatch.setattr(wishart_likelihood, "INTERPRETED_REFRESH_CLUSTERS", clusters)
        rng = np.random.RandomState(0)
        state = gibbs.new_state(likelihood, data, rng.randint(0, 4, n), 1.0)
        trace = []
        for _ in range(5):
            gibbs.sweep(state, likelihood, pp, data, rng, n_split_merge=3)
            gibbs.set_params(state, likelihood, data, likelihood.resample_state_params(state, rng))
            trace.append((state.labels.copy(), state.stats.copy(), state.shared.copy(),
                          state.work.copy(), gibbs.log_joint(state, likelihood, pp)))
        return trace

    compiled = run(-1)
    assert interpreted_runs and not any(interpreted_runs)
    del interpreted_runs[:]
    ours = run(50)
    assert interpreted_runs and all(interpreted_runs)
    for mine, theirs in zip(ours, compiled):
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a, b)
