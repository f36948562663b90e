"""Biclustering on the collapsed Gibbs engine: row and column half-sweeps of one block model.

The model (Murphy's lecture notes, Section 6.1, Eq. 37; the infinite relational
model of Kemp et al. 2006 for one matrix): row clusters ``r ~ CRP(alpha_rows)``,
column clusters ``c ~ CRP(alpha_columns)``, and the cells of every block
``(a, b)`` i.i.d. from a cell model (:mod:`sklearn_trellis.models.cells`) whose
parameter is integrated out. So

    log p(r, c, X) = log EPPF(r) + log EPPF(c) + sum_{a, b} log m(X_ab).

Given the column clusters, the rows are the items of a mixture whose
likelihood is :class:`~sklearn_trellis.models.cell_blocks.CellBlocks` with the
columns grouped by their clusters: the **row half-sweep** is the engine's own
Gibbs scan and split-merge moves (:func:`.sampler.sweep`) on that likelihood;
the **column half-sweep** is the same on ``X.T`` with the rows grouped by their
clusters. Each half-sweep builds its state from the current labels
(:func:`.sampler.new_state`, ``O(n d)``), so both see exact block statistics.
After both halves the cell model's grid hyperparameters and the two
concentrations (Gamma hyperprior) are redrawn from their exact conditionals.
Chains are dispatched by :func:`.sampler.map_chains` (joblib).
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ..._core.progress import Progress
from ..._core.validation import check_random_state
from ...models.cell_blocks import CellBlocks
from . import sampler as gibbs


@dataclass
class BiclusterState:
    """Current row / column labels (``0..K-1``), cell parameters and concentrations."""

    row_labels: np.ndarray
    column_labels: np.ndarray
    cell_params: np.ndarray
    alpha_rows: float
    alpha_columns: float
    n_sweeps_done: int = 0


@dataclass
class BiclusterChainResult:
    """Kept samples of one chain (see :func:`run_bicluster_chain`) and its final state."""

    row_samples: np.ndarray
    column_samples: np.ndarray
    log_joints: np.ndarray
    alphas_rows: np.ndarray
    alphas_columns: np.ndarray
    cell_params: np.ndarray
    state: BiclusterState
    interrupted: bool = False
    seconds: float = 0.0
    n_sweeps: int = 0
    accepted_split_merge: int = 0
    extra: dict = field(default_factory=dict)


def _half_sweep(blocks, data, labels, other_labels, cell_params, prior, alpha, rng,
                n_split_merge):
    """Resample ``labels`` (the items of ``data``) given the other side's clusters."""
    likelihood = blocks.with_groups(other_labels)
    params = likelihood.kernel_params([cell_params])
    state = gibbs.new_state(likelihood, data, labels, alpha, params=params)
    accepted = gibbs.sweep(state, likelihood, prior.with_alpha(alpha).kernel_params(), data, rng,
                           n_split_merge=n_split_merge)
    return state, likelihood, accepted


def bicluster_log_joint(row_blocks, data, state, row_prior, column_prior):
    """``log p(r, c, X)`` of a state (both EPPFs with their normalisers, all blocks)."""
    likelihood = row_blocks.with_groups(state.column_labels)
    params = likelihood.kernel_params([state.cell_params])
    rows = np.bincount(state.row_labels)
    columns = np.bincount(state.column_labels)
    return (row_prior.with_alpha(state.alpha_rows).log_eppf(rows)
            + column_prior.with_alpha(state.alpha_columns).log_eppf(columns)
            + likelihood.partition_log_likelihood(data, state.row_labels, params))


def new_row_log_weights(row_blocks, data, row_labels, column_labels, cell_params, row_prior,
                        data_new):
    """``(m, K + 1)`` log weights of new rows joining each row cluster of a sample / a new one.

    The row prior's predictive weight (normalised by ``n + alpha``: CRP,
    ``n_k / (n + alpha)`` and ``alpha / (n + alpha)``) times the row's
    predictive density given the sample's column clusters and cell parameters
    (:meth:`CellBlocks.new_rows_log_predictive`); the ``logsumexp`` of a row is
    its log posterior predictive density given the sample. ``row_prior`` is
    at the sample's concentration.
    """
    likelihood = row_blocks.with_groups(column_labels)
    params = likelihood.kernel_params([cell_params])
    log_predictive = likelihood.new_rows_log_predictive(data, row_labels, data_new, params)
    sizes = np.bincount(row_labels)
    log_prior = (row_prior.log_predictive_weights(sizes)
                 - np.log(row_labels.size + row_prior.alpha))
    return log_prior[None, :] + log_predictive


def bicluster_sweep(state, blocks, data, data_t, row_prior, column_prior, rng, *,
                    n_split_merge=0, hyperprior=None):
    """One sweep: rows given columns, columns given rows, then hyperparameters.

    ``blocks = (row_blocks, column_blocks)``: :class:`CellBlocks` with one and
    the same cell model, fitted on ``data`` and on ``data_t``
    (:func:`make_blocks`). Returns the number of accepted split-merge proposals.
    """
    row_blocks, column_blocks = blocks
    rows_state, _, accepted = _half_sweep(row_blocks, data, state.row_labels,
                                          state.column_labels, state.cell_params, row_prior,
                                          state.alpha_rows, rng, n_split_merge)
    state.row_labels = rows_state.compact_labels()
    columns_state, likelihood, more = _half_sweep(column_blocks, data_t, state.column_labels,
                                                  state.row_labels, state.cell_params,
                                                  column_prior, state.alpha_columns, rng,
                                                  n_split_merge)
    state.column_labels = columns_state.compact_labels()
    accepted += more
    # the column state holds every block (column cluster x row-cluster group)
    new = likelihood.resample_params(columns_state.params, columns_state.stats,
                                     columns_state.shared, columns_state.counts,
                                     columns_state.active[:columns_state.meta[0]], rng)
    if new is not None:
        state.cell_params = likelihood.cell_params(new)[0]
    if hyperprior is not None:
        state.alpha_rows = hyperprior.resample(row_prior.with_alpha(state.alpha_rows),
                                               np.bincount(state.row_labels), rng)
        state.alpha_columns = hyperprior.resample(
            column_prior.with_alpha(state.alpha_columns), np.bincount(state.column_labels), rng)
    state.n_sweeps_done += 1
    return accepted


def run_bicluster_chain(blocks, data, data_t, row_prior, column_prior, *, n_sweeps, burn_in=0,
                        thin=1, init_labels=None, state=None, n_split_merge=0, hyperprior=None,
                        random_state=None, verbose=0, chain_id=0):
    """Run one chain of ``n_sweeps`` sweeps; keep every ``thin``-th sample after ``burn_in``.

    Parameters
    ----------
    blocks : tuple of CellBlocks
        ``(row_blocks, column_blocks)`` from :func:`make_blocks`.
    data, data_t : ndarray
        The matrix (float64, C-contiguous, NaN = missing) and its transpose.
    row_prior, column_prior : PartitionPrior
        Their ``alpha`` start the chain (unless ``state`` is given).
    init_labels : tuple (row_labels, column_labels), optional
        Starting partitions (one cluster each by default).
    state : BiclusterState, optional
        Continue this state (warm start); updated in place.
    n_split_merge : int
        Split-merge proposals per half-sweep.
    hyperprior : GammaHyperprior, optional
        Resample both concentrations after each sweep.
    random_state, verbose, chain_id
        As for :func:`.sampler.run_chain`.
    """
    rng = check_random_state(random_state)
    if state is None:
        n, d = data.shape
        rows, columns = ((np.zeros(n, np.int64), np.zeros(d, np.int64)) if init_labels is None
                         else init_labels)
        state = new_bicluster_state(blocks, rows, columns, row_prior.alpha, column_prior.alpha)
    kept = {key: [] for key in ("rows", "columns", "log_joints", "alphas_rows",
                                "alphas_columns", "params")}
    accepted, done, interrupted = 0, 0, False
    start = time.perf_counter()
    report_every = max(1, n_sweeps // 10)
    progress = Progress(f"Bicluster chain {chain_id}", verbose)  # every 10 % and every 10 s
    try:
        for t in range(n_sweeps):
            accepted += bicluster_sweep(state, blocks, data, data_t, row_prior, column_prior,
                                        rng, n_split_merge=n_split_merge, hyperprior=hyperprior)
            done += 1
            if t >= burn_in and (t - burn_in) % thin == 0:
                kept["rows"].append(state.row_labels.astype(np.int32))
                kept["columns"].append(state.column_labels.astype(np.int32))
                kept["log_joints"].append(bicluster_log_joint(blocks[0], data, state, row_prior,
                                                              column_prior))
                kept["alphas_rows"].append(state.alpha_rows)
                kept["alphas_columns"].append(state.alpha_columns)
                kept["params"].append(state.cell_params.copy())
            if verbose and ((t + 1) % report_every == 0 or t + 1 == n_sweeps or progress.due()):
                elapsed = time.perf_counter() - start
                progress.note(f"sweep {t + 1}/{n_sweeps}: "
                              f"{state.row_labels.max() + 1} row x {state.column_labels.max() + 1} "
                              f"column clusters, alpha_rows={state.alpha_rows:.3g}, "
                              f"alpha_columns={state.alpha_columns:.3g}, "
                              f"{elapsed / (t + 1):.3g} s/sweep")
    except KeyboardInterrupt:
        interrupted = True
        if verbose:
            print(f"[Bicluster chain {chain_id}] interrupted after {done} sweeps; keeping "
                  f"{len(kept['rows'])} samples.", flush=True)
    n, d = data.shape
    q = state.cell_params.size
    return BiclusterChainResult(
        row_samples=np.array(kept["rows"], np.int32).reshape(-1, n),
        column_samples=np.array(kept["columns"], np.int32).reshape(-1, d),
        log_joints=np.array(kept["log_joints"], np.float64),
        alphas_rows=np.array(kept["alphas_rows"], np.float64),
        alphas_columns=np.array(kept["alphas_columns"], np.float64),
        cell_params=np.array(kept["params"], np.float64).reshape(-1, q), state=state,
        interrupted=interrupted, seconds=time.perf_counter() - start, n_sweeps=done,
        accepted_split_merge=accepted)


def new_bicluster_state(blocks, row_labels, column_labels, alpha_rows, alpha_columns):
    """A chain's start: the given partitions (relabelled ``0..K-1``) and concentrations,
    with the cell model's starting parameters."""
    return BiclusterState(
        row_labels=np.unique(np.asarray(row_labels), return_inverse=True)[1].astype(np.int64),
        column_labels=np.unique(np.asarray(column_labels),
                                return_inverse=True)[1].astype(np.int64),
        cell_params=blocks[0].cells_[0].kernel_params(), alpha_rows=alpha_rows,
        alpha_columns=alpha_columns)


def restart_state(state, blocks):
    """A new chain's start on new data from a chain's last ``state``: its partitions and
    concentrations, the (refitted) cell model's starting parameters of ``blocks``."""
    return new_bicluster_state(blocks, state.row_labels, state.column_labels,
                               state.alpha_rows, state.alpha_columns)


def make_blocks(cells, data, data_t):
    """``(row_blocks, column_blocks)``: the fitted cell model's CellBlocks of the matrix and of its transpose."""
    zeros = np.zeros
    return (CellBlocks(cells, zeros(data.shape[1], np.int64)).fit(data),
            CellBlocks(cells, zeros(data_t.shape[1], np.int64)).fit(data_t))


def run_bicluster_chains(blocks, data, data_t, row_prior, column_prior, *, n_chains=1,
                         n_jobs=None, random_state=None, init_labels=None, states=None,
                         **chain_kwargs):
    """Independent chains (:func:`.sampler.map_chains`); ``init_labels`` one pair or a list."""
    if states is None:
        states = [None] * n_chains
    if init_labels is None or isinstance(init_labels, tuple):
        inits = [init_labels] * n_chains
    else:
        inits = list(init_labels)
    per_chain = [dict(init_labels=inits[c], state=states[c]) for c in range(len(states))]
    return gibbs.map_chains(run_bicluster_chain, (blocks, data, data_t, row_prior, column_prior),
                            per_chain, n_jobs=n_jobs, random_state=random_state, **chain_kwargs)


__all__ = ["BiclusterState", "BiclusterChainResult", "bicluster_sweep", "bicluster_log_joint",
           "new_row_log_weights",
           "run_bicluster_chain", "run_bicluster_chains", "make_blocks", "new_bicluster_state",
           "restart_state"]
