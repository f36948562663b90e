"""The Wishart block model of fastTIWD: the model identities, incremental conditionals, exact mode."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import gammaln, logsumexp

from oracles import (dense_wishart_loglik, flat_summaries, set_partitions,
                     wishart_log_posteriors)
from sklearn_trellis.models import WishartBlockModel
from sklearn_trellis.models.wishart import (block_statistics, collapsed_log_likelihood,
                                            partition_log_prior, wishart_terms)
from sklearn_trellis.models.wishart_likelihood import WishartBlockLikelihood
from sklearn_trellis.engines.gibbs.sampler import run_chain
from sklearn_trellis.models.priors import CRP, make_prior
from sklearn_trellis.engines import ExactFlatTrellis
from sklearn_trellis.engines.exact.trellis_for_model import trellis_for_model


def _random_gram(rng, n, dim=None):
    X = rng.standard_normal((n, dim or n + 2))
    return X @ X.T / X.shape[1]


def _partition_matrix(labels):
    labels = np.asarray(labels)
    return (labels[:, None] == labels[None, :]).astype(float)


@pytest.mark.parametrize("seed", range(3))
def test_block_determinant_and_trace_identities(seed):
    rng = np.random.default_rng(seed)
    n = 9
    S = _random_gram(rng, n)
    labels = rng.integers(0, 4, n)
    labels = np.unique(labels, return_inverse=True)[1]
    scale, theta = rng.uniform(0.5, 3.0), rng.uniform(0.01, 5.0)
    sigma = scale * (np.eye(n) + theta * _partition_matrix(labels))
    psi = np.linalg.inv(sigma)
    sizes, sbars = block_statistics(S, labels)
    t_value, l_value = wishart_terms(sizes, sbars, np.trace(S), theta)
    assert np.isclose(np.linalg.slogdet(psi)[1], -n * np.log(scale) - l_value, rtol=1e-12)
    assert np.isclose(np.trace(psi @ S), t_value / scale, rtol=1e-12)
    # Sbar_b is the sum of the diagonal block
    for b in range(sizes.size):
        m = labels == b
        assert np.isclose(sbars[b], S[np.ix_(m, m)].sum())
    # fixed-scale log-likelihood equals the dense formula up to nothing but the dropped constant
    dof = 4.0
    dense = dense_wishart_loglik(S, labels, scale, theta, dof)
    formula = (collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=dof,
                                        scale=scale) - 0.5 * n * dof * np.log(scale))
    assert np.isclose(dense, formula, rtol=1e-12)


def test_scale_integral_matches_numerical_integration():
    rng = np.random.default_rng(4)
    n, dof, r0, s0, theta = 5, 3.0, 0.5, 0.7, 0.8
    S = _random_gram(rng, n)
    labels = np.array([0, 0, 1, 1, 2])
    sizes, sbars = block_statistics(S, labels)
    a0, b0 = r0 * dof / 2, s0 * dof / 2

    def log_integrand(scale):
        log_prior = a0 * np.log(b0) - gammaln(a0) - (a0 + 1) * np.log(scale) - b0 / scale
        return dense_wishart_loglik(S, labels, scale, theta, dof) + log_prior

    peak = max(log_integrand(x) for x in np.geomspace(1e-3, 1e3, 400))
    numeric = np.log(quad(lambda x: np.exp(log_integrand(x) - peak), 0, np.inf,
                          limit=200, epsabs=0, epsrel=1e-11)[0]) + peak
    a = (n + r0) * dof / 2
    constant = gammaln(a) + a0 * np.log(b0) - gammaln(a0) - a * np.log(dof / 2)
    closed = collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=dof,
                                      r0=r0, s0=s0) + constant
    assert np.isclose(numeric, closed, rtol=1e-8)


@pytest.mark.parametrize("n_blocks", [None, 2, 4, 9])
def test_partition_prior_sums_to_one(n_blocks):
    partitions = set_partitions(6)
    values = [partition_log_prior(np.bincount(p), 1.7, n_blocks) for p in partitions]
    assert np.isclose(logsumexp(values), 0.0, atol=1e-12)
    if n_blocks == 2:
        assert np.isneginf(partition_log_prior([2, 2, 2], 1.7, 2))


def _candidate_log_posteriors(S, labels, item, candidates, theta, dof, r0, s0, xi, k, scale):
    """Full recomputation: log posterior of every candidate move of ``item``."""
    out = []
    for target in candidates:
        moved = labels.copy()
        moved[item] = target
        moved = np.unique(moved, return_inverse=True)[1]
        sizes, sbars = block_statistics(S, moved)
        out.append(partition_log_prior(sizes, xi, k) + collapsed_log_likelihood(
            sizes, sbars, np.trace(S), len(labels), theta, dof=dof, r0=r0, s0=s0, scale=scale))
    out = np.array(out)
    return out - logsumexp(out)


class _KernelState:
    """Engine-free state built only from the likelihood's kernels (as the engine's rebuild does)."""

    def __init__(self, likelihood, S, labels, capacity):
        self.lik, self.S = likelihood, likelihood.kernel_data(S)
        self.params = likelihood.kernel_params()
        self.stats = np.zeros((capacity, likelihood.n_stats))
        self.shared = np.zeros(likelihood.n_shared)
        self.work = np.zeros(likelihood.work_size(capacity))
        self.labels = np.full(len(labels), -1, dtype=np.int64)
        k = likelihood.kernels
        for c in range(capacity):
            k.reset(self.params, self.stats, c)
        for i, c in enumerate(labels):
            k.prepare(self.params, self.S, self.labels, self.stats, self.shared, self.work, i)
            k.add(self.params, self.S, self.stats, self.shared, self.work, c, i)
            self.labels[i] = c
        self.refresh()

    def refresh(self):
        active = np.unique(self.labels[self.labels >= 0])
        self.lik.kernels.refresh(self.params, self.S, self.labels, self.stats, self.shared,
                                 active, active.size)


@pytest.mark.parametrize("scale,k", [(None, None), (None, 5), (1.3, None), (0.7, 6)])
def test_incremental_conditionals_match_full_recomputation(scale, k):
    rng = np.random.default_rng(11)
    n, dof, r0, s0, xi, theta = 10, 6.0, 0.3, 0.2, 1.4, 0.9
    S = _random_gram(rng, n)
    prior = make_prior(xi, n_components=k)
    lik = WishartBlockLikelihood(dof=dof, r0=r0, s0=s0, scale=scale, theta=theta).fit(S)
    kern = lik.kernels
    for trial in range(6):
        labels = rng.integers(0, 4, n)
        labels[trial] = 7  # item `trial` is a singleton
        labels = np.unique(labels, return_inverse=True)[1]
        state = _KernelState(lik, S, labels, capacity=n + 1)
        # the running sums equal the closed form
        sizes, sbars = block_statistics(S, labels)
        assert np.isclose(kern.log_global(state.params, state.shared),
                          collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=dof,
                                                   r0=r0, s0=s0, scale=scale), rtol=1e-12)
        item = trial if trial % 2 == 0 else int(rng.integers(n))
        c0 = labels[item]
        kern.prepare(state.params, state.S, state.labels, state.stats, state.shared,
                     state.work, item)
        kern.remove(state.params, state.S, state.stats, state.shared, state.work, c0, item)
        state.labels[item] = -1
        others = [c for c in range(labels.max() + 1) if np.any(state.labels == c)]
        fresh = labels.max() + 1
        if c0 not in others:
            kern.reset(state.params, state.stats, c0)
            fresh = c0
        sizes_minus = [np.sum(state.labels == c) for c in others]
        log_w = prior.log_predictive_weights(sizes_minus)
        log_w += np.array([kern.log_predictive(state.params, state.S, state.stats, state.shared,
                                               state.work, c, item) for c in others + [fresh]])
        expected = _candidate_log_posteriors(S, labels, item, others + [n + 1], theta, dof, r0,
                                             s0, xi, k, scale)
        np.testing.assert_allclose(np.exp(log_w - logsumexp(log_w)), np.exp(expected),
                                   rtol=1e-9, atol=1e-14)
        # adding the item back restores the statistics of a recomputation from scratch
        target = others[int(rng.integers(len(others)))] if others else fresh
        kern.add(state.params, state.S, state.stats, state.shared, state.work, target, item)
        state.labels[item] = target
        sizes, sbars = block_statistics(S, np.unique(state.labels, return_inverse=True)[1])
        active = np.unique(state.labels)
        np.testing.assert_allclose(state.stats[active, 0], sizes)
        np.testing.assert_allclose(state.stats[active, 1], sbars, rtol=1e-12, atol=1e-12)
        assert np.isclose(kern.log_global(state.params, state.shared),
                          collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=dof,
                                                   r0=r0, s0=s0, scale=scale), rtol=1e-12)


def test_theta_grid_posterior_matches_direct_evaluation():
    rng = np.random.default_rng(3)
    S = _random_gram(rng, 12)
    labels = rng.integers(0, 3, 12)
    sizes, sbars = block_statistics(S, labels)
    grid = np.geomspace(1e-2, 10, 7)
    lik = WishartBlockLikelihood(dof=5.0, theta_grid=grid).fit(S)
    direct = np.array([collapsed_log_likelihood(sizes, sbars, np.trace(S), 12, t, dof=5.0,
                                                r0=0.01, s0=0.01) for t in grid])
    np.testing.assert_allclose(lik.theta_log_weights(sizes, sbars), direct - logsumexp(direct),
                               rtol=1e-12)
    # resampling draws from these weights
    state = _KernelState(lik, S, labels, capacity=13)
    active = np.unique(labels)
    rs = np.random.RandomState(0)
    draws = [lik.resample_params(state.params, state.stats, state.shared, None, active, rs)[0]
             for _ in range(4000)]
    freq = np.array([np.mean(np.isclose(draws, t)) for t in grid])
    probs = np.exp(direct - logsumexp(direct))
    assert np.all(np.abs(freq - probs) < 5 * np.sqrt(probs * (1 - probs) / 4000) + 1e-3)


@pytest.mark.parametrize("seed,k", [(0, None), (1, None), (2, 3)])
def test_exact_model_matches_enumeration(seed, k):
    rng = np.random.default_rng(seed)
    n, scale, theta, dof, xi = 6, 0.8, 1.5, 3.0, 0.9
    S = _random_gram(rng, n, dim=3)
    model = WishartBlockModel(dof=dof, scale=scale, theta=theta, alpha=xi,
                              n_blocks=k).fit(S)
    table = model.log_potential_table()
    for mask in rng.integers(1, 1 << n, 10):
        members = [i for i in range(n) if mask >> i & 1]
        assert np.isclose(table[mask], model.cluster_log_potential(members), rtol=1e-12)
    partitions = set_partitions(n)
    brute = wishart_log_posteriors(S, partitions, scale, theta, dof, xi, k)
    ours = np.array([model.log_potential(p) for p in partitions])
    np.testing.assert_allclose(ours, brute, rtol=1e-11, atol=1e-10)
    finite = np.isfinite(brute)
    exact = flat_summaries(partitions[finite], brute[finite])
    trellis = trellis_for_model(model)
    assert np.isclose(trellis.log_partition_function + model.log_potential_constant(),
                      exact["log_z"], rtol=1e-11)
    np.testing.assert_allclose(trellis.pairwise_marginals(), exact["pairwise"], atol=1e-12)


@pytest.mark.parametrize("n_sweeps", [
    5000, pytest.param(80000, marks=pytest.mark.slow)])
def test_gibbs_matches_exact_posterior(n_sweeps):
    """scale and theta fixed, n = 7: co-clustering frequencies within Monte Carlo error."""
    rng = np.random.default_rng(5)
    n, scale, theta, dof, xi = 7, 1.0, 2.0, 2.0, 1.0
    X = rng.standard_normal((n, 2)) + np.repeat([[0.0, 0.0], [1.5, 1.5]], [4, 3], axis=0)
    S = X @ X.T / 2.0
    model = WishartBlockModel(dof=dof, scale=scale, theta=theta, alpha=xi).fit(S)
    exact = ExactFlatTrellis(model.log_potential_table()).fit().pairwise_marginals()
    iu = np.triu_indices(n, 1)
    assert np.sum((exact[iu] > 0.1) & (exact[iu] < 0.9)) >= 5  # a spread-out posterior
    lik = WishartBlockLikelihood(dof=dof, r0=0.0, s0=0.0, scale=scale, theta=theta).fit(S)
    n_batches = 20
    result = run_chain(lik, CRP(xi), lik.kernel_data(S), n_sweeps=n_sweeps + 100, burn_in=100,
                       init_labels=np.arange(n), random_state=1)
    z = result.samples
    together = z[:, iu[0]] == z[:, iu[1]]
    freq = together.mean(axis=0)
    # Monte Carlo error by batch means (Gibbs draws are autocorrelated)
    batches = together.reshape(n_batches, -1, together.shape[1]).mean(axis=1)
    se = batches.std(axis=0, ddof=1) / np.sqrt(n_batches)
    assert np.all(np.abs(freq - exact[iu]) < 5 * se + 2e-3), np.max(np.abs(freq - exact[iu]) / se)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernel_data_copies_only_a_small_read_only_matrix(dtype, monkeypatch):
    from sklearn_trellis._core import validation
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(6, 3))
    S = (Y @ Y.T).astype(dtype)
    S.setflags(write=False)
    lik = WishartBlockLikelihood(dof=3.0).fit(S)
    small = lik.kernel_data(S)
    assert small.dtype == dtype and small.flags.writeable and not np.shares_memory(small, S)
    np.testing.assert_array_equal(small, S)
    monkeypatch.setattr(validation, "READONLY_COPY_MAX_BYTES", 0)
    large = lik.kernel_data(S)
    assert np.shares_memory(large, S) and not large.flags.writeable


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 5, 40, 101])
def test_interpreted_block_sums_are_the_kernels(monkeypatch, dtype, n):
    """Block and column sums of a small labelling, run interpreted, equal the compiled
    kernels' bit for bit (the compiled ones run at every size with the threshold 0)."""
    from sklearn_trellis._core import interpreted
    from sklearn_trellis.models import wishart
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 3))
    S = (X @ X.T).astype(dtype)
    labels = rng.integers(0, 4, n)

    def run(items):
        monkeypatch.setattr(wishart, "INTERPRETED_BLOCK_ITEMS", items)
        return (*wishart.block_statistics(S, labels), wishart.block_cross_sums(S, labels))

    compiled = run(0)
    assert interpreted._spent == 0.0
    ours = run(100)
    assert (interpreted._spent > 0.0) == (n <= 100)
    for mine, theirs in zip(ours, compiled):
        assert mine.dtype == theirs.dtype == np.float64
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_allclose(np.diag(compiled[2]), compiled[1], rtol=1e-12, atol=1e-9)
