"""The shared base of the four Gibbs estimators (DPMixture, FastTIWD, InfiniteBiclustering,
CrossCat).

Modelled on scikit-learn's ``_BaseKMeans``: the parameters every Gibbs
estimator has and their constraints (chains, sweeps, burn-in, thinning, the
exact-or-sampled switch, ``warm_start``), the steps every fit shares (the
burn-in check and default, what ``warm_start`` does with the stored chains,
choosing exact or Gibbs inference, ``method_`` / ``approximation_``) and the
constants they share. The estimators build their model and call the engines.
"""

import hashlib
from numbers import Integral

import numpy as np
from joblib import effective_n_jobs
from scipy.special import logsumexp
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from ._core.budget import HARD_MAX_ITEMS, check_memory, format_bytes
from ._core.subsets import membership_table
from ._core.validation import NestedModelParamsMixin, WriteableStateMixin
from .engines.gibbs.chains import collect_chains, n_clusters_frequencies
from .models.priors import GammaHyperprior
from .summaries.occurrence import COOCCURRENCE_BYTES_PER_PAIR, pairwise_cooccurrence
from .summaries.point_estimates import PAIRWISE_LOSSES

#: Largest number of items (rows, columns) whose pairwise marginals (an n x n matrix) are stored.
MAX_PAIRWISE_ITEMS = 3000

#: Largest number of items for a loss-based point estimate: the losses of P (Binder from P,
#: omARI.approx, VI.lb) hold an n x n float matrix, and the others' search work grows as
#: n x samples. Above it, the kept sample of highest posterior density is used.
MAX_LOSS_ESTIMATE_ITEMS = 10_000

#: Bytes a kept label costs at the fit's peak: the chains' int32 samples and their pooled
#: copy (``collect_chains`` concatenates them while the chains still hold theirs).
SAMPLE_BYTES_PER_LABEL = 8

#: Bytes per item of ``n_clusters_distribution_`` (float64) and the counts it is made from.
N_CLUSTERS_BYTES_PER_ITEM = 16

#: Kept samples (evenly spaced) that the predictive distributions average over.
MAX_PREDICTIVE_SAMPLES = 25

#: Number of k-means clusters of ``init='kmeans'``.
KMEANS_INIT_CLUSTERS = 10


def predictive_picks(n_kept):
    """Indices of the kept samples a predictive averages over (at most MAX_PREDICTIVE_SAMPLES)."""
    return np.unique(np.linspace(0, n_kept - 1, min(n_kept, MAX_PREDICTIVE_SAMPLES))
                     .round().astype(int))


def to_fitted_columns(probs, sample_labels, fitted_labels, n_fitted):
    """One sample's cluster probabilities (+ new) mapped onto the clusters of ``labels_`` (+ new).

    A sample's cluster ``c`` passes its probability to the clusters of
    ``labels_`` in proportion to how many of its items each holds.

    Parameters
    ----------
    probs : ndarray of shape (m, K_s + 1)
    sample_labels : ndarray of shape (n,)
        Labels ``0..K_s-1`` of the sample.
    fitted_labels : ndarray of shape (n,)
    n_fitted : int

    Returns
    -------
    ndarray of shape (m, n_fitted + 1)
    """
    k_s = probs.shape[1] - 1
    overlap = np.zeros((k_s, n_fitted))
    np.add.at(overlap, (sample_labels, fitted_labels), 1.0)
    overlap /= overlap.sum(axis=1, keepdims=True)
    return np.hstack([probs[:, :k_s] @ overlap, probs[:, k_s:]])


def subset_columns(fitted_labels, n_fitted):
    """Every subset's share of the columns of ``labels_`` (+ new), as :func:`to_fitted_columns`.

    Row ``B`` (a bitmask of the fitted rows) is ``|B n k| / |B|`` for each cluster ``k``
    of ``fitted_labels``; row 0 (the empty subset: a cluster of its own) is the "new"
    column. Returns an ndarray of shape (2**n, n_fitted + 1).
    """
    n = fitted_labels.shape[0]
    members = membership_table(n)     # (2**n, n) bits
    out = np.zeros((1 << n, n_fitted + 1))
    out[:, :n_fitted] = members @ np.eye(n_fitted)[fitted_labels]
    out[1:, :n_fitted] /= members[1:].sum(axis=1, keepdims=True)
    out[0, n_fitted] = 1.0
    return out


def fingerprint(X):
    """A digest of an array's shape, dtype and bytes: tells the same data from new data."""
    X = np.ascontiguousarray(X)
    digest = hashlib.blake2b(X.view(np.uint8).ravel(), digest_size=16).hexdigest()
    return (X.shape, X.dtype.str, digest)


def initial_labels(init, X, rng, *, kmeans_clusters=None, n_jobs=None):
    """Starting labels of the rows of ``X`` for a named ``init`` option.

    ``'one'``: one cluster; ``'singletons'``; ``'random'``: uniform labels among
    ``sqrt(n)``; ``'kmeans'``: k-means with ``kmeans_clusters`` clusters
    (default ``min(n, KMEANS_INIT_CLUSTERS)``) on ``X`` (no NaN), on the BLAS and OpenMP
    threads ``n_jobs`` allows (joblib's ``effective_n_jobs``: one for ``None`` outside a
    ``parallel_config``). Not all the machine's threads: on a loaded machine idle thread
    pools cost 5 to 60 times the CPU of one thread (10,000 x 128 rows: 1.2 to 1.5 CPU s on
    two threads, 0.2 to 0.3 on one), and k-means' labels do not depend on the number.
    """
    n = X.shape[0]
    if init == "one":
        return np.zeros(n, np.int64)
    if init == "singletons":
        return np.arange(n, dtype=np.int64)
    if init == "random":
        return rng.randint(max(1, int(np.sqrt(n))), size=n).astype(np.int64)
    k = min(n, KMEANS_INIT_CLUSTERS) if kmeans_clusters is None else kmeans_clusters
    return fitted_kmeans(X, k, rng, n_jobs).labels_.astype(np.int64)


def fitted_kmeans(X, n_clusters, rng, n_jobs=None):
    """k-means (one start, seeded from ``rng``) fitted to ``X`` on the BLAS and OpenMP
    threads ``n_jobs`` allows: the start of :func:`initial_labels`, and of a dask
    array's rows (fitted to a sample of them, then predicted on the workers)."""
    kmeans = KMeans(n_clusters=n_clusters, n_init=1, random_state=rng.randint(2**31 - 1))
    with threadpool_limits(effective_n_jobs(n_jobs)):
        return kmeans.fit(X)


def check_given_labels(labels, n, name="init"):
    """Given starting labels as int64, after checking they are ``n`` integers."""
    labels = np.asarray(labels)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name} labels must be an integer array of shape ({n},).")
    return labels.astype(np.int64)


def gamma_hyperprior(alpha_prior):
    """The :class:`GammaHyperprior` of an ``alpha_prior`` ``(shape, rate)``, or None."""
    if alpha_prior is None:
        return None
    if len(alpha_prior) != 2:
        raise ValueError(f"alpha_prior must be a (shape, rate) pair, got {alpha_prior!r}.")
    return GammaHyperprior(*alpha_prior)


def observed_nothing_scores_zero(log_density, data):
    """``log_density`` with exactly 0 for the rows of ``data`` whose cells are all NaN.

    A row with nothing observed has density 1 under any model; the sums of
    normalised weights gave it ``+-1e-16``.
    """
    log_density[np.isnan(data).all(axis=1)] = 0.0
    return log_density


def _refuse_rows_without_density(lost):
    """A clear error for the rows (boolean mask) whose predictive float64 cannot hold."""
    rows = np.flatnonzero(lost)
    if rows.size:
        raise ValueError(f"Row {rows[0]} of X has no predictive density float64 can hold "
                         "under any cluster (it lies too far from the fitted data at their "
                         "scale): its probabilities and density are undefined. Rescale X "
                         "and the training data together.")


class _BaseGibbs(WriteableStateMixin, NestedModelParamsMixin, BaseEstimator):
    """Base class of the estimators that sample partitions by Gibbs sampling.

    It holds the parameters every Gibbs estimator has (keyword-only, after each
    estimator's data-facing leading parameter): ``n_sweeps``, ``burn_in``,
    ``thin``, ``n_chains``, ``n_jobs``, ``method``, ``max_exact_size``,
    ``random_state``, ``verbose`` and ``warm_start``. Subclasses put
    ``ClusterMixin`` or ``BiclusterMixin`` first in their bases, add their
    parameters to ``_parameter_constraints`` and implement ``fit`` with the
    steps below; they keep the final states of their chains in ``_chains``
    (None after an exact fit).

    ``warm_start`` means the same on all of them: on the data of the last
    Gibbs fit the chains continue (no burn-in, the new samples appended); on
    new data of the same shape each chain restarts from its last state (the
    statistics recomputed from the new data, a burn-in, the old samples
    dropped), as scikit-learn's ``warm_start`` reuses a solution as an
    initialisation; data of another shape is refused.

    ``method`` and ``max_exact_size`` mean the same on all of them:
    ``'auto'`` computes the posterior exactly when exact inference applies and
    the problem's size (defined by each estimator) is at most
    ``max_exact_size``, and samples it otherwise.
    """

    _parameter_constraints: dict = {
        "n_sweeps": [Interval(Integral, 1, None, closed="left")],
        "burn_in": [Interval(Integral, 0, None, closed="left"), None],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        # joblib's convention: a positive count, or -1, -2, ... for all CPUs but |n_jobs| - 1
        # (0 is refused here, not after setup by joblib or silently by an exact fit)
        "n_jobs": [Interval(Integral, 1, None, closed="left"),
                   Interval(Integral, None, -1, closed="right"), None],
        "method": [StrOptions({"auto", "gibbs", "exact"})],
        "max_exact_size": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None, closed="left")],
        "warm_start": ["boolean"],
    }

    def __init__(self, *, n_sweeps, burn_in, thin, n_chains, n_jobs, method, max_exact_size,
                 random_state, verbose, warm_start):
        self.n_sweeps = n_sweeps
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.method = method
        self.max_exact_size = max_exact_size
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    # -- steps of fit ------------------------------------------------------------
    def _check_burn_in(self):
        """The cross-parameter check of ``burn_in`` (the constraints check each alone)."""
        if self.burn_in is not None and self.burn_in >= self.n_sweeps:
            raise ValueError(f"burn_in must be < n_sweeps={self.n_sweeps}, got {self.burn_in}.")

    def _has_chains(self):
        """True when ``warm_start`` is on and a Gibbs fit left chains to start from."""
        return bool(self.warm_start) and getattr(self, "_chains", None) is not None

    def _check_warm_shape(self, shape):
        """Refuse a warm start on data of another shape than the last fit's (call it before
        the data is validated, so that this message comes first)."""
        if self._has_chains() and tuple(shape) != self._data_fingerprint[0]:
            raise ValueError(f"warm_start needs data of the previous fit's shape "
                             f"{self._data_fingerprint[0]} (the same number of samples and "
                             f"features), got {tuple(shape)}; set warm_start=False to start "
                             "afresh.")

    def _warm_start_mode(self, data):
        """How this fit uses the stored chains: ``None`` (a cold start), ``'continue'``
        (``data`` is that of the last fit: the chains go on, their samples are kept) or
        ``'restart'`` (new data of the same shape: the chains' last states only
        initialise new chains). Data of another shape raises. ``data`` is the
        validated data; the fingerprint of this fit's data is stored.
        """
        self._check_warm_shape(data.shape)
        current = fingerprint(data)
        mode = None
        if self._has_chains():
            mode = "continue" if current == self._data_fingerprint else "restart"
        self._data_fingerprint = current
        return mode

    def _burn_in(self, warm):
        """Sweeps to discard: none when continuing chains, else ``burn_in`` (default half)."""
        if warm == "continue":
            return 0
        return self.n_sweeps // 2 if self.burn_in is None else self.burn_in

    def _use_exact(self, size, exact_applies):
        """``method='exact'``, or ``'auto'`` when exact inference applies and ``size`` (the
        estimator's measure of the problem) is at most ``max_exact_size``."""
        return self.method == "exact" or (
            self.method == "auto" and exact_applies and size <= self.max_exact_size)

    def _check_exact_size(self, n_samples):
        """Refuse exact inference beyond ``max_exact_size`` items (the trellis's size)."""
        if n_samples > self.max_exact_size:
            raise_limit = (f"raise max_exact_size to {n_samples} if you can afford it "
                           f"(O(3^N)), or " if n_samples <= HARD_MAX_ITEMS else "")
            raise ValueError(f"method='exact' needs n_samples <= max_exact_size="
                             f"{self.max_exact_size}, got {n_samples}. To go on: "
                             f"{raise_limit}use method='gibbs' or fewer items.")

    def _set_method(self, method, *, n_kept=None, n_chains=None, interrupted=False):
        """``method_``, ``approximation_`` and ``interrupted_`` of an exact or Gibbs fit."""
        self.method_ = method
        self.interrupted_ = bool(interrupted)
        if method == "exact":
            self.approximation_ = None
            return
        self.log_marginal_likelihood_ = None
        sampler = "Gibbs sampling" if method == "gibbs" else "Sub-cluster split/merge MCMC"
        self.approximation_ = (
            f"{sampler}: {n_kept} kept samples from {n_chains} chain(s); the point "
            "estimate and every posterior summary are estimated from these samples"
            + ("; interrupted by Ctrl-C" if interrupted else ""))

    def _check_samples_memory(self, n_items, n_chains, warm, n_columns=None, *,
                              beside=(0, None)):
        """Refuse before sampling when the kept samples and the summaries the fit then
        computes from them would not fit in the memory available.

        The samples: ``SAMPLE_BYTES_PER_LABEL`` per kept label (int32, pooled once)
        and ``N_CLUSTERS_BYTES_PER_ITEM`` per item. The summaries: the co-clustering
        matrix ``pairwise_marginals_`` for ``n <= MAX_PAIRWISE_ITEMS`` (its
        computation peaks at ``COOCCURRENCE_BYTES_PER_PAIR`` bytes per pair), then
        what the point estimate adds (:meth:`_point_estimate_memory`). ``n_columns``:
        a second partition sampled alongside (biclustering's columns), summarised
        after the first. ``beside``: ``(bytes, what)`` the fit holds meanwhile (a dask
        fit's gathered prior rows and start labels), counted in the samples' check.
        Each refusal names what lifts it: fewer kept samples lift only the samples'
        share.
        """
        kept = n_chains * -(-(self.n_sweeps - self._burn_in(warm)) // self.thin)
        if warm == "continue":
            kept += self._n_stored_samples()
        sizes = [n_items] if n_columns is None else [n_items, n_columns]
        held = matrix = 0   # the matrices are computed one after the other
        for m in sizes:
            if m <= MAX_PAIRWISE_ITEMS:
                matrix = max(matrix, held + COOCCURRENCE_BYTES_PER_PAIR * m * m)
                held += 8 * m * m
        estimate, estimate_way_out = self._point_estimate_memory(max(sizes), kept)
        summaries = max(matrix, held + estimate)
        shape = " x ".join(f"{m:,}" for m in sizes)
        if held + estimate > matrix and estimate_way_out:
            check_memory(held + estimate, "the point estimate's co-clustering matrix "
                         f"({max(sizes)}, {max(sizes)})", way_out=estimate_way_out)
        check_memory(summaries, f"the co-clustering matrices of {shape} items (the "
                     f"pairwise marginals, computed up to {MAX_PAIRWISE_ITEMS} items)",
                     way_out="Use fewer items.")
        sample_bytes = (SAMPLE_BYTES_PER_LABEL * kept + N_CLUSTERS_BYTES_PER_ITEM) * sum(sizes)
        held_bytes, held_what = beside
        samples = f"the {kept:,} kept samples of {shape} items"
        if summaries or held_bytes:
            samples += f" ({format_bytes(sample_bytes)})"
        if summaries:
            samples += f" and their summaries ({format_bytes(summaries)})"
        if held_bytes:
            samples += f", beside {held_what} ({format_bytes(held_bytes)})"
        check_memory(sample_bytes + summaries + held_bytes, samples,
                     way_out="Raise thin, lower n_sweeps or n_chains, or use fewer items.")

    def _n_stored_samples(self):
        """Kept samples of the previous fit (continued by a warm start)."""
        return self._chains.samples.shape[0]

    def _point_estimate_memory(self, n_items, n_kept):
        """Bytes the point estimate allocates beyond the samples and the pairwise
        marginals, and the advice that lifts them (``(0, None)``: none).

        The pairwise losses hold an (n, n) co-clustering matrix; ``'map'``, one sample
        or more than ``MAX_LOSS_ESTIMATE_ITEMS`` items take the best sample instead.
        """
        if (getattr(self, "point_estimate", "map") in PAIRWISE_LOSSES and n_kept > 1
                and n_items <= MAX_LOSS_ESTIMATE_ITEMS):
            return 8 * n_items * n_items, "Use point_estimate='map' (no N x N matrix)."
        return 0, None

    def _store_chains(self, results, likelihood, prior, *, record=None, warm=False,
                      method="gibbs"):
        """Pool the chains into the fitted attributes (appended to the stored ones when
        ``warm == 'continue'``; a ``'restart'`` on new data drops the old samples).
        ``method`` is the sampler's name for ``method_`` (``'gibbs'``, ``'subcluster'``).

        Sets ``samples_``, ``log_joints_``, ``pairwise_marginals_``,
        :meth:`_set_method`'s attributes and
        ``n_clusters_distribution_``; returns the :class:`ChainSamples`.
        """
        chains = collect_chains(results, likelihood, prior, record=record,
                                previous=self._chains if warm == "continue" else None)
        self._chains = chains
        self.samples_ = chains.samples
        self.log_joints_ = chains.log_joints
        self._set_method(method, n_kept=self.samples_.shape[0], n_chains=len(chains.states),
                         interrupted=chains.interrupted)
        n = self.samples_.shape[1]
        self.pairwise_marginals_ = (pairwise_cooccurrence(self.samples_)
                                    if n <= MAX_PAIRWISE_ITEMS else None)
        self.n_clusters_distribution_ = n_clusters_frequencies(self.samples_, n)
        return chains

    def _best_sample(self):
        """Index of the kept sample of highest ``log_joints_`` (the sampled MAP)."""
        return int(np.argmax(self.log_joints_))

    # -- posterior predictive (the subclass's ``_predictive(X)`` yields, per picked kept
    #    sample, its labels and the new items' log weights of each cluster and a new one)

    def _mean_predictive_proba(self, X, *, weighted=False, sample_log_terms=None):
        """Each picked sample's cluster probabilities on the columns of ``labels_`` + new,
        averaged: uniformly, or (``weighted``) with each sample weighted by its
        predictive density of the row, ``p(x | z_s, X)`` (the normaliser of its
        log weights, plus ``sample_log_terms[s]`` when given: the terms of that
        density the log weights leave out, shape (samples, rows)), which makes the
        average a self-normalised estimate of the posterior given the row too,
        ``P(x joins k | X, x)``: the quantity an exact fit reports."""
        K = self.n_clusters_
        total = None
        n_used = 0
        per_sample, log_densities = [], []
        for labels, logw in self._predictive(X):
            with np.errstate(invalid="ignore"):
                normaliser = logsumexp(logw, axis=1, keepdims=True)
            # 0 / 0: float64 holds no density of that row under any cluster
            _refuse_rows_without_density(~np.isfinite(normaliser[:, 0]))
            probs = np.exp(logw - normaliser)
            mapped = to_fitted_columns(probs, labels, self.labels_, K)
            if weighted:
                per_sample.append(mapped)
                log_densities.append(normaliser[:, 0])
                continue
            total = mapped if total is None else total + mapped
            n_used += 1
        if not weighted:
            return total / n_used
        log_densities = np.array(log_densities)              # (samples, rows)
        if sample_log_terms is not None:
            log_densities = log_densities + sample_log_terms
        weights = np.exp(log_densities - log_densities.max(axis=0))
        weights /= weights.sum(axis=0)
        return np.einsum("sr,srk->rk", weights, np.array(per_sample))

    def _mean_predictive_log_density(self, X):
        """``log`` of the predictive density averaged over the picked samples."""
        per_sample = [logsumexp(logw, axis=1) for _, logw in self._predictive(X)]
        density = logsumexp(np.array(per_sample), axis=0) - np.log(len(per_sample))
        _refuse_rows_without_density(np.isnan(density))   # -inf (underflow) is an answer
        return density
