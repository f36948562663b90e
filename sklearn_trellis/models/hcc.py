"""Hierarchical correlation clustering (Greenberg et al. 2021, Section 4.3, Eq. 7).

For signed affinities ``w`` (positive: similar, negative: dissimilar), the
energy of a split of ``S`` into siblings ``(L, R)`` is the weight of the
positive edges it cuts plus the magnitude of the negative edges it leaves
inside each child::

    E(L, R) = sum_{x in L, y in R} max(w_xy, 0)
              + sum_{x<y in L} max(-w_xy, 0) + sum_{x<y in R} max(-w_xy, 0)

and ``psi(L, R) = -E(L, R)`` (so the MAP tree minimises the summed energy).
With ``P(X) = sum_{i<j in X} max(w_ij, 0)`` and
``M(X) = sum_{i<j in X} max(-w_ij, 0)`` computed once per subset,
``E = P(S) - P(L) - P(R) + M(L) + M(R)``.

Every pair of items is separated at exactly one node of a binary tree, so the
positive part sums to the same total for every tree; trees differ by the
negative part: a dissimilar pair costs ``|w_xy|`` at every split above the node
that separates it (separating dissimilar items early is rewarded).
"""

import numpy as np
from numba import njit

from .._core.pairwise import new_item_similarities, similarity_from_distances
from .._core.subsets import subset_pair_sums
from ..preprocessing.affinity import mean_off_diagonal
from ._family_stats import family_item_sums_per_row, family_pair_sums
from ._split import InsertionInputs, SplitKernelInputs, SplitModel


@njit(cache=True, inline="always")
def hcc_split(params, stats, full, parent, left, right):
    """``-(P(S) - P(L) - P(R) + M(L) + M(R))``; ``stats = [P, M]``."""
    return -(stats[0, parent] - stats[0, left] - stats[0, right]
             + stats[1, left] + stats[1, right])


class HCCEnergy(SplitModel):
    """Hierarchical correlation clustering on signed affinities.

    Parameters
    ----------
    similarity : {'exp', 'precomputed'}, default='exp'
        ``'exp'``: :meth:`fit` receives a distance matrix ``D``, the
        similarities are ``s = exp(-D / scale)``, and with ``center=True`` the
        affinities are ``w = s - mean off-diagonal s`` (positive for pairs
        closer than average). ``'precomputed'``: :meth:`fit` receives the
        signed affinity matrix ``w`` itself (``center`` is ignored).
    scale : float, default=None
        Length scale of ``'exp'``; ``None`` means the median off-diagonal distance.
    center : bool, default=True
        Subtract the mean similarity so that affinities take both signs.

    Attributes
    ----------
    affinity_ : ndarray of shape (N, N)
        The signed affinities ``w`` (zero diagonal).
    scale_ : float or None
        The length scale of ``'exp'`` (``None`` for ``'precomputed'``).
    offset_ : float
        The mean similarity subtracted by ``center`` (0 if none); new items
        are placed with the fitted ``scale_`` and ``offset_``.
    n_items_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import HCCEnergy
    >>> w = np.array([[0., 1., -1.], [1., 0., -1.], [-1., -1., 0.]])
    >>> energy = HCCEnergy(similarity="precomputed").fit(w)
    >>> energy.log_potential(((0, 1), 2))   # the best tree: w_01 is cut at the bottom
    -1.0
    >>> energy.log_potential(((0, 2), 1))   # cuts w_01 at the root, keeps w_02 = -1 inside
    -2.0
    """

    input_kind = "distances"

    def __init__(self, similarity="exp", scale=None, center=True):
        self.similarity = similarity
        self.scale = scale
        self.center = center

    def fit(self, data, y=None, *, copy=True):
        """Bind the model to an (N, N) distance (or signed affinity) matrix.

        ``copy=False``: a float64 ``data`` may be overwritten by the affinities
        (one N x N array less; the caller gives it up).
        """
        if not isinstance(self.center, (bool, np.bool_)):
            raise TypeError(f"center must be a bool, got {self.center!r}.")
        w, self.scale_ = similarity_from_distances(data, self.similarity, self.scale,
                                                   return_scale=True, copy=copy)
        self.offset_ = 0.0
        if self.similarity == "exp" and self.center and w.shape[0] > 1:
            self.offset_ = mean_off_diagonal(w)
            w -= self.offset_  # w is a fresh array (or given up): no N x N copy
            np.fill_diagonal(w, 0.0)
        self.affinity_ = w
        self.n_items_ = w.shape[0]
        return self

    def split_log_potential(self, left, right):
        left = np.asarray(left, dtype=np.int64)
        right = np.asarray(right, dtype=np.int64)
        w = self.affinity_
        across = w[np.ix_(left, right)]
        energy = float(np.clip(across, 0, None).sum())
        for side in (left, right):
            block = w[np.ix_(side, side)]
            energy += float(np.clip(-np.triu(block, 1), 0, None).sum())
        return -energy

    def kernel_inputs(self, beta=1.0):
        n = self.n_items_
        stats = np.empty((2, 1 << n))
        stats[0] = subset_pair_sums(np.clip(self.affinity_, 0, None))
        stats[1] = subset_pair_sums(np.clip(-self.affinity_, 0, None))
        return SplitKernelInputs(hcc_split, np.array([float(beta)]), stats)

    def family_kernel_inputs(self, family, beta=1.0):
        self._check_family(family)
        stats = np.empty((2, family.n_vertices))
        stats[0] = family_pair_sums(self.affinity_, family, part="positive")
        stats[1] = family_pair_sums(self.affinity_, family, part="negative")
        return SplitKernelInputs(hcc_split, np.array([float(beta)]), stats)

    def _new_affinities(self, new_data):
        return new_item_similarities(new_data, self.similarity, self.scale_,
                                     self.n_items_) - self.offset_

    def insertion_inputs(self, family, fitted, new_data):
        # P and M of S + x add the positive / negative parts of w_ix over S
        w = self._new_affinities(new_data)
        m = w.shape[0]
        joined = np.empty((m, 2, family.n_vertices))
        joined[:, 0] = fitted.stats[0] + family_item_sums_per_row(
            np.clip(w, 0, None), family)
        joined[:, 1] = fitted.stats[1] + family_item_sums_per_row(
            np.clip(-w, 0, None), family)
        alone = np.zeros((m, 2))
        return InsertionInputs(np.tile(fitted.params, (m, 1)), joined, alone)

    def with_new_item(self, new_row):
        w = self._new_affinities(np.asarray(new_row, dtype=np.float64).reshape(1, -1))[0]
        n = self.n_items_
        enlarged = np.zeros((n + 1, n + 1))
        enlarged[:n, :n] = self.affinity_
        enlarged[n, :n] = enlarged[:n, n] = w
        return HCCEnergy(similarity="precomputed").fit(enlarged)

    def separable_form(self, beta=1.0):
        # psi = -P(S) + (P(L) - M(L)) + (P(R) - M(R))
        stats = self.kernel_inputs().stats
        scale = np.full(self.n_items_ + 1, float(beta))
        return stats[0] - stats[1], scale, -float(beta) * stats[0]


__all__ = ["HCCEnergy", "hcc_split"]
