"""CrossCat on the collapsed Gibbs engine: views of columns, a DP mixture of rows in each view.

The model (Murphy Eqs. 38-41; Mansinghka et al. 2016): columns are partitioned
into views by CRP(alpha_views); the rows of each view ``v`` by their own
CRP(alpha_v); every column has a conjugate cell model per row cluster of its
view (:mod:`sklearn_trellis.models.cells`, NaN cells missing), with cell
hyperparameters on a finite grid per column.

One sweep (Mansinghka et al. 2016, Sec. 3):

1. rows: in each view, the engine's DP-mixture scan (Neal's Algorithm 3 plus
   split-merge, :func:`.sampler.sweep`) with the cell-block likelihood over the
   view's columns (:class:`~sklearn_trellis.models.cell_blocks.CellBlocks`);
2. columns: each column in turn is reassigned among the existing views and
   ``n_aux`` auxiliary views whose row partitions are drawn from the prior
   (Neal's Algorithm 8 over views; a column alone in its view offers that view
   as the first auxiliary one). Scores come from the kernels of
   :mod:`._crosscat_kernels`. Then up to ``COLUMN_SPLIT_MERGE`` random columns
   get a Metropolis-Hastings split-merge proposal (:func:`split_merge_column`): a new
   view of its own with
   a row partition fitted to it, or, alone, a merge into another view;
3. column hyperparameters: exact draws from their conditional over each
   column's grid;
4. concentrations: ``alpha_views`` and each view's ``alpha`` from their Gamma
   hyperpriors (Escobar & West), when they are learned.

Every view is a :class:`.sampler.GibbsState` of its own cell-block likelihood
(one group per column of the view); a column move carries the two views it
touches over to their new column sets (the blocks of the other columns and the
items' cached statistics move along; only the moving column's cells are read).
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils import check_random_state

from ...models.cell_blocks import CellBlocks
from ...models.priors import CRP
from . import _crosscat_kernels as ck
from . import sampler
from .slice import slice_step

_MAX_SEED = np.iinfo(np.int32).max

#: Split-merge proposals per view and sweep (row moves).
ROW_SPLIT_MERGE = 2
#: The same after a slice-sampler row step (``row_sampler='slice'``): the slice step is
#: cheap and moves every row, and the split-merge proposal, the dearer part, is what lets it
#: leave partitions it cannot split (on 10,000 x 50, one proposal per view reaches the row
#: ARI of two in half the time; none leaves merged clusters unsplit).
SLICE_SPLIT_MERGE = 1
#: Threads running the views' row steps (each view its own seed: results do not depend on it).
ROW_THREADS = os.cpu_count() or 1
#: Columns (a random subset) given a column split-merge proposal per sweep: each costs a
#: sequential allocation of every row, the dearest step on tall tables.
COLUMN_SPLIT_MERGE = 10


@dataclass
class ConcentrationPrior:
    """A fixed concentration (``hyperprior=None``) or a GammaHyperprior with its start value."""

    value: float
    hyperprior: object = None

    def draw(self, rng):
        if self.hyperprior is None:
            return self.value
        return float(rng.gamma(self.hyperprior.shape, 1.0 / self.hyperprior.rate))

    def resample(self, alpha, sizes, rng):
        if self.hyperprior is None:
            return self.value
        return self.hyperprior.resample(CRP(alpha), sizes, rng)


@dataclass
class CrossCatModel:
    """What a chain needs besides its state: the fitted cell models, data, grids, priors."""

    cells: list                 # one fitted cell model (models.cells) per column
    data: np.ndarray            # (n, d) float64, NaN missing
    alpha_views: ConcentrationPrior
    alpha_rows: ConcentrationPrior
    n_aux: int = 1
    row_sampler: str = "collapsed"   # or "slice" (:mod:`.slice`)

    @property
    def n_columns(self):
        return self.data.shape[1]

    def code(self, j):
        return int(self.cells[j].code)

    @cached_property
    def _by_column(self):
        # each column contiguous (a column of the row-major table is strided: a cache miss
        # per cell), and log(x!) of the poisson cells, computed once, not per scoring pass
        columns = np.ascontiguousarray(self.data.T)
        log_factorials = np.zeros_like(columns)
        for j, cell in enumerate(self.cells):
            if int(cell.code) == ck.POISSON:
                log_factorials[j] = ck.log_factorials(columns[j])
        return columns, log_factorials

    def column(self, j):
        """Column ``j`` (contiguous, NaN missing)."""
        return self._by_column[0][j]

    def log_factorials(self, j):
        """``log(x!)`` of the cells of a poisson column ``j`` (zeros for other types)."""
        return self._by_column[1][j]

    def grid(self, j):
        """Column ``j``'s grid ``(params (G, q), log_prior (G,))`` (one point if fixed)."""
        grid = self.cells[j].hyperparameter_grid()
        if grid is None:
            return (np.asarray(self.cells[j].kernel_params(), np.float64)[None, :], np.zeros(1))
        return np.ascontiguousarray(grid[0], np.float64), np.asarray(grid[1], np.float64)

    def view_likelihood(self, columns):
        """The cell-block likelihood of a view (one group per column) and its data."""
        columns = sorted(columns)
        data = np.ascontiguousarray(self.data[:, columns])
        return CellBlocks([self.cells[j] for j in columns]).fit(data), data


@dataclass
class View:
    """One view: its columns (sorted), cell-block likelihood, data and Gibbs state."""

    columns: list
    likelihood: object
    data: np.ndarray
    state: object

    @property
    def alpha(self):
        return self.state.alpha


def make_view(model, columns, labels, alpha, column_params):
    columns = sorted(columns)
    likelihood, data = model.view_likelihood(columns)
    params = likelihood.kernel_params([column_params[j] for j in columns])
    state = sampler.new_state(likelihood, data, labels, alpha, params=params)
    return View(columns, likelihood, data, state)


@dataclass
class CrossCatState:
    """Views, per-column cell params and the column concentration."""

    views: list                 # View per view
    column_params: list         # per column: cell params (1-d)
    alpha_views: float
    n_sweeps_done: int = 0

    @property
    def columns(self):
        return [view.columns for view in self.views]

    def view_of(self):
        out = np.empty(sum(len(v.columns) for v in self.views), np.int64)
        for v, view in enumerate(self.views):
            out[view.columns] = v
        return out


def new_crosscat_state(model, rng, view_labels=None, row_labels=None):
    """A state from given column -> view labels and row labels per view, or drawn from the prior."""
    n, d = model.data.shape
    alpha_views = model.alpha_views.draw(rng)
    if view_labels is None:
        view_labels = np.empty(d, np.int64)
        ck.crp_labels(d, alpha_views, rng.randint(_MAX_SEED), view_labels)
    _, view_labels = np.unique(view_labels, return_inverse=True)
    column_params = [np.asarray(cell.kernel_params(), np.float64) for cell in model.cells]
    state = CrossCatState(views=[], column_params=column_params, alpha_views=float(alpha_views))
    for v in range(view_labels.max() + 1):
        alpha = model.alpha_rows.draw(rng)
        if row_labels is None:
            labels = np.empty(n, np.int64)
            ck.crp_labels(n, alpha, rng.randint(_MAX_SEED), labels)
        else:
            labels = np.asarray(row_labels[v])
        columns = np.flatnonzero(view_labels == v).tolist()
        state.views.append(make_view(model, columns, labels, alpha, column_params))
    return state


def _column_stats(model, state, j, labels, n_slots, params=None):
    stats = np.zeros((n_slots, model.cells[j].n_stats))
    p = state.column_params[j] if params is None else params
    ck.column_stats(model.code(j), p, model.column(j), labels, stats)
    return stats


def _rebuild(model, state, v, columns):
    """View ``v`` with a new column set, keeping its row partition and concentration.

    The state is carried over (:meth:`.CellBlocks.carry_state`): the blocks of the
    columns that stay keep their statistics and cached values, and only a joining
    column's cells are read.
    """
    view = state.views[v]
    columns = sorted(columns)
    position = {j: g for g, j in enumerate(view.columns)}
    source = [position.get(j, -1) for j in columns]
    likelihood = view.likelihood.rearranged(source, [model.cells[j] for j in columns])
    params = likelihood.kernel_params([state.column_params[j] for j in columns])
    st = view.state
    n = st.labels.size
    new_blocks, new_items = {}, {}
    for c, j in enumerate(columns):
        if source[c] < 0:
            new_blocks[c] = _column_stats(model, state, j, st.labels, st.capacity)
            # one row per item: each item's own cell statistics
            new_items[c] = _column_stats(model, state, j, np.arange(n), n)
    st.stats, st.work = likelihood.carry_state(view.likelihood, source, params, st.stats,
                                               st.work, new_blocks, new_items)
    st.params = params
    state.views[v] = View(columns, likelihood, np.ascontiguousarray(model.data[:, columns]), st)


def move_column(model, state, j, rng):
    """Reassign column ``j`` among the views and ``n_aux`` fresh ones (Neal's Algorithm 8)."""
    n = model.data.shape[0]
    origin = next(v for v, view in enumerate(state.views) if j in view.columns)
    remaining = [c for c in state.views[origin].columns if c != j]
    singleton = not remaining
    t, p, x = model.code(j), state.column_params[j], model.column(j)
    log_factorials = model.log_factorials(j)
    # one statistics table for every view (the largest), zeroed by each scoring pass
    scratch = np.empty((max(n + 1, max(view.state.capacity for view in state.views)),
                        model.cells[j].n_stats))
    candidates, scores = [], []
    for v, view in enumerate(state.views):
        if v == origin and singleton:
            continue
        size = len(remaining) if v == origin else len(view.columns)
        candidates.append(("view", v))
        scores.append(np.log(size) + ck.column_partition_score(
            t, p, x, log_factorials, view.state.labels, view.state.capacity, scratch))
    log_aux = np.log(state.alpha_views / model.n_aux)
    for a in range(model.n_aux):
        if a == 0 and singleton:
            view = state.views[origin]
            score = ck.column_partition_score(t, p, x, log_factorials, view.state.labels,
                                              view.state.capacity, scratch)
            candidates.append(("view", origin))
        else:
            alpha = model.alpha_rows.draw(rng)
            labels = np.empty(n, np.int64)
            ck.crp_labels(n, alpha, rng.randint(_MAX_SEED), labels)
            score = ck.column_partition_score(t, p, x, log_factorials, labels,
                                              int(labels.max()) + 1, scratch)
            candidates.append(("fresh", (labels, alpha)))
        scores.append(log_aux + score)
    scores = np.asarray(scores)
    weights = np.exp(scores - scores.max())
    kind, what = candidates[int(rng.choice(len(candidates), p=weights / weights.sum()))]
    if kind == "view" and what == origin:
        return
    if kind == "view":
        _rebuild(model, state, what, state.views[what].columns + [j])
    else:
        labels, alpha = what
        state.views.append(make_view(model, [j], labels, alpha, state.column_params))
    if singleton:
        del state.views[origin]
    else:
        _rebuild(model, state, origin, remaining)


def _partition_score(model, state, j, labels):
    n_slots = int(labels.max()) + 1
    return ck.column_partition_score(model.code(j), state.column_params[j], model.column(j),
                                     model.log_factorials(j), labels, n_slots,
                                     np.empty((n_slots, model.cells[j].n_stats)))


def split_merge_column(model, state, j, rng):
    """Metropolis-Hastings: column ``j`` leaves for a new view or its lone view merges into another.

    A column sharing its view proposes a new view of its own whose row partition
    is drawn by :func:`._crosscat_kernels.sequential_allocation` (a one-pass DP
    mixture of the column alone); a column alone in its view proposes joining a
    uniformly chosen other view. Each move's reverse is the other one, so the
    acceptance ratio is exact. Algorithm 8's fresh views come from the prior and
    are rarely good enough for a column of a large table to leave; this
    data-driven proposal lets columns form new views.
    """
    n = model.data.shape[0]
    origin = next(v for v, view in enumerate(state.views) if j in view.columns)
    n_views = len(state.views)
    t, p = model.code(j), state.column_params[j]
    x = model.column(j)
    order = rng.permutation(n).astype(np.int64)
    stats = np.zeros((n + 1, 2 * model.cells[j].n_stats))
    counts = np.zeros(n + 1)
    sizes = np.array([len(view.columns) for view in state.views])
    view_prior = CRP(state.alpha_views)
    current = state.views[origin]
    current_labels = current.state.compact_labels()
    if len(current.columns) > 1:
        alpha = model.alpha_rows.draw(rng)
        labels = np.empty(n, np.int64)
        log_q = ck.sequential_allocation(t, p, x, alpha, order, labels, stats, counts, True,
                                         rng.randint(_MAX_SEED))
        new_sizes = np.append(sizes, 1)
        new_sizes[origin] -= 1
        delta = (view_prior.log_eppf(new_sizes) - view_prior.log_eppf(sizes)
                 + CRP(alpha).log_eppf(np.bincount(labels))
                 + _partition_score(model, state, j, labels)
                 - _partition_score(model, state, j, current_labels))
        if np.log(rng.random_sample()) < delta - np.log(n_views) - log_q:
            state.views.append(make_view(model, [j], labels, alpha, state.column_params))
            _rebuild(model, state, origin, [c for c in current.columns if c != j])
        return
    if n_views == 1:
        return
    target = int(rng.choice([v for v in range(n_views) if v != origin]))
    log_q = ck.sequential_allocation(t, p, x, current.alpha, order, current_labels, stats,
                                     counts, False, 0)
    new_sizes = sizes.copy()
    new_sizes[target] += 1
    new_sizes = np.delete(new_sizes, origin)
    target_labels = state.views[target].state.compact_labels()
    delta = (view_prior.log_eppf(new_sizes) - view_prior.log_eppf(sizes)
             - CRP(current.alpha).log_eppf(np.bincount(current_labels))
             + _partition_score(model, state, j, target_labels)
             - _partition_score(model, state, j, current_labels))
    if np.log(rng.random_sample()) < delta + log_q + np.log(n_views - 1):
        _rebuild(model, state, target, state.views[target].columns + [j])
        del state.views[origin]


def resample_column_params(model, state, rng):
    """Exact draw of each column's grid hyperparameters given its blocks (CellBlocks' update)."""
    for view in state.views:
        st = view.state
        new = view.likelihood.resample_params(st.params, st.stats, st.shared, st.counts,
                                              st.active[:st.meta[0]], rng)
        if new is not None and not np.array_equal(new, st.params):
            sampler.set_params(st, view.likelihood, view.data, new)
            for j, p in zip(view.columns, view.likelihood.cell_params(new)):
                state.column_params[j] = np.asarray(p, np.float64)


def _row_sweep(view, seed, n_split_merge):
    sampler.sweep(view.state, view.likelihood, CRP(view.alpha).kernel_params(), view.data,
                  np.random.RandomState(seed), n_split_merge=n_split_merge)


def _row_slice(view, seed, n_split_merge):
    """The slice-sampler move of every row (:func:`.slice.slice_step`), then split-merge."""
    rng = np.random.RandomState(seed)
    slice_step(view.state, view.likelihood, view.data, rng)
    sampler.sweep(view.state, view.likelihood, CRP(view.alpha).kernel_params(), view.data,
                  rng, n_split_merge=n_split_merge, scan=False)


def sweep_rows(state, rng, *, n_split_merge=None, n_threads=None, row_sampler="collapsed"):
    """The row step of every view; the views are independent given the columns.

    Each view gets its own seed, drawn from ``rng`` in the order of the views, so the
    result does not depend on ``n_threads`` (default ``ROW_THREADS``): the views' scans
    run on that many threads (the kernels release the GIL), the largest views first.
    ``n_split_merge``: row split-merge proposals per view (default ``ROW_SPLIT_MERGE``).
    ``row_sampler='slice'``: each view's rows move by the slice sampler
    (:func:`.slice.slice_step`, its rows on numba's threads) instead of the collapsed
    scan, the views one after another (default ``SLICE_SPLIT_MERGE`` proposals).
    """
    seeds = rng.randint(_MAX_SEED, size=len(state.views))
    if row_sampler == "slice":
        n_split_merge = SLICE_SPLIT_MERGE if n_split_merge is None else n_split_merge
        for view, seed in zip(state.views, seeds):
            _row_slice(view, seed, n_split_merge)
        return
    n_split_merge = ROW_SPLIT_MERGE if n_split_merge is None else n_split_merge
    n_threads = min(ROW_THREADS if n_threads is None else n_threads, len(state.views))
    if n_threads <= 1:
        for view, seed in zip(state.views, seeds):
            _row_sweep(view, seed, n_split_merge)
        return
    sampler._engine(state.views[0].likelihood)   # compiled (or loaded) once, not per thread
    order = sorted(range(len(state.views)), key=lambda v: -len(state.views[v].columns))
    with ThreadPoolExecutor(n_threads) as pool:
        for done in [pool.submit(_row_sweep, state.views[v], seeds[v], n_split_merge)
                     for v in order]:
            done.result()


def sweep(model, state, rng, *, n_split_merge=None, n_threads=None):
    """One CrossCat sweep: rows of every view, columns, column hyperparameters, concentrations."""
    sweep_rows(state, rng, n_split_merge=n_split_merge, n_threads=n_threads,
               row_sampler=model.row_sampler)
    for j in rng.permutation(model.n_columns):
        move_column(model, state, int(j), rng)
    for j in rng.permutation(model.n_columns)[:COLUMN_SPLIT_MERGE]:
        split_merge_column(model, state, int(j), rng)
    resample_column_params(model, state, rng)
    for view in state.views:
        view.state.alpha = model.alpha_rows.resample(view.alpha, view.state.cluster_sizes(), rng)
    state.alpha_views = model.alpha_views.resample(
        state.alpha_views, [len(c) for c in state.columns], rng)
    state.n_sweeps_done += 1


def log_joint(model, state):
    """``log p(views, row partitions, X)`` at the state's concentrations and cell params."""
    total = CRP(state.alpha_views).log_eppf(np.array([len(c) for c in state.columns]))
    for view in state.views:
        total += sampler.log_joint(view.state, view.likelihood, CRP(view.alpha).kernel_params())
    return float(total)


@dataclass
class CrossCatSample:
    """One kept sample: column -> view (views in order of first column), row labels per view."""

    views: np.ndarray           # (d,) int32
    rows: np.ndarray            # (V, n) int32, row v = view v
    alphas: np.ndarray          # (V,) row concentrations
    alpha_views: float
    column_params: list
    log_joint: float


def snapshot(model, state):
    view_of = state.view_of()
    order = []
    for v in view_of:
        if v not in order:
            order.append(int(v))
    relabel = {v: k for k, v in enumerate(order)}
    views = np.array([relabel[int(v)] for v in view_of], dtype=np.int32)
    rows = np.array([state.views[v].state.compact_labels() for v in order], dtype=np.int32)
    alphas = np.array([state.views[v].alpha for v in order])
    return CrossCatSample(views=views, rows=rows, alphas=alphas,
                          alpha_views=state.alpha_views,
                          column_params=[p.copy() for p in state.column_params],
                          log_joint=log_joint(model, state))


@dataclass
class CrossCatChain:
    samples: list
    state: CrossCatState
    seconds: float = 0.0
    n_sweeps: int = 0
    interrupted: bool = False
    extra: dict = field(default_factory=dict)


def run_chain(model, *, n_sweeps, burn_in=0, thin=1, state=None, random_state=None, verbose=0,
              chain_id=0, n_threads=None):
    """Run one CrossCat chain (a prior draw as start unless ``state`` is given).

    ``n_threads``: threads of the views' row steps (default ``ROW_THREADS``); the
    samples do not depend on it.
    """
    rng = check_random_state(random_state)
    if state is None:
        state = new_crosscat_state(model, rng)
    samples = []
    start = time.perf_counter()
    done = 0
    interrupted = False
    report_every = max(1, n_sweeps // 10)
    try:
        for t in range(n_sweeps):
            sweep(model, state, rng, n_threads=n_threads)
            done += 1
            if t >= burn_in and (t - burn_in) % thin == 0:
                samples.append(snapshot(model, state))
            if verbose and ((t + 1) % report_every == 0 or t + 1 == n_sweeps):
                elapsed = time.perf_counter() - start
                sizes = sorted((len(c) for c in state.columns), reverse=True)
                print(f"[CrossCat chain {chain_id}] sweep {t + 1}/{n_sweeps}: "
                      f"{len(state.views)} views (columns {sizes}), "
                      f"{elapsed / (t + 1):.3g} s/sweep", flush=True)
    except KeyboardInterrupt:
        interrupted = True
    return CrossCatChain(samples=samples, state=state, seconds=time.perf_counter() - start,
                         n_sweeps=done, interrupted=interrupted)


def run_chains(model, *, n_chains=1, n_jobs=None, random_state=None, states=None,
               **chain_kwargs):
    """Independent CrossCat chains through :func:`.sampler.map_chains` (joblib, seeds).

    Chains in parallel share the cores: each gets ``ROW_THREADS`` divided by the
    number of chains running at once for its views' row steps (the samples do not
    depend on the thread count).
    """
    if states is None:
        states = [None] * n_chains
    if n_jobs not in (None, 1) and "n_threads" not in chain_kwargs:
        at_once = max(1, min(effective_n_jobs(n_jobs), len(states)))
        chain_kwargs["n_threads"] = max(1, ROW_THREADS // at_once)
    return sampler.map_chains(run_chain, (model,), [{"state": s} for s in states],
                              n_jobs=n_jobs, random_state=random_state, **chain_kwargs)


# -- posterior predictive of new rows under one sample -----------------------------------
@dataclass
class ViewPredictive:
    """One view of one sample against new rows.

    ``log_weights[i, k]``: log of (CRP weight of cluster ``k``, the last one new,
    normalised) x (predictive density of row ``i``'s observed cells of the
    view); its ``logsumexp`` over ``k`` is the row's log predictive density in
    the view. ``stats[j]``: column ``j``'s cell statistics per cluster (last row
    empty); ``params[j]`` its cell params.
    """

    columns: np.ndarray
    log_weights: np.ndarray
    stats: dict
    params: dict


def view_predictives(model, sample, data_new):
    """:class:`ViewPredictive` of every view of ``sample`` (a :class:`CrossCatSample`)."""
    out = []
    n = model.data.shape[0]
    for v in range(sample.rows.shape[0]):
        columns = np.flatnonzero(sample.views == v)
        labels = sample.rows[v].astype(np.int64)
        sizes = np.bincount(labels).astype(np.float64)
        alpha = float(sample.alphas[v])
        prior = np.log(np.append(sizes, alpha) / (n + alpha))
        log_weights = np.tile(prior, (data_new.shape[0], 1))
        stats, cell_params = {}, {}
        for j in columns:
            p = np.asarray(sample.column_params[j], dtype=np.float64)
            table = np.zeros((sizes.size + 1, model.cells[j].n_stats))
            ck.column_stats(model.code(j), p, model.data[:, j], labels, table)
            ck.rows_log_predictive(model.code(j), p, table,
                                   np.ascontiguousarray(data_new[:, j]), log_weights)
            stats[int(j)], cell_params[int(j)] = table, p
        out.append(ViewPredictive(columns, log_weights, stats, cell_params))
    return out


__all__ = ["ConcentrationPrior", "ViewPredictive", "view_predictives", "CrossCatModel",
           "CrossCatState", "CrossCatSample", "View", "make_view", "new_crosscat_state",
           "move_column", "split_merge_column", "resample_column_params", "sweep", "log_joint",
           "snapshot", "run_chain", "run_chains", "sweep_rows", "ROW_SPLIT_MERGE",
           "SLICE_SPLIT_MERGE", "COLUMN_SPLIT_MERGE", "ROW_THREADS"]
