"""Losses and scores comparing two flat clusterings (Murphy, Section 1.2)."""

import numpy as np

from ._input import check_labels


def _contingency(labels_a, labels_b, names=("labels_a", "labels_b")):
    """Contingency table ``N[k, l] = |{i : a_i = k, b_i = l}|`` of two label vectors.

    Any labels name the clusters (integers, strings, floats; not NaN), as in
    scikit-learn's clustering metrics.
    """
    labels_a = check_labels(labels_a, names[0])
    labels_b = check_labels(labels_b, names[1])
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


def check_costs(a, b=None):
    """Check the costs ``a`` (splitting a pair) and ``b`` (joining one) of Binder's loss.

    Raises TypeError unless each given cost is a real number, ValueError unless
    it is finite and ``>= 0``; ``b=None`` is not checked.
    """
    for name, value in (("a", a), ("b", b)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                              np.floating)):
            raise TypeError(f"{name} must be a real number, got {value!r}.")
        if not np.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")


def binder_loss(labels_a, labels_b, *, a=1.0, b=1.0, normalize=False):
    """Binder's loss with unequal costs: weighted count of the pairs the clusterings disagree on.

    ``labels_a`` is the reference (the truth, or a posterior sample) and
    ``labels_b`` the estimate. A pair ``i < j`` costs ``a`` when it is together
    in ``labels_a`` and split by ``labels_b``, and ``b`` when it is apart in
    ``labels_a`` and joined by ``labels_b`` (Binder 1978; Dahl, Johnson &
    Müller 2022). With ``a = b = 1`` it equals ``(1 - rand_score) n (n - 1) / 2``;
    a larger ``a`` makes splitting dearer and favours fewer clusters.

    Convention: the sum is over unordered pairs and is not normalised. salso's
    ``binder(truth, estimate, a)`` uses ``b = 2 - a`` and divides by ``n**2 / 2``:
    ``salso = binder_loss(truth, estimate, a=a, b=2 - a) * 2 / n**2``.

    Parameters
    ----------
    labels_a, labels_b : array-like of shape (n,)
        Reference and estimate, label vectors of the same elements (any labels:
        integers, strings, floats).
    a : float, default=1.0
        Cost of splitting a pair that ``labels_a`` has together.
    b : float, default=1.0
        Cost of joining a pair that ``labels_a`` has apart.
    normalize : bool, default=False
        Divide by the number of pairs ``n (n - 1) / 2`` (then ``1 - rand_score``
        for unit costs).

    Returns
    -------
    loss : float

    Examples
    --------
    >>> from sklearn_trellis.summaries import binder_loss
    >>> binder_loss([0, 0, 1, 1], [0, 0, 0, 1])
    3.0
    >>> binder_loss([0, 0, 1, 1], [0, 0, 0, 1], a=2.0, b=0.5)  # 1 split, 2 joins
    3.0
    """
    check_costs(a, b)
    _, split, joined, n_pairs = pair_counts(labels_a, labels_b)
    loss = float(a * split + b * joined)
    return loss / n_pairs if normalize and n_pairs else loss


def _entropies(table):
    """``(H(A), H(B), H(A, B))`` in nats from a contingency table."""
    n = table.sum()
    log_n = np.log(n)
    h_a = log_n - _xlogx(table.sum(axis=1)) / n
    h_b = log_n - _xlogx(table.sum(axis=0)) / n
    h_ab = log_n - _xlogx(table) / n
    return max(h_a, 0.0), max(h_b, 0.0), max(h_ab, 0.0)


def variation_of_information(labels_a, labels_b, *, a=1.0):
    """(Generalised) variation of information (natural log; Meila 2007; Dahl et al. 2022).

    ``VI = H(A | B) + H(B | A) = 2 H(A, B) - H(A) - H(B)``: a metric on
    partitions, 0 only for identical clusterings, at most ``log n``.

    The generalised VI weighs the two conditional entropies, ``labels_a`` being
    the reference and ``labels_b`` the estimate::

        VI_a = a H(B | A) + (2 - a) H(A | B) = 2 H(A, B) - a H(A) - (2 - a) H(B)

    ``H(B | A)`` grows when the estimate splits reference clusters, so, as
    ``a`` of :func:`binder_loss`, a larger ``a`` makes splitting dearer and
    favours fewer clusters; ``a = 1`` is the VI. salso's ``VI(a)`` is the
    generalised VI of Dahl, Johnson & Müller (2022) with ``log2``: divide ours by
    ``log 2`` (we follow their weighting of splits by ``a`` as read from the
    paper; check the sign of ``a - 1`` before comparing numbers with salso).

    Parameters
    ----------
    labels_a, labels_b : array-like of shape (n,)
        Reference and estimate.
    a : float in [0, 2], default=1.0

    Returns
    -------
    vi : float

    Examples
    --------
    >>> from sklearn_trellis.summaries import variation_of_information
    >>> round(variation_of_information([0, 0, 1, 1], [0, 0, 0, 0]), 4)
    0.6931
    >>> round(variation_of_information([0, 0, 1, 1], [0, 0, 0, 0], a=0.5), 4)
    1.0397
    """
    check_costs(a)
    if a > 2:
        raise ValueError(f"a must lie in [0, 2], got {a!r}.")
    table = _contingency(labels_a, labels_b)
    h_a, h_b, h_ab = _entropies(table)
    return float(max(2.0 * h_ab - a * h_a - (2.0 - a) * h_b, 0.0))


def normalized_variation_of_information(labels_a, labels_b):
    """Normalised VI ``NVI = VI / H(A, B) = 1 - I(A, B) / H(A, B)`` in [0, 1] (Vinh et al. 2010).

    salso's ``NVI``. 0 when both clusterings are the one-cluster partition.

    Examples
    --------
    >>> from sklearn_trellis.summaries import normalized_variation_of_information
    >>> normalized_variation_of_information([0, 0, 1, 1], [0, 0, 0, 0])
    1.0
    """
    h_a, h_b, h_ab = _entropies(_contingency(labels_a, labels_b))
    return float(min(max((2.0 * h_ab - h_a - h_b) / h_ab, 0.0), 1.0)) if h_ab > 0 else 0.0


def normalized_information_distance(labels_a, labels_b):
    """Normalised information distance ``NID = 1 - I(A, B) / max(H(A), H(B))`` (Vinh et al. 2010).

    salso's ``NID``, a metric in [0, 1]; 0 when both are the one-cluster partition.

    Examples
    --------
    >>> from sklearn_trellis.summaries import normalized_information_distance
    >>> normalized_information_distance([0, 0, 1, 1], [0, 1, 0, 1])
    1.0
    """
    h_a, h_b, h_ab = _entropies(_contingency(labels_a, labels_b))
    top = max(h_a, h_b)
    return float(min(max((h_ab - min(h_a, h_b)) / top, 0.0), 1.0)) if top > 0 else 0.0


def adjusted_rand_loss(labels_a, labels_b):
    """One minus the adjusted Rand index, ``omARI = 1 - ARI`` (Hubert & Arabie 1985).

    salso's ``omARI``. ``ARI = (N11 - E) / (M - E)`` with ``N11`` the pairs
    together in both, ``E = n_A n_B / C(n, 2)`` (``n_A``, ``n_B``: pairs together
    in each) and ``M = (n_A + n_B) / 2``; when ``M = E`` (both clusterings are
    the one-cluster or the all-singletons partition) the loss is 0 if they are
    equal and 1 otherwise (salso and scikit-learn give ARI = 1 for identical
    trivial clusterings).

    Examples
    --------
    >>> from sklearn_trellis.summaries import adjusted_rand_loss
    >>> adjusted_rand_loss([0, 0, 1, 1], [0, 0, 1, 1])
    0.0
    """
    both, only_a, only_b, n_pairs = pair_counts(labels_a, labels_b)
    return _omari(both, both + only_a, both + only_b, n_pairs)


def _omari(both, in_a, in_b, n_pairs):
    expected = in_a * in_b / n_pairs if n_pairs else 0.0
    maximum = 0.5 * (in_a + in_b)
    if maximum == expected:
        return 0.0 if in_a == in_b == both else 1.0
    return float(1.0 - (both - expected) / (maximum - expected))


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
    table = _contingency(labels_pred, labels_true, names=("labels_pred", "labels_true"))
    return float(table.max(axis=1).sum() / table.sum())


__all__ = ["binder_loss", "variation_of_information", "normalized_variation_of_information",
           "normalized_information_distance", "adjusted_rand_loss", "purity_score",
           "pair_counts"]
