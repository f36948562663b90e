"""Exact Bayes clustering under Binder's loss (from exact pairwise marginals) and
under VI (from exact cluster marginals).

The posterior expected Binder loss (costs ``a`` for splitting a pair that
belongs together, ``b`` for joining one that does not) of a clustering ``c`` is::

    E L(c) = a sum_{i<j} P_ij + sum_{B in c} sum_{i<j in B} (b - (a + b) P_ij)

a constant plus a sum of cluster potentials. Minimising it is a correlation
clustering problem (NP-hard in general), but for the sizes the exact engines
handle it is solved exactly by the max-product pass of the exact flat
trellis over the cluster log-potentials ``e(B) = sum_{i<j in B} ((a + b) P_ij - b)``.
The expected variation of information (Wade & Ghahramani 2018, per item)
is also a sum over the estimate's clusters ``B``, given the cluster marginals
``P(S)`` of the posterior::

    n E VI(c) = sum_{B in c} (|B| log |B| - 2 sum_S P(S) g(|B n S|)) + const,  g(x) = x log x

(item ``i`` in ``B`` adds ``log |B| - 2 E log |B n Z_i|``, and ``Z_i = S``
with probability ``P(S)`` for ``i`` in ``S``). The inner sums over ``S`` are
an intersection-size transform of ``P`` in ``O(n^2 2^n)``
(:func:`intersection_xlogx_sums`); minimising is again a flat-trellis MAP.
It lives with the engines because ``summaries`` may depend only on ``_core``.
"""

import numpy as np
from numba import njit

from ..._core.subsets import membership_table, subset_pair_sums
from ...summaries.metrics import check_costs
from ...summaries.point_estimates import (CLUSTER_SUM_LOSSES, PAIRWISE_LOSSES, Target,
                                          check_pairwise, exhaustive_is_cheap, loss_name,
                                          point_estimate)
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


@njit(cache=True)
def intersection_xlogx_sums(probabilities, n):
    """``out[B] = sum_S probabilities[S] g(|B n S|)``, ``g(x) = x log x``, for every bitmask ``B``.

    One pass per item turns the distribution over ``S`` into one over
    ``(B, |B n S|)``: ``counts[M, m]`` is the mass of the ``S`` that agree
    with ``M`` on the items not yet processed and meet ``M`` in ``m`` of the
    processed ones. ``O(n^2 2^n)`` time, ``8 (n + 1) 2^n`` bytes.
    """
    size = 1 << n
    counts = np.zeros((size, n + 1))
    for mask in range(size):
        counts[mask, 0] = probabilities[mask]
    for j in range(n):
        bit = 1 << j
        for low in range(size):
            if low & bit:
                continue
            high = low | bit
            for m in range(j + 1, 0, -1):   # S with item j: one more shared item in B
                out_of_b = counts[low, m] + counts[high, m]
                counts[high, m] = counts[low, m] + counts[high, m - 1]
                counts[low, m] = out_of_b
            out_of_b = counts[low, 0] + counts[high, 0]
            counts[high, 0] = counts[low, 0]
            counts[low, 0] = out_of_b
    out = np.zeros(size)
    for mask in range(size):
        total = 0.0
        for m in range(2, n + 1):
            total += counts[mask, m] * m * np.log(m)
        out[mask] = total
    return out


def vi_point_estimate(cluster_marginals, max_items=MAX_CLUSTER_MARGINAL_ITEMS):
    """The clustering of smallest posterior expected VI, exactly, from exact cluster marginals.

    Parameters
    ----------
    cluster_marginals : ndarray of shape (2**n,)
        ``P(B is a cluster)`` of every bitmask ``B`` (bit ``i``: item ``i``),
        e.g. an exact ``DPMixture``'s; entries of the empty set and of
        singletons are not read.
    max_items : int, default=MAX_CLUSTER_MARGINAL_ITEMS
        Refuse above this ``n`` (the transform holds ``8 (n + 1) 2**n`` bytes,
        the trellis pass takes ``3**n`` steps).

    Returns
    -------
    labels : ndarray of shape (n,)
        Labels in order of first appearance; among equally good clusterings,
        the one the trellis' MAP pass returns.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.exact.binder import vi_point_estimate
    >>> P = np.zeros(8)
    >>> P[0b011], P[0b100], P[0b111] = 0.7, 0.7, 0.3    # {0, 1}{2} or {0, 1, 2}
    >>> vi_point_estimate(P)
    array([0, 0, 1])
    """
    probabilities = np.asarray(cluster_marginals, dtype=np.float64)
    size = probabilities.shape[0] if probabilities.ndim == 1 else 0
    if size < 2 or size & (size - 1):
        raise ValueError("Cluster marginals are a vector of 2**n probabilities (one per "
                         f"bitmask of n items); got shape {probabilities.shape}.")
    n = size.bit_length() - 1
    if n > max_items:
        raise ValueError(f"The exact VI estimate transforms all subsets of the {n} elements; "
                         f"refused above max_items={max_items}. Use "
                         "sklearn_trellis.summaries.point_estimate (a local search) instead.")
    if n == 1:
        return np.zeros(1, np.int64)
    probabilities = np.clip(probabilities, 0.0, 1.0)
    sizes = membership_table(n).sum(axis=1, dtype=np.float64)
    own = sizes * np.log(np.maximum(sizes, 1.0))
    # the MAP maximises minus the estimate's part of n E VI
    log_potentials = 2.0 * intersection_xlogx_sums(probabilities, n) - own
    log_potentials[0] = 0.0
    return exact_flat_map(log_potentials, max_items=max_items)[1]


def bayes_estimate(loss, *, pairwise=None, samples=None, exact=False, cluster_marginals=None,
                   random_state=None, note_for=None):
    """The clustering of smallest posterior expected ``loss``, from what an estimator has.

    The strategy both exact estimators share: Binder's loss from *exact*
    pairwise marginals is minimised exactly (:func:`binder_point_estimate`),
    and so is VI from exact cluster marginals (:func:`vi_point_estimate`, at
    most ``MAX_CLUSTER_MARGINAL_ITEMS`` items); the other losses that depend
    on the pairwise marginals alone (``'omari_approx'``, ``'vi_lb'``, and
    Binder without exact marginals) are searched on them (exactly minimised
    when the search's exhaustive check runs); the rest (omARI, NVI, NID: not
    sums over clusters, and VI without cluster marginals) are searched on the
    samples (:func:`sklearn_trellis.summaries.point_estimate`).

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
    note_for : str, optional
        The fitted attribute the labels become (e.g. ``'labels_'``): also return
        ``None`` when they minimise the exact expected loss (given exact
        marginals), else the ``approximation_`` text saying what they minimise.

    Returns
    -------
    labels : ndarray of shape (n,)
    note : str or None
        Only when ``note_for`` is given.
    """
    given, loss = loss, loss_name(loss)
    labels, note = _bayes_estimate(loss, pairwise, samples, exact, cluster_marginals,
                                   random_state)
    if note_for is None:
        return labels
    return labels, None if note is None else f"{note_for} (point_estimate={given!r}): {note}"


def _bayes_estimate(loss, pairwise, samples, exact, cluster_marginals, random_state):
    """:func:`bayes_estimate`'s labels and note."""
    if loss == "binder" and exact and pairwise is not None \
            and pairwise.shape[0] <= DEFAULT_MAX_EXACT_FLAT:
        return binder_point_estimate(pairwise), None
    if loss == "vi" and cluster_marginals is not None \
            and cluster_marginals.n <= MAX_CLUSTER_MARGINAL_ITEMS:
        return vi_point_estimate(cluster_marginals.probabilities), None
    if loss in CLUSTER_SUM_LOSSES and cluster_marginals is not None \
            and cluster_marginals.n <= MAX_CLUSTER_MARGINAL_ITEMS:
        labels = point_estimate(cluster_marginals, loss=loss, random_state=CLUSTER_MARGINAL_SEED)
        return labels, None if _exhaustive(cluster_marginals, loss) else _local_note(loss)
    if loss in PAIRWISE_LOSSES and pairwise is not None:
        labels = point_estimate(pairwise, loss=loss, random_state=random_state)
        exhaustive = exact and _exhaustive(pairwise, loss)
        return labels, None if exhaustive else _local_note(loss, exact)
    if samples is None:
        raise ValueError(f"The {loss!r} estimate needs sampled partitions.")
    labels = point_estimate(samples, loss=loss, random_state=random_state)
    return labels, (f"searched on {samples.shape[0]} posterior draws (their mean {loss!r} "
                    "loss estimates the expected one; it depends on random_state)")


def _exhaustive(target, loss):
    """Whether :func:`point_estimate` ends its search on ``target`` by checking every partition."""
    target = Target(target)
    return exhaustive_is_cheap(target, target.kind(loss))


def _local_note(loss, exact=True):
    value = "exact expected" if exact else "estimated expected"
    return (f"a local minimum of the {value} {loss!r} loss (no single-item move lowers it; "
            "not checked against every partition at this size)")


__all__ = ["binder_point_estimate", "bayes_estimate", "intersection_xlogx_sums",
           "vi_point_estimate"]
