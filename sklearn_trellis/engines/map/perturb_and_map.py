"""Perturb-and-MAP: approximate co-clustering marginals of a flat pairwise model.

For correlation clustering, ``log phi(C) = const + sum_{i<j same cluster} W_ij``
with the pairwise gains ``W = 2 beta w``. Perturb-and-MAP (Papandreou & Yuille
2011; for clusterings Kappes et al. 2016, used as the baseline of Greenberg et
al. 2018, Section 5.3.1) draws a clustering by perturbing every pair's gain
with independent noise and taking the MAP clustering of the perturbed model::

    W~_ij = W_ij + noise_scale * G_ij,   G_ij i.i.d. for i < j,
    sample = argmax_C sum_{i<j same cluster in C} W~_ij,

and estimates ``P(i and j in the same cluster)`` by the fraction of samples in
which they share a cluster. ``G`` is standard Gumbel (``noise='gumbel'``, as in
the paper's experiment; its mean, Euler's 0.577, favours joining pairs) or
standard logistic (``noise='logistic'``: independent Gumbels on the two states
"together" and "apart" of each pair, whose difference is logistic, mean 0).
The noise is in the units of ``W``, natural-log units of the potential. In
terms of pairwise *energies*: ``log phi = beta (sum_same w - sum_apart w)``
counts ``beta w_ij`` once for or against each pair, so a draw ``g`` added to the
energy ``beta w_ij`` moves the gain ``W_ij`` by ``2 g``: Gumbel(0, 1) noise on
the energies is ``noise_scale=2``.

This is a baseline, not an exact method: perturbing the ``N(N-1)/2`` pairs,
rather than each of the Bell(N) clusterings, does not sample the Gibbs
distribution, and the estimates can be biased (the paper finds them too high).
"""

import numbers
from dataclasses import dataclass

import numpy as np

from ..._core.progress import Progress
from ..._core.validation import check_option, check_random_state, check_scalar_param
from ..exact.flat import DEFAULT_MAX_EXACT_FLAT, exact_flat_map
from ..._core.labels import first_appearance_labels
from .milp import _check_weights, correlation_clustering_map_milp

#: ``map_solver='auto'`` uses the exact trellis up to this N (0.1 s per MAP at 18).
AUTO_TRELLIS_MAX_ITEMS = 16


class TrellisMapSolver:
    """Exact MAP of pairwise gains by the flat trellis (``O(3^N)``, N up to about 20).

    Parameters
    ----------
    max_items : int, default=DEFAULT_MAX_EXACT_FLAT
        Refuse larger N.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.map.perturb_and_map import TrellisMapSolver
    >>> TrellisMapSolver()(np.array([[0., 1., -1.], [1., 0., -1.], [-1., -1., 0.]]))
    array([0, 0, 1])
    """

    name = "trellis"

    def __init__(self, max_items=DEFAULT_MAX_EXACT_FLAT):
        self.max_items = max_items

    def __call__(self, weights):
        from ...models.correlation import CorrelationClusteringModel

        n = weights.shape[0]
        if n > self.max_items:
            raise ValueError(f"The trellis MAP solver accepts N <= {self.max_items}, got N={n}.")
        # e(B) = 2 beta sum_{i<j in B} W_ij: beta = 1/2 makes it the sum of the gains.
        table = CorrelationClusteringModel(beta=0.5).fit(weights).log_potential_table()
        return exact_flat_map(table, max_items=self.max_items)[1]


class MilpMapSolver:
    """MAP of pairwise gains by :func:`~sklearn_trellis.engines.map.milp.correlation_clustering_map_milp`.

    Parameters
    ----------
    time_limit : float, default=10.0
        Seconds per MAP problem; an uncertified result is counted in
        ``n_uncertified`` and its best clustering used.
    mip_rel_gap : float, default=0.0
    **kwargs
        Further arguments of ``correlation_clustering_map_milp``.

    Attributes
    ----------
    n_calls : int
    n_uncertified : int
        Calls whose clustering was not proven optimal.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.map.perturb_and_map import MilpMapSolver
    >>> solver = MilpMapSolver()
    >>> solver(np.array([[0., 1., -1.], [1., 0., -1.], [-1., -1., 0.]]))
    array([0, 0, 1])
    >>> solver.n_uncertified
    0
    """

    name = "milp"

    def __init__(self, time_limit=10.0, mip_rel_gap=0.0, **kwargs):
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.kwargs = kwargs
        self.n_calls = 0
        self.n_uncertified = 0

    def __call__(self, weights):
        result = correlation_clustering_map_milp(weights, time_limit=self.time_limit,
                                                 mip_rel_gap=self.mip_rel_gap, **self.kwargs)
        self.n_calls += 1
        self.n_uncertified += not result.certified
        return result.labels


@dataclass
class PerturbAndMapResult:
    """Outcome of :func:`perturb_and_map`.

    Attributes
    ----------
    pairwise_marginals : ndarray of shape (N, N)
        Fraction of samples in which ``i`` and ``j`` share a cluster (ones on
        the diagonal): the Perturb-and-MAP estimate of the co-clustering marginals.
    samples : ndarray of shape (n_samples, N)
        The MAP clustering of each perturbed model, labels in order of first appearance.
    solver : str
        ``'trellis'``, ``'milp'`` or the ``repr`` of a user callable.
    n_uncertified : int or None
        With the MILP solver, samples whose MAP was not proven optimal (time
        limit); ``None`` for other solvers.
    """

    pairwise_marginals: np.ndarray
    samples: np.ndarray
    solver: str
    n_uncertified: object = None


def _resolve_solver(map_solver, n):
    if callable(map_solver):
        return map_solver
    check_option(map_solver, "map_solver", {"auto", "trellis", "milp"})
    if map_solver == "trellis" or (map_solver == "auto" and n <= AUTO_TRELLIS_MAX_ITEMS):
        return TrellisMapSolver()
    return MilpMapSolver()


def perturb_and_map(weights, *, n_samples=100, noise_scale=1.0, noise="gumbel",
                    map_solver="auto", random_state=None, verbose=0, progress=None):
    """Approximate pairwise co-clustering marginals by Perturb-and-MAP.

    Each sample adds ``noise_scale * G_ij`` (``G`` i.i.d. standard Gumbel or
    logistic, one draw per pair ``i < j``, symmetric) to the pairwise gains
    and takes the MAP clustering of the perturbed gains (see the module
    docstring). A baseline for the exact and sparse methods, not an exact
    estimate.

    Parameters
    ----------
    weights : array-like of shape (N, N)
        Symmetric pairwise gains ``W_ij`` in log-potential units: the MAP
        maximises ``sum_{i<j same cluster} W_ij``. For correlation clustering
        with affinities ``w`` and inverse temperature ``beta``, ``W = 2 beta w``.
    n_samples : int, default=100
        Number of perturbed MAP problems.
    noise_scale : float, default=1.0
        Scale of the noise in the units of ``W``; ``0`` makes every sample the MAP.
    noise : {'gumbel', 'logistic'}, default='gumbel'
        Distribution of ``G``: standard Gumbel (one per pair, as in
        Greenberg et al. 2018) or standard logistic (the difference of
        independent Gumbels on a pair's two states; zero mean).
    map_solver : {'auto', 'trellis', 'milp'} or callable, default='auto'
        ``'trellis'``: exact MAP by the flat trellis (``O(3^N)``, N up to
        about 20); ``'milp'``: :class:`MilpMapSolver` (certified MAP by integer
        programming, 10 s per sample by default; heavily perturbed gains are
        hard instances); ``'auto'``: the trellis up to N = 16, else the MILP.
        A callable ``f(perturbed_weights) -> labels`` (e.g. a configured
        ``MilpMapSolver(time_limit=...)``) is used as is.
    random_state : int, RandomState instance or None, default=None
        Seed of the noise.
    verbose : int, default=0
        When positive, print the samples done at most every 10 s
        (:class:`~sklearn_trellis._core.progress.Progress`).
    progress : Progress, optional
        Reporter to use instead of one built from ``verbose`` (an estimator
        passes its own, so that all the lines of its fit share one prefix).

    Returns
    -------
    result : PerturbAndMapResult
        ``pairwise_marginals`` (N, N), ``samples`` (n_samples, N), ``solver``
        and ``n_uncertified``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.map.perturb_and_map import perturb_and_map
    >>> W = np.array([[0., 4., -4.], [4., 0., -4.], [-4., -4., 0.]])
    >>> result = perturb_and_map(W, n_samples=50, random_state=0)
    >>> result.solver, result.samples.shape
    ('trellis', (50, 3))
    >>> bool(result.pairwise_marginals[0, 1] > result.pairwise_marginals[0, 2])
    True
    """
    from ...summaries import pairwise_cooccurrence

    check_scalar_param(n_samples, "n_samples", kind=numbers.Integral, low=1)
    check_scalar_param(noise_scale, "noise_scale", low=0.0)
    check_option(noise, "noise", {"gumbel", "logistic"})
    w = _check_weights(weights)
    n = w.shape[0]
    solver = _resolve_solver(map_solver, n)
    name = str(getattr(solver, "name", repr(solver)))
    uncertified_before = getattr(solver, "n_uncertified", None)
    rng = check_random_state(random_state)
    iu, ju = np.triu_indices(n, 1)
    samples = np.empty((n_samples, n), np.int64)
    perturbed = np.empty_like(w)
    if progress is None:
        progress = Progress("perturb_and_map", verbose)
    for t in range(n_samples):
        g = rng.gumbel(size=iu.size)
        if noise == "logistic":
            g -= rng.gumbel(size=iu.size)
        perturbed[...] = w
        perturbed[iu, ju] += noise_scale * g
        perturbed[ju, iu] = perturbed[iu, ju]
        labels = np.asarray(solver(perturbed))
        if labels.shape != (n,):
            raise ValueError(f"map_solver returned labels of shape {labels.shape}, "
                             f"expected ({n},).")
        samples[t] = first_appearance_labels(labels)
        progress.update(t + 1, n_samples, "perturbed MAPs")
    n_uncertified = None
    if uncertified_before is not None:
        n_uncertified = int(solver.n_uncertified - uncertified_before)
    return PerturbAndMapResult(pairwise_cooccurrence(samples), samples, name, n_uncertified)


__all__ = ["perturb_and_map", "PerturbAndMapResult", "TrellisMapSolver", "MilpMapSolver"]
