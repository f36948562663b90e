"""The slice-sampler row step: explicit cell parameters, thread independence, exactness."""

import numba
import numpy as np
import pytest
from scipy import stats as st

from sklearn_trellis import CrossCat
from sklearn_trellis.engines.gibbs import crosscat as engine
from sklearn_trellis.engines.gibbs import slice as slice_module
from sklearn_trellis.models import _cell_kernels as ck
from sklearn_trellis.models.cells import CELL_MODELS
from sklearn_trellis.models.priors import CRP

N_DRAWS = 20000


def _draws(code, params, stats, size):
    """``N_DRAWS`` posterior draws of theta (numba's generator seeded once)."""

    out = np.empty((N_DRAWS, size))
    ck_seed(0)
    for r in range(N_DRAWS):
        ck.cell_posterior_draw(code, params, stats, out[r])
    return out


@numba.njit
def ck_seed(seed):
    np.random.seed(seed)


def _close(draws, expected, sd):
    """Mean of ``draws`` within 5 Monte Carlo standard errors of ``expected``."""
    assert abs(np.mean(draws) - expected) < 5 * sd / np.sqrt(draws.size)


@pytest.mark.parametrize("with_cells", [False, True])
def test_normal_posterior_draw_moments(with_cells):
    m0, kappa0, a0, b0 = 0.5, 2.0, 3.0, 1.5
    params = np.array([m0, kappa0, a0, b0])
    x = np.array([1.0, 2.5, -0.3, 0.7]) if with_cells else np.zeros(0)
    stats = np.array([x.size, np.sum(x - m0), np.sum((x - m0) ** 2)])
    kappa, a = kappa0 + x.size, a0 + x.size / 2
    mean = (kappa0 * m0 + x.sum()) / kappa
    b = b0 + 0.5 * (np.sum((x - x.mean()) ** 2) if x.size else 0.0) + (
        kappa0 * x.size * (x.mean() - m0) ** 2 / (2 * kappa) if x.size else 0.0)
    theta = _draws(ck.NORMAL, params, stats, 3)
    precision = st.gamma(a, scale=1 / b)
    _close(theta[:, 1], precision.mean(), precision.std())
    # mu | tau ~ N(mean, 1 / (kappa tau)): the standardised draws are N(0, 1)
    z = (theta[:, 0] - mean) * np.sqrt(kappa * theta[:, 1])
    _close(z, 0.0, 1.0)
    _close(z ** 2, 1.0, np.sqrt(2.0))
    np.testing.assert_allclose(theta[:, 2], 0.5 * np.log(theta[:, 1] / (2 * np.pi)))


def test_bernoulli_posterior_draw_moments():
    params = np.array([0.3, 0.7])   # small shapes: the draws stay finite in log space
    stats = np.array([5.0, 1.0])
    theta = _draws(ck.BERNOULLI, params, stats, 2)
    p = np.exp(theta[:, 1])
    np.testing.assert_allclose(p + np.exp(theta[:, 0]), 1.0)
    posterior = st.beta(0.3 + 1, 0.7 + 4)
    _close(p, posterior.mean(), posterior.std())
    assert np.all(np.isfinite(theta))


def test_poisson_posterior_draw_moments():
    params = np.array([2.0, 0.5])
    x = np.array([3.0, 0.0, 5.0])
    from scipy.special import gammaln
    stats = np.array([3.0, x.sum(), gammaln(x + 1).sum()])
    theta = _draws(ck.POISSON, params, stats, 2)
    posterior = st.gamma(2.0 + 8.0, scale=1 / (0.5 + 3))
    _close(theta[:, 0], posterior.mean(), posterior.std())
    np.testing.assert_allclose(theta[:, 1], np.log(theta[:, 0]))


def test_categorical_posterior_draw_moments():
    beta = np.array([0.2, 1.0, 2.5])
    params = np.concatenate([[3, beta.sum()], beta])
    stats = np.array([4.0, 0.0, 3.0, 1.0])
    theta = _draws(ck.CATEGORICAL, params, stats, 3)
    p = np.exp(theta)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    posterior = st.dirichlet(beta + stats[1:])
    for c in range(3):
        _close(p[:, c], posterior.mean()[c], np.sqrt(posterior.var()[c]))


@pytest.mark.parametrize("code, theta, values, reference", [
    (ck.NORMAL, [0.4, 2.5, 0.5 * np.log(2.5 / (2 * np.pi))], [-1.0, 0.4, 3.2],
     lambda x: st.norm(0.4, 1 / np.sqrt(2.5)).logpdf(x)),
    (ck.BERNOULLI, [np.log(0.7), np.log(0.3)], [0.0, 1.0], lambda x: st.bernoulli(0.3).logpmf(x)),
    (ck.POISSON, [2.2, np.log(2.2)], [0.0, 1.0, 7.0], lambda x: st.poisson(2.2).logpmf(x)),
    (ck.CATEGORICAL, list(np.log([0.2, 0.5, 0.3])), [0.0, 1.0, 2.0],
     lambda x: np.log([0.2, 0.5, 0.3])[int(x)]),
])
def test_cell_log_density_matches_scipy(code, theta, values, reference):
    theta = np.array(theta)
    for x in values:
        assert ck.cell_log_density(code, theta, x) == pytest.approx(reference(x), rel=1e-12)
    assert ck.cell_log_density(code, theta, np.nan) == 0.0


def _mixed(n=80, seed=0):
    rng = np.random.RandomState(seed)
    z = rng.randint(3, size=n)
    X = np.column_stack([z * 3 + rng.randn(n), rng.rand(n) < 0.2 + 0.3 * z,
                         rng.poisson(1 + 2 * z), (z + rng.randint(2, size=n)) % 4,
                         rng.randn(n)]).astype(float)
    X[rng.rand(*X.shape) < 0.1] = np.nan
    types = ["normal", "bernoulli", "poisson", "categorical", "normal"]
    cells = [CELL_MODELS[t]().fit(X[:, j]) for j, t in enumerate(types)]
    return X, cells


def _assert_equals_fresh(model, state, view):
    """The view's state equals one built afresh from its labels (blocks, log joint, items)."""
    fresh = engine.make_view(model, view.columns, view.state.labels, view.alpha,
                             state.column_params)
    st, fr = view.state, fresh.state
    prior = CRP(view.alpha).kernel_params()
    assert engine.sampler.log_joint(st, view.likelihood, prior) == pytest.approx(
        engine.sampler.log_joint(fr, fresh.likelihood, prior), rel=1e-10)
    assert st.counts[st.active[:st.meta[0]]].sum() == view.data.shape[0]
    width = view.likelihood._width
    for slot in st.active[:st.meta[0]]:
        first = np.flatnonzero(st.labels == slot)[0]
        np.testing.assert_allclose(st.stats[slot].reshape(-1, width)[:, :-1],
                                   fr.stats[fr.labels[first]].reshape(-1, width)[:, :-1],
                                   rtol=1e-10, atol=1e-10)
        assert st.counts[slot] == np.sum(st.labels == slot)
    for slot in st.free[:st.meta[1]]:   # free slots: the empty cluster
        np.testing.assert_allclose(st.stats[slot].reshape(-1, width)[:, :-1],
                                   fr.stats[fr.free[0]].reshape(-1, width)[:, :-1])


def test_slice_step_keeps_a_consistent_state():
    """After slice steps, and collapsed moves after them, each view's state equals one
    built afresh from its labels."""
    X, cells = _mixed()
    model = engine.CrossCatModel(cells, X, engine.ConcentrationPrior(1.0),
                                 engine.ConcentrationPrior(1.0), row_sampler="slice")
    rng = np.random.RandomState(0)
    state = engine.new_crosscat_state(model, rng, view_labels=[0, 0, 0, 1, 1])
    moved = False
    for _ in range(6):
        for view in state.views:
            before = view.state.compact_labels()
            slice_module.slice_step(view.state, view.likelihood, view.data, rng)
            moved |= not np.array_equal(before, view.state.compact_labels())
            _assert_equals_fresh(model, state, view)
            engine.sampler.sweep(view.state, view.likelihood, CRP(view.alpha).kernel_params(),
                                 view.data, rng, n_split_merge=2)
            _assert_equals_fresh(model, state, view)
    assert moved   # the rows did move


def test_slice_chain_does_not_depend_on_the_number_of_threads(monkeypatch):
    """Serial scoring, and parallel scoring on one thread or all: the same chain."""
    X, cells = _mixed(200)
    model = engine.CrossCatModel(cells, X, engine.ConcentrationPrior(1.0),
                                 engine.ConcentrationPrior(1.0), row_sampler="slice")
    runs = [engine.run_chain(model, n_sweeps=6, random_state=0).samples]   # serial
    monkeypatch.setattr(slice_module, "PARALLEL_CELLS", 0)
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(threads)
            runs.append(engine.run_chain(model, n_sweeps=6, random_state=0).samples)
    finally:
        numba.set_num_threads(before)
    for run in runs[1:]:
        for one, other in zip(runs[0], run):
            np.testing.assert_array_equal(one.views, other.views)
            np.testing.assert_array_equal(one.rows, other.rows)
            assert one.log_joint == other.log_joint


def test_estimator_row_sampler_option():
    X, _ = _mixed(60)
    model = CrossCat(row_sampler="slice", n_sweeps=20, random_state=0).fit(X)
    assert model.method_ == "gibbs"
    again = CrossCat(row_sampler="slice", n_sweeps=20, random_state=0).fit(X)
    np.testing.assert_array_equal(model.row_labels_, again.row_labels_)
    with pytest.raises(ValueError, match="row_sampler"):
        CrossCat(row_sampler="uncollapsed", n_sweeps=2).fit(X)


@pytest.mark.slow
@pytest.mark.parametrize("n_split_merge", [0, 1])
def test_slice_rows_match_exact_on_tiny_mixed_table(monkeypatch, n_split_merge):
    """Rows moved by the slice step alone (no row split-merge), and as CrossCat runs it
    (one proposal after it): dependence probabilities and row co-clustering within Monte
    Carlo error of exact enumeration."""
    monkeypatch.setattr(engine, "SLICE_SPLIT_MERGE", n_split_merge)
    rng = np.random.RandomState(3)
    X = np.column_stack([
        np.array([0.1, 0.3, 2.2, 2.5, 0.2]),
        np.array([0, 0, 1, 1, 1], float),
        np.array([0, 2, 1, 1, 0], float),
    ])
    X[rng.rand(*X.shape) < 0.1] = np.nan
    assert np.isnan(X).any()
    types = ["normal", "bernoulli", "categorical"]
    kwargs = dict(column_types=types, alpha_views=0.8, alpha_rows=1.2)
    exact = CrossCat(method="exact", **kwargs).fit(X)
    gibbs = CrossCat(method="gibbs", row_sampler="slice", n_sweeps=4000, burn_in=200,
                     n_chains=2, random_state=0, **kwargs).fit(X)
    np.testing.assert_allclose(gibbs.dependence_probability_, exact.dependence_probability_,
                               atol=0.04)
    for j in range(3):
        np.testing.assert_allclose(gibbs.row_similarity(j), exact.row_similarity(j), atol=0.04)
