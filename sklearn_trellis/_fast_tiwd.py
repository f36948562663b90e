"""``FastTIWD``: Bayesian partitioning of distance matrices (Adametz & Roth 2011)."""

import contextlib
import functools
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import ClusterMixin, _fit_context
from sklearn.metrics import pairwise_distances
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from ._core.budget import check_memory, rows_or_zero
from ._core.compilation import announces_compilation
from ._core.labels import first_appearance_labels
from ._core.pairwise import check_square_symmetric
from ._core.validation import check_label_vector, check_random_state, validate_kernel_data
from ._gibbs_base import (MAX_PAIRWISE_ITEMS, _BaseGibbs, _refuse_rows_without_density,
                          check_given_labels, predictive_picks, subset_columns)
from .engines.exact.trellis_for_model import trellis_for_model
from .engines.gibbs import sampler as gibbs
from .models.priors import make_prior
from .models.wishart import (ClusterSums, WishartBlockModel, block_cross_sums, block_scale_means,
                             block_statistics,
                             data_log_density_terms, estimate_dof,
                             estimate_dof_from_distances, new_item_data_terms,
                             new_item_log_likelihoods, scale_summary)
from .models.wishart_likelihood import WishartBlockLikelihood
from .preprocessing.distance_normalization import (NORMALIZATIONS, mean_squared_distance,
                                                   new_item_inner_products,
                                                   normalized_inner_products)
from .summaries.occurrence import COOCCURRENCE_BYTES_PER_PAIR

#: The sampler sums up to n**2 entries of S*: the largest squared distance times n**2
#: must stay below ``MAX_SUM``; unless all objects coincide, it must also reach
#: ``MIN_SQUARED_DISTANCE`` (squared distances of feature rows may underflow).
MAX_SUM = 1e306
MIN_SQUARED_DISTANCE = 1e-300

#: ``dof='auto'`` learns ``dof`` in the chain up to this many objects: it needs ``log pdet``
#: of ``S*``, one ``O(n^3)`` Cholesky factorisation (and an ``n x n`` float64 copy).
MAX_LEARNED_DOF_ITEMS = 4000


def _theta_scale_mean_and_dof(likelihood, state):
    """``record`` of the chains: ``theta``, ``E[scale]`` and ``dof`` at each kept sample
    (``O(K)``; ``O(K^2)`` for the translation-invariant likelihood)."""
    theta, dof = float(state.params[0]), float(state.params[1])
    active = state.active[:state.meta[0]]
    cross = (likelihood.cross_sums(state.stats, state.work, active)
             if likelihood.translation_invariant else None)
    return theta, likelihood.scale_mean(state.stats[active, 0], state.stats[active, 1], theta,
                                        cross, dof), dof


def _class_constraint(table, y):
    """Forbid (``-inf``) every cluster that splits a known class or joins two of them."""
    masks = np.arange(table.size)
    n_touched = np.zeros(table.size, dtype=np.int64)
    for cls in np.unique(y[y >= 0]):
        class_mask = int(np.sum(1 << np.flatnonzero(y == cls)))
        inside = masks & class_mask
        table[(inside != 0) & (inside != class_mask)] = -np.inf
        n_touched += inside != 0
    table[n_touched > 1] = -np.inf
    return table


def _check_squared_distance_range(dist, X=None):
    """Refuse squared distances whose sums overflow, or that underflowed from feature rows."""
    n = dist.shape[0]
    top = float(np.max(dist)) if dist.size else 0.0
    if not top * n * n <= MAX_SUM:
        how = ("the distance matrix (e.g. divide it by its largest entry)" if X is None
               else "X (e.g. with sklearn.preprocessing.StandardScaler)")
        raise ValueError(f"The squared distances reach {top:.3g}: with n={n} objects their "
                         f"sums overflow float64 (n**2 * max must stay below {MAX_SUM:g}); "
                         f"rescale {how}.")
    if X is not None and top < MIN_SQUARED_DISTANCE and np.any(X != X[:1]):
        raise ValueError(f"The squared distances of X underflow float64 (largest {top:.3g}) "
                         "although the rows differ: rescale X (e.g. with "
                         "sklearn.preprocessing.StandardScaler).")


def _check_new_squared_distances(D_new, n_fitted):
    """Refuse new items' squared distances whose sums with the fitted ones overflow."""
    top = float(np.max(D_new)) if D_new.size else 0.0
    if not top * (n_fitted + 1) ** 2 <= MAX_SUM:
        raise ValueError(f"The squared distances of the new items to the fitted ones reach "
                         f"{top:.3g}: with n={n_fitted} fitted objects their sums overflow "
                         f"float64 (n**2 * max must stay below {MAX_SUM:g}); the new items "
                         "lie too far from the fitted data for float64.")


@contextlib.contextmanager
def _new_items_in_range():
    """Turn float64 overflow in new items' terms into a clear ValueError."""
    try:
        with np.errstate(over="raise", invalid="raise"):
            yield
    except FloatingPointError:
        raise ValueError("The new items' terms overflow float64 under the fitted "
                         "normalisation: the new items lie too far from the fitted data at "
                         "its scale (rescale the data, or score items nearer to it).") from None


def _data_scale(dist):
    """The mean squared distance between distinct objects (1 if all coincide)."""
    scale = mean_squared_distance(dist)
    return scale if scale > 0 and np.isfinite(scale) else 1.0


def _warn_items_in_the_span(in_span, n_fitted, rank):
    """Say why new items whose Schur complement is 0 score ``-inf`` (right by the model)."""
    if not np.any(in_span):
        return
    items = np.flatnonzero(in_span)
    shown = ", ".join(map(str, items[:5])) + (", ..." if items.size > 5 else "")
    warnings.warn(
        f"FastTIWD.score is -inf for {items.size} new item(s) (rows {shown}): each lies in "
        f"the span of the {n_fitted} fitted items (a copy of a fitted row, or points with "
        f"at most {rank} features), so the inner products of the {n_fitted + 1} items "
        "form a singular Wishart matrix, which has no density. Score held-out items, not "
        "the training rows.", UserWarning, stacklevel=3)


class FastTIWD(ClusterMixin, _BaseGibbs):
    """Bayesian partitioning of a squared-distance matrix (fastTIWD), ``O(n^2)`` per Gibbs sweep.

    The n objects are assumed to have inner products ``S ~ W_d(Sigma)``
    (central Wishart, ``d`` degrees of freedom) with block covariance
    ``Sigma = scale (I + theta B)``, ``B`` the unknown partition matrix, and a
    Dirichlet-multinomial prior with ``k`` blocks (or its Ewens / CRP limit) on
    ``B``. Distances only determine ``S`` up to a translation; fastTIWD fixes
    one representative ``S* = -Q D Q^T / 2`` with ``Q`` built from a tree
    estimate of ``Sigma`` (single linkage by default, developer notes, fastTIWD (f)), in ``O(n^2)``.
    ``scale`` is integrated out under an inverse-gamma prior, ``theta`` is
    sampled on a grid after every sweep, and a collapsed Gibbs sampler (the
    shared engine of :mod:`sklearn_trellis.engines.gibbs`) resamples each object's
    block from its exact conditional (Adametz & Roth 2011).

    The likelihood of distances is the exact translation-invariant one of
    TIWD (Vogt et al. 2010): that of ``L S L^T ~ W_d(L Sigma L^T)`` for a
    contrast ``L``, which is the same for every ``S`` with distances ``D``
    (:func:`~sklearn_trellis.models.wishart.translation_invariant_terms`), so
    the normalisation only picks the representative the sampler and
    :meth:`predict_proba` work on. It needs the ``K x K`` cross-block sums of
    ``S*``, updated in ``O(K)`` when an object moves: a conditional still
    costs ``O(n + K)``. (Adametz & Roth's likelihood treats ``S*`` itself as
    Wishart; on distances it is overconfident.) With feature rows and
    ``normalization='none'`` ``S = X X^T`` itself is Wishart (zero-mean rows).

    With ``scale`` and ``theta`` both fixed and ``normalization='none'`` the
    posterior factorises over blocks; for ``n <= max_exact_size``
    ``method='exact'`` then computes it exactly with the cluster trellis (all
    ``Bell(n)`` partitions). The translation-invariant likelihood of
    distances does not factorise: distances are always sampled.

    Parameters
    ----------
    metric : {'precomputed', 'sqeuclidean'}, default='precomputed'
        ``'precomputed'``: ``X`` is the (n, n) matrix of squared Euclidean
        distances. ``'sqeuclidean'``: ``X`` holds feature rows and their squared
        Euclidean distances are used.
    n_sweeps : int, default=200
        Gibbs sweeps per chain (exact mode: number of exact posterior draws
        stored in ``samples_``).
    burn_in : int, default=None
        Sweeps discarded at the start of each chain; ``None`` means ``n_sweeps // 2``.
    thin : int, default=1
        Keep every ``thin``-th sweep after the burn-in.
    dof : float or 'auto', default='auto'
        Wishart degrees of freedom ``d`` (the dimension of the hidden vectors
        if known). It also acts as an inverse temperature: larger ``d`` makes
        the posterior sharper (an annealing schedule can be run with
        ``warm_start``). ``'auto'``: ``d`` is learned by the fit, sampled in
        the Gibbs chain from its exact conditional ``p(d | B, theta, S*)``
        after every ``theta`` draw (slice sampling of ``log d``, flat prior on
        ``log d`` over the Wishart's support ``d > r - 1``, ``r`` the rank
        ``n - 1`` of the distances' likelihood or ``n`` for feature rows with
        ``normalization='none'``; the likelihood is complete in ``d``:
        :func:`~sklearn_trellis.models.wishart.dof_log_likelihood`). ``d`` is
        then averaged over like the partition: :meth:`predict_proba`,
        ``pairwise_marginals_`` and :meth:`score` carry its uncertainty
        (``dof_samples_``). The chain starts from the moment estimates
        (the larger of :func:`~sklearn_trellis.models.wishart.estimate_dof` on
        ``S*`` and, on distances,
        :func:`~sklearn_trellis.models.wishart.estimate_dof_from_distances`;
        both err low). Learning needs ``log pdet S*`` (one ``O(n^3)``
        Cholesky factorisation) and a non-singular ``S*``: when ``S*`` is
        singular (objects in fewer dimensions than ``r``, so ``d`` would be the
        rank exactly, which real data rarely honours), for ``n_samples > 4000``
        and in exact mode, ``'auto'`` is that moment estimate, held fixed.
    alpha : float, default=1.0
        Concentration of the partition prior: the Dirichlet rate ``xi`` (CRP
        concentration when ``n_blocks=None``); smaller values favour fewer blocks.
    n_blocks : int or None, default=None
        Number of population blocks ``k`` of the Dirichlet-multinomial prior
        (at most ``k`` clusters); ``None`` is the Ewens / CRP limit ``k = inf``.
    r0, s0 : float, default=0.01
        Inverse-gamma prior ``scale ~ Inv-Gamma(r0 d / 2, s0 d / 2 * data_scale_)``;
        both 0 give the improper ``1 / scale`` prior. ``s0`` is *relative to the
        data's scale*: it is multiplied by ``data_scale_``, the mean squared
        distance between distinct objects, so that ``fit(c * D)`` gives the same
        partition as ``fit(D)`` for any ``c > 0`` (the posterior over partitions
        is then unit free; ``scale`` and the variances reported are in the
        data's units and scale with ``c``).
    scale : float or None, default=None
        The Wishart scale of ``Sigma``: ``None`` integrates it out; a number
        holds it fixed (needed,
        with ``theta``, for exact inference).
    theta : float or None, default=None
        ``None`` samples ``theta`` on ``theta_grid`` every sweep; a number holds it fixed.
    theta_grid : array-like or None, default=None
        Grid of ``theta`` values (uniform prior); ``None`` means
        ``np.geomspace(1e-3, 10, 81)``. ``theta`` is scale free, so one grid suits all data.
    normalization : {'single', 'linf', 'center', 'none'}, default='single'
        How ``S*`` is chosen from the distances (developer notes, fastTIWD (f)): the tree of single
        linkage, the tree of the ``l_inf``-closest ultrametric, column
        centring (``'center'``, the "WD C" baseline) or, for feature rows only,
        no normalisation (``S = X X^T``).
    init : {'singletons', 'one', 'random'} or array-like of shape (n_samples,), \
default='singletons'
        Starting partition of every chain. Singletons is the safe default: with
        one block and a normalised ``S*`` (``1^T S* 1 = 0``) ``theta`` collapses to
        the smallest grid value and the chain never leaves a random partition
        (the "theta-collapse trap" of the developer notes). With finite ``n_blocks``,
        ``'singletons'`` starts from uniform random labels among the ``n_blocks``.
    method : {'auto', 'gibbs', 'exact'}, default='auto'
        ``'exact'`` computes the posterior exactly with the cluster trellis (it
        needs ``scale`` and ``theta`` fixed, ``normalization='none'`` and
        ``n_samples <= max_exact_size``),
        ``'gibbs'`` samples it; ``'auto'`` is exact when those hold and the fit
        is not a warm start.
    max_exact_size : int, default=12
        The size of the largest problem ``'auto'`` solves exactly; the size
        is the number of objects, and the exact trellis is built for at most
        that many.
    dtype : {'float64', 'float32'}, default='float64'
        Precision of the stored ``S*``; ``'float32'`` halves its memory (the
        sums of the sampler are accumulated in float64).
    n_chains : int, default=1
        Independent chains (seeds drawn from ``random_state``).
    n_jobs : int, default=None
        Chains run in parallel through joblib (``sklearn.utils.parallel``).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        Print sampler progress (about ten lines per chain).
    n_split_merge : int, default=10
        Split-merge proposals per sweep, after the Gibbs scan (sequentially
        allocated, Dahl 2003; Metropolis-Hastings with the complete
        likelihood, cross-block terms of the distances included). A proposal
        reads the rows of ``S*`` of the objects of the one or two blocks it
        moves, so it costs up to a sweep (``O(n m)`` for ``m`` such objects).
        10 because one chain of single-object moves does not reach the
        posterior on weak distances (pairwise ECE 0.101 with 0, 0.029 with 10,
        for 2.2 times the CPU time: :ref:`choosing_models`); 0 is the sampler
        of Adametz & Roth. Ignored in exact mode.
    warm_start : bool, default=False
        If True and a Gibbs fit came before, its chains go on. On the same
        data ``fit`` continues them for ``n_sweeps`` more sweeps (no burn-in,
        the stored ``S*`` is reused) and appends the new samples; ``dof`` may
        be changed in between (annealing). On new data of the same shape
        ``S*`` and every statistic are recomputed from the new ``X``; each
        chain restarts from its last partition (and ``theta``), runs a
        burn-in, and the samples of the old data are dropped. Data of another
        shape raises a ValueError.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Point estimate: the kept sample with the highest posterior density
        (exact mode: the MAP partition). Labels ``0..K-1`` in order of first appearance.
    n_clusters_ : int
    samples_ : ndarray of shape (n_kept, n_samples), dtype int32
        Kept partitions of all chains (chain after chain).
    log_joints_ : ndarray of shape (n_kept,)
        ``log p(B, theta | S*)`` of each kept sample, up to one additive
        constant (``scale`` integrated out; with ``scale`` fixed, ``log p(B, S* | scale, theta)``);
        ``log p(B, theta, log d | S*)`` when ``dof`` is learned.
    theta_samples_ : ndarray of shape (n_kept,)
        ``theta`` at each kept sample.
    dof_samples_ : ndarray of shape (n_kept,)
        ``dof`` at each kept sample (all ``dof_`` when it is not learned).
    scale_means_ : ndarray of shape (n_kept,)
        Posterior mean of ``scale`` given each kept sample and its ``theta``
        (``scale`` if fixed).
    scale_posterior_ : dict
        For ``labels_``: ``scale | B, theta, S* ~ Inv-Gamma(shape, scale)``
        with keys ``'shape'``, ``'scale'``, ``'mean'``, ``'std'``, and
        ``'beta_mean'`` = ``theta * mean`` (the between-block variance
        ``beta``). ``scale`` is one variance shared by all blocks (eq. 4).
    block_scale_means_ : ndarray of shape (n_clusters_,)
        Per cluster of ``labels_``, a diagnostic: the posterior mean of a
        within-block variance ``scale_b`` that only that block's entries of
        ``S*`` inform (same inverse-gamma prior, ``theta`` of ``labels_``),
        ``(d/2)(T_b + s0) / ((n_b + r0) d / 2 - 1)`` with ``T_b = tr S*_bb -
        theta Sbar_b / (1 + n_b theta)``. Blocks much looser than
        ``scale_posterior_['mean']`` fit the shared-``scale`` model poorly.
    pairwise_marginals_ : ndarray of shape (n_samples, n_samples) or None
        Posterior co-clustering probabilities (exact, or sample frequencies);
        None when ``n_samples > 3000``.
    n_clusters_distribution_ : ndarray of shape (n_samples,)
        ``P(K = k)`` for ``k = 1..n_samples``.
    log_marginal_likelihood_ : float or None
        Exact mode: ``log p(S* | scale, theta)``, every term included (the
        density of ``d S*`` under the Wishart block model, partitions summed
        out, on the matrices of ``S*``'s rank:
        :func:`~sklearn_trellis.models.wishart.data_log_density_terms`), so it
        compares ``dof`` too; ``-inf`` when ``dof`` is below the rank minus
        one. Gibbs mode: None.
    inner_products_ : ndarray of shape (n_samples, n_samples)
        The normalised ``S*`` the model partitions.
    dof_ : float
        The degrees of freedom: ``dof``, its moment estimate, or (learned) the
        posterior mean of ``dof_samples_``.
    data_scale_ : float
        Mean squared distance between distinct objects (1 if they all
        coincide); ``s0`` is relative to it.
    cg_iterations_ : int
        Conjugate-gradient iterations of the tree normalisation.
    method_ : str
        ``'exact'`` or ``'gibbs'``.
    approximation_ : str or None
        None for an exact fit; for a Gibbs fit, says so ("Gibbs sampling: ..."
        with the number of kept samples and chains).
    model_ : WishartBlockLikelihood or WishartBlockModel
        The fitted model of ``S*``: the likelihood the sampler ran on, or (exact
        mode) the block model the trellis enumerated.
    interrupted_ : bool
        True when a Ctrl-C ended sampling early (the samples so far are kept).
    n_features_in_ : int

    Notes
    -----
    Semi-supervised mode (developer notes, fastTIWD (g)): ``fit(X, y)`` with ``y[i] >= 0`` the known
    class of object ``i`` and ``-1`` for unlabelled objects. Labelled objects
    are clamped (never resampled), each known class is one block that never
    empties, and unlabelled objects may join a known class or form new
    clusters.

    New objects (:meth:`predict`, :meth:`predict_proba`, :meth:`score`) are
    given by their squared distances to the fitted objects; each is placed by
    its exact Gibbs conditional with the sampled partitions held fixed.

    References
    ----------
    D. Adametz, V. Roth. Bayesian Partitioning of Large-Scale Distance Data.
    NIPS 2011. J. E. Vogt, S. Prabhakaran, T. J. Fuchs, V. Roth. The
    Translation-invariant Wishart-Dirichlet Process for Clustering Distance
    Data. ICML 2010.

    Examples
    --------
    >>> from sklearn_trellis import FastTIWD
    >>> from sklearn_trellis.datasets import make_wishart_blocks
    >>> data = make_wishart_blocks(n_samples=200, random_state=1)  # 3 blocks, d = 300
    >>> model = FastTIWD(n_sweeps=100, random_state=1).fit(data.distances)
    >>> from sklearn.metrics import adjusted_rand_score
    >>> bool(adjusted_rand_score(data.target, model.labels_) > 0.8)
    True
    """

    _parameter_constraints: dict = {
        **_BaseGibbs._parameter_constraints,
        "metric": [StrOptions({"precomputed", "sqeuclidean"})],
        "dof": [StrOptions({"auto"}), Interval(Real, 0, np.inf, closed="neither")],
        "alpha": [Interval(Real, 0, np.inf, closed="neither")],
        "n_blocks": [Interval(Integral, 1, None, closed="left"), None],
        "r0": [Interval(Real, 0, np.inf, closed="left")],
        "s0": [Interval(Real, 0, np.inf, closed="left")],
        "scale": [Interval(Real, 0, np.inf, closed="neither"), None],
        "theta": [Interval(Real, 0, np.inf, closed="neither"), None],
        "theta_grid": ["array-like", None],
        "normalization": [StrOptions(set(NORMALIZATIONS))],
        "init": [StrOptions({"singletons", "one", "random"}), "array-like"],
        "dtype": [StrOptions({"float64", "float32"}), type, np.dtype],
        "n_split_merge": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, metric="precomputed", *, n_sweeps=200, burn_in=None, thin=1, dof="auto",
                 alpha=1.0, n_blocks=None, r0=0.01, s0=0.01, scale=None, theta=None,
                 theta_grid=None, normalization="single", init="singletons", method="auto",
                 max_exact_size=12, dtype="float64", n_chains=1, n_jobs=None,
                 random_state=None, verbose=0, n_split_merge=10, warm_start=False):
        super().__init__(n_sweeps=n_sweeps, burn_in=burn_in, thin=thin, n_chains=n_chains,
                         n_jobs=n_jobs, method=method, max_exact_size=max_exact_size,
                         random_state=random_state, verbose=verbose, warm_start=warm_start)
        self.metric = metric
        self.dof = dof
        self.alpha = alpha
        self.n_blocks = n_blocks
        self.r0 = r0
        self.s0 = s0
        self.scale = scale
        self.init = init
        self.theta = theta
        self.theta_grid = theta_grid
        self.normalization = normalization
        self.dtype = dtype
        self.n_split_merge = n_split_merge

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.positive_only = self.metric == "precomputed"
        return tags

    # -- validation ----------------------------------------------------------------
    def _check_combinations(self):
        """Checks across parameters (each parameter alone: ``_parameter_constraints``)."""
        self._check_burn_in()
        if self.normalization == "none" and self.metric == "precomputed":
            raise ValueError("normalization='none' needs feature rows (metric='sqeuclidean'): "
                             "distances do not determine inner products without a normalisation.")
        if str(np.dtype(self.dtype)) not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32', got {self.dtype!r}.")

    def _known_labels(self, y, n):
        """``(clamped mask, compact class labels with -1 for unlabelled)`` from ``y``."""
        if y is None:
            return np.zeros(n, dtype=bool), np.full(n, -1, dtype=np.int64)
        type_of_target(y, input_name="y", raise_unknown=True)
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},) (one label per object, -1 = unknown), "
                             f"got {y.shape}.")
        if not (np.issubdtype(y.dtype, np.integer)
                or (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y)))):
            raise ValueError("y must hold integer class labels (-1 for unlabelled objects).")
        y = y.astype(np.int64)
        if np.any(y < -1):
            raise ValueError("y must hold class labels >= 0, or -1 for unlabelled objects.")
        clamped = y >= 0
        known = np.full(n, -1, dtype=np.int64)
        if clamped.any():
            # numbered by first appearance, as init partitions: the model does not see
            # class names, so renaming them must not change a fixed-seed chain
            known[clamped] = first_appearance_labels(y[clamped])
        n_classes = int(known.max()) + 1
        if self.n_blocks is not None and n_classes > self.n_blocks:
            raise ValueError(f"y has {n_classes} known classes but n_blocks={self.n_blocks}.")
        return clamped, known

    def _init_labels(self, known, rng):
        n = known.size
        free = known < 0
        n_classes = int(known.max()) + 1
        labels = known.copy()
        m = int(free.sum())
        if not isinstance(self.init, str):
            init = check_given_labels(self.init, n)
            # numbered by first appearance (a partition: its label values do not matter)
            labels[free] = n_classes + first_appearance_labels(init[free])
        elif self.init == "one":
            labels[free] = n_classes
        elif self.init == "random" or (self.n_blocks is not None and m + n_classes > self.n_blocks):
            room = (max(1, int(np.sqrt(n))) if self.n_blocks is None
                    else self.n_blocks - n_classes)
            if room > 0:
                labels[free] = n_classes + rng.randint(room, size=m)
            else:  # the known classes fill all n_blocks blocks
                labels[free] = rng.randint(n_classes, size=m)
        else:
            labels[free] = n_classes + np.arange(m)
        if self.n_blocks is not None and np.unique(labels).size > self.n_blocks:
            raise ValueError(f"init has more than n_blocks={self.n_blocks} blocks.")
        return labels

    def _check_memory(self, n):
        """Refuse before any N x N allocation: S* (dtype), held throughout the fit, with the
        larger of the feature rows' squared distances (float64, while S* is computed) and
        the sampler's co-clustering matrix (``COOCCURRENCE_BYTES_PER_PAIR`` at its peak;
        measured: 28 bytes per pair in all for float64 S*, 24 for float32, at n = 800)."""
        dtype = np.dtype(self.dtype)
        distances = 0 if self.metric == "precomputed" else 8 * n * n
        summaries = COOCCURRENCE_BYTES_PER_PAIR * n * n if n <= MAX_PAIRWISE_ITEMS else 0
        n_bytes = dtype.itemsize * n * n + max(distances, summaries)
        check_memory(n_bytes, f"the ({n}, {n}) inner products S* ({dtype.name}) and "
                     + ("the co-clustering matrix" if summaries >= distances
                        else "squared distances"),
                     way_out="Use dtype='float32' (halves S*), fewer objects (a subsample), "
                             "or DPMixture on feature rows (no N x N matrix).")

    def _inner_products(self, X):
        dtype = np.dtype(self.dtype)
        # what predict needs to place new items: the feature rows and the projection
        self._X_fit = None if self.metric == "precomputed" else X
        self._projection_weights = None
        if self.metric == "precomputed":
            check_square_symmetric(X)
            if np.any(X < 0):
                raise ValueError("Negative values in data passed to FastTIWD: X must hold "
                                 "squared distances when metric='precomputed'.")
            scale = float(np.max(X)) if X.size else 0.0
            if np.any(np.abs(np.diag(X)) > 1e-10 * max(scale, 1.0)):
                raise ValueError("X must have a zero diagonal when metric='precomputed' "
                                 "(it holds squared distances).")
            _check_squared_distance_range(X)
            dist = X
        elif self.normalization == "none":
            S = np.asarray(X @ X.T, dtype=dtype)
            dist = pairwise_distances(X, metric="sqeuclidean")
            _check_squared_distance_range(dist, X)
            if not np.all(np.isfinite(S)):
                raise ValueError("The inner products X X^T overflow float64: rescale X "
                                 "(e.g. with sklearn.preprocessing.StandardScaler).")
            self.data_scale_ = _data_scale(dist)
            del dist
            self.cg_iterations_ = 0
            self._dof_from_distances = None
            return S
        else:
            dist = pairwise_distances(X, metric="sqeuclidean")
            np.fill_diagonal(dist, 0.0)
            _check_squared_distance_range(dist, X)
        self.data_scale_ = _data_scale(dist)
        self._dof_from_distances = (estimate_dof_from_distances(dist)
                                    if isinstance(self.dof, str) else None)
        S, info = normalized_inner_products(dist, self.normalization, dtype=dtype)
        self.cg_iterations_ = int(info["cg_iterations"])
        self._projection_weights = info["weights"]
        return S

    # -- fitting ---------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
    def fit(self, X, y=None):
        """Sample (or compute exactly) the posterior over partitions of the n objects.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_samples) or (n_samples, n_features)
            Squared Euclidean distances (``metric='precomputed'``) or feature rows.
        y : array-like of shape (n_samples,), default=None
            Known classes for semi-supervised clustering (``-1`` = unlabelled).

        Returns
        -------
        self : FastTIWD
        """
        self._check_combinations()
        if self.method == "exact":
            self._check_exact_request(rows_or_zero(X))
        self._check_memory(rows_or_zero(X))
        self._check_warm_shape(np.shape(X))
        X = validate_kernel_data(self, X, dtype=[np.float64, np.float32],
                                 reset=not self._has_chains())
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"FastTIWD needs at least 2 samples, got n_samples={n}.")
        rng = check_random_state(self.random_state)
        clamped, known = self._known_labels(y, n)
        warm = self._warm_start_mode(X)
        if warm:
            if not np.array_equal(clamped, self._clamped):
                raise ValueError("warm_start needs the same known labels y as the previous fit.")
        if warm == "continue":
            S = self.inner_products_
        else:
            S = self._inner_products(X)
            self.inner_products_ = S
        self._clamped = clamped
        if not isinstance(self.dof, str):
            self.dof_ = float(self.dof)
        elif warm != "continue" or getattr(self, "_dof_is_estimate", False) is False:
            # S* is unchanged by a continued fit: estimate once
            # both moment estimates err low (the blocks add spread): take the larger
            self.dof_ = max(estimate_dof(S), self._dof_from_distances or 0.0)
        self._dof_is_estimate = isinstance(self.dof, str)
        fixed = (self.scale is not None and self.theta is not None
                 and not self._translation_invariant())
        self._exact_posterior = None
        if self._use_exact(n, fixed and not warm):
            self._fit_exact(S, known, rng)
        else:
            self._fit_gibbs(S, clamped, known, rng, warm)
        self.n_clusters_ = int(self.labels_.max()) + 1
        return self

    def _check_exact_request(self, n):
        """Refuse exact inference the parameters rule out (before S* is computed)."""
        if self.scale is None or self.theta is None:
            raise ValueError("method='exact' needs scale and theta fixed (numbers): only "
                             "then does the posterior factorise over blocks.")
        self._check_exact_size(n)
        if self._translation_invariant():
            raise ValueError("method='exact' needs normalization='none' (feature rows, "
                             "S = X X^T): the likelihood of distances is translation "
                             "invariant and does not factorise over blocks; use "
                             "method='gibbs'.")

    def _fit_exact(self, S, known, rng):
        n = S.shape[0]
        self._check_exact_request(n)
        model = WishartBlockModel(dof=self.dof_, scale=self.scale, theta=self.theta,
                                  alpha=self.alpha, n_blocks=self.n_blocks).fit(S)
        self.model_ = model
        table = model.log_potential_table()
        if np.any(known >= 0):
            table = _class_constraint(table, known)
        trellis = trellis_for_model(model, table, max_items=self.max_exact_size)
        self._set_method("exact")
        self._chains = None
        data_terms, _ = data_log_density_terms(S, dof=self.dof_)
        self.log_marginal_likelihood_ = (trellis.log_partition_function
                                         + model.log_potential_constant() + data_terms)
        # what the exact predictive of a new item needs: log p(B | S*)'s normaliser and
        # the known classes (its n + 1 items' posterior is constrained alike)
        self._exact_posterior = (trellis.log_partition_function
                                 + model.log_potential_constant(), known)
        self.labels_ = trellis.map_labels
        self.samples_ = trellis.sample(self.n_sweeps, rng).astype(np.int32)
        self.log_joints_ = np.array([model.log_potential(s) for s in self.samples_])
        self.theta_samples_ = np.full(self.n_sweeps, float(self.theta))
        self.dof_samples_ = np.full(self.n_sweeps, self.dof_)
        self._dof_learned = False
        self.scale_means_ = np.full(self.n_sweeps, float(self.scale))
        self.pairwise_marginals_ = trellis.pairwise_marginals()
        self.n_clusters_distribution_ = trellis.n_clusters_distribution()
        self.scale_posterior_ = scale_summary(float(self.theta), fixed=self.scale)
        sizes, sbars = block_statistics(S, self.labels_)
        self.block_scale_means_ = block_scale_means(S, self.labels_, sizes, sbars,
                                                    float(self.theta), dof=self.dof_,
                                                    r0=self.r0, s0=self._s0())

    def _translation_invariant(self):
        """Distances (every normalisation but 'none'): the translation-invariant likelihood."""
        return self.normalization != "none"

    def _s0(self):
        """``s0`` in the data's units: relative to ``data_scale_`` (unit-free priors)."""
        return float(self.s0) * self.data_scale_

    def _fit_gibbs(self, S, clamped, known, rng, warm):
        self._check_samples_memory(S.shape[0], len(self._chains.states) if warm
                                   else self.n_chains, warm)
        learn = isinstance(self.dof, str) and S.shape[0] <= MAX_LEARNED_DOF_ITEMS
        likelihood = WishartBlockLikelihood(
            dof=self.dof_, r0=self.r0, s0=self._s0(), scale=self.scale, theta=self.theta,
            theta_grid=self.theta_grid, translation_invariant=self._translation_invariant(),
            learn_dof=learn).fit(S)
        self.model_ = likelihood
        prior = make_prior(self.alpha, n_components=self.n_blocks)
        data = likelihood.kernel_data(S)

        def carried_params(state):  # theta, and a learned dof, go on from the last state
            dof = state.params[1] if likelihood.learns_dof_ and self._dof_learned else None
            return likelihood.kernel_params(theta=state.params[0], dof=dof)

        if warm == "continue":
            states = list(self._chains.states)
            for state in states:  # dof or other hyperparameters may have changed
                gibbs.set_params(state, likelihood, data, carried_params(state))
            inits = None
        elif warm == "restart":  # new data: the last partitions and theta only initialise
            states = [gibbs.new_state(likelihood, data, state.compact_labels(), state.alpha,
                                      params=carried_params(state))
                      for state in self._chains.states]
            inits = None
        else:
            states = None
            inits = [self._init_labels(known, rng) for _ in range(self.n_chains)]
        record = functools.partial(_theta_scale_mean_and_dof, likelihood)
        results = gibbs.run_chains(
            likelihood, prior, data, n_chains=len(states) if warm else self.n_chains,
            n_jobs=self.n_jobs, random_state=rng, init_labels=inits, states=states,
            n_sweeps=self.n_sweeps, burn_in=self._burn_in(warm), thin=self.thin,
            fixed=clamped if clamped.any() else None, n_split_merge=self.n_split_merge,
            verbose=self.verbose, record=record)
        chains = self._store_chains(results, likelihood, prior, record=record, warm=warm)
        self._dof_learned = likelihood.learns_dof_
        records = np.array(chains.records, dtype=np.float64).reshape(-1, 3)
        self.theta_samples_, self.scale_means_, self.dof_samples_ = (
            np.ascontiguousarray(column) for column in records.T)
        if self._dof_learned and self.dof_samples_.size:
            self.dof_ = float(np.mean(self.dof_samples_))
        best = self._best_sample()
        self.labels_ = self.samples_[best].astype(np.int64)
        theta, dof = float(self.theta_samples_[best]), float(self.dof_samples_[best])
        sizes, sbars = block_statistics(data, self.labels_)
        self.block_scale_means_ = block_scale_means(data, self.labels_, sizes, sbars, theta,
                                                    dof=dof, r0=self.r0, s0=self._s0())
        cross = (block_cross_sums(data, self.labels_, sizes.size)
                 if self._translation_invariant() else None)
        self.scale_posterior_ = likelihood.scale_summary(sizes, sbars, theta, cross, dof)

    def log_posterior(self, labels, theta=None, dof=None):
        """``log p(B, theta | S*)`` (up to the constant of ``log_joints_``) of any partition.

        With ``dof`` learned, ``log p(B, theta, log dof | S*)``, as in ``log_joints_``.

        Parameters
        ----------
        labels : array-like of shape (n_samples,)
        theta : float, default=None
            ``None`` uses the fixed ``theta`` or that of ``labels_``.
        dof : float, default=None
            ``None`` uses the ``dof`` of ``labels_`` (``dof_`` unless it is learned).

        Returns
        -------
        log_posterior : float
        """
        check_is_fitted(self)
        labels = check_label_vector(labels, self.inner_products_.shape[0])
        compact = np.unique(labels, return_inverse=True)[1]
        if theta is None:
            theta = self.theta if self.theta is not None else self.theta_samples_[
                self._best_sample()]
        if dof is None:
            dof = self.dof_samples_[self._best_sample()] if self._dof_learned else self.dof_
        likelihood = WishartBlockLikelihood(
            dof=float(dof), r0=self.r0, s0=self._s0(), scale=self.scale, theta=theta,
            translation_invariant=self._translation_invariant(),
            learn_dof=self._dof_learned).fit(self.inner_products_)
        prior = make_prior(self.alpha, n_components=self.n_blocks)
        data = likelihood.kernel_data(self.inner_products_)
        state = gibbs.new_state(likelihood, data, compact, prior.alpha,
                                params=likelihood.kernel_params(theta=theta, dof=float(dof)))
        return gibbs.log_joint(state, likelihood, prior.kernel_params())

    # -- new items: the Gibbs conditional with the fitted partition held fixed -------------
    def _new_inner_products(self, X):
        """``(S_x. (m, n), S_xx (m,))`` of new items under the fitted normalisation."""
        check_is_fitted(self)
        S = self.inner_products_
        if self.metric == "precomputed":
            # n_features_in_ is n: the check is that of the squared distances' width
            D_new = validate_kernel_data(self, X, dtype=np.float64, reset=False)
            if np.any(D_new < 0):
                raise ValueError("Negative values in data passed to FastTIWD: X must hold "
                                 "squared distances when metric='precomputed'.")
        else:
            X = validate_kernel_data(self, X, dtype=np.float64, reset=False)
            if self.normalization == "none":
                return X @ self._X_fit.T, np.einsum("ij,ij->i", X, X)
            D_new = pairwise_distances(X, self._X_fit, metric="sqeuclidean")
        _check_new_squared_distances(D_new, S.shape[0])
        with _new_items_in_range():
            return new_item_inner_products(S, self._projection_weights, D_new)

    def _predictive(self, X):
        """Per kept sample (MAX_PREDICTIVE_SAMPLES at most): ``(labels, log weights (m, K_s + 1))``.

        The weights are the prior's predictive weight (normalised by ``n + xi``)
        times the likelihood ratio of :func:`~sklearn_trellis.models.wishart.
        new_item_log_likelihoods` at the sample's ``theta``: the exact Gibbs
        conditional of a new item, the sample's partition held fixed.
        """
        rows, self_products = self._new_inner_products(X)
        S = self.inner_products_
        n = S.shape[0]
        trace = float(np.trace(S, dtype=np.float64))
        prior = make_prior(self.alpha, n_components=self.n_blocks)
        clusters = ClusterSums(S, rows)   # clusters shared by samples are summed once
        for index in predictive_picks(self.samples_.shape[0]):
            z = np.unique(self.samples_[index], return_inverse=True)[1]
            sizes, sbars, row_sums = clusters.of_labels(z)
            cross = clusters.cross_sums(z) if self._translation_invariant() else None
            theta = float(self.theta_samples_[index])
            log_lik = new_item_log_likelihoods(
                sizes, sbars, row_sums, self_products, trace, n, theta,
                dof=float(self.dof_samples_[index]),
                r0=self.r0, s0=self._s0(), scale=self.scale, cross=cross)
            log_prior = prior.log_predictive_weights(sizes) - np.log(n + prior.alpha)
            yield z, log_prior[None, :] + log_lik

    def predict_proba(self, X):
        """Posterior probability that each new item joins each cluster of ``labels_`` or a new one.

        For each kept sample (at most 25, evenly spaced), the exact Gibbs
        conditional of the new item with the sample's partition and ``theta``
        held fixed: the new item's inner products come from its squared
        distances to the fitted items under the fitted normalisation (the
        origin stays where ``S*`` put it), and its block is weighted by the
        partition prior's predictive weight times the Wishart likelihood
        ratio (``scale`` integrated out or fixed). A sample's cluster passes
        its probability to the clusters of ``labels_`` in proportion to
        their shared items; the samples are averaged, each weighted by its
        predictive density of the item (that of :meth:`score_samples`):
        self-normalised importance weights, since the samples are drawn given
        the fitted items, not given the new one too. So the average estimates
        ``P(x joins k | S*, S_x)`` from the chain's samples; the unweighted
        average reported before is another quantity, not a posterior
        probability given the new item. An exact fit computes it exactly: the
        exact posterior of the ``n + 1`` items over the new item's cluster
        ``B + {x}``, spread onto the clusters of ``labels_`` by ``|B n k| / |B|``
        (deterministic; each new item costs an exact fit of ``n + 1`` items).
        New items are scored one at a time (each against the fitted items only).

        Parameters
        ----------
        X : array-like of shape (n_new, n_samples) or (n_new, n_features)
            With ``metric='precomputed'``, the squared Euclidean distances of
            the new items to the fitted ones; otherwise feature rows.

        Returns
        -------
        proba : ndarray of shape (n_new, n_clusters_ + 1)
            Columns: clusters ``0..n_clusters_-1`` of ``labels_``, then "new cluster".

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.metrics import adjusted_rand_score
        >>> from sklearn_trellis import FastTIWD
        >>> from sklearn_trellis.datasets import make_wishart_blocks
        >>> data = make_wishart_blocks(n_samples=240, random_state=1)
        >>> D, target = data.distances, data.target
        >>> fitted, held_out = np.arange(200), np.arange(200, 240)
        >>> model = FastTIWD(n_sweeps=100, random_state=1).fit(D[np.ix_(fitted, fitted)])
        >>> proba = model.predict_proba(D[np.ix_(held_out, fitted)])
        >>> proba.shape == (40, model.n_clusters_ + 1)
        True
        >>> predicted = model.predict(D[np.ix_(held_out, fitted)])
        >>> bool(adjusted_rand_score(target[held_out], predicted) > 0.8)
        True
        """
        check_is_fitted(self)
        if getattr(self, "_exact_posterior", None) is not None:
            probs, _ = self._exact_new_items(*self._new_inner_products(X))
            proba = probs @ subset_columns(self.labels_, self.n_clusters_)
            _refuse_rows_without_density(np.isnan(proba[:, 0]))
            return proba
        return self._mean_predictive_proba(X, weighted=True,
                                           sample_log_terms=self._sample_data_terms(X))

    def _exact_new_items(self, rows, self_products):
        """Exact mode: per new item (its inner products with the fitted items, ``rows``
        (m, n), and with itself, ``self_products`` (m,): :meth:`_new_inner_products`), the
        exact posterior of the ``n + 1`` items.

        Returns ``(probs, log_density)``: ``probs[r, B]`` = P(item ``r``'s cluster is
        ``B + {x}``), ``B`` a bitmask of the fitted items (0: a cluster of its own), shape
        (m, 2**n); ``log_density[r]`` = ``log p(S_x | S*)`` without the Wishart terms of
        the data alone (those of :meth:`score_samples`): the ratio of the ``n + 1`` and
        ``n`` items' normalisers of ``p(B, S)``, which is the Gibbs conditional's density
        summed over every partition of the fitted items with its posterior probability.
        Each item costs an exact fit of ``n + 1`` items (about three times the fit's
        work).
        """
        S = self.inner_products_
        n = S.shape[0]
        log_normaliser, known = self._exact_posterior
        probs = np.empty((rows.shape[0], 1 << n))
        log_density = np.empty(rows.shape[0])
        enlarged = np.empty((n + 1, n + 1))
        enlarged[:n, :n] = S
        for r in range(rows.shape[0]):
            enlarged[n, :n] = enlarged[:n, n] = rows[r]
            enlarged[n, n] = self_products[r]
            model = WishartBlockModel(dof=self.dof_, scale=self.scale, theta=self.theta,
                                      alpha=self.alpha, n_blocks=self.n_blocks).fit(enlarged)
            table = model.log_potential_table()
            if np.any(known >= 0):
                table = _class_constraint(table, np.append(known, -1))
            trellis = trellis_for_model(model, table, max_items=n + 1)
            log_density[r] = (trellis.log_partition_function + model.log_potential_constant()
                              - log_normaliser)
            # the new item is bit n: its cluster is (1 << n) + B
            with np.errstate(under="ignore"):
                probs[r] = np.exp(trellis.log_cluster_marginals()[1 << n:])
            if not np.isfinite(log_density[r]):
                probs[r] = np.nan
        return probs, log_density

    def _sample_data_terms(self, X):
        """Per picked sample, the Wishart terms of the data alone in its predictive density
        (:meth:`score_samples`), shape (samples, rows); None where they are the same for
        every sample (one ``dof``: they cancel in the weights) or left out there."""
        dofs = self.dof_samples_[list(predictive_picks(self.samples_.shape[0]))]
        if np.all(dofs == dofs[0]):
            return None
        rows, self_products = self._new_inner_products(X)
        S = self.inner_products_
        with _new_items_in_range():
            data_terms, rank = new_item_data_terms(
                S, rows, self_products, dof=dofs,
                translation_invariant=self._translation_invariant())
        if rank < S.shape[0] - (self.normalization != "none"):
            return None     # score_samples leaves them out too (no Wishart density there)
        # an item no sample gives a density (in the span of the fitted ones): its
        # probabilities are weighted by the rest of the density
        data_terms[:, ~np.isfinite(data_terms).any(axis=0)] = 0.0
        return data_terms

    def predict(self, X):
        """Most probable column of :meth:`predict_proba`; ``n_clusters_`` means a new cluster.

        Parameters
        ----------
        X : array-like of shape (n_new, n_samples) or (n_new, n_features)
            As in :meth:`predict_proba`.

        Returns
        -------
        labels : ndarray of shape (n_new,)
        """
        return np.argmax(self.predict_proba(X), axis=1)

    def score_samples(self, X):
        """Log posterior predictive density of each new item (exact, or averaged over kept samples).

        ``log p(S_x | S*)`` of the new item's inner products (its row of
        ``S*`` and ``S_xx``) under the Wishart block model, every term
        included: the partition prior's predictive weight, the block terms,
        ``scale``'s prior integral (or the fixed ``scale``) and the Wishart
        terms of the data alone (:func:`~sklearn_trellis.models.wishart.new_item_data_terms`:
        the Schur complement of the new item, ``pdet S*`` and ``Gamma``
        functions of ``dof``), so that the score compares every
        hyperparameter, ``dof`` included. It is ``-inf`` when ``dof`` does not
        exceed the rank of ``S*`` (``n - 1`` after the translation
        normalisation): such a Wishart cannot produce the fitted matrix. When
        ``S*`` is rank-deficient (points in fewer dimensions than ``n - 1``) a
        Wishart with more degrees of freedom than the rank has no density
        there: the data terms are then left out with a warning, and the score
        compares every hyperparameter but ``dof`` (which is the rank). It is
        also ``-inf``, with a warning, for a new item in the span of the fitted
        ones (its Schur complement is 0): a copy of a fitted row (scoring the
        training rows), or any item when the points have at most ``n - 1``
        features, so that the ``n + 1`` items' inner products are a singular
        Wishart matrix, which has no density there.

        A Gibbs fit averages the new item's conditional density over up to 25
        kept samples; an exact fit sums it over every partition with its
        posterior probability, which is ``log p(S_{n+1}) - log p(S*)``: the
        difference of the ``n + 1`` and ``n`` items' ``log_marginal_likelihood_``
        (deterministic; each new item costs an exact fit of ``n + 1`` items).

        Parameters
        ----------
        X : array-like of shape (n_new, n_samples) or (n_new, n_features)
            As in :meth:`predict_proba`.

        Returns
        -------
        log_density : ndarray of shape (n_new,)
        """
        check_is_fitted(self)
        rows, self_products = self._new_inner_products(X)
        S = self.inner_products_
        picks = list(predictive_picks(self.samples_.shape[0]))
        with _new_items_in_range():
            # per picked sample (their dof differ when it is learned): (n_picks, m)
            data_terms, rank = new_item_data_terms(
                S, rows, self_products, dof=self.dof_samples_[picks],
                translation_invariant=self._translation_invariant())
        # a translation-normalised S* has one null direction by construction
        full_rank = S.shape[0] - (self.normalization != "none")
        if rank < full_rank:
            warnings.warn(
                f"FastTIWD.score leaves out the Wishart terms of the data alone: S* has rank "
                f"{rank} < {full_rank} (points in {rank} dimensions), where a Wishart with "
                "dof > rank has no density; scores then compare every hyperparameter but "
                f"dof (read dof off the rank, {rank}).", UserWarning, stacklevel=2)
            data_terms = np.zeros_like(data_terms)
        elif data_terms.size and np.all(self.dof_samples_[picks] <= rank):
            warnings.warn(
                f"FastTIWD.score is -inf: dof={self.dof_:g} does not exceed the rank {rank} of "
                "S* (a Wishart with that few degrees of freedom cannot produce the fitted "
                "matrix); score dof values above it.", UserWarning, stacklevel=2)
        else:
            _warn_items_in_the_span(np.all(np.isneginf(data_terms), axis=0), S.shape[0], rank)
        if getattr(self, "_exact_posterior", None) is not None:   # one dof: one row of terms
            density = self._exact_new_items(rows, self_products)[1] + data_terms[0]
        else:
            per_sample = np.array([logsumexp(logw, axis=1) for _, logw in self._predictive(X)])
            with np.errstate(invalid="ignore"):
                density = logsumexp(per_sample + data_terms, axis=0) - np.log(len(picks))
        _refuse_rows_without_density(np.isnan(density))   # -inf (underflow) is an answer
        return density

    def score(self, X, y=None):
        """Mean log posterior predictive density of held-out items (higher is better).

        The held-out log predictive of :meth:`score_samples`, complete in every
        hyperparameter: ``GridSearchCV`` with its default scoring chooses
        ``dof``, ``alpha``, ``n_blocks``, ``theta``/``scale``, ``r0``/``s0``.
        Held-out items are scored one at a time against the fitted items.

        Parameters
        ----------
        X : array-like of shape (n_new, n_samples) or (n_new, n_features)
            As in :meth:`predict_proba`.
        y : Ignored

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))


__all__ = ["FastTIWD"]
