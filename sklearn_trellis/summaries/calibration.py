"""Calibration of pairwise co-membership probabilities against known labels.

A clustering's probabilities do not name classes (cluster 0 of one fit is
any class), but the probability that two items share a cluster does not
depend on the names: every function here scores *pairs*. The target of a
pair is whether its two items have the same label; its prediction is the
co-membership probability, from the pairwise marginals of a fitted
distribution (``pairwise_marginals_``) or from ``predict_proba``
(:func:`sklearn_trellis.metrics.pairwise_from_proba`).

Two layouts of pairs:

- ``y_reference=None``: ``pairwise_probabilities`` is the square (n, n)
  matrix over the items of ``y_true``; the pairs ``i < j`` are scored (the
  diagonal and the lower triangle are ignored);
- ``y_reference`` given: ``pairwise_probabilities`` has shape (n, m), the
  co-membership of each item of ``y_true`` with each reference item (for
  instance new items with the fitted ones); all ``n * m`` pairs are scored.
"""

import numbers

import numpy as np
from sklearn.metrics import brier_score_loss, log_loss

from .._core.budget import check_memory


def _as_labels(y, name):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of labels, got shape {y.shape}.")
    return y


def pair_targets(y_true, pairwise_probabilities, *, y_reference=None):
    """The scored pairs: ``(targets, probabilities)``, two 1-d arrays.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Labels of the items (any hashable values).
    pairwise_probabilities : array-like of shape (n, n) or (n, m)
        Co-membership probabilities (module docstring).
    y_reference : array-like of shape (m,), optional
        Labels of the reference items (columns).

    Returns
    -------
    targets : ndarray of float, shape (n_pairs,)
        1.0 where the two items have the same label.
    probabilities : ndarray of float, shape (n_pairs,)

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.1], [0.2, 0.1, 1.0]])
    >>> t, p = pair_targets([0, 0, 1], P)
    >>> t.tolist(), p.tolist()
    ([1.0, 0.0, 0.0], [0.9, 0.2, 0.1])
    """
    y_true = _as_labels(y_true, "y_true")
    probabilities = np.asarray(pairwise_probabilities, dtype=np.float64)
    if y_reference is None:
        n = y_true.size
        if probabilities.shape != (n, n):
            raise ValueError(f"pairwise_probabilities must have shape ({n}, {n}) for {n} "
                             f"labels, got {probabilities.shape}; pass y_reference for "
                             "items against reference items.")
        if n < 2:
            raise ValueError("At least two items are needed to form a pair.")
        rows, cols = np.triu_indices(n, 1)
        targets = y_true[rows] == y_true[cols]
        values = probabilities[rows, cols]
    else:
        y_reference = _as_labels(y_reference, "y_reference")
        expected = (y_true.size, y_reference.size)
        if probabilities.shape != expected:
            raise ValueError(f"pairwise_probabilities must have shape {expected} (items of "
                             f"y_true by items of y_reference), got {probabilities.shape}.")
        if not probabilities.size:
            raise ValueError("There is no pair to score.")
        targets = (y_true[:, None] == y_reference[None, :]).ravel()
        values = probabilities.ravel()
    if not np.all(np.isfinite(values)) or values.min() < 0.0 or values.max() > 1.0:
        raise ValueError("pairwise_probabilities must be finite probabilities in [0, 1].")
    return targets.astype(np.float64), values


#: The parameters every pairwise score shares (filled into the docstrings below).
PAIR_PARAMETERS = """y_true : array-like of shape (n,)
        Labels of the items.
    pairwise_probabilities : array-like of shape (n, n) or (n, m)
        Co-membership probabilities (module docstring).
    y_reference : array-like of shape (m,), optional
        Labels of the reference items (columns)."""


def _shares_pair_parameters(function):
    """Fill ``{pair_parameters}`` in ``function``'s docstring."""
    function.__doc__ = function.__doc__.replace("{pair_parameters}", PAIR_PARAMETERS)
    return function


@_shares_pair_parameters
def pairwise_log_loss(y_true, pairwise_probabilities, *, y_reference=None):
    """Mean log loss of co-membership probabilities over pairs (lower is better).

    :func:`sklearn.metrics.log_loss` of the pairs (module docstring): the
    mean of ``-(t log p + (1 - t) log(1 - p))``, ``t = 1`` when the pair's
    labels agree, ``p`` clipped away from 0 and 1 as scikit-learn does.

    Parameters
    ----------
    {pair_parameters}

    Returns
    -------
    loss : float

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.1], [0.2, 0.1, 1.0]])
    >>> round(pairwise_log_loss([0, 0, 1], P), 6)   # -(log .9 + log .8 + log .9) / 3
    0.144622
    """
    targets, p = pair_targets(y_true, pairwise_probabilities, y_reference=y_reference)
    return float(log_loss(targets, p, labels=[0.0, 1.0]))


@_shares_pair_parameters
def pairwise_brier_score(y_true, pairwise_probabilities, *, y_reference=None):
    """Mean squared error of co-membership probabilities over pairs (lower is better).

    :func:`sklearn.metrics.brier_score_loss` of the pairs (module docstring).

    Parameters
    ----------
    {pair_parameters}

    Returns
    -------
    loss : float

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.1], [0.2, 0.1, 1.0]])
    >>> round(pairwise_brier_score([0, 0, 1], P), 6)   # (.01 + .04 + .01) / 3
    0.02
    """
    targets, p = pair_targets(y_true, pairwise_probabilities, y_reference=y_reference)
    return float(brier_score_loss(targets, p, labels=[0.0, 1.0]))


@_shares_pair_parameters
def pairwise_calibration_curve(y_true, pairwise_probabilities, *, y_reference=None,
                               n_bins=10, strategy="uniform"):
    """Reliability curve of co-membership probabilities: observed against predicted.

    The pairs are binned by predicted probability; for each non-empty bin,
    the fraction of pairs whose labels agree and the mean prediction (as
    :func:`sklearn.calibration.calibration_curve`, plus the counts).

    Parameters
    ----------
    {pair_parameters}
    n_bins : int, default=10
    strategy : {'uniform', 'quantile'}, default='uniform'
        Bins of equal width on [0, 1], or with equal numbers of pairs.

    Returns
    -------
    prob_true : ndarray of shape (n_nonempty_bins,)
        Fraction of same-label pairs in each bin.
    prob_pred : ndarray of shape (n_nonempty_bins,)
        Mean predicted probability in each bin.
    counts : ndarray of shape (n_nonempty_bins,)
        Pairs in each bin.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.1], [0.2, 0.1, 1.0]])
    >>> prob_true, prob_pred, counts = pairwise_calibration_curve([0, 0, 1], P, n_bins=2)
    >>> prob_true.tolist(), np.round(prob_pred, 2).tolist(), counts.tolist()
    ([0.0, 1.0], [0.15, 0.9], [2, 1])
    """
    targets, p = pair_targets(y_true, pairwise_probabilities, y_reference=y_reference)
    if (isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Real)
            or not float(n_bins).is_integer() or n_bins < 1):
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}.")
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    elif strategy == "quantile":
        edges = np.quantile(p, np.linspace(0.0, 1.0, int(n_bins) + 1))
    else:
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}.")
    # Bin i holds edges[i] < p <= edges[i + 1], the first one closed (as scikit-learn's).
    bins = np.searchsorted(edges[1:-1], p, side="left")
    counts = np.bincount(bins, minlength=int(n_bins))
    observed = np.bincount(bins, weights=targets, minlength=int(n_bins))
    predicted = np.bincount(bins, weights=p, minlength=int(n_bins))
    nonempty = counts > 0
    return (observed[nonempty] / counts[nonempty], predicted[nonempty] / counts[nonempty],
            counts[nonempty])


@_shares_pair_parameters
def expected_calibration_error(y_true, pairwise_probabilities, *, y_reference=None,
                               n_bins=10):
    """Expected calibration error (ECE) of co-membership probabilities over pairs.

    ``sum_b (n_b / n) |observed_b - predicted_b|`` over ``n_bins`` bins of
    equal width (:func:`pairwise_calibration_curve`): 0 for perfectly
    calibrated probabilities.

    Parameters
    ----------
    {pair_parameters}
    n_bins : int, default=10

    Returns
    -------
    ece : float

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.1], [0.2, 0.1, 1.0]])
    >>> round(expected_calibration_error([0, 0, 1], P, n_bins=2), 6)   # (2 * .15 + .1) / 3
    0.133333
    """
    prob_true, prob_pred, counts = pairwise_calibration_curve(
        y_true, pairwise_probabilities, y_reference=y_reference, n_bins=n_bins)
    return float(np.sum(counts * np.abs(prob_true - prob_pred)) / counts.sum())


#: How far from 1 a row of assignment probabilities may sum (float32 rounding).
PROBA_SUM_TOLERANCE = 1e-6


def _check_rows_sum_to_one(proba):
    """Refuse rows that are not distributions: a column left out (clipped, or
    sums of products that are no co-membership probabilities) would pass silently."""
    if proba.shape[0] == 0:
        return
    error = np.abs(proba.sum(axis=1) - 1.0)
    worst = int(np.argmax(error))
    if error[worst] > PROBA_SUM_TOLERANCE:
        raise ValueError(f"proba rows must sum to 1 (each a distribution over the clusters); "
                         f"row {worst} sums to {proba[worst].sum():.6g}. Pass every column "
                         "of predict_proba (e.g. DPMixture's last, 'new cluster').")


def pairwise_from_proba(proba, reference_labels=None):
    """Co-membership probabilities from assignment probabilities (``predict_proba``).

    Parameters
    ----------
    proba : array-like of shape (n, K)
        Each row: the probabilities that the item belongs to each of K
        clusters (rows sum to 1).
    reference_labels : array-like of int of shape (m,), optional
        The cluster (a column of ``proba``) of each of m reference items, for
        instance the fitted ``labels_``.

    Returns
    -------
    ndarray of shape (n, n) or (n, m)
        Without references, ``P[a, b] = sum_k proba[a, k] proba[b, k]``: the
        probability that items ``a`` and ``b`` fall in the same cluster when
        assigned independently (ones on the diagonal). With references,
        ``P[a, j] = proba[a, reference_labels[j]]``: the probability that item
        ``a`` joins reference item ``j``'s cluster. Both are free of the
        clusters' names.

    Examples
    --------
    >>> import numpy as np
    >>> proba = np.array([[0.8, 0.2], [0.5, 0.5]])
    >>> pairwise_from_proba(proba)[0, 1]
    np.float64(0.5)
    >>> pairwise_from_proba(proba, reference_labels=[1, 0, 0]).tolist()
    [[0.2, 0.8, 0.8], [0.5, 0.5, 0.5]]
    """
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2:
        raise ValueError(f"proba must be 2-d (items by clusters), got shape {proba.shape}.")
    if not np.all(np.isfinite(proba)) or (proba.size and proba.min() < 0):
        raise ValueError("proba must hold finite non-negative probabilities.")
    if reference_labels is not None:
        labels = np.asarray(reference_labels)
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or \
                (labels.size and (labels.min() < 0 or labels.max() >= proba.shape[1])):
            raise ValueError(f"reference_labels must be 1-d integers in [0, "
                             f"{proba.shape[1] - 1}] (columns of proba).")
    _check_rows_sum_to_one(proba)
    if reference_labels is not None:
        return proba[:, labels]
    n = proba.shape[0]   # the product and its clipped copy, float64
    check_memory(16 * n * n, f"the ({n}, {n}) co-membership matrix of {n} items",
                 "Score fewer items at a time, or against reference_labels.")
    out = np.clip(proba @ proba.T, 0.0, 1.0)
    np.fill_diagonal(out, 1.0)
    return out


__all__ = ["pair_targets", "pairwise_log_loss", "pairwise_brier_score",
           "pairwise_calibration_curve", "expected_calibration_error", "pairwise_from_proba"]
