"""Python driver of the collapsed Gibbs engine: state, chains, warm starts, parallel runs.

See :mod:`sklearn_trellis.engines.gibbs` for the protocol a likelihood implements.
"""

import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from ..._core.interpreted import call
from ..._core.labels import compact_labels
from ..._core.progress import Progress
from . import _gibbs_kernels as kernels
from ..._core.validation import check_random_state

_MAX_SEED = np.iinfo(np.int32).max

#: Up to this many items a state's labels are renumbered, and a new state's slots
#: filled, by the kernels' own Python source (:mod:`~sklearn_trellis._core.interpreted`:
#: integers only, the same arrays): about 0.1 ms a sample at 200 items, against
#: 0.3 s of compilation each in a first fit. So are the engine's ``rebuild`` and
#: ``log_joint`` steps, calling the likelihood's and prior's compiled kernels (the same
#: calls, float sums in the same order) unless one is inlined (:func:`_compiled_alone`).
INTERPRETED_LABEL_ITEMS = 200


def _compiled_alone(likelihood, *names):
    """Whether the likelihood kernels ``names`` are compiled on their own anyway (not
    ``inline='always'``): calling one that the engine's kernels inline from Python would
    compile it once more."""
    return not any(getattr(getattr(likelihood.kernels, name), "targetoptions", {}).get("inline")
                   == "always" for name in names)


def _engine(likelihood):
    """The engine kernels compiled for this likelihood (see ``_gibbs_kernels.specialise``)."""
    return kernels.specialise(likelihood.kernels, bool(likelihood.nonlocal_state))


@dataclass
class GibbsState:
    """The sampler's state: slot labels, cluster statistics and bookkeeping.

    ``labels`` hold slot ids (use :meth:`compact_labels`); ``alpha`` is the
    current concentration (it moves with a hyperprior); ``params`` the
    likelihood's current kernel parameters.
    """

    labels: np.ndarray
    counts: np.ndarray
    active: np.ndarray
    where: np.ndarray
    free: np.ndarray
    meta: np.ndarray
    stats: np.ndarray
    shared: np.ndarray
    work: np.ndarray
    params: np.ndarray
    alpha: float
    n_sweeps_done: int = 0

    @property
    def capacity(self):
        return self.stats.shape[0]

    @property
    def n_clusters(self):
        return int(self.meta[0])

    def compact_labels(self):
        """Labels ``0..K-1`` in order of first appearance."""
        out = np.empty(self.labels.size, np.int64)
        call(compact_labels, self.labels, out, small=out.size <= INTERPRETED_LABEL_ITEMS)
        return out

    def cluster_sizes(self):
        return self.counts[self.active[:self.meta[0]]]


def new_state(likelihood, data, init_labels, alpha, capacity=None, params=None):
    """A state holding the partition ``init_labels`` (any integer labels).

    ``params`` (default ``likelihood.kernel_params()``) are the kernel parameters.
    """
    _, compact = np.unique(np.asarray(init_labels), return_inverse=True)
    compact = compact.astype(np.int64).ravel()
    n_clusters = int(compact.max()) + 1 if compact.size else 0
    if capacity is None:
        capacity = max(16, 2 * n_clusters + 8)
    capacity = int(min(max(capacity, n_clusters + 2), compact.size + 2))
    if params is None:
        params = likelihood.kernel_params()
    params = np.ascontiguousarray(params, dtype=np.float64)
    state = GibbsState(
        labels=np.empty(compact.size, np.int64),
        counts=np.zeros(capacity, np.int64),
        active=np.zeros(capacity, np.int64),
        where=np.full(capacity, -1, np.int64),
        free=np.zeros(capacity, np.int64),
        meta=np.zeros(2, np.int64),
        stats=np.zeros((capacity, likelihood.n_stats)),
        shared=np.zeros(max(1, likelihood.n_shared)),
        work=np.zeros(max(1, likelihood.work_size(capacity))),
        params=params, alpha=float(alpha))
    call(kernels.occupy_slots, compact, state.counts, state.active, state.where, state.free,
         state.meta, small=compact.size <= INTERPRETED_LABEL_ITEMS)
    if likelihood.refresh_rebuilds:
        lik = likelihood.kernels
        for c in range(capacity):
            lik.reset(params, state.stats, c)
        state.labels[:] = compact
    else:
        call(_engine(likelihood).rebuild, params, data, compact, state.labels, state.counts,
             state.active, state.where, state.free, state.meta, state.stats, state.shared,
             state.work, compiled_callees=True,
             small=(compact.size <= INTERPRETED_LABEL_ITEMS
                    and _compiled_alone(likelihood, "prepare", "add")))  # reset: sweep's
    refresh(state, likelihood, data)
    return state


def refresh(state, likelihood, data):
    """The likelihood's ``refresh`` of the state (each sweep ends with it).

    A ``refresh_interpretable`` likelihood's (``reset`` and ``add`` of every item, in
    order) runs its Python source around those compiled kernels on small states: the
    same calls, one kernel less to compile in a first fit, about 0.03 ms at 40 items.
    """
    call(likelihood.kernels.refresh, state.params, data, state.labels, state.stats,
         state.shared, state.active, state.meta[0], compiled_callees=True,
         small=(likelihood.refresh_interpretable
                and state.labels.size <= INTERPRETED_LABEL_ITEMS
                and _compiled_alone(likelihood, "reset", "add")))


def _grow(state, likelihood):
    """Double the number of cluster slots (new slots reset and pushed on the free stack)."""
    old = state.capacity
    new = 2 * old
    stats = np.zeros((new, state.stats.shape[1]))
    stats[:old] = state.stats
    for c in range(old, new):
        likelihood.kernels.reset(state.params, stats, c)
    state.stats = stats
    state.counts = np.concatenate([state.counts, np.zeros(new - old, np.int64)])
    state.active = np.concatenate([state.active, np.zeros(new - old, np.int64)])
    state.where = np.concatenate([state.where, np.full(new - old, -1, np.int64)])
    free = np.zeros(new, np.int64)
    n_free = int(state.meta[1])
    free[:n_free] = state.free[:n_free]
    free[n_free:n_free + new - old] = np.arange(new - 1, old - 1, -1)
    state.free = free
    state.meta[1] = n_free + new - old
    state.work = likelihood.grow_work(state.work, old, new)


def _ensure_free(state, likelihood, needed):
    while state.meta[1] < needed:
        _grow(state, likelihood)


def record_params(state):
    """``record`` of :func:`run_chain` keeping the kernel parameters of each kept sample."""
    return state.params.copy()


def set_params(state, likelihood, data, params):
    """Switch the state to new kernel parameters (hyperparameter update).

    Free slots are reset too: the engine scores a new cluster on a free slot
    and relies on it being in the empty-cluster state of the *current* params.
    """
    state.params = np.ascontiguousarray(params, dtype=np.float64)
    for c in state.free[:state.meta[1]]:
        likelihood.kernels.reset(state.params, state.stats, c)
    refresh(state, likelihood, data)
    likelihood.refresh_work(state.params, state.stats, state.shared, state.work,
                            state.active, int(state.meta[0]))


def sweep(state, likelihood, prior_params, data, rng, *, fixed=None, n_split_merge=0,
          scan=True):
    """One sweep: a random-order Gibbs scan of the non-fixed items, then split-merge proposals.

    ``scan=False`` skips the Gibbs scan (split-merge moves alone are also a
    valid MCMC kernel; the tests check it). Returns the number of accepted
    split-merge proposals.
    """
    engine = _engine(likelihood)
    n = state.labels.size
    order = rng.permutation(n).astype(np.int64)
    if fixed is not None:
        order = order[~fixed[order]]
    if not scan:
        order = order[:0]
    logw = np.empty(n + 2)
    position = 0
    while position < order.size:
        _ensure_free(state, likelihood, 1)
        if logw.size < state.capacity + 1:
            logw = np.empty(state.capacity + 1)
        position = engine.gibbs_scan(
            state.params, prior_params, data, state.labels, state.counts,
            state.active, state.where, state.free, state.meta, state.stats,
            state.shared, state.work, order, position, rng.randint(_MAX_SEED), logw)
    accepted = 0
    if n_split_merge > 0 and n > 1:
        fixed_mask = np.zeros(n, np.bool_) if fixed is None else fixed
        # each proposal uses at most one slot: the kernel never runs out
        _ensure_free(state, likelihood, n_split_merge + 2)
        accepted += engine.split_merge(
            state.params, prior_params, data, state.labels, state.counts,
            state.active, state.where, state.free, state.meta, state.stats,
            state.shared, state.work, fixed_mask, n_split_merge, rng.randint(_MAX_SEED))
    refresh(state, likelihood, data)
    return accepted


def log_joint(state, likelihood, prior_params):
    """``log p(z, X)`` of the current state (prior EPPF with its normaliser + likelihood)."""
    return float(call(_engine(likelihood).log_joint, state.params, prior_params,
                      state.stats, state.shared, state.counts, state.active, state.meta[0],
                      state.labels.size, compiled_callees=True,
                      small=(state.labels.size <= INTERPRETED_LABEL_ITEMS
                             and _compiled_alone(likelihood, "log_cluster", "log_global"))))


@dataclass
class ChainResult:
    """What one chain returns: kept samples and their traces, and the final state.

    ``samples`` (int32, ``(n_kept, n_items)``, labels in order of first
    appearance), ``log_joints`` (``log p(z, X)`` of each kept sample),
    ``alphas`` (concentration at each kept sample), ``state`` (continue with
    ``run_chain(..., state=result.state)``), ``interrupted`` (Ctrl-C),
    ``seconds`` (wall time of the sweeps), ``n_sweeps`` (sweeps run),
    ``records`` (the values of ``run_chain``'s ``record`` at each kept
    sample, a list; None without ``record``).
    """

    samples: np.ndarray
    log_joints: np.ndarray
    alphas: np.ndarray
    state: GibbsState
    interrupted: bool = False
    seconds: float = 0.0
    n_sweeps: int = 0
    records: list = None
    accepted_split_merge: int = 0
    extra: dict = field(default_factory=dict)


def run_chain(likelihood, prior, data, *, n_sweeps, burn_in=0, thin=1, init_labels=None,
              state=None, fixed=None, n_split_merge=0, hyperprior=None, random_state=None,
              verbose=0, chain_id=0, record=None):
    """Run one chain of ``n_sweeps`` sweeps; keep every ``thin``-th sample after ``burn_in``.

    Parameters
    ----------
    likelihood : fitted ClusterLikelihood
    prior : PartitionPrior
        Its ``alpha`` is the starting concentration (ignored when ``state`` is
        given: the state's is used).
    data : ndarray
        ``likelihood.kernel_data(X)``.
    n_sweeps, burn_in, thin : int
        Sweeps to run now; the first ``burn_in`` of them are not kept (counted
        from the start of this call).
    init_labels : array-like of int, optional
        Starting partition (one cluster if neither it nor ``state`` is given).
    state : GibbsState, optional
        Continue this state (warm start); it is updated in place.
    fixed : bool array, optional
        Items never moved by the Gibbs scan (semi-supervised clamping).
    n_split_merge : int
        Split-merge proposals per sweep.
    hyperprior : GammaHyperprior, optional
        Resample ``alpha`` after each sweep.
    record : callable, optional
        ``record(state)`` is called at each kept sample and its values are
        returned as ``ChainResult.records`` (e.g. :func:`record_params`, or
        quantities of the likelihood's state). A module-level function or a
        ``functools.partial`` of one, so that parallel chains can pickle it.
    random_state : int, RandomState or None
    verbose : int
        Print progress about ten times per chain when positive.
    """
    rng = check_random_state(random_state)
    n = data.shape[0]
    if state is None:
        labels = np.zeros(n, np.int64) if init_labels is None else init_labels
        state = new_state(likelihood, data, labels, prior.alpha)
    if fixed is not None:
        fixed = np.ascontiguousarray(fixed, dtype=np.bool_)
    samples, log_joints, alphas = [], [], []
    records = None if record is None else []
    accepted = 0
    start = time.perf_counter()
    interrupted = False
    done = 0
    report_every = max(1, n_sweeps // 10)
    progress = Progress(f"Gibbs chain {chain_id}", verbose)  # every 10 % and every 10 s
    try:
        for t in range(n_sweeps):
            current = prior.with_alpha(state.alpha)
            pp = current.kernel_params()
            accepted += sweep(state, likelihood, pp, data, rng, fixed=fixed,
                              n_split_merge=n_split_merge)
            new_params = likelihood.resample_state_params(state, rng)
            if new_params is not None and not np.array_equal(new_params, state.params):
                set_params(state, likelihood, data, new_params)
            if hyperprior is not None:
                state.alpha = hyperprior.resample(current, state.cluster_sizes(), rng)
            state.n_sweeps_done += 1
            done += 1
            if t >= burn_in and (t - burn_in) % thin == 0:
                samples.append(state.compact_labels().astype(np.int32))
                log_joints.append(log_joint(state, likelihood,
                                            prior.with_alpha(state.alpha).kernel_params()))
                alphas.append(state.alpha)
                if record is not None:
                    records.append(record(state))
            if verbose and ((t + 1) % report_every == 0 or t + 1 == n_sweeps or progress.due()):
                elapsed = time.perf_counter() - start
                named = likelihood.describe_params(state.params)
                hyper = "".join(f"{name}={float(value[0]):.3g}, "
                                for name, value in named.items())
                progress.note(f"sweep {t + 1}/{n_sweeps}: "
                              f"{state.n_clusters} clusters, alpha={state.alpha:.3g}, {hyper}"
                              f"{elapsed / (t + 1):.3g} s/sweep")
    except KeyboardInterrupt:
        interrupted = True
        if verbose:
            print(f"[Gibbs chain {chain_id}] interrupted after {done} sweeps; "
                  f"keeping {len(samples)} samples.", flush=True)
    n_items = data.shape[0]
    return ChainResult(
        samples=np.array(samples, dtype=np.int32).reshape(len(samples), n_items),
        log_joints=np.array(log_joints, dtype=np.float64),
        alphas=np.array(alphas, dtype=np.float64), state=state, interrupted=interrupted,
        seconds=time.perf_counter() - start, n_sweeps=done, accepted_split_merge=accepted,
        records=records)


def run_chains(likelihood, prior, data, *, n_chains=1, n_jobs=None, random_state=None,
               init_labels=None, states=None, **chain_kwargs):
    """Independent chains through :class:`sklearn.utils.parallel.Parallel`.

    Each chain gets a seed drawn from ``random_state`` (so results do not
    depend on ``n_jobs`` or the joblib backend, e.g. ``backend="dask"``).
    ``init_labels`` is one label vector for all chains or a list with one per
    chain; ``states`` (a list of GibbsState) continues earlier chains.
    With ``n_jobs=1`` the chains run one after another in this process and a
    Ctrl-C ends the current chain, skips the remaining ones and keeps every
    sample drawn so far.
    """
    if states is None:
        states = [None] * n_chains
    if init_labels is None or (isinstance(init_labels, np.ndarray) and init_labels.ndim == 1):
        inits = [init_labels] * n_chains
    else:
        inits = list(init_labels)
    per_chain = [dict(init_labels=inits[c], state=states[c]) for c in range(n_chains)]
    return map_chains(run_chain, (likelihood, prior, data), per_chain, n_jobs=n_jobs,
                      random_state=random_state, **chain_kwargs)


def map_chains(run, args, per_chain, *, n_jobs=None, random_state=None, **common):
    """``run(*args, **per_chain[c], random_state=seed_c, chain_id=c, **common)`` for every chain.

    The one place chains are dispatched (:func:`run_chains`, the biclustering
    driver): seeds drawn from ``random_state``, joblib when ``n_jobs`` is not
    1, and, sequentially, a Ctrl-C (a result with ``interrupted``) skips the
    remaining chains.
    """
    rng = check_random_state(random_state)
    n_chains = len(per_chain)
    seeds = rng.randint(_MAX_SEED, size=n_chains)
    if n_jobs in (None, 1):
        results = []
        for c in range(n_chains):
            result = run(*args, random_state=seeds[c], chain_id=c, **per_chain[c], **common)
            results.append(result)
            if result.interrupted:
                break
        return results
    return Parallel(n_jobs=n_jobs)(
        delayed(run)(*args, random_state=seeds[c], chain_id=c, **per_chain[c], **common)
        for c in range(n_chains))


# -- posterior predictive from the same kernels -------------------------------------
def predictive_log_weights(likelihood, prior_params, data_train, labels, data_new, params=None):
    """``(m, K+1)`` log weights of new rows joining each cluster of ``labels`` / a new one.

    Prior weight (normalised by ``n + alpha``) times posterior predictive
    density, so ``logsumexp`` over a row is the log posterior predictive
    density of that row given the partition ``labels``. Columns follow the
    clusters in order of first appearance, then "new cluster". ``params``
    (default ``likelihood.kernel_params()``) are the kernel parameters.
    """
    state = new_state(likelihood, data_train, labels, prior_params[0], params=params)
    _ensure_free(state, likelihood, 1)
    spare = int(state.free[state.meta[1] - 1])
    # active slots in order of first appearance of their cluster
    slots, first = np.unique(state.labels, return_index=True)
    active = slots[np.argsort(first)].astype(np.int64)
    out = np.empty((data_new.shape[0], active.size + 1))
    _engine(likelihood).predictive_log_weights(state.params, prior_params, data_new,
                                   state.stats, state.shared, state.work, state.counts,
                                   active, active.size, spare, state.labels.size, out)
    return out


__all__ = ["GibbsState", "ChainResult", "new_state", "refresh", "sweep", "log_joint", "run_chain",
           "run_chains", "map_chains", "set_params", "record_params", "predictive_log_weights"]
