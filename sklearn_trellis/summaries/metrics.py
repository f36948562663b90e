"""Losses and scores comparing two flat clusterings (Murphy, Section 1.2)."""

import numpy as np

from ._input import check_labels


def _contingency(labels_a, labels_b):
    """Contingency table ``N[k, l] = |{i : a_i = k, b_i = l}|`` of two label vectors."""
    labels_a = check_labels(labels_a, "labels_a")
    labels_b = check_labels(labels_b, "labels_b")
    if labels_a.shape != labels_b.shape:
        raise ValueError(f"The two labelings have different lengths: {labels_a.size} and "
                         f"{labels_b.size}.")
    if labels_a.size == 0:
        raise ValueError("The labelings are empty.")
    _, a = np.unique(labels_a, return_inverse=True)
    _, b = np.unique(labels_b, return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1), np.int64)
    np.add.at(table, (a, b), 1)
    return table


def _xlogx(counts):
    counts = np.asarray(counts, dtype=np.float64)
    positive = counts > 0
    return float(np.sum(counts[positive] * np.log(counts[positive])))


def pair_counts(labels_a, labels_b):
    """Pairs together in both, only in ``a``, only in ``b``, and the total number of pairs."""
    table = _contingency(labels_a, labels_b)
    n = int(table.sum())
    both = int((table * (table - 1) // 2).sum())
    rows = table.sum(axis=1)
    cols = table.sum(axis=0)
    in_a = int((rows * (rows - 1) // 2).sum())
    in_b = int((cols * (cols - 1) // 2).sum())
    return both, in_a - both, in_b - both, n * (n - 1) // 2


def binder_loss(labels_a, labels_b, *, normalize=False):
    """Binder's loss: the number of pairs the two clusterings disagree on.

    A pair ``i < j`` counts when it is together in one clustering and apart in
    the other (Binder 1978, unit costs). It equals ``(1 - rand_score) * n (n - 1) / 2``.

    Parameters
    ----------
    labels_a, labels_b : array-like of shape (n,)
        Two label vectors of the same elements.
    normalize : bool, default=False
        Divide by the number of pairs ``n (n - 1) / 2`` (then ``1 - rand_score``).

    Returns
    -------
    loss : float

    Examples
    --------
    >>> from sklearn_trellis.summaries import binder_loss
    >>> binder_loss([0, 0, 1, 1], [0, 0, 0, 1])
    3.0
    """
    _, only_a, only_b, n_pairs = pair_counts(labels_a, labels_b)
    loss = float(only_a + only_b)
    return loss / n_pairs if normalize and n_pairs else loss


def variation_of_information(labels_a, labels_b):
    """Variation of information ``VI = H(A) + H(B) - 2 I(A, B)`` (natural log; Meila 2007).

    A metric on partitions: 0 only for identical clusterings, at most ``log n``.

    Parameters
    ----------
    labels_a, labels_b : array-like of shape (n,)

    Returns
    -------
    vi : float

    Examples
    --------
    >>> from sklearn_trellis.summaries import variation_of_information
    >>> round(variation_of_information([0, 0, 1, 1], [0, 0, 0, 0]), 4)
    0.6931
    """
    table = _contingency(labels_a, labels_b)
    n = table.sum()
    # n VI = sum_k r_k log r_k + sum_l c_l log c_l - 2 sum_kl N_kl log N_kl
    value = (_xlogx(table.sum(axis=1)) + _xlogx(table.sum(axis=0)) - 2.0 * _xlogx(table)) / n
    return float(max(value, 0.0))


def purity_score(labels_true, labels_pred):
    """Purity: the fraction of elements in the majority class of their cluster (Murphy, Eq. 5).

    ``purity = sum_i (N_i / N) max_j p_ij`` with ``p_ij`` the fraction of
    cluster ``i`` (of ``labels_pred``) that belongs to class ``j`` (of
    ``labels_true``). It is 1 for any refinement of the classes (singletons
    included), so compare it only between clusterings with similar numbers of
    clusters.

    Parameters
    ----------
    labels_true : array-like of shape (n,)
        Reference classes.
    labels_pred : array-like of shape (n,)
        Clusters to evaluate.

    Returns
    -------
    purity : float in (0, 1]

    Examples
    --------
    >>> from sklearn_trellis.summaries import purity_score
    >>> purity_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1])
    0.8333333333333334
    """
    table = _contingency(labels_pred, labels_true)
    return float(table.max(axis=1).sum() / table.sum())


__all__ = ["binder_loss", "variation_of_information", "purity_score", "pair_counts"]
