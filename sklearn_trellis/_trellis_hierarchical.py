"""``TrellisHierarchical``: a drop-in ``AgglomerativeClustering`` with the exact MAP tree,
the partition function, cluster marginals and exact tree sampling."""

import numbers
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context, clone
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics import pairwise_distances
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._core.budget import check_exact_budget
from ._core.family import ClusterFamily
from ._core.pairwise import upper_triangle
from ._core.trees import check_tree, children_to_tree, cut_children, tree_to_children
from ._core.validation import check_indices, check_option, check_scalar_param
from .engines.attachment import attachment_tree, cluster_attachment_proba, log_normalize
from .engines.exact.hierarchical import BYTES_PER_SUBSET, ExactHierarchicalTrellis
from .engines.map.search import beam_search_tree, greedy_tree
from .engines.sparse.family_search import (MAX_BEAM_SEED_ITEMS, beam_trees, linkage_trees,
                                           seed_family)
from .engines.sparse.seeds import LINKAGES, OTHER_SEEDS, check_linkages
from .engines.sparse.sparse_hierarchical import SparseHierarchicalTrellis
from .models import ENERGIES, CallableEnergy, SplitModel

#: Up to this N, ``method='perturb_and_map'`` perturbs every split of the full
#: trellis (the powerset family: ``3**N / 2`` splits); beyond, the seed family's.
MAX_POWERSET_PERTURB_ITEMS = 12


class TrellisHierarchical(ClusterMixin, BaseEstimator):
    """Hierarchical clustering with the distribution over binary trees, exact or sparse.

    A drop-in replacement of :class:`sklearn.cluster.AgglomerativeClustering`
    (same constructor arguments and fitted attributes) whose tree is the
    maximum a posteriori (MAP) tree of an energy-based model over binary
    hierarchies (Greenberg et al. 2021, Definition 2)::

        log phi(H) = beta * sum_{(L, R) siblings in H} psi(L, R),   P(H) = phi(H) / Z,

    ``Z`` summing over all ``(2N - 3)!!`` binary trees of the N items.

    Up to ``max_exact_size`` items the exact hierarchical trellis computes
    ``log Z``, the MAP tree, the number of allowed trees, every cluster
    marginal and exact samples in ``O(3^N)`` time and ``O(2^N)`` memory.
    Beyond, a *sparse* trellis runs the same recursions over a family of
    clusters: the nodes of agglomerative seed trees (``linkage``) and, up to
    20 items, of beam-search trees on the model's own energy (paper Section
    3). Every tree whose nodes all lie in the family is realised, so the
    results are exact *within* that set of trees: the MAP tree is never worse
    than the best seed tree, ``log Z`` is a lower bound of the full one, and
    ``approximation_`` says so.

    Parameters
    ----------
    n_clusters : int or None, default=2
        Number of flat clusters in ``labels_``, cut from the MAP tree (the top
        ``n_clusters - 1`` merges are undone). ``None`` with ``distance_threshold``.
    metric : str or callable, default='euclidean'
        Metric of the distances from which pairwise energies build similarities
        (any :func:`sklearn.metrics.pairwise_distances` metric). With
        ``'precomputed'``, ``X`` is an (N, N) distance matrix, as in
        scikit-learn. Feature energies (``'ginkgo'``) read ``X`` directly
        and use the metric only for the seed trees.
    memory : str or object with the joblib.Memory interface, default=None
        Caches the agglomerative tree of :meth:`linkage_tree` for a single
        named ``linkage`` (passed on to
        :class:`~sklearn.cluster.AgglomerativeClustering`).
    connectivity : None
        Connectivity constraints are not supported; anything but ``None``
        raises ``ValueError``.
    compute_full_tree : 'auto' or bool, default='auto'
        Accepted for compatibility; the MAP tree is always complete.
    linkage : {'all', 'ward', 'complete', 'average', 'single', 'diana'} or list, default='all'
        The agglomerative trees that seed the sparse trellis, and the
        baseline of :meth:`linkage_tree`. ``'all'`` uses the four (Ward only
        with the Euclidean metric on features); ``'diana'`` adds the divisive
        tree of the same distances (Kaufman & Rousseeuw's DIANA).
    distance_threshold : float, default=None
        If set (with ``n_clusters=None``), ``labels_`` undoes every merge whose
        height (see ``distances_``) is at least this.
    compute_distances : bool, default=False
        Accepted for compatibility; ``distances_`` is always computed.
    energy : {'dasgupta', 'hcc', 'ginkgo'}, SplitModel or callable, default='dasgupta'
        The split log-potential ``psi``:

        - ``'dasgupta'``: Dasgupta's cost, ``psi = -(|L| + |R|) sum_{x in L,
          y in R} w_xy`` on similarities ``w = exp(-d / scale)`` of the
          distances ``d`` (``scale``: median distance); see
          :class:`~sklearn_trellis.models.DasguptaEnergy`.
        - ``'hcc'``: hierarchical correlation clustering on the signed
          affinities ``w = exp(-d / scale) - mean``; see
          :class:`~sklearn_trellis.models.HCCEnergy`.
        - ``'ginkgo'``: the Ginkgo jet likelihood of 4-momenta ``X`` (N, 4);
          see :class:`~sklearn_trellis.models.GinkgoEnergy`.
        - a :class:`~sklearn_trellis.models.SplitModel` instance (cloned;
          its hyperparameters are tunable as ``energy__name``).
        - a callable ``energy(X, left, right) -> float`` (slow path: one call
          per split; ``'auto'`` is exact up to N = 12, sparse beyond).
    beta : float, default=1.0
        Inverse temperature multiplying every split log-potential (``>= 0``).
    method : {'auto', 'exact', 'sparse', 'perturb_and_map'}, default='auto'
        Inference engine.

        - ``'exact'``: the full trellis; refuses N above ``max_exact_size``
          with the memory and time it would need.
        - ``'sparse'``: the sparse trellis over the seed trees' clusters.
        - ``'auto'``: ``'exact'`` up to ``max_exact_size`` items, ``'sparse'``
          beyond.
        - ``'perturb_and_map'``: cluster marginals estimated by the MAP trees
          of ``n_perturbations`` Gumbel perturbations of every split
          log-potential (a baseline, not exact even in the limit), on the full
          trellis up to 12 items and on the seed family beyond; ``log Z``,
          the MAP and ``n_trees_`` come from that trellis.
    max_exact_size : int, default=16
        Largest N for which ``'auto'`` runs the exact trellis (N = 20 takes
        seconds; each extra item triples the time).
    n_beam_trees : int, default=8
        Beam-search trees (best distinct trees of the final beam, paper
        Section 4.2) added to the seeds when N <= 20; 0 disables them.
    window_size : int, default=8
        Sparse trellis refinement: after a first pass over the seed trees, the
        family gains every union of ``window_size`` neighbouring clusters of
        the best tree found, at every level (windows of
        :func:`~sklearn_trellis.engines.sparse.seeds.tree_windows`), and the trellis
        is run again: the MAP is then optimal over all re-arrangements of each
        window. Costs about ``3**window_size / 2`` splits per ``window_size - 1``
        items (0-2 disable it; at most 12).
    n_perturbations : int, default=100
        Number of perturbed MAP trees of ``'perturb_and_map'``.
    random_state : int, RandomState instance or None, default=None
        Seed of :meth:`sample_trees` and of the perturbations.
    verbose : int, default=0
        Print the stages of the sparse trellis and their times.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Flat clusters cut from the MAP tree, labels in order of first appearance.
    n_clusters_ : int
    n_leaves_ : int
    n_connected_components_ : int
        Always 1 (no connectivity constraints).
    n_features_in_ : int
    children_ : ndarray of shape (n_samples - 1, 2)
        The MAP tree in scikit-learn's encoding: row ``i`` merges two nodes
        into node ``n_samples + i``; values below ``n_samples`` are leaves.
    distances_ : ndarray of shape (n_samples - 1,)
        Height of each merge: the number of levels of the merged node (1 for
        two leaves, one more than its higher child otherwise). Non-negative
        and non-decreasing; it orders the dendrogram, it is not a distance.
    map_tree_ : nested tuples
        The MAP tree; each internal node is ``(left, right)``, the left child
        holding its lowest item; leaves are sample indices. (Python cannot
        print nested tuples deeper than about 1,000 levels; ``children_`` has
        the same tree.)
    map_log_potential_ : float
        ``log phi`` of the MAP tree.
    log_partition_function_ : float
        ``log Z`` over the trees the trellis realises (all trees when exact).
    n_trees_ : int
        Number of allowed trees (finite potential) the trellis realises, an
        exact Python int; ``(2N - 3)!!`` when exact and no split is forbidden.
    log10_sparsity_index_ : float
        ``log10(n_trees_ / (2N - 3)!!)``, the paper's sparsity index (0 when exact).
    n_trellis_vertices_ : int
        Clusters in the trellis: ``2**N - 1`` when exact.
    map_is_exact_ : bool
        Whether ``map_tree_`` is certified to be the MAP over *all* trees.
    approximation_ : str or None
        ``None`` when every fitted quantity is exact; otherwise what is
        approximate and how.
    model_ : SplitModel
        The fitted split model.

    Notes
    -----
    Precision: ``log Z`` and log-potentials have a relative error near machine
    precision; marginals and sampling probabilities an absolute error below
    ``1e-12`` (exact or within the sparse family). All recursions are in log
    space, so any ``beta`` is safe.

    References
    ----------
    C. S. Greenberg, S. Macaluso, N. Monath, J. A. Lee, P. Flaherty, K. Cranmer,
    A. McGregor, A. McCallum. Cluster Trellis: Data Structures & Algorithms for
    Exact Inference in Hierarchical Clustering. AISTATS 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import TrellisHierarchical
    >>> X = np.array([[0.0], [0.1], [1.0], [1.2], [5.0]])
    >>> model = TrellisHierarchical(n_clusters=2).fit(X)
    >>> model.map_tree_
    (((0, 1), (2, 3)), 4)
    >>> model.labels_
    array([0, 0, 0, 0, 1])
    >>> model.n_trees_
    105
    >>> round(model.cluster_marginal([0, 1]), 3)
    0.378

    Beyond ``max_exact_size`` the sparse trellis takes over:

    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (30, 2)), rng.normal(8, 1, (30, 2))])
    >>> model = TrellisHierarchical(n_clusters=2).fit(X)
    >>> model.approximation_[:30], model.map_is_exact_
    ('sparse trellis over the cluste', False)
    >>> np.bincount(model.labels_).tolist()
    [30, 30]
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left"), None],
        "metric": [str, callable],
        "memory": [str, HasMethods("cache"), None],
        "connectivity": [None],     # connectivity constraints are not supported
        "compute_full_tree": [StrOptions({"auto"}), "boolean"],
        # Names are checked in fit (check_linkages): 'all', one name or a list.
        "linkage": [StrOptions({"all", *LINKAGES, *OTHER_SEEDS}), "array-like"],
        "distance_threshold": [Interval(Real, 0, None, closed="left"), None],
        "compute_distances": ["boolean"],
        # A name is looked up in the ENERGIES registry at fit time (it may grow).
        "energy": [str, SplitModel, callable],
        "beta": [Interval(Real, 0, None, closed="left")],
        "method": [StrOptions({"auto", "exact", "sparse", "perturb_and_map"})],
        "max_exact_size": [Interval(Integral, 1, None, closed="left")],
        "n_beam_trees": [Interval(Integral, 0, None, closed="left")],
        "window_size": [Interval(Integral, 0, 12, closed="both")],
        "n_perturbations": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=2, *, metric="euclidean", memory=None, connectivity=None,
                 compute_full_tree="auto", linkage="all", distance_threshold=None,
                 compute_distances=False, energy="dasgupta", beta=1.0, method="auto",
                 max_exact_size=16, n_beam_trees=8, window_size=8, n_perturbations=100,
                 random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.metric = metric
        self.memory = memory
        self.connectivity = connectivity
        self.compute_full_tree = compute_full_tree
        self.linkage = linkage
        self.distance_threshold = distance_threshold
        self.compute_distances = compute_distances
        self.energy = energy
        self.beta = beta
        self.method = method
        self.max_exact_size = max_exact_size
        self.n_beam_trees = n_beam_trees
        self.window_size = window_size
        self.n_perturbations = n_perturbations
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.positive_only = self.metric == "precomputed"
        return tags

    # -- fitting ---------------------------------------------------------------
    def _linkages(self):
        """The linkage names asked for (``'all'`` or one name or a list)."""
        linkage = self.linkage
        names = check_linkages(linkage)
        if "ward" in names and self.metric != "euclidean" and linkage != "all":
            raise ValueError(f"linkage='ward' needs metric='euclidean', got "
                             f"metric={self.metric!r}.")
        return names

    def _make_energy(self):
        """The split model ``energy`` names (its type is checked by the constraints)."""
        energy = self.energy
        if isinstance(energy, str):
            check_option(energy, "energy", set(ENERGIES))
            return ENERGIES[energy]()
        if isinstance(energy, SplitModel):
            return clone(energy)
        return CallableEnergy(energy)

    def _distances(self, X):
        if self.metric == "precomputed":
            if X.shape[0] != X.shape[1]:
                raise ValueError("With metric='precomputed', X must be a square (N, N) "
                                 f"distance matrix, got shape {X.shape}.")
            if np.any(X < 0):
                raise ValueError("Negative values in data passed to TrellisHierarchical: "
                                 "with metric='precomputed', X must hold non-negative "
                                 "distances.")
            return X
        return pairwise_distances(X, metric=self.metric)

    def _engine(self, n, model):
        """``'exact'``, ``'powerset'`` or ``'sparse'``: the trellis ``fit`` builds for N items."""
        limit = self.max_exact_size
        if isinstance(model, CallableEnergy):
            limit = min(limit, model.max_items)   # one Python call per split
        if self.method == "exact":
            return "exact"
        if self.method == "sparse":
            return "sparse"
        if self.method == "perturb_and_map":
            return "powerset" if n <= min(limit, MAX_POWERSET_PERTURB_ITEMS) else "sparse"
        return "exact" if n <= limit else "sparse"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the distribution over binary trees of the rows of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
            Feature rows, or a distance matrix if ``metric='precomputed'``.
        y : Ignored

        Returns
        -------
        self : TrellisHierarchical
        """
        if (self.n_clusters is None) == (self.distance_threshold is None):
            raise ValueError("Exactly one of n_clusters and distance_threshold has to be "
                             "set, and the other needs to be None.")
        self._linkages()
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        n = X.shape[0]
        model = self._make_energy()
        engine = self._engine(n, model)
        if engine == "exact":
            # Refuse before computing any N x N or 2**N table.
            check_exact_budget(n, BYTES_PER_SUBSET + 16, max_items=self.max_exact_size,
                               what="exact hierarchical trellis")
        self._X_fit = X
        self.n_leaves_ = n
        self.n_connected_components_ = 1
        # Distances feed distance-based energies and the linkage seeds only.
        distances = None if (model.input_kind == "features" and engine != "sparse") \
            else self._distances(X)
        # Linkage seeds before the model: the N x N distances can then be dropped
        # as soon as the model has its similarities (N = 10,000: 800 MB each).
        trees = self._linkage_trees(X, distances) if engine == "sparse" else None
        model.fit(X if model.input_kind == "features" else distances)
        del distances
        self.model_ = model
        if engine == "exact":
            self._fit_exact(model)
        else:
            self._fit_family(model, trees, engine)
        if self.distance_threshold is not None:
            self.n_clusters_ = int(np.count_nonzero(
                self.distances_ >= self.distance_threshold)) + 1
        else:
            self.n_clusters_ = int(self.n_clusters)
        self.labels_ = cut_children(self.children_, n, self.n_clusters_)
        return self

    def _fit_exact(self, model):
        beta = float(self.beta)
        split, params, stats = model.kernel_inputs(beta)
        trellis = ExactHierarchicalTrellis(split, params, stats,
                                           separable=model.separable_form(beta),
                                           max_items=self.max_exact_size).fit()
        n = self.n_leaves_
        self._trellis = trellis
        self._perturbed_marginals = None
        self.map_tree_ = trellis.map_tree
        self.map_log_potential_ = trellis.map_log_potential
        self.log_partition_function_ = trellis.log_partition_function
        self.n_trees_ = trellis.n_trees
        self.log10_sparsity_index_ = 0.0
        self.n_trellis_vertices_ = (1 << n) - 1
        self.map_is_exact_ = True
        self.approximation_ = None
        self.children_, self.distances_ = tree_to_children(trellis.map_tree, n)

    def _linkage_trees(self, X, distances):
        """Children arrays of the linkage trees (Ward on the features, euclidean only)."""
        features = X if self.metric == "euclidean" else None
        return linkage_trees(self._linkages(), upper_triangle(distances), features)[0]

    def _fit_family(self, model, trees, engine):
        n = self.n_leaves_
        beta = float(self.beta)

        def build(family):
            return SparseHierarchicalTrellis.from_model(family, model, beta,
                                                        verbose=self.verbose).fit()

        full = engine == "powerset"
        if full:
            family = ClusterFamily.powerset(n)
            trellis = build(family)
            notes = []
        else:
            found = seed_family(build, trees + beam_trees(model, self.n_beam_trees, beta), n,
                                window_size=self.window_size)
            trellis, family = found.trellis, found.family
            notes = [found.note("trees")]
        self._trellis = trellis
        self.map_log_potential_ = trellis.map_log_potential
        self.log_partition_function_ = trellis.log_partition_function
        self.children_, self.distances_ = trellis.map_children, trellis.map_distances
        self.map_tree_ = trellis.map_tree
        self.n_trees_ = trellis.n_trees
        self.log10_sparsity_index_ = float(trellis.log10_sparsity_index)
        self.n_trellis_vertices_ = int(family.n_vertices)
        self.map_is_exact_ = full
        self._perturbed_marginals = None
        if self.method == "perturb_and_map":
            _, self._perturbed_marginals = trellis.perturb_and_map(
                int(self.n_perturbations), 1.0, random_state=self.random_state)
            notes.append(f"cluster marginals estimated by perturb-and-MAP "
                         f"({self.n_perturbations} Gumbel-perturbed MAP trees over "
                         f"{'the full trellis' if full else 'the sparse trellis'})")
        self.approximation_ = "; ".join(notes) if notes else None

    # -- the fitted distribution ---------------------------------------------
    def log_potential(self, tree):
        """``log phi`` of any binary tree of the training samples.

        Parameters
        ----------
        tree : nested tuples
            Each internal node is a pair ``(left, right)``; leaves are sample
            indices, each appearing once.

        Returns
        -------
        log_potential : float
            ``-inf`` if the tree contains a forbidden split.
        """
        check_is_fitted(self)
        tree = check_tree(tree, self.n_leaves_)
        return self.model_.log_potential(tree, float(self.beta))

    def cluster_marginal(self, indices):
        """Probability that exactly these samples form a node (cluster) of the tree.

        Exact: the first call runs a second ``O(3^N)`` pass that gives every
        cluster's marginal (Appendix A.4 of the paper); later calls are
        lookups. Sparse: the marginal over the trees the trellis realises (0
        for a cluster outside the family). Perturb-and-MAP: the fraction of
        perturbed MAP trees that contain the cluster.

        Parameters
        ----------
        indices : array-like of int

        Returns
        -------
        probability : float
        """
        check_is_fitted(self)
        indices = check_indices(indices, self.n_leaves_)
        if self._perturbed_marginals is not None:
            vertex = self._trellis.family.vertex_of(indices)
            return 0.0 if vertex < 0 else float(self._perturbed_marginals[vertex])
        return self._trellis.cluster_marginal(indices)

    def subtree_marginal(self, subtree):
        """Probability that the tree contains this sub-hierarchy.

        Parameters
        ----------
        subtree : nested tuples over some of the samples

        Returns
        -------
        probability : float
        """
        check_is_fitted(self)
        leaves = []

        def collect(node):
            if isinstance(node, (tuple, list)):
                if len(node) != 2:
                    raise ValueError("A subtree is nested pairs (left, right) of sample indices.")
                return (collect(node[0]), collect(node[1]))
            leaves.append(int(node))
            return int(node)

        subtree = collect(subtree)
        if len(set(leaves)) != len(leaves) or min(leaves) < 0 or max(leaves) >= self.n_leaves_:
            raise ValueError("The subtree must name distinct samples of the training data.")
        if self._perturbed_marginals is not None:
            raise ValueError("subtree_marginal is not estimated by method='perturb_and_map'; "
                             "use method='exact' or 'sparse'.")
        return self._trellis.subtree_marginal(subtree)

    def sample_trees(self, n_samples=1, random_state=None):
        """Exact draws from the distribution over trees (Algorithm 3 of the paper).

        With a sparse trellis, exact draws from the distribution restricted to
        the trees it realises.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None
            ``None`` uses the estimator's ``random_state``.

        Returns
        -------
        trees : list of nested tuples
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind=numbers.Integral, low=1)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        return self._trellis.sample(int(n_samples), rng)

    # -- baselines ----------------------------------------------------------------
    def _kernel_inputs(self):
        check_is_fitted(self)
        n = self.n_leaves_
        if n > MAX_BEAM_SEED_ITEMS:
            raise ValueError(f"Greedy and beam search tabulate the model over all 2**N "
                             f"subsets; N={n} is above their limit of "
                             f"{MAX_BEAM_SEED_ITEMS} items.")
        return self.model_.kernel_inputs(float(self.beta))

    def greedy_tree(self):
        """Greedy agglomeration under the same energy (paper Section 4.2).

        Merges, at each step, the two clusters whose split log-potential is
        largest. Up to 20 items.

        Returns
        -------
        tree : nested tuples
        log_potential : float
        """
        return greedy_tree(*self._kernel_inputs())

    def beam_search_tree(self, beam_width=None):
        """Beam search over merge sequences under the same energy (paper Section 4.2).

        Up to 20 items.

        Parameters
        ----------
        beam_width : int, default=None
            Forests kept at each step; ``None`` means ``N (N - 1) / 2`` as in the paper.

        Returns
        -------
        tree : nested tuples
        log_potential : float
        """
        if beam_width is not None:
            check_scalar_param(beam_width, "beam_width", kind=numbers.Integral, low=1)
        return beam_search_tree(*self._kernel_inputs(), beam_width=beam_width)

    def linkage_tree(self):
        """The classical agglomerative tree (``linkage``, ``metric``, ``memory``).

        With several linkages (``'all'`` or a list), the one whose tree has
        the largest log-potential under this estimator's energy.

        Returns
        -------
        tree : nested tuples
        log_potential : float
            Its log-potential under this estimator's energy.
        """
        check_is_fitted(self)
        best = None
        for name in self._linkages():
            if name == "diana" or (name == "ward" and self.metric != "euclidean"):
                continue  # divisive seeds are no agglomerative baseline
            agglomerative = AgglomerativeClustering(
                n_clusters=None, distance_threshold=0.0, compute_full_tree=True,
                linkage=name, metric=self.metric, memory=self.memory)
            agglomerative.fit(self._X_fit)
            tree = children_to_tree(agglomerative.children_, self.n_leaves_)
            value = self.log_potential(tree)
            if best is None or value > best[1]:
                best = (tree, value)
        return best

    # -- new items: the attachment posterior on the MAP tree ------------------------
    def _new_item_data(self, X):
        """What the energy needs of new items: distances to the fitted items, or rows."""
        check_is_fitted(self)
        model = self.model_
        pairwise = self.metric == "precomputed"
        if isinstance(model, CallableEnergy) and pairwise:
            raise ValueError("predict with a callable energy needs feature rows: with "
                             "metric='precomputed' the callable sees the N x N matrix, "
                             "which a new item's distances cannot enlarge unambiguously.")
        if model.input_kind == "features":
            return validate_data(self, X, dtype=np.float64, reset=False)
        # with 'precomputed', n_features_in_ is N: the check is that of the distances' width
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if pairwise:
            if np.any(X < 0):
                raise ValueError("Negative values in data passed to TrellisHierarchical: "
                                 "with metric='precomputed', X must hold non-negative "
                                 "distances.")
            return X
        return pairwise_distances(X, self._X_fit, metric=self.metric)

    def attachment_log_proba(self, X):
        """Log posterior of each new item's position in the MAP tree.

        A new item ``x`` is inserted above one of the ``2N - 1`` nodes of the
        MAP tree (``children_``): the new node has the children ``v`` and
        ``{x}``, and ``x`` joins every ancestor of ``v``. Each position is
        weighted by ``exp`` of the change of ``log phi`` (``beta`` included)
        under the fitted energy, whose data-derived constants (length scale,
        centring) keep their fitted values; the posterior is the normalised
        weights, the fitted tree held fixed. ``O(N)`` per new item
        (:class:`~sklearn_trellis.engines.attachment.AttachmentTree`).

        ``connectivity`` is not applied: it constrains the fit on the training
        graph, in which new items have no edges.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features) or (n_new, n_samples)
            Feature rows, or with ``metric='precomputed'`` the distances of the
            new items to the fitted samples.

        Returns
        -------
        log_proba : ndarray of shape (n_new, 2 * n_samples - 1)
            Column ``v`` is the node numbering of ``children_``: samples
            ``0..N-1``, merge ``k`` is node ``N + k``; the last is the root
            (inserting above it makes the new item the root's sibling).
        """
        return log_normalize(self._attachment_log_weights(X))

    def _attachment_log_weights(self, X):
        """Unnormalised position log weights: the change of ``log phi`` per insertion."""
        data = self._new_item_data(X)
        tree = attachment_tree(self.model_, self.children_, self.n_leaves_)
        return tree.insertion_log_potentials(self.model_, data, float(self.beta))

    def predict_proba(self, X):
        """Posterior probability that each new item belongs to each cluster of ``labels_``.

        The position posterior of :meth:`attachment_log_proba` summed over the
        positions inside each cluster's subtree of the MAP tree (above any of
        its nodes, the cluster's own root included). A position above the cut
        (above a node that joins several clusters, or above the root) keeps
        the item apart from all of them: its mass is shared among the clusters
        below that node in proportion to the mass of their own positions.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features) or (n_new, n_samples)
            As in :meth:`attachment_log_proba`.

        Returns
        -------
        proba : ndarray of shape (n_new, n_clusters_)
            Columns are the labels ``0..n_clusters_-1`` of ``labels_``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_trellis import TrellisHierarchical
        >>> X = np.array([[0.0], [0.1], [1.0], [1.2], [5.0]])
        >>> model = TrellisHierarchical(n_clusters=2).fit(X)
        >>> model.predict([[0.05], [4.8]])
        array([0, 1])
        >>> model.predict_proba([[0.05], [3.0]]).round(2)
        array([[1.  , 0.  ],
               [0.67, 0.33]])
        """
        log_weights = self._attachment_log_weights(X)   # checks that the model is fitted
        return cluster_attachment_proba(self.children_, self.labels_, log_weights)

    def predict(self, X):
        """The cluster of ``labels_`` each new item most probably belongs to.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features) or (n_new, n_samples)
            As in :meth:`attachment_log_proba`.

        Returns
        -------
        labels : ndarray of shape (n_new,)
        """
        return np.argmax(self.predict_proba(X), axis=1)


__all__ = ["TrellisHierarchical"]
