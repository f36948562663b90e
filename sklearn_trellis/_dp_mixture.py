"""``DPMixture``: Dirichlet-process / Pitman-Yor mixtures with conjugate likelihoods."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import ClusterMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from ._core.budget import check_memory, rows_or_zero
from ._core.compilation import announces_compilation
from ._core.units import shift_rows
from ._core.validation import check_random_state, validate_kernel_data
from ._gibbs_base import (KMEANS_INIT_CLUSTERS, MAX_LOSS_ESTIMATE_ITEMS, _BaseGibbs,
                          _refuse_rows_without_density, check_given_labels, fitted_kmeans,
                          gamma_hyperprior, initial_labels, predictive_picks, subset_columns)
from .engines.exact.binder import bayes_estimate
from .engines.exact.grid_marginal import GridMarginalPosterior
from .engines.gibbs import sampler as gibbs
from .engines.gibbs import subcluster
from .engines.gibbs.shards import BLOCK_ROWS, dask_client, import_distributed, is_dask_array
from .models import LIKELIHOODS, fit_likelihood, make_likelihood
from .models.likelihood import ClusterLikelihood
from .models.priors import make_prior
from .summaries.point_estimates import LOSSES, PAIRWISE_LOSSES, ClusterMarginals
from .summaries.point_estimates import point_estimate as _loss_point_estimate


#: From this many rows on, ``method='auto'`` samples with the sub-cluster sampler.
#: ``benchmarks/bench_dp_scale.py`` (20 blobs in 10 dimensions, 2 shared cores, load 21-24)
#: measured at 10,000 rows a collapsed sweep at 3.6 sub-cluster iterations of wall time
#: (928 vs 257 ms) and 2.6 of CPU time (100 vs 38 ms), with ARI 0.95 after 20 collapsed
#: sweeps and 1.0 after 200 sub-cluster iterations.
SUBCLUSTER_AUTO_SIZE = 10_000

#: A dask array's data-dependent prior defaults (and k-means initialisation) are fitted on
#: at most this many evenly spaced rows, gathered on the driver (all rows below it).
DASK_PRIOR_ROWS = 100_000


#: New rows per block of an exact fit's predict_proba (bounds its (rows, 2**n) temporary).
EXACT_PREDICT_BLOCK = 256

class DPMixture(ClusterMixin, _BaseGibbs):
    """Dirichlet-process (or Pitman-Yor) mixture with a conjugate likelihood.

    The model is ``z ~ CRP(alpha, discount)`` (two-parameter Chinese
    restaurant process; a Dirichlet-multinomial with ``n_prior_components`` slots
    when that is set), cluster parameters from a conjugate prior and
    ``x_i | z_i ~ F(theta_{z_i})``. The parameters are integrated out, so the
    posterior over partitions is known up to a constant and is explored by a
    collapsed Gibbs sampler (Neal's Algorithm 3, Murphy Eqs. 18-21; Fidaner &
    Cemgil Eq. 2) with split-merge moves, or computed exactly by the cluster
    trellis for small ``n``.

    Parameters
    ----------
    likelihood : {'gaussian', 'diagonal', 'bernoulli', 'multinomial'} or ClusterLikelihood, \
default='gaussian'
        Cluster model: ``'gaussian'`` = :class:`~sklearn_trellis.models.NormalInverseWishart`
        (full covariance), ``'diagonal'`` = :class:`~sklearn_trellis.models.NormalGamma`,
        ``'bernoulli'`` = :class:`~sklearn_trellis.models.BetaBernoulli` (binary data),
        ``'multinomial'`` = :class:`~sklearn_trellis.models.DirichletMultinomial` (counts),
        or an instance (its hyperparameters are tunable as ``likelihood__<name>``).
        Priors left at ``None`` take the data-dependent defaults documented per class.
    alpha : float, default=1.0
        Concentration (``> 0``): larger values favour more clusters.
    discount : float, default=0.0
        Pitman-Yor discount ``d`` in ``[0, 1)``; 0 gives the Dirichlet process.
    n_sweeps : int, default=400
        Gibbs sweeps per chain (each: one scan over all items plus
        ``n_split_merge`` split-merge proposals). In exact mode, the number of
        exact posterior draws stored in ``samples_``. 400 (200 after the
        default burn-in) because shorter chains were unconverged on the
        benchmark datasets (``benchmarks/bench_dp_mixture.py``, mean ARI over
        seeds 0-4, with the fixed covariance prior that was the default
        then): 100 -> 200 -> 400 sweeps took iris from 0.57 to 0.897 to
        0.904 and digits (10 PCA dimensions) from 0.746 to 0.763 (one seed at
        0.705) to 0.784 (every seed >= 0.76); wine, breast cancer and the
        blobs did not change from 200 to 400. The price is time linear in
        ``n_sweeps`` (about 5 minutes for 100,000 points in 10 dimensions on
        two cores); lower it for quick looks.
    burn_in : int, default=None
        Sweeps discarded at the start of each chain; ``None`` means
        ``n_sweeps // 2``.
    thin : int, default=1
        Keep every ``thin``-th sweep after the burn-in.
    n_chains : int, default=1
        Independent chains (seeds drawn from ``random_state``).
    n_jobs : int, default=None
        Chains run in parallel through joblib (``sklearn.utils.parallel``), so
        ``joblib.parallel_config(backend="dask")`` runs them on a Dask cluster.
    method : {'auto', 'gibbs', 'subcluster', 'exact'}, default='auto'
        ``'exact'`` computes the posterior exactly with the cluster trellis
        (all partitions; ``n_samples <= max_exact_size``, ``alpha_prior=None``),
        ``'gibbs'`` samples it with the collapsed Gibbs sampler, ``'subcluster'``
        with the sub-cluster split/merge sampler
        (:mod:`sklearn_trellis.engines.gibbs.subcluster`: cluster weights and
        parameters drawn each iteration, every label drawn in parallel over numba
        threads, exact split/merge moves; one iteration of ``n_sweeps`` is one
        pass over the rows plus ``n_split_merge`` proposals; float32 data stay
        float32; conjugate likelihoods with an uncollapsed form). ``'auto'`` is
        exact when the likelihood factorises over clusters, ``alpha_prior`` is
        None, the fit is not a warm start and ``n_samples <= max_exact_size``;
        otherwise the sub-cluster sampler from ``SUBCLUSTER_AUTO_SIZE`` (10,000) rows on
        (where it is the faster, see ``benchmarks/bench_dp_scale.py``), else Gibbs.
    max_exact_size : int, default=12
        The size of the largest problem ``'auto'`` solves exactly; the size
        is the number of samples (items), and the exact trellis is built for
        at most that many.
    init : {'auto', 'subsample', 'kmeans', 'one', 'singletons', 'random'} or \
array-like of shape (n_samples,), default='auto'
        Starting partition of every chain. ``'subsample'``: on ``SUBSAMPLE_ROWS``
        (10,000) evenly spaced rows, k-means with 10 clusters (on one thread), each
        cluster cut by 2-means while a cut raises the posterior, then merges that raise
        it (``divisive_labels``), then a sub-cluster chain of at most
        ``SUBSAMPLE_ITERATIONS`` (40) iterations and at most
        ``SUBSAMPLE_SEARCH_ITERATIONS`` (10) with ``SUBSAMPLE_SPLIT_MERGE`` (100)
        split/merge proposals each (clusters still missing), each chain ending once
        settled (the number of clusters unchanged and the log joint within
        ``SUBSAMPLE_TOLERANCE`` nats per row over ``SUBSAMPLE_PATIENCE`` iterations),
        then every row drawn from its last cluster weights and parameters
        (:func:`~sklearn_trellis.engines.gibbs.subcluster.subsample_start`; likelihoods
        with an uncollapsed form). ``'kmeans'``: k-means with 10 clusters; ``'one'``:
        one cluster; ``'singletons'``; ``'random'``: uniform random labels among
        ``sqrt(n)``; or given labels. ``'auto'`` is ``'subsample'`` for the sub-cluster
        sampler on more than ``SUBSAMPLE_ROWS`` rows, else ``'kmeans'``: from k-means
        the sub-cluster sampler's first splits cut the k-means clusters (unions of true
        ones), and a cluster it cuts in two there stays in two for hundreds of
        iterations at 10^5-10^6 rows (10^6 Gaussian blobs with 20 clusters: 23 clusters
        and ARI 0.974 after 200 iterations from k-means, 20 and 1.0 after 60 from
        ``'subsample'``; ``benchmarks/bench_dp_caps.py --trace`` shows how they arise).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        Print sampler progress (about ten lines per chain; the sub-cluster sampler
        prints the iteration, the number of clusters, the log joint and the seconds
        per iteration).
    warm_start : bool, default=False
        If True and a Gibbs fit came before, its chains go on. On the same data
        ``fit`` continues them for ``n_sweeps`` more sweeps (no burn-in) and
        appends the new samples to ``samples_``. On new data of the same shape
        the likelihood is refitted and every statistic recomputed from the new
        ``X``; each chain restarts from its last partition and concentration,
        runs a burn-in, and the samples of the old data are dropped. Data of
        another shape raises a ValueError.
    n_prior_components : int, default=None
        If set, use the finite Dirichlet-multinomial prior with this many
        components (``discount`` must be 0) instead of the CRP.
    alpha_prior : tuple (shape, rate), default=None
        Gamma hyperprior on ``alpha``, resampled every sweep (Escobar-West for
        the CRP, slice sampling otherwise).
    n_split_merge : int, default=10
        Split-merge proposals per sweep (sequentially allocated, Dahl 2003); with
        ``method='subcluster'``, split or merge proposals per iteration (two
        sub-clusters launched on the proposed cluster's rows, in parallel).
    point_estimate : {'vi', 'binder', 'omari', 'nvi', 'nid', 'omari_approx', 'vi_lb', 'map'}, \
            default='vi'
        How ``labels_`` summarises the posterior: the clustering of smallest
        posterior expected loss (:func:`~sklearn_trellis.summaries.point_estimate`:
        variation of information, Binder, one minus the adjusted Rand index,
        normalised VI, normalised information distance, and the pairwise
        approximations of omARI and VI), or ``'map'``, the partition of highest
        joint density ``p(z, X)``. The default is VI because it is a metric on
        partitions and, unlike Binder, does not favour many small clusters
        (Wade & Ghahramani 2018). Gibbs: the search starts from the sample of
        smallest expected loss and pools every chain, so it is less sensitive
        than ``'map'`` to one chain's state (on ``benchmarks/bench_dp_mixture.py``
        ``'vi'`` raises the ARI of the overlapping 10,000-point blobs from about
        0.8 to 0.87 and stays within 0.02 of ``'map'`` on the other datasets);
        above 10,000 items ``'map'`` is used. Exact mode: ``'binder'`` is the
        *exact* Bayes estimate (minimised over all partitions from the exact
        pairwise marginals), ``'map'`` the exact MAP, ``'vi'`` the *exact*
        Bayes estimate too (its expected value is a sum over clusters:
        minimised over all partitions from the exact cluster marginals, up to
        16 items, :func:`~sklearn_trellis.engines.exact.binder.vi_point_estimate`;
        the same whatever ``random_state``); ``'omari_approx'`` and ``'vi_lb'``
        are searched on the exact pairwise marginals (exactly minimised up to
        10 items); ``'omari'``, ``'nvi'`` and ``'nid'`` (ratios, not sums over
        clusters) on the exact draws ``samples_``. ``approximation_`` says
        when ``labels_`` is not the exact minimiser.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Point estimate chosen by ``point_estimate``. Labels ``0..K-1`` in order
        of first appearance.
    n_clusters_ : int
        Clusters of ``labels_``.
    samples_ : ndarray of shape (n_kept, n_samples), dtype int32
        Kept partitions of all chains (chain after chain); exact mode: ``n_sweeps``
        exact posterior draws (the only exact-mode output that depends on
        ``random_state``, with the omARI, NVI and NID estimates searched on them).
    log_joints_ : ndarray of shape (n_kept,)
        ``log p(z, X)`` of each kept sample (Gibbs with learned
        hyperparameters: at the sample's hyperparameters; exact mode:
        marginalised over them).
    alphas_ : ndarray of shape (n_kept,)
        Concentration at each kept sample (constant without ``alpha_prior``).
    pairwise_marginals_ : ndarray of shape (n_samples, n_samples) or None
        Posterior co-clustering probabilities (exact, or sample frequencies);
        None when ``n_samples > 3000``.
    log_marginal_likelihood_ : float or None
        Exact mode: ``log p(X)`` exactly (natural log). Gibbs mode: None.
    n_clusters_distribution_ : ndarray of shape (n_samples,)
        ``P(K = k)`` for ``k = 1..n_samples`` (exact, or sample frequencies).
    method_ : str
        ``'exact'``, ``'gibbs'`` or ``'subcluster'``.
    approximation_ : str or None
        None for an exact fit whose ``labels_`` is the exact Bayes estimate
        (or MAP); for an exact fit whose point estimate is searched on the
        draws or is a local minimum, says so (every other output is exact);
        for a Gibbs fit, says so ("Gibbs sampling: ..." with the number of
        kept samples and chains).
    interrupted_ : bool
        True when a Ctrl-C ended sampling early (the samples so far are kept).
    model_ : ClusterLikelihood
        The fitted cluster model: the likelihood of ``likelihood`` fitted to
        ``X`` (resolved hyperparameters; for learned ones, the values the
        sampler starts from and the grid). A Gaussian likelihood is fitted to
        ``X`` minus the means of the features lying more than 1000 standard
        deviations from 0 (its ``mean_prior_`` moved alike), where float64
        would round their squares' sums; the model is the same.
    hyperparameters_ : dict of ndarray or None
        Learned likelihood hyperparameters at each kept sample, e.g.
        ``{'scale': ..., 'dof': ...}`` for the default
        :class:`~sklearn_trellis.models.NormalInverseWishart` grid hyperprior
        (exact mode: the grid point of each exact draw); None when the
        likelihood's hyperparameters are fixed.
    prior_ : PartitionPrior
    n_features_in_ : int

    Notes
    -----
    With the default likelihood the covariance prior's scale and degrees of
    freedom are learned (a grid hyperprior, see
    :class:`~sklearn_trellis.models.NormalInverseWishart`): Gibbs draws them
    each sweep, exact mode sums over the grid (``log_marginal_likelihood_``,
    ``pairwise_marginals_`` and the samples are then exact for the
    hierarchical model; with ``point_estimate='map'``, ``labels_`` is the
    partition of the most probable (partition, hyperparameter) pair). A Gibbs
    fit's ``predict``, ``predict_proba`` and ``score`` use each sample's own
    hyperparameters; an exact fit's sum over every partition and grid point
    (``score`` is exactly ``log p(X + x) - log p(X)``), whatever ``random_state``.

    ``predict_proba`` columns are the clusters of ``labels_`` then a last
    "new cluster" column: the posterior of the ``n + 1`` rows over the new
    row's cluster, ``P(x joins B | X, x)`` for every subset ``B`` of the fitted
    rows (the cluster marginal of ``B + {x}``; ``B`` empty: a new cluster),
    spread onto the clusters of ``labels_`` by ``|B n k| / |B|``. Exact mode
    sums it exactly over every partition and grid point (whatever
    ``random_state``). A Gibbs fit estimates it from up to 25 evenly spaced
    kept samples: each sample's probabilities of the new point joining each
    of its clusters (prior weight times posterior predictive density) are
    spread alike and averaged, each sample weighted by its predictive density
    of the point, ``p(x | z, X)`` (self-normalised importance weights: the
    kept samples are drawn given ``X``, not ``X`` and ``x``). The unweighted
    average of the per-sample probabilities, which the Gibbs fit reported
    before, is another quantity and not a posterior probability given ``x``.

    References
    ----------
    R. M. Neal. Markov chain sampling methods for Dirichlet process mixture
    models. JCGS 2000. D. B. Dahl. An improved merge-split sampler for
    conjugate Dirichlet process mixture models. 2003. S. Jain, R. M. Neal. A
    split-merge Markov chain Monte Carlo procedure for the Dirichlet process
    mixture model. JCGS 2004. M. D. Escobar, M. West. Bayesian density
    estimation and inference using mixtures. JASA 1995.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import DPMixture
    >>> X = np.array([[0.0, 0.1], [0.2, 0.0], [0.1, 0.2],
    ...               [5.0, 5.1], [5.2, 5.0], [5.1, 4.9]])
    >>> model = DPMixture(random_state=0).fit(X)
    >>> model.labels_
    array([0, 0, 0, 1, 1, 1])
    >>> model.method_
    'exact'
    >>> bool(model.pairwise_marginals_[0, 1] > 0.9)
    True
    """

    _nested_models = {"likelihood": "NormalInverseWishart()"}
    _parameter_constraints: dict = {
        **_BaseGibbs._parameter_constraints,
        "alpha": [Interval(Real, 0, np.inf, closed="neither")],
        "discount": [Interval(Real, 0, 1, closed="left")],
        "method": [StrOptions({"auto", "gibbs", "subcluster", "exact"})],
        "likelihood": [StrOptions(set(LIKELIHOODS)), ClusterLikelihood],
        "init": [StrOptions({"auto", "subsample", "kmeans", "one", "singletons", "random"}),
                 "array-like"],
        "n_prior_components": [Interval(Integral, 1, None, closed="left"), None],
        "alpha_prior": ["array-like", None],
        "n_split_merge": [Interval(Integral, 0, None, closed="left")],
        "point_estimate": [StrOptions({"map", *LOSSES})],
    }

    def __init__(self, likelihood="gaussian", *, alpha=1.0, discount=0.0, n_sweeps=400,
                 burn_in=None, thin=1, n_chains=1, n_jobs=None, method="auto",
                 max_exact_size=12, init="auto", random_state=None, verbose=0,
                 warm_start=False, n_prior_components=None, alpha_prior=None, n_split_merge=10,
                 point_estimate="vi"):
        super().__init__(n_sweeps=n_sweeps, burn_in=burn_in, thin=thin, n_chains=n_chains,
                         n_jobs=n_jobs, method=method, max_exact_size=max_exact_size,
                         random_state=random_state, verbose=verbose, warm_start=warm_start)
        self.likelihood = likelihood
        self.alpha = alpha
        self.discount = discount
        self.init = init
        self.n_prior_components = n_prior_components
        self.alpha_prior = alpha_prior
        self.n_split_merge = n_split_merge
        self.point_estimate = point_estimate

    # -- validation ----------------------------------------------------------------
    def _make_prior(self):
        """The partition prior, after the checks across parameters (each parameter alone:
        ``_parameter_constraints``)."""
        self._check_burn_in()
        gamma_hyperprior(self.alpha_prior)
        return make_prior(self.alpha, self.discount, self.n_prior_components)

    def _init_labels(self, X, data, rng, sampler, executor=None):
        """Starting labels of the rows of ``X`` (None: one cluster); ``data`` is what the
        sampler runs on (``executor``: its running shards, if any)."""
        if not isinstance(self.init, str):
            return check_given_labels(self.init, X.shape[0])
        init = self._named_init(X.shape[0], sampler)
        if init == "subsample":
            return self._subsample_init_labels(
                X, data if sampler is subcluster else self.model_.check_sampler_data(X), rng,
                executor)
        if is_dask_array(X):
            return self._dask_init_labels(X, init, rng)
        return initial_labels(init, X, rng, n_jobs=self.n_jobs)

    def _named_init(self, n_rows, sampler):
        """``init`` with ``'auto'`` resolved for ``n_rows`` rows run by ``sampler``: a
        subsample start for the sub-cluster sampler on more than ``SUBSAMPLE_ROWS`` rows,
        else k-means (``'given'`` for a given partition)."""
        if not isinstance(self.init, str):
            return "given"
        if self.init != "auto":
            return self.init
        large = n_rows > subcluster.SUBSAMPLE_ROWS
        return "subsample" if sampler is subcluster and large else "kmeans"

    def _subsample_init_labels(self, X, data, rng, executor=None):
        """``init='subsample'``: :func:`.engines.gibbs.subcluster.subsample_start` on
        ``data`` (the sub-cluster sampler's rows, or a dask array)."""
        if getattr(self.model_, "uncollapsed_kernels", None) is None:
            raise ValueError(f"init='subsample' runs the sub-cluster sampler, which needs a "
                             f"likelihood with an uncollapsed form; "
                             f"{type(self.model_).__name__} has none. Use init='kmeans'.")
        rows = subcluster.subsample_rows(X.shape[0])
        rows_X = X[rows].compute() if is_dask_array(X) else np.asarray(X)[rows]
        # one thread: the start does not depend on the machine's cores, and a loaded
        # machine's idle BLAS and OpenMP pools cost 20 times the k-means itself (10,000 x
        # 128 rows: 0.04 CPU s on one thread, 0.75 with both pools)
        with threadpool_limits(1):
            start = initial_labels("kmeans", rows_X, rng)
        return subcluster.subsample_start(
            self.model_, self.prior_, data, init_labels=start,
            n_split_merge=self.n_split_merge,
            hyperprior=gamma_hyperprior(self.alpha_prior), random_state=rng,
            executor=executor)

    # -- fitting ---------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
    def fit(self, X, y=None):
        """Sample (or compute exactly) the posterior over partitions of the rows of X.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            A dask array is sampled on the Dask workers that hold its chunks (the
            sub-cluster sampler, ``method='subcluster'`` or ``'auto'``; needs the ``dask``
            extra and a ``distributed.Client``): rows and labels stay on the workers, per
            iteration only parameters and sufficient statistics travel, and the same
            ``random_state`` gives the same chain on any number of workers. Under
            ``joblib.parallel_config(backend="dask")``, ``method='subcluster'`` sends the
            rows of an array to the workers in the same way. See the user guide's section
            on Dask.
        y : Ignored

        Returns
        -------
        self : DPMixture
        """
        prior = self._make_prior()
        client = _joblib_dask_client() if self.method == "subcluster" else None
        if client is not None and not is_dask_array(X):
            # under joblib.parallel_config(backend="dask"): the rows go to the workers
            X = _scatter_rows(X, client)
        if is_dask_array(X):
            return self._fit_dask(X, prior)
        given = X
        if self.method == "exact":   # decided by the parameters: before any work on X
            self._check_exact_request(rows_or_zero(X))
        self._check_warm_shape(np.shape(X))
        X = validate_kernel_data(self, X, dtype=[np.float64, np.float32],
                                 reset=not self._has_chains())
        warm = self._warm_start_mode(X)
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        if warm != "continue":  # the data-dependent priors follow the new data
            self.model_, self._offset, X = fit_likelihood(self.likelihood, X)
        else:
            X = shift_rows(X, getattr(self, "_offset", None))
        self.prior_ = prior
        exact = self._use_exact(n, self.model_.factorizes and not warm
                                and self.alpha_prior is None)
        sampler = None if exact else self._sampler(n)
        data = (self.model_.check_sampler_data(X) if sampler is subcluster
                else self.model_.check_data(X))
        if (isinstance(given, np.ndarray) and data.flags.writeable
                and np.may_share_memory(data, given)):
            # predictions must not follow later edits of the caller's X (a large
            # read-only X, e.g. a memory map, is kept shared: not duplicated)
            data = data.copy()
        if exact:
            self._fit_exact(data, rng)
        else:
            self._fit_gibbs(X, data, rng, warm, sampler)
        self._data = data
        self.n_clusters_ = int(self.labels_.max()) + 1
        self.hyperparameters_ = (None if self._sample_params is None
                                 else self.model_.describe_params(self._sample_params))
        return self

    def _fit_dask(self, X, prior):
        """Fit on a ``dask.array``: the sub-cluster sampler with the rows, labels and
        sub-cluster sides on the Dask workers (:class:`~.engines.gibbs.shards.DaskExecutor`);
        per iteration only parameters and sufficient statistics travel."""
        da, _ = import_distributed()
        if self.method not in ("subcluster", "auto"):
            raise ValueError(f"A dask array is sampled by the sub-cluster sampler only; got "
                             f"method={self.method!r}. Use method='subcluster' (or 'auto'), "
                             "or pass a NumPy array.")
        if self._has_chains():
            raise ValueError("warm_start does not continue chains on a dask array; set "
                             "warm_start=False (or fit a NumPy array).")
        if X.ndim != 2:
            raise ValueError(f"Expected a 2D dask array, got {X.ndim} dimension(s).")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        n, n_features = (int(v) for v in X.shape)
        if n < 1 or n_features < 1:
            raise ValueError(f"Found array with shape {X.shape}: DPMixture needs at least one "
                             "sample and one feature.")
        # decided by the parameters and the shape: refused before any row is read
        if make_likelihood(self.likelihood).uncollapsed_kernels is None:
            raise ValueError(f"A dask array is sampled by the sub-cluster sampler, which needs "
                             f"a likelihood with an uncollapsed form; "
                             f"{type(self.likelihood).__name__} has none. Pass a NumPy array.")
        self._check_dask_memory(n, n_features, X.dtype.itemsize)
        dask_client()
        if not bool(da.isfinite(X).all().compute()):
            raise ValueError("Input X contains NaN or infinity.")
        self.n_features_in_ = n_features
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        rng = check_random_state(self.random_state)
        rows = np.unique(np.linspace(0, n - 1, min(n, DASK_PRIOR_ROWS)).astype(np.int64))
        # far features centred as in the NumPy path, by an offset read off the prior rows;
        # the workers subtract it lazily (new rows are shifted alike by _new_rows)
        self.model_, self._offset, self._prior_rows = fit_likelihood(self.likelihood,
                                                                     X[rows].compute())
        if self._offset is not None:
            X = X - self._offset
        self.prior_ = prior
        self._data_fingerprint = (tuple(X.shape), np.dtype(X.dtype).str, None)
        self._fit_gibbs(X, X, rng, None, subcluster)
        del self._prior_rows
        self._data = None
        self.n_clusters_ = int(self.labels_.max()) + 1
        self.hyperparameters_ = (None if self._sample_params is None
                                 else self.model_.describe_params(self._sample_params))
        return self

    def _check_dask_memory(self, n, n_features, itemsize):
        """Refuse a dask fit before its rows are read when what this process holds would
        not fit: the prior rows gathered here (``DASK_PRIOR_ROWS`` at most) and the
        float64 copies the prior's fit (and a k-means start) makes of them, then the
        kept samples beside those rows, their index and the start labels (int64)."""
        m = min(n, DASK_PRIOR_ROWS)
        gathered = itemsize * m * n_features
        kmeans = self._named_init(n, subcluster) == "kmeans"   # a dask array: sub-cluster
        copies = 8 * m * n_features * (2 if kmeans else 1)
        check_memory(gathered + copies, f"the ({m:,}, {n_features:,}) prior rows gathered on "
                     "this process and their copies (the likelihood's default "
                     f"hyperparameters{' and the k-means start' if kmeans else ''})",
                     way_out="Use fewer features.")
        held = gathered + 8 * m + 16 * n
        self._check_samples_memory(n, self.n_chains, None, beside=(
            held, "the prior rows, their index and the start labels held here"))

    def _dask_init_labels(self, X, init, rng):
        """Starting labels of a dask array's rows for a named ``init`` (None: one
        cluster). k-means is fitted on the prior rows and its nearest centres are computed
        on the workers."""
        if init == "one":
            return None
        if init == "kmeans":
            # fitted on the threads n_jobs allows, as initial_labels' k-means. The workers
            # predict as they are set up (Dask's nanny starts them with one OpenMP and BLAS
            # thread; threadpoolctl's limits are per process, so a per-task limit would
            # race between a worker's threads)
            kmeans = fitted_kmeans(self._prior_rows,
                                   min(self._prior_rows.shape[0], KMEANS_INIT_CLUSTERS), rng,
                                   self.n_jobs)
            return X.rechunk({1: -1}).map_blocks(kmeans.predict, drop_axis=1,
                                                 dtype=np.int32).compute()
        return initial_labels(init, np.empty((X.shape[0], 0)), rng)

    def _check_exact_request(self, n):
        """Refuse exact inference the parameters rule out."""
        if self.alpha_prior is not None:
            raise ValueError("method='exact' needs a fixed alpha (alpha_prior=None).")
        self._check_exact_size(n)

    def _fit_exact(self, data, rng):
        self._check_exact_request(data.shape[0])
        posterior = GridMarginalPosterior(self.prior_, self.model_,
                                          self.max_exact_size).fit(data)
        self._set_method("exact")
        self.log_marginal_likelihood_ = posterior.log_marginal_likelihood
        self.samples_, points = posterior.sample(self.n_sweeps, rng)
        self.samples_ = self.samples_.astype(np.int32)
        self.log_joints_ = posterior.log_joints(self.samples_)
        self.alphas_ = np.full(self.n_sweeps, self.prior_.alpha)
        self.pairwise_marginals_ = posterior.pairwise_marginals()
        if self.point_estimate == "map":
            self.labels_ = posterior.map_labels
        else:  # Binder and VI: from the exact marginals (pairs, clusters)
            marginals = ClusterMarginals(posterior.cluster_marginals(),
                                         candidates=posterior.map_labels[None])
            labels, note = bayes_estimate(
                self.point_estimate, pairwise=self.pairwise_marginals_, samples=self.samples_,
                exact=True, cluster_marginals=marginals,
                random_state=rng.randint(2**31 - 1), note_for="labels_")
            self.labels_ = labels.astype(np.int64)
            if note is not None:   # every other output is exact
                self.approximation_ = note
        self.n_clusters_distribution_ = posterior.n_clusters_distribution()
        self._sample_params = (posterior.grid_params[points]
                               if posterior.grid_params.shape[0] > 1 else None)
        self._chains = None
        self._exact_predictive = posterior.predictive()

    def _sampler(self, n):
        """The sampling engine: ``method='subcluster'``, or ``'auto'`` from
        ``SUBCLUSTER_AUTO_SIZE`` rows on when the likelihood has an uncollapsed form."""
        has_form = getattr(self.model_, "uncollapsed_kernels", None) is not None
        if self.method == "subcluster":
            if not has_form:
                raise ValueError(f"method='subcluster' needs a likelihood with an uncollapsed "
                                 f"form (cluster parameter draws); "
                                 f"{type(self.model_).__name__} has none. Use "
                                 "method='gibbs'.")
            return subcluster
        if self.method == "auto" and has_form and n >= SUBCLUSTER_AUTO_SIZE:
            return subcluster
        return gibbs

    def _fit_gibbs(self, X, data, rng, warm, sampler):
        n = X.shape[0]
        self._exact_predictive = None
        self._check_samples_memory(n, len(self._chains.states) if warm else self.n_chains, warm)
        hyper = gamma_hyperprior(self.alpha_prior)
        record = gibbs.record_params if self.model_.resamples_hyperparameters else None
        dask = is_dask_array(data)
        if dask:   # the predictive then needs each sample's statistics, not the rows
            record = subcluster.record_statistics
        kwargs = dict(n_sweeps=self.n_sweeps, burn_in=self._burn_in(warm), thin=self.thin,
                      n_split_merge=self.n_split_merge, hyperprior=hyper,
                      verbose=self.verbose, record=record)
        if warm:
            states = list(self._chains.states)
            state_type = (subcluster.SubclusterState if sampler is subcluster
                          else gibbs.GibbsState)
            if warm == "restart" or not isinstance(states[0], state_type):
                # new data, or the other sampler: the last partitions initialise the chains
                states = [sampler.new_state(self.model_, data, state.compact_labels(),
                                            state.alpha,
                                            params=state.params if warm == "continue" else None)
                          for state in states]
            results = sampler.run_chains(self.model_, self.prior_, data,
                                         n_chains=len(states), n_jobs=self.n_jobs,
                                         random_state=rng, states=states, **kwargs)
        else:
            # a dask array's shards (Dask actors) built once, for the start and every chain
            executor = subcluster.make_executor(self.model_, data) if dask else None
            init = self._init_labels(X, data, rng, sampler, executor)
            results = sampler.run_chains(self.model_, self.prior_,
                                         data if executor is None else executor,
                                         n_chains=self.n_chains, n_jobs=self.n_jobs,
                                         random_state=rng, init_labels=init, **kwargs)
        chains = self._store_chains(results, self.model_, self.prior_, record=record, warm=warm,
                                    method="subcluster" if sampler is subcluster else "gibbs")
        n_params = self.model_.kernel_params().size
        self._sample_statistics = None
        if dask:
            self._sample_statistics = [(suff, counts) for _, suff, counts in chains.records]
            records = [params for params, _, _ in chains.records]
            chains.records = records
            if not self.model_.resamples_hyperparameters:
                record = None
        else:
            records = chains.records
        self._sample_params = (None if record is None else
                               np.array(records, dtype=np.float64).reshape(-1, n_params))
        self.alphas_ = chains.alphas
        if (self.point_estimate == "map" or self.samples_.shape[0] == 1
                or n > MAX_LOSS_ESTIMATE_ITEMS):
            self.labels_ = self.samples_[self._best_sample()].astype(np.int64)
        else:
            if self.point_estimate in PAIRWISE_LOSSES:  # they hold an n x n matrix
                check_memory(8 * n * n, f"the ({n}, {n}) co-clustering matrix of "
                             f"point_estimate={self.point_estimate!r}",
                             way_out="Use point_estimate='map' (no N x N matrix).")
            self.labels_ = _loss_point_estimate(
                self.samples_, loss=self.point_estimate, n_runs=0,
                random_state=rng.randint(2**31 - 1)).astype(np.int64)

    # -- new points ------------------------------------------------------------
    def _new_rows(self, X):
        """New rows as the fitted model reads them: validated, shifted by the fit's
        centring offset (``fit_likelihood``) and checked by ``model_``."""
        X = validate_kernel_data(self, X, dtype=np.float64, reset=False)
        return self.model_.check_data(shift_rows(X, getattr(self, "_offset", None)))

    def _predictive(self, X):
        """Per kept sample (MAX_PREDICTIVE_SAMPLES at most): log weights (m, K_s + 1)."""
        check_is_fitted(self)
        data_new = self._new_rows(X)
        count = self.samples_.shape[0]
        picks = predictive_picks(count)
        # float64 rows for the collapsed kernels (a float32 fit's copy): once per call
        data_train = None if self._data is None else self.model_.kernel_data(self._data)
        for s in picks:
            pp = self.prior_.with_alpha(self.alphas_[s]).kernel_params()
            labels = self.samples_[s].astype(np.int64)
            params = None if self._sample_params is None else self._sample_params[s]
            if self._data is None:  # a dask fit: the sample's statistics, not the rows
                suff, counts = self._sample_statistics[s]
                yield labels, subcluster.predictive_log_weights(
                    self.model_, pp, self.model_.kernel_params() if params is None else params,
                    suff, counts, data_new)
                continue
            yield labels, gibbs.predictive_log_weights(self.model_, pp, data_train,
                                                       labels, data_new, params)

    def predict_proba(self, X):
        """Posterior probability that each new row joins each cluster of ``labels_`` or a new one.

        An exact fit: ``P(x joins B | X, x)`` of every subset ``B`` of the fitted
        rows from the exact posterior of the ``n + 1`` rows, spread onto the
        clusters of ``labels_`` by overlap (deterministic, see Notes); a Gibbs fit
        estimates the same from up to 25 kept samples, each weighted by its
        predictive density of the row.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_new, n_features)

        Returns
        -------
        proba : ndarray of shape (n_new, n_clusters_ + 1)
            (a lazy dask array for a dask ``X``, computed chunk by chunk).
            Columns: clusters ``0..n_clusters_-1`` of ``labels_``, then "new cluster".
        """
        check_is_fitted(self)
        if is_dask_array(X):
            return _blockwise(X, self.predict_proba, np.float64, self.n_clusters_ + 1)
        exact = getattr(self, "_exact_predictive", None)
        if exact is None:   # the same quantity, estimated from the kept samples
            return self._mean_predictive_proba(X, weighted=True)
        data_new = self._new_rows(X)
        columns = subset_columns(self.labels_, self.n_clusters_)
        proba = np.empty((data_new.shape[0], self.n_clusters_ + 1))
        # rows in blocks: the subsets' probabilities are (rows, 2**n), 32 KB a row at 12 rows
        for start in range(0, data_new.shape[0], EXACT_PREDICT_BLOCK):
            probs = exact.assignment_probabilities(data_new[start:start + EXACT_PREDICT_BLOCK])
            for offset, row in enumerate(probs):   # row by row: the same bits in any block
                proba[start + offset] = row @ columns
        _refuse_rows_without_density(np.isnan(proba[:, 0]))
        return proba

    def predict(self, X):
        """Most probable column of :meth:`predict_proba`; ``n_clusters_`` means a new cluster.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_new, n_features)

        Returns
        -------
        labels : ndarray of shape (n_new,)
            (a lazy dask array for a dask ``X``).
        """
        if is_dask_array(X):
            check_is_fitted(self)
            return _blockwise(X, self.predict, np.int64)
        return np.argmax(self.predict_proba(X), axis=1)

    def score_samples(self, X):
        """Log posterior predictive density ``log p(x | X)`` of each row, scored alone.

        A new row joins cluster ``k`` with the prior's weight (CRP:
        ``n_k / (n + alpha)``) and is scored by the cluster's posterior predictive,
        or opens a new cluster (``alpha / (n + alpha)``, the prior predictive). An
        exact fit sums this over every partition and hyperparameter grid point
        with its posterior probability, which is ``log p(X + x) - log p(X)``
        exactly (deterministic, whatever ``random_state``); a Gibbs fit averages
        it over up to 25 evenly spaced kept samples, each at its own ``alpha`` and
        hyperparameters.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_new, n_features)

        Returns
        -------
        log_density : ndarray of shape (n_new,)
            (a lazy dask array for a dask ``X``).
        """
        check_is_fitted(self)
        if is_dask_array(X):
            return _blockwise(X, self.score_samples, np.float64)
        exact = getattr(self, "_exact_predictive", None)
        if exact is None:
            return self._mean_predictive_log_density(X)
        density = exact.log_density(self._new_rows(X))
        _refuse_rows_without_density(np.isnan(density))   # -inf (underflow) is an answer
        return density

    def score(self, X, y=None):
        """Mean log posterior predictive density of the rows of X (higher is better).

        The mean of :meth:`score_samples` (exact for an exact fit).

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_new, n_features)
        y : Ignored

        Returns
        -------
        score : float
        """
        if is_dask_array(X):
            return float(self.score_samples(X).mean().compute())
        return float(np.mean(self.score_samples(X)))


def _joblib_dask_client():
    """The Dask client of an active ``joblib.parallel_config(backend="dask")``, else None."""
    from joblib.parallel import get_active_backend
    backend = get_active_backend()[0]
    return getattr(backend, "client", None) if type(backend).__name__.startswith("Dask") \
        else None


def _scatter_rows(X, client):
    """``X`` as a dask array of about two chunks per worker (whole blocks of rows)."""
    da, _ = import_distributed()
    X = np.asarray(X)
    if X.ndim != 2:
        return X   # validated (and refused) by the NumPy path
    n_workers = max(1, len(client.scheduler_info().get("workers", ())))
    chunk = -(-max(1, X.shape[0] // (2 * n_workers)) // BLOCK_ROWS) * BLOCK_ROWS
    return da.from_array(X, chunks=(chunk, -1))


def _blockwise(X, method, dtype, n_columns=None):
    """``method`` applied to every row chunk of the dask array ``X``: a lazy dask array
    (one row per row of ``X``; ``n_columns`` columns, or one dimension)."""
    X = X.rechunk({1: -1})
    if n_columns is None:
        return X.map_blocks(method, drop_axis=1, dtype=dtype)
    return X.map_blocks(method, chunks=(X.chunks[0], (n_columns,)), dtype=dtype)


__all__ = ["DPMixture"]
