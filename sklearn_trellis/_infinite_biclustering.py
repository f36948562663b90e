"""``InfiniteBiclustering``: Dirichlet-process co-clustering of rows and columns."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, BiclusterMixin, _fit_context
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, validate_data

from ._gibbs_base import fingerprint
from .engines.exact.bicluster import ExactBiclusterPosterior, bell
from .engines.exact.binder import bayes_estimate
from .engines.gibbs import bicluster as engine
from .models import CELL_MODELS, make_cell_model
from .models.cells import _CellModel
from .models.priors import CRP, GammaHyperprior
from .summaries.occurrence import pairwise_cooccurrence
from .summaries.point_estimates import LOSSES, point_estimate as _loss_point_estimate

#: ``method='auto'`` enumerates exactly up to this many (row partition, column partition)
#: pairs, ``Bell(n_rows) * Bell(n_columns)`` (6 x 5: 10,556).
AUTO_EXACT_PAIRS = 20_000
#: Largest number of rows / columns whose pairwise marginals (an n x n matrix) are stored.
MAX_PAIRWISE_ITEMS = 3000
#: Largest number of rows / columns for the loss-based point estimate (else the MAP sample).
MAX_LOSS_ESTIMATE_ITEMS = 10_000
#: Clusters of ``init='kmeans'`` on each side.
KMEANS_INIT_CLUSTERS = 10


def _first_appearance(labels):
    """Labels ``0..K-1`` numbered in order of first appearance."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


class InfiniteBiclustering(BiclusterMixin, BaseEstimator):
    """Dirichlet-process biclustering (the infinite relational model of one data matrix).

    Each row ``i`` has a cluster ``r_i`` and each column ``j`` a cluster
    ``c_j``, both with Chinese-restaurant-process priors (concentrations
    ``alpha_rows``, ``alpha_columns``), and the entries of every block
    ``(a, b)`` are i.i.d. draws from ``p(x | theta_ab)`` with a conjugate prior
    on ``theta_ab`` (Murphy, Eq. 37; Kemp et al. 2006). The block parameters
    are integrated out and the partitions are sampled by collapsed Gibbs
    sampling on the shared Gibbs engine: row sweeps given the column clusters,
    column sweeps given the row clusters, each with split-merge moves; tiny
    matrices are enumerated exactly. Unlike ``SpectralCoclustering`` /
    ``SpectralBiclustering``, the numbers of clusters are not given: they are
    inferred, with their uncertainty.

    Parameters
    ----------
    cells : {'normal', 'bernoulli', 'poisson', 'categorical'} or cell model, default='normal'
        The model of the entries of a block
        (:mod:`sklearn_trellis.models.cells`): Normal-Gamma for reals,
        Beta-Bernoulli for 0/1, Poisson-Gamma for counts, Dirichlet-categorical
        for codes ``0..k-1``; or an instance (hyperparameters tunable as
        ``cells__<name>``). Its hyperparameters left at ``None`` are learned on
        grids (units-free defaults from all observed entries).
    alpha_rows, alpha_columns : float, default=1.0
        CRP concentrations of the row and column partitions (starting values
        when ``alpha_prior`` is set).
    alpha_prior : tuple (shape, rate), default=None
        Gamma hyperprior on both concentrations, each redrawn every sweep
        (Escobar-West).
    n_sweeps : int, default=200
        Gibbs sweeps per chain (each: a row half-sweep and a column half-sweep,
        each a Gibbs scan plus ``n_split_merge`` split-merge proposals). In exact
        mode, the number of exact draws stored in the samples.
    burn_in : int, default=None
        Sweeps discarded at the start of each chain; ``None``: ``n_sweeps // 2``.
    thin : int, default=1
        Keep every ``thin``-th sweep after the burn-in.
    n_chains : int, default=1
        Independent chains (seeds drawn from ``random_state``).
    n_jobs : int, default=None
        Chains in parallel through joblib.
    method : {'auto', 'gibbs', 'exact'}, default='auto'
        ``'exact'`` enumerates all row partitions x column partitions
        (``Bell(n_rows) * Bell(n_columns) <= 200,000``); ``'auto'`` does so
        up to 20,000 pairs (6 rows x 5 columns) without ``alpha_prior``.
    init : {'kmeans', 'one', 'singletons', 'random'} or tuple of two arrays, default='kmeans'
        Starting partitions of every chain: k-means with 10 clusters on the
        rows and on the columns (missing entries filled with column means for
        the k-means only), one cluster, all singletons, random labels among
        ``sqrt(n)``, or ``(row_labels, column_labels)``.
    n_split_merge : int, default=10
        Split-merge proposals per half-sweep.
    point_estimate : {'vi', 'binder', 'omari', 'nvi', 'nid', 'omari_approx', 'vi_lb', 'map'}, \
default='vi'
        How ``row_labels_`` and ``column_labels_`` summarise the posterior: the
        row (column) partition of smallest posterior expected loss
        (:func:`~sklearn_trellis.summaries.point_estimate`, rows and columns
        separately), or ``'map'``, the pair of highest ``p(r, c, X)``.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    warm_start : bool, default=False
        Continue the stored chains for ``n_sweeps`` more sweeps (no burn-in)
        when ``fit`` is called again on the same data, appending the samples.
        On other data of the same shape the fit starts afresh (the chains'
        statistics belong to the old data); another shape is refused.

    Attributes
    ----------
    rows_, columns_ : ndarray of shape (n_biclusters, n_rows) / (n_biclusters, n_columns)
        Every block (row cluster ``a``, column cluster ``b``) of the point
        estimate is a bicluster, at index ``a * n_column_clusters_ + b`` (the
        checkerboard convention of ``SpectralBiclustering``).
    row_labels_, column_labels_ : ndarray
        The point estimates, labels ``0..K-1`` in order of first appearance.
    n_row_clusters_, n_column_clusters_ : int
    row_samples_, column_samples_ : ndarray of int32, shape (n_kept, n_rows) / (n_kept, n_columns)
        Kept samples of all chains (exact mode: exact draws); row ``t`` of both is one joint sample.
    log_joints_ : ndarray of shape (n_kept,)
        ``log p(r, c, X)`` of each sample (at its hyperparameters; exact mode:
        the grid summed out).
    row_pairwise_marginals_, column_pairwise_marginals_ : ndarray or None
        Posterior co-clustering probabilities (exact, or sample frequencies);
        None above 3000 rows / columns.
    alphas_rows_, alphas_columns_ : ndarray of shape (n_kept,)
    hyperparameters_ : dict of ndarray or None
        The cell model's learned hyperparameters at each Gibbs sample (None in
        exact mode, which sums over them, or when they are fixed).
    log_marginal_likelihood_ : float or None
        Exact mode: ``log p(X)``. Gibbs: None.
    cells_ : fitted cell model
    method_ : str
    interrupted_ : bool
    n_features_in_ : int

    References
    ----------
    C. Kemp, J. B. Tenenbaum, T. L. Griffiths, T. Yamada, N. Ueda. Learning
    systems of concepts with an infinite relational model. AAAI 2006.
    K. P. Murphy. Machine Learning: A Probabilistic Perspective, 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import InfiniteBiclustering
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(scale=0.3, size=(30, 20))
    >>> X[:15, :10] += 3.0
    >>> X[15:, 10:] -= 3.0
    >>> model = InfiniteBiclustering(n_sweeps=40, random_state=0).fit(X)
    >>> model.n_row_clusters_, model.n_column_clusters_
    (2, 2)
    >>> model.row_labels_[:3], model.row_labels_[-3:]
    (array([0, 0, 0]), array([1, 1, 1]))
    >>> model.get_shape(0)
    (15, 10)
    """

    _parameter_constraints: dict = {
        "cells": [StrOptions(set(CELL_MODELS)), _CellModel],
        "alpha_rows": [Interval(Real, 0, None, closed="neither")],
        "alpha_columns": [Interval(Real, 0, None, closed="neither")],
        "alpha_prior": ["array-like", None],
        "n_sweeps": [Interval(Integral, 1, None, closed="left")],
        "burn_in": [Interval(Integral, 0, None, closed="left"), None],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "method": [StrOptions({"auto", "gibbs", "exact"})],
        "init": [StrOptions({"kmeans", "one", "singletons", "random"}), tuple],
        "n_split_merge": [Interval(Integral, 0, None, closed="left")],
        "point_estimate": [StrOptions({"map", *LOSSES})],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None, closed="left")],
        "warm_start": ["boolean"],
    }

    def __init__(self, cells="normal", alpha_rows=1.0, alpha_columns=1.0, alpha_prior=None,
                 n_sweeps=200, burn_in=None, thin=1, n_chains=1, n_jobs=None, method="auto",
                 init="kmeans", n_split_merge=10, point_estimate="vi", random_state=None,
                 verbose=0, warm_start=False):
        self.cells = cells
        self.alpha_rows = alpha_rows
        self.alpha_columns = alpha_columns
        self.alpha_prior = alpha_prior
        self.n_sweeps = n_sweeps
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.method = method
        self.init = init
        self.n_split_merge = n_split_merge
        self.point_estimate = point_estimate
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # -- validation ------------------------------------------------------------------
    def _hyperprior(self):
        if self.alpha_prior is None:
            return None
        if len(self.alpha_prior) != 2:
            raise ValueError("alpha_prior must be a (shape, rate) pair.")
        return GammaHyperprior(*self.alpha_prior)

    def _check_burn_in(self):
        if self.burn_in is not None and self.burn_in >= self.n_sweeps:
            raise ValueError(f"burn_in must be < n_sweeps={self.n_sweeps}, got {self.burn_in}.")

    def _init_side(self, X, option, rng):
        n = X.shape[0]
        if option == "one":
            return np.zeros(n, np.int64)
        if option == "singletons":
            return np.arange(n, dtype=np.int64)
        if option == "random":
            return rng.randint(max(1, int(np.sqrt(n))), size=n).astype(np.int64)
        observed = ~np.isnan(X)
        # column means of the observed entries (0 for an all-missing column), for k-means only
        means = np.where(observed, X, 0.0).sum(axis=0) / np.maximum(observed.sum(axis=0), 1)
        filled = np.where(observed, X, means)
        k = min(KMEANS_INIT_CLUSTERS, np.unique(filled, axis=0).shape[0])
        return KMeans(n_clusters=k, n_init=1, random_state=rng.randint(2**31 - 1)).fit(
            filled).labels_.astype(np.int64)

    def _init_labels(self, X, rng):
        if isinstance(self.init, tuple):
            if len(self.init) != 2:
                raise ValueError("init must be a (row_labels, column_labels) pair.")
            out = []
            for labels, size, side in zip(self.init, X.shape, ("row", "column")):
                labels = np.asarray(labels)
                if labels.shape != (size,) or not np.issubdtype(labels.dtype, np.integer):
                    raise ValueError(f"init {side} labels must be an integer array of shape "
                                     f"({size},).")
                out.append(labels.astype(np.int64))
            return tuple(out)
        return self._init_side(X, self.init, rng), self._init_side(X.T, self.init, rng)

    # -- fitting ------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample (or enumerate) the posterior over row and column partitions of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_columns)
            NaN entries are missing (marginalised).
        y : Ignored

        Returns
        -------
        self : InfiniteBiclustering
        """
        self._check_burn_in()
        hyperprior = self._hyperprior()
        warm = bool(self.warm_start) and getattr(self, "_states", None) is not None
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan",
                          reset=not warm)
        if warm and X.shape != self._shape:
            raise ValueError(f"warm_start needs data of the previous shape {self._shape}, got "
                             f"{X.shape}.")
        # The stored chains' block statistics belong to the data they ran on: on other
        # data a warm start would score it with stale statistics, so it starts afresh.
        warm = warm and fingerprint(X) == getattr(self, "_data_fingerprint", None)
        rng = check_random_state(self.random_state)
        if not warm:
            self.cells_ = make_cell_model(self.cells).fit(X)
        else:
            self.cells_.check_values(X)
        self.row_prior_ = CRP(self.alpha_rows)
        self.column_prior_ = CRP(self.alpha_columns)
        n, d = X.shape
        exact = self.method == "exact" or (
            self.method == "auto" and not warm and hyperprior is None
            and bell(n) * bell(d) <= AUTO_EXACT_PAIRS)
        if exact:
            if hyperprior is not None:
                raise ValueError("method='exact' needs fixed concentrations (alpha_prior=None).")
            self._fit_exact(X, rng)
        else:
            self._fit_gibbs(X, rng, hyperprior, warm)
        self._shape = X.shape
        self._data_fingerprint = fingerprint(X)
        self._set_biclusters()
        return self

    def _fit_exact(self, X, rng):
        posterior = ExactBiclusterPosterior(self.cells_, self.row_prior_,
                                            self.column_prior_).fit(X)
        self.method_ = "exact"
        self.log_marginal_likelihood_ = posterior.log_marginal_likelihood
        rows, columns, log_joints = posterior.sample(self.n_sweeps, rng)
        self.row_samples_ = rows.astype(np.int32)
        self.column_samples_ = columns.astype(np.int32)
        self.log_joints_ = log_joints
        self.alphas_rows_ = np.full(self.n_sweeps, float(self.alpha_rows))
        self.alphas_columns_ = np.full(self.n_sweeps, float(self.alpha_columns))
        self.row_pairwise_marginals_ = posterior.row_pairwise_marginals()
        self.column_pairwise_marginals_ = posterior.column_pairwise_marginals()
        self.hyperparameters_ = None
        self.interrupted_ = False
        self._states = None
        if self.point_estimate == "map":
            self.row_labels_, self.column_labels_ = (labels.astype(np.int64)
                                                     for labels in posterior.map_pair())
        else:
            self.row_labels_, self.column_labels_ = (
                bayes_estimate(self.point_estimate, pairwise=pairwise, samples=samples,
                               exact=True, random_state=rng.randint(2**31 - 1)).astype(np.int64)
                for pairwise, samples in ((self.row_pairwise_marginals_, self.row_samples_),
                                          (self.column_pairwise_marginals_,
                                           self.column_samples_)))

    def _fit_gibbs(self, X, rng, hyperprior, warm):
        data = np.ascontiguousarray(X)
        data_t = np.ascontiguousarray(X.T)
        blocks = engine.make_blocks(self.cells_, data, data_t)
        burn_in = 0 if warm else (self.n_sweeps // 2 if self.burn_in is None else self.burn_in)
        kwargs = dict(n_sweeps=self.n_sweeps, burn_in=burn_in, thin=self.thin,
                      n_split_merge=self.n_split_merge, hyperprior=hyperprior,
                      verbose=self.verbose)
        if warm:
            results = engine.run_bicluster_chains(
                blocks, data, data_t, self.row_prior_, self.column_prior_,
                n_chains=len(self._states), n_jobs=self.n_jobs, random_state=rng,
                states=list(self._states), **kwargs)
        else:
            results = engine.run_bicluster_chains(
                blocks, data, data_t, self.row_prior_, self.column_prior_,
                n_chains=self.n_chains, n_jobs=self.n_jobs, random_state=rng,
                init_labels=self._init_labels(X, rng), **kwargs)
        fields = ("row_samples", "column_samples", "log_joints", "alphas_rows",
                  "alphas_columns", "cell_params")
        pooled = {name: [getattr(r, name) for r in results] for name in fields}
        if warm:
            for name in fields:
                pooled[name].insert(0, self._pooled[name])
        pooled = {name: np.concatenate(values) for name, values in pooled.items()}
        if pooled["row_samples"].shape[0] == 0:   # Ctrl-C before the burn-in ended
            states = [r.state for r in results]
            pooled["row_samples"] = np.array([s.row_labels for s in states], np.int32)
            pooled["column_samples"] = np.array([s.column_labels for s in states], np.int32)
            pooled["log_joints"] = np.array([engine.bicluster_log_joint(
                blocks[0], data, s, self.row_prior_, self.column_prior_) for s in states])
            pooled["alphas_rows"] = np.array([s.alpha_rows for s in states])
            pooled["alphas_columns"] = np.array([s.alpha_columns for s in states])
            pooled["cell_params"] = np.array([s.cell_params for s in states])
        self._pooled = pooled
        self._states = [r.state for r in results]
        self.method_ = "gibbs"
        self.interrupted_ = any(r.interrupted for r in results)
        self.log_marginal_likelihood_ = None
        self.row_samples_ = pooled["row_samples"]
        self.column_samples_ = pooled["column_samples"]
        self.log_joints_ = pooled["log_joints"]
        self.alphas_rows_ = pooled["alphas_rows"]
        self.alphas_columns_ = pooled["alphas_columns"]
        self.hyperparameters_ = (self.cells_.describe_params(pooled["cell_params"])
                                 if self.cells_.resamples_hyperparameters else None)
        self.row_pairwise_marginals_ = (pairwise_cooccurrence(self.row_samples_)
                                        if X.shape[0] <= MAX_PAIRWISE_ITEMS else None)
        self.column_pairwise_marginals_ = (pairwise_cooccurrence(self.column_samples_)
                                           if X.shape[1] <= MAX_PAIRWISE_ITEMS else None)
        best = int(np.argmax(self.log_joints_))
        labels = []
        for samples in (self.row_samples_, self.column_samples_):
            if (self.point_estimate == "map" or samples.shape[0] == 1
                    or samples.shape[1] > MAX_LOSS_ESTIMATE_ITEMS):
                labels.append(samples[best].astype(np.int64))
            else:
                labels.append(_loss_point_estimate(
                    samples, loss=self.point_estimate, n_runs=0,
                    random_state=rng.randint(2**31 - 1)).astype(np.int64))
        self.row_labels_, self.column_labels_ = labels

    def get_submatrix(self, i, data):
        """The submatrix of ``data`` (NaN entries allowed) of bicluster ``i``.

        Parameters
        ----------
        i : int
        data : array-like of shape (n_rows, n_columns)

        Returns
        -------
        submatrix : ndarray of shape (n_rows_i, n_columns_i)
        """
        data = check_array(data, ensure_all_finite="allow-nan")
        row_ind, col_ind = self.get_indices(i)
        return data[row_ind[:, np.newaxis], col_ind]

    def _set_biclusters(self):
        """``rows_`` / ``columns_``: every (row cluster, column cluster) block is a bicluster."""
        self.row_labels_ = _first_appearance(self.row_labels_)
        self.column_labels_ = _first_appearance(self.column_labels_)
        self.n_row_clusters_ = int(self.row_labels_.max()) + 1
        self.n_column_clusters_ = int(self.column_labels_.max()) + 1
        row_sets = self.row_labels_[None, :] == np.arange(self.n_row_clusters_)[:, None]
        column_sets = (self.column_labels_[None, :]
                       == np.arange(self.n_column_clusters_)[:, None])
        self.rows_ = np.repeat(row_sets, self.n_column_clusters_, axis=0)
        self.columns_ = np.tile(column_sets, (self.n_row_clusters_, 1))


__all__ = ["InfiniteBiclustering"]
