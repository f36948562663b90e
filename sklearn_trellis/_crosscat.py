"""``CrossCat``: views of columns and a row clustering per view, for mixed tables with gaps."""

from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import ClusterMixin, _fit_context, clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from ._core.compilation import announces_compilation
from ._core.validation import check_random_state
from ._gibbs_base import (_BaseGibbs, gamma_hyperprior, observed_nothing_scores_zero,
                          predictive_picks)
from .engines.exact.crosscat import MAX_EXACT_COLUMNS, MAX_EXACT_ROWS, exact_crosscat
from .models import cell_loops as ck
from .engines.gibbs import crosscat as engine
from .models import CELL_MODELS
from .models.column_types import TableEncoder

#: Largest number of rows for which ``row_similarity`` is computed.
MAX_SIMILARITY_ROWS = 5000


class CrossCat(ClusterMixin, _BaseGibbs):
    """CrossCat: a Dirichlet process over views of columns, a DP mixture of rows in each view.

    The columns of a table are partitioned into *views*; each view clusters the
    rows on its own, and within a (row cluster, column) block the cells are
    i.i.d. from a conjugate model chosen by the column's type (Murphy Eqs.
    38-41; Mansinghka et al. 2016). Columns that depend on each other share a
    view; independent groups of columns get different views and can cluster the
    same rows differently. Missing cells (NaN) are marginalised.

    Parameters
    ----------
    likelihood : 'auto' or list, default='auto'
        The cell model of each column, one entry per column: ``'normal'`` (Normal-Gamma), ``'bernoulli'``
        (Beta-Bernoulli), ``'poisson'`` (Poisson-Gamma), ``'categorical'``
        (Dirichlet-categorical), or a cell model instance of
        :mod:`sklearn_trellis.models.cells`. ``'auto'`` infers: pandas
        ``category`` -> categorical; values in {0, 1} -> bernoulli;
        non-negative integers below 10 -> categorical; other numbers ->
        normal. String columns must be declared categorical (a list entry or a
        pandas ``category`` dtype).
    alpha_views : float, default=1.0
        CRP concentration of the column partition (held fixed when
        ``alpha_prior`` is None).
    alpha_rows : float, default=1.0
        Concentration of each view's row CRP (held fixed when ``alpha_prior``
        is None).
    alpha_prior : tuple (shape, rate) or None, default=(1.0, 1.0)
        Gamma hyperprior on the concentrations: ``alpha_views`` and each
        view's own row concentration are resampled every sweep (Escobar &
        West). Each chain then starts them from draws of this prior, as every
        new view draws its row concentration, so ``alpha_views`` and
        ``alpha_rows`` are used only when ``alpha_prior`` is None.
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
        of each view (at most 8 rows and 6 columns, ``alpha_prior=None``),
        ``'gibbs'`` samples them; ``'auto'`` is exact when the concentrations
        are fixed, the fit is not a warm start, the table has at most 6
        columns and at most ``max_exact_size`` rows.
    max_exact_size : int, default=8
        The size of the largest problem ``'auto'`` solves exactly; the size is
        the number of rows (at most 8, the exact engine's limit; it also needs
        at most 6 columns).
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
        sequentially-allocated proposal, each in a view drawn at random),
        that many on random columns (a new view whose row partition is fitted
        to the column, or a lone column joining another view), and that many
        on views (a view's columns split into two views, or two views merged,
        the rows of each view it makes allocated anew on its columns). They
        let the chain split clusters and form views that single-row and
        single-column moves reach slowly (a chain with all columns in one
        view leaves it only by the view move); 0 leaves the moves Lace makes
        (the cheapest sweep, the slowest mixing).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    warm_start : bool, default=False
        If True and a Gibbs fit came before, its chains go on. On the same data
        ``fit`` continues them for ``n_sweeps`` more sweeps (no burn-in) and
        appends the new samples. On new data of the same shape the cell models
        are refitted and every statistic recomputed from the new table; each
        chain restarts from its last views, row partitions and concentrations,
        runs a burn-in, and the samples of the old data are dropped. Data of
        another shape raises a ValueError.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Row clustering of the view that holds most columns (ties: the view of
        the lowest column) in the kept sample of highest ``log_joints_``.
    views_ : ndarray of shape (n_features,)
        Column -> view of that sample (views numbered by first column).
    view_row_labels_ : ndarray of shape (n_views, n_samples)
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
        The type of each column (``likelihood`` resolved).
    cell_models_ : list of fitted cell models
    model_ : CrossCatModel
        The fitted model the chains (or the enumeration) ran on: the cell
        models, the encoded table and the concentrations' priors.
    method_ : str
        ``'exact'`` or ``'gibbs'``.
    approximation_ : str or None
        None for an exact fit; for a Gibbs fit, says so ("Gibbs sampling: ..."
        with the number of kept samples and chains).
    interrupted_ : bool
        True when a Ctrl-C ended sampling early (the samples so far are kept).
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
    average over up to 25 evenly spaced kept samples (``impute`` and
    ``simulate`` weight each sample by the density of the row's observed or
    given cells); in exact mode they sum over the whole posterior instead
    (``simulate`` draws from it exactly).

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

    _nested_models = {"likelihood": "Its cell models are set as a whole: give a list of "
                                    "model instances, e.g. likelihood=[NormalCells(kappa=0.5), "
                                    "'bernoulli', ...]."}
    _parameter_constraints: dict = {
        **_BaseGibbs._parameter_constraints,
        "likelihood": [StrOptions({"auto"}), list, tuple],
        "alpha_views": [Interval(Real, 0, None, closed="neither")],
        "alpha_rows": [Interval(Real, 0, None, closed="neither")],
        "alpha_prior": ["array-like", None],
        "max_exact_size": [Interval(Integral, 1, MAX_EXACT_ROWS, closed="both")],
        "row_sampler": [StrOptions({"collapsed", "slice"})],
        "n_split_merge": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, likelihood="auto", *, alpha_views=1.0, alpha_rows=1.0,
                 alpha_prior=(1.0, 1.0), n_sweeps=200, burn_in=None, thin=1, n_chains=1,
                 n_jobs=None, method="auto", max_exact_size=MAX_EXACT_ROWS, row_sampler="slice",
                 n_split_merge=1, random_state=None, verbose=0, warm_start=False):
        super().__init__(n_sweeps=n_sweeps, burn_in=burn_in, thin=thin, n_chains=n_chains,
                         n_jobs=n_jobs, method=method, max_exact_size=max_exact_size,
                         random_state=random_state, verbose=verbose, warm_start=warm_start)
        self.likelihood = likelihood
        self.alpha_views = alpha_views
        self.alpha_rows = alpha_rows
        self.alpha_prior = alpha_prior
        self.row_sampler = row_sampler
        self.n_split_merge = n_split_merge

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = False
        return tags

    # -- fit -----------------------------------------------------------------------
    def _build_model(self, X):
        encoder = TableEncoder(self.likelihood).fit(X)
        data = np.ascontiguousarray(encoder.transform(X))
        cells = []
        for j, kind in enumerate(encoder.types_):
            given = encoder.models_[j]
            cell = clone(given) if given is not None else CELL_MODELS[kind]()
            if kind == "categorical":
                cell.set_params(n_categories=max(len(encoder.categories_[j]),
                                                 cell.n_categories or 0))
            cells.append(cell.fit(data[:, j]))
        hyperprior = gamma_hyperprior(self.alpha_prior)
        alpha_views, alpha_rows = (engine.ConcentrationPrior(float(alpha), hyperprior)
                                   for alpha in (self.alpha_views, self.alpha_rows))
        model = engine.CrossCatModel(cells, data, alpha_views, alpha_rows,
                                     row_sampler=self.row_sampler,
                                     split_merge=(self.n_split_merge, self.n_split_merge))
        return encoder, cells, model

    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
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
        self._check_burn_in()
        _check_feature_names(self, X, reset=True)
        encoder, models, model = self._build_model(X)
        n, d = model.data.shape
        warm = self._warm_start_mode(model.data)
        rng = check_random_state(self.random_state)
        if self._use_exact(n, self.alpha_prior is None and d <= MAX_EXACT_COLUMNS and not warm):
            exact = exact_crosscat(model)
            samples = exact.sample(self.n_sweeps, rng)
            self._set_method("exact")
            self.log_marginal_likelihood_ = exact.log_marginal_likelihood
            self._exact = exact
            self._chains = None
        else:
            states = None
            if warm == "continue":
                states = self._chains
            elif warm == "restart":  # new data: the last states only initialise the chains
                states = [engine.restart_state(model, state, rng) for state in self._chains]
            chains = engine.run_chains(
                model, n_chains=self.n_chains, n_jobs=self.n_jobs, random_state=rng,
                states=states, n_sweeps=self.n_sweeps, burn_in=self._burn_in(warm),
                thin=self.thin, verbose=self.verbose)
            samples = [s for chain in chains for s in chain.samples]
            if warm == "continue":
                samples = self._samples + samples
            self._chains = [chain.state for chain in chains]
            self._set_method("gibbs", n_kept=len(samples), n_chains=len(chains),
                             interrupted=any(c.interrupted for c in chains))
            self._exact = None
            self.seconds_per_sweep_ = (sum(c.seconds for c in chains)
                                       / max(1, sum(c.n_sweeps for c in chains)))
        if not samples:
            raise RuntimeError("No sample was kept (interrupted during burn-in).")
        self._encoder, self.model_, self._samples = encoder, model, samples
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
        self.view_row_labels_ = best.rows.copy()
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
        return [self._samples[k] for k in predictive_picks(len(self._samples))]

    def _encode(self, X):
        check_is_fitted(self)
        _check_feature_names(self, X, reset=False)
        data = np.ascontiguousarray(self._encoder.transform(X))
        if data.shape[0] == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={data.shape}) while a "
                             "minimum of 1 is required by CrossCat.")
        for j in range(data.shape[1]):
            self._check_in_range(j, data[:, j])
        return data

    def _check_in_range(self, j, values):
        """Refuse values of a normal column that its cells cannot place: ``(x - m0) / unit``
        must be a float64 (the cells compute in units of ``unit_``, near the fitted spread)."""
        cell = self.cell_models_[j]
        if not hasattr(cell, "unit_"):
            return
        with np.errstate(over="ignore", invalid="ignore"):
            standardized = values / cell.unit_ - cell.mean_prior_ / cell.unit_
            limit = np.finfo(np.float64).max * cell.unit_
        far = ~np.isnan(values) & ~np.isfinite(standardized)
        if far.any():
            raise ValueError(f"Column {j}: value {values[far][0]!r} is too far from the fitted "
                             f"values (mean {cell.mean_prior_:.3g}) for float64 at their scale "
                             f"(unit {cell.unit_:.3g}): |x - mean| must stay below "
                             f"{limit:.3g}.")

    def score_samples(self, X):
        """Log posterior predictive density of each row, a new row of the fitted table.

        Each row is predicted alone given the fit: in each view it joins row
        cluster ``k`` with weight ``n_k / (n + alpha)`` or a new one with
        ``alpha / (n + alpha)``, and the view's cells are predicted by their
        blocks' posterior predictives (a new cluster: the prior predictive).
        An exact fit sums this over the whole posterior (every column
        partition, every view's row partition and every column's grid point
        of the cell hyperparameters), so a row's score is ``log p(X + x) -
        log p(X)``; a Gibbs fit averages the density over up to 25 evenly
        spaced kept samples, each at its own concentrations and cell
        hyperparameters. NaN cells are missing (marginalised).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)

        Returns
        -------
        log_density : ndarray of shape (n_rows,)
        """
        data = self._encode(X)
        if self._exact is not None:
            return observed_nothing_scores_zero(self._exact.log_predictive(data), data)
        per_sample = []
        for sample in self._predictive_samples():
            views = engine.view_predictives(self.model_, sample, data)
            per_sample.append(sum(logsumexp(v.log_weights, axis=1) for v in views))
        per_sample = np.array(per_sample)
        return observed_nothing_scores_zero(
            logsumexp(per_sample, axis=0) - np.log(per_sample.shape[0]), data)

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

        Each row is treated as a new row and its missing cells are predicted
        given its observed cells, ``p(x_miss | x_obs, X)``: normal and poisson
        cells get the predictive mean, bernoulli and categorical cells the most
        probable value. An exact fit sums over the whole posterior, each state
        weighted by ``p(x_obs | state)``; a Gibbs fit averages over up to 25
        evenly spaced kept samples with the self-normalised weights ``p(x_obs |
        sample)`` (a row's observed cells make some samples likelier than
        others), each sample's views weighting the row's clusters by its
        observed cells.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_rows, n_features)
        return_proba : bool, default=False
            Also return, for each bernoulli or categorical column, the predictive
            probabilities of its values (rows of ``X``, columns = categories in
            ``categories``), as a dict column index -> ndarray. A cell of ``X``
            that is observed has probability 1 at its value.

        Returns
        -------
        X_imputed : ndarray or DataFrame (same container as ``X``)
        proba : dict, only when ``return_proba``

        Raises
        ------
        ValueError
            When a row's observed cells have a predictive density float64
            cannot hold: nothing can be conditioned on them.
        """
        data = self._encode(X)
        values = {j: v for j in range(data.shape[1])
                  if (v := self._discrete_values(j)) is not None}
        if self._exact is not None:
            means, proba, log_observed = self._exact.impute(data, values)
        else:
            means, proba, log_observed = self._sampled_impute(data, values,
                                                              self._predictive_samples())
        missing = np.isnan(data)
        impossible = np.flatnonzero(missing.any(axis=1) & ~np.isfinite(log_observed))
        if impossible.size:
            raise ValueError(f"Row {impossible[0]}: its observed cells have a predictive "
                             "density float64 cannot hold; its missing cells cannot be "
                             "conditioned on them.")
        for j, column_values in values.items():
            rows = missing[:, j]
            means[rows, j] = column_values[np.argmax(proba[j][rows], axis=1)]
            proba[j][~rows] = column_values[None, :] == data[~rows, j][:, None]
        filled = np.where(missing, means, data)
        out = self._decode(filled, X)
        return (out, proba) if return_proba else out

    def _sampled_impute(self, data, values, samples):
        """:meth:`ExactCrossCat.impute` from ``samples`` of the posterior: the average of
        each sample's predictive given ``x_obs``, weighted by ``p(x_obs | sample)``
        (normalised per row; accumulated rescaled, as a running log-sum-exp). Also
        returns ``log sum_s p(x_obs | s)``, -inf where no sample gives ``x_obs`` a
        density."""
        means = np.zeros(data.shape)
        proba = {j: np.zeros((data.shape[0], v.size)) for j, v in values.items()}
        log_total = np.full(data.shape[0], -np.inf)
        for sample in samples:
            views = engine.view_predictives(self.model_, sample, data)
            log_observed = sum(logsumexp(v.log_weights, axis=1) for v in views)
            with np.errstate(invalid="ignore"):
                log_new_total = np.logaddexp(log_total, log_observed)
                keep = np.nan_to_num(np.exp(log_total - log_new_total))
                weight = np.nan_to_num(np.exp(log_observed - log_new_total))
            means *= keep[:, None]
            for table in proba.values():
                table *= keep[:, None]
            for view in views:
                with np.errstate(invalid="ignore"):
                    resp = np.nan_to_num(np.exp(view.log_weights - logsumexp(
                        view.log_weights, axis=1, keepdims=True))) * weight[:, None]
                for j in view.columns:
                    t = self.model_.code(j)
                    stats, p = view.stats[int(j)], view.params[int(j)]
                    if j in proba:
                        table = np.empty((stats.shape[0], values[j].size))
                        ck.value_log_predictive(t, p, stats, values[j], table)
                        proba[j] += resp @ np.exp(table)
                    else:
                        cluster_means = np.empty(stats.shape[0])
                        ck.predictive_means(t, p, stats, cluster_means)
                        means[:, j] += resp @ cluster_means
            log_total = log_new_total
        return means, proba, log_total

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
            from their predictive distribution conditioned on these,
            ``p(x | x_given, X)``. An exact fit draws each row's state (column
            partition, row partitions, the row's clusters, grid points) from
            ``p(state | X, x_given)`` and then its cells; a Gibbs fit picks one of
            up to 25 evenly spaced kept samples per row, with probability
            proportional to ``p(x_given | sample)``, then its cluster in each
            view given the given cells, then its missing cells.
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
            self._check_in_range(j, condition[0, j:j + 1])
        if self._exact is not None:
            self._refuse_impossible_condition(self._exact.log_predictive(condition)[0])
            return self._decode(self._exact.simulate(condition[0], n_rows, rng))
        samples = self._predictive_samples()
        views = [engine.view_predictives(self.model_, sample, condition) for sample in samples]
        if np.isnan(condition).all():   # every sample gives the empty condition density 1
            picks = rng.randint(len(samples), size=n_rows)
        else:   # the samples weighted by p(x_given | sample)
            log_given = np.array([sum(logsumexp(view.log_weights[0]) for view in sample_views)
                                  for sample_views in views])
            self._refuse_impossible_condition(logsumexp(log_given))
            picks = rng.choice(len(samples), size=n_rows,
                               p=np.exp(log_given - logsumexp(log_given)))
        out = np.repeat(condition, n_rows, axis=0)
        for s in np.unique(picks):
            rows_here = np.flatnonzero(picks == s)
            for view in views[s]:
                w = np.exp(view.log_weights[0] - logsumexp(view.log_weights[0]))
                slots = rng.choice(w.size, size=rows_here.size, p=w).astype(np.int64)
                for j in view.columns:
                    if not np.isnan(condition[0, j]):
                        continue
                    draws = np.empty(rows_here.size)
                    ck.predictive_draws(self.model_.code(j),
                                        view.params[int(j)], view.stats[int(j)], slots,
                                        rng.randint(np.iinfo(np.int32).max), draws)
                    out[rows_here, j] = draws
        return self._decode(out)

    @staticmethod
    def _refuse_impossible_condition(log_density):
        if not np.isfinite(log_density):
            raise ValueError("The given cells have a predictive density float64 cannot hold: "
                             "nothing can be drawn given them.")
