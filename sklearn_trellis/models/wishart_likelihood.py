"""The Wishart block model of (fast)TIWD as a cluster likelihood of the collapsed Gibbs engine.

The formulas (the collapsed likelihood, the posteriors of ``scale`` and ``theta``)
are those of :mod:`.wishart`; this module adapts them to the engine's protocol
(:mod:`.likelihood`).
"""

import numpy as np

from .._core.interpreted import call
from .._core.validation import check_scalar_param, writeable_if_small
from . import _tiwd_kernels as _tk
from .likelihood import ClusterLikelihood, GibbsKernels
from .wishart import (centred_log_pdet, collapsed_log_likelihood, dof_log_likelihood_of_terms,
                      dof_log_terms, log_likelihood_exponent, scale_posterior, scale_summary, theta_log_weights,
                      translation_invariant_terms, wishart_terms)

DEFAULT_THETA_GRID = np.geomspace(1e-3, 10.0, 81)

#: Initial width (in ``log dof``) of the slice sampler's interval and its most steps out.
DOF_SLICE_WIDTH = 0.1
DOF_SLICE_STEPS = 20

#: Up to this many clusters, ``refresh_work`` runs the kernel's own Python source
#: (:mod:`~sklearn_trellis._core.interpreted`; ``O(K^2)`` products and sums in the kernel's
#: order and ``math.log``, the C library's as in numba: the same values bit for bit),
#: about 0.02 ms at 3 clusters, against 0.4 s of CPU to compile in a first fit.
INTERPRETED_REFRESH_CLUSTERS = 50


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
    learn_dof : bool, default=False
        True: ``dof`` is only the starting value; after each ``theta`` draw
        ``dof`` is redrawn from its exact conditional ``p(dof | B, theta, S)``
        by slice sampling ``log dof`` (Neal 2003) under a flat prior on ``log
        dof`` over the Wishart's support ``dof > r - 1`` (``r = n``, or ``n - 1``
        in translation-invariant mode), with the complete likelihood
        :func:`.wishart.dof_log_likelihood` (``O(K^2 + n)`` per evaluation).
        It needs ``log pdet`` of the (centred) matrix, one ``O(n^3)``
        Cholesky factorisation in :meth:`fit`; when the matrix is singular
        (points in fewer than ``r`` dimensions: no Wishart with ``dof > r - 1``
        has a density there) ``dof`` stays fixed and ``learns_dof_`` is False.
        The ``dof``-only terms are then part of the kernels' log-likelihood
        (``params[8]``), so log joints compare states of different ``dof``.

    Attributes
    ----------
    n_items_ : int
    trace_ : float
        ``tr S``.
    theta_grid_ : ndarray
    n_features_in_ : int
    learns_dof_ : bool
        Whether ``dof`` is sampled (``learn_dof`` and a non-singular matrix).
    log_pdet_ : float or None
        :func:`.wishart.centred_log_pdet` of the matrix (None unless ``learn_dof``).
    rank_ : int
        ``r``: ``n``, or ``n - 1`` in translation-invariant mode.
    """

    kernels = GibbsKernels(
        _tk.wishart_reset, _tk.wishart_prepare, _tk.wishart_add,
        _tk.wishart_remove, _tk.wishart_log_predictive, _tk.wishart_log_cluster,
        _tk.wishart_log_global, _tk.wishart_refresh)
    factorizes = False
    n_stats = 4

    @property
    def nonlocal_state(self):
        """In translation-invariant mode: the cross-block sums live in ``work`` and a move
        changes every slot's ``v`` (split-merge restores them all on a rejection)."""
        return bool(self.translation_invariant)

    @property
    def n_shared(self):
        """Running sums, cached log-likelihood and a ``log(1 + m theta)`` table (``m = 0..n``)."""
        return _tk.SHARED_HEADER + self.n_items_ + 1

    def __init__(self, dof=1.0, r0=0.01, s0=0.01, scale=None, theta=None, theta_grid=None,
                 translation_invariant=False, learn_dof=False):
        self.dof = dof
        self.learn_dof = learn_dof
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
        self.rank_ = self.n_items_ - bool(self.translation_invariant)
        self.log_pdet_ = (centred_log_pdet(S, translation_invariant=bool(self.translation_invariant))
                          if self.learn_dof else None)
        self.learns_dof_ = self.log_pdet_ is not None
        return self

    def initial_dof(self):
        """``dof``, moved inside the support ``dof > r - 1`` when it is learned."""
        if self.learns_dof_:
            return max(float(self.dof), self.rank_ + 1.0)
        return float(self.dof)

    def dof_log_terms(self, dof):
        """:func:`.wishart.dof_log_terms` of this matrix (0 unless ``dof`` is learned)."""
        if not self.learns_dof_:
            return 0.0
        return dof_log_terms(dof, rank=self.rank_, log_pdet=self.log_pdet_, r0=float(self.r0),
                             s0=float(self.s0), scale=self.scale)

    def initial_theta(self):
        """``theta`` if fixed, else the geometric middle of the grid."""
        if self.theta is not None:
            return float(self.theta)
        grid = self.theta_grid_
        return float(grid[np.argmin(np.abs(np.log(grid) - np.log(grid).mean()))])

    def kernel_params(self, theta=None, dof=None):
        """``[theta, dof, a, s0, 1 / scale, tr S, translation invariant, n, dof-only terms]``.

        ``theta``/``dof`` None: :meth:`initial_theta`/:meth:`initial_dof`. The
        last entry is :meth:`dof_log_terms` (0 unless ``dof`` is learned).
        """
        theta = self.initial_theta() if theta is None else float(theta)
        dof = self.initial_dof() if dof is None else float(dof)
        inv_scale = 0.0 if self.scale is None else 1.0 / float(self.scale)
        invariant = bool(self.translation_invariant)
        return np.array([theta, dof,
                         log_likelihood_exponent(self.n_items_ - invariant, dof, float(self.r0)),
                         float(self.s0), inv_scale, self.trace_, float(invariant),
                         float(self.n_items_), self.dof_log_terms(dof)])

    def describe_params(self, params):
        """``{'theta', 'dof'}`` of kernel parameter rows."""
        params = np.atleast_2d(params)
        return {"theta": params[:, 0], "dof": params[:, 1]}

    def kernel_data(self, X):
        """``S`` itself, float64 or float32 (kept), C-contiguous; writeable if small.

        A read-only ``S`` larger than ``READONLY_COPY_MAX_BYTES`` is used in place
        (:func:`.writeable_if_small`).
        """
        S = np.asarray(X)
        dtype = S.dtype if S.dtype in (np.float32, np.float64) else np.float64
        return writeable_if_small(np.require(S, dtype=dtype, requirements=["C"]))

    def work_size(self, capacity):
        """The cross-block sums (translation-invariant mode), the row block sums' banks, ``rho``."""
        # the integer helper's Python source (no compilation)
        return (_tk.cross_size.py_func(capacity, bool(self.translation_invariant))
                + _tk.N_BANKS * (capacity + 1) + 2)

    def grow_work(self, work, old_capacity, new_capacity):
        """Keep the cross-block sums (their triangular index does not depend on the capacity)."""
        grown = np.zeros(self.work_size(new_capacity))
        kept = _tk.cross_size.py_func(old_capacity, bool(self.translation_invariant))
        grown[:kept] = work[:kept]
        return grown

    def refresh_work(self, params, stats, shared, work, active, n_active):
        """Recompute the terms of ``q = w^T M w`` at the current ``theta`` (``O(K^2)``)."""
        call(_tk.refresh_cross, params, stats, shared, work, active, n_active,
             small=n_active <= INTERPRETED_REFRESH_CLUSTERS)

    def cross_sums(self, stats, work, active):
        """The ``K x K`` cross-block sums of the active slots from the scratch vector."""
        active = np.asarray(active, dtype=np.int64)
        high = np.maximum.outer(active, active)
        low = np.minimum.outer(active, active)
        cross = work[np.where(high > low, high * (high - 1) // 2 + low, 0)]
        cross[np.diag_indices(active.size)] = stats[active, 1]
        return cross

    def theta_log_weights(self, sizes, sbars, cross=None, dof=None):
        """Normalised log posterior of ``theta`` over ``theta_grid_`` given a partition (developer notes, fastTIWD (d)).

        ``cross``: the partition's cross-block sums, needed (and used) in
        translation-invariant mode only. ``dof``: None means the ``dof`` parameter.
        """
        dof = float(self.dof) if dof is None else float(dof)
        return theta_log_weights(sizes, sbars, self.trace_, self.n_items_, self.theta_grid_,
                                 dof=dof, r0=float(self.r0), s0=float(self.s0),
                                 scale=self.scale,
                                 cross=cross if self.translation_invariant else None)

    def resample_state_params(self, state, random_state):
        """:meth:`resample_params` with the state's cross-block sums (in ``work``)."""
        return self.resample_params(state.params, state.stats, state.shared, state.counts,
                                    state.active[:state.meta[0]], random_state, work=state.work)

    def resample_params(self, params, stats, shared, counts, active, random_state, work=None):
        """Draw ``theta`` from its grid posterior given the blocks (``O(G K)``; ``O(G K^2)``
        in translation-invariant mode, which needs the state's ``work``), then ``dof``
        given the blocks and the new ``theta`` when it is learned."""
        if self.theta is not None and not self.learns_dof_:
            return None
        cross = None
        if self.translation_invariant:
            cross = self.cross_sums(stats, work, active)
        sizes, sbars = stats[active, 0], stats[active, 1]
        theta, dof = float(params[0]), float(params[1])
        if self.theta is None:
            probs = np.exp(self.theta_log_weights(sizes, sbars, cross, dof=dof))
            index = int(np.searchsorted(np.cumsum(probs), random_state.random_sample()))
            theta = float(self.theta_grid_[min(index, probs.size - 1)])
        if self.learns_dof_:
            dof = self._slice_dof(dof, sizes, sbars, cross, theta, random_state)
        return self.kernel_params(theta=theta, dof=dof)

    def dof_log_likelihood(self, dof, sizes, sbars, theta, cross=None):
        """The complete ``log p(S | B, theta, dof)`` (:func:`.wishart.dof_log_likelihood`)."""
        extra = self.dof_log_terms(dof)
        if not np.isfinite(extra):
            return -np.inf
        return float(collapsed_log_likelihood(
            sizes, sbars, self.trace_, self.n_items_, theta, dof=dof, r0=float(self.r0),
            s0=float(self.s0), scale=self.scale,
            cross=cross if self.translation_invariant else None)) + extra

    def _slice_dof(self, dof, sizes, sbars, cross, theta, random_state):
        """One slice-sampling update of ``u = log dof`` (flat prior on ``u``), stepping out
        and shrinkage (Neal 2003): it leaves ``p(dof | B, theta, S)`` invariant. The
        partition enters through ``(T, L)`` at ``theta``, computed once (``O(r)`` per
        evaluation after that)."""
        if self.translation_invariant:
            t_value, l_value = translation_invariant_terms(sizes, cross, self.trace_, theta)
        else:
            t_value, l_value = wishart_terms(sizes, sbars, self.trace_, theta)
        t_value, l_value = float(t_value), float(l_value)
        r0, s0 = float(self.r0), float(self.s0)

        def log_density(u):
            return dof_log_likelihood_of_terms(np.exp(u), t_value, l_value, rank=self.rank_,
                                               log_pdet=self.log_pdet_, r0=r0, s0=s0,
                                               scale=self.scale)

        u = np.log(dof)
        level = log_density(u) + np.log(random_state.random_sample())
        left = u - DOF_SLICE_WIDTH * random_state.random_sample()
        right = left + DOF_SLICE_WIDTH
        steps_left = int(DOF_SLICE_STEPS * random_state.random_sample())
        steps_right = DOF_SLICE_STEPS - 1 - steps_left
        while steps_left > 0 and log_density(left) > level:
            left -= DOF_SLICE_WIDTH
            steps_left -= 1
        while steps_right > 0 and log_density(right) > level:
            right += DOF_SLICE_WIDTH
            steps_right -= 1
        while True:
            proposal = left + (right - left) * random_state.random_sample()
            if log_density(proposal) > level:
                return float(np.exp(proposal))
            if proposal < u:
                left = proposal
            else:
                right = proposal

    def scale_posterior(self, sizes, sbars, theta, cross=None, dof=None):
        """``(shape, scale)`` of ``scale | B, theta, S ~ Inv-Gamma`` (``cross``, ``dof``: as in
        :meth:`theta_log_weights`)."""
        if self.translation_invariant:
            t_value, _ = translation_invariant_terms(sizes, cross, self.trace_, theta)
        else:
            t_value, _ = wishart_terms(sizes, sbars, self.trace_, theta)
        return scale_posterior(float(t_value), self.n_items_ - bool(self.translation_invariant),
                               dof=float(self.dof) if dof is None else float(dof),
                               r0=float(self.r0), s0=float(self.s0))

    def scale_mean(self, sizes, sbars, theta, cross=None, dof=None):
        """``E[scale | B, theta, S]`` given the blocks' sizes and sums (``scale`` itself if fixed)."""
        if self.scale is not None:
            return float(self.scale)
        shape, ig_scale = self.scale_posterior(sizes, sbars, theta, cross, dof)
        return ig_scale / (shape - 1.0)

    def scale_summary(self, sizes, sbars, theta, cross=None, dof=None):
        """:func:`scale_summary` of the posterior of ``scale`` given the blocks and ``theta``."""
        if self.scale is not None:
            return scale_summary(theta, fixed=self.scale)
        return scale_summary(theta,
                             posterior=self.scale_posterior(sizes, sbars, theta, cross, dof))


__all__ = ["WishartBlockLikelihood", "DEFAULT_THETA_GRID"]
