"""``InfiniteBiclustering``: Dirichlet-process co-clustering of rows and columns."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BiclusterMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted

from ._core.compilation import announces_compilation
from ._core.labels import first_appearance_labels
from ._core.validation import check_random_state, validate_kernel_data
from ._gibbs_base import (KMEANS_INIT_CLUSTERS, MAX_LOSS_ESTIMATE_ITEMS, MAX_PAIRWISE_ITEMS,
                          _BaseGibbs, _refuse_rows_without_density, check_given_labels,
                          gamma_hyperprior, initial_labels, observed_nothing_scores_zero,
                          predictive_picks)
from .engines.exact.bicluster import ExactBiclusterPosterior, bell
from .engines.exact.binder import bayes_estimate
from .engines.gibbs import bicluster as engine
from .models import CELL_MODELS, CellModel, make_cell_model
from .models.column_types import infer_cell_type
from .models.priors import CRP
from .summaries.occurrence import pairwise_cooccurrence
from .summaries.point_estimates import LOSSES, ClusterMarginals
from .summaries.point_estimates import point_estimate as _loss_point_estimate

#: Beyond this many rows (or columns) a side has more partitions than any exact run can
#: enumerate (Bell(25) > 4e18), so ``Bell`` is not computed (it costs O(n**2) big integers).
_BELL_CAP = 25


def partition_pairs(n_rows, n_columns):
    """``Bell(n_rows) * Bell(n_columns)``: the size of the exact enumeration (capped)."""
    return bell(min(n_rows, _BELL_CAP)) * bell(min(n_columns, _BELL_CAP))


class InfiniteBiclustering(BiclusterMixin, _BaseGibbs):
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
    likelihood : {'auto', 'normal', 'bernoulli', 'poisson', 'categorical'} or cell model, \
default='auto'
        The model of the entries of a block
        (:mod:`sklearn_trellis.models.cells`): Normal-Gamma for reals,
        Beta-Bernoulli for 0/1, Poisson-Gamma for counts, Dirichlet-categorical
        for codes ``0..k-1``; or an instance (hyperparameters tunable as
        ``likelihood__<name>``). ``'auto'`` infers the type from the observed
        entries as ``CrossCat`` does for a column: all in {0, 1} -> bernoulli,
        non-negative integers below 10 -> categorical (codes as given), other
        numbers -> normal. Normal cells on 0/1 data over-split: blocks of equal
        values have unbounded density as their variance goes to 0 (see
        :class:`~sklearn_trellis.models.cells.NormalCells`). Hyperparameters
        left at ``None`` are learned on grids (units-free defaults from all
        observed entries).
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
        ``'exact'`` enumerates all row partitions x column partitions (at most
        ``Bell(n_rows) * Bell(n_columns) = 200,000`` pairs, fixed
        concentrations), ``'gibbs'`` samples them; ``'auto'`` is exact without
        ``alpha_prior``, outside a warm start and up to ``max_exact_size`` pairs.
    max_exact_size : int, default=20_000
        The size of the largest problem ``'auto'`` solves exactly; the size is
        the number of (row partition, column partition) pairs,
        ``Bell(n_rows) * Bell(n_columns)`` (6 rows x 5 columns: 10,556).
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
        separately), or ``'map'``, the pair of highest ``p(r, c, X)``. Exact
        mode: Binder and VI minimised exactly (from the exact pairwise and
        cluster marginals; the same whatever ``random_state``); ``'omari'``,
        ``'nvi'`` and ``'nid'`` searched on the exact draws (``approximation_``
        then says so).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    warm_start : bool, default=False
        If True and a Gibbs fit came before, its chains go on. On the same data
        ``fit`` continues them for ``n_sweeps`` more sweeps (no burn-in) and
        appends the new samples. On new data of the same shape the cell model
        is refitted and every block statistic recomputed from the new ``X``;
        each chain restarts from its last row and column partitions and
        concentrations, runs a burn-in, and the samples of the old data are
        dropped. Data of another shape raises a ValueError.

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
    model_ : fitted cell model
        The cell model of ``likelihood`` (``'auto'`` resolved) fitted to ``X``.
    method_ : str
        ``'exact'`` or ``'gibbs'``.
    approximation_ : str or None
        None for an exact fit whose point estimates are exact Bayes estimates
        (or the MAP); for an exact fit whose point estimate is searched on the
        draws or is a local minimum, says so (every other output is exact);
        for a Gibbs fit, says so ("Gibbs sampling: ..." with the number of
        kept samples and chains).
    interrupted_ : bool
    n_features_in_ : int

    Notes
    -----
    ``score`` is the mean log posterior predictive density of held-out rows
    (:meth:`score_samples` per row), each a new row of the fitted matrix: it
    joins a row cluster or a new one by the CRP's predictive weights and its
    cells are predicted block by block given the column partition. Every term
    that depends on ``alpha_rows``, ``alpha_columns`` or the cell priors is in
    it, so ``GridSearchCV`` with its default scoring chooses them. Exact fits
    compute it exactly (``log p(X + x) - log p(X)``, the cell hyperparameters'
    grid summed out); Gibbs fits average over up to 25 kept samples. Exact fits
    also report the evidence ``log_marginal_likelihood_``, and Gibbs fits can
    learn both concentrations with ``alpha_prior``.

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

    Held-out rows are scored by their predictive density; on a tiny matrix
    (exact mode) the score of a row is the evidence it adds:

    >>> from sklearn_trellis.models.cells import NormalCells
    >>> cells = NormalCells(kappa=0.1, mean_prior=0.0, variance_prior=1.0)
    >>> small, row = X[:4, :3], X[4:5, :3]
    >>> fitted = InfiniteBiclustering(cells, random_state=0).fit(small)
    >>> both = InfiniteBiclustering(cells, random_state=0).fit(np.vstack([small, row]))
    >>> gain = both.log_marginal_likelihood_ - fitted.log_marginal_likelihood_
    >>> bool(np.isclose(fitted.score(row), gain, rtol=0, atol=1e-10))
    True
    """

    _nested_models = {"likelihood": "NormalCells()"}
    _parameter_constraints: dict = {
        **_BaseGibbs._parameter_constraints,
        "likelihood": [StrOptions({"auto", *CELL_MODELS}), CellModel],
        "alpha_rows": [Interval(Real, 0, None, closed="neither")],
        "alpha_columns": [Interval(Real, 0, None, closed="neither")],
        "alpha_prior": ["array-like", None],
        "init": [StrOptions({"kmeans", "one", "singletons", "random"}), tuple],
        "n_split_merge": [Interval(Integral, 0, None, closed="left")],
        "point_estimate": [StrOptions({"map", *LOSSES})],
    }

    def __init__(self, likelihood="auto", *, alpha_rows=1.0, alpha_columns=1.0,
                 alpha_prior=None, n_sweeps=200, burn_in=None, thin=1, n_chains=1, n_jobs=None,
                 method="auto", max_exact_size=20_000, init="kmeans", n_split_merge=10,
                 point_estimate="vi", random_state=None, verbose=0, warm_start=False):
        super().__init__(n_sweeps=n_sweeps, burn_in=burn_in, thin=thin, n_chains=n_chains,
                         n_jobs=n_jobs, method=method, max_exact_size=max_exact_size,
                         random_state=random_state, verbose=verbose, warm_start=warm_start)
        self.likelihood = likelihood
        self.alpha_rows = alpha_rows
        self.alpha_columns = alpha_columns
        self.alpha_prior = alpha_prior
        self.init = init
        self.n_split_merge = n_split_merge
        self.point_estimate = point_estimate

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # -- validation ------------------------------------------------------------------
    def _init_side(self, X, rng):
        if self.init != "kmeans":
            return initial_labels(self.init, X, rng)
        observed = ~np.isnan(X)
        # column means of the observed entries (0 for an all-missing column), for k-means only
        means = np.where(observed, X, 0.0).sum(axis=0) / np.maximum(observed.sum(axis=0), 1)
        filled = np.where(observed, X, means)
        magnitude = float(np.max(np.abs(filled))) if filled.size else 0.0
        if magnitude > 0:   # k-means squares distances: by a power of two to O(1) values
            filled = filled / np.ldexp(1.0, int(np.frexp(magnitude)[1]))
        k = min(KMEANS_INIT_CLUSTERS, np.unique(filled, axis=0).shape[0])
        return initial_labels("kmeans", filled, rng, kmeans_clusters=k, n_jobs=self.n_jobs)

    def _init_labels(self, X, rng):
        if isinstance(self.init, tuple):
            if len(self.init) != 2:
                raise ValueError("init must be a (row_labels, column_labels) pair.")
            return tuple(check_given_labels(labels, size, f"init {side}")
                         for labels, size, side in zip(self.init, X.shape, ("row", "column")))
        return self._init_side(X, rng), self._init_side(X.T, rng)

    # -- fitting ------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
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
        hyperprior = gamma_hyperprior(self.alpha_prior)
        self._check_warm_shape(np.shape(X))
        X = validate_kernel_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan",
                                 reset=not self._has_chains())
        if np.isnan(X).all():   # 'auto' would infer a type from no value at all
            raise ValueError(f"X has no observed cell (all {X.size} entries are NaN): "
                             "there is nothing to cluster.")
        warm = self._warm_start_mode(X)
        rng = check_random_state(self.random_state)
        if warm == "continue":
            self.model_.check_values(X)
        else:  # the data-dependent hyperparameter grids follow the new data
            likelihood = infer_cell_type(X) if self.likelihood == "auto" else self.likelihood
            self.model_ = make_cell_model(likelihood).fit(X)
        self.row_prior_ = CRP(self.alpha_rows)
        self.column_prior_ = CRP(self.alpha_columns)
        if self._use_exact(partition_pairs(*X.shape), not warm and hyperprior is None):
            if hyperprior is not None:
                raise ValueError("method='exact' needs fixed concentrations (alpha_prior=None).")
            self._fit_exact(X, rng)
        else:
            self._fit_gibbs(X, rng, hyperprior, warm)
        self._set_biclusters()
        return self

    def _fit_exact(self, X, rng):
        posterior = ExactBiclusterPosterior(self.model_, self.row_prior_,
                                            self.column_prior_).fit(X)
        self._set_method("exact")
        self._exact, self._data = posterior, None
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
        self._chains = None
        if self.point_estimate == "map":
            self.row_labels_, self.column_labels_ = (labels.astype(np.int64)
                                                     for labels in posterior.map_pair())
        else:   # VI from the exact cluster marginals, Binder from the pairwise ones
            maps = posterior.map_pair()
            (self.row_labels_, row_note), (self.column_labels_, column_note) = (
                bayes_estimate(self.point_estimate, pairwise=pairwise, samples=samples,
                               exact=True,
                               cluster_marginals=ClusterMarginals(marginals, map_[None]),
                               random_state=rng.randint(2**31 - 1), note_for=name)
                for name, pairwise, samples, marginals, map_ in (
                    ("row_labels_", self.row_pairwise_marginals_, self.row_samples_,
                     posterior.row_cluster_marginals(), maps[0]),
                    ("column_labels_", self.column_pairwise_marginals_, self.column_samples_,
                     posterior.column_cluster_marginals(), maps[1])))
            self.row_labels_ = self.row_labels_.astype(np.int64)
            self.column_labels_ = self.column_labels_.astype(np.int64)
            notes = [note for note in (row_note, column_note) if note is not None]
            self.approximation_ = "; ".join(notes) or None   # every other output is exact

    def _n_stored_samples(self):
        return self._pooled["row_samples"].shape[0]

    def _fit_gibbs(self, X, rng, hyperprior, warm):
        self._check_samples_memory(X.shape[0], len(self._chains) if warm else self.n_chains,
                                   warm, n_columns=X.shape[1])
        data = np.ascontiguousarray(X)
        data_t = np.ascontiguousarray(X.T)
        blocks = engine.make_blocks(self.model_, data, data_t)
        kwargs = dict(n_sweeps=self.n_sweeps, burn_in=self._burn_in(warm), thin=self.thin,
                      n_split_merge=self.n_split_merge, hyperprior=hyperprior,
                      verbose=self.verbose)
        if warm:
            states = list(self._chains)
            if warm == "restart":  # new data: the last partitions only initialise the chains
                states = [engine.restart_state(state, blocks) for state in states]
            results = engine.run_bicluster_chains(
                blocks, data, data_t, self.row_prior_, self.column_prior_,
                n_chains=len(states), n_jobs=self.n_jobs, random_state=rng,
                states=states, **kwargs)
        else:
            results = engine.run_bicluster_chains(
                blocks, data, data_t, self.row_prior_, self.column_prior_,
                n_chains=self.n_chains, n_jobs=self.n_jobs, random_state=rng,
                init_labels=self._init_labels(X, rng), **kwargs)
        fields = ("row_samples", "column_samples", "log_joints", "alphas_rows",
                  "alphas_columns", "cell_params")
        pooled = {name: [getattr(r, name) for r in results] for name in fields}
        if warm == "continue":
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
        self._chains = [r.state for r in results]
        self._exact, self._data, self._row_blocks = None, data, blocks[0]
        self._set_method("gibbs", n_kept=pooled["row_samples"].shape[0],
                         n_chains=len(results), interrupted=any(r.interrupted for r in results))
        self.row_samples_ = pooled["row_samples"]
        self.column_samples_ = pooled["column_samples"]
        self.log_joints_ = pooled["log_joints"]
        self.alphas_rows_ = pooled["alphas_rows"]
        self.alphas_columns_ = pooled["alphas_columns"]
        self.hyperparameters_ = (self.model_.describe_params(pooled["cell_params"])
                                 if self.model_.resamples_hyperparameters else None)
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

    # -- held-out rows ---------------------------------------------------------------------
    def _predictive(self, data_new):
        """Per picked kept sample (MAX_PREDICTIVE_SAMPLES at most, evenly spaced): its row
        labels and the new rows' log weights ``(m, K_s + 1)`` (each row cluster, then a new
        one), at the sample's column partition, ``alpha_rows`` and cell hyperparameters."""
        for s in predictive_picks(self.row_samples_.shape[0]):
            rows = np.unique(self.row_samples_[s], return_inverse=True)[1].astype(np.int64)
            yield rows, engine.new_row_log_weights(
                self._row_blocks, self._data, rows, self.column_samples_[s].astype(np.int64),
                self._pooled["cell_params"][s], self.row_prior_.with_alpha(self.alphas_rows_[s]),
                data_new)

    def score_samples(self, X):
        """Log posterior predictive density of each row of ``X``, a new row of the fitted matrix.

        Each row is predicted alone given the fit: it joins row cluster ``k``
        with prior weight ``n_k / (n + alpha_rows)`` or a new one with
        ``alpha_rows / (n + alpha_rows)``, and its cells in column cluster
        ``l`` are predicted jointly by block ``(k, l)``'s posterior predictive
        (a new row cluster: the prior predictive). An exact fit sums this over
        the whole posterior (every row partition, column partition and grid
        point of the cell hyperparameters), so a row's score is ``log p(X + x)
        - log p(X)``; a Gibbs fit averages the density over up to 25 evenly
        spaced kept samples, each at its own ``alpha_rows`` and cell
        hyperparameters. NaN cells are missing (marginalised).

        Parameters
        ----------
        X : array-like of shape (n_new, n_columns)
            Rows over the fitted columns (NaN = missing).

        Returns
        -------
        log_density : ndarray of shape (n_new,)
        """
        check_is_fitted(self)
        X = validate_kernel_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan",
                                 reset=False)
        try:
            self.model_.check_values(X)
        except ValueError as error:
            if self.likelihood != "auto":
                raise
            inferred = next(name for name, cls in CELL_MODELS.items()
                            if type(self.model_) is cls)
            raise ValueError(f"{error} The cell type {inferred!r} was "
                             "inferred from the values seen in fit (likelihood='auto'); "
                             "declare it (e.g. likelihood='normal') if new rows may hold "
                             "other values.") from None
        if self._exact is None:
            density = self._mean_predictive_log_density(np.ascontiguousarray(X))
        else:
            with np.errstate(all="ignore"):     # a NaN density is refused below
                density = self._exact.log_predictive(X)
            _refuse_rows_without_density(np.isnan(density))
        return observed_nothing_scores_zero(density, X)

    def score(self, X, y=None):
        """Mean log posterior predictive density of the rows of ``X`` (higher is better).

        The mean of :meth:`score_samples`: what ``GridSearchCV`` compares by
        default, so it chooses ``alpha_rows``, ``alpha_columns`` and the cell
        priors (``likelihood__<name>``) by held-out rows.

        Parameters
        ----------
        X : array-like of shape (n_new, n_columns)
        y : Ignored

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))

    def get_indices(self, i):
        """Row and column indices of bicluster ``i`` (negative ``i`` counts from the end).

        Parameters
        ----------
        i : int
            In ``[-n_biclusters, n_biclusters)``, ``n_biclusters = rows_.shape[0]``.

        Returns
        -------
        row_ind, col_ind : ndarray of intp
        """
        check_is_fitted(self)
        n = self.rows_.shape[0]
        if not isinstance(i, Integral) or isinstance(i, bool) or not -n <= i < n:
            raise ValueError(f"i={i!r} is not a bicluster index: this fit has {n} biclusters "
                             f"({self.n_row_clusters_} row x {self.n_column_clusters_} column "
                             f"clusters), indices in [0, {n}).")
        return super().get_indices(i)

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
        self.row_labels_ = first_appearance_labels(self.row_labels_)
        self.column_labels_ = first_appearance_labels(self.column_labels_)
        self.n_row_clusters_ = int(self.row_labels_.max()) + 1
        self.n_column_clusters_ = int(self.column_labels_.max()) + 1
        row_sets = self.row_labels_[None, :] == np.arange(self.n_row_clusters_)[:, None]
        column_sets = (self.column_labels_[None, :]
                       == np.arange(self.n_column_clusters_)[:, None])
        self.rows_ = np.repeat(row_sets, self.n_column_clusters_, axis=0)
        self.columns_ = np.tile(column_sets, (self.n_row_clusters_, 1))


__all__ = ["InfiniteBiclustering"]
