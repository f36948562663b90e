"""Collapsed Gibbs state of the Wishart block model: ``O(n^2)`` sweeps and ``theta`` on a grid.

:class:`WishartGibbsState` holds one chain's partition (with the per-block
sufficient statistics ``n_b`` and ``Sbar_b``) and ``theta``. A sweep resamples
every free item's block from its exact conditional (spec §c, kernel in
``_tiwd_kernels``), then ``theta`` from its grid posterior (spec §d). Items
with a known label are clamped (spec §g): they never move, and their class
blocks never empty. ``alpha`` is integrated out unless a fixed value is given.
"""

import numpy as np
from scipy.special import logsumexp

from . import _tiwd_kernels as kernels
from .wishart import (alpha_posterior, collapsed_log_likelihood, log_likelihood_exponent,
                      partition_log_prior, wishart_terms)


def canonical_labels(labels):
    """Relabel ``0..K-1`` in order of first appearance."""
    labels = np.asarray(labels)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


class WishartGibbsState:
    """One Gibbs chain of the Wishart block model on an inner-product matrix.

    Parameters
    ----------
    S : ndarray of shape (n, n), float64 or float32
        Inner products (not copied).
    labels : ndarray of shape (n,)
        Initial partition (any integer labels).
    clamped : ndarray of bool, shape (n,), or None
        Items whose block is fixed.
    theta_grid : ndarray of shape (G,)
        Positive grid of ``theta`` values.
    theta : float
        Initial ``theta``.
    sample_theta : bool
        Resample ``theta`` on the grid after every sweep.
    dof, r0, s0, concentration, n_blocks, alpha, theta_log_prior
        Model hyperparameters (``n_blocks=None``: Ewens; ``alpha=None``: integrated).
    """

    def __init__(self, S, labels, *, clamped=None, theta_grid, theta, sample_theta=True,
                 dof, r0, s0, concentration, n_blocks=None, alpha=None,
                 theta_log_prior=None):
        self.S = S
        n = S.shape[0]
        self.n_items = n
        self.trace = float(np.trace(S, dtype=np.float64))
        self.dof, self.r0, self.s0 = float(dof), float(r0), float(s0)
        self.concentration = float(concentration)
        self.n_blocks = n_blocks
        self.alpha = alpha
        self.exponent = log_likelihood_exponent(n, self.dof, self.r0)
        self.theta_grid = np.asarray(theta_grid, dtype=np.float64)
        self.theta_log_prior = theta_log_prior
        self.theta = float(theta)
        self.sample_theta = sample_theta
        self.clamped = np.zeros(n, bool) if clamped is None else np.asarray(clamped, bool)
        self.free = np.flatnonzero(~self.clamped)
        self._row = np.empty(n)
        self._logits = np.empty(n + 1)
        self.set_labels(labels)

    def set_labels(self, labels):
        """Reset the partition and recompute the block statistics from scratch (``O(n^2)``)."""
        z = canonical_labels(labels)
        n = self.n_items
        k = int(z.max()) + 1
        self.z = z.astype(np.int64)
        self.sizes = np.zeros(n)
        self.sbars = np.zeros(n)
        self.sizes[:k] = np.bincount(z, minlength=k)
        for b in range(k):
            members = np.flatnonzero(z == b)
            self.sbars[b] = float(np.sum(self.S[np.ix_(members, members)], dtype=np.float64))
        self.slots = np.arange(n, dtype=np.int64)
        self.pos = np.arange(n, dtype=np.int64)
        self.n_clusters = k

    # -- queries -------------------------------------------------------------
    def block_stats(self):
        """``(sizes, sbars)`` of the occupied blocks."""
        occupied = self.slots[:self.n_clusters]
        return self.sizes[occupied], self.sbars[occupied]

    def labels(self):
        """The current partition, labels in order of first appearance."""
        return canonical_labels(self.z)

    def log_posterior(self):
        """``log p(B) + log p(S | B, theta)`` up to a constant (``+ log p(theta)`` on the grid)."""
        sizes, sbars = self.block_stats()
        value = partition_log_prior(sizes, self.concentration, self.n_blocks)
        value += float(collapsed_log_likelihood(sizes, sbars, self.trace, self.n_items,
                                                self.theta, dof=self.dof, r0=self.r0,
                                                s0=self.s0, alpha=self.alpha))
        if self.theta_log_prior is not None and self.sample_theta:
            value += float(self.theta_log_prior[np.argmin(np.abs(self.theta_grid - self.theta))])
        return value

    def alpha_posterior(self):
        """``(shape, scale)`` of the inverse-gamma posterior of ``alpha`` given the state."""
        sizes, sbars = self.block_stats()
        t_value, _ = wishart_terms(sizes, sbars, self.trace, self.theta)
        return alpha_posterior(float(t_value), self.n_items, dof=self.dof, r0=self.r0,
                               s0=self.s0)

    # -- moves ---------------------------------------------------------------
    def sweep(self, rng):
        """Resample every free item once (random order), then ``theta``."""
        order = self.free[rng.permutation(self.free.size)]
        uniforms = rng.random_sample(order.size)
        inv_alpha = 0.0 if self.alpha is None else 1.0 / float(self.alpha)
        inv_k = 0.0 if self.n_blocks is None else 1.0 / float(self.n_blocks)
        self.n_clusters = int(kernels.gibbs_sweep(
            self.S, self.z, self.sizes, self.sbars, self.slots, self.pos, self.n_clusters,
            order, uniforms, self.trace, self.theta, self.dof, self.exponent, self.s0,
            inv_alpha, self.concentration, inv_k, self._row, self._logits))
        if self.sample_theta:
            self.update_theta(rng)

    def theta_log_weights(self):
        """Normalised log posterior of ``theta`` over the grid given the partition."""
        sizes, sbars = self.block_stats()
        weights = collapsed_log_likelihood(sizes, sbars, self.trace, self.n_items,
                                           self.theta_grid, dof=self.dof, r0=self.r0,
                                           s0=self.s0, alpha=self.alpha)
        if self.theta_log_prior is not None:
            weights = weights + self.theta_log_prior
        return weights - logsumexp(weights)

    def update_theta(self, rng):
        """Draw ``theta`` from its grid posterior (``O(G K)``)."""
        probs = np.exp(self.theta_log_weights())
        index = int(np.searchsorted(np.cumsum(probs), rng.random_sample() * probs.sum()))
        self.theta = float(self.theta_grid[min(index, probs.size - 1)])


__all__ = ["WishartGibbsState", "canonical_labels"]
