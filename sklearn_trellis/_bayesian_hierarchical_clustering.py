"""``BayesianHierarchicalClustering``: BHC, randomized BHC and Bayesian rose trees."""

from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._core.validation import NestedModelParamsMixin, WriteableStateMixin, validate_kernel_data
from ._core.compilation import announces_compilation
from ._core.progress import Progress
from ._core.units import shift_rows
from ._core.validation import check_random_state
from ._hierarchy_mixin import HierarchyMixin
from .engines.bhc import posterior as bhc_posterior
from .engines.bhc.build import (DEFAULT_SUBSAMPLE_SIZE, approximation_notes, greedy_tree,
                                kernel_params, randomized_tree)
from .engines.bhc.hyperparameters import MAX_SELECTION_ITEMS, select_hyperparameters
from .engines.sparse.seeds import LINKAGES
from .models import LIKELIHOODS, fit_likelihood
from .models.likelihood import ClusterLikelihood


class BayesianHierarchicalClustering(WriteableStateMixin, NestedModelParamsMixin, HierarchyMixin,
                                     ClusterMixin, BaseEstimator):
    """Bayesian hierarchical clustering (Heller & Ghahramani 2005) on conjugate likelihoods.

    Agglomerates the rows of ``X`` by the posterior probability ``r_k`` that
    the data of a merge form one cluster of a Dirichlet-process mixture,
    rather than by a distance. Every tree defines ``p(D | T)``, a sum over the
    partitions consistent with the tree in which each cluster ``B`` has the
    DP potential ``alpha Gamma(|B|) m(X_B)`` (``m``: the conjugate marginal
    likelihood), computed by the sparse flat trellis's tree recursion. From
    it come a lower bound on the DP-mixture evidence, compared with the
    exact evidence for small ``n``, and a predictive density for new rows.

    Parameters
    ----------
    likelihood : {'gaussian', 'diagonal', 'bernoulli', 'multinomial'} or \
ClusterLikelihood, default='gaussian'
        Cluster likelihood: Normal-inverse-Wishart (full covariance),
        Normal-Gamma (diagonal), Beta-Bernoulli (0/1 data), Dirichlet-multinomial
        (counts), or an instance (its hyperparameters are reachable as
        ``likelihood__<name>``).
    alpha : float, default=1.0
        Concentration of the Dirichlet process.
    hyperparameters : {'evidence', 'fixed'}, default='evidence'
        ``'evidence'``: when the likelihood has a grid hyperprior (the
        default ``'gaussian'``; ``'diagonal'`` with ``hyperprior='grid'``),
        use the grid point that maximises the tree's evidence (Heller &
        Ghahramani, Section 4), alternating tree building and the choice
        until it repeats, on at most 1,000 random rows. ``'fixed'``: the
        likelihood's resolved values (``kernel_params()``). Either way one
        point is used, the grid is not summed over.
    method : {'greedy', 'randomized'}, default='greedy'
        ``'greedy'``: Heller & Ghahramani's agglomeration, ``O(n^2)`` pair
        scores and ``O(n)`` memory. ``'randomized'``: their randomized BHC
        (2005b), ``O(n log n)`` expected: greedy BHC on ``subsample_size``
        random items decides the top split, every item follows its higher
        predictive density, and each side is split again. Binary trees only.
    tree : {'binary', 'rose'}, default='binary'
        ``'rose'``: Bayesian rose trees (Blundell, Teh & Heller 2010), merges
        by join, absorb or collapse, scored by their likelihood ratio. A node
        with many children is one cluster or the product of its children's
        partitions; the cluster weight is the DP's (``pi_k = alpha Gamma(n_k)
        / d_k`` with ``d_k = alpha Gamma(n_k) + prod_c d_c``, not the paper's
        ``gamma`` parameter), so the evidence bound holds for rose trees too.
    n_clusters : int, default=None
        Number of clusters of ``labels_`` (undoing the highest merges);
        ``None`` cuts where ``r_k < 0.5`` (top-down from the root).
    family : {'all', 'single', 'average', 'complete', 'ward'} or list, default=None
        Also compute ``log_evidence_family_bound_``: the DP evidence bound
        over the union of the BHC tree and these scipy linkage trees (sparse
        flat trellis over the family; ``'all'`` is the four). Needs the
        ``O(n^2)`` condensed distances.
    subsample_size : int, default=100
        Sample size ``m`` of ``method='randomized'``.
    random_state : int, RandomState instance or None, default=None
        Seeds the randomized method.
    verbose : int, default=0
        Print a line when each stage of the fit starts (hyperparameters, the
        tree, its posterior, the DP evidence, the family bound) and, within
        the hyperparameter search and the tree, their progress (grid points,
        pair scores and merges of the greedy search, items placed by the
        randomized tree) at least every 10 s.

    Attributes
    ----------
    children_ : ndarray of shape (n_samples - 1, 2)
        The tree, as scikit-learn's ``AgglomerativeClustering``: row ``k``
        merges two nodes into node ``n_samples + k``. Rose trees are
        binarized: a node with ``m`` children is ``m - 1`` rows, of which
        the first ``m - 2`` are not clusters (``merge_is_cluster_``).
    distances_ : ndarray of shape (n_samples - 1,)
        Height of each merge: the largest ``-log r`` in its subtree (``0``
        for a sure merge), so heights never decrease towards the root and
        rows are sorted by height (``scipy`` dendrograms draw them as is).
        ``r_k < 0.5`` means ``-log r_k > log 2``.
    linkage_matrix_ : ndarray of shape (n_samples - 1, 4)
        scipy's linkage matrix of the same tree (children, height, size).
    merge_log_probabilities_ : ndarray of shape (n_samples - 1,)
        ``log r_k`` of each merge (``-inf`` on the virtual merges of a rose tree).
    merge_is_cluster_ : ndarray of bool, shape (n_samples - 1,)
    labels_ : ndarray of shape (n_samples,)
        Flat cut of the tree (see ``n_clusters``), labels in order of first appearance.
    n_clusters_ : int
    n_leaves_ : int
    n_connected_components_ : int
        Always 1.
    log_marginal_likelihood_ : float
        ``log p(D | T)`` (natural log).
    log_evidence_lower_bound_ : float
        ``log p(D | T) + log d_root + log Gamma(alpha) - log Gamma(n + alpha)``:
        the DP-mixture evidence summed over the tree-consistent partitions only,
        a lower bound on ``log p(X)`` under the DP mixture.
    log_marginal_likelihood_dp_ : float or None
        The exact DP-mixture ``log p(X)`` (flat trellis, same likelihood
        parameters) when ``n_samples <= 12``; ``None`` otherwise.
    hyperparameters_ : dict of str to float
        The likelihood hyperparameters used, by name (``describe_params``;
        empty for likelihoods that describe none).
    log_evidence_family_bound_ : float or None
        The bound over the family (``family=``), between the two above.
    n_features_in_ : int
    model_ : ClusterLikelihood
        The fitted likelihood (a Gaussian one fitted to ``X`` minus the means of
        the features lying more than 1000 standard deviations from 0, its
        ``mean_prior_`` moved alike: the same model, summed without rounding).
    approximation_ : str
        What the fit does not compute exactly: the tree is greedy (or
        randomized), the evidence of the tree a lower bound, and the
        hyperparameters may come from a random subset of rows.

    See Also
    --------
    DPMixture : the DP mixture this tree approximates (Gibbs or exact).
    sklearn.cluster.AgglomerativeClustering : distance-based agglomeration.

    Notes
    -----
    Per merge ``k`` of ``i`` and ``j`` (Heller & Ghahramani, Section 3):
    ``d_k = alpha Gamma(n_k) + d_i d_j``, ``pi_k = alpha Gamma(n_k) / d_k``,
    ``p(D_k | T_k) = pi_k m(D_k) + (1 - pi_k) p(D_i | T_i) p(D_j | T_j)`` and
    ``r_k = pi_k m(D_k) / p(D_k | T_k)``; all in log space, so nothing
    overflows at large ``n``. Merged statistics are the likelihood's
    incremental ones (its ``add`` kernel).

    References
    ----------
    K. A. Heller and Z. Ghahramani, "Bayesian hierarchical clustering", ICML 2005.
    K. A. Heller and Z. Ghahramani, "Randomized algorithms for fast Bayesian
    hierarchical clustering", 2005.
    C. Blundell, Y. W. Teh and K. A. Heller, "Bayesian rose trees", UAI 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import BayesianHierarchicalClustering
    >>> X = np.array([[0.0, 0.1], [0.2, 0.0], [0.1, 0.2],
    ...               [5.0, 5.1], [5.2, 5.0], [5.1, 5.2]])
    >>> bhc = BayesianHierarchicalClustering().fit(X)
    >>> bhc.labels_.tolist()
    [0, 0, 0, 1, 1, 1]
    >>> bool(bhc.log_evidence_lower_bound_ <= bhc.log_marginal_likelihood_dp_)
    True
    >>> bhc.predict([[0.1, 0.1], [5.0, 5.0]]).tolist()
    [0, 1]
    >>> bhc.approximation_
    'greedy BHC binary tree (merges by the highest r_k, not the most probable tree); ...'
    """

    _nested_models = {"likelihood": "NormalInverseWishart()"}
    _parameter_constraints: dict = {
        "likelihood": [StrOptions(set(LIKELIHOODS)), ClusterLikelihood],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "hyperparameters": [StrOptions({"evidence", "fixed"})],
        "method": [StrOptions({"greedy", "randomized"})],
        "tree": [StrOptions({"binary", "rose"})],
        "n_clusters": [Interval(Integral, 1, None, closed="left"), None],
        "family": [StrOptions({"all"} | set(LINKAGES)), list, None],
        "subsample_size": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, likelihood="gaussian", *, alpha=1.0, hyperparameters="evidence",
                 method="greedy", tree="binary", n_clusters=None, family=None,
                 subsample_size=DEFAULT_SUBSAMPLE_SIZE, random_state=None, verbose=0):
        self.likelihood = likelihood
        self.alpha = alpha
        self.hyperparameters = hyperparameters
        self.method = method
        self.tree = tree
        self.n_clusters = n_clusters
        self.family = family
        self.subsample_size = subsample_size
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
    def fit(self, X, y=None):
        """Build the tree and its DP quantities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        self : BayesianHierarchicalClustering
        """
        X = validate_kernel_data(self, X, dtype=np.float64, ensure_min_samples=2)
        n = X.shape[0]
        self._check_n_clusters(n)
        if self.method == "randomized" and self.tree == "rose":
            raise ValueError("method='randomized' builds binary trees: use tree='binary'.")
        self.model_, self._offset, X = fit_likelihood(self.likelihood, X)
        if not self.model_.factorizes:
            raise ValueError(f"{type(self.model_).__name__} does not factorise over clusters; "
                             "BHC needs a conjugate cluster likelihood.")
        data = self.model_.check_data(X)
        rng = check_random_state(self.random_state)
        rose = self.tree == "rose"
        progress = Progress(type(self).__name__, self.verbose)
        tree = None
        if self.hyperparameters == "evidence":
            progress.stage(f"hyperparameters by the evidence of greedy {self.tree} trees")
            params, tree = select_hyperparameters(self.model_, data, self.alpha, rose=rose,
                                                  random_state=rng, progress=progress)
        else:
            params = kernel_params(self.model_)
        self._params = params
        self.hyperparameters_ = {name: float(np.ravel(value)[0]) for name, value in
                                 self.model_.describe_params(params).items()}
        progress.stage(f"{self.method} {self.tree} tree of {n:,} items")
        if self.method == "randomized":
            tree = randomized_tree(self.model_, data, self.alpha,
                                   subsample_size=self.subsample_size, random_state=rng,
                                   params=params, progress=progress)
        elif tree is None:
            tree = greedy_tree(self.model_, data, self.alpha, rose=rose, params=params,
                               progress=progress)
        children, is_cluster = tree
        progress.stage("node posteriors")
        log_m = bhc_posterior.node_log_marginals(self.model_, data, children, params)
        post = bhc_posterior.TreePosterior(children, is_cluster, log_m, self.alpha)
        self._store_tree(post, n)
        self.log_marginal_likelihood_ = post.log_marginal_likelihood
        self.log_evidence_lower_bound_ = post.log_evidence_lower_bound
        self.log_marginal_likelihood_dp_ = None
        if n <= bhc_posterior.MAX_EXACT_DP_ITEMS:
            progress.stage("exact DP-mixture evidence (flat trellis)")
            self.log_marginal_likelihood_dp_ = bhc_posterior.exact_dp_log_marginal(
                self.model_, data, self.alpha, params)
        self.log_evidence_family_bound_ = None
        if self.family is not None:
            progress.stage("family bound (sparse flat trellis)")
            self.log_evidence_family_bound_ = bhc_posterior.family_lower_bound(
                self.model_, data, X, self.alpha, [self.children_], self.family, params)[0]
        self.approximation_ = approximation_notes(
            n, method=self.method, rose=rose, subsample_size=self.subsample_size,
            selection_items=MAX_SELECTION_ITEMS if self.hyperparameters == "evidence" else None)
        self._data = data
        return self

    def _store_tree(self, post, n):
        """Sort the merges by height; store the tree and its cut (:class:`HierarchyMixin`)
        and the predictive weights."""
        heights = post.heights()
        order = np.lexsort((np.arange(n - 1), post.sizes[n:], heights))
        new_id = np.arange(2 * n - 1)
        new_id[n + order] = n + np.arange(n - 1)
        # n_clusters=None: BHC's own cut where r_k < 0.5, top-down from the root.
        self._set_tree(new_id[post.children[order]], heights[order],
                       labels=post.cut_labels() if self.n_clusters is None else None)
        nodes = np.concatenate([np.arange(n), n + order])   # old id of every new id
        self.merge_log_probabilities_ = post.log_r[n + order]
        self.merge_is_cluster_ = post.is_cluster[n + order]
        self._predictive_log_weights = post.predictive_log_weights()[nodes]

    # -- new points ------------------------------------------------------------
    def _grouped(self, X):
        check_is_fitted(self)
        X = validate_kernel_data(self, X, dtype=np.float64, reset=False)
        new_data = self.model_.check_data(shift_rows(X, getattr(self, "_offset", None)))
        group, fractions = bhc_posterior.node_groups(self.children_, self.labels_,
                                                     self.n_clusters_)
        grouped = bhc_posterior.grouped_log_predictive(
            self.model_, self._data, new_data, self.children_, self._predictive_log_weights,
            group, self.n_clusters_ + fractions.shape[0], self._params)
        return grouped, fractions

    def score_samples(self, X):
        """Log predictive density of each row: ``log sum_k w_k p(x | D_k)`` (paper Section 4).

        ``w_k = r_k prod_{ancestors a} (1 - r_a) n_c / n_a`` over all nodes ``k``
        of the tree (leaves included, ``r = 1``; ``c`` is the child of ``a`` on
        the path to ``k``): the new point stops at a node with probability
        ``r`` and otherwise moves to a child in proportion to its size, so the
        weights sum to one.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)

        Returns
        -------
        log_density : ndarray of shape (n_new,)
        """
        grouped, _ = self._grouped(X)
        return logsumexp(grouped, axis=1)

    def predict_proba(self, X):
        """Probability that each new row belongs to each cluster of ``labels_``.

        Each tree node ``k`` contributes ``w_k p(x | D_k)`` (see
        :meth:`score_samples`) to the cluster that contains it; a node above
        the cut spreads its share over its clusters in proportion to their
        sizes.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)

        Returns
        -------
        proba : ndarray of shape (n_new, n_clusters_)
        """
        grouped, fractions = self._grouped(X)
        total = logsumexp(grouped, axis=1, keepdims=True)
        share = np.exp(grouped - total)
        k = self.n_clusters_
        proba = share[:, :k] + share[:, k:] @ fractions
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable cluster of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)

        Returns
        -------
        labels : ndarray of shape (n_new,)
        """
        return np.argmax(self.predict_proba(X), axis=1)

    def score(self, X, y=None):
        """Mean log predictive density of the rows of X (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)
        y : Ignored

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))


__all__ = ["BayesianHierarchicalClustering"]
