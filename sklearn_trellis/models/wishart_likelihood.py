"""The Wishart block model of (fast)TIWD as a cluster likelihood of the collapsed Gibbs engine.

The formulas (the collapsed likelihood, the posteriors of ``scale`` and ``theta``)
are those of :mod:`.wishart`; this module adapts them to the engine's protocol
(:mod:`.likelihood`).
"""

import numpy as np

from .._core.validation import check_scalar_param
from . import _tiwd_kernels as _tk
from .likelihood import ClusterLikelihood, GibbsKernels
from .wishart import (log_likelihood_exponent, scale_posterior, scale_summary, theta_log_weights,
                      translation_invariant_terms, wishart_terms)

DEFAULT_THETA_GRID = np.geomspace(1e-3, 10.0, 81)


class WishartBlockLikelihood(ClusterLikelihood):
    """The Wishart block likelihood of fastTIWD as a plug-in of the collapsed Gibbs engine.

    Fitted on an inner-product matrix ``S`` (for distances, the normalised
    ``S*`` of :mod:`.distance_normalization`). Per cluster slot it keeps
    ``n_b`` and ``Sbar_b``; the running sums ``sum_b theta Sbar_b / (1 + n_b
    theta)`` and ``sum_b log(1 + n_b theta)`` are the shared statistics, so
    the conditional of one item costs ``O(n)`` for its row block sums plus
    ``O(1)`` per candidate block, ``O(n^2)`` per sweep (developer notes, fastTIWD (c)). The whole
    likelihood is the engine's ``log_global`` (it does not split over blocks
    once ``scale`` is integrated out). ``theta`` is resampled on its grid once
    per sweep (developer notes, fastTIWD (d)) through :meth:`resample_params`.

    Parameters
    ----------
    dof : float, default=1.0
        Wishart degrees of freedom ``d``.
    r0, s0 : float, default=0.01
        ``scale ~ Inv-Gamma(r0 d / 2, s0 d / 2)``; ``0`` gives the improper
        ``1 / scale`` prior.
    scale : float or None, default=None
        ``None`` integrates ``scale`` out (eq. 7); a number holds it fixed.
    theta : float or None, default=None
        ``None`` samples ``theta`` on ``theta_grid`` (starting from the grid's
        geometric middle); a number holds it fixed.
    theta_grid : array-like or None, default=None
        Positive grid, uniform prior; ``None`` means ``geomspace(1e-3, 10, 81)``.
    translation_invariant : bool, default=False
        True: the likelihood of the *distances* behind ``S``, which see ``S``
        only up to a translation (TIWD; :func:`.wishart.translation_invariant_terms`):
        ``Psi`` becomes ``Psi - Psi 1 1^T Psi / (1^T Psi 1)``. It needs the
        cross-block sums ``M_bc = 1_b^T S 1_c``: they are kept in the scratch
        vector (``K (K - 1) / 2`` numbers for ``K`` cluster slots) and updated in
        ``O(K)`` when an item moves; a candidate block still costs ``O(1)``.
        False: ``S`` itself is Wishart (inner products of zero-mean rows).

    Attributes
    ----------
    n_items_ : int
    trace_ : float
        ``tr S``.
    theta_grid_ : ndarray
    n_features_in_ : int
    """

    kernels = GibbsKernels(
        _tk.wishart_reset, _tk.wishart_prepare, _tk.wishart_add,
        _tk.wishart_remove, _tk.wishart_log_predictive, _tk.wishart_log_cluster,
        _tk.wishart_log_global, _tk.wishart_refresh)
    factorizes = False
    n_stats = 4

    @property
    def supports_split_merge(self):
        """Not in translation-invariant mode: the cross-block sums live in ``work``."""
        return not self.translation_invariant

    @property
    def n_shared(self):
        """Running sums, cached log-likelihood and a ``log(1 + m theta)`` table (``m = 0..n``)."""
        return _tk.SHARED_HEADER + self.n_items_ + 1

    def __init__(self, dof=1.0, r0=0.01, s0=0.01, scale=None, theta=None, theta_grid=None,
                 translation_invariant=False):
        self.dof = dof
        self.r0 = r0
        self.s0 = s0
        self.scale = scale
        self.theta = theta
        self.theta_grid = theta_grid
        self.translation_invariant = translation_invariant

    def fit(self, X, y=None):
        """Bind to a square inner-product matrix (float64 or float32, not copied)."""
        check_scalar_param(self.dof, "dof", low=0.0, include_low=False)
        check_scalar_param(self.r0, "r0", low=0.0)
        check_scalar_param(self.s0, "s0", low=0.0)
        check_scalar_param(self.scale, "scale", low=0.0, include_low=False, allow_none=True)
        check_scalar_param(self.theta, "theta", low=0.0, include_low=False, allow_none=True)
        if (self.r0 == 0) != (self.s0 == 0):
            raise ValueError("r0 and s0 must both be positive or both be 0 (improper prior), "
                             f"got r0={self.r0!r}, s0={self.s0!r}.")
        grid = DEFAULT_THETA_GRID if self.theta_grid is None else np.asarray(
            self.theta_grid, dtype=np.float64).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError("theta_grid must be a non-empty array of positive finite values.")
        S = np.asarray(X)
        if S.ndim != 2 or S.shape[0] != S.shape[1]:
            raise ValueError(f"X must be a square inner-product matrix, got shape {S.shape}.")
        self.theta_grid_ = np.sort(grid)
        self.n_items_ = S.shape[0]
        self.n_features_in_ = S.shape[1]
        self.trace_ = float(np.trace(S, dtype=np.float64))
        return self

    def initial_theta(self):
        """``theta`` if fixed, else the geometric middle of the grid."""
        if self.theta is not None:
            return float(self.theta)
        grid = self.theta_grid_
        return float(grid[np.argmin(np.abs(np.log(grid) - np.log(grid).mean()))])

    def kernel_params(self, theta=None):
        theta = self.initial_theta() if theta is None else float(theta)
        inv_scale = 0.0 if self.scale is None else 1.0 / float(self.scale)
        invariant = bool(self.translation_invariant)
        return np.array([theta, float(self.dof),
                         log_likelihood_exponent(self.n_items_ - invariant, float(self.dof),
                                                 float(self.r0)),
                         float(self.s0), inv_scale, self.trace_, float(invariant),
                         float(self.n_items_)])

    def describe_params(self, params):
        """``{'theta'}`` of kernel parameter rows."""
        return {"theta": np.atleast_2d(params)[:, 0]}

    def kernel_data(self, X):
        """``S`` itself, float64 or float32 (kept), C-contiguous and writeable."""
        S = np.asarray(X)
        dtype = S.dtype if S.dtype in (np.float32, np.float64) else np.float64
        return np.require(S, dtype=dtype, requirements=["C", "W"])

    def work_size(self, capacity):
        """The cross-block sums (translation-invariant mode), the row block sums' banks, ``rho``."""
        return (_tk.cross_size(capacity, bool(self.translation_invariant))
                + _tk.N_BANKS * (capacity + 1) + 2)

    def grow_work(self, work, old_capacity, new_capacity):
        """Keep the cross-block sums (their triangular index does not depend on the capacity)."""
        grown = np.zeros(self.work_size(new_capacity))
        kept = _tk.cross_size(old_capacity, bool(self.translation_invariant))
        grown[:kept] = work[:kept]
        return grown

    def refresh_work(self, params, stats, shared, work, active, n_active):
        """Recompute the terms of ``q = w^T M w`` at the current ``theta`` (``O(K^2)``)."""
        _tk.refresh_cross(params, stats, shared, work, active, n_active)

    def cross_sums(self, stats, work, active):
        """The ``K x K`` cross-block sums of the active slots from the scratch vector."""
        active = np.asarray(active, dtype=np.int64)
        high = np.maximum.outer(active, active)
        low = np.minimum.outer(active, active)
        cross = work[np.where(high > low, high * (high - 1) // 2 + low, 0)]
        cross[np.diag_indices(active.size)] = stats[active, 1]
        return cross

    def theta_log_weights(self, sizes, sbars, cross=None):
        """Normalised log posterior of ``theta`` over ``theta_grid_`` given a partition (developer notes, fastTIWD (d)).

        ``cross``: the partition's cross-block sums, needed (and used) in
        translation-invariant mode only.
        """
        return theta_log_weights(sizes, sbars, self.trace_, self.n_items_, self.theta_grid_,
                                 dof=float(self.dof), r0=float(self.r0), s0=float(self.s0),
                                 scale=self.scale,
                                 cross=cross if self.translation_invariant else None)

    def resample_state_params(self, state, random_state):
        """:meth:`resample_params` with the state's cross-block sums (in ``work``)."""
        return self.resample_params(state.params, state.stats, state.shared, state.counts,
                                    state.active[:state.meta[0]], random_state, work=state.work)

    def resample_params(self, params, stats, shared, counts, active, random_state, work=None):
        """Draw ``theta`` from its grid posterior given the blocks (``O(G K)``; ``O(G K^2)``
        in translation-invariant mode, which needs the state's ``work``)."""
        if self.theta is not None:
            return None
        cross = None
        if self.translation_invariant:
            cross = self.cross_sums(stats, work, active)
        probs = np.exp(self.theta_log_weights(stats[active, 0], stats[active, 1], cross))
        index = int(np.searchsorted(np.cumsum(probs), random_state.random_sample()))
        new = np.array(params, dtype=np.float64)
        new[0] = self.theta_grid_[min(index, probs.size - 1)]
        return new

    def scale_posterior(self, sizes, sbars, theta, cross=None):
        """``(shape, scale)`` of ``scale | B, theta, S ~ Inv-Gamma`` (``cross``: as in
        :meth:`theta_log_weights`)."""
        if self.translation_invariant:
            t_value, _ = translation_invariant_terms(sizes, cross, self.trace_, theta)
        else:
            t_value, _ = wishart_terms(sizes, sbars, self.trace_, theta)
        return scale_posterior(float(t_value), self.n_items_ - bool(self.translation_invariant),
                               dof=float(self.dof), r0=float(self.r0), s0=float(self.s0))

    def scale_mean(self, sizes, sbars, theta, cross=None):
        """``E[scale | B, theta, S]`` given the blocks' sizes and sums (``scale`` itself if fixed)."""
        if self.scale is not None:
            return float(self.scale)
        shape, ig_scale = self.scale_posterior(sizes, sbars, theta, cross)
        return ig_scale / (shape - 1.0)

    def scale_summary(self, sizes, sbars, theta, cross=None):
        """:func:`scale_summary` of the posterior of ``scale`` given the blocks and ``theta``."""
        if self.scale is not None:
            return scale_summary(theta, fixed=self.scale)
        return scale_summary(theta, posterior=self.scale_posterior(sizes, sbars, theta, cross))


__all__ = ["WishartBlockLikelihood", "DEFAULT_THETA_GRID"]
