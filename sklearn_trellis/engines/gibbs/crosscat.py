"""CrossCat's Gibbs sampler: views of columns, a DP mixture of rows in each view.

The model (Murphy Eqs. 38-41; Mansinghka et al. 2016): columns are partitioned
into views by CRP(alpha_views); the rows of each view ``v`` by their own
CRP(alpha_v); every column has a conjugate cell model per row cluster of its
view (:mod:`sklearn_trellis.models.cells`, NaN cells missing), with cell
hyperparameters on a finite grid per column.

One sweep (Mansinghka et al. 2016, Sec. 3), every step a compiled kernel on the
chain's flat state (:class:`CrossCatState`, layout in :mod:`._crosscat_kernels`):

1. rows, in each view: the slice-sampler move of every row (uncollapsed, as Lace
   does it; :func:`._crosscat_rows.slice_rows`) or the collapsed scan (Neal's
   Algorithm 3, :func:`._crosscat_rows.scan_rows`), then ``split_merge[0]``
   sequentially-allocated split-merge proposals (Dahl 2003,
   :func:`._crosscat_rows.split_merge_rows`), each in a view drawn at random;
2. columns: each column in turn is reassigned among the existing views and
   ``n_aux`` auxiliary views whose row partitions are drawn from the prior
   (Neal's Algorithm 8 over views, :func:`._crosscat_columns.column_gibbs`), then
   ``split_merge[1]`` random columns get a split-merge proposal (a view of
   their own with a row partition fitted to them, or, alone, a merge into another
   view: :func:`._crosscat_columns.column_split_merge`), and as many view
   split-merge proposals are made (a view's columns split into two views or two
   views merged, every view it makes with its rows allocated anew:
   :func:`._crosscat_views.view_split_merge`);
3. column hyperparameters: exact draws from their conditional over each
   column's grid;
4. concentrations: ``alpha_views`` and each view's ``alpha`` from their Gamma
   hyperpriors (Escobar & West, :class:`~sklearn_trellis.models.priors.GammaHyperprior`),
   when they are learned.

Why a state of its own rather than one :class:`.sampler.GibbsState` per view: a
column's statistics per row cluster are a table of their own
(``stats[j]``), so a column moving between views takes one pass over its cells
and no view is rebuilt, and the whole sweep runs in a handful of kernel calls
(the Python-driven sweep spent most of its time between kernels). The kernels
call the cell models' kernels by a column's type code
(:mod:`sklearn_trellis.models.cell_kernels`: statistics, marginals, cached predictives,
posterior draws) and never branch on a cell type; they are compiled for the set of
cell types of the table (:attr:`CrossCatModel.kernels`), so a table's first fit
compiles no code of a type it does not hold.
"""

import time
from dataclasses import dataclass, field
from functools import cached_property

import numba
import numpy as np
from joblib import effective_n_jobs

from ..._core.budget import check_memory
from ..._core.progress import Progress
from ..._core.validation import check_random_state
from ...models.cell_loops import column_stats, rows_log_predictive
from ...models.priors import CRP
from . import _crosscat_kernels as ck
from . import _crosscat_sweep as sweep_k
from . import sampler

_MAX_SEED = np.iinfo(np.int32).max

#: Cells (rows x columns) of a view from which the slice step scores its rows on
#: numba's threads (below it, a parallel region costs more than it saves).
PARALLEL_CELLS = 50_000
#: Threads of a chain's parallel regions (chains run at once share the cores).
ROW_THREADS = numba.config.NUMBA_NUM_THREADS


def _parallel_cells(model):
    """The kernels' ``parallel_cells``: :data:`PARALLEL_CELLS`, or ``None`` when the whole
    table is smaller (no view can reach it; the kernels then compile no parallel loop)."""
    return PARALLEL_CELLS if model.data.size >= PARALLEL_CELLS else None


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

    def kernel_args(self):
        """``(value, shape, rate)`` for the kernels' draws (shape 0: fixed at value)."""
        if self.hyperprior is None:
            return self.value, 0.0, 0.0
        return self.value, self.hyperprior.shape, self.hyperprior.rate


@dataclass
class CrossCatModel:
    """What a chain needs besides its state: the fitted cell models, data, grids, priors."""

    cells: list                 # one fitted cell model (models.cells) per column
    data: np.ndarray            # (n, d) float64, NaN missing
    alpha_views: ConcentrationPrior
    alpha_rows: ConcentrationPrior
    n_aux: int = 1
    row_sampler: str = "slice"  # or "collapsed"
    #: split-merge proposals per sweep: (row proposals, each in a random view; column ones)
    split_merge: tuple = (1, 1)

    @property
    def n_columns(self):
        return self.data.shape[1]

    def code(self, j):
        return int(self.cells[j].code)

    @cached_property
    def codes(self):
        return np.array([int(cell.code) for cell in self.cells], np.int64)

    @property
    def kernels(self):
        """The move kernels compiled for the table's set of cell types
        (:func:`._crosscat_sweep.kernels_for`, memoised)."""
        return sweep_k.kernels_for(self.codes)

    @cached_property
    def n_stats(self):
        """Statistics per block: the largest of the columns' cell models."""
        return max([int(cell.n_stats) for cell in self.cells] + [1])

    @cached_property
    def _by_column(self):
        # each column contiguous (a column of the row-major table is strided: a cache miss
        # per cell), and the cells' constants (poisson: log x!), computed once, not per pass
        columns = np.ascontiguousarray(self.data.T)
        constants = np.zeros_like(columns)
        for j, cell in enumerate(self.cells):
            constants[j] = self.kernels.cell_constants(int(cell.code), columns[j])
        return columns, constants

    @property
    def columns(self):
        """The table by column, ``(d, n)`` contiguous, NaN missing."""
        return self._by_column[0]

    def grid(self, j):
        """Column ``j``'s grid ``(params (G, q), log_prior (G,))`` (one point if fixed)."""
        grid = self.cells[j].hyperparameter_grid()
        if grid is None:
            return (np.asarray(self.cells[j].kernel_params(), np.float64)[None, :], np.zeros(1))
        return np.ascontiguousarray(grid[0], np.float64), np.asarray(grid[1], np.float64)

    @cached_property
    def grids(self):
        """``(grids (d, G, Q), log_prior (d, G), sizes (d,))``: every column's grid, padded."""
        per_column = [self.grid(j) for j in range(self.n_columns)]
        size = max([g.shape[0] for g, _ in per_column] + [1])
        width = self.param_width
        grids = np.zeros((self.n_columns, size, width))
        log_prior = np.full((self.n_columns, size), -np.inf)
        for j, (g, lp) in enumerate(per_column):
            grids[j, :g.shape[0], :g.shape[1]] = g
            log_prior[j, :g.shape[0]] = lp
        return grids, log_prior, np.array([g.shape[0] for g, _ in per_column], np.int64)

    @cached_property
    def param_width(self):
        """``Q``: the longest cell params vector."""
        return max([len(cell.kernel_params()) for cell in self.cells] + [1])

    def start_params(self):
        """``(d, Q)`` the cells' own params (the grids' starting points), zero-padded."""
        params = np.zeros((self.n_columns, self.param_width))
        for j, cell in enumerate(self.cells):
            p = np.asarray(cell.kernel_params(), np.float64)
            params[j, :p.size] = p
        return params


@dataclass
class CrossCatState:
    """One chain's state: flat arrays (layout in :mod:`._crosscat_kernels`) and ``alpha_views``."""

    view_of: np.ndarray         # (d,) view slot of each column
    n_columns: np.ndarray       # (V,) columns per slot, 0 = free
    labels: np.ndarray          # (V, n) row clusters 0..K-1 of each occupied slot
    counts: np.ndarray          # (V, Kc) rows per cluster
    n_clusters: np.ndarray      # (V,)
    alphas: np.ndarray          # (V,) row concentrations
    stats: np.ndarray           # (d, Kc, S) cell statistics of each column per cluster
    params: np.ndarray          # (d, Q) cell params of each column
    alpha_views: float
    n_sweeps_done: int = 0

    @property
    def views(self):
        """Occupied view slots, in slot order."""
        return np.flatnonzero(self.n_columns > 0)

    @property
    def columns(self):
        """The columns of each occupied view (lists, in slot order)."""
        return [np.flatnonzero(self.view_of == v).tolist() for v in self.views]

    def column_params(self, model):
        """Per column: its cell params (1-d, the cell model's length)."""
        return [self.params[j, :len(cell.kernel_params())].copy()
                for j, cell in enumerate(model.cells)]


def _state_bytes(n, d, n_stats, n_clusters):
    return 8 * ((d + 1) * n + d * n_clusters * n_stats + 2 * (d + 1) * n_clusters)


def new_crosscat_state(model, rng, view_labels=None, row_labels=None):
    """A state from given column -> view labels and row labels per view, or drawn from the prior."""
    n, d = model.data.shape
    alpha_views = model.alpha_views.draw(rng)
    if view_labels is None:
        view_labels = np.empty(d, np.int64)
        ck.crp_labels(d, alpha_views, rng.randint(_MAX_SEED), view_labels)
    _, view_labels = np.unique(view_labels, return_inverse=True)
    n_views = int(view_labels.max()) + 1 if d else 0
    slots = d + 1
    labels = np.zeros((slots, n), np.int64)
    alphas = np.ones(slots)
    for v in range(n_views):
        alphas[v] = model.alpha_rows.draw(rng)
        if row_labels is None:
            ck.crp_labels(n, alphas[v], rng.randint(_MAX_SEED), labels[v])
        else:
            _, labels[v] = np.unique(np.asarray(row_labels[v]), return_inverse=True)
    n_clusters = np.zeros(slots, np.int64)
    n_clusters[:n_views] = labels[:n_views].max(axis=1) + 1 if n else 0
    capacity = max(8, 2 * int(n_clusters.max()))
    check_memory(_state_bytes(n, d, model.n_stats, capacity), "the CrossCat chain state",
                 way_out="Use fewer rows or columns.")
    state = CrossCatState(
        view_of=view_labels.astype(np.int64), n_columns=np.bincount(view_labels, minlength=slots),
        labels=labels, counts=np.zeros((slots, capacity), np.int64), n_clusters=n_clusters,
        alphas=alphas, stats=np.zeros((d, capacity, model.n_stats)),
        params=model.start_params(), alpha_views=float(alpha_views))
    for v in range(n_views):
        refill_view(model, state, v)
    return state


def restart_state(model, state, rng):
    """A new chain's start on new data (``model``) from a chain's last ``state``: its views,
    row partitions and concentrations, with the statistics of the new data and the cell
    models' starting parameters."""
    views = state.views
    new = new_crosscat_state(model, rng, view_labels=state.view_of,
                             row_labels=[state.labels[v] for v in views])
    new.alpha_views = state.alpha_views
    new.alphas[:views.size] = state.alphas[views]
    return new


def refill_view(model, state, v):
    """Counts and column statistics of view slot ``v`` recomputed from its labels."""
    _, constants = model._by_column
    model.kernels.fill_view(v, model.codes, state.params, model.columns, constants,
                            state.view_of, state.labels, state.counts, state.n_clusters,
                            state.stats, state.n_clusters[v])


def _seed(rng):
    return int(rng.randint(_MAX_SEED))


def sweep_rows(model, state, rng, *, n_split_merge=None, row_sampler=None):
    """The row step of every view: slice move (or collapsed scan), then ``n_split_merge``
    split-merge proposals in each view (the sweep draws a view per proposal instead).

    Defaults: the model's. ``row_sampler='none'``: the split-merge proposals only.
    """
    n_split_merge = model.split_merge[0] if n_split_merge is None else n_split_merge
    row_sampler = model.row_sampler if row_sampler is None else row_sampler
    rows, (columns, constants) = model.data, model._by_column
    st = state
    for v in state.views:
        if row_sampler == "slice":
            st.stats, st.counts = model.kernels.slice_rows(
                v, columns, constants, model.codes, st.params, st.view_of, st.labels,
                st.counts, st.n_clusters, st.alphas, st.stats, _parallel_cells(model),
                _seed(rng))
        elif row_sampler == "collapsed":
            st.stats, st.counts = model.kernels.scan_rows(
                v, rows, constants, model.codes, st.params, st.view_of, st.labels,
                st.counts, st.n_clusters, st.alphas, st.stats, _seed(rng))
        if n_split_merge:
            st.stats, st.counts = model.kernels.split_merge_rows(
                v, n_split_merge, rows, constants, model.codes, st.params, st.view_of,
                st.labels, st.counts, st.n_clusters, st.alphas, st.stats, _seed(rng))


def move_columns(model, state, rng, order=None):
    """Every column (in ``order``, default random) reassigned by Algorithm 8 over views."""
    order = rng.permutation(model.n_columns) if order is None else np.asarray(order, np.int64)
    columns, constants = model._by_column
    st = state
    st.stats, st.counts = model.kernels.column_gibbs(
        order, columns, constants, model.codes, st.params, st.view_of, st.n_columns,
        st.labels, st.counts, st.n_clusters, st.alphas, st.stats, st.alpha_views, model.n_aux,
        *model.alpha_rows.kernel_args(), _parallel_cells(model), _seed(rng))


def split_merge_columns(model, state, rng, chosen=None):
    """A split-merge proposal for each of ``chosen`` columns (default: the model's number
    of random ones)."""
    if chosen is None:
        chosen = rng.permutation(model.n_columns)[:model.split_merge[1]]
    columns, constants = model._by_column
    st = state
    st.stats, st.counts = model.kernels.column_split_merge(
        np.asarray(chosen, np.int64), columns, constants, model.codes, st.params,
        st.view_of, st.n_columns, st.labels, st.counts, st.n_clusters, st.alphas, st.stats,
        st.alpha_views, *model.alpha_rows.kernel_args(), _seed(rng))


def split_merge_views(model, state, rng, n_proposals=None):
    """``n_proposals`` view split-merge proposals (default: the model's number of column
    proposals): :func:`._crosscat_views.view_split_merge`."""
    n_proposals = model.split_merge[1] if n_proposals is None else n_proposals
    columns, constants = model._by_column
    st = state
    st.stats, st.counts = model.kernels.view_split_merge(
        np.int64(n_proposals), columns, constants, model.codes, st.params, st.view_of,
        st.n_columns, st.labels, st.counts, st.n_clusters, st.alphas, st.stats,
        st.alpha_views, *model.alpha_rows.kernel_args(), _seed(rng))


def resample_column_params(model, state, rng):
    """Exact draw of each column's grid hyperparameters given its blocks."""
    grids, log_prior, sizes = model.grids
    model.kernels.resample_params(model.codes, grids, log_prior, sizes, state.params,
                                  state.view_of, state.n_clusters, state.stats, _seed(rng))


def resample_concentrations(model, state, rng):
    """Each view's row concentration and ``alpha_views`` from their hyperpriors."""
    st = state
    views = st.views
    for v in views:
        st.alphas[v] = model.alpha_rows.resample(st.alphas[v],
                                                 st.counts[v, :st.n_clusters[v]], rng)
    st.alpha_views = model.alpha_views.resample(st.alpha_views, st.n_columns[views], rng)


_ROW_SAMPLERS = {"slice": sweep_k.SLICE, "collapsed": sweep_k.COLLAPSED}


def sweep(model, state, rng, *, n_split_merge=None):
    """One CrossCat sweep: rows of every view, columns, column hyperparameters (one kernel
    call, :func:`._crosscat_sweep.sweep`), then the concentrations.

    ``n_split_merge``: ``(row proposals, column proposals)`` (default
    ``model.split_merge``).
    """
    rows_sm, columns_sm = model.split_merge if n_split_merge is None else n_split_merge
    grids, log_prior, sizes = model.grids
    columns, constants = model._by_column
    st = state
    st.stats, st.counts = sweep_k.sweep(
        model.kernels, _ROW_SAMPLERS[model.row_sampler], rows_sm, columns_sm,
        _parallel_cells(model), model.data, columns, constants, model.codes, st.params, grids,
        log_prior, sizes, st.view_of, st.n_columns, st.labels, st.counts, st.n_clusters, st.alphas, st.stats,
        st.alpha_views, model.n_aux, *model.alpha_rows.kernel_args(), _seed(rng))
    resample_concentrations(model, state, rng)
    state.n_sweeps_done += 1


def log_joint(model, state):
    """``log p(views, row partitions, X)`` at the state's concentrations and cell params."""
    st = state
    return float(model.kernels.log_joint(model.codes, st.params, st.view_of, st.n_columns,
                                         st.counts, st.n_clusters, st.alphas, st.stats,
                                         st.alpha_views))


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
    # views renumbered in order of their first column
    _, first = np.unique(state.view_of, return_index=True)
    order = state.view_of[np.sort(first)]
    relabel = np.empty(state.n_columns.size, np.int64)
    relabel[order] = np.arange(order.size)
    return CrossCatSample(views=relabel[state.view_of].astype(np.int32),
                          rows=state.labels[order].astype(np.int32),
                          alphas=state.alphas[order].copy(), alpha_views=state.alpha_views,
                          column_params=state.column_params(model),
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

    ``n_threads``: numba threads of the chain's parallel regions (default
    ``ROW_THREADS``); the samples do not depend on it.
    """
    rng = check_random_state(random_state)
    if state is None:
        state = new_crosscat_state(model, rng)
    samples = []
    start = time.perf_counter()
    done = 0
    interrupted = False
    report_every = max(1, n_sweeps // 10)
    progress = Progress(f"CrossCat chain {chain_id}", verbose)  # every 10 % and every 10 s
    threads_before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(ROW_THREADS if n_threads is None else n_threads,
                                     numba.config.NUMBA_NUM_THREADS)))
    try:
        for t in range(n_sweeps):
            sweep(model, state, rng)
            done += 1
            if t >= burn_in and (t - burn_in) % thin == 0:
                samples.append(snapshot(model, state))
            if verbose and ((t + 1) % report_every == 0 or t + 1 == n_sweeps or progress.due()):
                elapsed = time.perf_counter() - start
                sizes = sorted((len(c) for c in state.columns), reverse=True)
                progress.note(f"sweep {t + 1}/{n_sweeps}: "
                              f"{len(sizes)} views (columns {sizes}), "
                              f"{elapsed / (t + 1):.3g} s/sweep")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        numba.set_num_threads(threads_before)
    return CrossCatChain(samples=samples, state=state, seconds=time.perf_counter() - start,
                         n_sweeps=done, interrupted=interrupted)


def run_chains(model, *, n_chains=1, n_jobs=None, random_state=None, states=None,
               **chain_kwargs):
    """Independent CrossCat chains through :func:`.sampler.map_chains` (joblib, seeds).

    Chains in parallel share the cores: each gets ``ROW_THREADS`` divided by the
    number of chains running at once for its parallel regions (the samples do not
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
            column_stats(model.code(j), p, model.data[:, j], labels, table)
            rows_log_predictive(model.code(j), p, table, np.ascontiguousarray(data_new[:, j]),
                                log_weights)
            stats[int(j)], cell_params[int(j)] = table, p
        out.append(ViewPredictive(columns, log_weights, stats, cell_params))
    return out


__all__ = ["ConcentrationPrior", "ViewPredictive", "view_predictives", "CrossCatModel",
           "CrossCatState", "CrossCatSample", "new_crosscat_state", "restart_state", "refill_view",
           "sweep_rows", "move_columns", "split_merge_columns", "split_merge_views",
           "resample_column_params",
           "resample_concentrations", "sweep", "log_joint", "snapshot", "run_chain",
           "run_chains", "PARALLEL_CELLS", "ROW_THREADS"]
