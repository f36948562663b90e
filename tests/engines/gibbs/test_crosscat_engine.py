"""CrossCat's Gibbs engine: Murphy Eq. 42, every move against exact enumeration, the state."""

import copy
from types import SimpleNamespace

import numba
import numpy as np
import pytest
from scipy.special import betaln

from sklearn_trellis import CrossCat
from sklearn_trellis.engines.exact.crosscat import exact_crosscat
from sklearn_trellis.engines.gibbs import _crosscat_kernels as ck
from sklearn_trellis.engines.gibbs import _crosscat_sweep
from sklearn_trellis.engines.gibbs import _crosscat_views as views_k
from sklearn_trellis.engines.gibbs import crosscat as engine
from sklearn_trellis.models import CELL_MODELS
from sklearn_trellis.models.cell_loops import column_log_score, column_stats
from sklearn_trellis.models.priors import CRP


def _model(X, cells, alpha_views=1.0, alpha_rows=1.0, **kwargs):
    return engine.CrossCatModel(cells, np.ascontiguousarray(X, dtype=float),
                                engine.ConcentrationPrior(alpha_views),
                                engine.ConcentrationPrior(alpha_rows), **kwargs)


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


# the collapsed row sampler's chain runs with the slow tests: in the fast set the slice
# sampler's chain checks the estimator against exact, and the collapsed row move alone is
# checked against exact draws (test_each_move_leaves_the_exact_posterior_invariant)
@pytest.mark.parametrize("row_sampler", ["slice", pytest.param("collapsed",
                                                               marks=pytest.mark.slow)])
def test_gibbs_matches_exact_on_tiny_mixed_table(row_sampler):
    """Dependence probabilities and row co-clustering of Gibbs within Monte Carlo error of
    exact (whole sweeps, hyperparameters on their grids, missing cells)."""
    X = _tiny_mixed_table()
    assert np.isnan(X).any()
    types = ["normal", "bernoulli", "categorical"]
    kwargs = dict(likelihood=types, alpha_views=0.8, alpha_rows=1.2, alpha_prior=None)
    exact = CrossCat(method="exact", **kwargs).fit(X)
    gibbs = CrossCat(method="gibbs", n_sweeps=5000, burn_in=200, n_chains=2, random_state=0,
                     row_sampler=row_sampler, **kwargs).fit(X)
    assert exact.method_ == "exact" and gibbs.method_ == "gibbs"
    np.testing.assert_allclose(gibbs.dependence_probability_, exact.dependence_probability_,
                               atol=0.03)
    for j in range(3):
        np.testing.assert_allclose(gibbs.row_similarity(j), exact.row_similarity(j), atol=0.03)


# -- each move alone leaves the exact posterior invariant ------------------------------------
def _four_type_table():
    rng = np.random.RandomState(7)
    X = np.column_stack([[0.2, 2.9, 0.4, 3.1, 2.6], [0, 1, 0, 1, 1], [0, 4, 1, 6, 5],
                         [2, 0, 2, 1, 0]]).astype(float)
    X[rng.rand(*X.shape) < 0.1] = np.nan
    types = ["normal", "bernoulli", "poisson", "categorical"]
    cells = [CELL_MODELS[t]().fit(X[:, j]) for j, t in enumerate(types)]
    return X, cells


def _state_of(model, sample, rng):
    state = engine.new_crosscat_state(model, rng, view_labels=sample.views,
                                      row_labels=list(sample.rows))
    for j, p in enumerate(sample.column_params):
        state.params[j, :p.size] = p
    for v in state.views:   # statistics do not depend on the params; refilled all the same
        engine.refill_view(model, state, v)
    return state


def _summary(model, states):
    """Dependence probabilities, each column's row co-clustering, mean cell params."""
    d = model.n_columns
    together = np.zeros((d, d))
    rows = np.zeros((d,) + (model.data.shape[0],) * 2)
    params = np.zeros_like(states[0].params)
    for st in states:
        together += st.view_of[:, None] == st.view_of[None, :]
        for j in range(d):
            labels = st.labels[st.view_of[j]]
            rows[j] += labels[:, None] == labels[None, :]
        params += st.params
    m = len(states)
    return together / m, rows / m, params / m


MOVES = {
    "slice rows": lambda m, s, r: engine.sweep_rows(m, s, r, n_split_merge=0,
                                                    row_sampler="slice"),
    "collapsed rows": lambda m, s, r: engine.sweep_rows(m, s, r, n_split_merge=0,
                                                        row_sampler="collapsed"),
    "row split-merge": lambda m, s, r: engine.sweep_rows(m, s, r, n_split_merge=3,
                                                         row_sampler="none"),
    "column moves": engine.move_columns,
    "column split-merge": lambda m, s, r: engine.split_merge_columns(m, s, r,
                                                                     chosen=np.arange(4)),
    "cell hyperparameters": engine.resample_column_params,
    "view split-merge": lambda m, s, r: engine.split_merge_views(m, s, r, n_proposals=4),
}


@pytest.fixture(scope="module")
def exact_draws():
    """2000 states drawn exactly from the posterior (enumeration), built once for all the
    moves, and the state of the generator that drew them (each move continues from it)."""
    X, cells = _four_type_table()
    model = _model(X, cells, alpha_views=0.9, alpha_rows=1.3)
    exact = exact_crosscat(model)
    rng = np.random.RandomState(0)
    before = [_state_of(model, s, rng) for s in exact.sample(2000, rng)]
    return model, exact, before, rng.get_state()


@pytest.mark.parametrize("move", list(MOVES))
def test_each_move_leaves_the_exact_posterior_invariant(move, exact_draws):
    """States drawn exactly from the posterior (enumeration), each moved once by one kernel:
    the moved states are still posterior draws. Their dependence probabilities and row
    co-clustering stay within 0.05 of the exact values, their mean cell params within five
    standard errors; the move did change states."""
    model, exact, before, rng_state = exact_draws
    rng = np.random.RandomState()
    rng.set_state(rng_state)
    n_draws = len(before)
    after = copy.deepcopy(before)
    for state in after:
        MOVES[move](model, state, rng)
    changed = np.mean([not (np.array_equal(a.view_of, b.view_of)
                            and np.array_equal(a.params, b.params)
                            and all(np.array_equal(a.labels[a.view_of[j]],
                                                   b.labels[b.view_of[j]]) for j in range(4)))
                       for a, b in zip(after, before)])
    assert changed > 0.05
    together, rows, params = _summary(model, after)
    np.testing.assert_allclose(together, exact.dependence_probability, atol=0.05)
    _, exact_rows, exact_params = _summary(model, before)
    np.testing.assert_allclose(rows, exact_rows, atol=0.05)
    spread = np.std([s.params for s in before], axis=0) / np.sqrt(n_draws)
    assert np.all(np.abs(params - exact_params) <= 5 * spread + 1e-12)


@pytest.mark.slow
def test_view_split_merge_chain_matches_exact():
    """A chain whose columns move by the view split-merge move alone (with the slice row
    move and the cell hyperparameters) has the exact dependence probabilities: leaving out
    the ``lgamma`` terms of the view prior in the move's ratio gave deviations of 0.03 to
    0.04 here, the correct ratio 0.005 to 0.007 (three seeds). The fast check of each term
    of the ratio is test_view_move_ratio_is_the_exact_metropolis_hastings_ratio."""
    X, cells = _four_type_table()
    model = _model(X, cells, alpha_views=0.9, alpha_rows=1.3)
    exact = exact_crosscat(model)
    rng = np.random.RandomState(0)
    state = _state_of(model, exact.sample(1, rng)[0], rng)
    together = np.zeros((4, 4))
    n_sweeps = 30000
    for _ in range(n_sweeps):
        engine.sweep_rows(model, state, rng, n_split_merge=0, row_sampler="slice")
        engine.split_merge_views(model, state, rng, n_proposals=1)
        engine.resample_column_params(model, state, rng)
        together += state.view_of[:, None] == state.view_of[None, :]
    np.testing.assert_allclose(together / n_sweeps, exact.dependence_probability, atol=0.015)


class _ViewMoveOracle:
    """The view split-merge move's Metropolis-Hastings ratio from first principles: the
    posterior by :func:`engine.log_joint` of both states, the proposal probabilities
    (sides, sequential allocations) from each column's marginal likelihood of row sets."""

    def __init__(self, model, params):
        self.model, self.params = model, params
        self._memo = {}

    def log_m(self, j, rows):
        key = (j, frozenset(rows))
        if key not in self._memo:
            code = int(self.model.codes[j])
            stats = np.zeros((1, self.model.n_stats))
            column_stats(code, self.params[j], self.model.columns[j][sorted(rows)],
                         np.zeros(len(rows), np.int64), stats)
            self._memo[key] = column_log_score(code, self.params[j], stats)
        return self._memo[key]

    def _blocks(self, labels):
        return [np.flatnonzero(labels == c) for c in np.unique(labels)]

    def log_q_sequential(self, members, alpha, order, labels):
        """log probability that rows allocated in ``order`` by the joint predictive of
        ``members`` (CRP(alpha) weights) form the partition ``labels``."""
        blocks, block_of, log_q = [], {}, 0.0
        for r in order:
            weights = [np.log(len(b)) + sum(self.log_m(j, b + [r]) - self.log_m(j, b)
                                            for j in members) for b in blocks]
            weights.append(np.log(alpha) + sum(self.log_m(j, [r]) for j in members))
            chosen = block_of.get(labels[r], len(blocks))
            log_q += weights[chosen] - np.logaddexp.reduce(weights)
            if chosen == len(blocks):
                block_of[labels[r]] = len(blocks)
                blocks.append([])
            blocks[chosen].append(r)
        return log_q

    def log_posterior(self, view_of, rows_of_view, alpha_views):
        views, view_labels = np.unique(view_of, return_inverse=True)
        state = engine.new_crosscat_state(self.model, np.random.RandomState(0),
                                          view_labels=view_labels,
                                          row_labels=[rows_of_view[v] for v in views])
        state.params[:] = self.params
        state.alpha_views = alpha_views
        return engine.log_joint(self.model, state)

    def log_ratio(self, state, i, j, order, launch_i, launch_j, stay, leave, z_stay,
                  z_leave, alpha_u):
        """log MH ratio of the proposal from ``state``: a split of ``i``'s view into
        ``stay`` (rows ``z_stay``) and ``leave`` (``z_leave``, concentration ``alpha_u``)
        or, if ``i`` and ``j`` are in different views, their merge (rows ``z_stay``)."""
        v, u = state.view_of[i], state.view_of[j]
        merged = sorted(stay + leave)
        log_q_sides = 0.0
        for l in merged:
            if l in (i, j):
                continue
            s_i, s_j = (sum(self.log_m(l, list(b)) for b in self._blocks(launch))
                        for launch in (launch_i, launch_j))
            log_q_sides += (s_j if l in leave else s_i) - np.logaddexp(s_i, s_j)
        rows = dict(enumerate(state.labels))
        split_views = state.view_of.copy()
        if u == v:
            split_views[leave] = state.n_columns.size     # a new slot
            split_rows = {**rows, v: z_stay, state.n_columns.size: z_leave}
            merged_rows, z_merged, alpha_leave = rows, state.labels[v], alpha_u
        else:
            merged_views = state.view_of.copy()
            merged_views[leave] = v
            split_rows, z_merged, alpha_leave = rows, z_stay, state.alphas[u]
            merged_rows = {**rows, v: z_stay}
            z_stay, z_leave = state.labels[v], state.labels[u]
        log_split = self.log_posterior(split_views if u == v else state.view_of,
                                       split_rows, state.alpha_views)
        log_merge = self.log_posterior(state.view_of if u == v else merged_views,
                                       merged_rows, state.alpha_views)
        alpha_v = state.alphas[v]
        log_q_split = (log_q_sides + self.log_q_sequential(stay, alpha_v, order, z_stay)
                       + self.log_q_sequential(leave, alpha_leave, order, z_leave))
        log_q_merge = self.log_q_sequential(merged, alpha_v, order, z_merged)
        forward = log_split - log_merge + log_q_merge - log_q_split
        return forward if u == v else -forward


def test_view_move_ratio_is_the_exact_metropolis_hastings_ratio():
    """Each proposal of the view split-merge move (splits of views of two to four columns,
    merges; from four starting states, 24 seeds each) carries the exact Metropolis-Hastings
    ratio: the posterior ratio of the two states times the reverse over the forward
    proposal probability, computed here from the columns' marginal likelihoods. Exact up
    to rounding, so each term counts: leaving out the view prior's ``lgamma`` terms, the
    sides' ``log q`` or the merge's ``log q`` in the kernel fails here at the first
    proposal it changes (differences of 1.1 to 10.7 nats), not only by a tolerance."""
    X, cells = _four_type_table()
    model = _model(X, cells, alpha_views=0.9, alpha_rows=1.3)
    columns, constants = model._by_column
    n, d = X.shape
    starts = [([0, 0, 0, 0], [[0, 0, 1, 1, 0]]), ([0, 0, 1, 1], [[0, 1, 0, 1, 2], [0] * 5]),
              ([0, 1, 0, 2], [[0, 0, 1, 1, 1], [0, 1, 2, 3, 4], [0, 1, 1, 0, 0]]),
              ([0, 0, 0, 1], [[0, 1, 0, 2, 2], [0, 0, 0, 1, 1]])]
    kinds = set()
    for views, rows in starts:
        state = engine.new_crosscat_state(model, np.random.RandomState(0),
                                          view_labels=np.array(views), row_labels=rows)
        oracle = _ViewMoveOracle(model, state.params.copy())
        work = views_k.new_view_move_work(d, n, state.stats.shape[2])
        for seed in range(24):
            ck.reseed(seed)
            i, j, order, n_stay, n_leave, n_merged, alpha_u, _, _, log_ratio = \
                model.kernels.propose_view_move(columns, constants, model.codes, state.params,
                                          state.view_of, state.labels, state.counts,
                                          state.n_clusters, state.alphas, state.stats,
                                          state.alpha_views,
                                          *model.alpha_rows.kernel_args(), work)
            launch_i, launch_j, z_stay, z_leave, stay, leave = work[4:10]
            split = state.view_of[i] == state.view_of[j]
            kinds.add((bool(split), int(n_merged)))
            expected = oracle.log_ratio(state, i, j, order, launch_i.copy(),
                                        launch_j.copy(), list(stay[:n_stay]),
                                        list(leave[:n_leave]), z_stay.copy(),
                                        z_leave.copy(), alpha_u)
            assert log_ratio == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # splits of 2, 3 and 4 columns (sides drawn for 0, 1, 2 of them), merges of 2 and 3
    assert {(True, 2), (True, 3), (True, 4), (False, 2), (False, 3)} <= kinds


# -- the state ------------------------------------------------------------------------------
def _assert_consistent(model, state):
    """Columns partitioned into the occupied views, labels compact, and counts and statistics
    equal to those recomputed from the labels (zero beyond each view's clusters)."""
    n = model.data.shape[0]
    np.testing.assert_array_equal(np.bincount(state.view_of, minlength=state.n_columns.size),
                                  state.n_columns)
    fresh = copy.deepcopy(state)
    for v in state.views:
        k = state.n_clusters[v]
        np.testing.assert_array_equal(np.unique(state.labels[v]), np.arange(k))
        assert state.counts[v].sum() == n and np.all(state.counts[v, :k] > 0)
        engine.refill_view(model, fresh, v)
    for v in np.flatnonzero(state.n_columns == 0):
        assert state.counts[v].sum() == 0
    np.testing.assert_array_equal(state.counts, fresh.counts)
    np.testing.assert_allclose(state.stats, fresh.stats, rtol=1e-9, atol=1e-9)
    assert engine.log_joint(model, state) == pytest.approx(engine.log_joint(model, fresh),
                                                           rel=1e-10)


@pytest.mark.parametrize("row_sampler", ["slice", "collapsed"])
def test_sweeps_keep_a_consistent_state_through_growth(row_sampler):
    """From one cluster and little room, a large row concentration opens many clusters (the
    tables grow in the row moves, the split-merge proposals and the new views of column
    moves); the state stays consistent after every sweep."""
    rng = np.random.RandomState(1)
    n = 40
    X = np.column_stack([rng.randn(n), rng.randn(n), rng.randint(2, size=n),
                         rng.poisson(3.0, size=n), rng.randint(4, size=n)]).astype(float)
    X[rng.rand(*X.shape) < 0.1] = np.nan
    types = ["normal", "normal", "bernoulli", "poisson", "categorical"]
    cells = [CELL_MODELS[t]().fit(X[:, j]) for j, t in enumerate(types)]
    model = _model(X, cells, alpha_views=2.0, alpha_rows=30.0, row_sampler=row_sampler,
                   split_merge=(3, 5))
    state = engine.new_crosscat_state(model, rng, view_labels=np.zeros(5, int),
                                      row_labels=[np.zeros(n, int)])
    room = state.stats.shape[1]
    most_views = 1
    for _ in range(12):
        engine.sweep(model, state, rng)
        _assert_consistent(model, state)
        most_views = max(most_views, len(state.views))
    assert state.stats.shape[1] > room and most_views > 1


def test_same_seed_same_chain_on_any_number_of_threads(monkeypatch):
    """Rows and column scores serial, or on numba's threads (one or all): the same chain."""
    rng = np.random.RandomState(4)
    X = np.column_stack([rng.randn(300, 3), rng.randint(2, size=(300, 3))]).astype(float)
    X[rng.rand(*X.shape) < 0.1] = np.nan
    cells = [CELL_MODELS["normal"]().fit(X[:, j]) for j in range(3)]
    cells += [CELL_MODELS["bernoulli"]().fit(X[:, j]) for j in range(3, 6)]
    model = _model(X, cells, alpha_views=3.0)
    runs = [engine.run_chain(model, n_sweeps=8, random_state=0).samples]   # serial
    monkeypatch.setattr(engine, "PARALLEL_CELLS", 0)
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        runs.append(engine.run_chain(model, n_sweeps=8, random_state=0,
                                     n_threads=threads).samples)
    assert max(s.rows.shape[0] for s in runs[0]) > 1
    for run in runs[1:]:
        for one, other in zip(runs[0], run):
            np.testing.assert_array_equal(one.views, other.views)
            np.testing.assert_array_equal(one.rows, other.rows)
            assert one.log_joint == other.log_joint


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


def test_crp_draw_follows_the_crp():
    """The number of clusters of CRP(alpha) draws: Stirling numbers of the first kind."""
    n, alpha, m = 9, 1.7, 40000
    labels = np.empty(n, np.int64)
    counts = np.bincount([ck.crp_labels(n, alpha, seed, labels) for seed in range(m)],
                         minlength=n + 1)
    stirling = np.zeros((n + 1, n + 1))
    stirling[0, 0] = 1.0
    for i in range(1, n + 1):
        for k in range(1, i + 1):
            stirling[i, k] = stirling[i - 1, k - 1] + (i - 1) * stirling[i - 1, k]
    p = stirling[n] * alpha ** np.arange(n + 1)
    p /= p.sum()
    assert np.all(np.abs(counts / m - p) <= 5 * np.sqrt(p * (1 - p) / m) + 1e-12)
    # and the labels: compact, in order of first appearance
    ck.crp_labels(200, 5.0, 0, labels := np.empty(200, np.int64))
    first = np.unique(labels, return_index=True)[1]
    assert np.all(np.diff(first) > 0) and labels[0] == 0


@pytest.mark.parametrize("kind", ["normal", "bernoulli", "poisson", "categorical"])
def test_column_partition_score_equals_the_statistics_table(kind):
    """The one-pass score of a column move equals column_stats + column_log_score."""
    rng = np.random.RandomState(5)
    x = {"normal": rng.randn(50), "bernoulli": rng.randint(2, size=50),
         "poisson": rng.poisson(3.0, size=50), "categorical": rng.randint(3, size=50)}[kind]
    x = x.astype(float)
    x[rng.rand(50) < 0.2] = np.nan
    cell = CELL_MODELS[kind]().fit(x)
    p = np.asarray(cell.kernel_params(), float)
    labels = rng.randint(-1, 4, size=50)   # -1: an item of no slot
    table = np.zeros((6, cell.n_stats))
    column_stats(int(cell.code), p, x, labels, table)
    scratch = np.full((8, cell.n_stats), 7.0)   # stale values: zeroed by the kernel
    kernels = _crosscat_sweep.kernels_for([cell.code])
    score = kernels.column_partition_score(int(cell.code), p, x,
                                           kernels.cell_constants(int(cell.code), x), labels, 6,
                                           scratch)
    assert score == pytest.approx(column_log_score(int(cell.code), p, table), rel=1e-12)


def test_estimator_samplers_and_split_merge_options():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.randn(60), rng.randint(2, size=60)]).astype(float)
    for row_sampler in ("slice", "collapsed"):
        for n_split_merge in (0, 2):
            kwargs = dict(row_sampler=row_sampler, n_split_merge=n_split_merge, n_sweeps=20,
                          random_state=0)
            model = CrossCat(**kwargs).fit(X)
            again = CrossCat(**kwargs).fit(X)
            assert model.method_ == "gibbs"
            np.testing.assert_array_equal(model.view_row_labels_, again.view_row_labels_)
    with pytest.raises(ValueError, match="row_sampler"):
        CrossCat(row_sampler="uncollapsed", n_sweeps=2).fit(X)
    with pytest.raises(ValueError, match="n_split_merge"):
        CrossCat(n_split_merge=-1, n_sweeps=2).fit(X)


@pytest.mark.parametrize("kind", ["normal", "bernoulli", "poisson", "categorical"])
def test_column_grid_scores_equal_the_block_marginals(kind):
    """The grid scores of a column (normal: count terms once per block) equal the sum of the
    block marginals at each grid point."""
    rng = np.random.RandomState(6)
    x = {"normal": rng.randn(40) * 3, "bernoulli": rng.randint(2, size=40),
         "poisson": rng.poisson(3.0, size=40), "categorical": rng.randint(3, size=40)}[kind]
    x = x.astype(float)
    x[rng.rand(40) < 0.2] = np.nan
    cell = CELL_MODELS[kind]().fit(x)
    grid, log_prior = cell.hyperparameter_grid()
    grid = np.ascontiguousarray(grid, float)
    assert grid.shape[0] > 1
    labels = rng.randint(4, size=40)
    stats = np.zeros((2, 6, cell.n_stats))
    column_stats(int(cell.code), grid[0], x, labels, stats[1])
    out = np.empty(grid.shape[0])
    _crosscat_sweep.kernels_for([cell.code]).column_grid_scores(
        int(cell.code), grid, grid.shape[0], log_prior, stats, 1, 4, out)
    for g in range(grid.shape[0]):
        naive = log_prior[g] + sum(cell.kernels.log_marginal(grid[g], stats[1, k])
                                   for k in range(4))
        assert out[g] == pytest.approx(naive, rel=1e-12)


def test_large_tables_make_view_proposals_in_a_share_of_the_sweeps(monkeypatch):
    """Above ``VIEW_MOVE_CELLS`` cells the view split-merge runs with probability
    ``VIEW_MOVE_CELLS / cells`` per sweep, drawn from the sweep's own stream (numba's
    generator): a binomial count, and the same chain for the same seed."""
    rng = np.random.RandomState(1)
    X = rng.randn(40, 4)
    model = _model(X, [CELL_MODELS["normal"]().fit(X[:, j]) for j in range(4)])
    calls = []
    view_split_merge = model.kernels.view_split_merge

    def counted(*args):
        calls.append(1)
        return view_split_merge(*args)

    monkeypatch.setattr(model.kernels, "view_split_merge", counted)
    monkeypatch.setattr(_crosscat_sweep, "VIEW_MOVE_CELLS", X.size // 4)   # share 1/4
    runs = []
    counts = []
    for numpy_seed in (0, 1):       # NumPy's global generator must not matter
        np.random.seed(numpy_seed)
        del calls[:]
        runs.append(engine.run_chain(model, n_sweeps=400, random_state=3).samples)
        counts.append(len(calls))
    n = counts[0]
    assert counts[1] == n
    assert abs(n - 100) < 5 * np.sqrt(400 * 0.25 * 0.75), n
    for one, other in zip(*runs):
        np.testing.assert_array_equal(one.rows, other.rows)
        np.testing.assert_array_equal(one.views, other.views)
    monkeypatch.setattr(_crosscat_sweep, "VIEW_MOVE_CELLS", X.size)       # every sweep
    del calls[:]
    engine.run_chain(model, n_sweeps=20, random_state=3)
    assert len(calls) == 20


def test_kernels_are_compiled_for_the_tables_cell_types():
    """A table of normal columns runs the normal-only specialisation of the move kernels
    (the other types' branches pruned: any code reaches the normal cell model), any other
    table the one holding every type (each code its own cell model)."""
    from sklearn_trellis.models import cell_kernels
    rng = np.random.RandomState(2)
    X = rng.randn(12, 3)
    numeric = _model(X, [CELL_MODELS["normal"]().fit(X[:, j]) for j in range(3)])
    normal_only = _crosscat_sweep.kernels_for([cell_kernels.NORMAL])
    assert numeric.kernels is normal_only
    scope = normal_only.slice_rows.py_func.__globals__
    assert scope["HAS_NORMAL"] and not (scope["HAS_BERNOULLI"] or scope["HAS_POISSON"]
                                        or scope["HAS_CATEGORICAL"])
    engine.run_chain(numeric, n_sweeps=2, random_state=0)   # runs on those kernels
    X4, cells = _four_type_table()
    mixed = _model(X4, cells)
    assert sorted(set(mixed.codes.tolist())) == [0, 1, 2, 3]
    every = mixed.kernels
    assert every is not normal_only
    # any other mix shares the kernels of every type (one compilation for all mixes)
    assert _model(X4[:, :2], cells[:2]).kernels is every
    assert _crosscat_sweep.kernels_for([cell_kernels.POISSON]) is every
    assert every.slice_rows.py_func.__qualname__ != normal_only.slice_rows.py_func.__qualname__
    normal = CELL_MODELS["normal"]().fit(X[:, 0])
    p = np.asarray(normal.kernel_params(), float)
    stats = np.zeros(normal.n_stats)
    for x in X[:, 0]:
        cell_kernels.accumulate_at(cell_kernels.NORMAL, p, 0, stats, 0, x, 1.0)
    zero = np.int64(0)
    expected = cell_kernels.log_marginal_at(cell_kernels.NORMAL, p, zero, stats, zero)
    for code in range(4):   # one branch left: every code scores the normal cells
        assert normal_only.table_log_marginal_at(np.int64(code), p, zero, stats, zero) \
            == expected
    for j, cell in enumerate(cells):   # the mixed table's kernels: each code its own type
        code, q = np.int64(cell.code), np.asarray(cell.kernel_params(), float)
        block = np.zeros(cell.n_stats)
        for x in X4[:, j]:
            cell_kernels.accumulate_at(code, q, zero, block, zero, x, 1.0)
        assert every.table_log_marginal_at(code, q, zero, block, zero) == \
            cell_kernels.log_marginal_at(code, q, zero, block, zero)
    run = engine.run_chain(mixed, n_sweeps=2, random_state=0)
    assert np.isfinite(run.samples[-1].log_joint)
