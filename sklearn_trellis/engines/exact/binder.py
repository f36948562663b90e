"""Exact Bayes clustering under Binder's loss, from exact pairwise marginals.

The posterior expected Binder loss (costs ``a`` for splitting a pair that
belongs together, ``b`` for joining one that does not) of a clustering ``c`` is::

    E L(c) = a sum_{i<j} P_ij + sum_{B in c} sum_{i<j in B} (b - (a + b) P_ij)

a constant plus a sum of cluster potentials. Minimising it is a correlation
clustering problem (NP-hard in general), but for the sizes the exact engines
handle it is solved exactly by the max-product pass of the exact flat
trellis over the cluster log-potentials ``e(B) = sum_{i<j in B} ((a + b) P_ij - b)``.
It lives with the engines because ``summaries`` may depend only on ``_core``.
"""

import numpy as np

from ..._core.subsets import subset_pair_sums
from ...summaries.metrics import check_costs
from ...summaries.point_estimates import (CLUSTER_SUM_LOSSES, PAIRWISE_LOSSES, check_pairwise,
                                          loss_name, point_estimate)
from .flat import DEFAULT_MAX_EXACT_FLAT, exact_flat_map

#: Up to this many items, VI is searched on the exact cluster marginals (their ``2**n``
#: pseudo-samples, :class:`~sklearn_trellis.summaries.point_estimates.ClusterMarginals`):
#: the search holds about ``4 n (n - 1) 2**n`` bytes (2.2 MB at 12 items, 63 MB at 16)
#: and each single-item move reads ``2**n`` entries per cluster (0.27 s of CPU for the
#: whole search at 12 items, 0.46 s at 14). Above it, on the samples.
MAX_CLUSTER_MARGINAL_ITEMS = 16

#: The seed of the search on exact cluster marginals: the estimate is then a function of
#: the posterior alone (the same whatever the estimator's ``random_state``).
CLUSTER_MARGINAL_SEED = 0


def binder_point_estimate(pairwise, *, a=1.0, b=1.0, max_items=DEFAULT_MAX_EXACT_FLAT,
                          return_loss=False):
    """The clustering of smallest posterior expected Binder loss, exactly.

    Parameters
    ----------
    pairwise : ndarray of shape (n, n)
        Pairwise co-clustering probabilities ``P(i, j together)``, e.g. the
        exact ``pairwise_marginals_`` of ``ExactCorrelationClustering`` or of an
        exact ``DPMixture`` (any symmetric matrix in [0, 1]).
    a : float, default=1.0
        Cost of splitting a pair that belongs together.
    b : float, default=1.0
        Cost of joining a pair that belongs apart.
    max_items : int, default=DEFAULT_MAX_EXACT_FLAT
        Refuse above this ``n`` (time and memory grow as ``3**n`` and ``2**n``).
    return_loss : bool, default=False
        Also return the minimum expected loss (unnormalised, unordered pairs;
        as :func:`sklearn_trellis.summaries.expected_loss`).

    Returns
    -------
    labels : ndarray of shape (n,)
        Labels in order of first appearance; among equally good clusterings,
        the one the trellis' MAP pass returns.
    expected_loss : float
        Only when ``return_loss`` is true.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.exact.binder import binder_point_estimate
    >>> P = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.3], [0.1, 0.3, 1.0]])
    >>> binder_point_estimate(P)
    array([0, 0, 1])
    >>> binder_point_estimate(P, a=1.0, b=0.2)  # joining is cheap: one cluster
    array([0, 0, 0])
    """
    check_costs(a, b)
    pairwise = check_pairwise(pairwise)
    n = pairwise.shape[0]
    if n > max_items:
        raise ValueError(f"The exact Binder estimate enumerates all subsets of the {n} "
                         f"elements; refused above max_items={max_items}. Use "
                         "sklearn_trellis.summaries.point_estimate (a local search) instead.")
    if n == 1:
        labels = np.zeros(1, np.int64)
        return (labels, 0.0) if return_loss else labels
    weights = (a + b) * pairwise - b
    np.fill_diagonal(weights, 0.0)
    table = subset_pair_sums(weights)
    gain, labels = exact_flat_map(table, max_items=max_items)
    if not return_loss:
        return labels
    loss = a * np.triu(pairwise, 1).sum() - gain
    return labels, float(max(loss, 0.0))


def bayes_estimate(loss, *, pairwise=None, samples=None, exact=False, cluster_marginals=None,
                   random_state=None):
    """The clustering of smallest posterior expected ``loss``, from what an estimator has.

    The strategy both exact estimators share: Binder's loss from *exact*
    pairwise marginals is minimised exactly (:func:`binder_point_estimate`);
    VI is searched on its exact expected value from exact cluster marginals
    when given (at most ``MAX_CLUSTER_MARGINAL_ITEMS`` items; the search's
    seed is ``CLUSTER_MARGINAL_SEED``, not ``random_state``); the other losses
    that depend on the pairwise marginals alone (``'omari_approx'``,
    ``'vi_lb'``, and Binder without exact marginals) are searched on them; the
    rest (omARI, NVI, NID: not sums over clusters, and VI without cluster
    marginals) are searched on the samples
    (:func:`sklearn_trellis.summaries.point_estimate`).

    Parameters
    ----------
    loss : str
        A loss of :data:`sklearn_trellis.summaries.point_estimates.LOSSES`.
    pairwise : ndarray of shape (n, n), optional
        Pairwise co-clustering probabilities.
    samples : ndarray of shape (T, n), optional
        Sampled partitions.
    exact : bool, default=False
        Whether ``pairwise`` are exact marginals (then Binder is solved exactly
        when ``n <= DEFAULT_MAX_EXACT_FLAT``).
    cluster_marginals : ClusterMarginals, optional
        Exact ``P(B is a cluster)`` of every subset (and the search's candidates).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    labels : ndarray of shape (n,)
    """
    loss = loss_name(loss)
    if loss == "binder" and exact and pairwise is not None \
            and pairwise.shape[0] <= DEFAULT_MAX_EXACT_FLAT:
        return binder_point_estimate(pairwise)
    if loss in CLUSTER_SUM_LOSSES and cluster_marginals is not None \
            and cluster_marginals.n <= MAX_CLUSTER_MARGINAL_ITEMS:
        return point_estimate(cluster_marginals, loss=loss, random_state=CLUSTER_MARGINAL_SEED)
    if loss in PAIRWISE_LOSSES and pairwise is not None:
        return point_estimate(pairwise, loss=loss, random_state=random_state)
    if samples is None:
        raise ValueError(f"The {loss!r} estimate needs sampled partitions.")
    return point_estimate(samples, loss=loss, random_state=random_state)


__all__ = ["binder_point_estimate", "bayes_estimate"]
