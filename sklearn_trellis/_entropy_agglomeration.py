"""``EntropyAgglomeration``: a dendrogram summarising a sample set of partitions."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.utils._param_validation import Interval

from ._core.compilation import announces_compilation
from ._core.progress import Progress
from ._core.validation import WriteableStateMixin, validate_kernel_data
from ._hierarchy_mixin import HierarchyMixin
from .summaries import as_sample_set, is_block_list_format
from .summaries.agglomeration import entropy_agglomeration_tree


class EntropyAgglomeration(WriteableStateMixin, HierarchyMixin, ClusterMixin, BaseEstimator):
    """Entropy agglomeration (EA) of a sample set of partitions or feature allocations.

    Fidaner & Cemgil (2013, Section 5): start from the singletons
    ``{0}, ..., {n-1}`` and repeatedly merge the pair of current subsets
    ``S_a, S_b`` whose union has the minimum *expected projection entropy*
    ``mean_t H(PROJ(Z_t, S_a ∪ S_b))`` over the samples ``Z_t`` (see
    :func:`~sklearn_trellis.summaries.projection_entropy`). Subsets that the
    samples never split merge at entropy 0; the dendrogram summarises which
    elements the posterior keeps together, with no linkage criterion to choose.

    ``fit`` takes a **sample set**, not feature rows: an int array of shape
    ``(T, n)`` whose *rows are sampled clusterings* and whose *columns are the
    n elements* being clustered (e.g. the output of
    ``ExactCorrelationClustering.sample``), a list of partitions or feature
    allocations given as lists of blocks, or a binary array
    ``(T, n_blocks, n)``. The elements are the columns, so
    ``n_features_in_ == n`` and ``labels_`` has one entry per column.

    Parameters
    ----------
    n_clusters : int or None, default=2
        Number of clusters of the flat cut ``labels_`` (the partition after
        ``n - n_clusters`` merges). ``None`` requires ``distance_threshold``.
    distance_threshold : float or None, default=None
        If given (and ``n_clusters=None``), ``labels_`` keeps the merges whose
        entropy is below it: every merge at least that high is undone, as in
        :class:`sklearn.cluster.AgglomerativeClustering`.
    verbose : int, default=0
        Print a line when each stage of the fit starts (reading the samples,
        the agglomeration) and, within the agglomeration, the merges done at
        least every 10 s.

    Attributes
    ----------
    children_ : ndarray of shape (n - 1, 2)
        The merges, as in :class:`sklearn.cluster.AgglomerativeClustering`:
        ids below ``n`` are elements, id ``n + s`` the subset formed at step ``s``.
    distances_ : ndarray of shape (n - 1,)
        Expected projection entropy (natural log) of each merged subset,
        rounded to 10 decimals so that exact ties are recognised. The
        sequence is non-decreasing (no inversions; see Notes), although
        projection entropy itself is not monotone under inclusion.
    linkage_matrix_ : ndarray of shape (n - 1, 4)
        The same tree for :func:`scipy.cluster.hierarchy.dendrogram`
        (``[child, child, distance, size]`` rows).
    counts_ : ndarray of shape (n - 1,)
        Number of elements of each merged subset.
    n_leaves_ : int
        Number of elements ``n``.
    n_connected_components_ : int
        Always 1 (every pair of subsets can be merged).
    labels_ : ndarray of shape (n,)
        Flat cut of the tree (see ``n_clusters``).
    n_clusters_ : int
        Number of clusters of ``labels_``.
    cooccurrence_ : ndarray of shape (n, n)
        Mean number of blocks holding both elements (for partitions the
        sampled co-clustering probabilities), a by-product of the fit.
    n_clusters_histogram_ : ndarray
        ``n_clusters_histogram(samples)``: fraction of samples with ``k`` blocks.
    n_samples_fit_ : int
        Number of samples ``T``.
    n_features_in_ : int
        Number of elements ``n`` (the columns of a label array).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Element names, when ``samples`` is a DataFrame with string columns.

    Notes
    -----
    Monotonicity: if ``A, B`` merge at entropy ``d`` (the minimum over live
    pairs), then for any other live ``D`` the block proportions of
    ``A ∪ B ∪ D`` are the average of those of ``A ∪ B``, ``A ∪ D`` and
    ``B ∪ D`` weighted by their sizes, so by concavity of the entropy
    ``H(A ∪ B ∪ D) >= d``; hence every later merge has entropy ``>= d``. The
    same holds for feature allocations (the per-element entropy is concave
    in the unnormalised proportions). Floating-point dips below 1e-10 are
    removed by a running maximum.

    Cost: ``O(T n^2)`` for the initial pair entropies and about the same for
    the ``n - 1`` updates (each new subset is joined with every live one using
    sparse per-sample block histograms); ``n = T = 1000`` takes seconds (see
    ``benchmarks/bench_summaries.py``). Ties are broken towards the pair of
    live subsets with the smallest slot indices (a merged subset takes the
    slot of its lower part), so results are deterministic.

    No ``score``: the input is a set of sampled partitions, not data under a
    model, so there is no likelihood to hold out (``GridSearchCV`` with its
    default scoring raises scikit-learn's TypeError). Choose the cut
    (``n_clusters``, ``distance_threshold``) against labels with a scorer
    that refits on each fold, e.g. ``scoring=lambda est, X, y:
    adjusted_rand_score(y, est.fit_predict(X))``.

    References
    ----------
    I. B. Fidaner and A. T. Cemgil. Summary Statistics for Partitionings and
    Feature Allocations. NIPS 2013.

    Examples
    --------
    >>> from sklearn_trellis import EntropyAgglomeration
    >>> E3 = [[[0, 2, 5, 6], [1], [3, 4]],
    ...       [[0, 2, 5], [1, 6], [3, 4]],
    ...       [[0, 1, 2, 5, 6], [3, 4]]]
    >>> ea = EntropyAgglomeration(n_clusters=2).fit(E3)
    >>> ea.children_
    array([[ 0,  2],
           [ 5,  7],
           [ 3,  4],
           [ 6,  8],
           [ 1, 10],
           [ 9, 11]])
    >>> ea.distances_.round(3)
    array([0.   , 0.   , 0.   , 0.187, 0.391, 0.878])
    >>> ea.labels_
    array([0, 0, 0, 1, 1, 0, 0])
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left"), None],
        "distance_threshold": [Interval(Real, 0, None, closed="left"), None],
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=2, *, distance_threshold=None, verbose=0):
        self.n_clusters = n_clusters
        self.distance_threshold = distance_threshold
        self.verbose = verbose

    def _read_samples(self, samples):
        """Label arrays (and DataFrames) go through ``validate_data``; block lists and
        binary (T, n_blocks, n) arrays are read directly."""
        direct = is_block_list_format(samples) or (
            isinstance(samples, np.ndarray) and samples.ndim == 3)
        if not direct:
            labels = validate_kernel_data(self, samples, dtype=None, ensure_min_samples=1)
            return as_sample_set(labels)
        sample_set = as_sample_set(samples)
        self.n_features_in_ = sample_set.n_elements
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return sample_set

    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
    def fit(self, X, y=None):
        """Build the EA tree of a sample set.

        Parameters
        ----------
        X : array-like of shape (T, n), list of lists of blocks, or ndarray (T, n_blocks, n)
            The sample set: one sampled partition (label vector over the n
            elements) per row, or partitions / feature allocations as lists of
            blocks, or binary block memberships.
        y : Ignored

        Returns
        -------
        self : EntropyAgglomeration
        """
        self._check_cut_parameters()
        progress = Progress(type(self).__name__, self.verbose)
        progress.stage("reading the samples")
        sample_set = self._read_samples(X)
        self._check_n_clusters(sample_set.n_elements, what="elements")
        progress.stage(f"agglomeration of {sample_set.n_elements:,} elements over "
                       f"{sample_set.n_samples:,} samples")
        children, distances, counts, cooccurrence = entropy_agglomeration_tree(sample_set,
                                                                              progress)
        # Concavity makes the entropies non-decreasing; the running maximum removes
        # floating-point dips (see Notes).
        heights = np.maximum.accumulate(distances) if distances.size else distances
        self._set_tree(children, heights)
        self.counts_ = counts
        self.n_samples_fit_ = sample_set.n_samples
        self.cooccurrence_ = cooccurrence / sample_set.n_samples
        length = max(sample_set.n_elements, sample_set.max_blocks) + 1
        self.n_clusters_histogram_ = (np.bincount(sample_set.n_blocks, minlength=length)
                                      / sample_set.n_samples)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        return tags


__all__ = ["EntropyAgglomeration"]
