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

One iteration (:func:`iterate`):

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

References
----------
J. Chang, J. W. Fisher III. Parallel sampling of DP mixture models using sub-clusters
splits. NeurIPS 2013. O. Dinari, A. Yu, O. Freifeld, J. W. Fisher III. Distributed MCMC
inference in Dirichlet process mixture models using Julia. CCGRID 2019. S. Jain,
R. M. Neal. A split-merge Markov chain Monte Carlo procedure for the Dirichlet process
mixture model. JCGS 2004.
"""

import time
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from ..._core.labels import compact_labels
from ...models.prior_kernels import log_block, log_count, log_weight_existing
from . import _subcluster_kernels as kernels
from .sampler import ChainResult, _engine as _collapsed_engine, map_chains

#: Restricted two-way Gibbs passes of a split/merge launch before the proposal's own pass.
LAUNCH_ITERATIONS = 3

_MAX_KEY = np.iinfo(np.int64).max
_MAX_SEED = np.iinfo(np.int32).max


#: Fewer rows than this are handled by the serial twins of the parallel kernels (waking
#: threads costs more than it saves; on a loaded machine, far more). Summing statistics
#: is parallel over clusters, and cheap: it needs many more rows.
PARALLEL_MIN_ROWS = {"propose_labels": 2 * kernels.BLOCK_ROWS,
                     "launch": 2 * kernels.BLOCK_ROWS,
                     "accumulate_suff": 32 * kernels.BLOCK_ROWS}

_ENGINES = {}


def _engine(likelihood):
    """The kernels compiled for this likelihood (memoised by its kernel tuples)."""
    key = (likelihood.kernels, likelihood.uncollapsed_kernels)
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _ENGINES[key] = kernels.specialise(likelihood)
    return engine


def _kernel(engine, name, n_rows):
    """The parallel kernel ``name``, or its serial twin below ``PARALLEL_MIN_ROWS`` rows."""
    kernel = getattr(engine, name)
    return kernel.parallel if n_rows >= PARALLEL_MIN_ROWS[name] else kernel.serial


@dataclass
class SubclusterState:
    """The sampler's state: labels ``0..K-1``, cluster sizes and sufficient statistics.

    ``stats``, ``shared``, ``counts``, ``active`` and ``meta`` give the collapsed engine's
    view of the state (:func:`sklearn_trellis.engines.gibbs.sampler.log_joint` applies).
    """

    labels: np.ndarray
    counts: np.ndarray
    suff: np.ndarray
    params: np.ndarray
    alpha: float
    likelihood: object
    n_sweeps_done: int = 0

    @property
    def n_clusters(self):
        return int(self.counts.size)

    def compact_labels(self):
        """Labels ``0..K-1`` in order of first appearance."""
        out = np.empty(self.labels.size, np.int64)
        compact_labels(self.labels, out)
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


def _suff_of(likelihood, params, data, labels, n_clusters):
    rows, offsets = kernels.group_rows(labels, n_clusters)
    suff = np.zeros((n_clusters, likelihood.n_suff))
    _kernel(_engine(likelihood), "accumulate_suff", labels.size)(params, data, rows, offsets,
                                                                 suff)
    return suff


def new_state(likelihood, data, init_labels, alpha, params=None):
    """A state holding the partition ``init_labels`` (any integer labels)."""
    _, compact = np.unique(np.asarray(init_labels), return_inverse=True)
    labels = compact.astype(np.int64).ravel()
    params = np.ascontiguousarray(likelihood.kernel_params() if params is None else params,
                                  dtype=np.float64)
    K = int(labels.max()) + 1 if labels.size else 0
    return SubclusterState(labels=labels, counts=np.bincount(labels, minlength=K).astype(np.int64),
                           suff=_suff_of(likelihood, params, data, labels, K), params=params,
                           alpha=float(alpha), likelihood=likelihood)


def _key(rng):
    return rng.randint(_MAX_KEY, dtype=np.int64)


def _draw_thetas(engine, likelihood, params, suff, rng):
    K = suff.shape[0]
    theta = np.empty((K, likelihood.n_theta))
    stats = np.zeros((K, likelihood.n_stats))
    engine.draw_thetas(params, suff, stats, theta, K, rng.randint(_MAX_SEED))
    return theta


def restricted_gibbs(state, likelihood, pp, data, rng):
    """Steps 1-2 of an iteration: weights, parameters, anchors, all labels; True if accepted."""
    engine = _engine(likelihood)
    K = state.n_clusters
    n = state.labels.size
    weights = np.array([np.exp(log_weight_existing(pp, m)) for m in state.counts])
    gammas = np.maximum(rng.standard_gamma(weights), 1e-300)
    log_pi = np.log(gammas) - np.log(gammas.sum())
    theta = _draw_thetas(engine, likelihood, state.params, state.suff, rng)
    anchors = np.empty(K, np.int64)
    kernels.rows_at_ranks(state.labels, (rng.random_sample(K) * state.counts).astype(np.int64),
                          anchors)
    pinned = np.zeros(n, np.bool_)
    pinned[anchors] = True
    proposal = np.empty(n, np.int64)
    block_counts = np.empty((-(-n // kernels.BLOCK_ROWS), K), np.int64)
    _kernel(engine, "propose_labels", n)(state.params, theta, log_pi, K, data, state.labels,
                                         pinned, _key(rng), proposal, block_counts)
    counts = block_counts.sum(axis=0)
    log_ratio = float(np.sum(np.log(state.counts) - np.log(counts)))
    if np.log(rng.random_sample()) >= log_ratio:
        return False
    state.labels = proposal
    state.counts = counts
    state.suff = _suff_of(likelihood, state.params, data, proposal, K)
    return True


def _launch(engine, likelihood, params, data, rows, i, j, rng, current=None):
    """Two sub-clusters of ``rows`` seeded at rows ``i`` (side 0) and ``j`` (side 1).

    Returns ``(sides, log_q, suff, counts)`` of the final pass: drawn (``current`` None),
    or ``current``'s sides and their probability (one kernel call: :func:`kernels.launch`).
    """
    m = rows.size
    sides = np.empty(m, np.int64)
    suff = np.empty((2, likelihood.n_suff))
    counts = np.empty(2, np.int64)
    log_q = _kernel(engine, "launch", m)(
        params, data, rows, np.searchsorted(rows, [i, j]).astype(np.int64),
        np.empty(0, np.int64) if current is None else current, LAUNCH_ITERATIONS,
        rng.randint(_MAX_SEED), np.zeros((2, likelihood.n_stats)),
        np.empty((2, likelihood.n_theta)), sides, suff, counts)
    return sides, float(log_q), suff, counts


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


def split_merge(state, likelihood, pp, data, rng, n_proposals):
    """Step 3: ``n_proposals`` split or merge proposals, exact Metropolis-Hastings; returns
    the number accepted."""
    engine = _engine(likelihood)
    n = state.labels.size
    params = state.params
    accepted = 0
    for _ in range(n_proposals):
        K = state.n_clusters
        i = rng.randint(n)
        k = int(state.labels[i])
        size = int(state.counts[k])
        if rng.random_sample() < 0.5:  # split the cluster of i
            if size < 2:
                continue
            j = kernels.row_at_rank(state.labels, k, rng.randint(size - 1), i, True)
            rows, _ = kernels.members_of(state.labels, k, k)
            sides, log_q, suff, counts = _launch(engine, likelihood, params, data, rows, i, j,
                                                 rng)
            log_m = _log_m(engine, likelihood, params, np.vstack([suff, state.suff[k:k + 1]]))
            log_a = (log_block(pp, counts[0]) + log_block(pp, counts[1]) - log_block(pp, size)
                     + log_count(pp, K + 1) - log_count(pp, K)
                     + log_m[0] + log_m[1] - log_m[2]
                     + np.log(size - 1) - np.log(counts[1]) - log_q)
            log_u = np.log(rng.random_sample())
            if log_u >= log_a:  # the reverse merge's partner probability is <= 1
                continue
            # the reverse merge: from i's new cluster, the partner drawn is j's (index K)
            proposed = np.vstack([state.suff, suff[1:2]])
            proposed[k] = suff[0]
            log_w = _partner_log_weights(engine, likelihood, params, pp, proposed,
                                         np.append(state.counts, counts[1]), k)
            if log_u < log_a + log_w[K]:
                kernels.relabel(state.labels, rows, sides, 1, K)
                state.suff = np.vstack([state.suff, suff[1:2]])
                state.suff[k] = suff[0]
                state.counts = np.append(state.counts, counts[1])
                state.counts[k] = counts[0]
                accepted += 1
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
            size2 = int(state.counts[k2])
            j = kernels.row_at_rank(state.labels, k2, rng.randint(size2), -1, True)
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
            rows, current = kernels.members_of(state.labels, k, k2)
            _, log_q, _, _ = _launch(engine, likelihood, params, data, rows, i, j, rng,
                                     current=current)
            if log_u < delta + log_q:
                kernels.replace_label(state.labels, k2, k)
                state.suff[k] = merged
                state.counts[k] = size + size2
                last = K - 1
                if k2 != last:  # the last cluster takes the freed label
                    kernels.replace_label(state.labels, last, k2)
                    state.suff[k2] = state.suff[last]
                    state.counts[k2] = state.counts[last]
                state.suff = state.suff[:last].copy()
                state.counts = state.counts[:last].copy()
                accepted += 1
    return accepted


def iterate(state, likelihood, pp, data, rng, *, n_split_merge=0, gibbs=True):
    """One iteration: restricted Gibbs (all labels, in parallel), then split/merge proposals.

    ``gibbs=False`` skips the restricted Gibbs step (split/merge moves alone are also a valid
    kernel). Returns the number of accepted split/merge proposals.
    """
    if gibbs:
        restricted_gibbs(state, likelihood, pp, data, rng)
    return split_merge(state, likelihood, pp, data, rng, n_split_merge) if n_split_merge else 0


def log_joint(state, likelihood, prior_params):
    """``log p(z, X)`` of the state (as :func:`.sampler.log_joint` for the collapsed engine)."""
    _, stats = state.cluster_log_marginals()
    K = state.n_clusters
    return float(_collapsed_engine(likelihood).log_joint(
        state.params, prior_params, stats, np.zeros(1), state.counts,
        np.arange(K, dtype=np.int64), K, state.labels.size))


def run_chain(likelihood, prior, data, *, n_sweeps, burn_in=0, thin=1, init_labels=None,
              state=None, n_split_merge=10, hyperprior=None, random_state=None, verbose=0,
              chain_id=0, record=None):
    """Run one chain of ``n_sweeps`` iterations; the arguments are those of
    :func:`.sampler.run_chain` (``n_split_merge``: proposals per iteration). Returns a
    :class:`.sampler.ChainResult` whose ``state`` is a :class:`SubclusterState`.

    ``data`` is ``likelihood.check_sampler_data(X)`` (float32 rows stay float32). The
    BLAS under the parameter draws runs on one thread: the parallelism is numba's, over
    blocks of rows.
    """
    rng = check_random_state(random_state)
    n = data.shape[0]
    if state is None:
        labels = np.zeros(n, np.int64) if init_labels is None else init_labels
        state = new_state(likelihood, data, labels, prior.alpha)
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
                accepted += iterate(state, likelihood, pp, data, rng,
                                    n_split_merge=n_split_merge)
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
    except KeyboardInterrupt:
        interrupted = True
        if verbose:
            print(f"[sub-cluster chain {chain_id}] interrupted after {done} iterations; "
                  f"keeping {len(samples)} samples.", flush=True)
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
    per_chain = [dict(init_labels=init_labels, state=states[c]) for c in range(n_chains)]
    return map_chains(run_chain, (likelihood, prior, data), per_chain, n_jobs=n_jobs,
                      random_state=random_state, **chain_kwargs)


__all__ = ["SubclusterState", "new_state", "restricted_gibbs", "split_merge", "iterate",
           "log_joint", "run_chain", "run_chains", "LAUNCH_ITERATIONS"]
