"""The collapsed Gibbs engine against the exact posterior, and its driver."""

import joblib
import numpy as np
import pytest

from sklearn_trellis.models import NormalGamma, NormalInverseWishart
from sklearn_trellis.models.dp_mixture import MixturePartitionModel
from sklearn_trellis.engines.exact.trellis_for_model import trellis_for_model
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.summaries import pairwise_cooccurrence
from sklearn_trellis.models.priors import CRP, DirichletMultinomialPrior, GammaHyperprior, PitmanYor


def small_data(n, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]])
    return centres[np.arange(n) % 3] + rng.normal(0, 0.9, (n, 2))


def exact_summaries(prior, lik, X):
    model = MixturePartitionModel(prior, lik).fit(X)
    trellis = trellis_for_model(model, max_items=12)
    return trellis.pairwise_marginals(), trellis.n_clusters_distribution()


def chain_summaries(prior, lik, X, init, n_sweeps, seed, **kwargs):
    data = lik.kernel_data(X)
    result = gibbs.run_chain(lik, prior, data, n_sweeps=n_sweeps, burn_in=50,
                             init_labels=init, random_state=seed, **kwargs)
    k = result.samples.max(axis=1) + 1
    return (pairwise_cooccurrence(result.samples),
            np.bincount(k - 1, minlength=X.shape[0]) / k.size, result)


def check_against_exact(prior, X, init, n_sweeps, tol, seed=0, **kwargs):
    lik = NormalInverseWishart(kappa=0.2, hyperprior="fixed").fit(X)
    pair_exact, k_exact = exact_summaries(prior, lik, X)
    pair, k_dist, _ = chain_summaries(prior, lik, X, init, n_sweeps, seed, **kwargs)
    assert np.abs(pair - pair_exact).max() < tol
    assert np.abs(k_dist - k_exact).max() < tol
    # the exact values must not be trivial, or the test could not fail
    assert 0.05 < np.median(pair_exact[np.triu_indices(X.shape[0], 1)]) < 0.95 or \
        pair_exact.std() > 0.1


PRIORS = [CRP(1.0), PitmanYor(0.8, 0.4)]
STARTS = {"one": lambda n: np.zeros(n, np.int64), "singletons": lambda n: np.arange(n)}


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
@pytest.mark.parametrize("start", sorted(STARTS))
def test_gibbs_matches_exact_fast(prior, start):
    X = small_data(7)
    check_against_exact(prior, X, STARTS[start](7), n_sweeps=6000, tol=0.05)


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_split_merge_alone_matches_exact(prior):
    """Split-merge moves with no Gibbs scan are a valid kernel on their own."""
    X = small_data(6, seed=1)
    lik = NormalInverseWishart(kappa=0.2, hyperprior="fixed").fit(X)
    pair_exact, k_exact = exact_summaries(prior, lik, X)
    data = lik.kernel_data(X)
    state = gibbs.new_state(lik, data, np.zeros(6, np.int64), prior.alpha)
    rng = np.random.RandomState(0)
    samples = []
    for t in range(8000):
        gibbs.sweep(state, lik, prior.kernel_params(), data, rng, n_split_merge=3, scan=False)
        samples.append(state.compact_labels())
    samples = np.array(samples)
    assert np.abs(pairwise_cooccurrence(samples) - pair_exact).max() < 0.05


def test_dirichlet_multinomial_prior_gibbs_matches_exact():
    X = small_data(6, seed=2)
    check_against_exact(DirichletMultinomialPrior(2.0, 3), X, np.zeros(6, np.int64),
                        n_sweeps=6000, tol=0.05, n_split_merge=2)


@pytest.mark.slow
@pytest.mark.parametrize("prior", PRIORS, ids=repr)
@pytest.mark.parametrize("start", sorted(STARTS))
def test_gibbs_matches_exact_long(prior, start):
    X = small_data(10, seed=3)
    check_against_exact(prior, X, STARTS[start](10), n_sweeps=60000, tol=0.015,
                        n_split_merge=2)


def test_state_stays_consistent_through_growth():
    """Many clusters force the slot table to grow; statistics match a rebuild."""
    rng = np.random.default_rng(4)
    X = 100.0 * np.repeat(np.arange(40), 5)[:, None] + rng.normal(0, 0.1, (200, 2))
    lik = NormalGamma(kappa=1e-8, variance_prior=[0.01, 0.01]).fit(X)
    data = lik.kernel_data(X)
    state = gibbs.new_state(lik, data, np.zeros(200, np.int64), 5.0)
    assert state.capacity == 16
    prng = np.random.RandomState(0)
    for _ in range(3):
        gibbs.sweep(state, lik, CRP(5.0).kernel_params(), data, prng, n_split_merge=5)
    assert state.n_clusters > 16 and state.capacity > 16
    labels = state.compact_labels()
    rebuilt = gibbs.new_state(lik, data, labels, 5.0)
    assert gibbs.log_joint(state, lik, CRP(5.0).kernel_params()) == pytest.approx(
        gibbs.log_joint(rebuilt, lik, CRP(5.0).kernel_params()), abs=1e-6)
    active = state.active[:state.n_clusters]
    assert np.array_equal(np.sort(state.counts[active]), np.sort(np.bincount(labels)))


def test_chains_are_reproducible_and_independent_of_n_jobs():
    X = small_data(30)
    lik = NormalInverseWishart().fit(X)
    data = lik.kernel_data(X)
    kwargs = dict(n_chains=2, random_state=7, n_sweeps=20, burn_in=5, n_split_merge=3)
    a = gibbs.run_chains(lik, CRP(1.0), data, n_jobs=1, **kwargs)
    # threads keep the test fast (process workers would each load the kernels)
    with joblib.parallel_config(backend="threading"):
        b = gibbs.run_chains(lik, CRP(1.0), data, n_jobs=2, **kwargs)
    for ra, rb in zip(a, b):
        np.testing.assert_array_equal(ra.samples, rb.samples)
    assert not np.array_equal(a[0].samples, a[1].samples)


def test_warm_start_continues_the_chain():
    """10 sweeps then 5 more from the returned state = 15 sweeps in one go."""
    X = small_data(20)
    lik = NormalInverseWishart().fit(X)
    data = lik.kernel_data(X)
    rng = np.random.RandomState(0)
    first = gibbs.run_chain(lik, CRP(1.0), data, n_sweeps=10, random_state=rng,
                            n_split_merge=2)
    second = gibbs.run_chain(lik, CRP(1.0), data, n_sweeps=5, state=first.state,
                             random_state=rng, n_split_merge=2)
    assert second.state.n_sweeps_done == 15
    whole = gibbs.run_chain(lik, CRP(1.0), data, n_sweeps=15, random_state=0, n_split_merge=2)
    np.testing.assert_array_equal(np.vstack([first.samples, second.samples]), whole.samples)
    assert len(np.unique(whole.samples, axis=0)) > 1


class InterruptingLikelihood(NormalInverseWishart):
    """Raises KeyboardInterrupt (as Ctrl-C would) after a few sweeps."""

    def resample_params(self, params, stats, shared, counts, active, random_state):
        self.calls_ = getattr(self, "calls_", 0) + 1
        if self.calls_ == 8:
            raise KeyboardInterrupt
        return None


def test_keyboard_interrupt_keeps_samples():
    X = small_data(20)
    lik = InterruptingLikelihood().fit(X)
    results = gibbs.run_chains(lik, CRP(1.0), lik.kernel_data(X), n_chains=3, n_sweeps=50,
                               burn_in=2, random_state=0)
    assert len(results) == 1 and results[0].interrupted
    assert results[0].samples.shape[0] == 5   # sweeps 3..7 were kept


def test_fixed_items_never_move():
    X = small_data(30)
    lik = NormalInverseWishart().fit(X)
    fixed = np.zeros(30, bool)
    fixed[:6] = True
    init = np.r_[[0, 0, 0, 1, 1, 1], np.zeros(24, np.int64)]
    result = gibbs.run_chain(lik, CRP(1.0), lik.kernel_data(X), n_sweeps=30, init_labels=init,
                             fixed=fixed, n_split_merge=5, random_state=0)
    s = result.samples
    assert np.all(s[:, 0] == s[:, 1]) and np.all(s[:, 1] == s[:, 2])
    assert np.all(s[:, 3] == s[:, 4]) and np.all(s[:, 4] == s[:, 5])
    assert np.all(s[:, 0] != s[:, 3])


def test_alpha_hyperprior_moves_alpha():
    X = small_data(30)
    lik = NormalInverseWishart().fit(X)
    result = gibbs.run_chain(lik, CRP(1.0), lik.kernel_data(X), n_sweeps=30,
                             hyperprior=GammaHyperprior(1.0, 1.0), random_state=0)
    assert np.unique(result.alphas).size > 10 and np.all(result.alphas > 0)


def test_verbose_reports_progress(capsys):
    X = small_data(10)
    lik = NormalInverseWishart().fit(X)
    gibbs.run_chain(lik, CRP(1.0), lik.kernel_data(X), n_sweeps=20, verbose=1, random_state=0)
    out = capsys.readouterr().out
    assert "sweep 20/20" in out and "s/sweep" in out


def test_dask_backend_runs_chains():
    pytest.importorskip("distributed")
    from distributed import Client

    X = small_data(20)
    lik = NormalInverseWishart().fit(X)
    data = lik.kernel_data(X)
    kwargs = dict(n_chains=2, random_state=3, n_sweeps=10, burn_in=2)
    reference = gibbs.run_chains(lik, CRP(1.0), data, n_jobs=1, **kwargs)
    with Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None):
        with joblib.parallel_config(backend="dask"):
            results = gibbs.run_chains(lik, CRP(1.0), data, n_jobs=2, **kwargs)
    for a, b in zip(reference, results):
        np.testing.assert_array_equal(a.samples, b.samples)


@pytest.mark.parametrize("n", [1, 7, 200, 201])
def test_interpreted_compact_labels_is_the_kernel(monkeypatch, n):
    """A state's labels renumbered interpreted (up to ``INTERPRETED_LABEL_ITEMS``) equal
    the compiled kernel's (which runs at every size with the threshold 0)."""
    from types import SimpleNamespace
    from sklearn_trellis._core import interpreted
    from sklearn_trellis._core.labels import first_appearance_labels
    slots = 3 * np.random.default_rng(n).integers(0, 9, n) + 5     # slot ids, not compact
    state = SimpleNamespace(labels=slots)
    monkeypatch.setattr(gibbs, "INTERPRETED_LABEL_ITEMS", 0)
    compiled = gibbs.GibbsState.compact_labels(state)
    assert interpreted._spent == 0.0
    monkeypatch.setattr(gibbs, "INTERPRETED_LABEL_ITEMS", 200)
    ours = gibbs.GibbsState.compact_labels(state)
    assert (interpreted._spent > 0.0) == (n <= 200)
    np.testing.assert_array_equal(ours, compiled)
    assert ours.dtype == compiled.dtype == np.int64
    np.testing.assert_array_equal(compiled, first_appearance_labels(slots))


@pytest.mark.parametrize("n", [1, 9, 201])
def test_interpreted_slot_filling_is_the_kernel(monkeypatch, n):
    """A new state's slots filled interpreted (up to ``INTERPRETED_LABEL_ITEMS``) equal the
    compiled kernel's, array for array (the compiled one runs at every size with 0)."""
    from sklearn_trellis._core import interpreted
    lik = NormalGamma().fit(small_data(n, seed=n))
    data = lik.kernel_data(small_data(n, seed=n))
    labels = 7 * np.random.default_rng(n).integers(0, 5, n) - 3

    def state_arrays(items):
        monkeypatch.setattr(gibbs, "INTERPRETED_LABEL_ITEMS", items)
        state = gibbs.new_state(lik, data, labels, 1.0)
        return [state.labels, state.counts, state.active, state.where, state.free, state.meta,
                state.stats, state.shared]

    compiled = state_arrays(0)
    assert interpreted._spent == 0.0
    ours = state_arrays(200)
    assert (interpreted._spent > 0.0) == (n <= 200)
    for mine, theirs in zip(ours, compiled):
        assert mine.dtype == theirs.dtype
        np.testing.assert_array_equal(mine, theirs)
    k = np.unique(labels).size
    np.testing.assert_array_equal(np.sort(compiled[1][compiled[2][:k]]),
                                  np.sort(np.unique(labels, return_counts=True)[1]))


def _likelihoods(n):
    """Factorising likelihoods (refreshed by adding: ``refresh_interpretable``) and fastTIWD's
    (translation invariant: state in ``work`` too)."""
    from sklearn_trellis.models.wishart_likelihood import WishartBlockLikelihood
    X = small_data(n, seed=n)
    gram = X @ X.T
    return [(NormalGamma().fit(X), X), (NormalInverseWishart().fit(X), X),
            (WishartBlockLikelihood(dof=3.0, translation_invariant=True).fit(gram), gram)]


@pytest.mark.parametrize("n", [1, 9, 201])
def test_rebuild_and_log_joint_from_python_are_the_kernels(monkeypatch, n):
    """A new state filled, refreshed after each sweep and its log joint summed by the engine
    templates' and ``refresh_by_adding``'s own Python source calling the compiled likelihood
    and prior kernels (up to ``INTERPRETED_LABEL_ITEMS``) equal the compiled kernels' bit for
    bit (these run at every size with the threshold 0)."""
    labels = 7 * np.random.default_rng(n).integers(0, 5, n) - 3
    likelihoods = _likelihoods(n)
    # fastTIWD's kernels are compiled alone: its small states take the Python steps
    assert gibbs._compiled_alone(likelihoods[2][0], "prepare", "add", "log_cluster", "log_global")
    assert [lik.refresh_interpretable for lik, _ in likelihoods] == [True, True, False]
    for lik, X in likelihoods:
        data = lik.kernel_data(X)

        def run(items):
            monkeypatch.setattr(gibbs, "INTERPRETED_LABEL_ITEMS", items)
            state = gibbs.new_state(lik, data, labels, 1.0)
            joints = [gibbs.log_joint(state, lik, CRP(0.7).kernel_params())]
            rng = np.random.RandomState(n)
            for _ in range(2):
                gibbs.sweep(state, lik, CRP(0.7).kernel_params(), data, rng, n_split_merge=3)
                joints.append(gibbs.log_joint(state, lik, CRP(0.7).kernel_params()))
            return [state.labels, state.counts, state.stats, state.shared, state.work,
                    np.array(joints)]

        compiled = run(0)
        for mine, theirs in zip(run(200), compiled):
            assert mine.dtype == theirs.dtype
            np.testing.assert_array_equal(mine, theirs)
