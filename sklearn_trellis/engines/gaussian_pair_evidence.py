"""Evidence, empirical Bayes and predictive densities of the Gaussian pair model on a flat trellis.

The model and its derivation are in :mod:`~sklearn_trellis.models.gaussian_pairs`;
here the trellis engines supply what it needs: ``log Z`` and the pairwise
marginals (evidence and gradient), and the cluster marginals (a new item's
predictive density). On the exact trellis every quantity is exact; on a
sparse trellis it is the same quantity *on the family*: the sum over the
partitions made of the family's clusters only (so the evidence is a lower
bound of the exact one).
"""

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from .._core.budget import check_memory
from .._core.progress import SILENT
from .._core.subsets import subset_pair_sums, subset_sums
from ..models.correlation import CorrelationClusteringModel
from ..models.gaussian_pairs import (evidence_gradient, log_alpha_gradient,
                                     log_prior_normaliser, new_item_log_predictive,
                                     noise_variance, pair_moments, pair_term)
from .exact.flat import ExactFlatTrellis, exact_flat_map
from .planner import _sparse_flat_trellis
from .sparse.sparse_flat import SparseFlatTrellis

#: The grid of ``log(b sd)`` empirical Bayes evaluates first, ``sd`` the root mean square
#: of the shifted affinities (the scale of ``b = 2 beta`` is ``1 / sd``).
LOG_B_GRID = tuple(np.arange(-4.0, 6.5, 1.0))

#: How far beyond the grid's ends the gradient search may go (in ``log b``).
LOG_B_BEYOND = 15.0

#: Bytes of new-item sums per chunk of the exact predictive (rows x 2**N floats).
PREDICTIVE_CHUNK_BYTES = 64 * 2 ** 20


def shifted_affinities(similarity, offset):
    """``w' = s - c`` with a zero diagonal (a new array)."""
    shifted = np.asarray(similarity, dtype=np.float64) - float(offset)
    np.fill_diagonal(shifted, 0.0)
    return shifted


def fit_flat_trellis(model, family=None, *, max_items, map_clustering=True,
                     marginals=True):
    """The exact flat trellis of a fitted flat model, or the sparse one over ``family``.

    ``map_clustering=False`` and ``marginals=False`` leave out the exact
    trellis's MAP and defer its marginals table (:meth:`ExactFlatTrellis.fit`):
    what the evidence and its gradient need is ``log Z`` and the pairwise
    marginals. The sparse trellis computes its marginals on demand anyway.
    """
    if family is None:
        return ExactFlatTrellis(model.log_potential_table(), max_items=max_items).fit(
            map_clustering=map_clustering, marginals=marginals)
    return SparseFlatTrellis.from_model(model, family).fit()


def log_evidence(trellis, model, shifted, variance):
    """``log p(W)`` of the Gaussian pair model from a fitted trellis (module docstring)."""
    n_pairs, _, sum_sq = pair_moments(shifted)
    log_z = trellis.log_partition_function + model.log_potential_constant()
    prior = log_prior_normaliser(model.n_items_, model.alpha)
    if n_pairs == 0:
        return float(log_z + prior)
    return pair_term(2.0 * float(model.beta), variance, n_pairs, sum_sq) + log_z + prior


class EvidenceBound:
    """Upper bounds of the evidence in ``b`` from its value at a smaller ``b`` (exact trellis).

    ``log Z(b)`` of the trellis is convex in ``b`` with derivative ``E[W(C)]``,
    the posterior mean of the pair sum within clusters, which is at most its
    largest value ``W_max`` over all clusterings (one MAP pass of the pair sums,
    independent of ``b`` and of the prior). So above a fitted ``b0``::

        log Z(b) <= log Z(b0) + (b - b0) W_max,

    and the evidence at ``b`` is at most its other terms (closed form) plus this.
    On a sparse trellis's family (``exact=False``) ``log Z`` is the same convex
    sum over fewer clusterings: its slope is bounded by the sum of the positive
    pair affinities instead (cheaper, looser).
    The grid of :func:`maximise_evidence` skips the points whose bound is below
    the second best value so far: they cannot be one of the two best points,
    and a large ``b`` is the costliest fit (log-space layers).
    """

    #: Relative slack for the rounding of the bound's terms and of the fitted values.
    RELATIVE_SLACK = 1e-9

    def __init__(self, similarity, offset, max_items, *, exact=True):
        self.shifted = shifted_affinities(similarity, offset)
        # the pair count and squared sum of the noise variance: the same at every b
        self.n_pairs, _, self.sum_sq = pair_moments(self.shifted)
        if exact:
            self.largest_pair_sum = exact_flat_map(subset_pair_sums(self.shifted),
                                                   max_items=max_items)[0]
        else:
            # Beyond the exact trellis (a sparse trellis's family): the sum of the positive
            # pair affinities bounds every clustering's pair sum, without a 2**N table.
            upper = self.shifted[np.triu_indices(self.shifted.shape[0], 1)]
            self.largest_pair_sum = float(upper[upper > 0].sum())

    def upper(self, b, alpha, b_below, log_z_below):
        """An upper bound of the log evidence at ``b >= b_below`` (``log_z_below``: the
        trellis's ``log Z`` at ``b_below``), raised by a slack for rounding."""
        model = CorrelationClusteringModel(beta=b / 2.0, alpha=alpha).fit(self.shifted)
        log_z = log_z_below + (b - b_below) * self.largest_pair_sum
        value = log_evidence(_LogPartition(log_z), model, self.shifted,
                             noise_variance(b, self.n_pairs, self.sum_sq))
        magnitude = abs(value) + abs(log_z_below) + abs(b * self.largest_pair_sum)
        return value + self.RELATIVE_SLACK * (1.0 + magnitude)

    @classmethod
    def below(cls, bound, value):
        """Whether an upper ``bound`` lies safely below a fitted ``value``."""
        return bound < value - cls.RELATIVE_SLACK * (1.0 + abs(value))


@dataclass
class _LogPartition:
    """A stand-in trellis for :func:`log_evidence`: only ``log Z``."""

    log_partition_function: float


@dataclass
class EvidenceFit:
    """What :func:`maximise_evidence` found: ``beta`` (= b / 2), the offset ``c``,
    the Ewens ``alpha`` (``None``: uniform prior), the noise variance, the log
    evidence there and the number of trellis fits."""

    beta: float
    offset: float
    alpha: object
    noise_variance: float
    log_evidence: float
    n_evaluations: int


def expected_n_clusters(trellis):
    """``E[K]``, the posterior mean number of clusters: the sum of the cluster marginals."""
    log_marginals = _cluster_table(trellis)[0]
    return float(np.exp(logsumexp(log_marginals)))


#: Bounds of ``log alpha`` in the search (alpha from 1e-8 to 1e8: beyond them the
#: evidence is flat to double precision).
LOG_ALPHA_BOUNDS = (np.log(1e-8), np.log(1e8))


def log_alpha_prior(alpha, shape, rate):
    """Log density of ``log alpha`` when ``alpha ~ Gamma(shape, rate)``:
    ``shape log alpha - rate alpha`` (up to a constant); its derivative in
    ``log alpha`` is ``shape - rate alpha``."""
    return float(shape * np.log(alpha) - rate * alpha)


def two_means_midpoint(values, n_iterations=50):
    """The midpoint of the two centres of a one-dimensional two-means split of ``values``
    (Lloyd's iterations from the split at the mean)."""
    values = np.asarray(values, dtype=np.float64)
    threshold = float(values.mean()) if values.size else 0.0
    for _ in range(n_iterations):
        low, high = values[values <= threshold], values[values > threshold]
        if not (low.size and high.size):
            break
        new = 0.5 * (low.mean() + high.mean())
        if new == threshold:
            break
        threshold = float(new)
    return threshold


def maximise_evidence(similarity, *, beta, offset, learn_beta, learn_offset, alpha=None,
                      learn_alpha=False, alpha_prior=None, family=None, max_items=22,
                      progress=SILENT):
    """Empirical Bayes: the ``beta``, offset and/or Ewens ``alpha`` maximising the evidence.

    The noise variance is profiled out in closed form; the remaining
    parameters (``log b``, ``log alpha`` and ``c``) are found by L-BFGS-B
    with the exact gradient, which needs one trellis fit per step: the
    pairwise marginals for ``b`` and ``c``, and for ``alpha``
    ``d log p(W) / d log alpha = E[K] - alpha (psi(alpha + N) - psi(alpha))``
    (the prior's cluster term ``log alpha`` makes the derivative of ``log Z``
    the posterior mean number of clusters ``E[K]``; the second term is the
    Ewens normaliser's). When ``beta`` is learned, the evidence is first
    evaluated on a grid of ``b`` (relative to ``1 / sd``, the inverse spread
    of the shifted affinities), then searched within a grid step of the two
    best points; the best end point wins (the evidence need not be concave in
    ``b``: ``b -> 0``, no structure, is often a local maximum). A learned
    offset is searched from the given one and, with ``beta`` learned, also
    from the midpoint of a two-means split of the pair affinities. The
    search runs in units of the affinities' spread (the offset as
    ``(c - offset) / sd``, the objective plus ``P log sd``), so that
    ``fit(k * s + t)`` finds the same point as ``fit(s)``: in raw units its
    stopping tests (an absolute gradient, a relative change of the value)
    stopped the search of affinities scaled by ``1e6`` at its start.

    Cost: the searches' fits need ``log Z`` and the pairwise marginals, never
    the MAP (the exact trellis runs without it); the grid needs ``log Z``
    alone, and its two best points' fits give the searches' first steps. On
    the exact trellis the grid skips the points (large ``b``, whose fits run
    in log space and cost several times more) where :class:`EvidenceBound`
    shows the evidence is below the second best value so far: they cannot be
    one of the two best, so the result is the same as with every point fitted.

    Parameters
    ----------
    similarity : ndarray of shape (N, N)
        The unshifted affinities ``s`` (the diagonal is ignored).
    beta, offset : float
        The fixed values (``beta`` is not used when learned; a learned offset
        starts there).
    learn_beta, learn_offset : bool
    alpha : float or None, default=None
        Ewens concentration (``None``: uniform prior over partitions); the
        starting value when learned.
    learn_alpha : bool, default=False
        Learn the Ewens concentration (``alpha`` must then be a float).
    alpha_prior : tuple (shape, rate), optional
        A Gamma hyperprior on the learned ``alpha``: the search maximises
        the evidence plus :func:`log_alpha_prior` (the posterior mode of
        ``log alpha``); ``log_evidence`` of the result stays the evidence.
    family : ClusterFamily, optional
        Fit on this family (sparse trellis) instead of the exact trellis.
    max_items : int, default=22
        The exact trellis's limit.
    progress : Progress, default=SILENT
        Reporter of a fit with ``verbose``: the trellis fits done, at most
        every 10 s.

    Returns
    -------
    EvidenceFit
    """
    if not (learn_beta or learn_offset or learn_alpha):
        raise ValueError("Nothing to learn: set learn_beta, learn_offset or learn_alpha.")
    if learn_alpha and alpha is None:
        raise ValueError("learn_alpha needs a starting Ewens concentration alpha > 0.")
    n_evaluations = 0
    n_items = similarity.shape[0]
    # A learned offset is searched in units of the affinities' spread about the given one,
    # and log p(W) in those units (a constant shift: the stopping test's relative change
    # of the value is then the same at any scale). A search of b alone is scale free
    # already (log b shifts, its gradient does not).
    unit, value_shift = 1.0, 0.0
    if learn_offset:
        n_pairs_all, _, sum_sq_all = pair_moments(shifted_affinities(similarity, offset))
        spread = np.sqrt(sum_sq_all / max(n_pairs_all, 1))
        if np.isfinite(spread) and spread > 0:
            unit, value_shift = spread, n_pairs_all * np.log(spread)

    def unpack(theta):
        k = 0
        if learn_beta:
            log_b, k = theta[0], 1
        else:
            log_b = np.log(max(2.0 * beta, 1e-300))
        concentration = float(np.exp(theta[k])) if learn_alpha else alpha
        c = offset + unit * theta[-1] if learn_offset else offset
        return float(np.exp(log_b)), concentration, float(c)

    def evaluate(theta, marginals):
        """``(value, state)``: the objective at ``theta`` and what its gradient needs."""
        nonlocal n_evaluations
        n_evaluations += 1
        b, concentration, c = unpack(theta)
        shifted = shifted_affinities(similarity, c)
        model = CorrelationClusteringModel(beta=b / 2.0, alpha=concentration).fit(shifted)
        # The search never reads the MAP: only log Z and the marginals.
        trellis = fit_flat_trellis(model, family, max_items=max_items, map_clustering=False,
                                   marginals=marginals)
        n_pairs, _, sum_sq = pair_moments(shifted)
        variance = noise_variance(b, n_pairs, sum_sq)
        value = log_evidence(trellis, model, shifted, variance)
        if learn_alpha and alpha_prior is not None:
            value += log_alpha_prior(concentration, *alpha_prior)
        progress.update(n_evaluations, None, "trellis fits")
        return value, (b, concentration, shifted, variance, trellis)

    # The fitted grid points a search starts from: its first evaluation reuses the fit;
    # and the results so far (a search may come back to a point, e.g. its start).
    starts, results = {}, {}

    def objective(theta):
        key = np.asarray(theta, dtype=np.float64).tobytes()
        if key in results:
            return results[key]
        known = starts.pop(key, None)
        value, (b, concentration, shifted, variance, trellis) = \
            known if known is not None else evaluate(theta, marginals=True)
        d_b, d_c = evidence_gradient(b, variance, shifted, trellis.pairwise_marginals())
        grad = [b * d_b] if learn_beta else []
        if learn_alpha:
            grad.append(log_alpha_gradient(concentration, n_items,
                                           expected_n_clusters(trellis))
                        + (0.0 if alpha_prior is None
                           else alpha_prior[0] - alpha_prior[1] * concentration))
        if learn_offset:
            grad.append(unit * d_c)
        results[key] = -(value + value_shift), -np.array(grad)
        return results[key]

    alpha_start = [np.log(alpha)] if learn_alpha else []
    rest_bounds = ([LOG_ALPHA_BOUNDS] if learn_alpha else []) + \
        ([(None, None)] if learn_offset else [])
    # A learned offset starts at the given one and, when beta is learned too, also at the
    # midpoint of a two-means split of the pair affinities (the model's c when the two
    # means separate): a poor offset can hide the structure from the whole grid of b.
    offsets = [offset]
    if learn_offset and learn_beta:
        offsets.append(two_means_midpoint(similarity[np.triu_indices(n_items, 1)]))
    searches = []
    for start in offsets:
        rest_start = alpha_start + ([(start - offset) / unit] if learn_offset else [])
        if not learn_beta:
            searches.append((np.asarray(rest_start, dtype=np.float64), rest_bounds))
            continue
        n_pairs, _, sum_sq = pair_moments(shifted_affinities(similarity, start))
        spread = np.sqrt(sum_sq / max(n_pairs, 1))
        log_scale = -np.log(spread) if spread > 1e-150 else 0.0
        # The evidence often has a "no structure" maximum at b -> 0 besides the structured
        # one: a coarse grid of b first, then a gradient search within a step of each of
        # the two best grid points (a free search can jump between the two basins).
        # The grid needs the values only; the fits of the two best points stay for the
        # first step of their searches.
        # A grid point whose evidence bound (exact trellis) is below the second best value
        # so far cannot be one of the two best: it is not fitted (its value is +inf here).
        grid = log_scale + np.asarray(LOG_B_GRID)
        values, fitted = [], {}
        bound = None
        below = None    # (b, log Z of the trellis) of the last fitted grid point
        for k, log_b in enumerate(grid):
            theta = np.r_[log_b, rest_start]
            if family is None and below is not None and len(fitted) == 2:
                if bound is None:
                    bound = EvidenceBound(similarity, start, max_items)
                b, concentration, c = unpack(theta)
                ceiling = bound.upper(b, concentration, *below)
                if learn_alpha and alpha_prior is not None:
                    ceiling += log_alpha_prior(concentration, *alpha_prior)
                if EvidenceBound.below(ceiling, -np.sort(values)[1]):
                    values.append(np.inf)
                    continue
            fitted[k] = evaluate(theta, marginals=False)
            values.append(-fitted[k][0])
            trellis = fitted[k][1][-1]
            below = (fitted[k][1][0], trellis.log_partition_function)
            best = np.argsort(values)[:2]
            fitted = {j: fitted[j] for j in fitted if j in best}
        # The ends open outwards: the maximum may lie beyond the grid (b -> 0 included).
        edges = np.r_[grid[0] - LOG_B_BEYOND, grid, grid[-1] + LOG_B_BEYOND]
        for k in np.argsort(values)[:2]:
            theta = np.r_[grid[k], rest_start]
            if k in fitted:
                starts[theta.tobytes()] = fitted[k]
            searches.append((theta, [(edges[k], edges[k + 2])] + rest_bounds))
        del fitted
    result = min((minimize(objective, theta, jac=True, method="L-BFGS-B", bounds=bounds)
                  for theta, bounds in searches), key=lambda found: found.fun)
    starts.clear()
    b, concentration, c = unpack(result.x)
    n_pairs, _, sum_sq = pair_moments(shifted_affinities(similarity, c))
    value = float(-result.fun) - value_shift
    if learn_alpha and alpha_prior is not None:
        value -= log_alpha_prior(concentration, *alpha_prior)
    return EvidenceFit(beta=b / 2.0, offset=c, alpha=concentration,
                       noise_variance=noise_variance(b, n_pairs, sum_sq),
                       log_evidence=value, n_evaluations=n_evaluations)


def _cluster_table(trellis):
    """``(log cluster marginals, sizes, sums)`` of a fitted flat trellis; ``sums(rows)``
    gives ``sum_{j in B} rows[:, j]`` for every cluster ``B``."""
    if isinstance(trellis, ExactFlatTrellis):
        n = trellis.n_items
        sizes = subset_sums(np.ones((n, 1)))[0]
        return (trellis.log_cluster_marginals(), sizes,
                lambda rows: subset_sums(np.ascontiguousarray(rows.T)))
    family = trellis.family
    with np.errstate(divide="ignore"):
        log_marginals = np.log(trellis.cluster_marginals())

    def sums(rows):
        cumulative = np.zeros((rows.shape[0], family.items.size + 1))
        np.cumsum(rows[:, family.items], axis=1, out=cumulative[:, 1:])
        return cumulative[:, family.stops] - cumulative[:, family.starts]
    return log_marginals, family.sizes.astype(np.float64), sums


def log_predictive(trellis, model, variance, new_shifted):
    """``log p(w'_x | W)`` of each new item (rows of ``new_shifted``, shape (n_new, N)).

    Exact on the exact trellis (``O(2**N)`` per new item); on a sparse
    trellis, the predictive density of the model restricted to the family
    (a new item joins one of its clusters or opens its own).
    """
    log_marginals, sizes, sums = _cluster_table(trellis)
    n_new, n = new_shifted.shape
    chunk = max(1, int(PREDICTIVE_CHUNK_BYTES // (8 * max(1, log_marginals.size))))
    check_memory(8 * min(chunk, n_new) * log_marginals.size,
                 "the new items' sums over the trellis clusters")
    b = 2.0 * float(model.beta)
    out = np.empty(n_new)
    for start in range(0, n_new, chunk):
        rows = new_shifted[start:start + chunk]
        out[start:start + chunk] = new_item_log_predictive(
            log_marginals, sums(rows), sizes, n, b, variance, rows.sum(axis=1),
            (rows * rows).sum(axis=1), model.alpha)
    return out


def evidence_family(plan, similarity, *, beta, offset, alpha=None, features=None,
                    seed_linkages=("single", "average", "complete")):
    """The family empirical Bayes runs on: ``None`` (exact trellis) or the sparse one's.

    The sparse trellis's seed search depends on the parameters, so the family
    is chosen once, at the starting values, and kept fixed while they are
    learned (the evidence is then a smooth function of them).
    """
    if plan.exact:
        return None
    shifted = shifted_affinities(similarity, offset)
    model = CorrelationClusteringModel(beta=beta, alpha=alpha).fit(shifted)
    return _sparse_flat_trellis(model, shifted, features, seed_linkages)[0].family


__all__ = ["EvidenceBound", "EvidenceFit", "evidence_family", "expected_n_clusters", "fit_flat_trellis",
           "log_alpha_prior", "log_evidence", "log_predictive", "maximise_evidence", "shifted_affinities"]
