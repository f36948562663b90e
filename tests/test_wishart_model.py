"""The Wishart block model of fastTIWD: spec identities, incremental conditionals, exact mode."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import gammaln, logsumexp

from brute_force import flat_summaries, set_partitions
from sklearn_trellis.models import WishartBlockModel
from sklearn_trellis.models import _tiwd_kernels as kernels
from sklearn_trellis.models.wishart import (block_statistics, collapsed_log_likelihood,
                                            partition_log_prior, wishart_terms)
from sklearn_trellis.models.wishart_gibbs import WishartGibbsState
from sklearn_trellis.trellis import ExactFlatTrellis


def _random_gram(rng, n, dim=None):
    X = rng.standard_normal((n, dim or n + 2))
    return X @ X.T / X.shape[1]


def _partition_matrix(labels):
    labels = np.asarray(labels)
    return (labels[:, None] == labels[None, :]).astype(float)


def _dense_wishart_loglik(S, labels, alpha, theta, dof):
    """(d/2) log det Psi - (d/2) tr(Psi S) with Psi = (alpha (I + theta B))^{-1}, densely."""
    sigma = alpha * (np.eye(len(labels)) + theta * _partition_matrix(labels))
    psi = np.linalg.inv(sigma)
    return 0.5 * dof * np.linalg.slogdet(psi)[1] - 0.5 * dof * np.trace(psi @ S)


@pytest.mark.parametrize("seed", range(3))
def test_block_determinant_and_trace_identities(seed):
    rng = np.random.default_rng(seed)
    n = 9
    S = _random_gram(rng, n)
    labels = rng.integers(0, 4, n)
    labels = np.unique(labels, return_inverse=True)[1]
    alpha, theta = rng.uniform(0.5, 3.0), rng.uniform(0.01, 5.0)
    sigma = alpha * (np.eye(n) + theta * _partition_matrix(labels))
    psi = np.linalg.inv(sigma)
    sizes, sbars = block_statistics(S, labels)
    t_value, l_value = wishart_terms(sizes, sbars, np.trace(S), theta)
    assert np.isclose(np.linalg.slogdet(psi)[1], -n * np.log(alpha) - l_value, rtol=1e-12)
    assert np.isclose(np.trace(psi @ S), t_value / alpha, rtol=1e-12)
    # Sbar_b is the sum of the diagonal block
    for b in range(sizes.size):
        m = labels == b
        assert np.isclose(sbars[b], S[np.ix_(m, m)].sum())
    # fixed-alpha log-likelihood equals the dense formula up to nothing but the dropped constant
    dof = 4.0
    dense = _dense_wishart_loglik(S, labels, alpha, theta, dof)
    formula = (collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=dof,
                                        alpha=alpha) - 0.5 * n * dof * np.log(alpha))
    assert np.isclose(dense, formula, rtol=1e-12)


def test_alpha_integral_matches_numerical_integration():
    rng = np.random.default_rng(4)
    n, dof, r0, s0, theta = 5, 3.0, 0.5, 0.7, 0.8
    S = _random_gram(rng, n)
    labels = np.array([0, 0, 1, 1, 2])
    sizes, sbars = block_statistics(S, labels)
    a0, b0 = r0 * dof / 2, s0 * dof / 2

    def log_integrand(alpha):
        log_prior = a0 * np.log(b0) - gammaln(a0) - (a0 + 1) * np.log(alpha) - b0 / alpha
        return _dense_wishart_loglik(S, labels, alpha, theta, dof) + log_prior

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


def _candidate_log_posteriors(S, labels, item, candidates, theta, dof, r0, s0, xi, k, alpha):
    """Full recomputation: log posterior of every candidate move of ``item``."""
    out = []
    for target in candidates:
        moved = labels.copy()
        moved[item] = target
        moved = np.unique(moved, return_inverse=True)[1]
        sizes, sbars = block_statistics(S, moved)
        out.append(partition_log_prior(sizes, xi, k) + collapsed_log_likelihood(
            sizes, sbars, np.trace(S), len(labels), theta, dof=dof, r0=r0, s0=s0, alpha=alpha))
    out = np.array(out)
    return out - logsumexp(out)


@pytest.mark.parametrize("alpha,k", [(None, None), (None, 5), (1.3, None), (0.7, 6)])
def test_incremental_conditionals_match_full_recomputation(alpha, k):
    rng = np.random.default_rng(11)
    n, dof, r0, s0, xi, theta = 10, 6.0, 0.3, 0.2, 1.4, 0.9
    S = _random_gram(rng, n).astype(np.float64)
    for trial in range(6):
        labels = rng.integers(0, 4, n)
        labels[trial] = 7  # make item `trial` a singleton sometimes
        state = WishartGibbsState(S, labels, theta_grid=[theta], theta=theta,
                                  sample_theta=False, dof=dof, r0=r0, s0=s0,
                                  concentration=xi, n_blocks=k, alpha=alpha)
        item = int(rng.integers(n)) if trial % 2 else trial
        z_before = state.z.copy()
        k_before = state.n_clusters
        singleton = np.sum(z_before == z_before[item]) == 1
        inv_alpha = 0.0 if alpha is None else 1.0 / alpha
        inv_k = 0.0 if k is None else 1.0 / k
        new_k = kernels.gibbs_sweep(
            state.S, state.z, state.sizes, state.sbars, state.slots, state.pos, k_before,
            np.array([item]), np.array([0.5]), state.trace, theta, dof, state.exponent, s0,
            inv_alpha, xi, inv_k, state._row, state._logits)
        k_scored = k_before - int(singleton)
        probs = state._logits[:k_scored + 1] / state._logits[:k_scored + 1].sum()
        candidates = list(state.slots[:k_scored]) + [n + 1]  # n + 1: a new block
        expected = _candidate_log_posteriors(S, z_before, item, candidates, theta, dof, r0, s0,
                                             xi, k, alpha)
        np.testing.assert_allclose(probs, np.exp(expected), rtol=1e-9, atol=1e-14)
        # the incremental statistics equal a recomputation from scratch
        state.n_clusters = int(new_k)
        sizes, sbars = state.block_stats()
        fresh = WishartGibbsState(S, state.z, theta_grid=[theta], theta=theta, dof=dof,
                                  r0=r0, s0=s0, concentration=xi)
        fresh_sizes, fresh_sbars = fresh.block_stats()
        order = np.argsort(sizes * 1e6 + sbars)
        fresh_order = np.argsort(fresh_sizes * 1e6 + fresh_sbars)
        np.testing.assert_allclose(sizes[order], fresh_sizes[fresh_order])
        np.testing.assert_allclose(sbars[order], fresh_sbars[fresh_order], rtol=1e-12)


def test_sweeps_keep_statistics_exact_and_clamped_items_fixed():
    rng = np.random.default_rng(2)
    n = 40
    S = _random_gram(rng, n, dim=5)
    clamped = np.zeros(n, bool)
    clamped[:6] = True
    labels = np.arange(n)
    labels[:6] = [0, 0, 0, 1, 1, 1]
    state = WishartGibbsState(S, labels, clamped=clamped, theta_grid=np.geomspace(1e-2, 10, 9),
                              theta=1.0, dof=5.0, r0=0.01, s0=0.01, concentration=1.0)
    rs = np.random.RandomState(0)
    for _ in range(30):
        state.sweep(rs)
        current = state.labels()
        assert current[0] == current[1] == current[2] != current[3] == current[4] == current[5]
    sizes, sbars = state.block_stats()
    ref_sizes, ref_sbars = block_statistics(S, state.labels())
    np.testing.assert_allclose(np.sort(sizes), np.sort(ref_sizes))
    np.testing.assert_allclose(np.sort(sbars), np.sort(ref_sbars), rtol=1e-9, atol=1e-9)


def _brute_force_log_posterior(S, partitions, alpha, theta, dof, xi):
    values = []
    for p in partitions:
        prior = partition_log_prior(np.bincount(p), xi, None)
        values.append(prior + _dense_wishart_loglik(S, p, alpha, theta, dof))
    return np.array(values)


@pytest.mark.parametrize("seed", range(2))
def test_exact_model_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    n, alpha, theta, dof, xi = 6, 0.8, 1.5, 3.0, 0.9
    S = _random_gram(rng, n, dim=3)
    model = WishartBlockModel(dof=dof, alpha=alpha, theta=theta, concentration=xi).fit(S)
    table = model.log_potential_table()
    for mask in rng.integers(1, 1 << n, 10):
        members = [i for i in range(n) if mask >> i & 1]
        assert np.isclose(table[mask], model.cluster_log_potential(members), rtol=1e-12)
    partitions = set_partitions(n)
    brute = _brute_force_log_posterior(S, partitions, alpha, theta, dof, xi)
    ours = np.array([model.log_potential(p) for p in partitions])
    np.testing.assert_allclose(ours, brute, rtol=1e-11, atol=1e-10)
    exact = flat_summaries(partitions, brute)
    trellis = ExactFlatTrellis(table).fit()
    assert np.isclose(trellis.log_partition_function + model.log_potential_constant(),
                      exact["log_z"], rtol=1e-11)
    np.testing.assert_allclose(trellis.pairwise_marginals(), exact["pairwise"], atol=1e-12)


def test_gibbs_matches_exact_posterior_fast():
    """alpha and theta fixed, n = 7: co-clustering frequencies within Monte Carlo error."""
    rng = np.random.default_rng(5)
    n, alpha, theta, dof, xi = 7, 1.0, 2.0, 2.0, 1.0
    X = rng.standard_normal((n, 2)) + np.repeat([[0.0, 0.0], [1.5, 1.5]], [4, 3], axis=0)
    S = X @ X.T / 2.0
    model = WishartBlockModel(dof=dof, alpha=alpha, theta=theta, concentration=xi).fit(S)
    exact = ExactFlatTrellis(model.log_potential_table()).fit().pairwise_marginals()
    off = exact[np.triu_indices(n, 1)]
    assert np.sum((off > 0.1) & (off < 0.9)) >= 5  # a spread-out posterior, not a point mass
    state = WishartGibbsState(S, np.arange(n), theta_grid=[theta], theta=theta,
                              sample_theta=False, dof=dof, r0=0.0, s0=0.0,
                              concentration=xi, alpha=alpha)
    rs = np.random.RandomState(1)
    n_sweeps, burn, n_batches = 30000, 100, 25
    together = np.zeros((n_sweeps, n * (n - 1) // 2), dtype=bool)
    iu = np.triu_indices(n, 1)
    for sweep in range(n_sweeps + burn):
        state.sweep(rs)
        if sweep >= burn:
            z = state.z
            together[sweep - burn] = z[iu[0]] == z[iu[1]]
    freq = together.mean(axis=0)
    # Monte Carlo error by batch means (Gibbs draws are autocorrelated)
    batches = together.reshape(n_batches, -1, together.shape[1]).mean(axis=1)
    se = batches.std(axis=0, ddof=1) / np.sqrt(n_batches)
    assert np.all(np.abs(freq - exact[iu]) < 5 * se + 2e-3), np.max(np.abs(freq - exact[iu]) / se)
