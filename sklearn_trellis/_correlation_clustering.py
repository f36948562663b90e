"""``ExactCorrelationClustering``: the exact posterior over flat clusterings."""

import numbers
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._core.budget import check_memory, format_bytes, rows_or_zero
from ._core.compilation import announces_compilation
from ._core.pairwise import check_square_symmetric
from ._core.progress import Progress
from ._core.validation import WriteableStateMixin, check_scalar_param, validate_kernel_data
from ._core.validation import check_random_state
from .engines.beta_posterior import LOG_ALPHA_GRID, LOG_B_GRID, beta_posterior
from .engines.exact.binder import MAX_CLUSTER_MARGINAL_ITEMS, bayes_estimate
from .engines.gaussian_pair_evidence import (evidence_family, log_evidence, log_predictive,
                                             maximise_evidence, shifted_affinities)
from .engines.planner import approximation, plan_flat
from .engines.sparse import sparse_flat
from .engines.sparse.family_search import family_is_complete
from .engines.sparse.seeds import LINKAGES, OTHER_SEEDS, check_linkages
from .engines.sparse.sparse_flat import SparseFlatTrellis
from .models.correlation import CorrelationClusteringModel
from .models.gaussian_pairs import log_density_shift, noise_variance, pair_moments, unit_exponent
from .preprocessing.affinity import mean_off_diagonal, similarity
from .summaries.point_estimates import LOSSES, PAIRWISE_LOSSES, ClusterMarginals, loss_name


#: N x N float64 matrices alive at once in fit (affinities, centred affinities, the model's).
N_AFFINITY_COPIES = 3

#: Where the search of ``alpha='auto'`` starts (the Ewens concentration).
ALPHA_START = 1.0

#: Exact draws searched by the point estimates of losses that need samples.
POINT_ESTIMATE_SAMPLES = 1000


def _largest_pair_deviation(similarity, offset):
    """The largest ``|w - c| = |s_ij - c|`` over the pairs ``i != j`` (0 for fewer than two
    items), in one scan and without an N x N copy: the zero diagonal is set to ``c`` for
    the scan and restored. Rounding is monotone, so ``max(fl(max s - c), fl(c - min s))``
    is the largest ``|fl(s_ij - c)|``. 0 means the pairs carry no information (the
    Gaussian pair model's noise variance is 0, its evidence unbounded); ``inf`` that
    ``s - c`` overflows."""
    if similarity.shape[0] < 2:
        return 0.0
    np.fill_diagonal(similarity, offset)
    top = max(float(similarity.max()) - offset, offset - float(similarity.min()))
    np.fill_diagonal(similarity, 0.0)
    return top


def _unit_exponent(similarity, offset, top):
    """The power of 2 in whose units the Gaussian pair model is evaluated
    (:func:`~sklearn_trellis.models.gaussian_pairs.unit_exponent`), given ``top``, the
    largest ``|w - c|`` (:func:`_largest_pair_deviation`): 0 at ordinary scales, else
    the one that brings it into ``[0.5, 1)``."""
    if not np.isfinite(top):    # s - c overflowed: |s - c| <= 2 max(|s|, |c|)
        largest = max(float(similarity.max()), -float(similarity.min()), abs(offset))
        return int(np.frexp(largest)[1]) + 1
    return unit_exponent(top)


def _exactly_scaled(value, exponent, name):
    """``value * 2**exponent``; refused, naming ``name``, when float64 cannot hold it
    exactly (beyond its range, or in its subnormals)."""
    if value is None or exponent == 0:
        return value
    with np.errstate(over="ignore", under="ignore"):
        scaled = float(np.ldexp(value, exponent))
    if np.isfinite(scaled) and float(np.ldexp(scaled, -exponent)) == value:
        return scaled
    mantissa, power = np.frexp(value)
    power = int(power) + exponent
    raise ValueError(f"{name} is {float(mantissa)!r} * 2**{power}, which float64 cannot hold "
                     f"exactly ({'overflow' if power > 0 else 'underflow'}): rescale the "
                     "affinities.")


class ExactCorrelationClustering(WriteableStateMixin, ClusterMixin, BaseEstimator):
    """Correlation clustering with the exact distribution over all clusterings.

    For a flat clustering ``C`` of the N items the model is the Gibbs
    distribution (Greenberg et al. 2018, Section 5)::

        log phi(C) = beta * (sum_{i<j same cluster} w_ij - sum_{i<j different clusters} w_ij)
        P(C) = phi(C) / Z,   Z = sum of phi over all Bell(N) set partitions.

    The exact cluster trellis computes ``log Z``, the MAP clustering, every
    pairwise, cluster and "together" marginal, the distribution of the number
    of clusters and exact samples in ``O(3^N)`` time and ``O(2^N)`` memory, so
    N up to about 20 (seconds) or 22 (a minute) is practical at a fixed
    ``beta``; the default ``beta='auto'`` runs some 25 such fits to learn it.

    It is also the exact posterior of a generative model, the *Gaussian pair
    model* (:mod:`sklearn_trellis.models.gaussian_pairs`): a partition is
    drawn from a partition prior (uniform, or Ewens with ``alpha``), then
    every pair's affinity independently, ``N(mu_same, s2)`` inside a cluster
    and ``N(mu_diff, s2)`` across. Then
    ``beta = (mu_same - mu_diff) / (2 s2)`` and the affinity offset is
    ``c = (mu_same + mu_diff) / 2``; the model gives the exact evidence
    ``log_evidence_``, the held-out :meth:`score` and empirical Bayes
    (``beta='auto'``, ``center='auto'``).

    Parameters
    ----------
    beta : float, 'auto' or 'posterior', default='auto'
        Inverse temperature multiplying every affinity (``beta >= 0``).
        Large values concentrate the distribution on the MAP clustering.
        ``'auto'`` (the default): empirical Bayes, the value maximising the
        evidence ``log_evidence_`` (exact, or on the sparse trellis's
        family), found with its exact gradient (a posterior expectation of
        pair co-membership); ``beta_`` holds the value used. A fixed value's
        meaning depends on the scale of the affinities, so no fixed default
        is calibrated: on data from the default model (uniform prior) the
        pooled pairwise ECE is 0.02 with ``'auto'`` against 0.05 with
        ``beta=1`` (0.18 in its worst cell; :ref:`choosing_models`). Needs
        at least 3 items (one item has a single clustering: ``beta_`` is
        then 1.0, which changes nothing). It costs some 15 to 20 trellis
        fits without the MAP (the grid's without the marginals either):
        warm, 0.06 s at 12 items, 0.7 s at 16, 14 s at 20 (against 1.5 s at
        a fixed ``beta``); give ``beta`` a value for the largest exact fits.
        ``'posterior'``: ``beta`` is summed out over 41 values,
        ``b sd = exp(-4), exp(-3.75), ..., exp(6)`` (``b = 2 beta``, ``sd`` the
        root mean square of the shifted affinities), under a broad
        half-normal prior on ``b sd`` (scale 4), each weighed by its exact
        evidence (:mod:`~sklearn_trellis.engines.beta_posterior`):
        every probability (``pairwise_marginals_``, the cluster, together
        and number-of-clusters marginals, :meth:`sample`, :meth:`score`) is
        that average, one trellis fit per grid value, computing ``log Z``
        alone (the MAP once, at the mode); values whose weight an exact
        bound shows is 0 are not fitted (warm: 0.06 s at 12 items, 34 s at
        20, against 1.5 s at a fixed ``beta``). ``labels_``, ``log_partition_function_`` and the
        MAP are those at the posterior mode ``beta_``; ``beta_grid_`` and
        ``beta_posterior_`` hold the grid and its posterior. ``center`` and
        ``alpha`` set to ``'auto'`` are learned with ``beta`` by empirical
        Bayes first, then kept. Not with ``method='perturb_and_map'``.
    affinity : {'exp_euclidean', 'rbf', 'precomputed'} or callable, default='exp_euclidean'
        How the signed affinities ``w`` are obtained.

        - ``'exp_euclidean'``: ``exp(-||x_i - x_j||)`` on feature rows (the paper's).
        - ``'rbf'``: ``exp(-gamma ||x_i - x_j||^2)``.
        - ``'precomputed'``: ``X`` is the (N, N) symmetric signed affinity
          matrix, used as is (diagonal ignored, ``center`` not applied).
        - callable ``f(X, Y) -> (len(X), len(Y))`` similarity matrix.
    center : bool or 'auto', default=True
        The affinity offset ``c`` subtracted from the similarities (the
        Gaussian pair model's midpoint ``(mu_same + mu_diff) / 2``: pairs
        above it favour sharing a cluster). ``True``: for feature affinities,
        the mean off-diagonal similarity (as the paper does; the midpoint
        when about half the pairs share a cluster), with ``'precomputed'``
        no offset; ``False``: no offset; ``'auto'``: the offset maximising
        the evidence (empirical Bayes, with ``'precomputed'`` too), learned
        jointly with ``beta`` when ``beta='auto'``. ``affinity_offset_``
        holds the value used.
    alpha : float, 'auto', 'posterior' or None, default=None
        Partition prior of the Gaussian pair model. ``None``: uniform over
        all partitions (the classical correlation-clustering distribution);
        a float: the Ewens (Chinese restaurant process) prior of that
        concentration, whose cluster term ``log(alpha) + log((|B| - 1)!)``
        joins the potentials (fewer, larger clusters for small ``alpha``).
        It is the coherent choice for :meth:`score` on new items: the
        Ewens prior of N items is the marginal of that of N + 1.
        ``'auto'``: the Ewens prior with the concentration maximising the
        evidence (empirical Bayes, jointly with ``beta`` and ``center`` when
        they are ``'auto'``; the gradient in ``log alpha`` is the posterior
        mean number of clusters minus its prior mean); ``alpha_`` holds the
        value used. ``'posterior'`` (with ``beta='posterior'`` only): the
        Ewens concentration is summed out with ``beta``, over 17 values
        ``log alpha = -5, -4.5, ..., 3`` under the Gamma prior
        ``alpha_prior`` taken on that grid, each pair ``(alpha, beta)``
        weighed by its exact evidence: up to 17 x 41 trellis fits. Every
        probability is the average; ``alpha_`` is the posterior mode's,
        ``alpha_grid_`` and ``alpha_posterior_`` hold the grid and its
        posterior.
    alpha_prior : (shape, rate) or None, default=(1.0, 1.0)
        Gamma prior on ``alpha``. With ``alpha='auto'`` the search maximises
        the evidence plus its log density in ``log alpha`` (the posterior mode
        of ``log alpha``; ``None``: plain empirical Bayes); with
        ``alpha='posterior'`` it is the prior ``alpha`` is summed out under.
        Unused otherwise.
    gamma : float, default=None
        RBF width; ``None`` means ``1 / n_features``.
    method : {'auto', 'exact', 'sparse', 'milp', 'perturb_and_map'}, default='auto'
        Inference engine.

        - ``'exact'``: the full trellis; refuses N above ``max_exact_size``
          with the memory and time it would need.
        - ``'sparse'``: a sparse trellis whose clusters are the nodes of
          agglomerative seed trees (``seed_linkages``) on the dissimilarities
          ``max(w) - w``: every quantity is exact over the clusterings made
          of those clusters (paper Section 4). Starting from the seed tree of
          largest ``Z`` (its cuts, ``O(N)``), the other trees join the union
          while it needs at most 100,000 remainder states and N <= 1,000;
          ``approximation_`` says which trees were used.
        - ``'auto'``: ``'exact'`` up to ``max_exact_size`` items, ``'sparse'``
          beyond.
        - ``'milp'``: the MAP clustering by integer programming (HiGHS, lazy
          triangle inequalities), certified optimal when it finishes within
          ``time_limit``; the distribution (``log Z``, marginals, samples)
          comes from the exact trellis up to ``max_exact_size``, else from the
          sparse one.
        - ``'perturb_and_map'``: ``pairwise_marginals_`` estimated from the
          MAP clusterings of ``n_perturbations`` Gumbel perturbations of the
          pairwise affinities (a baseline, Greenberg et al. Section 5.3.1);
          MAPs by the exact trellis up to ``max_exact_size`` items, else by the
          MILP; the rest as ``'milp'``.
    max_exact_size : int, default=20
        Largest N for which ``'auto'`` runs the exact trellis.
    seed_linkages : {'all', 'single', 'average', 'complete', 'ward', 'diana'} or list, \
default='all'
        Seed trees of the sparse trellis (Ward only with feature affinities):
        ``'all'`` is the four linkages; ``'diana'`` adds the divisive tree of
        the same dissimilarities (Kaufman & Rousseeuw's DIANA).
    time_limit : float, default=60.0
        Seconds allowed to the MILP (``'milp'``). With ``'perturb_and_map'``
        beyond the exact size, the budget of the unperturbed MILP and, again,
        of all perturbed MILPs together (at least 1 s each); perturbed
        problems are hard (the noise dominates weak affinities), so expect
        uncertified MAPs there, counted in ``approximation_``.
    n_perturbations : int, default=100
        Number of perturbed MAP clusterings of ``'perturb_and_map'``.
    point_estimate : {'map', 'binder', 'vi', 'omari', 'nvi', 'nid', 'omari_approx', \
'vi_lb'}, default='map'
        How ``labels_`` summarises the distribution: ``'map'``, the most
        probable clustering, or the clustering of smallest posterior expected
        loss (a Bayes estimate). For Binder's loss it depends only on the
        pairwise marginals, so when the trellis is exact the estimate is
        *exact*: minimised over every clustering
        (:func:`~sklearn_trellis.engines.exact.binder.binder_point_estimate`).
        Losses of the pairwise marginals alone (``'omari_approx'``,
        ``'vi_lb'``, and Binder on a sparse trellis) are searched on
        ``pairwise_marginals_``; VI on the exact trellis (up to 16 items) is
        minimised exactly from the cluster marginals (the same whatever
        ``random_state``); the others are searched on 1,000 draws
        (:func:`~sklearn_trellis.summaries.point_estimate`). ``approximation_``
        says when ``labels_`` is not the exact minimiser.
    random_state : int, RandomState instance or None, default=None
        Seed of :meth:`sample` when it is called without one, of the
        perturbations and of the draws of ``point_estimate``.
    verbose : int, default=0
        Print a line when each stage of the fit starts (empirical Bayes, the
        exact or sparse trellis, the MILP, the perturbations) and, within a
        long stage, its progress at least every 10 s.

    Attributes
    ----------
    beta_ : float
        The ``beta`` used: ``beta``, the empirical Bayes value (``'auto'``,
        the default; 1.0 for a single item, where it changes nothing), or
        with ``beta='posterior'`` the grid value of largest posterior
        probability.
    beta_grid_ : ndarray of shape (41,)
        With ``beta='posterior'`` only: the grid of ``beta`` summed over.
    beta_posterior_ : ndarray of shape (41,)
        With ``beta='posterior'`` only: ``p(beta | W)`` on ``beta_grid_``
        (zero below ``1e-16`` of the largest; ``alpha`` summed out when
        ``alpha='posterior'``).
    alpha_ : float or None
        The partition prior used: ``alpha``, the empirical Bayes
        concentration, or with ``alpha='posterior'`` the grid value of the
        posterior mode of ``(alpha, beta)``.
    alpha_grid_ : ndarray of shape (17,)
        With ``alpha='posterior'`` only: the grid of ``alpha`` summed over.
    alpha_posterior_ : ndarray of shape (17,)
        With ``alpha='posterior'`` only: ``p(alpha | W)`` on ``alpha_grid_``,
        ``beta`` summed out.
    noise_variance_ : float
        The Gaussian pair model's ``s2`` maximising the evidence at ``beta_``
        and ``affinity_offset_`` (closed form); then
        ``mu_same = c + beta_ s2`` and ``mu_diff = c - beta_ s2``. ``nan``
        for a single item. At any scale of the affinities: where ``|w - c|``
        is beyond ``2**450`` or below ``2**-450`` (float64 cannot sum their
        squares) the model is fitted in units of a power of 2 and ``s2``
        mapped back exactly; if float64 cannot hold ``s2`` itself exactly (a
        noise sd beyond about ``1e154`` or below ``1e-154``) it is its
        rounding (``inf``, 0 or subnormal), with a ``UserWarning`` giving its
        exact value and the noise sd (``log_evidence_`` and :meth:`score` do
        not need it).
    log_evidence_ : float
        ``log p(W)``, the log marginal likelihood of the affinities under the
        Gaussian pair model at the fitted parameters (with
        ``beta='posterior'``, ``beta`` summed out under its prior): exact on
        the exact trellis, the sum over the family's partitions (a lower
        bound) on the sparse one. A density in the affinities' units: scaling
        them by ``2**k`` lowers it by ``N (N - 1) / 2 * k log 2``.
    labels_ : ndarray of shape (n_samples,)
        The clustering chosen by ``point_estimate`` (the MAP by default),
        labels ``0..K-1`` in order of first appearance.
    n_clusters_ : int
        Number of clusters of ``labels_``.
    log_partition_function_ : float
        Natural log of ``Z``.
    partition_function_ : float
        ``exp(log_partition_function_)`` (``inf`` if it overflows float64).
    map_log_potential_ : float
        ``log phi`` of the MAP clustering.
    pairwise_marginals_ : ndarray of shape (n_samples, n_samples)
        ``P(i and j in the same cluster)``, ones on the diagonal. Computed on
        first access for the sparse trellis (8 N**2 bytes: 800 MB at N =
        10,000; :meth:`together_marginal` gives single pairs).
    approximation_ : str or None
        ``None`` when every fitted quantity is exact; otherwise what is
        approximate and how.
    map_is_exact_ : bool
        Whether the MAP clustering (``map_log_potential_``) is certified to be
        the MAP over all clusterings.
    map_gap_ : float or None
        Relative gap between the MAP's log-potential and a proven upper bound
        (0 when certified; ``None`` when no bound is known: sparse trellis).
    n_trellis_vertices_ : int
        Clusters in the trellis (``2**N - 1`` when exact).
    perturbed_maps_ : ndarray of shape (n_perturbations, n_samples)
        With ``method='perturb_and_map'`` only: the MAP clustering of each
        perturbation.
    affinity_matrix_ : ndarray of shape (n_samples, n_samples)
        The signed affinities ``w`` used (diagonal zero).
    affinity_offset_ : float
        The offset ``c`` subtracted from the similarities (``center``).
    n_clusters_distribution_ : ndarray of shape (n_samples,)
        ``P(K = k)`` for ``k = 1..n_samples``. Computed on first access: it
        costs one more ``O(3^N)`` pass and about ``(N + 1) * 4.5`` bytes per
        subset while it runs, which ``fit`` does not pay unless asked.
    model_ : CorrelationClusteringModel
        The fitted flat model.
    n_features_in_ : int
        Number of features (or N for ``'precomputed'``).

    Notes
    -----
    Precision: ``log Z`` and log-potentials have a relative error near machine
    precision (about ``1e-14``); probabilities an absolute error below
    ``1e-12``. All work is in log space, so any ``beta`` is safe. Any scale of
    the affinities too: beyond ``2**+-450`` the Gaussian pair model is fitted
    in units of a power of 2 (exact) and ``beta_``, ``affinity_offset_``,
    ``noise_variance_``, ``log_evidence_`` and :meth:`score` are mapped back
    (a learned ``beta_`` float64 cannot hold, from ``|w| ~ 2**-1000``, is
    refused by name).

    References
    ----------
    C. S. Greenberg, N. Monath, A. Kobren, P. Flaherty, A. McGregor,
    A. McCallum. Compact Representation of Uncertainty in Clustering.
    NeurIPS 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import ExactCorrelationClustering
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1]])
    >>> model = ExactCorrelationClustering(beta=2.0).fit(X)
    >>> model.labels_
    array([0, 0, 0, 1, 1])
    >>> bool(model.pairwise_marginals_[0, 1] > model.pairwise_marginals_[0, 3])
    True

    The exact Bayes clustering under Binder's loss instead of the MAP:

    >>> X = np.r_[np.zeros((3, 2)), np.full((3, 2), 3.0)]
    >>> ExactCorrelationClustering(beta=2.0, point_estimate="binder").fit(X).labels_
    array([0, 0, 0, 1, 1, 1])

    ``beta`` summed out over its posterior (a grid of 41 values) instead of
    fixed:

    >>> X = np.array([[0.0], [0.3], [0.5], [4.0], [4.4], [4.6]])
    >>> model = ExactCorrelationClustering(beta="posterior").fit(X)
    >>> model.beta_grid_.shape, round(float(model.beta_posterior_.sum()), 6)
    ((41,), 1.0)
    >>> model.labels_
    array([0, 0, 0, 1, 1, 1])
    """

    _parameter_constraints = {
        "beta": [Interval(Real, 0, None, closed="left"), StrOptions({"auto", "posterior"})],
        "affinity": [StrOptions({"exp_euclidean", "rbf", "precomputed"}), callable],
        "center": ["boolean", StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto", "posterior"}),
                  None],
        "alpha_prior": ["array-like", None],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "method": [StrOptions({"auto", "exact", "sparse", "milp", "perturb_and_map"})],
        "max_exact_size": [Interval(Integral, 1, None, closed="left")],
        # Names are checked in fit (check_linkages): 'all', one name or a list.
        "seed_linkages": [StrOptions({"all", *LINKAGES, *OTHER_SEEDS}), "array-like"],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "n_perturbations": [Interval(Integral, 1, None, closed="left")],
        "point_estimate": [StrOptions({"map", *LOSSES})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, beta="auto", *, affinity="exp_euclidean", center=True, alpha=None,
                 alpha_prior=(1.0, 1.0), gamma=None, method="auto", max_exact_size=20, seed_linkages="all",
                 time_limit=60.0, n_perturbations=100, point_estimate="map", random_state=None,
                 verbose=0):
        self.beta = beta
        self.affinity = affinity
        self.center = center
        self.alpha = alpha
        self.alpha_prior = alpha_prior
        self.gamma = gamma
        self.method = method
        self.max_exact_size = max_exact_size
        self.seed_linkages = seed_linkages
        self.time_limit = time_limit
        self.n_perturbations = n_perturbations
        self.point_estimate = point_estimate
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.affinity == "precomputed"
        return tags

    # -- fitting ---------------------------------------------------------------
    def _similarity_from_input(self, X):
        """The unshifted similarities ``s`` (zero diagonal) and the starting offset."""
        if self.affinity == "precomputed":
            check_square_symmetric(X)
            s = np.array(X, dtype=np.float64)
        else:
            s = similarity(X, X, self.affinity, self.gamma)
            if not np.all(np.isfinite(s)):
                raise ValueError("The affinity produced non-finite values.")
        np.fill_diagonal(s, 0.0)
        centred = self.center == "auto" or (self.center is True or self.center == 1) \
            and self.affinity != "precomputed"
        return s, mean_off_diagonal(s) if centred else 0.0

    def _check_posterior_parameters(self):
        """Refuse the combinations the parameters alone rule out, before any affinity."""
        if self.alpha == "posterior" and self.beta != "posterior":
            raise ValueError("alpha='posterior' sums alpha out with beta: it needs "
                             "beta='posterior'.")
        if self.alpha == "posterior" and self.alpha_prior is None:
            raise ValueError("alpha='posterior' needs a prior on alpha: alpha_prior=(shape, "
                             "rate), not None.")
        if self.beta == "posterior" and self.method == "perturb_and_map":
            raise ValueError("beta='posterior' sums over exact (or family) trellises; "
                             "method='perturb_and_map' has none. Use method='exact', "
                             "'sparse' or 'milp', or give beta a value.")

    def _learn_parameters(self, s, offset, exponent, plan, features, seed_linkages, progress):
        """``(beta, offset, alpha)``: the given ones, or empirical Bayes values (``'auto'``),
        in the units ``2**exponent`` of ``s`` and ``offset`` (``beta`` in their inverse)."""
        averaged = self.beta == "posterior"
        learn_offset = self.center == "auto"
        # alpha summed out is learned by empirical Bayes only to learn the offset with it
        learn_alpha = self.alpha == "auto" or self.alpha == "posterior" and learn_offset
        # With beta summed out, a learned center or alpha is found jointly with beta.
        learn_beta = self.beta == "auto" or averaged and (learn_offset or learn_alpha)
        beta = (1.0 if isinstance(self.beta, str)
                else _exactly_scaled(float(self.beta), exponent, "beta in the units of w - c"))
        alpha = ALPHA_START if learn_alpha or self.alpha == "posterior" else self.alpha
        if s.shape[0] == 1 and not averaged:
            # One item has one clustering: no parameter changes anything, nothing to learn.
            return beta, offset, alpha
        if s.shape[0] < 3 and (learn_beta or learn_offset or learn_alpha or averaged):
            raise ValueError(f"beta='auto' (the default) or 'posterior', center='auto' and "
                             f"alpha='auto' "
                             f"need at least 3 items (got {s.shape[0]}): one pair's "
                             "affinity is fitted exactly, with no noise left. Give beta "
                             "(e.g. beta=1.0), center and alpha values.")
        if learn_alpha:
            self._checked_alpha_prior()   # a bad parameter is named before the data's problem
        if self._pairs_at_offset and (learn_beta or learn_offset or learn_alpha or averaged):
            raise ValueError(self._no_information_message(s.shape[0], offset)
                             + " so beta='auto' (the default) or 'posterior', "
                             "center='auto' and alpha='auto' cannot be learned from them. "
                             "Give beta a value (the posterior is then the partition prior).")
        if not (learn_beta or learn_offset or learn_alpha):
            return beta, offset, alpha
        learned = " and ".join(name for name, learn in [("beta", learn_beta),
                                                         ("offset", learn_offset),
                                                         ("alpha", learn_alpha)] if learn)
        progress.stage(f"empirical Bayes {learned}")
        family = evidence_family(plan, s, beta=beta, offset=offset, alpha=alpha,
                                 features=features, seed_linkages=seed_linkages)
        found = maximise_evidence(s, beta=beta, offset=offset, learn_beta=learn_beta,
                                  learn_offset=learn_offset, alpha=alpha,
                                  learn_alpha=learn_alpha,
                                  alpha_prior=self._checked_alpha_prior() if learn_alpha
                                  else None, family=family,
                                  max_items=plan.max_exact_size, progress=progress)
        progress.note(f"empirical Bayes: beta={found.beta:.6g}, offset={found.offset:.6g}, "
                      f"alpha={found.alpha}, log evidence={found.log_evidence:.6g} "
                      f"({found.n_evaluations} trellis fits)")
        return found.beta, found.offset, found.alpha

    def _beta_posterior(self, s, w, offset, plan, features, seed_linkages, progress):
        """The grid posterior of ``beta`` (``beta='posterior'``) on the fit's engine."""
        summed = self.alpha == "posterior"
        progress.stage("beta" + (" and alpha" if summed else "")
                       + " summed out over the posterior"
                       + (f" ({len(LOG_ALPHA_GRID) * len(LOG_B_GRID)} trellis fits)" if summed
                          else f" ({len(LOG_B_GRID)} trellis fits)"))
        family = evidence_family(plan, s, beta=1.0, offset=offset,
                                 alpha=self.alpha_, features=features,
                                 seed_linkages=seed_linkages)
        posterior = beta_posterior(w, alpha=None if summed else self.alpha_,
                                   alpha_prior=self._checked_alpha_prior() if summed else None,
                                   family=family, max_items=plan.max_exact_size,
                                   progress=progress)
        # a family holding every subset (small N) sums over every partition: exact
        return posterior, family is None or family_is_complete(family)

    def _checked_alpha_prior(self):
        """``alpha_prior`` as a ``(shape, rate)`` pair of floats, or None."""
        if self.alpha_prior is None:
            return None
        prior = np.asarray(self.alpha_prior, dtype=np.float64)
        if prior.shape != (2,) or not np.all(np.isfinite(prior)) or prior[0] < 0 \
                or prior[1] <= 0:
            raise ValueError(f"alpha_prior must be a (shape, rate) pair with shape >= 0 and "
                             f"rate > 0, got {self.alpha_prior!r}; None for plain empirical "
                             "Bayes.")
        return float(prior[0]), float(prior[1])

    @_fit_context(prefer_skip_nested_validation=True)
    @announces_compilation
    def fit(self, X, y=None):
        """Compute the exact distribution over clusterings of the rows of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
            Feature rows, or the signed affinity matrix if ``affinity='precomputed'``.
        y : Ignored

        Returns
        -------
        self : ExactCorrelationClustering
        """
        seed_linkages = check_linkages(self.seed_linkages)
        self._check_posterior_parameters()
        # Refuse before any N x N matrix (even validation's float64 copy of a precomputed
        # one): the affinities, their centred copy and the model's.
        n = rows_or_zero(X)
        check_memory(N_AFFINITY_COPIES * 8 * n * n, f"the ({n}, {n}) affinity matrices",
                     way_out="Use fewer items (e.g. a subsample, or cluster the centres of "
                             "a k-means fit), or a method without an N x N matrix (DPMixture).")
        X = validate_kernel_data(self, X, dtype=np.float64)
        # The engines, refused before computing any N x N or 2**N table if they cannot fit.
        plan = plan_flat(X.shape[0], method=self.method, max_exact_size=self.max_exact_size,
                         n_perturbations=self.n_perturbations)
        if self.point_estimate != "map" and not plan.exact:
            # the loss estimates read pairwise_marginals_: refused now, not after the trellis
            self._check_sparse_pairwise(X.shape[0], f"point_estimate={self.point_estimate!r}",
                                        "Use point_estimate='map' (no N x N matrix) or "
                                        "fewer items.")
        progress = Progress(type(self).__name__, self.verbose)
        progress.stage(f"({X.shape[0]:,}, {X.shape[0]:,}) affinities")
        s, offset = self._similarity_from_input(X)
        features = X if self.affinity != "precomputed" else None
        # The Gaussian pair model sums the squares of w - c: far from unit scale it is
        # fitted in units of 2**exponent (exact; 0 at ordinary scales, which keep their
        # arithmetic) and every reported quantity is mapped back.
        top = _largest_pair_deviation(s, offset)
        exponent = self._unit_exponent = _unit_exponent(s, offset, top)
        self._pairs_at_offset = s.shape[0] >= 2 and top == 0.0
        if exponent:
            s = np.ldexp(s, -exponent, out=s)
            offset = float(np.ldexp(offset, -exponent))
        beta, offset, self.alpha_ = self._learn_parameters(
            s, offset, exponent, plan, features, seed_linkages, progress)
        w = shifted_affinities(s, offset)
        posterior = None
        if self.beta == "posterior":
            posterior, posterior_exact = self._beta_posterior(s, w, offset, plan, features,
                                                              seed_linkages, progress)
            beta = posterior.beta_of(posterior.mode[0])
            self.beta_grid_ = np.ldexp(posterior.betas, -exponent)
            self.beta_posterior_ = posterior.beta_probabilities
            if posterior.alphas is not None:
                self.alpha_ = posterior.alpha_of(posterior.mode[0])
                self.alpha_grid_ = posterior.alphas
                self.alpha_posterior_ = posterior.alpha_probabilities
        del s
        self.beta_ = _exactly_scaled(beta, -exponent, "beta_")
        self.affinity_offset_ = _exactly_scaled(offset, exponent, "affinity_offset_")
        model = CorrelationClusteringModel(beta=beta, alpha=self.alpha_).fit(w)
        self._n_clusters_distribution = None
        found = plan.run(model, w, features=features,
                         seed_linkages=seed_linkages, time_limit=self.time_limit,
                         random_state=self.random_state, progress=progress)
        self._trellis = found.trellis
        self._pairwise = found.pairwise_marginals
        self.log_partition_function_ = found.log_partition_function
        with np.errstate(over="ignore"):
            self.partition_function_ = float(np.exp(self.log_partition_function_))
        self.map_log_potential_ = found.map_log_potential
        self.map_is_exact_ = found.map_is_exact
        self.map_gap_ = found.map_gap
        self.n_trellis_vertices_ = found.n_trellis_vertices
        if found.perturbed_maps is not None:
            self.perturbed_maps_ = found.perturbed_maps
        self.approximation_ = found.approximation
        n_pairs, _, sum_sq = pair_moments(w)
        self._unit_noise_variance = (noise_variance(2.0 * beta, n_pairs, sum_sq)
                                     if n_pairs else float("nan"))
        if self._pairs_at_offset:
            # w - c = 0 for every pair: the noise variance's estimate is 0 and the
            # evidence unbounded (not the clamped variance's finite, meaningless value)
            self._unit_noise_variance = 0.0
            warnings.warn(self._no_information_message(w.shape[0], offset)
                          + " so the Gaussian pair model has no noise to estimate: "
                          "noise_variance_ is 0, log_evidence_ is NaN (unbounded) and score "
                          "is refused. The clustering is the partition prior's.", UserWarning)
        self.noise_variance_ = self._noise_variance_in_affinity_units()
        self.log_evidence_ = (float("nan") if self._pairs_at_offset else
                              log_evidence(self._trellis, model, w, self._unit_noise_variance))
        if posterior is not None:
            # Every probability is the average over beta's posterior; the MAP, log Z and
            # labels_ stay those at its mode.
            self._trellis, self._pairwise = posterior, None
            self.log_evidence_ = posterior.log_evidence
            if not posterior_exact:
                self._add_approximation_note(
                    "beta summed out on the family of the sparse trellis at beta=1 (every "
                    "grid value on that family)")
        if exponent:
            # a density of the P pair affinities, in their units
            self.log_evidence_ += log_density_shift(n_pairs, exponent)
            w = np.ldexp(w, exponent, out=w)
            del model
            model = CorrelationClusteringModel(beta=self.beta_, alpha=self.alpha_).fit(w)
        self.affinity_matrix_, self.model_ = w, model
        self.labels_ = (found.labels if self.point_estimate == "map"
                        else self._bayes_labels(found.labels))
        self.n_clusters_ = int(self.labels_.max()) + 1
        if not self.affinity == "precomputed":
            self._X_fit = X.copy()  # predictions must not follow edits of the caller's X
        return self

    def _no_information_message(self, n, value):
        """Why ``n`` items whose pairs all sit at the offset ``value`` say nothing, and
        what made them so."""
        if n == 2:
            cause = " (two items: the offset c is the one pair's own affinity)"
        elif self.affinity == "precomputed":
            cause = ""
        else:
            cause = (f" (with affinity={self.affinity!r} every pair's affinity is {value!r}: "
                     "the rows' distances are far beyond the kernel's length scale, or all "
                     "equal; standardise X or set gamma)")
        return (f"Every pair of the {n} items has the same shifted affinity w - c = 0"
                f"{cause}: the {n * (n - 1) // 2} pairs carry no information about the "
                "clustering,")

    def _noise_variance_in_affinity_units(self):
        """``s2`` in the affinities' units (``2**(2 e)`` times the fitted one): where
        float64 cannot hold it exactly, its rounding (``inf``, 0 or subnormal) with a
        warning giving its exact value (:meth:`score` and ``log_evidence_`` use the
        fitted one and are exact)."""
        variance, shift = self._unit_noise_variance, 2 * self._unit_exponent
        if not shift or not np.isfinite(variance):
            return variance
        with np.errstate(over="ignore", under="ignore"):
            scaled = float(np.ldexp(variance, shift))
        if scaled != 0.0 and np.isfinite(scaled) and np.ldexp(scaled, -shift) == variance:
            return scaled
        mantissa, power = np.frexp(variance)
        sd = float(np.ldexp(np.sqrt(variance), self._unit_exponent))
        warnings.warn(f"noise_variance_ is {float(mantissa)!r} * 2**{int(power) + shift}, "
                      f"which float64 cannot hold: it is reported as {scaled!r} (its square "
                      f"root, the pair noise sd, is {sd!r}); log_evidence_ and score are "
                      f"computed in units of 2**{self._unit_exponent} and are exact.",
                      UserWarning)
        return scaled

    def _bayes_labels(self, map_labels):
        """The clustering of smallest posterior expected loss ``point_estimate``.

        On the exact trellis VI is minimised exactly from the cluster marginals (up to
        ``MAX_CLUSTER_MARGINAL_ITEMS`` items). An estimate that is not the exact
        minimiser is described in ``approximation_``.
        """
        loss = self.point_estimate
        rng = check_random_state(self.random_state)
        n = self.affinity_matrix_.shape[0]
        exact = self.n_trellis_vertices_ == (1 << n) - 1
        marginals = None
        if (exact and loss_name(loss) == "vi" and n <= MAX_CLUSTER_MARGINAL_ITEMS
                and hasattr(self._trellis, "log_cluster_marginals")):
            marginals = ClusterMarginals(np.exp(self._trellis.log_cluster_marginals()),
                                         candidates=map_labels[None])
        samples = (None if loss in PAIRWISE_LOSSES or marginals is not None
                   else self._trellis.sample(POINT_ESTIMATE_SAMPLES, rng))
        labels, note = bayes_estimate(loss, pairwise=self.pairwise_marginals_, samples=samples,
                                      exact=exact, cluster_marginals=marginals,
                                      random_state=rng, note_for="labels_")
        self._add_approximation_note(note)
        return labels

    def _add_approximation_note(self, note):
        """``approximation_`` with ``note`` (None: nothing) after the fit's other notes."""
        self.approximation_ = approximation([text for text in (self.approximation_, note)
                                             if text is not None])

    # -- queries on the fitted distribution ---------------------------------
    @property
    def pairwise_marginals_(self):
        """``P(i and j in the same cluster)`` (computed on first access when sparse)."""
        check_is_fitted(self, "_trellis")
        if self._pairwise is None:
            if isinstance(self._trellis, SparseFlatTrellis):
                n = self._trellis.family.n_items
                self._check_sparse_pairwise(
                    n, "pairwise_marginals_", "Query pairs with together_marginal([i, j]), "
                    "or fit fewer items.")
                self._pairwise = self._trellis.pairwise_marginals(
                    max_bytes=sparse_flat.DEFAULT_MAX_PAIRWISE_BYTES)
            else:
                self._pairwise = self._trellis.pairwise_marginals()
        return self._pairwise

    @staticmethod
    def _check_sparse_pairwise(n, what, way_out):
        """Refuse the (n, n) pairwise marginals of a sparse trellis above the bytes it
        gives at once (``sparse_flat.DEFAULT_MAX_PAIRWISE_BYTES``), in this estimator's
        terms (the engine's own way out, rows and max_bytes, are not parameters here)."""
        n_bytes, limit = 8 * n * n, sparse_flat.DEFAULT_MAX_PAIRWISE_BYTES
        if n_bytes > limit:
            raise ValueError(f"{what} needs the ({n}, {n}) pairwise marginals "
                             f"({format_bytes(n_bytes)}), above the {format_bytes(limit)} a "
                             f"sparse trellis gives at once. {way_out}")

    @property
    def n_clusters_distribution_(self):
        """``P(K = k)`` for ``k = 1..n_samples`` (computed on first access)."""
        check_is_fitted(self, "_trellis")
        if self._n_clusters_distribution is None:
            self._n_clusters_distribution = self._trellis.n_clusters_distribution()
        return self._n_clusters_distribution

    def cluster_marginal(self, indices):
        """Probability that exactly the items ``indices`` form one cluster.

        Parameters
        ----------
        indices : array-like of int
            Item indices (rows of the training data).

        Returns
        -------
        probability : float
        """
        check_is_fitted(self)
        return self._trellis.cluster_marginal(indices)

    def together_marginal(self, indices):
        """Probability that all items ``indices`` share a cluster (with maybe others).

        Parameters
        ----------
        indices : array-like of int

        Returns
        -------
        probability : float
        """
        check_is_fitted(self)
        return self._trellis.together_marginal(indices)

    def log_potential(self, labels):
        """``log phi`` of any clustering of the training items.

        Parameters
        ----------
        labels : array-like of shape (n_samples,)

        Returns
        -------
        log_potential : float
        """
        check_is_fitted(self)
        return self.model_.log_potential(labels)

    def sample(self, n_samples=1, random_state=None):
        """Exact draws from the distribution over clusterings.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None
            ``None`` uses the estimator's ``random_state``.

        Returns
        -------
        samples : ndarray of shape (n_samples, n_items)
            One label vector per row, labels in order of first appearance.
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind=numbers.Integral, low=1)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        return self._trellis.sample(int(n_samples), rng)

    # -- new items ----------------------------------------------------------------
    def _new_affinities(self, X):
        """Shifted affinities ``w'`` of new rows to the fitted items, shape (n_new, N).

        With ``'precomputed'``, ``X`` holds the similarities of the new items to
        the fitted ones (scikit-learn's convention for pairwise estimators,
        which model selection follows: ``X[test][:, train]``).
        """
        check_is_fitted(self)
        X = validate_kernel_data(self, X, dtype=np.float64, reset=False)
        if self.affinity == "precomputed":
            s = X
        else:
            s = similarity(X, self._X_fit, self.affinity, self.gamma)
        if not np.all(np.isfinite(s)):
            raise ValueError("The affinities of the new rows contain non-finite values.")
        return s - self.affinity_offset_

    def predict(self, X):
        """Assign new rows to the cluster of ``labels_`` that gains most.

        A new item ``x`` joining cluster ``k`` changes ``log phi`` by
        ``beta * (2 * sum_{j in C_k} w_xj - sum_j w_xj)`` (plus ``log |C_k|``
        with ``alpha``); each row is given the existing cluster with the
        largest gain (clusters of the training data are not changed, and no
        new cluster is opened).

        Parameters
        ----------
        X : array-like of shape (n_new, n_features) or (n_new, n_samples_fit)
            Feature rows, or with ``affinity='precomputed'`` the similarities
            of the new items to the fitted ones.

        Returns
        -------
        labels : ndarray of shape (n_new,)
        """
        new = self._new_affinities(X)
        gains = self.model_.assignment_gains(new, self.labels_)
        return np.argmax(gains[:, :-1], axis=1)

    def score_samples(self, X):
        """Log predictive density of each new row's affinities given the fitted items.

        ``log p(w_x | W)`` under the Gaussian pair model at the fitted
        parameters (``beta_``, ``affinity_offset_``, ``noise_variance_``,
        ``alpha``): the density of the new item's N affinities ``w_xj`` to
        the fitted items, the partition of the fitted items and the new
        item's cluster summed out (:func:`~sklearn_trellis.models.gaussian_pairs.new_item_log_predictive`).
        Each row is scored on its own, given the fitted items only. Exact on
        the exact trellis (``O(2**N)`` per row); on the sparse trellis, the
        predictive density of the model restricted to the trellis's family.
        With the uniform prior (``alpha=None``) it is the predictive density
        of the uniform prior over the partitions of the N + 1 items. A density
        in the affinities' units, at any scale (affinities scaled by ``2**k``:
        ``- N k log 2``).

        Parameters
        ----------
        X : array-like of shape (n_new, n_features) or (n_new, n_samples_fit)
            Feature rows, or with ``affinity='precomputed'`` the similarities
            of the new items to the fitted ones.

        Returns
        -------
        log_density : ndarray of shape (n_new,)
        """
        new = self._new_affinities(X)
        if getattr(self, "_pairs_at_offset", False):
            raise ValueError("score needs a noise variance, and every fitted pair's "
                             "shifted affinity w - c was 0 (noise_variance_ is 0): the "
                             "Gaussian pair model's density is unbounded there.")
        if self.affinity_matrix_.shape[0] < 2:
            raise ValueError("score needs a fit on at least two items: the Gaussian pair "
                             "model's noise variance is estimated from the fitted pairs.")
        # in the units the model was fitted in, then a density in the affinities' units
        exponent = self._unit_exponent
        new = np.ldexp(new, -exponent) if exponent else new
        if self.beta == "posterior":
            out = self._trellis.log_predictive(new)
        else:
            unit_model = CorrelationClusteringModel(beta=np.ldexp(self.beta_, exponent),
                                                    alpha=self.alpha_)
            out = log_predictive(self._trellis, unit_model, self._unit_noise_variance, new)
        return out + log_density_shift(new.shape[1], exponent) if exponent else out

    def score(self, X, y=None):
        """Mean held-out log predictive density of new rows (higher is better).

        The mean of :meth:`score_samples`: a proper score, comparable across
        ``beta``, ``center`` and ``alpha`` (the densities are of the same
        affinities), so ``GridSearchCV`` with its default scoring selects
        them; not comparable across ``affinity`` or ``gamma``, which change
        the affinities themselves. Use a labelled scorer
        (:mod:`sklearn_trellis.metrics`) for those.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features) or (n_new, n_samples_fit)
            Feature rows, or with ``affinity='precomputed'`` the similarities
            of the new items to the fitted ones.
        y : Ignored

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))


__all__ = ["ExactCorrelationClustering"]
