"""Sub-cluster split/merge sampler: an exact, parallel MCMC kernel for conjugate mixtures.

The sampler of Chang & Fisher (2013) in a form whose every move is exact. Its state is the
partition ``z`` (labels ``0..K-1``) with each cluster's additive sufficient statistics; the
cluster weights ``pi`` and parameters ``theta`` are auxiliary variables drawn afresh every
iteration. The target is the collapsed posterior ``p(z | X)`` (so the samples are those of
the collapsed Gibbs engine, and the same exactness tests apply) extended by

    pi | z ~ Dirichlet(w(N_1), ..., w(N_K), w_new(K)),   theta_k | z ~ p(theta | X_k),

where ``w(m)``, ``w_new(K)`` are the prior's predictive weights (``m`` and ``alpha`` for
the CRP, ``m - d`` and ``alpha + K d`` for Pitman-Yor, ``m + alpha / M`` and
``(M - K) alpha / M`` for the Dirichlet-multinomial prior): the Dirichlet cancels the
EPPF's cluster factors, so that given ``pi, theta`` and ``K`` the labels are independent,
``P(z_i = k) ~ pi_k f(x_i | theta_k)`` (Chang & Fisher's restricted Gibbs sampler).

One iteration (``iterate``):

1. ``pi`` and ``theta`` from their conditionals; one *anchor* row per cluster, uniform
   among its rows (an auxiliary variable with probability ``1 / N_k``).
2. Restricted Gibbs: every other row drawn from ``pi_k f(x_i | theta_k)``, in parallel over
   blocks of rows (numba threads; counter-based random numbers, one per row, so that the
   chain does not depend on the number of threads). The anchors keep every cluster
   non-empty; the proposal is exact for the conditional up to the anchors' ``prod 1/N_k``,
   so it is accepted with probability ``min(1, prod_k N_k / N'_k)`` (close to 1 once the
   clusters are large).
3. ``n_split_merge`` split or merge proposals (Metropolis-Hastings on ``p(z | X)``): a row
   ``i`` is drawn, then a split of its cluster (with a second row ``j`` of it) or a merge
   with another cluster, each with probability 1/2. A merge's partner ``k'`` is drawn with
   probability ``w(k' | k)``, mostly in proportion to the exponential of the merge's log
   posterior ratio, mixed with a uniform choice (the two halves of an over-split cluster
   find each other), then ``j`` uniformly among its rows. A split proposes
   the two sub-clusters of a *launch*: two sub-clusters seeded at ``i`` and ``j``, their
   parameters drawn from the posterior given their rows, refined by ``LAUNCH_ITERATIONS``
   restricted two-way Gibbs passes (parallel), then a final pass whose probability ``q``
   is the proposal's (Jain & Neal 2004's launch state, with Chang & Fisher's uncollapsed
   sub-clusters). A merge evaluates ``q`` of the current split by the same launch on the
   merged rows. The Hastings ratios are exact: for a split of ``k`` into ``l, r``

       log_block(N_l) + log_block(N_r) - log_block(N_k) + log_count(K + 1) - log_count(K)
       + log m(X_l) + log m(X_r) - log m(X_k) + log (N_k - 1) + log w(r | l) - log N_r
       - log q,

   (``1 / (N_k - 1)`` is the probability of choosing ``j`` for the split, ``w(r | l) / N_r``
   for the reverse merge, in the proposed state), and a merge's is its negative with the
   merged cluster's ``q``. A merge is refused before its launch
   when it would fail even with ``q = 1`` (most random merges cost nothing).

Chang & Fisher keep the sub-clusters from one iteration to the next and accept splits with
``H = alpha Gamma(N_l) m(X_l) Gamma(N_r) m(X_r) / (Gamma(N_k) m(X_k))``, which leaves out
the (intractable) probability of the sub-cluster state; the launch above costs
``LAUNCH_ITERATIONS + 1`` two-way passes over the proposed cluster's rows and makes the
chain exactly invariant (``tests/engines/gibbs/test_subcluster.py`` compares it with the
exact posterior).

The rows, labels and launch sides live in shards run by an executor
(``shards``: in this process, or Dask actors on the workers holding a ``dask.array``'s
chunks); this module is the driver, written once for both: per iteration it sends
parameters to the shards and receives per-cluster counts and sufficient statistics.
Every sum over rows is taken per fixed global block of rows and added over a fixed tree of
blocks, and every random number of a row pass is a hash of the global row index, so that
the same seed gives the same chain bit for bit on any number of shards, workers and
threads. A split/merge launch runs its ``LAUNCH_ITERATIONS + 1`` passes one after the
other (each pass's parameters come from the previous pass's statistics), each as one
shard map; its start (which also finds the second seed row in its shard) and its end
(which also returns the label of the next proposal's row, drawn before it) are one map
each: ``LAUNCH_ITERATIONS + 3`` round trips to the workers per launched proposal, one
(the row's label) per proposal refused before its launch, two for the restricted Gibbs
step (its proposal, then its settlement with the first proposal's label). With one shard
in this process (an ndarray's default executor) a launch is instead one call of one kernel
(:meth:`.shards.Shard.launch`): its random numbers are drawn first, in the order of the
passes, so that the chain is the same bit for bit.

References
----------
J. Chang, J. W. Fisher III. Parallel sampling of DP mixture models using sub-clusters
splits. NeurIPS 2013. O. Dinari, A. Yu, O. Freifeld, J. W. Fisher III. Distributed MCMC
inference in Dirichlet process mixture models using Julia. CCGRID 2019. S. Jain,
R. M. Neal. A split-merge Markov chain Monte Carlo procedure for the Dirichlet process
mixture model. JCGS 2004.
"""

import collections
import time
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ..._core.labels import compact_labels
from ..._core.validation import check_random_state
from ...models.prior_kernels import log_block, log_count, log_weight_existing, log_weight_new
from . import _subcluster_kernels as kernels
from .sampler import ChainResult, _engine as _collapsed_engine, map_chains
from .shards import DaskExecutor, LocalExecutor, engine_for, is_dask_array, reduce_tree

#: Restricted two-way Gibbs passes of a split/merge launch before the proposal's own pass.
LAUNCH_ITERATIONS = 3

#: Rows of the evenly spaced subsample whose chain starts a larger chain
#: (:func:`subsample_start`), and that chain's iterations at most (it ends once settled,
#: ``SUBSAMPLE_PATIENCE``); measured before the start's greedy cuts and the search below:
#: 10^6 blobs, 20 clusters, seeds 0-2: 20, 21, 20 clusters, ARI 1.0 with 40 or 100 of
#: them; 20, 20, 21 clusters, ARI 1.0, 1.0, 0.997 with 20; since the cuts: 20, 20, 20,
#: ARI 1.0 (seed 0: each of its chains settled after 3 iterations).
SUBSAMPLE_ROWS = 10_000
SUBSAMPLE_ITERATIONS = 40

#: The subsample chain's last iterations run ``SUBSAMPLE_SPLIT_MERGE`` split/merge
#: proposals each: on the subsample a launch costs about ``8 N_k d`` (passes over one
#: cluster's rows), a restricted Gibbs pass ``2 n K d``, so at ``K = 80`` one pass costs
#: as much as hundreds of launches, and the clusters still missing come from splits
#: (``bench_dp_scale.py``'s 100,000 x 128 embedding-like rows, 80 Zipf-sized clusters:
#: after 100 iterations of 10 proposals the subsample had 79 clusters, the 80th was
#: found 16 iterations into the full chain). Only the last ones: from k-means' unions
#: of clusters, 100 proposals without a restricted Gibbs pass between them cut true
#: clusters (10^6 blobs, 20 clusters: 22-25 clusters, ARI 0.96-0.98 after 20 such
#: iterations; 20, ARI 1.0 after 100 of 10 proposals). ``SUBSAMPLE_SPLIT_MERGE`` is per
#: ``SUBSAMPLE_ROWS`` rows: a smaller subsample gets proportionally fewer (never fewer
#: than the chain's own), as many proposals on a few hundred rows over-split their
#: clusters (five blobs, 150 rows: ARI 0.90 with 100).
SUBSAMPLE_SEARCH_ITERATIONS = 10
SUBSAMPLE_SPLIT_MERGE = 100

#: Each of the two chains of the start ends early once settled (:class:`Settled`): the
#: number of clusters unchanged and the log joint within ``SUBSAMPLE_TOLERANCE`` nats
#: per row over ``SUBSAMPLE_PATIENCE`` iterations.
SUBSAMPLE_PATIENCE = 2
SUBSAMPLE_TOLERANCE = 1e-3

_MAX_KEY = np.iinfo(np.int64).max
_MAX_SEED = np.iinfo(np.int32).max


def _engine(likelihood):
    """The kernels compiled for this likelihood (memoised by its kernel tuples)."""
    return engine_for(likelihood)


@dataclass
class SubclusterState:
    """The sampler's state: cluster sizes and sufficient statistics here, the labels
    ``0..K-1`` in the shards of ``executor``.

    ``shard_counts[s, k]`` is the number of rows of cluster ``k`` in shard ``s``.
    ``stats``, ``shared``, ``counts``, ``active`` and ``meta`` give the collapsed engine's
    view of the state (:func:`sklearn_trellis.engines.gibbs.sampler.log_joint` applies).
    A pickled state carries its gathered labels instead of its executor (the rows are
    the caller's); :func:`run_chain` rebuilds the executor from them.
    """

    executor: object
    counts: np.ndarray
    shard_counts: np.ndarray
    suff: np.ndarray
    params: np.ndarray
    alpha: float
    likelihood: object
    n_sweeps_done: int = 0
    saved_labels: np.ndarray = field(default=None, repr=False)

    @property
    def n_clusters(self):
        return int(self.counts.size)

    @property
    def n(self):
        return int(self.saved_labels.size if self.executor is None else self.executor.n)

    @property
    def labels(self):
        """All labels (gathered from the shards)."""
        if self.executor is None:
            return self.saved_labels.astype(np.int64)
        return self.executor.labels().astype(np.int64)

    def compact_labels(self):
        """Labels ``0..K-1`` in order of first appearance."""
        labels = self.labels
        out = np.empty(labels.size, np.int64)
        compact_labels(labels, out)
        return out

    def cluster_sizes(self):
        return self.counts

    def cluster_log_marginals(self):
        """``log m(X_k)`` of every cluster, and the collapsed statistics table."""
        K = self.n_clusters
        stats = np.zeros((K, self.likelihood.n_stats))
        out = np.empty(K)
        _engine(self.likelihood).log_marginals(self.params, self.suff, stats, K, out)
        return out, stats

    @property
    def stats(self):
        return self.cluster_log_marginals()[1]

    @property
    def shared(self):
        return np.zeros(1)

    @property
    def active(self):
        return np.arange(self.n_clusters, dtype=np.int64)

    @property
    def meta(self):
        return np.array([self.n_clusters, 0], np.int64)

    def __getstate__(self):
        state = dict(self.__dict__)
        if self.executor is not None:
            state["saved_labels"] = self.executor.labels()
        state["executor"] = None
        return state


def _statistics(executor, params, n_clusters):
    """Per-shard counts and the summed sufficient statistics of the shards' labels."""
    return _combine(executor, executor.map("statistics", params, n_clusters), n_clusters)


def _combine(executor, results, n_clusters, n_suff=None):
    shard_counts = np.array([counts for counts, _ in results], np.int64).reshape(
        len(results), n_clusters)
    suff = reduce_tree([nodes for _, nodes in results], executor.n_blocks)
    if suff is None:
        suff = np.zeros((n_clusters, n_suff or 0))
    return shard_counts, suff


def attach(state, executor):
    """Give a state whose executor was dropped (pickled, or another process) ``executor``,
    built on the same rows; the shards take the state's labels."""
    labels = state.saved_labels.astype(np.int64)
    executor.map("set_labels", per_shard=[labels[a:b] for a, b in
                                          zip(executor.bounds[:-1], executor.bounds[1:])])
    state.shard_counts = np.array([np.bincount(labels[a:b], minlength=state.n_clusters)
                                   for a, b in zip(executor.bounds[:-1], executor.bounds[1:])],
                                  np.int64).reshape(executor.n_shards, state.n_clusters)
    state.executor = executor
    state.saved_labels = None
    return state


def make_executor(likelihood, data, labels=None):
    """The executor of ``data``: an executor is used as given, a ``dask.array`` runs on
    Dask workers (:class:`.shards.DaskExecutor`), an ndarray in this process."""
    if hasattr(data, "map") and hasattr(data, "shard_of"):
        return data
    if is_dask_array(data):
        from .shards import DaskExecutor
        if labels is not None:
            labels = np.asarray(labels)
            return DaskExecutor(likelihood, data, lambda a, b: labels[a:b])
        return DaskExecutor(likelihood, data)
    return LocalExecutor(likelihood, data, labels)


def new_state(likelihood, data, init_labels, alpha, params=None):
    """A state holding the partition ``init_labels`` (any integer labels; None: one
    cluster) of the rows of ``data`` (an ndarray, a ``dask.array`` or an executor)."""
    params = np.ascontiguousarray(likelihood.kernel_params() if params is None else params,
                                  dtype=np.float64)
    labels = None
    if init_labels is not None:
        _, compact = np.unique(np.asarray(init_labels), return_inverse=True)
        labels = compact.astype(np.int64).ravel()
    executor = make_executor(likelihood, data, labels)
    if executor is data:   # a running executor: its shards get this state's labels
        bounds = executor.bounds
        start = np.zeros(bounds[-1], np.int64) if labels is None else labels
        executor.map("set_labels", per_shard=[start[a:b] for a, b in
                                              zip(bounds[:-1], bounds[1:])])
    K = 1 if labels is None else (int(labels.max()) + 1 if labels.size else 0)
    shard_counts, suff = _statistics(executor, params, K)
    return SubclusterState(executor=executor, counts=shard_counts.sum(axis=0),
                           shard_counts=shard_counts, suff=suff, params=params,
                           alpha=float(alpha), likelihood=likelihood)


def _key(rng):
    return rng.randint(_MAX_KEY, dtype=np.int64)


def _draw_thetas(engine, likelihood, params, suff, rng):
    K = suff.shape[0]
    theta = np.empty((K, likelihood.n_theta))
    stats = np.zeros((K, likelihood.n_stats))
    engine.draw_thetas(params, np.ascontiguousarray(suff), stats, theta, K,
                       rng.randint(_MAX_SEED))
    return theta


def _locate(per_shard, rank):
    """``(shard, rank within it)`` of the ``rank``-th row when shard ``s`` holds
    ``per_shard[s]`` of them in row order."""
    if per_shard.size == 1:
        return 0, int(rank)
    s = int(np.searchsorted(np.cumsum(per_shard), rank, side="right"))
    return s, int(rank - np.sum(per_shard[:s]))


def _draw_log_weights(pp, counts, rng):
    """Log cluster weights ``pi`` drawn from ``Dirichlet(w(N_1), ..., w(N_K))``."""
    weights = np.array([np.exp(log_weight_existing(pp, m)) for m in counts])
    gammas = np.maximum(rng.standard_gamma(weights), 1e-300)
    return np.log(gammas) - np.log(gammas.sum())


def restricted_gibbs(state, likelihood, pp, rng, ask_row=False):
    """Steps 1-2 of an iteration: weights, parameters, anchors, all labels; True if accepted.

    ``ask_row``: also draw the row of the first split/merge proposal (the next random
    number) and return ``(accepted, (row, its label))``, its label asked in the same
    round trip.
    """
    engine = _engine(likelihood)
    executor = state.executor
    K = state.n_clusters
    log_pi = _draw_log_weights(pp, state.counts, rng)
    theta = _draw_thetas(engine, likelihood, state.params, state.suff, rng)
    ranks = (rng.random_sample(K) * state.counts).astype(np.int64)
    # each anchor's shard and rank there (_locate, for all clusters at once)
    ends = np.cumsum(state.shard_counts, axis=0)
    shard = np.sum(ends <= ranks, axis=0)
    anchor_ranks = np.full((executor.n_shards, K), -1, np.int64)
    anchor_ranks[shard, np.arange(K)] = ranks - (ends - state.shard_counts)[shard, np.arange(K)]
    shard_counts = np.array(executor.map("propose", state.params, theta, log_pi, K, _key(rng),
                                         per_shard=list(anchor_ranks)), np.int64)
    counts = shard_counts.sum(axis=0)
    log_ratio = float(np.sum(np.log(state.counts) - np.log(counts)))
    accept = bool(np.log(rng.random_sample()) < log_ratio)
    row = rng.randint(executor.n) if ask_row else -1
    results = executor.map("settle", accept, state.params, K, row)
    if accept:
        state.shard_counts, state.suff = _combine(executor, [r[0] for r in results], K,
                                                  likelihood.n_suff)
        state.counts = state.shard_counts.sum(axis=0)
    return (accept, (row, results[executor.shard_of(row)][1])) if ask_row else accept


def _launch(state, likelihood, first, second, i, j, rng, forced=False):
    """Two sub-clusters of the rows of clusters ``first`` and ``second`` (equal for a
    split) seeded at rows ``i`` (side 0) and ``j`` (side 1): a global row, or
    ``(shard, cluster, rank, skip)``, the ``rank``-th row of ``cluster`` in ``shard``
    other than row ``skip``, which that shard finds as it starts the launch.

    Returns ``(log_q, suff, counts, shard_counts)`` of the final pass: drawn sides, or
    (``forced``) the current clusters as sides and their probability. The shards keep the
    sides for :meth:`.shards.Shard.apply_split`.
    """
    engine = _engine(likelihood)
    executor = state.executor
    params = state.params
    m = int(state.counts[first] + (state.counts[second] if second != first else 0))
    if executor.whole_launches:
        return _whole_launch(executor, params, first, second, i, j, m, rng, forced)
    if np.ndim(j) == 0:
        seeds = executor.map("launch_start", params, first, second, (int(i), int(j)))
    else:
        at, cluster, rank, skip = (int(v) for v in j)
        find = [None] * executor.n_shards
        find[at] = (cluster, rank, skip)
        seeds = executor.map("launch_start", params, first, second, (int(i), -1),
                             per_shard=find)
    suff = seeds[0]
    for more in seeds[1:]:
        suff = suff + more
    log_pi = np.log([0.5, 0.5])
    theta = _draw_thetas(engine, likelihood, params, suff, rng)
    for final in [False] * LAUNCH_ITERATIONS + [True]:
        results = executor.map("launch_pass", params, theta, log_pi, _key(rng),
                               final and forced)
        shard_counts = np.array([r[0] for r in results], np.int64)
        counts = shard_counts.sum(axis=0)
        suff = reduce_tree([r[1] for r in results], executor.n_blocks)
        if not final:
            log_pi = np.log(counts / m)
            theta = _draw_thetas(engine, likelihood, params, suff, rng)
    log_q = float(reduce_tree([r[2] for r in results], executor.n_blocks))
    return log_q, suff, counts, shard_counts


def _whole_launch(executor, params, first, second, i, j, m, rng, forced):
    """:func:`_launch` as one shard call (``executor.whole_launches``:
    :meth:`.shards.Shard.launch`), the same bit for bit: the seeds of the parameter draws
    and the keys of the passes are drawn first, in the order the passes draw them."""
    theta_seeds = np.empty(LAUNCH_ITERATIONS + 1, np.int64)
    keys = np.empty(LAUNCH_ITERATIONS + 1, np.int64)
    theta_seeds[0] = rng.randint(_MAX_SEED)
    for p in range(LAUNCH_ITERATIONS + 1):
        keys[p] = _key(rng)
        if p < LAUNCH_ITERATIONS:
            theta_seeds[p + 1] = rng.randint(_MAX_SEED)
    if np.ndim(j) == 0:
        seeds, find = (int(i), int(j)), None
    else:
        seeds, find = (int(i), -1), tuple(int(v) for v in j[1:])
    with np.errstate(divide="ignore"):  # an empty side: log 0 = -inf, as np.log(counts / m)
        log_fraction = np.log(np.arange(m + 1) / m)
    counts, suff, log_q = executor.map("launch", params, first, second, seeds, find,
                                       np.log([0.5, 0.5]), theta_seeds, keys, log_fraction,
                                       forced)[0]
    return log_q, suff, counts, counts[None, :]


def _log_m(engine, likelihood, params, suff):
    out = np.empty(suff.shape[0])
    engine.log_marginals(params, np.ascontiguousarray(suff),
                         np.zeros((suff.shape[0], likelihood.n_stats)), suff.shape[0], out)
    return out


def _partner_log_weights(engine, likelihood, params, pp, suff, counts, k):
    """Log probabilities of a merge's partner clusters for cluster ``k``
    (:func:`kernels.partner_log_weights`)."""
    out = np.empty(counts.size)
    engine.partner_log_weights(params, pp, np.ascontiguousarray(suff),
                               np.ascontiguousarray(counts, dtype=np.int64), k,
                               np.zeros((counts.size, likelihood.n_stats)), out)
    return out


def _keep_split(state, k, suff, counts, shard_counts):
    """The driver's side of an applied split of cluster ``k``: side 0 keeps ``k``, side 1
    becomes cluster ``K`` (the shards relabel with ``apply_split``)."""
    state.suff = np.vstack([state.suff, suff[1:2]])
    state.suff[k] = suff[0]
    state.counts = np.append(state.counts, counts[1])
    state.counts[k] = counts[0]
    state.shard_counts = np.column_stack([state.shard_counts, shard_counts[:, 1]])
    state.shard_counts[:, k] = shard_counts[:, 0]


def split_merge(state, likelihood, pp, rng, n_proposals, ahead=None):
    """Step 3: ``n_proposals`` split or merge proposals, exact Metropolis-Hastings; returns
    the number accepted. ``ahead``: the first proposal's row and its label, already drawn
    (:func:`restricted_gibbs` with ``ask_row``)."""
    engine = _engine(likelihood)
    executor = state.executor
    n = executor.n
    params = state.params
    accepted = 0
    # ahead: (i, its label) of the next proposal, asked with the last round trip

    def end(name, *args):
        """End the launch (``name``: apply_split, apply_merge or end_launch); draw the next
        proposal's row and get its label in the same round trip."""
        nonlocal ahead
        if proposal + 1 < n_proposals:
            row = rng.randint(n)
            labels = executor.map(name, *args, row)
            ahead = row, labels[executor.shard_of(row)]
        else:
            executor.map(name, *args)

    for proposal in range(n_proposals):
        K = state.n_clusters
        if ahead is None:
            i = rng.randint(n)
            k = executor.call(executor.shard_of(i), "label_at", i)
        else:
            (i, k), ahead = ahead, None
        shard_i = executor.shard_of(i)
        size = int(state.counts[k])
        if rng.random_sample() < 0.5:  # split the cluster of i
            if size < 2:
                continue
            others = state.shard_counts[:, k].copy()
            others[shard_i] -= 1          # j is another row of the cluster
            s, local = _locate(others, rng.randint(size - 1))
            log_q, suff, counts, shard_counts = _launch(state, likelihood, k, k, i,
                                                        (s, k, local, i), rng)
            log_m = _log_m(engine, likelihood, params, np.vstack([suff, state.suff[k:k + 1]]))
            log_a = (log_block(pp, counts[0]) + log_block(pp, counts[1]) - log_block(pp, size)
                     + log_count(pp, K + 1) - log_count(pp, K)
                     + log_m[0] + log_m[1] - log_m[2]
                     + np.log(size - 1) - np.log(counts[1]) - log_q)
            log_u = np.log(rng.random_sample())
            # the reverse merge: from i's new cluster, the partner drawn is j's (index K),
            # with probability w[K] <= 1: log_u >= log_a refuses whatever it is
            accept = log_u < log_a
            if accept:
                proposed = np.vstack([state.suff, suff[1:2]])
                proposed[k] = suff[0]
                log_w = _partner_log_weights(engine, likelihood, params, pp, proposed,
                                             np.append(state.counts, counts[1]), k)
                accept = log_u < log_a + log_w[K]
            if accept:
                end("apply_split", K)
                _keep_split(state, k, suff, counts, shard_counts)
                accepted += 1
            else:
                end("end_launch")
        else:  # merge it with another cluster (chosen by merge score), seeded at its row j
            if K < 2:
                continue
            # the partner cluster by its merge score, then j uniformly in it
            log_w = _partner_log_weights(engine, likelihood, params, pp, state.suff,
                                         state.counts, k)
            weights = np.exp(log_w)  # weights[k] = 0: never drawn
            k2 = int(np.searchsorted(np.cumsum(weights), rng.random_sample() * weights.sum(),
                                     side="right"))
            if k2 >= K:  # rounding at the end of the table: the last partner
                k2 = K - 1 if k != K - 1 else K - 2
            s, local = _locate(state.shard_counts[:, k2], rng.randint(int(state.counts[k2])))
            size2 = int(state.counts[k2])
            merged = state.suff[k] + state.suff[k2]
            log_m = _log_m(engine, likelihood, params,
                           np.vstack([merged, state.suff[k], state.suff[k2]]))
            delta = (log_block(pp, size + size2) - log_block(pp, size) - log_block(pp, size2)
                     + log_count(pp, K - 1) - log_count(pp, K)
                     + log_m[0] - log_m[1] - log_m[2]
                     + np.log(size2) - log_w[k2] - np.log(size + size2 - 1))
            log_u = np.log(rng.random_sample())
            if log_u >= delta:  # q <= 1: refused whatever the launch gives
                continue
            log_q = _launch(state, likelihood, k, k2, i, (s, k2, local, -1), rng,
                            forced=True)[0]
            if log_u < delta + log_q:
                last = K - 1
                end("apply_merge", k, k2, last)
                state.suff[k] = merged
                state.counts[k] = size + size2
                state.shard_counts[:, k] += state.shard_counts[:, k2]
                if k2 != last:  # the last cluster takes the freed label
                    state.suff[k2] = state.suff[last]
                    state.counts[k2] = state.counts[last]
                    state.shard_counts[:, k2] = state.shard_counts[:, last]
                state.suff = state.suff[:last].copy()
                state.counts = state.counts[:last].copy()
                state.shard_counts = state.shard_counts[:, :last].copy()
                accepted += 1
            else:
                end("end_launch")
    return accepted


def iterate(state, likelihood, pp, rng, *, n_split_merge=0, gibbs=True):
    """One iteration: restricted Gibbs (all labels, in parallel), then split/merge proposals.

    ``gibbs=False`` skips the restricted Gibbs step (split/merge moves alone are also a valid
    kernel). Returns the number of accepted split/merge proposals.
    """
    ahead = None
    if gibbs and n_split_merge:
        _, ahead = restricted_gibbs(state, likelihood, pp, rng, ask_row=True)
    elif gibbs:
        restricted_gibbs(state, likelihood, pp, rng)
    return split_merge(state, likelihood, pp, rng, n_split_merge, ahead) if n_split_merge else 0


def log_joint(state, likelihood, prior_params):
    """``log p(z, X)`` of the state (as :func:`.sampler.log_joint` for the collapsed engine)."""
    _, stats = state.cluster_log_marginals()
    K = state.n_clusters
    return float(_collapsed_engine(likelihood).log_joint(
        state.params, prior_params, stats, np.zeros(1), state.counts,
        np.arange(K, dtype=np.int64), K, state.n))


def record_statistics(state):
    """``record`` of :func:`run_chain` keeping what the posterior predictive needs of each
    kept sample without the rows: ``(params, suff, counts)``, the clusters in order of
    first appearance (those of :meth:`SubclusterState.compact_labels`)."""
    if state.executor is None:
        _, first = np.unique(state.saved_labels, return_index=True)
    else:
        first = np.min(state.executor.map("first_rows", state.n_clusters), axis=0)
    order = np.argsort(first)
    return state.params.copy(), state.suff[order].copy(), state.counts[order].copy()


def predictive_log_weights(likelihood, prior_params, params, suff, counts, data_new):
    """``(m, K+1)`` log weights of new rows joining each cluster or a new one, from the
    clusters' sufficient statistics (as :func:`.sampler.predictive_log_weights` from rows).

    Column ``k``: ``log w(N_k) + log m(X_k + x) - log m(X_k)``, then the new cluster's
    ``log w_new(K) + log m(x)``, less the log of the prior weights' total (``n + alpha``),
    so that ``logsumexp`` over a row is its log posterior predictive density.
    """
    engine = _engine(likelihood)
    params = np.ascontiguousarray(params, dtype=np.float64)
    m, K = data_new.shape[0], suff.shape[0]
    rows_suff = np.zeros((m, likelihood.n_suff))
    engine.accumulate_suff(params, data_new, np.arange(m, dtype=np.int64),
                           np.arange(m + 1, dtype=np.int64), rows_suff)
    log_weights = np.array([log_weight_existing(prior_params, c) for c in counts]
                           + [log_weight_new(prior_params, K)])
    out = np.empty((m, K + 1))
    base = _log_m(engine, likelihood, params, np.vstack([suff, np.zeros((1, suff.shape[1]))]))
    for c in range(K + 1):
        joined = rows_suff + (suff[c] if c < K else 0.0)
        out[:, c] = _log_m(engine, likelihood, params, joined) - base[c] + log_weights[c]
    with np.errstate(divide="ignore"):
        return out - np.logaddexp.reduce(log_weights)


#: Lloyd iterations at most of a 2-means cut in :func:`divisive_labels`.
TWO_MEANS_ITERATIONS = 20


def _two_means(points, i):
    """Sides (bool) of a 2-means cut of ``points`` started at row ``i`` and at the row
    farthest from it (Lloyd's iterations, at most ``TWO_MEANS_ITERATIONS``)."""
    far = int(np.argmax(np.sum((points - points[i]) ** 2, axis=1)))
    centres = points[[i, far]]
    side = None
    for _ in range(TWO_MEANS_ITERATIONS):
        # nearer to centre 1: x . (c1 - c0) > (|c1|^2 - |c0|^2) / 2
        new = points @ (centres[1] - centres[0]) > 0.5 * (centres[1] @ centres[1]
                                                          - centres[0] @ centres[0])
        if side is not None and np.array_equal(new, side):
            break
        side = new
        if side.all() or not side.any():
            break
        centres = np.array([points[~side].mean(axis=0), points[side].mean(axis=0)])
    return side


def divisive_labels(likelihood, pp, data, labels, rng):
    """Labels of ``data`` refined by greedy cuts, then merges: a start for a chain, not a
    move of it (it keeps a cut or a merge whenever it raises ``p(z | X)``, and no other).

    Every cluster of ``labels``, and each half of a cut kept, is cut once by 2-means
    (:func:`_two_means`, started at a random row of it and its farthest row); the cut
    is kept if its log posterior ratio (the first line of the split's Hastings ratio in
    this module's docstring) is positive. A cluster holding separated groups is thus cut
    between groups, where the chain's split launches, seeded at two random rows, mostly
    cut within one (``bench_dp_scale.py``'s embedding, 80 clusters: from k-means' 10,
    a chain on 10,000 of its rows found about one cluster per iteration). A 2-means cut
    of a union can also cut one of its groups; the pairs of clusters whose merge raises
    ``p(z | X)`` are then merged, best first (:func:`_greedy_merges`; the embedding:
    84 clusters after the cuts, the 80 true ones after the merges). Returns int64 labels
    ``0..K-1``.
    """
    engine = _engine(likelihood)
    params = likelihood.kernel_params()
    labels = np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64).ravel()
    queue = collections.deque(range(int(labels.max()) + 1 if labels.size else 0))
    n_clusters = len(queue)
    while queue:
        k = queue.popleft()
        rows = np.flatnonzero(labels == k)
        if rows.size < 2:
            continue
        points = np.asarray(data[rows], dtype=np.float64)
        side = _two_means(points, rng.randint(rows.size))
        if side.all() or not side.any():
            continue
        halves = [rows[~side], rows[side]]
        suff = np.zeros((3, likelihood.n_suff))
        engine.accumulate_suff(params, data, np.concatenate(halves + [rows]),
                               np.cumsum([0, halves[0].size, halves[1].size, rows.size]),
                               suff)
        log_m = _log_m(engine, likelihood, params, suff)
        gain = (log_block(pp, halves[0].size) + log_block(pp, halves[1].size)
                - log_block(pp, rows.size) + log_count(pp, n_clusters + 1)
                - log_count(pp, n_clusters) + log_m[0] + log_m[1] - log_m[2])
        if gain > 0:
            labels[halves[1]] = n_clusters
            queue.extend([k, n_clusters])
            n_clusters += 1
    return _greedy_merges(engine, likelihood, params, pp, data, labels)


def _greedy_merges(engine, likelihood, params, pp, data, labels):
    """``labels`` after merging, best first, pairs of clusters whose merge raises
    ``p(z | X)`` (a 2-means cut of a union can cut one of its groups: later cuts then
    leave the group's two pieces apart)."""
    K = int(labels.max()) + 1
    rows, offsets = kernels.group_rows(labels, K)
    suff = np.zeros((K, likelihood.n_suff))
    engine.accumulate_suff(params, data, rows, offsets, suff)
    counts = np.diff(offsets)
    single = _log_m(engine, likelihood, params, suff)
    alive = np.ones(K, bool)
    gain = np.full((K, K), -np.inf)   # a merge's log posterior ratio but log_count's

    def update(a):
        others = np.flatnonzero(alive)
        others = others[others != a]
        merged = _log_m(engine, likelihood, params, suff[a] + suff[others])
        gain[a, others] = gain[others, a] = (
            merged - single[a] - single[others] - log_block(pp, counts[a])
            + np.array([log_block(pp, counts[a] + counts[c]) - log_block(pp, counts[c])
                        for c in others]))

    for a in range(K):
        update(a)
    n_clusters = K
    while n_clusters > 1:
        a, b = np.unravel_index(np.argmax(gain), gain.shape)
        if not gain[a, b] + log_count(pp, n_clusters - 1) - log_count(pp, n_clusters) > 0:
            break
        labels[labels == b] = a
        suff[a] += suff[b]
        counts[a] += counts[b]
        single[a] = _log_m(engine, likelihood, params, suff[a:a + 1])[0]
        alive[b] = False
        gain[b, :] = gain[:, b] = -np.inf
        update(a)
        n_clusters -= 1
    return np.unique(labels, return_inverse=True)[1].astype(np.int64).ravel()


class Settled:
    """``stop`` of :func:`run_chain`: True once the number of clusters has not changed and
    the log joint has moved by at most ``tolerance`` nats per row over the last
    ``patience`` iterations (a rule of the chain's path, so deterministic given its seed).
    """

    def __init__(self, likelihood, prior, patience, tolerance):
        self.likelihood, self.prior = likelihood, prior
        self.patience, self.tolerance = patience, tolerance
        self.path = []

    def __call__(self, state):
        value = log_joint(state, self.likelihood, self.prior.with_alpha(state.alpha)
                          .kernel_params())
        self.path.append((state.n_clusters, value))
        recent = self.path[-(self.patience + 1):]
        if len(recent) <= self.patience or len({k for k, _ in recent}) > 1:
            return False
        values = [v for _, v in recent]
        return max(values) - min(values) <= self.tolerance * state.n


def subsample_rows(n, n_rows=None):
    """``min(n, n_rows)`` evenly spaced row indices of ``n`` rows (those of
    :func:`subsample_start`; ``n_rows`` None: ``SUBSAMPLE_ROWS``)."""
    n_rows = SUBSAMPLE_ROWS if n_rows is None else n_rows
    return np.unique(np.linspace(0, n - 1, min(n, n_rows)).round().astype(np.int64))


def subsample_start(likelihood, prior, data, *, init_labels=None, n_iterations=None,
                    n_rows=None, n_split_merge=10, n_search_iterations=None,
                    hyperprior=None, random_state=None, executor=None):
    """Starting labels of every row of ``data`` from a chain on an evenly spaced subsample.

    On the ``n_rows`` rows of :func:`subsample_rows` (None: ``SUBSAMPLE_ROWS``), the
    labels ``init_labels`` (None: one cluster) are refined by greedy cuts and merges
    (:func:`divisive_labels`); a sub-cluster chain of at most ``n_iterations`` (None:
    ``SUBSAMPLE_ITERATIONS``) iterations starts there (``n_split_merge`` proposals per
    iteration), then at most ``n_search_iterations`` (None:
    ``SUBSAMPLE_SEARCH_ITERATIONS``) more with ``SUBSAMPLE_SPLIT_MERGE`` proposals per
    ``SUBSAMPLE_ROWS`` rows each (at least ``n_split_merge``), each of the two ending
    once settled (:class:`Settled`: ``SUBSAMPLE_PATIENCE``, ``SUBSAMPLE_TOLERANCE``;
    the embedding of ``bench_dp_scale.py`` and its 10^6 blobs: 3 iterations each, the
    cuts having found every cluster); then cluster weights and parameters are
    drawn given its last partition (as in :func:`restricted_gibbs`) and every row of
    ``data`` is drawn from ``pi_k f(x | theta_k)`` in one parallel pass (clusters left
    empty are dropped).

    Why: from a coarse start (k-means with fewer clusters than the data have) a large
    chain's early splits cut unions of true clusters, and a launch that is not yet
    converged can cut a true cluster in two; the two parts of a cluster of ``10^5`` rows
    then almost never merge, since the merge's Hastings ratio holds the probability of
    the launch reproducing that split row by row (``log q`` of ``-10^3`` to ``-10^4``).
    On ``10^4`` rows the same moves mix quickly; the full chain then starts with about
    the right clusters and only refines them. Any starting state leaves the chain exact.
    The cuts before the chain find in one pass what its split moves found one cluster
    per iteration (a 2-D set of 15 blobs of 100 to 30,000 rows: 15 clusters, ARI 0.9998,
    where the chain alone ended with 16-17 and ARI 0.84-0.90).

    ``data`` is an ndarray (``likelihood.check_sampler_data``) or a ``dask.array`` (only
    the subsample is gathered; the labels are drawn on the workers). ``executor``: the
    running executor of ``data``'s rows (:func:`make_executor`), if the caller keeps one
    for the chains (a Dask fit's actors are then built once); None: one of its own.
    The labels depend on ``random_state`` only, not on the number of shards or threads.
    Returns int64 labels ``0..K-1`` of shape ``(n_samples,)``.
    """
    rng = check_random_state(random_state)
    n = int(data.shape[0])
    rows = subsample_rows(n, n_rows)
    n_iterations = SUBSAMPLE_ITERATIONS if n_iterations is None else n_iterations
    n_search = (SUBSAMPLE_SEARCH_ITERATIONS if n_search_iterations is None
                else n_search_iterations)
    sub = data[rows].compute() if is_dask_array(data) else data[rows]
    sub = likelihood.check_sampler_data(np.asarray(sub))
    labels = np.zeros(rows.size, np.int64) if init_labels is None else init_labels
    # one thread: the cuts' small products do not pay a BLAS pool's wake-ups
    with threadpool_limits(1, user_api="blas"):
        labels = divisive_labels(likelihood, prior.kernel_params(), sub, labels, rng)
    settled = Settled(likelihood, prior, SUBSAMPLE_PATIENCE, SUBSAMPLE_TOLERANCE)
    small = run_chain(likelihood, prior, sub, n_sweeps=n_iterations, init_labels=labels,
                      n_split_merge=n_split_merge, hyperprior=hyperprior,
                      random_state=rng, stop=settled).state
    if n_search:
        settled = Settled(likelihood, prior, SUBSAMPLE_PATIENCE, SUBSAMPLE_TOLERANCE)
        small = run_chain(likelihood, prior, sub, n_sweeps=n_search, state=small,
                          n_split_merge=max(n_split_merge, SUBSAMPLE_SPLIT_MERGE
                                            * rows.size // SUBSAMPLE_ROWS),
                          hyperprior=hyperprior, random_state=rng, stop=settled).state
    engine = _engine(likelihood)
    K = small.n_clusters
    log_pi = _draw_log_weights(prior.with_alpha(small.alpha).kernel_params(), small.counts,
                               rng)
    theta = _draw_thetas(engine, likelihood, small.params, small.suff, rng)
    executor = make_executor(likelihood, data) if executor is None else executor
    no_anchors = np.full((executor.n_shards, K), -1, np.int64)
    # as in run_chain: the parallelism is numba's; a BLAS pool under each numba thread's
    # products oversubscribes the cores (100,000 x 128 rows, 80 clusters: 2.6 CPU s
    # for this pass instead of 0.2)
    with threadpool_limits(1, user_api="blas"):
        executor.map("propose", small.params, theta, log_pi, K, _key(rng),
                     per_shard=list(no_anchors))
        executor.map("settle", True, small.params, K)
    labels = executor.labels().astype(np.int64)
    out = np.empty(n, np.int64)
    compact_labels(labels, out)
    return out


def run_chain(likelihood, prior, data, *, n_sweeps, burn_in=0, thin=1, init_labels=None,
              state=None, n_split_merge=10, hyperprior=None, random_state=None, verbose=0,
              chain_id=0, record=None, stop=None):
    """Run one chain of ``n_sweeps`` iterations; the arguments are those of
    :func:`.sampler.run_chain` (``n_split_merge``: proposals per iteration). Returns a
    :class:`.sampler.ChainResult` whose ``state`` is a :class:`SubclusterState`.
    ``stop``: None, or a function of the state called after every iteration; True ends
    the chain there (:class:`Settled`).

    ``data`` is ``likelihood.check_sampler_data(X)`` (float32 rows stay float32), a
    ``dask.array`` (its chunks are sampled where they are, :class:`.shards.DaskExecutor`)
    or an executor of ``shards``. The BLAS under the parameter draws runs on one
    thread: the parallelism is numba's, over blocks of rows, and the shards'.
    """
    rng = check_random_state(random_state)
    if state is None:
        state = new_state(likelihood, data, init_labels, prior.alpha)
    elif state.executor is None:
        attach(state, make_executor(likelihood, data))
    n = state.n
    samples, log_joints, alphas = [], [], []
    records = None if record is None else []
    accepted = 0
    start = time.perf_counter()
    interrupted = False
    done = 0
    report_every = max(1, n_sweeps // 10)
    try:
        with threadpool_limits(1, user_api="blas"):
            for t in range(n_sweeps):
                current = prior.with_alpha(state.alpha)
                pp = current.kernel_params()
                accepted += iterate(state, likelihood, pp, rng, n_split_merge=n_split_merge)
                log_m, stats = state.cluster_log_marginals()
                new_params = likelihood.resample_params(
                    state.params, stats, np.zeros(1), state.counts,
                    np.arange(state.n_clusters, dtype=np.int64), rng)
                if new_params is not None:
                    state.params = np.ascontiguousarray(new_params, dtype=np.float64)
                if hyperprior is not None:
                    state.alpha = hyperprior.resample(current, state.cluster_sizes(), rng)
                state.n_sweeps_done += 1
                done += 1
                keep = t >= burn_in and (t - burn_in) % thin == 0
                report = verbose and ((t + 1) % report_every == 0 or t + 1 == n_sweeps)
                if keep or report:
                    value = log_joint(state, likelihood,
                                      prior.with_alpha(state.alpha).kernel_params())
                if keep:
                    samples.append(state.compact_labels().astype(np.int32))
                    log_joints.append(value)
                    alphas.append(state.alpha)
                    if record is not None:
                        records.append(record(state))
                if report:
                    elapsed = time.perf_counter() - start
                    print(f"[sub-cluster chain {chain_id}] iteration {t + 1}/{n_sweeps}: "
                          f"{state.n_clusters} clusters, log joint {value:.6g}, "
                          f"alpha={state.alpha:.3g}, {elapsed / (t + 1):.3g} s/iteration",
                          flush=True)
                if stop is not None and stop(state):
                    break
    except KeyboardInterrupt:
        interrupted = True
        if verbose:
            print(f"[sub-cluster chain {chain_id}] interrupted after {done} iterations; "
                  f"keeping {len(samples)} samples.", flush=True)
    if not isinstance(state.executor, LocalExecutor):
        # the actors end with the client: the state keeps its labels instead
        state.saved_labels, state.executor = state.executor.labels(), None
    return ChainResult(
        samples=np.array(samples, dtype=np.int32).reshape(len(samples), n),
        log_joints=np.array(log_joints, dtype=np.float64),
        alphas=np.array(alphas, dtype=np.float64), state=state, interrupted=interrupted,
        seconds=time.perf_counter() - start, n_sweeps=done, accepted_split_merge=accepted,
        records=records)


def run_chains(likelihood, prior, data, *, n_chains=1, n_jobs=None, random_state=None,
               init_labels=None, states=None, **chain_kwargs):
    """Independent chains (as :func:`.sampler.run_chains`, through :func:`.sampler.map_chains`)."""
    if states is None:
        states = [None] * n_chains
    if is_dask_array(data) or isinstance(data, DaskExecutor):
        n_jobs = None   # the workers run the shards: the chains one after the other
    per_chain = [dict(init_labels=init_labels, state=states[c]) for c in range(n_chains)]
    return map_chains(run_chain, (likelihood, prior, data), per_chain, n_jobs=n_jobs,
                      random_state=random_state, **chain_kwargs)


__all__ = ["SubclusterState", "new_state", "make_executor", "attach", "restricted_gibbs",
           "split_merge", "iterate", "log_joint", "record_statistics", "predictive_log_weights",
           "run_chain", "run_chains", "subsample_rows", "subsample_start", "divisive_labels",
           "Settled", "LAUNCH_ITERATIONS", "SUBSAMPLE_ROWS", "SUBSAMPLE_ITERATIONS",
           "SUBSAMPLE_SEARCH_ITERATIONS", "SUBSAMPLE_SPLIT_MERGE", "SUBSAMPLE_PATIENCE",
           "SUBSAMPLE_TOLERANCE"]
