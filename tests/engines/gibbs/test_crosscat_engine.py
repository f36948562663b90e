"""CrossCat's Gibbs engine: Murphy Eq. 42, and the sampler against exact enumeration."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import betaln

from sklearn_trellis import CrossCat
from sklearn_trellis.engines.gibbs import crosscat as engine
from sklearn_trellis.models.cells import CELL_MODELS
from sklearn_trellis.models.priors import CRP


def _model(X, cells, alpha_views=1.0, alpha_rows=1.0):
    return engine.CrossCatModel(cells, np.ascontiguousarray(X, dtype=float),
                                engine.ConcentrationPrior(alpha_views),
                                engine.ConcentrationPrior(alpha_rows))


def test_eq42_beta_bernoulli_view_likelihood():
    """log p(D | r, c, gamma) of the engine equals Murphy Eq. 42 (NaN cells left out)."""
    rng = np.random.RandomState(0)
    X = (rng.rand(9, 5) < 0.4).astype(float)
    X[1, 2] = X[4, 0] = np.nan
    gamma = 0.7
    cells = [CELL_MODELS["bernoulli"](strength=2 * gamma, mean=0.5, hyperprior="fixed")
             .fit(X[:, j]) for j in range(5)]
    model = _model(X, cells)
    views = np.array([0, 1, 0, 2, 1])
    rows = [rng.randint(3, size=9), rng.randint(2, size=9), np.zeros(9, int)]
    state = engine.new_crosscat_state(model, rng, view_labels=views, row_labels=rows)
    eq42 = 0.0
    for j in range(5):
        r = rows[views[j]]
        for k in np.unique(r):
            cells_k = X[r == k, j]
            on = np.sum(cells_k == 1)
            off = np.sum(cells_k == 0)
            eq42 += betaln(on + gamma, off + gamma) - betaln(gamma, gamma)
    prior = CRP(1.0).log_eppf(np.bincount(views))
    prior += sum(CRP(1.0).log_eppf(np.bincount(r)) for r in rows)
    assert engine.log_joint(model, state) == pytest.approx(prior + eq42, rel=1e-10)


def _tiny_mixed_table():
    rng = np.random.RandomState(3)
    X = np.column_stack([
        np.array([0.1, 0.3, 2.2, 2.5, 0.2]),
        np.array([0, 0, 1, 1, 1], float),
        np.array([0, 2, 1, 1, 0], float),
    ])
    X[rng.rand(*X.shape) < 0.1] = np.nan
    return X


@pytest.mark.slow
def test_gibbs_matches_exact_on_tiny_mixed_table():
    """Dependence probabilities and row co-clustering of Gibbs within Monte Carlo error of exact."""
    X = _tiny_mixed_table()
    types = ["normal", "bernoulli", "categorical"]
    kwargs = dict(column_types=types, alpha_views=0.8, alpha_rows=1.2)
    exact = CrossCat(method="exact", **kwargs).fit(X)
    gibbs = CrossCat(method="gibbs", n_sweeps=4000, burn_in=200, n_chains=2, random_state=0,
                     **kwargs).fit(X)
    assert exact.method_ == "exact" and gibbs.method_ == "gibbs"
    np.testing.assert_allclose(gibbs.dependence_probability_, exact.dependence_probability_,
                               atol=0.04)
    for j in range(3):
        np.testing.assert_allclose(gibbs.row_similarity(j), exact.row_similarity(j), atol=0.04)


def test_column_moves_keep_every_view_consistent():
    """After sweeps, the columns form a partition and each view's log joint equals a rebuild."""
    rng = np.random.RandomState(1)
    X = rng.randn(30, 4)
    X[:, 3] = (X[:, 3] > 0)
    X[rng.rand(30, 4) < 0.1] = np.nan
    cells = [CELL_MODELS[t]().fit(X[:, j])
             for j, t in enumerate(["normal", "normal", "normal", "bernoulli"])]
    model = _model(X, cells)
    state = engine.new_crosscat_state(model, rng)
    for _ in range(15):
        engine.sweep(model, state, rng)
    assert sorted(j for cols in state.columns for j in cols) == [0, 1, 2, 3]
    for view in state.views:
        np.testing.assert_array_equal(view.data, X[:, view.columns])
        rebuilt = engine.make_view(model, view.columns, view.state.labels, view.alpha,
                                   state.column_params)
        prior = CRP(view.alpha).kernel_params()
        assert engine.sampler.log_joint(view.state, view.likelihood, prior) == pytest.approx(
            engine.sampler.log_joint(rebuilt.state, rebuilt.likelihood, prior), rel=1e-9)


def test_carried_view_state_equals_a_rebuilt_view():
    """A view whose columns change keeps its state (carry_state): its statistics, cached
    predictive constants and log joint equal those of a view built afresh, and Gibbs scans
    continue correctly on the carried items' cache (cell types of different widths)."""
    rng = np.random.RandomState(2)
    n = 40
    X = np.column_stack([rng.randn(n), rng.randn(n), rng.randint(2, size=n),
                         rng.poisson(3.0, size=n), rng.randint(4, size=n), rng.randn(n)])
    X[rng.rand(*X.shape) < 0.1] = np.nan
    types = ["normal", "normal", "bernoulli", "poisson", "categorical", "normal"]
    cells = [CELL_MODELS[t]().fit(X[:, j]) for j, t in enumerate(types)]
    model = _model(X, cells)
    state = engine.new_crosscat_state(model, rng, view_labels=[0, 0, 0, 1, 1, 1])
    prior = CRP(1.0).kernel_params()
    for step in range(60):
        v = rng.randint(len(state.views))
        columns = set(state.views[v].columns)
        j = int(rng.randint(6))
        if j in columns and len(columns) > 1:
            columns.remove(j)
        elif j not in columns:
            columns.add(j)
        engine._rebuild(model, state, v, sorted(columns))
        view = state.views[v]
        np.testing.assert_array_equal(view.data, X[:, view.columns])
        fresh = engine.make_view(model, view.columns, view.state.labels, view.alpha,
                                 state.column_params)
        st, fr = view.state, fresh.state
        np.testing.assert_array_equal(st.params, fr.params)
        width = view.likelihood._width
        for slot in st.active[:st.meta[0]]:
            first = np.flatnonzero(st.labels == slot)[0]
            mine = st.stats[slot].reshape(-1, width)[:, :-1]
            theirs = fr.stats[fr.labels[first]].reshape(-1, width)[:, :-1]
            np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)
        for slot in st.free[:st.meta[1]]:   # free slots: the empty cluster of these params
            np.testing.assert_allclose(st.stats[slot].reshape(-1, width)[:, :-1],
                                       fr.stats[fr.free[0]].reshape(-1, width)[:, :-1])
        assert engine.sampler.log_joint(st, view.likelihood, prior) == pytest.approx(
            engine.sampler.log_joint(fr, fresh.likelihood, prior), rel=1e-12)
        size = view.likelihood.n_groups_ * view.likelihood._n_cell_stats
        fns = view.likelihood.kernels
        for i in range(n):   # the carried items' cache prepares every item's statistics
            fns.prepare(st.params, view.data, st.labels, st.stats, st.shared, st.work, i)
            fns.prepare(fr.params, fresh.data, fr.labels, fr.stats, fr.shared, fr.work, i)
            np.testing.assert_array_equal(st.work[:size], fr.work[:size])
        engine.sampler.sweep(st, view.likelihood, prior, view.data, rng, n_split_merge=2)


def test_row_steps_on_threads_do_not_change_the_chain(monkeypatch):
    """Each view draws its own seed in a fixed order: one thread or several, same samples."""
    rng = np.random.RandomState(4)
    X = np.column_stack([rng.randn(60, 3), rng.randint(2, size=(60, 3))]).astype(float)
    X[rng.rand(*X.shape) < 0.1] = np.nan
    cells = [CELL_MODELS["normal"]().fit(X[:, j]) for j in range(3)]
    cells += [CELL_MODELS["bernoulli"]().fit(X[:, j]) for j in range(3, 6)]
    model = _model(X, cells, alpha_views=3.0)
    runs = []
    for threads in (1, 3):
        monkeypatch.setattr(engine, "ROW_THREADS", threads)
        chain = engine.run_chain(model, n_sweeps=8, random_state=0)
        runs.append(chain.samples)
    assert max(s.rows.shape[0] for s in runs[0]) > 1   # several views ran side by side
    for one, many in zip(*runs):
        np.testing.assert_array_equal(one.views, many.views)
        np.testing.assert_array_equal(one.rows, many.rows)
        assert one.log_joint == many.log_joint



def test_parallel_chains_share_the_row_threads(monkeypatch):
    """n_jobs chains at once get ROW_THREADS / chains threads each; sequential chains all."""
    def fake_chain(model, *, n_threads=None, **kwargs):
        return SimpleNamespace(interrupted=False, n_threads=n_threads)

    def threads(**kwargs):
        return [chain.n_threads for chain in engine.run_chains(None, n_sweeps=1, **kwargs)]

    monkeypatch.setattr(engine, "ROW_THREADS", 4)
    monkeypatch.setattr(engine, "run_chain", fake_chain)
    assert threads(n_chains=2, n_jobs=1) == [None, None]
    assert threads(n_chains=2, n_jobs=2) == [2, 2]
    assert threads(n_chains=1, n_jobs=2) == [4]
    assert threads(n_chains=3, n_jobs=-1, n_threads=1) == [1, 1, 1]

@pytest.mark.parametrize("kind", ["normal", "bernoulli", "poisson", "categorical"])
def test_column_partition_score_equals_the_statistics_table(kind):
    """The one-pass score of a column move equals column_stats + column_log_score."""
    from sklearn_trellis.engines.gibbs import _crosscat_kernels as ck
    rng = np.random.RandomState(5)
    x = {"normal": rng.randn(50), "bernoulli": rng.randint(2, size=50),
         "poisson": rng.poisson(3.0, size=50), "categorical": rng.randint(3, size=50)}[kind]
    x = x.astype(float)
    x[rng.rand(50) < 0.2] = np.nan
    cell = CELL_MODELS[kind]().fit(x)
    p = np.asarray(cell.kernel_params(), float)
    labels = rng.randint(-1, 4, size=50)   # -1: an item of no slot
    table = np.zeros((6, cell.n_stats))
    ck.column_stats(int(cell.code), p, x, labels, table)
    scratch = np.full((8, cell.n_stats), 7.0)   # stale values: zeroed by the kernel
    score = ck.column_partition_score(int(cell.code), p, x, ck.log_factorials(x), labels, 6,
                                      scratch)
    assert score == pytest.approx(ck.column_log_score(int(cell.code), p, table), rel=1e-12)
