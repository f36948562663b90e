"""The shared base of the Gibbs estimators (``DPMixture``, ``FastTIWD``).

Modelled on scikit-learn's ``_BaseKMeans``: the parameters both estimators
have, their constraints, and the steps every fit shares (warm-start
bookkeeping, choosing exact or Gibbs inference, pooling the chains, the
sample summaries). The subclasses build their model and call the engines.
"""

import hashlib
from numbers import Integral

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils._param_validation import Interval, StrOptions

from ._core.budget import check_memory
from .engines.gibbs.chains import collect_chains, n_clusters_frequencies
from .summaries.occurrence import pairwise_cooccurrence

#: Largest n for which ``pairwise_marginals_`` (an n x n matrix) is stored.
MAX_PAIRWISE_ITEMS = 3000

#: Kept samples (evenly spaced) that the predictive distributions average over.
MAX_PREDICTIVE_SAMPLES = 25


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


def fingerprint(X):
    """A digest of an array's shape, dtype and bytes: tells the same data from new data."""
    X = np.ascontiguousarray(X)
    digest = hashlib.blake2b(X.view(np.uint8).ravel(), digest_size=16).hexdigest()
    return (X.shape, X.dtype.str, digest)


class _BaseGibbs(ClusterMixin, BaseEstimator):
    """Base class of the estimators that sample partitions with the collapsed Gibbs engine.

    Subclasses add their parameters to ``_parameter_constraints`` (including
    ``init``, whose options differ) and implement ``fit``.
    """

    _parameter_constraints: dict = {
        "n_sweeps": [Interval(Integral, 1, None, closed="left")],
        "burn_in": [Interval(Integral, 0, None, closed="left"), None],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "method": [StrOptions({"auto", "gibbs", "exact"})],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "max_exact_size": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, n_sweeps, burn_in, thin, n_chains, n_jobs, method, init,
                 random_state, verbose, warm_start, max_exact_size):
        self.n_sweeps = n_sweeps
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.method = method
        self.init = init
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.max_exact_size = max_exact_size

    # -- steps of fit ------------------------------------------------------------
    def _check_burn_in(self):
        """The cross-parameter check of ``burn_in`` (the constraints check each alone)."""
        if self.burn_in is not None and self.burn_in >= self.n_sweeps:
            raise ValueError(f"burn_in must be < n_sweeps={self.n_sweeps}, got {self.burn_in}.")

    def _has_chains(self):
        """True when ``warm_start`` is on and a Gibbs fit left chains to start from."""
        return bool(self.warm_start) and getattr(self, "_chains", None) is not None

    def _warm_start_mode(self, X):
        """How this fit uses the stored chains (``warm_start`` after a Gibbs fit).

        ``None``: a cold start. ``'continue'``: ``X`` is the data of the last
        fit, the stored chains go on and their samples are kept.
        ``'restart'``: new data; the chains' last states only *initialise* new
        chains (statistics recomputed from ``X``, a burn-in, old samples
        dropped), as scikit-learn's ``warm_start`` reuses a solution as an
        initialisation. ``X`` is the validated data; call before
        :meth:`_remember_data`.
        """
        if not self._has_chains():
            return None
        if fingerprint(X) == getattr(self, "_data_fingerprint", None):
            return "continue"
        n_before = self._chains.samples.shape[1]
        if np.shape(X)[0] != n_before:
            raise ValueError(f"warm_start needs the same number of samples as the previous "
                             f"fit ({n_before}), got {np.shape(X)[0]}; set warm_start=False "
                             "to start afresh.")
        return "restart"

    def _remember_data(self, X):
        """Keep a fingerprint of the data of this fit (not the data: no reference to ``X``)."""
        self._data_fingerprint = fingerprint(X)

    def _burn_in(self, warm):
        """Sweeps to discard: none when continuing chains, else ``burn_in`` (default half)."""
        if warm == "continue" or warm is True:
            return 0
        return self.n_sweeps // 2 if self.burn_in is None else self.burn_in

    def _use_exact(self, n_samples, exact_possible):
        """``method='exact'``, or ``'auto'`` when exact inference applies to ``n_samples``."""
        return self.method == "exact" or (
            self.method == "auto" and exact_possible and n_samples <= self.max_exact_size)

    def _check_exact_size(self, n_samples):
        if n_samples > self.max_exact_size:
            raise ValueError(f"method='exact' needs n_samples <= max_exact_size="
                             f"{self.max_exact_size}, got {n_samples}.")

    def _check_samples_memory(self, n_items, n_chains, warm):
        """Refuse before sampling when the kept samples (int32, plus the co-clustering
        matrix for ``n <= MAX_PAIRWISE_ITEMS``) would not fit in the memory available."""
        kept = n_chains * -(-(self.n_sweeps - self._burn_in(warm)) // self.thin)
        if warm == "continue":
            kept += self._chains.samples.shape[0]
        n_bytes = 4 * kept * n_items + (8 * n_items * n_items
                                        if n_items <= MAX_PAIRWISE_ITEMS else 0)
        check_memory(n_bytes, f"the {kept:,} kept samples of {n_items:,} items",
                     way_out="Raise thin, lower n_sweeps or n_chains, or use fewer items.")

    def _store_chains(self, results, likelihood, prior, *, record=None, warm=False):
        """Pool the chains into the fitted attributes (appended to the stored ones when
        ``warm == 'continue'``; a ``'restart'`` on new data drops the old samples).

        Sets ``samples_``, ``log_joints_``, ``interrupted_``, ``method_``,
        ``log_marginal_likelihood_`` (None), ``pairwise_marginals_`` and
        ``n_clusters_distribution_``; returns the :class:`ChainSamples`.
        """
        chains = collect_chains(results, likelihood, prior, record=record,
                                previous=self._chains if warm == "continue" else None)
        self._chains = chains
        self.interrupted_ = chains.interrupted
        self.method_ = "gibbs"
        self.samples_ = chains.samples
        self.log_joints_ = chains.log_joints
        self.log_marginal_likelihood_ = None
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

    def _mean_predictive_proba(self, X):
        """Each picked sample's cluster probabilities on the columns of ``labels_`` + new, averaged."""
        K = self.n_clusters_
        total = None
        n_used = 0
        for labels, logw in self._predictive(X):
            probs = np.exp(logw - logsumexp(logw, axis=1, keepdims=True))
            mapped = to_fitted_columns(probs, labels, self.labels_, K)
            total = mapped if total is None else total + mapped
            n_used += 1
        return total / n_used

    def _mean_predictive_log_density(self, X):
        """``log`` of the predictive density averaged over the picked samples."""
        per_sample = [logsumexp(logw, axis=1) for _, logw in self._predictive(X)]
        return logsumexp(np.array(per_sample), axis=0) - np.log(len(per_sample))
