"""Top-down trees: split every cluster in two until all objects stand alone.

Every method splits each cluster independently, so the tree is grown by
visiting the clusters in any order; the banner (``order`` and the diameters)
and the order of the splits record it, and
:func:`sklearn_trellis._core.trees.banner_to_merge` turns them into merges
(the banner alone is ambiguous where a cluster and its part have one diameter). The
splitters:

- ``'diana'``: Kaufman & Rousseeuw's dissimilarity analysis, exactly as R's
  ``cluster::diana`` (:mod:`._diana_kernels`);
- ``'kmeans'`` / ``'kmedoids'``: K-means on the feature rows / PAM on the
  dissimilarities with ``K = 2`` (:mod:`.bisection`);
- ``'exact'``: the optimal bipartition of every cluster of at most
  ``max_exact_size`` items (:mod:`.exact_split`), DIANA's split above.

Heights are cluster diameters (as in R), so cutting the tree into ``k``
clusters undoes the splits of the ``k - 1`` clusters of largest diameter: the
notes' rule "split the cluster with the largest diameter next".
"""

from dataclasses import dataclass, field

import numpy as np

from ..._core.progress import SILENT
from ..._core.trees import banner_to_merge, merge_to_children
from ..._core.validation import check_random_state
from ._diana_kernels import cluster_diameter, diana_split
from .banner import divisive_coefficient
from .bisection import feature_diameter, two_means, two_medoids
from .exact_split import CRITERIA, MAX_EXACT_ITEMS, best_bipartition

METHODS = ("diana", "kmeans", "kmedoids", "exact")

#: Lloyd / SWAP iterations per bisection.
MAX_ITER = 100


@dataclass
class DivisiveTree:
    """A divisive tree in all the encodings the estimators need.

    Attributes
    ----------
    order : ndarray of int64, shape (n,)
        Objects in banner order (R's ``order - 1``).
    banner : ndarray of float64, shape (n,)
        ``banner[k]``: height separating positions ``k - 1`` and ``k``; ``banner[0] = 0``.
    merge : ndarray of int64, shape (n - 1, 2)
        R's ``merge`` matrix.
    children : ndarray of int64, shape (n - 1, 2)
        scikit-learn's bottom-up ``children_``.
    distances : ndarray of float64, shape (n - 1,)
        Height (diameter) of each merge, non-decreasing.
    split_order : ndarray of int64, shape (n,)
        ``split_order[k]`` numbers the split at position ``k`` (a cluster
        before its parts).
    divisive_coefficient : float
        R's ``dc``.
    fallback_sizes : list of int
        Sizes of the clusters that ``'exact'`` split with DIANA (too large).
    """

    order: np.ndarray
    banner: np.ndarray
    split_order: np.ndarray
    merge: np.ndarray
    children: np.ndarray
    distances: np.ndarray
    divisive_coefficient: float
    fallback_sizes: list = field(default_factory=list)

    @property
    def heights(self):
        """R's ``height``: the banner without its first entry."""
        return self.banner[1:]

    @classmethod
    def from_banner(cls, order, banner, split_order, fallback_sizes=()):
        order = np.asarray(order, dtype=np.int64)
        banner = np.asarray(banner, dtype=np.float64)
        split_order = np.asarray(split_order, dtype=np.int64)
        merge, distances = banner_to_merge(order, banner, split_order)
        children = merge_to_children(merge)
        return cls(order=order, banner=banner, split_order=split_order, merge=merge,
                   children=children,
                   distances=distances,
                   divisive_coefficient=divisive_coefficient(banner),
                   fallback_sizes=list(fallback_sizes))


def diana(distances):
    """R's ``cluster::diana`` on a full (n, n) dissimilarity matrix.

    Parameters
    ----------
    distances : ndarray of shape (n, n)
        Symmetric non-negative dissimilarities with a zero diagonal (not checked
        here: the estimator validates its input).

    Returns
    -------
    DivisiveTree

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.divisive import diana
    >>> x = np.array([0.0, 1.0, 5.0, 6.0, 20.0])
    >>> tree = diana(np.abs(x[:, None] - x[None, :]))
    >>> tree.order.tolist(), tree.heights.tolist()
    ([0, 1, 2, 3, 4], [1.0, 6.0, 1.0, 20.0])
    >>> round(tree.divisive_coefficient, 4)
    0.76
    """
    return divisive_tree("diana", distances=distances)


def _stable_split(ner, ja, jb, labels):
    """Reorder ``ner[ja..jb]``: the part of ``ner[ja]`` first, both parts in order."""
    run = ner[ja:jb + 1].copy()
    first = labels == labels[0]
    ner[ja:jb + 1] = np.concatenate([run[first], run[~first]])
    return ja + int(first.sum())


class _Splitter:
    """One cluster's split and diameter, from the dissimilarities or the features."""

    def __init__(self, method, *, distances=None, X=None, manhattan=False,
                 squared=False, similarities=None, criterion="average",
                 max_exact_size=20, random_state=None):
        self.method = method
        self.D = distances
        self.X = X
        self.manhattan = manhattan
        self.squared = squared
        self.similarities = similarities
        self.criterion = criterion
        self.max_exact_size = max_exact_size
        self.rng = check_random_state(random_state)
        n = distances.shape[0] if distances is not None else X.shape[0]
        self.sum_a = np.zeros(n)
        self.sum_b = np.zeros(n)
        self.fallback_sizes = []

    def diameter(self, ner, ja, jb):
        if self.D is not None:
            return cluster_diameter(self.D, ner, ja, jb)
        value = feature_diameter(self.X, ner[ja:jb + 1], self.manhattan)
        return value * value if self.squared else value

    def split(self, ner, ja, jb):
        m = jb - ja + 1
        if self.method == "diana" or (self.method == "exact" and m > self.max_exact_size):
            if self.method == "exact":
                self.fallback_sizes.append(m)
            return diana_split(self.D, ner, ja, jb, self.sum_a, self.sum_b)
        members = ner[ja:jb + 1].copy()
        if self.method == "kmeans":
            labels = two_means(self.X, members, int(self.rng.randint(2 ** 31 - 1)), MAX_ITER)
        elif self.method == "kmedoids":
            labels = two_medoids(self.D, members, MAX_ITER)
        else:
            source = self.similarities if CRITERIA[self.criterion] == "similarity" else self.D
            left, _ = best_bipartition(source[np.ix_(members, members)], self.criterion)
            labels = (~left).astype(np.int64)
        return _stable_split(ner, ja, jb, labels)


def divisive_tree(method="diana", *, distances=None, X=None, manhattan=False,
                  squared=False, similarities=None, criterion="average",
                  max_exact_size=20, random_state=None, progress=SILENT):
    """Grow a divisive tree with one of :data:`METHODS`.

    Parameters
    ----------
    method : {'diana', 'kmeans', 'kmedoids', 'exact'}
    distances : ndarray of shape (n, n), optional
        Dissimilarities; needed by every method but ``'kmeans'``, whose heights
        then come from the features.
    X : ndarray of shape (n, n_features), optional
        Feature rows, for ``'kmeans'`` (finite values).
    manhattan, squared : bool
        The metric of the features' diameters when ``distances`` is None
        (Euclidean by default, its square with ``squared``).
    similarities : ndarray of shape (n, n), optional
        Similarities of the cut criteria of ``'exact'``.
    criterion : {'average', 'dasgupta', 'sparsest'}
        The criterion ``'exact'`` optimises (see :mod:`.exact_split`).
    max_exact_size : int
        Largest cluster ``'exact'`` enumerates (at most 24).
    random_state : int, RandomState or None
        Seeds of the k-means++ initialisations.
    progress : Progress, default=SILENT
        Reporter of a fit with ``verbose``: the splits done, at most every
        10 s.

    Returns
    -------
    DivisiveTree
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}.")
    if method == "exact" and not 2 <= max_exact_size <= MAX_EXACT_ITEMS:
        raise ValueError(f"max_exact_size must lie in [2, {MAX_EXACT_ITEMS}], "
                         f"got {max_exact_size!r}.")
    if method != "kmeans" and distances is None:
        raise ValueError(f"method={method!r} needs the dissimilarity matrix.")
    if method == "kmeans" and X is None:
        raise ValueError("method='kmeans' needs the feature rows X.")
    if distances is not None:
        distances = np.ascontiguousarray(distances, dtype=np.float64)
    if X is not None:
        X = np.ascontiguousarray(X, dtype=np.float64)
    if method == "exact" and CRITERIA[criterion] == "similarity" and similarities is None:
        raise ValueError(f"criterion={criterion!r} needs the similarity matrix.")
    splitter = _Splitter(method, distances=distances, X=X, manhattan=manhattan,
                         squared=squared, similarities=similarities, criterion=criterion,
                         max_exact_size=max_exact_size, random_state=random_state)
    n = distances.shape[0] if distances is not None else X.shape[0]
    ner = np.arange(n, dtype=np.int64)
    banner = np.zeros(n)
    split_order = np.zeros(n, dtype=np.int64)
    stack = [(0, n - 1)] if n >= 2 else []
    n_splits = 0
    while stack:
        ja, jb = stack.pop()
        n_splits += 1
        if jb - ja == 1:
            banner[jb] = splitter.diameter(ner, ja, jb)
            split_order[jb] = n_splits
            continue
        diameter = splitter.diameter(ner, ja, jb)
        if diameter == 0.0 and method in ("kmeans", "kmedoids"):
            # Coincident points: every split costs 0; halves keep the tree shallow
            # (O(n log n) instead of peeling one point per split).
            jmb = (ja + jb + 1) // 2
        else:
            jmb = splitter.split(ner, ja, jb)
        banner[jmb] = diameter
        split_order[jmb] = n_splits
        progress.update(n_splits, n - 1, "splits")
        if jmb - 1 > ja:
            stack.append((ja, jmb - 1))
        if jb > jmb:
            stack.append((jmb, jb))
    return DivisiveTree.from_banner(ner, banner, split_order, splitter.fallback_sizes)
