"""Divisive trees as seed trees of the sparse trellises (next to the agglomerative ones).

A sparse trellis realises every tree whose clusters all lie in the union of its
seed trees (``engines/sparse/seeds.py``); top-down trees add clusters that the
bottom-up linkages miss (large, balanced splits). :func:`divisive_seed_trees`
returns them as scikit-learn ``children_`` arrays, the format of
:func:`~sklearn_trellis.engines.sparse.seeds.linkage_seed_trees`.
"""

import numpy as np

from ..._core.budget import check_memory
from ._diana_kernels import r_dissimilarities
from .divisive import METHODS, divisive_tree

#: The methods ``method='all'`` grows, in this order ('exact' is slow beyond 20 items
#: per cluster and falls back to DIANA anyway, so it is asked for by name).
DEFAULT_SEED_METHODS = ("diana", "kmeans", "kmedoids")


def divisive_seed_trees(X=None, *, distances=None, method="all", metric="euclidean",
                        random_state=0):
    """Divisive seed trees as scikit-learn ``children_`` arrays.

    Parameters
    ----------
    X : array-like of shape (N, n_features), optional
        Feature rows (finite); dissimilarities are R's Euclidean or Manhattan.
    distances : array-like of shape (N, N), optional
        A precomputed symmetric non-negative dissimilarity matrix instead of ``X``
        (``'kmeans'`` is then skipped: it needs features).
    method : {'all', 'diana', 'kmeans', 'kmedoids', 'exact'} or list of them, default='all'
        ``'all'`` grows ``'diana'``, ``'kmeans'`` (with ``X``) and ``'kmedoids'``.
    metric : {'euclidean', 'cityblock', 'manhattan'}, default='euclidean'
        Metric of the dissimilarities computed from ``X``.
    random_state : int, RandomState or None, default=0
        Seeds of the k-means bisections.

    Returns
    -------
    list of ndarray of int64, shape (N - 1, 2)
        One ``children_`` array per method, in the order asked.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.divisive import divisive_seed_trees
    >>> X = np.array([[0.0], [0.1], [5.0], [5.3]])
    >>> [t.tolist() for t in divisive_seed_trees(X, method=["diana", "kmeans"])]
    [[[0, 1], [2, 3], [4, 5]], [[0, 1], [2, 3], [4, 5]]]
    """
    if isinstance(method, str):
        names = list(DEFAULT_SEED_METHODS) if method == "all" else [method]
    else:
        names = list(method)
    if not names:
        raise ValueError("method names no method (empty list).")
    for name in names:
        if name not in METHODS:
            raise ValueError(f"Unknown method {name!r}: expected 'all' or one of "
                             f"{list(METHODS)}.")
    if (X is None) == (distances is None):
        raise ValueError("Give exactly one of X (features) and distances (precomputed).")
    if metric not in ("euclidean", "cityblock", "manhattan"):
        raise ValueError(f"metric must be 'euclidean', 'cityblock' or 'manhattan', "
                         f"got {metric!r}.")
    manhattan = metric != "euclidean"
    if X is not None:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 1:
            raise ValueError(f"X must be 2-d (N, n_features) with N >= 1, got shape {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinity.")
        n = X.shape[0]
        check_memory(8 * n * n, f"the dissimilarities of {n} points")
        D = r_dissimilarities.for_work(X.size * n)(X, manhattan, False)[0]
    else:
        D = np.asarray(distances, dtype=np.float64)
        if D.ndim != 2 or D.shape[0] != D.shape[1]:
            raise ValueError(f"distances must be a square (N, N) matrix, got shape {D.shape}.")
        if not np.all(np.isfinite(D)) or np.any(D < 0) or not np.allclose(D, D.T):
            raise ValueError("distances must be finite, non-negative and symmetric.")
        names = [name for name in names if name != "kmeans"]
        n = D.shape[0]
    if n == 1:
        return [np.zeros((0, 2), dtype=np.int64) for _ in names]
    trees = []
    for name in names:
        tree = divisive_tree(name, distances=D, X=X, manhattan=manhattan,
                             random_state=random_state)
        trees.append(tree.children)
    return trees
