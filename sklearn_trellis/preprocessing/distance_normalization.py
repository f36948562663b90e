"""From squared Euclidean distances to one inner-product matrix ``S*`` (developer notes, fastTIWD (f)).

A matrix ``D`` of squared Euclidean distances determines inner products only up
to ``S + 1 v^T + v 1^T``. fastTIWD picks one member ``S* = -Q D Q^T / 2`` with
the projection ``Q = I - 1 a^T / (1^T a)``, ``a = Psi 1``, where ``Psi`` is an
estimate of the inverse block covariance (Adametz & Roth 2011, eq. 11-16):

- ``'single'`` (default): ``Psi = S_tree^{-1}`` for the single-linkage tree of
  ``D`` (the subdominant ultrametric);
- ``'linf'``: the tree of the ``l_inf``-closest ultrametric (Farach, Kannan &
  Warnow 1995): the single-linkage tree with every distance shifted by half the
  largest excess ``max(D - U_single)``, i.e. a ridge on the leaf edges;
- ``'center'``: ``Psi = I``, classical column centring ``S_c = -Q_I D Q_I / 2``
  (the "WD C" baseline);
- ``'none'``: no normalisation; only for feature rows, ``S = X X^T``.

``S_tree = sum_j lam_j (1_j 1_j^T + (1 - 1_j)(1 - 1_j)^T)`` over the tree edges
(eq. 13) with ``lam_j = (h(parent j) - h(j)) / 4``, so that the distances of
``S_tree`` are the tree's cophenetic distances. ``a = S_tree^{-1} 1`` is found
by conjugate gradients with the ``O(n)`` matrix-vector product of Lemma 1, and
``S*`` in one ``O(n^2)`` pass. The whole step costs ``O(n^2)`` time and no
``n x n`` memory besides ``S*`` itself (the single-linkage tree is built by
Prim's algorithm on ``D`` directly, not via scipy's condensed copy).
"""

import numpy as np

from .._core.interpreted import call
from . import _normalization_kernels as kernels

NORMALIZATIONS = ("single", "linf", "center", "none")

#: Up to this N, :func:`single_linkage` runs its two kernels' own Python source
#: (:mod:`~sklearn_trellis._core.interpreted`: the same steps and values) instead
#: of compiling them: a few milliseconds, against about a second of compilation
#: in a first fit.
INTERPRETED_LINKAGE_ITEMS = 100

#: Up to this N, the tree's ``O(N)`` path sums and matrix-vector products (one per
#: conjugate-gradient step) and the ``O(N^2)`` projection run interpreted (plain
#: float sums and products in the kernels' order: the same bits): about 20 ms in
#: all at 100 points, against about a second of compilation in a first fit.
INTERPRETED_NORMALIZATION_ITEMS = 100


def single_linkage(dist):
    """Single-linkage matrix (scipy format) of a dense distance matrix in ``O(n^2)``.

    Parameters
    ----------
    dist : ndarray of shape (n, n)
        Symmetric dissimilarities (float32 or float64; not copied).

    Returns
    -------
    linkage : ndarray of shape (n - 1, 4)
        Rows ``[child_a, child_b, height, size]`` as returned by
        :func:`scipy.cluster.hierarchy.linkage`.
    """
    n = dist.shape[0]
    if n < 2:
        return np.empty((0, 4))
    small = n <= INTERPRETED_LINKAGE_ITEMS
    a, b, w = call(kernels.single_linkage_mst, dist, small=small)
    return call(kernels.mst_to_linkage, a, b, w, np.argsort(w, kind="stable"), n, small=small)


def _path_sums(parent, lam, n):
    return call(kernels.path_sums, parent, lam, n, small=n <= INTERPRETED_NORMALIZATION_ITEMS)


class DistanceTree:
    """A rooted binary tree over ``n`` leaves as the covariance ``S_tree`` of eq. 13.

    Parameters
    ----------
    linkage : ndarray of shape (n - 1, 4)
        scipy-format linkage matrix (merge heights must not decrease towards the root).
    leaf_ridge : float, default=0.0
        Added to every leaf edge length ``lam`` (a multiple of the identity
        added to ``S_tree``).

    Attributes
    ----------
    n_leaves : int
    parent : ndarray of shape (2n - 1,)
        Parent node id of each node (``-1`` for the root).
    edge_lengths : ndarray of shape (2n - 1,)
        ``lam_j = (h(parent j) - h(j)) / 4`` (+ ridge on leaves); 0 for the root.
    """

    def __init__(self, linkage, leaf_ridge=0.0):
        linkage = np.asarray(linkage, dtype=np.float64)
        n = linkage.shape[0] + 1
        self.n_leaves = n
        self.children = linkage[:, :2].astype(np.int64)
        heights = np.concatenate([np.zeros(n), linkage[:, 2]])
        parent = np.full(2 * n - 1, -1, dtype=np.int64)
        for col in (0, 1):
            parent[self.children[:, col]] = np.arange(n, 2 * n - 1)
        self.parent = parent
        lam = np.zeros(2 * n - 1)
        lam[:-1] = (heights[parent[:-1]] - heights[:-1]) / 4.0
        if np.any(lam < -1e-12 * max(1.0, float(np.max(np.abs(heights))))):
            raise ValueError("linkage heights must not decrease towards the root.")
        np.maximum(lam, 0.0, out=lam)
        lam[:n] += leaf_ridge
        self.heights = heights
        self.edge_lengths = lam
        self._path = _path_sums(parent, lam, n)
        self._work = (np.empty(2 * n - 1), np.empty(2 * n - 1))

    def matvec(self, y):
        """``S_tree @ y`` in ``O(n)``."""
        y = np.asarray(y, dtype=np.float64)
        return call(kernels.tree_matvec, self.parent, self.edge_lengths, self._path, y,
                    self.n_leaves, *self._work,
                    small=self.n_leaves <= INTERPRETED_NORMALIZATION_ITEMS)

    def dense(self):
        """The dense ``S_tree`` (``O(n^2)`` memory; for checks and small ``n``)."""
        n = self.n_leaves
        out = np.zeros((n, n))
        order, start, size = kernels.leaf_ranges(self.children, n)
        for v in range(2 * n - 2):
            inside = np.zeros(n, dtype=bool)
            inside[order[start[v]:start[v] + size[v]]] = True
            out += self.edge_lengths[v] * (np.outer(inside, inside) + np.outer(~inside, ~inside))
        return out


def tree_from_distances(dist, kind="single"):
    """The tree of ``'single'`` linkage or of the ``'linf'``-closest ultrametric of ``D``.

    Leaf edges of zero length (duplicate points) get a small ridge so that
    ``S_tree`` stays positive definite.
    """
    linkage = single_linkage(dist)
    n = dist.shape[0]
    ridge = 0.0
    if kind == "linf":
        excess = kernels.max_excess_over_tree(dist, linkage[:, :2].astype(np.int64),
                                              linkage[:, 2].copy(), n)
        ridge = excess / 8.0  # every off-diagonal distance + excess / 2
    elif kind != "single":
        raise ValueError(f"kind must be 'single' or 'linf', got {kind!r}.")
    tree = DistanceTree(linkage, leaf_ridge=ridge)
    leaf = tree.edge_lengths[:n]
    scale = float(np.max(tree.edge_lengths))
    floor = 1e-8 * scale if scale > 0 else 1.0
    if np.any(leaf < floor):
        tree.edge_lengths[:n] = np.maximum(leaf, floor)
        tree._path = _path_sums(tree.parent, tree.edge_lengths, n)
    return tree


def conjugate_gradient(matvec, rhs, *, tol=1e-12, max_iter=None):
    """Solve ``A x = rhs`` for symmetric positive definite ``A`` given as a matvec.

    Returns ``(x, n_iter)``; stops when ``||r|| <= tol * ||rhs||``.
    """
    rhs = np.asarray(rhs, dtype=np.float64)
    max_iter = 10 * rhs.size if max_iter is None else max_iter
    x = np.zeros_like(rhs)
    r = rhs.copy()
    p = r.copy()
    rr = float(r @ r)
    target = (tol * np.sqrt(float(rhs @ rhs))) ** 2
    n_iter = 0
    while rr > target and n_iter < max_iter:
        ap = matvec(p)
        step = rr / float(p @ ap)
        x += step * p
        r -= step * ap
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
        n_iter += 1
    return x, n_iter


def project_distances(dist, weights, dtype=np.float64):
    """``S* = -Q D Q^T / 2`` with ``Q = I - 1 a^T / (1^T a)`` for ``a = weights`` (eq. 16).

    ``O(n^2)`` time; the only ``n x n`` allocation is the result, of ``dtype``.
    """
    a = np.asarray(weights, dtype=np.float64)
    # Q depends on a only up to scale; a ~ 1 / (scale of D) would over- or underflow
    # in c ** 2 for very large or small distances, so work with a / max |a|.
    top = float(np.max(np.abs(a))) if a.size else 0.0
    if top > 0 and np.isfinite(top):
        a = a / top
    c = float(a.sum())
    # u = S a for S = -D/2 (a small matrix runs the serial twins: no parallel compile;
    # a very small one their Python source)
    small = dist.shape[0] <= INTERPRETED_NORMALIZATION_ITEMS
    u = -0.5 * call(kernels.row_weighted_sums.for_work(dist.size), dist, a, small=small)
    q = float(a @ u) / c ** 2
    out = np.empty(dist.shape, dtype=dtype)
    call(kernels.project_distances.for_work(dist.size), dist, u, 1.0 / c, q, out, small=small)
    return out


def mean_squared_distance(dist, chunk=1024):
    """Mean off-diagonal entry of a square distance matrix, without over- or underflow.

    Each block of rows is scaled by a power of two (exact) before it is summed,
    so the result is right for entries anywhere in the float64 range. Returns
    0 for fewer than two items or an all-zero matrix.
    """
    n = dist.shape[0]
    if n < 2:
        return 0.0
    top = float(np.max(dist))
    if not top > 0:
        return 0.0
    exponent = int(np.frexp(top)[1])
    total = 0.0
    for start in range(0, n, chunk):
        block = np.ldexp(np.asarray(dist[start:start + chunk], dtype=np.float64), -exponent)
        total += float(block.sum()) - float(np.trace(block, offset=start))
    return float(np.ldexp(total / (n * (n - 1)), exponent))


def normalized_inner_products(dist, normalization="single", *, dtype=np.float64,
                              cg_tol=1e-12):
    """The inner-product matrix fastTIWD partitions, from squared distances.

    Parameters
    ----------
    dist : ndarray of shape (n, n)
        Squared Euclidean distances (symmetric, zero diagonal).
    normalization : {'single', 'linf', 'center'}, default='single'
        See the module docstring.
    dtype : {np.float64, np.float32}, default=np.float64
        Precision of the returned matrix.
    cg_tol : float, default=1e-12
        Relative residual at which conjugate gradients stop.

    Returns
    -------
    S : ndarray of shape (n, n)
        ``S* = -Q D Q^T / 2``.
    info : dict
        ``'weights'`` (the vector ``a``), ``'cg_iterations'`` and ``'tree'``
        (``None`` for ``'center'``).
    """
    n = dist.shape[0]
    info = {"tree": None, "cg_iterations": 0}
    if normalization == "center" or n < 2:
        weights = np.ones(n)
    elif normalization in ("single", "linf"):
        tree = tree_from_distances(dist, normalization)
        weights, n_iter = conjugate_gradient(tree.matvec, np.ones(n), tol=cg_tol)
        info.update(tree=tree, cg_iterations=n_iter)
    else:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS[:3]} for "
                         f"distances, got {normalization!r}.")
    info["weights"] = weights
    return project_distances(dist, weights, dtype), info


__all__ = ["NORMALIZATIONS", "mean_squared_distance", "single_linkage", "DistanceTree",
           "tree_from_distances",
           "conjugate_gradient", "project_distances", "normalized_inner_products"]


def new_item_inner_products(inner_products, weights, sq_distances):
    """Inner products of new items with the fitted ones under the fitted projection.

    ``S* = -Q D Q^T / 2`` places the origin at the weighted mean
    ``mu = sum_j w_j x_j`` (``w = a / 1^T a``); a new item ``x`` keeps that
    origin (it gets weight 0), so from its squared distances ``d_x`` to the
    fitted items::

        S_xx = w . d_x - w . diag(S*),    S_xj = (S_xx + S*_jj - d_xj) / 2,

    which are the new row and corner of ``-Q' D' Q'^T / 2`` for the enlarged
    matrix ``D'`` with ``Q' = I - 1 (w, 0)^T``, whose top-left block is ``S*``.

    Parameters
    ----------
    inner_products : ndarray of shape (n, n)
        The fitted ``S*``.
    weights : ndarray of shape (n,)
        The projection's vector ``a`` (``info['weights']`` of
        :func:`normalized_inner_products`; any positive multiple).
    sq_distances : ndarray of shape (m, n)
        Squared distances of the new items to the fitted ones.

    Returns
    -------
    rows : ndarray of shape (m, n)
        ``S_xj``.
    self_products : ndarray of shape (m,)
        ``S_xx``.
    """
    d = np.asarray(sq_distances, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    diag = np.diag(inner_products).astype(np.float64)
    self_products = d @ w - float(w @ diag)
    rows = 0.5 * (self_products[:, None] + diag[None, :] - d)
    return rows, self_products
