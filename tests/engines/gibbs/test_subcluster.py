"""The sub-cluster sampler against the exact posterior, its likelihood kernels and its driver."""

import numba
import numpy as np
import pytest

from numba_threads import numba_threads
from sklearn_trellis.engines.exact.trellis_for_model import trellis_for_model
from sklearn_trellis.engines.gibbs import shards, subcluster
from sklearn_trellis.models import (BetaBernoulli, DirichletMultinomial, NormalGamma,
                                    NormalInverseWishart)
from sklearn_trellis.models.dp_mixture import MixturePartitionModel
from sklearn_trellis.models.priors import CRP, DirichletMultinomialPrior, PitmanYor
from sklearn_trellis.summaries import pairwise_cooccurrence


def small_data(n, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]])
    return centres[np.arange(n) % 3] + rng.normal(0, 0.9, (n, 2))


def exact_summaries(prior, lik, X):
    trellis = trellis_for_model(MixturePartitionModel(prior, lik).fit(X), max_items=12)
    return trellis.pairwise_marginals(), trellis.n_clusters_distribution()


def check_against_exact(prior, X, n_sweeps, tol, lik=None, seed=0, data=None, **kwargs):
    """``data``: the rows, or a shard executor of them (default: ``X`` in one shard)."""
    lik = lik or NormalInverseWishart(kappa=0.2, hyperprior="fixed").fit(X)
    pair_exact, k_exact = exact_summaries(prior, lik, X)
    n = X.shape[0]
    data = lik.check_sampler_data(X) if data is None else data
    result = subcluster.run_chain(lik, prior, data, n_sweeps=n_sweeps,
                                  burn_in=50, init_labels=np.zeros(n, np.int64),
                                  random_state=seed, **kwargs)
    k = result.samples.max(axis=1) + 1
    k_dist = np.bincount(k - 1, minlength=n) / k.size
    assert np.abs(pairwise_cooccurrence(result.samples) - pair_exact).max() < tol
    assert np.abs(k_dist - k_exact).max() < tol
    # the exact values must not be trivial, or the test could not fail
    assert pair_exact[np.triu_indices(n, 1)].std() > 0.1
    return result


LIKELIHOOD_DATA = {
    "niw": (NormalInverseWishart(kappa=0.3, dof=4.0, hyperprior="fixed"),
            lambda rng: rng.normal(size=(9, 2)) * 3 + 1),
    "normal_gamma": (NormalGamma(), lambda rng: rng.normal(size=(9, 3)) * 2 - 1),
    "bernoulli": (BetaBernoulli(), lambda rng: (rng.random((9, 4)) < 0.3).astype(float)),
    "multinomial": (DirichletMultinomial(), lambda rng: rng.poisson(2.0, (9, 3)).astype(float)),
}


@pytest.mark.parametrize("name", sorted(LIKELIHOOD_DATA))
def test_sufficient_statistics_give_the_marginal_likelihood(name):
    """``suff`` of blocks add up, and ``suff_to_stats`` + ``log_cluster`` is ``log m(X)``."""
    lik, make = LIKELIHOOD_DATA[name]
    rng = np.random.default_rng(1)
    X = make(rng)
    lik.fit(X)
    params = lik.kernel_params()
    fns = lik.uncollapsed_kernels
    suff = np.zeros((2, lik.n_suff))
    fns.suff_add_rows(params, X, np.arange(4), suff, 0)
    fns.suff_add_rows(params, X, np.arange(4, 9), suff, 1)
    whole = np.zeros((1, lik.n_suff))
    fns.suff_add_rows(params, X, np.arange(9), whole, 0)
    np.testing.assert_allclose(suff.sum(axis=0), whole[0], rtol=1e-12, atol=1e-12)
    stats = np.zeros((1, lik.n_stats))
    fns.suff_to_stats(params, whole, stats, 0)
    value = lik.kernels.log_cluster(params, stats, np.zeros(1), 0)
    assert value == pytest.approx(lik.log_marginal(X), rel=1e-10, abs=1e-10)


BLOCK_CASES = {  # the Gaussians' BLAS kernels (NIW below and above its loop width), and
    # the generic fallback (log_density_rows per cluster) of the others
    "niw_d3": (NormalInverseWishart(kappa=0.3, hyperprior="fixed"),
               lambda rng, n: rng.normal(size=(n, 3)) * 3 + 1),
    "niw_d30": (NormalInverseWishart(kappa=0.3, hyperprior="fixed"),
                lambda rng, n: rng.normal(size=(n, 30)) @ rng.normal(size=(30, 30)) + 5),
    "normal_gamma": (NormalGamma(hyperprior="fixed"),
                     lambda rng, n: rng.normal(size=(n, 40)) * rng.uniform(0.1, 3, 40) - 2),
    "bernoulli": LIKELIHOOD_DATA["bernoulli"][:1] + (
        lambda rng, n: (rng.random((n, 4)) < 0.3).astype(float),),
    "multinomial": LIKELIHOOD_DATA["multinomial"][:1] + (
        lambda rng, n: rng.poisson(2.0, (n, 3)).astype(float),),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(BLOCK_CASES))
def test_block_log_density_equals_the_row_kernel(name, dtype):
    """``log_density_block`` (all clusters at once) equals ``log_density_rows`` cluster by
    cluster to 1e-12 of the largest value, on float64 and float32 rows (read as they are),
    and a row's value does not depend on the rows scored with it (bit for bit)."""
    from sklearn_trellis.models.likelihood import uncollapsed_bindings
    lik, make = BLOCK_CASES[name]
    rng = np.random.default_rng(7)
    X = make(rng, 700).astype(dtype)
    lik.fit(X)
    data = lik.check_sampler_data(X)
    assert data.dtype == dtype
    params = lik.kernel_params()
    fns = lik.uncollapsed_kernels
    block = uncollapsed_bindings(lik)["lik_log_density_block"]
    n_clusters = 6
    suff = np.zeros((n_clusters, lik.n_suff))
    stats = np.zeros((n_clusters, lik.n_stats))
    theta = np.zeros((n_clusters + 1, lik.n_theta))   # a spare row: only K rows are read
    numba.njit(lambda: np.random.seed(11))()
    for c in range(n_clusters):
        fns.suff_add_rows(params, data, np.arange(60 * c, 60 * c + 50), suff, c)
        fns.suff_to_stats(params, suff, stats, c)
        fns.draw_theta(params, stats, c, theta)
    theta[n_clusters] = np.nan
    rows = rng.permutation(700)[:600].astype(np.int64)
    expected = np.empty((n_clusters, rows.size))
    for c in range(n_clusters):
        fns.log_density_rows(params, theta, c, data, rows, expected[c])
    out = np.empty((n_clusters, rows.size))
    block(params, theta, n_clusters, data, rows, out)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert np.isfinite(out).all()
    for start, stop in ((0, 1), (100, 137), (250, 600)):
        part = np.empty((n_clusters, stop - start))
        block(params, theta, n_clusters, data, rows[start:stop], part)
        np.testing.assert_array_equal(part, out[:, start:stop])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(BLOCK_CASES))
def test_screened_log_density_keeps_every_entry_that_can_matter(name, dtype):
    """``log_density_screen`` (the label pass's block): every entry whose ``log_pi + out``
    lies within ``window`` of its row's largest is ``log_density_block``'s (to 1e-12 of
    the largest value), every entry left out (``-inf``) lies more than ``window`` below;
    the Normal-Gamma's float32 screen leaves some out, the others none; a row's values do
    not depend on the rows scored with it; a parameter too large for float32 is scored
    in float64."""
    from sklearn_trellis.models.likelihood import uncollapsed_bindings
    lik, make = BLOCK_CASES[name]
    rng = np.random.default_rng(8)
    X = make(rng, 700).astype(dtype)
    lik.fit(X)
    data = lik.check_sampler_data(X)
    params = lik.kernel_params()
    fns = lik.uncollapsed_kernels
    bindings = uncollapsed_bindings(lik)
    block, screen = bindings["lik_log_density_block"], bindings["lik_log_density_screen"]
    n_clusters = 6
    suff = np.zeros((n_clusters, lik.n_suff))
    stats = np.zeros((n_clusters, lik.n_stats))
    theta = np.zeros((n_clusters, lik.n_theta))
    numba.njit(lambda: np.random.seed(12))()
    for c in range(n_clusters):
        fns.suff_add_rows(params, data, np.arange(100 * c, 100 * c + 80), suff, c)
        fns.suff_to_stats(params, suff, stats, c)
        fns.draw_theta(params, stats, c, theta)
    log_pi = np.log(rng.dirichlet(np.ones(n_clusters)))
    rows = rng.permutation(700)[:600].astype(np.int64)
    expected = np.empty((n_clusters, rows.size))
    block(params, theta, n_clusters, data, rows, expected)
    total = expected + log_pi[:, None]
    gap = total.max(axis=0) - total
    for window in (39.0, 2.0):
        out = np.empty((n_clusters, rows.size))
        screen(params, theta, n_clusters, data, rows, log_pi, window, out)
        kept = np.isfinite(out)
        assert np.all(out[~kept] == -np.inf)
        assert np.all(kept[gap <= window])
        assert np.all(gap[~kept] > window)
        np.testing.assert_allclose(out[kept], expected[kept], rtol=0,
                                   atol=1e-12 * np.abs(expected).max())
        if name == "normal_gamma" and window == 2.0:
            assert 0 < np.sum(~kept) < kept.size
        elif name != "normal_gamma":
            assert kept.all()
        part = np.empty((n_clusters, 37))
        screen(params, theta, n_clusters, data, rows[100:137], log_pi, window, part)
        np.testing.assert_array_equal(part, out[:, 100:137])
    if name == "normal_gamma":   # tau beyond float32's safe range: every entry in float64
        theta[0, lik.n_features_in_] = 1e16
        block(params, theta, n_clusters, data, rows, expected)
        out = np.empty((n_clusters, rows.size))
        screen(params, theta, n_clusters, data, rows, log_pi, 39.0, out)
        np.testing.assert_array_equal(out, expected)


def _posterior_draws(lik, X, n_draws):
    params = lik.kernel_params()
    fns = lik.uncollapsed_kernels
    suff = np.zeros((1, lik.n_suff))
    fns.suff_add_rows(params, X, np.arange(X.shape[0]), suff, 0)
    stats = np.zeros((1, lik.n_stats))
    fns.suff_to_stats(params, suff, stats, 0)
    theta = np.empty((n_draws, lik.n_theta))
    numba.njit(lambda: np.random.seed(3))()
    for t in range(n_draws):
        fns.draw_theta(params, stats, 0, theta[t:t + 1])
    return theta


def test_niw_draws_match_the_posterior_and_score_gaussian_densities():
    """Posterior means of the precision (``nu_n Psi_n^-1``) and of the mean (``mu_n``),
    and ``log_density_rows`` equals scipy's Gaussian log density of each draw."""
    from scipy.stats import multivariate_normal
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 3)) @ np.array([[1.0, 0.4, 0], [0, 1, 0.3], [0, 0, 0.5]])
    lik = NormalInverseWishart(kappa=0.5, dof=5.0, hyperprior="fixed").fit(X)
    d, n = 3, 12
    theta = _posterior_draws(lik, X, 4000)
    kappa_n, nu_n = 0.5 + n, 5.0 + n
    mean = X.mean(axis=0)
    diff = mean - lik.mean_prior_
    psi_n = (lik.scale_matrix_ + (X - mean).T @ (X - mean)
             + 0.5 * n / kappa_n * np.outer(diff, diff))
    mu_n = (0.5 * lik.mean_prior_ + n * mean) / kappa_n
    factors = theta[:, d:d + d * d].reshape(-1, d, d)          # R^T
    precisions = np.swapaxes(factors, 1, 2) @ factors
    expected = nu_n * np.linalg.inv(psi_n)
    spread = precisions.std(axis=0) / np.sqrt(theta.shape[0])
    assert np.all(np.abs(precisions.mean(axis=0) - expected) < 5 * spread + 1e-12)
    mu_spread = theta[:, :d].std(axis=0) / np.sqrt(theta.shape[0])
    assert np.all(np.abs(theta[:, :d].mean(axis=0) - mu_n) < 5 * mu_spread)
    out = np.empty(4)
    lik.uncollapsed_kernels.log_density_rows(lik.kernel_params(), theta, 7, X, np.arange(4), out)
    reference = multivariate_normal(theta[7, :d], np.linalg.inv(precisions[7])).logpdf(X[:4])
    np.testing.assert_allclose(out, reference, rtol=1e-10)


def test_normal_gamma_draws_match_the_posterior():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(10, 2)) * [1.0, 3.0]
    lik = NormalGamma(kappa=0.5, shape=2.0, hyperprior="fixed").fit(X)
    theta = _posterior_draws(lik, X, 4000)
    n, mean = 10, X.mean(axis=0)
    b_n = (lik.rate_ + 0.5 * ((X - mean) ** 2).sum(axis=0)
           + 0.5 * n * (mean - lik.mean_prior_) ** 2 / (2 * (0.5 + n)))
    taus = theta[:, 2:4]
    spread = taus.std(axis=0) / np.sqrt(taus.shape[0])
    assert np.all(np.abs(taus.mean(axis=0) - (2.0 + 0.5 * n) / b_n) < 5 * spread)


PRIORS = [CRP(1.0), PitmanYor(0.8, 0.4)]


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_subcluster_matches_exact_fast(prior):
    """Co-clustering and ``P(K)`` within 0.05 of exact. It fails on a wrong Hastings ratio:
    without the merge's ``+ log q`` (co-clustering off by 0.18) or without the split's
    choice-of-``j`` terms (``P(K)`` off by 0.08); the split's ``- log q`` alone moves it by
    less than the tolerance at this size (its ``q`` is checked by enumeration below)."""
    check_against_exact(prior, small_data(7), n_sweeps=6000, tol=0.05, n_split_merge=2)


def check_split_merge_alone(X, n_iterations, tol):
    """Split/merge moves alone (no restricted Gibbs step) against the exact posterior:
    co-clustering and ``P(K)`` within ``tol``."""
    n = X.shape[0]
    prior = CRP(1.0)
    lik = NormalInverseWishart(kappa=0.2, hyperprior="fixed").fit(X)
    pair_exact, k_exact = exact_summaries(prior, lik, X)
    data = lik.check_sampler_data(X)
    state = subcluster.new_state(lik, data, np.zeros(n, np.int64), prior.alpha)
    rng = np.random.RandomState(0)
    samples = []
    for _ in range(n_iterations):
        subcluster.iterate(state, lik, prior.kernel_params(), rng, n_split_merge=2,
                           gibbs=False)
        samples.append(state.compact_labels())
    samples = np.array(samples)
    k_dist = np.bincount(samples.max(axis=1), minlength=n) / len(samples)
    assert np.abs(pairwise_cooccurrence(samples) - pair_exact).max() < tol
    assert np.abs(k_dist - k_exact).max() < tol
    return pair_exact


def test_split_merge_alone_matches_exact():
    """The split/merge moves with no restricted Gibbs step are a valid kernel on their own."""
    check_split_merge_alone(small_data(6, seed=1), 6000, 0.05)


def test_merge_partner_probabilities_enter_the_hastings_ratios():
    """Split/merge moves alone on seven points along a line (many clusters, partners of
    very different merge scores) match the exact posterior. Without the merge partner's
    probability ``w(k' | k)`` in the merge's ratio the co-clustering is off by 0.09; without
    the reverse merge's ``w(r | l)`` in the split's, by 0.07 (tolerance 0.045)."""
    X = np.arange(7.0)[:, None] * np.array([[1.0, 0.0]]) + np.random.default_rng(7).normal(
        0, 0.2, (7, 2))
    pair_exact = check_split_merge_alone(X, 8000, 0.045)
    assert pair_exact[np.triu_indices(7, 1)].std() > 0.1


def test_partner_weights_are_a_distribution_over_the_other_clusters():
    X = small_data(9, seed=4)
    lik = NormalInverseWishart(kappa=0.2, hyperprior="fixed").fit(X)
    data = lik.check_sampler_data(X)
    state = subcluster.new_state(lik, data, np.arange(9) % 4, 1.0)
    engine = subcluster._engine(lik)
    pp = CRP(1.0).kernel_params()
    for k in range(4):
        log_w = subcluster._partner_log_weights(engine, lik, state.params, pp, state.suff,
                                                state.counts, k)
        assert log_w[k] == -np.inf
        assert np.exp(log_w).sum() == pytest.approx(1.0, rel=1e-12)
        # the best-scoring partner is the most likely: the scores are the merge ratios
        scores = [lik.log_marginal(X[(np.arange(9) % 4 == k) | (np.arange(9) % 4 == c)])
                  - lik.log_marginal(X[np.arange(9) % 4 == c]) + _log_block_crp(state, k, c)
                  if c != k else -np.inf for c in range(4)]
        assert np.argmax(log_w) == np.argmax(scores)


def _log_block_crp(state, k, c):
    from scipy.special import gammaln
    a, b = state.counts[k], state.counts[c]
    return gammaln(a + b) - gammaln(a) - gammaln(b)


def test_dirichlet_multinomial_prior_and_diagonal_likelihood_match_exact():
    X = small_data(6, seed=2)
    lik = NormalGamma(kappa=0.2).fit(X)
    check_against_exact(DirichletMultinomialPrior(2.0, 3), X, n_sweeps=6000, tol=0.05,
                        lik=lik, n_split_merge=2)


@pytest.mark.slow
@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_subcluster_matches_exact_long(prior):
    check_against_exact(prior, small_data(9, seed=3), n_sweeps=60000, tol=0.015,
                        n_split_merge=2)


def test_same_chain_with_the_parallel_kernels_or_their_serial_twins(monkeypatch):
    """Below ``shards.PARALLEL_MIN_ROWS`` rows the serial twins run: forcing either kind
    everywhere gives the same chain bit for bit, the parallel kernels on one of numba's
    threads or on two. (A chain of fewer rows than the threshold runs the serial twins
    only, whatever the number of threads: the thread counts are compared here, on the
    parallel kernels. Float32 chains: test_subcluster_dask's local shards.)"""
    rng = np.random.default_rng(6)
    X = np.vstack([rng.normal(c, 1.0, (2000, 3)) for c in (0, 6, 12)])
    lik = NormalInverseWishart().fit(X)
    data = lik.check_sampler_data(X)
    engine = shards.engine_for(lik)
    runs = []
    for threshold, threads in ((1 << 62, 2), (0, 1), (0, 2)):
        monkeypatch.setattr(shards, "PARALLEL_MIN_ROWS", threshold)
        twin = engine.launch.parallel if threshold == 0 else engine.launch.serial
        assert shards.kernel(engine, "launch", X.shape[0]) is twin
        with numba_threads(threads):
            runs.append(subcluster.run_chain(lik, CRP(1.0), data, n_sweeps=5, random_state=2,
                                             n_split_merge=4))
    for run in runs[1:]:
        np.testing.assert_array_equal(runs[0].samples, run.samples)
        np.testing.assert_array_equal(runs[0].log_joints, run.log_joints)
        np.testing.assert_array_equal(runs[0].state.suff, run.state.suff)
    assert runs[0].samples[-1].max() + 1 >= 3   # the three blobs are apart


def test_dp_mixture_subcluster_fit_predict_warm_start_and_progress(capsys):
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score
    from sklearn_trellis import DPMixture
    X, y = make_blobs(600, centers=[[0, 0], [6, 0], [0, 6]], random_state=0)
    X32 = X.astype(np.float32)
    model = DPMixture(method="subcluster", n_sweeps=30, init="one", random_state=0,
                      verbose=1).fit(X32)
    assert model.method_ == "subcluster" and "Sub-cluster" in model.approximation_
    assert model._data.dtype == np.float32
    assert adjusted_rand_score(y, model.labels_) > 0.9
    proba = model.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.predict(X[:5]).shape == (5,) and np.isfinite(model.score(X[:50]))
    assert model.pairwise_marginals_.shape == (600, 600)
    out = capsys.readouterr().out
    assert "iteration 30/30" in out and "log joint" in out and "s/iteration" in out
    again = DPMixture(method="subcluster", n_sweeps=30, init="one", random_state=0).fit(X32)
    np.testing.assert_array_equal(again.samples_, model.samples_)
    model.set_params(warm_start=True, n_sweeps=4, verbose=0)
    kept = model.samples_.shape[0]
    model.fit(X32)
    assert model.samples_.shape[0] == kept + 4


def test_subcluster_needs_an_uncollapsed_form():
    from sklearn_trellis import DPMixture

    class Collapsed(NormalInverseWishart):
        uncollapsed_kernels = None

    with pytest.raises(ValueError, match="uncollapsed form"):
        DPMixture(Collapsed(), method="subcluster", n_sweeps=2).fit(small_data(20))
    with pytest.raises(ValueError, match="init='subsample'.*uncollapsed form"):
        DPMixture(Collapsed(), method="gibbs", init="subsample", n_sweeps=2).fit(small_data(20))


def test_launch_probabilities_sum_to_one_and_match_the_drawn_split():
    """The proposal probability ``q`` of a launch, over every split of the rows (the two
    seeds fixed, the same launch randomness), sums to 1, and a drawn split's ``q`` is the
    one its evaluation gives: the Hastings ratios use exact proposal probabilities."""
    import itertools
    X = small_data(8, seed=5)
    lik = NormalInverseWishart(kappa=0.2, hyperprior="fixed").fit(X)
    data = lik.check_sampler_data(X)
    i, j = 2, 5
    others = [r for r in range(8) if r not in (i, j)]

    def launch(sides, forced):
        state = subcluster.new_state(lik, data, sides, 1.0)
        first, second = (0, 1) if forced else (0, 0)
        return subcluster._launch(state, lik, first, second, i, j, np.random.RandomState(11),
                                  forced=forced), state

    total = 0.0
    for bits in itertools.product((0, 1), repeat=len(others)):
        sides = np.zeros(8, np.int64)
        sides[j] = 1
        sides[others] = bits
        (log_q, _, _, _), _ = launch(sides, True)
        total += np.exp(log_q)
    assert total == pytest.approx(1.0, rel=1e-10)
    (log_q, suff, counts, _), state = launch(np.zeros(8, np.int64), False)
    state.executor.map("apply_split", 1)
    drawn = state.labels
    (again, _, _, _), _ = launch(drawn, True)
    assert log_q == pytest.approx(again, rel=1e-12)
    assert counts.tolist() == [int((drawn == 0).sum()), int((drawn == 1).sum())]
    assert suff[:, 0].tolist() == counts.tolist()


def test_auto_samples_with_the_subcluster_sampler_from_its_threshold(monkeypatch):
    from sklearn_trellis import DPMixture, _dp_mixture
    monkeypatch.setattr(_dp_mixture, "SUBCLUSTER_AUTO_SIZE", 40)
    X = small_data(60)
    assert DPMixture(n_sweeps=3, random_state=0).fit(X).method_ == "subcluster"
    assert DPMixture(n_sweeps=3, random_state=0).fit(X[:30]).method_ == "gibbs"
    # another likelihood with an uncollapsed form (the diagonal Gaussian: its sub-cluster
    # kernels are compiled for test_dirichlet_multinomial_prior_and_diagonal_likelihood_...)
    assert DPMixture("diagonal", n_sweeps=3, random_state=0).fit(X).method_ == "subcluster"


def test_subsample_start_draws_every_row_from_a_subsample_chain(monkeypatch):
    """``init='subsample'`` (``'auto'`` for the sub-cluster sampler above SUBSAMPLE_ROWS
    rows): a chain on evenly spaced rows, then every row drawn from its last weights and
    parameters; the clusters of separated blobs of unequal sizes come out whole."""
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score
    from sklearn_trellis import DPMixture
    centres = [[0, 0], [8, 0], [0, 8], [8, 8], [-8, 0]]
    X, y = make_blobs([500, 300, 200, 120, 80], centers=centres, random_state=3)
    lik = NormalInverseWishart().fit(X)
    rows = subcluster.subsample_rows(X.shape[0], 150)
    assert rows.size == 150 and rows[0] == 0 and rows[-1] == X.shape[0] - 1
    data = lik.check_sampler_data(X)
    for seed in range(3):   # 0 rows drawn: ARI 0 (one cluster); 1 iteration: 0.66-0.78
        labels = subcluster.subsample_start(lik, CRP(1.0), data, n_rows=150, n_iterations=40,
                                            random_state=seed)
        assert labels.dtype == np.int64
        assert set(np.unique(labels)) == set(range(labels.max() + 1))
        assert adjusted_rand_score(y, labels) > 0.97   # 0.998, 1.0, 0.979 (17 rows apart)
    np.testing.assert_array_equal(labels, subcluster.subsample_start(
        lik, CRP(1.0), data, n_rows=150, n_iterations=40, random_state=2))
    # the estimator's default: 'subsample' for the sub-cluster sampler on more rows than
    # SUBSAMPLE_ROWS, k-means otherwise
    calls = []
    real = subcluster.subsample_start
    monkeypatch.setattr(subcluster, "SUBSAMPLE_ROWS", 150)
    monkeypatch.setattr(subcluster, "SUBSAMPLE_ITERATIONS", 20)
    monkeypatch.setattr(subcluster, "subsample_start",
                        lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs))
    X, y = X[::4], y[::4]
    model = DPMixture(method="subcluster", n_sweeps=2, random_state=0).fit(X)
    assert len(calls) == 1 and adjusted_rand_score(y, model.labels_) > 0.9
    DPMixture(method="subcluster", n_sweeps=2, random_state=0).fit(X[::3])
    DPMixture(method="gibbs", n_sweeps=1, random_state=0).fit(X)
    assert len(calls) == 1
    DPMixture(method="gibbs", n_sweeps=1, init="subsample", random_state=0).fit(X)
    assert len(calls) == 2



def test_divisive_labels_cut_separated_groups_and_nothing_else():
    """The start's greedy cuts (:func:`subcluster.divisive_labels`): from one cluster,
    separated blobs of unequal sizes (the smallest 15 rows) come out whole, a cut that
    splits a blob comes back together, one blob stays one cluster; the same labels for
    the same seed."""
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score
    centres = [[0, 0], [9, 0], [0, 9], [9, 9], [-9, 0], [0, -9]]
    X, y = make_blobs([400, 250, 120, 60, 30, 15], centers=centres, random_state=4)
    lik = NormalInverseWishart().fit(X)
    data = lik.check_sampler_data(X)
    pp = CRP(1.0).kernel_params()
    for seed in range(3):
        labels = subcluster.divisive_labels(lik, pp, data, np.zeros(len(X), np.int64),
                                            np.random.RandomState(seed))
        assert labels.dtype == np.int64 and labels.max() + 1 == 6
        assert adjusted_rand_score(y, labels) == 1.0
    # a start that cuts blob 0 in two: merged back
    start = y.copy()
    start[(y == 0) & (X[:, 0] > 0)] = 6
    labels = subcluster.divisive_labels(lik, pp, data, start, np.random.RandomState(0))
    assert adjusted_rand_score(y, labels) == 1.0
    np.testing.assert_array_equal(labels, subcluster.divisive_labels(
        lik, pp, data, start, np.random.RandomState(0)))
    one = X[y == 0]
    lik_one = NormalInverseWishart().fit(one)
    assert subcluster.divisive_labels(lik_one, pp, lik_one.check_sampler_data(one),
                                      np.zeros(len(one), np.int64),
                                      np.random.RandomState(0)).max() == 0


def test_settled_ends_a_chain_once_k_and_the_log_joint_stop_moving():
    """``run_chain(stop=Settled(...))``: the chain ends after the first iteration at which
    the number of clusters has not changed and the log joint has moved by at most the
    tolerance (nats per row) over ``patience`` iterations (three separated blobs from one
    cluster); a patience longer than the chain runs every iteration."""
    from sklearn.datasets import make_blobs
    X, _ = make_blobs([150, 100, 50], centers=[[0, 0], [10, 0], [0, 10]], random_state=0)
    lik = NormalInverseWishart(hyperprior="fixed").fit(X)
    data = lik.check_sampler_data(X)
    settled = subcluster.Settled(lik, CRP(1.0), patience=2, tolerance=1e-3)
    result = subcluster.run_chain(lik, CRP(1.0), data, n_sweeps=30, random_state=0,
                                  init_labels=np.zeros(300, np.int64), stop=settled)
    path = settled.path
    assert 3 <= result.n_sweeps < 30 and len(path) == result.n_sweeps
    assert len({k for k, _ in path[-3:]}) == 1
    assert np.ptp([v for _, v in path[-3:]]) <= 1e-3 * 300
    for t in range(2, len(path) - 1):   # not settled before
        recent = path[t - 2:t + 1]
        assert (len({k for k, _ in recent}) > 1
                or np.ptp([v for _, v in recent]) > 1e-3 * 300)
    # the same chain, iteration for iteration, as one without a stop
    full = subcluster.run_chain(lik, CRP(1.0), data, n_sweeps=result.n_sweeps,
                                random_state=0, init_labels=np.zeros(300, np.int64))
    np.testing.assert_array_equal(full.state.labels, result.state.labels)
    never = subcluster.Settled(lik, CRP(1.0), patience=30, tolerance=0.0)
    assert subcluster.run_chain(lik, CRP(1.0), data, n_sweeps=5, random_state=0,
                                stop=never).n_sweeps == 5
    assert len(never.path) == 5


@pytest.mark.slow   # compiles the parallel twin (about 30 s from an empty cache)
@pytest.mark.parametrize("make_likelihood", [NormalGamma])
def test_label_pass_twins_draw_the_same_labels_on_any_number_of_threads(make_likelihood):
    """The label pass's serial twin and its parallel twin on one and two threads (and any
    number of slots, each thread's share of the chunks) draw the same labels and block
    counts (the Normal-Gamma's pass screens in float32 per chunk of rows:
    log_density_screen)."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(c, 1.0, (2500, 8)) for c in (0, 3, 6)]).astype(np.float32)
    lik = make_likelihood().fit(X)
    data = lik.check_sampler_data(X)
    engine = shards.engine_for(lik)
    params = lik.kernel_params()
    state = subcluster.new_state(lik, data, np.repeat(np.arange(3), 2500), 1.0)
    theta = subcluster._draw_thetas(engine, lik, params, state.suff, np.random.RandomState(0))
    log_pi = np.log(np.full(3, 1 / 3))
    labels = np.zeros(len(X), np.int64)
    pinned = np.zeros(len(X), np.bool_)
    runs = []
    for name, threads, slots in (("serial", 1, 1), ("serial", 1, 3), ("parallel", 1, 1),
                                 ("parallel", 2, 2), ("parallel", 2, 5)):
        out = np.empty(len(X), np.int64)
        counts = np.empty((-(-len(X) // shards.BLOCK_ROWS), 3), np.int64)
        with numba_threads(threads):
            getattr(engine.propose_labels, name)(params, theta, log_pi, 3, data, labels,
                                                  pinned, np.int64(9), out, counts, slots)
        runs.append((out, counts))
    for out, counts in runs[1:]:
        np.testing.assert_array_equal(out, runs[0][0])
        np.testing.assert_array_equal(counts, runs[0][1])
    assert len(np.unique(runs[0][0])) == 3


def test_label_pass_goes_on_threads_by_its_work_not_its_rows():
    """``row_cost`` (clusters times features over the measurement's 20 x 10) lowers the
    row count at which the label pass runs its parallel twin; other passes count rows."""
    engine = shards.engine_for(NormalInverseWishart().fit(np.eye(3)))
    twins = engine.propose_labels
    few = shards.PARALLEL_MIN_ROWS // 50
    assert shards.kernel(engine, "propose_labels", few) is twins.serial
    assert shards.kernel(engine, "propose_labels", few, 80 * 128 / 200) is twins.parallel
    assert shards.kernel(engine, "propose_labels", few, 0.1) is twins.serial
    assert (shards.kernel(engine, "propose_labels", shards.PARALLEL_MIN_ROWS, 0.1)
            is twins.parallel)      # a cheap row never keeps a large pass serial
