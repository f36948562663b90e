"""``DivisiveClustering``: top-down hierarchical clustering (DIANA, bisection, exact splits)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.metrics import pairwise_distances
from sklearn.metrics.pairwise import _VALID_METRICS
from sklearn.utils._param_validation import Interval, StrOptions

from ._core.budget import check_memory
from ._core.compilation import announces_compilation
from ._core.pairwise import check_square_symmetric, similarity_from_distances
from ._core.progress import Progress
from ._core.units import from_units, metric_degree, to_units, unit_exponent
from ._core.validation import WriteableStateMixin, kernel_data_order, validate_kernel_data
from ._hierarchy_mixin import HierarchyMixin
from .engines.divisive import CRITERIA, METHODS, divisive_tree, r_dissimilarities
from .engines.divisive.exact_split import MAX_EXACT_ITEMS, subset_table_bytes

#: Metrics computed as R's ``daisy`` / ``diana`` do, missing features (NaN) included.
_R_METRICS = {"euclidean": (False, False), "l2": (False, False),
              "sqeuclidean": (False, True),
              "cityblock": (True, False), "manhattan": (True, False), "l1": (True, False)}


def _in_data_units(tree, exponent, metric):
    """The tree with its heights multiplied back by ``2^(exponent * degree)``.

    Refuses heights that float64 cannot hold in the units of X (squared
    distances of tiny or huge rows), naming the range of scales that works.
    """
    if exponent == 0:
        return tree
    heights = from_units(tree.banner, exponent, metric)
    lost = np.any((tree.banner > 0) & (heights < np.finfo(np.float64).tiny))
    if lost or not np.all(np.isfinite(heights)):
        degree = metric_degree(metric)
        top = float(tree.banner.max())
        # largest |x| about 2^e: heights h 2^(e * degree) must stay normal and finite
        low = (-1021 - np.frexp(tree.banner[tree.banner > 0].min())[1]) / degree
        high = (1023 - np.frexp(top)[1]) / degree
        raise ValueError(
            f"The merge heights of metric={metric!r} {'underflow' if lost else 'overflow'} "
            f"float64 in the units of X (largest |x| about 1e{exponent * np.log10(2):.0f}): "
            f"multiply X by a factor that brings its largest |x| between about "
            f"1e{low * np.log10(2):.0f} and 1e{high * np.log10(2):.0f}"
            + (", or use a metric of degree 1 (e.g. 'euclidean')." if degree > 1 else "."))
    tree.banner = heights
    tree.distances = from_units(tree.distances, exponent, metric)
    return tree


class DivisiveClustering(WriteableStateMixin, HierarchyMixin, ClusterMixin, BaseEstimator):
    """Divisive (top-down) hierarchical clustering: DIANA, K-means / K-medoids bisection,
    or exactly optimal splits.

    All objects start in one cluster; every cluster is split in two until all
    objects stand alone (Murphy, *Machine Learning*, ch. 25, Section 5.2). The
    height of a split is the diameter (largest dissimilarity) of the cluster it
    splits, so cutting the tree into ``n_clusters`` clusters undoes the splits
    of the ``n_clusters - 1`` clusters of largest diameter. The fitted tree
    uses the encodings of :class:`sklearn.cluster.AgglomerativeClustering`
    (``children_``, ``distances_``) and of scipy (``linkage_matrix_``), and R's
    banner (``order_``, ``heights_``, ``divisive_coefficient_``).

    Methods of splitting a cluster:

    - ``'diana'``: *dissimilarity analysis* (Kaufman & Rousseeuw 1990, ch. 6;
      the notes' Eqs. 30-32): the object with the largest average
      dissimilarity starts a splinter group; the object maximising
      ``d_i^G - d_i^H`` joins it while that is positive. The splits are
      those of R's ``cluster::diana`` (order, heights and ``dc`` identical,
      ties included), at ``O(m^2)`` per split instead of R's ``O(m^3)``.
      R's ``merge`` matrix reads them off the banner, which is ambiguous
      where a cluster and its part have one diameter: there R joins
      neighbours that never formed a cluster, while ``merge_`` and
      ``children_`` hold the splits actually made (same rows as R's
      elsewhere).
    - ``'kmeans'``: K-means with ``K = 2`` on the feature rows (k-means++ seeds
      from ``random_state``); not with ``metric='precomputed'``.
    - ``'kmedoids'``: PAM with ``K = 2`` on the dissimilarities.
    - ``'exact'``: every cluster of at most ``max_exact_size`` items is split by
      the bipartition that minimises ``criterion`` over all
      ``2^(m-1) - 1`` of them; larger clusters are split by DIANA and
      ``approximation_`` says so.

    Parameters
    ----------
    n_clusters : int or None, default=2
        Number of clusters of ``labels_``. ``None`` requires ``distance_threshold``.
    distance_threshold : float or None, default=None
        If given (with ``n_clusters=None``), ``labels_`` keeps the merges below
        this height: clusters whose diameter is at least the threshold are split.
    metric : str or callable, default='euclidean'
        Dissimilarity between feature rows: the notes' ``'euclidean'``,
        ``'sqeuclidean'``, ``'cityblock'`` (``'manhattan'``), ``'correlation'``,
        ``'hamming'`` (fraction of differing features), anything
        :func:`sklearn.metrics.pairwise_distances` accepts, or
        ``'precomputed'``: ``X`` is a symmetric non-negative (n, n)
        dissimilarity matrix with a zero diagonal. Euclidean and Manhattan
        distances are computed as R's ``daisy`` does, so DIANA's results match
        R's to the last bit.
    method : {'diana', 'kmeans', 'kmedoids', 'exact'}, default='diana'
        How a cluster is split (see above).
    criterion : {'average', 'dasgupta', 'sparsest'}, default='average'
        What ``method='exact'`` minimises for a split ``S = L + R``:
        ``'average'``: ``sum_{X in {L, R}} (1/|X|) sum_{i<j in X} d_ij``, half
        the total over objects of their average dissimilarity to their own
        group (Eq. 30), which DIANA decreases greedily (on squared Euclidean
        distances: the 2-means objective); ``'dasgupta'``: ``|S| w(L, R)``,
        the split's term of Dasgupta's cost on similarities
        ``w = exp(-d / median(d))``; ``'sparsest'``: ``w(L, R) / (|L| |R|)``.
    max_exact_size : int, default=20
        Largest cluster ``'exact'`` enumerates (at most 24: ``2^m`` tables).
    random_state : int, RandomState instance or None, default=None
        Seeds of the k-means++ initialisations (``method='kmeans'``).
    verbose : int, default=0
        Print a line when each stage of the fit starts (dissimilarities,
        splits) and, while splitting, the splits done at least every 10 s.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each sample (numbered by first appearance).
    n_clusters_ : int
        Number of clusters in ``labels_``.
    children_ : ndarray of shape (n_samples - 1, 2)
        The tree bottom-up as in ``AgglomerativeClustering``: ids below
        ``n_samples`` are samples, id ``n_samples + k`` the cluster of row ``k``.
    distances_ : ndarray of shape (n_samples - 1,)
        Height (diameter) of each merge, non-decreasing.
    linkage_matrix_ : ndarray of shape (n_samples - 1, 4)
        The same tree for :func:`scipy.cluster.hierarchy.dendrogram`.
    merge_ : ndarray of shape (n_samples - 1, 2)
        The tree in R's ``merge`` encoding (``-j``: sample ``j - 1``; ``k > 0``:
        row ``k``); each row is a split made, also at tied heights.
    order_ : ndarray of shape (n_samples,)
        Samples in banner order (R's ``order - 1``), the dendrogram's leaf order.
    heights_ : ndarray of shape (n_samples - 1,)
        R's ``height``: ``heights_[k]`` separates ``order_[k]`` and ``order_[k + 1]``.
    divisive_coefficient_ : float
        R's ``dc``: the mean over samples of ``1 - d(i) / diameter``, ``d(i)``
        the diameter of the last cluster of ``i`` before it stands alone
        (0 for data with a single point value, where R returns NaN).
    approximation_ : str or None
        For ``method='exact'``: which clusters were too large to enumerate and
        were split by DIANA; ``None`` when every split is optimal (and for the
        other methods).
    n_leaves_ : int
        Number of samples.
    n_connected_components_ : int
        Always 1.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when ``X`` has string column names.

    Notes
    -----
    Missing values: with the Euclidean, squared Euclidean and Manhattan
    metrics, features missing (NaN) in either of two rows are skipped and the
    sum is rescaled by ``n_features / n_present``, as R's ``daisy`` and
    ``diana`` do; a pair with no feature in common is refused. scikit-learn's
    ``'nan_euclidean'`` handles NaN its own way; the other metrics,
    ``'precomputed'`` and ``method='kmeans'`` refuse NaN with a clear error.

    No ``score``: DIANA and bisecting k-means are not probability models, so
    there is no held-out likelihood (``GridSearchCV`` with its default
    scoring raises scikit-learn's TypeError). Choose ``n_clusters``,
    ``metric`` or ``method`` against labels with a scorer that refits on each
    fold, e.g. ``scoring=lambda est, X, y: adjusted_rand_score(y,
    est.fit_predict(X))``.

    Memory and time: every method but ``'kmeans'`` keeps the (n, n) float64
    dissimilarity matrix (200 MB at n = 5,000; refused up front if it does not
    fit). DIANA costs ``O(m^2)`` per split of a cluster of ``m`` objects;
    ``'kmeans'`` costs a few Lloyd steps per split and computes exact
    diameters (Euclidean, Manhattan) without the matrix, pruning pairs by
    their distance to the centroid (``benchmarks/bench_divisive.py``).

    References
    ----------
    L. Kaufman and P. J. Rousseeuw. *Finding Groups in Data*, ch. 6 (DIANA).
    Wiley, 1990. P. Macnaughton-Smith, W. T. Williams, M. B. Dale and L. G.
    Mockett. Dissimilarity analysis. *Nature* 202, 1964. S. Dasgupta. A cost
    function for similarity-based hierarchical clustering. STOC 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import DivisiveClustering
    >>> X = np.array([[0.0], [1.0], [5.0], [6.0], [20.0]])
    >>> model = DivisiveClustering(n_clusters=3, metric="cityblock").fit(X)
    >>> model.labels_
    array([0, 0, 1, 1, 2])
    >>> model.heights_
    array([ 1.,  6.,  1., 20.])
    >>> model.children_
    array([[2, 3],
           [0, 1],
           [6, 5],
           [7, 4]])
    >>> round(model.divisive_coefficient_, 2)
    0.76
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left"), None],
        "distance_threshold": [Interval(Real, 0, None, closed="left"), None],
        "metric": [StrOptions(set(_VALID_METRICS) | {"precomputed"}), callable],
        "method": [StrOptions(set(METHODS))],
        "criterion": [StrOptions(set(CRITERIA))],
        "max_exact_size": [Interval(Integral, 2, MAX_EXACT_ITEMS, closed="both")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=2, *, distance_threshold=None, metric="euclidean",
                 method="diana", criterion="average", max_exact_size=20,
                 random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.distance_threshold = distance_threshold
        self.metric = metric
        self.method = method
        self.criterion = criterion
        self.max_exact_size = max_exact_size
        self.random_state = random_state
        self.verbose = verbose

    def _allows_nan(self):
        return (isinstance(self.metric, str)
                and (self.metric in _R_METRICS or self.metric == "nan_euclidean")
                and self.method != "kmeans")

    def _check_memory(self, n, copy):
        """Refuse, before allocating, the (n, n) matrices the fit will make."""
        parts = ["the dissimilarity matrix"] if copy else []
        if self.method == "exact" and CRITERIA[self.criterion] == "similarity":
            parts.append("the similarities of the criterion")
        if parts:
            check_memory(8 * n * n * len(parts), f"{' and '.join(parts)} ({n}, {n}) float64",
                         way_out="Use fewer samples.")
        if self.method == "exact" and n >= 2:  # the largest exact split, before any work
            m = min(n, self.max_exact_size)
            check_memory(8 * n * n * len(parts) + subset_table_bytes(m),
                         f"the subset table of the exact split of a cluster of {m} items",
                         way_out=f"Lower max_exact_size below {m} (larger clusters are split "
                                 "by DIANA).")

    def _dissimilarities(self, X):
        """The (n, n) dissimilarity matrix, checked; memory is checked first."""
        n = X.shape[0]
        if self.metric == "precomputed":
            self._check_memory(n, copy=not (X.flags.c_contiguous and X.dtype == np.float64))
            D = check_square_symmetric(X, "X")
            if D.min() < 0:  # a reduction: no (N, N) temporary
                raise ValueError("Negative values in data passed to DivisiveClustering "
                                 "(metric='precomputed'): dissimilarities must be "
                                 "non-negative.")
            if np.any(np.diag(D) != 0):
                raise ValueError("A dissimilarity matrix has a zero diagonal; X "
                                 "(metric='precomputed') has non-zero diagonal entries.")
            return np.ascontiguousarray(D, dtype=np.float64)
        self._check_memory(n, copy=True)
        if isinstance(self.metric, str) and self.metric in _R_METRICS:
            manhattan, squared = _R_METRICS[self.metric]
            X = np.ascontiguousarray(X, dtype=np.float64)
            D, ok = r_dissimilarities.for_work(X.size * X.shape[0])(X, manhattan, squared)
            if not ok:
                raise ValueError("Some pair of samples has no feature present (non-NaN) in "
                                 "both rows, so their dissimilarity is undefined.")
            if not np.all(np.isfinite(D)):  # sums of squares beyond float64
                raise ValueError(f"metric={self.metric!r} overflows float64 on X (largest "
                                 f"|x| = {np.nanmax(np.abs(X)):.3g}): rescale X (e.g. with "
                                 "sklearn.preprocessing.StandardScaler).")
            return D
        D = pairwise_distances(X, metric=self.metric)
        if not np.all(np.isfinite(D)):
            raise ValueError(f"metric={self.metric!r} gave NaN or infinite dissimilarities "
                             "(e.g. 'correlation' of a constant row).")
        if np.any(D < 0):
            raise ValueError(f"metric={self.metric!r} gave negative dissimilarities.")
        D = np.ascontiguousarray(D, dtype=np.float64)
        D = 0.5 * (D + D.T)  # some metrics round asymmetrically
        np.fill_diagonal(D, 0.0)
        return D

    def _check_input(self, X):
        allow_nan = self._allows_nan()
        if not allow_nan and self.metric != "precomputed":
            data = validate_kernel_data(self, X, dtype=np.float64, ensure_min_samples=2,
                                        ensure_all_finite=False)
            if np.isnan(data).any():
                raise ValueError(self._nan_message())
            if not np.all(np.isfinite(data)):
                raise ValueError("Input X contains infinity or a value too large for "
                                 "dtype('float64').")
            return data
        return validate_kernel_data(self, X, dtype=np.float64, ensure_min_samples=2,
                                    ensure_all_finite="allow-nan" if allow_nan else True,
                                    order=kernel_data_order(self.metric == "precomputed"))

    def _nan_message(self):
        if self.method == "kmeans":
            return ("Input X contains NaN: method='kmeans' needs complete feature rows; "
                    "use method='diana', 'kmedoids' or 'exact' with a Euclidean or "
                    "Manhattan metric (missing features are skipped as in R's daisy), or "
                    "impute the missing values.")
        return (f"Input X contains NaN: metric={self.metric!r} cannot handle missing "
                "values; only 'euclidean', 'sqeuclidean' and 'cityblock'/'manhattan' can "
                "(missing features are skipped as in R's daisy), or impute them.")

    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
    def fit(self, X, y=None):
        """Grow the divisive tree of X and cut it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
            Feature rows, or dissimilarities with ``metric='precomputed'``.
        y : Ignored

        Returns
        -------
        self : DivisiveClustering
        """
        self._check_cut_parameters()
        if self.method == "kmeans" and self.metric == "precomputed":
            raise ValueError("method='kmeans' needs feature rows, not metric='precomputed'; "
                             "use method='kmedoids' (or 'diana') on dissimilarities.")
        X = self._check_input(X)
        n = X.shape[0]
        self._check_n_clusters(n)
        # Rows in units where float64 holds squared distances (an exact power of
        # two); the heights go back to the units of X at the end.
        exponent = 0 if self.metric == "precomputed" else unit_exponent(X, self.metric)
        X = to_units(X, exponent)
        features_only = (self.method == "kmeans" and isinstance(self.metric, str)
                         and self.metric in _R_METRICS)
        progress = Progress(type(self).__name__, self.verbose)
        if not features_only:
            progress.stage(f"({n:,}, {n:,}) dissimilarities")
        D = None if features_only else self._dissimilarities(X)
        similarities = None
        if self.method == "exact" and CRITERIA[self.criterion] == "similarity":
            similarities = similarity_from_distances(D, "exp", None)
        manhattan, squared = _R_METRICS.get(self.metric, (False, False)) \
            if isinstance(self.metric, str) else (False, False)
        progress.stage(f"{self.method} splits of {n:,} items")
        tree = divisive_tree(self.method, distances=D,
                             X=X if self.method == "kmeans" else None,
                             manhattan=manhattan, squared=squared,
                             similarities=similarities, criterion=self.criterion,
                             max_exact_size=self.max_exact_size,
                             random_state=self.random_state, progress=progress)
        self._store(_in_data_units(tree, exponent, self.metric))
        return self

    def _store(self, tree):
        """The tree and its cut (:class:`HierarchyMixin`), R's banner and ``approximation_``."""
        self._set_tree(tree.children, tree.distances)
        self.merge_ = tree.merge
        self.order_ = tree.order
        self.heights_ = tree.heights.copy()
        self.divisive_coefficient_ = float(tree.divisive_coefficient)
        self.approximation_ = None
        if tree.fallback_sizes:
            sizes = sorted(tree.fallback_sizes, reverse=True)
            self.approximation_ = (
                f"{len(sizes)} cluster(s) larger than max_exact_size={self.max_exact_size} "
                f"(sizes {sizes[:10]}{' ...' if len(sizes) > 10 else ''}) were split by "
                "DIANA, not by the optimal bipartition; every smaller cluster's split "
                f"minimises criterion={self.criterion!r}.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.allow_nan = self._allows_nan()
        tags.input_tags.positive_only = self.metric == "precomputed"
        return tags


__all__ = ["DivisiveClustering"]
