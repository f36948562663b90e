"""``CrossCat``: views of columns and a row clustering per view, for mixed tables with gaps."""

from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from ._gibbs_base import fingerprint
from .engines.exact.crosscat import MAX_EXACT_COLUMNS, MAX_EXACT_ROWS, exact_crosscat
from .models import cell_loops as ck
from .engines.gibbs import crosscat as engine
from .models import CELL_MODELS
from .models.column_types import TableEncoder
from .models.priors import GammaHyperprior

#: Posterior samples (evenly spaced) used by impute / score / simulate.
MAX_PREDICTIVE_SAMPLES = 25
#: Largest number of rows for which ``row_similarity`` is computed.
MAX_SIMILARITY_ROWS = 5000


def _concentration(value, name):
    if isinstance(value, Real) and not isinstance(value, bool):
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value}.")
        return engine.ConcentrationPrior(float(value))
    if isinstance(value, tuple) and len(value) == 2:
        prior = GammaHyperprior(*value)
        return engine.ConcentrationPrior(prior.shape / prior.rate, prior)
    raise ValueError(f"{name} must be a positive number (fixed) or a (shape, rate) tuple "
                     f"(Gamma hyperprior), got {value!r}.")


class CrossCat(ClusterMixin, BaseEstimator):
    """CrossCat: a Dirichlet process over views of columns, a DP mixture of rows in each view.

    The columns of a table are partitioned into *views*; each view clusters the
    rows on its own, and within a (row cluster, column) block the cells are
    i.i.d. from a conjugate model chosen by the column's type (Murphy Eqs.
    38-41; Mansinghka et al. 2016). Columns that depend on each other share a
    view; independent groups of columns get different views and can cluster the
    same rows differently. Missing cells (NaN) are marginalised.

    Parameters
    ----------
    column_types : 'auto' or list, default='auto'
        One entry per column: ``'normal'`` (Normal-Gamma), ``'bernoulli'``
        (Beta-Bernoulli), ``'poisson'`` (Poisson-Gamma), ``'categorical'``
        (Dirichlet-categorical), or a cell model instance of
        :mod:`sklearn_trellis.models.cells`. ``'auto'`` infers: pandas
        ``category`` -> categorical; values in {0, 1} -> bernoulli;
        non-negative integers below 10 -> categorical; other numbers ->
        normal. String columns must be declared categorical (a list entry or a
        pandas ``category`` dtype).
    alpha_views : float or tuple (shape, rate), default=(1.0, 1.0)
        CRP concentration of the column partition: a number is fixed, a tuple
        is a Gamma hyperprior resampled every sweep.
    alpha_rows : float or tuple (shape, rate), default=(1.0, 1.0)
        Concentration of each view's row CRP (each view has its own when a
        hyperprior is given).
    n_sweeps : int, default=200
        Gibbs sweeps per chain; exact mode: the number of exact draws stored.
    burn_in : int, default=None
        Sweeps discarded at the start of each chain; ``None`` means ``n_sweeps // 2``.
    thin : int, default=1
        Keep every ``thin``-th sweep after the burn-in.
    n_chains : int, default=1
        Independent chains, each started from a draw of the prior.
    n_jobs : int, default=None
        Chains in parallel through joblib. Within a chain, the slice step of
        large views and the column scores of large tables run on numba's
        threads (all cores for one chain, shared out between chains that run
        at once); the samples do not depend on either.
    method : {'auto', 'gibbs', 'exact'}, default='auto'
        ``'exact'`` enumerates every column partition and every row partition
        of each view (at most 8 rows and 6 columns, fixed concentrations);
        ``'auto'`` does so when the table is that small and the concentrations
        are fixed.
    row_sampler : {'slice', 'collapsed'}, default='slice'
        How Gibbs moves the rows of each view. ``'slice'``: an uncollapsed
        slice-sampler step (Walker 2007; Kalli et al. 2011, Lace's row move)
        that draws cluster weights, slices and each block's cell parameters,
        then reassigns every row at once among the clusters above its slice
        (in parallel on large views). ``'collapsed'``: a sequential scan of
        the rows, each against the others' cluster statistics (parameters
        integrated out, Neal's Algorithm 3): it moves more per sweep but
        costs several times as much. Both leave the same posterior invariant.
    n_split_merge : int, default=1
        Split-merge proposals per sweep: that many on the rows (Dahl's
        sequentially-allocated proposal, each in a view drawn at random), and
        that many on random columns (a new view whose row partition is fitted
        to the column, or a lone column joining another view). They let the
        chain split clusters and form views that single-row and single-column
        moves reach slowly; 0 leaves the moves Lace makes (the cheapest sweep,
        the slowest mixing).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    warm_start : bool, default=False
        Continue the stored chains for ``n_sweeps`` more sweeps (no burn-in)
        and append their samples when ``fit`` is called again on the same
        data. On other data the fit starts afresh (the views' statistics
        belong to the old data).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Row clustering of the view that holds most columns (ties: the view of
        the lowest column) in the kept sample of highest ``log_joints_``.
    views_ : ndarray of shape (n_features,)
        Column -> view of that sample (views numbered by first column).
    row_labels_ : ndarray of shape (n_views, n_samples)
        Row clustering of each view of that sample.
    view_samples_ : ndarray of shape (n_kept, n_features)
        Column -> view labels of every kept sample.
    row_samples_ : list of ndarray of shape (n_views_s, n_samples)
        Row clusterings of every view of each kept sample.
    dependence_probability_ : ndarray of shape (n_features, n_features)
        Posterior probability that two columns share a view (exact in exact mode).
    log_joints_ : ndarray of shape (n_kept,)
        ``log p(views, rows, X)`` of each kept sample at its concentrations
        and cell hyperparameters.
    log_marginal_likelihood_ : float or None
        Exact mode: ``log p(X)``; Gibbs: None.
    column_types_ : list of str
    cell_models_ : list of fitted cell models
    method_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Column names of a DataFrame input.

    Notes
    -----
    Gibbs sweeps (Mansinghka et al. 2016): rows in each view by the slice
    sampler of Walker 2007 and Kalli et al. 2011 (or the collapsed scan),
    then ``n_split_merge`` row split-merge proposals; each column by Neal's
    Algorithm 8 over the views plus an auxiliary fresh view; then
    ``n_split_merge`` Metropolis-Hastings split-merge proposals on random
    columns (a new view whose row partition is fitted to the column, or a
    lone column joining another view), which lets columns of tall tables
    form new views; each column's cell hyperparameters by an exact draw on
    its grid; concentrations by Escobar & West's update. A sweep is one
    compiled call on a flat state (``engines/gibbs/crosscat.py``). Exact mode
    sums the cell hyperparameters over their grids. Each chain starts from a
    draw of the prior (columns and rows by CRPs).

    ``impute``, ``score`` and ``simulate`` treat the query rows as new rows and
    average over up to 25 evenly spaced kept samples.

    References
    ----------
    V. Mansinghka, P. Shafto, E. Jonas, C. Petschulat, M. Gasner, J. B.
    Tenenbaum. CrossCat: A fully Bayesian nonparametric method for analyzing
    heterogeneous, high dimensional data. JMLR 17, 2016.

    S. G. Walker. Sampling the Dirichlet mixture model with slices.
    Communications in Statistics - Simulation and Computation 36, 2007.

    M. Kalli, J. E. Griffin, S. G. Walker. Slice sampling mixture models.
    Statistics and Computing 21, 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import CrossCat
    >>> rng = np.random.RandomState(0)
    >>> a, b = rng.randint(2, size=60), rng.randint(2, size=60)
    >>> X = np.column_stack([a * 6 + rng.randn(60), a * 6 + rng.randn(60),
    ...                      b * 6 + rng.randn(60), b * 6 + rng.randn(60)])
    >>> model = CrossCat(n_sweeps=40, random_state=0).fit(X)
    >>> model.views_
    array([0, 0, 1, 1], dtype=int32)
    >>> bool(model.dependence_probability_[0, 1] > 0.9)
    True
    """

    _parameter_constraints: dict = {
        "column_types": [StrOptions({"auto"}), list, tuple],
        "alpha_views": [Interval(Real, 0, None, closed="neither"), tuple],
        "alpha_rows": [Interval(Real, 0, None, closed="neither"), tuple],
        "n_sweeps": [Interval(Integral, 1, None, closed="left")],
        "burn_in": [Interval(Integral, 0, None, closed="left"), None],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "method": [StrOptions({"auto", "gibbs", "exact"})],
        "row_sampler": [StrOptions({"collapsed", "slice"})],
        "n_split_merge": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None, closed="left")],
        "warm_start": ["boolean"],
    }

    def __init__(self, *, column_types="auto", alpha_views=(1.0, 1.0), alpha_rows=(1.0, 1.0),
                 n_sweeps=200, burn_in=None, thin=1, n_chains=1, n_jobs=None, method="auto",
                 row_sampler="slice", n_split_merge=1, random_state=None, verbose=0,
                 warm_start=False):
        self.column_types = column_types
        self.alpha_views = alpha_views
        self.alpha_rows = alpha_rows
        self.n_sweeps = n_sweeps
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.method = method
        self.row_sampler = row_sampler
        self.n_split_merge = n_split_merge
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = False
        return tags

    # -- fit -----------------------------------------------------------------------
    def _build_model(self, X):
        encoder = TableEncoder(self.column_types).fit(X)
        data = np.ascontiguousarray(encoder.transform(X))
        cells = []
        for j, kind in enumerate(encoder.types_):
            given = encoder.models_[j]
            cell = clone(given) if given is not None else CELL_MODELS[kind]()
            if kind == "categorical":
                cell.set_params(n_categories=max(len(encoder.categories_[j]),
                                                 cell.n_categories or 0))
            cells.append(cell.fit(data[:, j]))
        model = engine.CrossCatModel(cells, data,
                                     _concentration(self.alpha_views, "alpha_views"),
                                     _concentration(self.alpha_rows, "alpha_rows"),
                                     row_sampler=self.row_sampler,
                                     split_merge=(self.n_split_merge, self.n_split_merge))
        return encoder, cells, model

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample (or enumerate) the posterior over views and row clusterings of ``X``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            The table; NaN (or None) cells are missing.
        y : Ignored

        Returns
        -------
        self : CrossCat
        """
        if self.burn_in is not None and self.burn_in >= self.n_sweeps:
            raise ValueError(f"burn_in must be < n_sweeps={self.n_sweeps}, got {self.burn_in}.")
        _check_feature_names(self, X, reset=True)
        encoder, models, model = self._build_model(X)
        n, d = model.data.shape
        fixed = (model.alpha_views.hyperprior is None and model.alpha_rows.hyperprior is None)
        small = n <= MAX_EXACT_ROWS and d <= MAX_EXACT_COLUMNS
        rng = check_random_state(self.random_state)
        warm = (self.warm_start and getattr(self, "_states", None) is not None
                and getattr(self, "_data_shape", None) == model.data.shape
                # the views' statistics belong to the data they ran on: other data
                # starts afresh instead of being scored with stale statistics
                and fingerprint(model.data) == getattr(self, "_data_fingerprint", None))
        if self.method == "exact" or (self.method == "auto" and fixed and small and not warm):
            exact = exact_crosscat(model)
            samples = exact.sample(self.n_sweeps, rng)
            self.method_ = "exact"
            self.log_marginal_likelihood_ = exact.log_marginal_likelihood
            self._exact = exact
            self._states = None
            self.interrupted_ = False
        else:
            burn_in = 0 if warm else (self.n_sweeps // 2 if self.burn_in is None
                                      else self.burn_in)
            chains = engine.run_chains(
                model, n_chains=self.n_chains, n_jobs=self.n_jobs, random_state=rng,
                states=self._states if warm else None, n_sweeps=self.n_sweeps,
                burn_in=burn_in, thin=self.thin, verbose=self.verbose)
            samples = [s for chain in chains for s in chain.samples]
            if warm:
                samples = self._samples + samples
            self._states = [chain.state for chain in chains]
            self.method_ = "gibbs"
            self.log_marginal_likelihood_ = None
            self._exact = None
            self.seconds_per_sweep_ = (sum(c.seconds for c in chains)
                                       / max(1, sum(c.n_sweeps for c in chains)))
            self.interrupted_ = any(c.interrupted for c in chains)
        if not samples:
            raise RuntimeError("No sample was kept (interrupted during burn-in).")
        self._data_shape = model.data.shape
        self._data_fingerprint = fingerprint(model.data)
        self._encoder, self._model, self._samples = encoder, model, samples
        self.cell_models_ = models
        self.column_types_ = list(encoder.types_)
        self.n_features_in_ = d
        self._summarise()
        return self

    def _summarise(self):
        samples = self._samples
        self.view_samples_ = np.array([s.views for s in samples], dtype=np.int32)
        self.row_samples_ = [s.rows for s in samples]
        self.log_joints_ = np.array([s.log_joint for s in samples])
        if self._exact is not None:
            self.dependence_probability_ = self._exact.dependence_probability.copy()
        else:
            same = self.view_samples_[:, :, None] == self.view_samples_[:, None, :]
            self.dependence_probability_ = same.mean(axis=0)
        best = samples[int(np.argmax(self.log_joints_))]
        self.views_ = best.views.copy()
        self.row_labels_ = best.rows.copy()
        self.n_views_ = int(best.views.max()) + 1
        largest = int(np.argmax(np.bincount(best.views)))
        self.labels_ = best.rows[largest].astype(np.int64)

    # -- summaries -----------------------------------------------------------------
    def _column_index(self, column):
        names = getattr(self, "feature_names_in_", None)
        if isinstance(column, str):
            if names is None or column not in list(names):
                raise ValueError(f"Unknown column {column!r}.")
            return list(names).index(column)
        if not isinstance(column, Integral) or not 0 <= column < self.n_features_in_:
            raise ValueError(f"column must be an index in [0, {self.n_features_in_}) or a "
                             f"column name, got {column!r}.")
        return int(column)

    def row_similarity(self, view_of=0):
        """Posterior probability that two rows share a cluster in the view holding ``view_of``.

        Parameters
        ----------
        view_of : int or str, default=0
            A column (index or DataFrame name); in each sample the rows are
            compared in the view that holds it.

        Returns
        -------
        similarity : ndarray of shape (n_samples, n_samples)
        """
        check_is_fitted(self)
        j = self._column_index(view_of)
        if self._exact is not None:
            return self._exact.row_similarity[j].copy()
        n = self.labels_.size
        if n > MAX_SIMILARITY_ROWS:
            raise ValueError(f"row_similarity holds an n x n matrix; n={n} exceeds "
                             f"{MAX_SIMILARITY_ROWS}.")
        total = np.zeros((n, n))
        for views, rows in zip(self.view_samples_, self.row_samples_):
            labels = rows[views[j]]
            total += labels[:, None] == labels[None, :]
        return total / len(self.row_samples_)

    # -- predictive queries --------------------------------------------------------
    def _predictive_samples(self):
        samples = self._samples
        count = min(MAX_PREDICTIVE_SAMPLES, len(samples))
        return [samples[k] for k in np.linspace(0, len(samples) - 1, count).astype(int)]

    def _encode(self, X):
        check_is_fitted(self)
        _check_feature_names(self, X, reset=False)
        return np.ascontiguousarray(self._encoder.transform(X))

    def score_samples(self, X):
        """Log posterior predictive density of each row (its missing cells marginalised).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)

        Returns
        -------
        log_density : ndarray of shape (n_rows,)
        """
        data = self._encode(X)
        per_sample = []
        for sample in self._predictive_samples():
            views = engine.view_predictives(self._model, sample, data)
            per_sample.append(sum(logsumexp(v.log_weights, axis=1) for v in views))
        per_sample = np.array(per_sample)
        return logsumexp(per_sample, axis=0) - np.log(per_sample.shape[0])

    def score(self, X, y=None):
        """Mean log posterior predictive density of the rows of ``X`` (higher is better).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
        y : Ignored

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))

    def _discrete_values(self, j):
        kind = self.column_types_[j]
        if kind == "bernoulli":
            return np.array([0.0, 1.0])
        if kind == "categorical":
            return np.arange(len(self._encoder.categories_[j]), dtype=np.float64)
        return None

    def impute(self, X, return_proba=False):
        """Fill the NaN cells of ``X`` with posterior-predictive means (numbers) or modes.

        Each row is treated as a new row: in every posterior sample and view its
        cluster is weighted by its observed cells; normal and poisson cells get
        the predictive mean, bernoulli and categorical cells the most probable
        value.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
        return_proba : bool, default=False
            Also return, for each bernoulli or categorical column, the predictive
            probabilities of its values (rows of ``X``, columns = categories in
            ``categories``), as a dict column index -> ndarray.

        Returns
        -------
        X_imputed : ndarray or DataFrame (same container as ``X``)
        proba : dict, only when ``return_proba``
        """
        data = self._encode(X)
        d = data.shape[1]
        samples = self._predictive_samples()
        means = np.zeros(data.shape)
        proba = {j: np.zeros((data.shape[0], v.size)) for j in range(d)
                 if (v := self._discrete_values(j)) is not None}
        for sample in samples:
            for view in engine.view_predictives(self._model, sample, data):
                resp = np.exp(view.log_weights - logsumexp(view.log_weights, axis=1,
                                                           keepdims=True))
                for j in view.columns:
                    t = self._model.code(j)
                    stats, p = view.stats[int(j)], view.params[int(j)]
                    if j in proba:
                        values = self._discrete_values(j)
                        table = np.empty((stats.shape[0], values.size))
                        ck.value_log_predictive(t, p, stats, values, table)
                        proba[j] += resp @ np.exp(table)
                    else:
                        cluster_means = np.empty(stats.shape[0])
                        ck.predictive_means(t, p, stats, cluster_means)
                        means[:, j] += resp @ cluster_means
        means /= len(samples)
        for j in proba:
            proba[j] /= len(samples)
            means[:, j] = self._discrete_values(j)[np.argmax(proba[j], axis=1)]
        filled = np.where(np.isnan(data), means, data)
        out = self._decode(filled, X)
        return (out, proba) if return_proba else out

    def _decode(self, codes, like=None):
        columns = [self._encoder.inverse_column(j, codes[:, j]) for j in range(codes.shape[1])]
        if like is not None and hasattr(like, "columns") and hasattr(like, "iloc"):
            import pandas as pd
            frame = pd.DataFrame({name: column for name, column in zip(like.columns, columns)},
                                 index=like.index)
            for name in like.columns:
                if str(like[name].dtype) == "category":
                    frame[name] = pd.Categorical(frame[name],
                                                 categories=like[name].cat.categories)
            return frame
        if all(np.asarray(c).dtype.kind in "fiub" for c in columns):
            return np.column_stack(columns).astype(np.float64)
        out = np.empty(codes.shape, dtype=object)
        for j, column in enumerate(columns):
            out[:, j] = column
        return out

    def simulate(self, n_rows, given=None, random_state=None):
        """Draw rows from the posterior predictive, optionally given some cells.

        Parameters
        ----------
        n_rows : int
        given : dict, default=None
            Column (index or name) -> observed value; the other cells are drawn
            from their predictive distribution conditioned on these.
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        rows : ndarray of shape (n_rows, n_features) (object dtype when a
            categorical column has non-numeric categories)
        """
        check_is_fitted(self)
        if not isinstance(n_rows, Integral) or n_rows < 1:
            raise ValueError(f"n_rows must be a positive integer, got {n_rows!r}.")
        rng = check_random_state(random_state)
        d = self.n_features_in_
        condition = np.full((1, d), np.nan)
        for column, value in (given or {}).items():
            j = self._column_index(column)
            column_values = np.empty(1, dtype=object)
            column_values[0] = value
            condition[0, j] = self._encoder.transform_column(j, column_values)[0]
        samples = self._predictive_samples()
        picks = rng.randint(len(samples), size=n_rows)
        out = np.repeat(condition, n_rows, axis=0)
        for s in np.unique(picks):
            rows_here = np.flatnonzero(picks == s)
            for view in engine.view_predictives(self._model, samples[s], condition):
                w = np.exp(view.log_weights[0] - logsumexp(view.log_weights[0]))
                slots = rng.choice(w.size, size=rows_here.size, p=w).astype(np.int64)
                for j in view.columns:
                    if not np.isnan(condition[0, j]):
                        continue
                    draws = np.empty(rows_here.size)
                    ck.predictive_draws(self._model.code(j),
                                        view.params[int(j)], view.stats[int(j)], slots,
                                        rng.randint(np.iinfo(np.int32).max), draws)
                    out[rows_here, j] = draws
        return self._decode(out)
