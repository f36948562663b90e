"""Collapsed Gibbs engine for flat models with a partition prior and conjugate clusters.

The engine samples partitions ``z`` of ``n`` items from

    p(z | X)  proportional to  EPPF(z) * exp(sum_{clusters c} log_cluster(c) + log_global)

where the EPPF is an exchangeable partition prior (:mod:`sklearn_trellis.models.priors`) and the
likelihood part is computed by a *cluster likelihood* object that keeps
sufficient statistics per cluster. It knows nothing about the model beyond the
protocol below, so any conjugate cluster model (Gaussian NIW, Normal-Gamma,
Beta-Bernoulli, Dirichlet-multinomial in :mod:`sklearn_trellis.models.conjugate`,
the Wishart block model of fastTIWD, ...) plugs in by implementing it.

How a new cluster model plugs in
================================

1. Partition prior (:mod:`sklearn_trellis.models.priors`)
-----------------------------------------------------------
``CRP(alpha)``, ``PitmanYor(alpha, discount)``, ``DirichletMultinomialPrior(alpha,
n_components)``. Every prior is written as

    log EPPF(n_1..n_K) = log_normaliser(n) + log_count(K) + sum_b log_block(n_b)

(``log_count`` is the only factor that does not factorise over clusters:
``K log alpha`` for the CRP, ``sum_{k<K} log(alpha + k d)`` for Pitman-Yor,
``log k!/(k-K)!`` for the Dirichlet-multinomial). Python methods:
``log_eppf(sizes)``, ``log_predictive_weights(sizes)`` (log weight of joining
each existing cluster, then of a new one, unnormalised - the common
denominator ``n - 1 + alpha`` is dropped), ``log_count(K)``, ``log_block(m)``,
``kernel_params()``. Inside numba the prior is the float array
``pp = kernel_params() = [alpha, discount, n_components]`` (``n_components = 0``
means infinite) read by ``sklearn_trellis.models.prior_kernels`` (``log_weight_existing(pp, m)``,
``log_weight_new(pp, K)``, ``log_block(pp, m)``, ``log_count(pp, K)``).
``GammaHyperprior(shape, rate)`` resamples ``alpha`` once per sweep
(Escobar & West's auxiliary-variable update for the CRP, slice sampling on
``log alpha`` for the other priors).

2. Cluster likelihood protocol (:class:`sklearn_trellis.models.likelihood.ClusterLikelihood`)
---------------------------------------------------------------------------------------------
A likelihood is a small ``BaseEstimator`` (hyperparameters in ``__init__`` so
``GridSearchCV`` reaches them as ``likelihood__kappa``). ``fit(X)`` validates
the data, fills data-dependent defaults and returns ``self``. The engine then
asks it for:

- ``kernel_params()`` -> float64 1-d array ``params`` (its hyperparameters in
  any layout it likes);
- ``kernel_data(X)`` -> float64 C-contiguous 2-d array ``data`` with one row
  per item (fastTIWD: the similarity matrix ``S`` itself, row ``i`` = ``S[i]``);
- ``n_stats`` (columns of the per-cluster statistics table), ``n_shared``
  (length of a global statistics vector, for likelihoods that do not factorise
  over clusters, 0 otherwise) and ``work_size(capacity)`` (length of a per-item
  scratch vector; fastTIWD keeps the row block sums ``r_b`` there, one per
  cluster slot);
- ``kernels``: a :class:`sklearn_trellis.models.likelihood.GibbsKernels` named tuple of eight
  ``numba.njit(cache=True)`` functions. The engine compiles its kernels (Gibbs
  scan, split-merge, log joint, subset table, predictive) once per likelihood
  with these functions bound as globals (``_gibbs_kernels.specialise``): the
  calls are direct and inlinable, no Python runs in the item loop, and the
  compiled kernels are cached on disk. (Passing the functions as first-class
  numba dispatcher *arguments* also works and is as fast, but numba cannot
  cache such kernels, which costs ~15 s of compilation per likelihood in every
  new process - every joblib worker.) Editing a likelihood's module changes
  the cache key, so its engine kernels are recompiled.

State: ``stats`` is a float64 table ``(capacity, n_stats)``, one row per
cluster *slot* (labels inside the engine are slot ids; empty slots are
recycled); ``shared`` is float64 ``(n_shared,)``; ``work`` float64
``(work_size(capacity),)``. The eight kernels, all ``@njit(cache=True)``:

``reset(params, stats, c)``
    Put row ``c`` in the empty-cluster state (called on every free slot; the
    engine never adds to a row it has not reset).
``prepare(params, data, labels, stats, shared, work, i)``
    Item-specific scratch, called before item ``i`` is removed and its
    candidates scored. ``labels[j] == -1`` marks items currently unassigned;
    skip them and ``i`` itself. Conjugate models: nothing to do
    (use :func:`sklearn_trellis.models.likelihood.no_prepare`).
``add(params, data, stats, shared, work, c, i)`` / ``remove(...)``
    Add item ``i`` to / remove it from the statistics of slot ``c`` (and the
    shared vector). ``remove`` of the last item need not leave an exact empty
    row: the engine calls ``reset`` on slots that become empty.
``log_predictive(params, data, stats, shared, work, c, i) -> float``
    ``log p(x_i | items of c)`` with ``i`` not in ``c``; ``c`` may be an empty
    (reset) row, which gives the new-cluster term. Called after ``prepare`` and
    ``remove``. May read ``shared`` (fastTIWD: the change of the global trace
    term when ``i`` joins ``c``). Also used with ``data`` = new points (rows not
    in the training set) for the posterior predictive of ``predict``/``score``.
``log_cluster(params, stats, shared, c) -> float``
    ``log m(X_c)``, the marginal likelihood of the items of slot ``c``.
``log_global(params, shared) -> float``
    The part of the log likelihood that is not a sum over clusters (0 for a
    conjugate mixture, :func:`sklearn_trellis.models.likelihood.zero_global`). The log joint is
    ``log EPPF + sum_c log_cluster(c) + log_global``; split-merge acceptance
    and the log-posterior of stored samples use it.
``refresh(params, data, labels, stats, shared, active, n_active)``
    Recompute cached quantities from scratch (once per sweep against floating
    point drift, after ``params`` change, and after the initial build of a
    state, which zeroes ``shared`` and then calls ``add`` for every item - so a
    likelihood with a non-zero initial ``shared``, e.g. fastTIWD's ``tr S``,
    sets it here); ``active[:n_active]`` are the occupied slots. May do
    nothing (:func:`sklearn_trellis.models.likelihood.no_refresh`). A likelihood
    whose ``refresh`` computes every occupied slot from the labels alone sets
    ``refresh_rebuilds = True``: a new state is then built by ``reset`` of every
    slot and one ``refresh``, without adding the items one by one. One whose
    ``refresh`` is a ``refresh_by_adding`` (it resets the occupied slots and adds
    every item in order; ``refresh_interpretable`` detects it) has its Python
    source run around the compiled ``reset`` and ``add`` on small states (one
    kernel less to compile in a first fit).

Optional Python hook ``resample_params(params, stats, shared, counts, active,
random_state)``: called once per sweep, returns new ``params`` or ``None``
(fastTIWD: the theta grid update; NormalInverseWishart: its scale / dof grid).
New params go through :func:`.sampler.set_params`, which resets the free slots
(they score new clusters) and calls ``refresh``, then the optional Python hook
``refresh_work(params, stats, shared, work, active, n_active)`` for cached state
kept in ``work`` (fastTIWD's cross-block sums; ``grow_work(work, old_capacity,
new_capacity)`` keeps such state when the slots are doubled). Such a likelihood,
whose moves change more than the two clusters' rows of ``stats`` and ``shared``,
sets ``nonlocal_state = True``: a rejected split-merge proposal then restores
the whole of ``stats`` and ``work``. A likelihood whose
hyperprior is a finite grid also returns it from ``hyperparameter_grid()``
(``(params, log_prior)``); exact inference then marginalises it
(:class:`sklearn_trellis.engines.exact.grid_marginal.GridMarginalPosterior`), and
``describe_params(params)`` names the values (progress lines print them).

A likelihood whose ``log_global`` is identically zero factorises over
clusters (``factorizes = True``): exact mode then builds the cluster
log-potential table ``log m(X_B)`` for all subsets from the same kernels
(:meth:`sklearn_trellis.models.likelihood.ClusterLikelihood.subset_log_marginals`).

3. Driver (:mod:`.sampler`)
---------------------------
``run_chains(likelihood, prior, X, n_chains=..., n_jobs=..., random_state=...)``
runs independent chains through :class:`sklearn.utils.parallel.Parallel`
(seeds drawn from ``random_state``, so ``joblib.parallel_config(backend="dask")``
distributes them) and returns one :class:`.sampler.ChainResult` per chain:
kept samples (``burn_in``, ``thin``), their log joint, ``alpha`` trace and the
final :class:`.sampler.GibbsState`, which ``run_chain(..., state=...)``
continues (``warm_start``). ``record(state)``, if given, is evaluated at
every kept sample (``ChainResult.records``): ``DPMixture`` keeps the
hyperparameters with :func:`.sampler.record_params`, ``FastTIWD`` its ``theta``
and ``E[alpha]``. :func:`.chains.collect_chains` pools the results of all
chains (appended to those of an earlier fit on a warm start) into one sample
set. ``verbose`` prints progress; Ctrl-C ends the current chain early and
keeps the samples drawn so far (``interrupted=True``).
Each sweep is a sequential Gibbs scan (Neal's Algorithm 3) over the non-fixed
items in random order, followed by ``n_split_merge`` sequentially-allocated
split-merge proposals (Dahl 2003, in the family of Jain & Neal 2004), which
let chains leave one-cluster and k-means starts.
:func:`.sampler.map_chains` is the one chain dispatcher (seeds, joblib,
Ctrl-C), used by ``run_chains`` and by the biclustering driver.

4. Block models of matrices (:mod:`.bicluster`)
-----------------------------------------------
:class:`sklearn_trellis.models.cell_blocks.CellBlocks` is a likelihood of this
protocol whose items are the rows of a matrix and whose columns fall into
groups of i.i.d. cells (:mod:`sklearn_trellis.models.cells`). Biclustering
(``InfiniteBiclustering``) alternates two half-sweeps of this engine: the rows
with the columns grouped by their clusters, then the columns (rows of ``X.T``)
with the rows grouped by theirs (:func:`.bicluster.bicluster_sweep`).
"""
