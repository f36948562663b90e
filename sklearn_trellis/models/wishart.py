"""The Wishart block model of (fast)TIWD (Adametz & Roth 2011; spec §0, §a, §b, §d).

An inner-product matrix ``S`` (n x n, positive semi-definite) is central
Wishart with ``d`` degrees of freedom and block covariance
``Sigma = alpha (I + theta B)``, ``B`` the partition matrix. Per block ``b`` of
size ``n_b`` only ``Sbar_b = 1_b^T S 1_b`` matters::

    T_B(theta) = tr S - sum_b theta Sbar_b / (1 + n_b theta)      (alpha tr(Psi S))
    L_B(theta) = sum_b log(1 + n_b theta)                         (-log det Psi at alpha=1)
    log L      = -(n d / 2) log alpha - (d / 2) L_B - d T_B / (2 alpha)

With ``alpha ~ Inv-Gamma(r0 d / 2, s0 d / 2)`` integrated out (eq. 7)::

    log P(B | S, theta) = log p(B) - (d/2) L_B - ((n + r0) d / 2) log(T_B + s0) + const

which couples the blocks; with ``alpha`` and ``theta`` fixed the posterior
factorises over blocks, which is :class:`WishartBlockModel` (a flat model for
the exact trellis).
"""

import numpy as np
from scipy.special import gammaln, logsumexp

from ._flat import FlatModel
from .correlation import _pair_sum_table
from .._validation import check_scalar_param


def block_statistics(S, labels, n_clusters=None):
    """Sizes ``n_b`` and block sums ``Sbar_b = sum_{i,j in b} S_ij`` of a labelling.

    Parameters
    ----------
    S : ndarray of shape (n, n)
    labels : ndarray of shape (n,)
        Labels ``0..K-1``.
    n_clusters : int, default=None
        ``K``; ``labels.max() + 1`` when None.

    Returns
    -------
    sizes, sbars : ndarrays of shape (K,)
    """
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1 if n_clusters is None else int(n_clusters)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    row_sums = np.zeros((S.shape[0], k))
    for b in range(k):
        members = labels == b
        if members.any():
            row_sums[:, b] = np.asarray(S[:, members], dtype=np.float64).sum(axis=1)
    sbars = np.bincount(labels, weights=row_sums[np.arange(labels.size), labels],
                        minlength=k)
    return sizes, sbars


def wishart_terms(sizes, sbars, trace, theta):
    """``(T_B(theta), L_B(theta))`` for a scalar ``theta`` or an array of them."""
    theta = np.asarray(theta, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    sbars = np.asarray(sbars, dtype=np.float64)
    one_plus = 1.0 + np.multiply.outer(theta, sizes)
    t_value = trace - np.sum(theta[..., None] * sbars / one_plus, axis=-1)
    l_value = np.sum(np.log(one_plus), axis=-1)
    return t_value, l_value


def partition_log_prior(sizes, concentration, n_blocks=None):
    """``log p(B | xi, k)``: Dirichlet-multinomial with ``k`` blocks, or Ewens (``k = None``).

    Spec §e (eq. 3 after label forgetting); ``-inf`` when ``K > k``.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    n = sizes.sum()
    n_clusters = sizes.size
    xi = float(concentration)
    base = gammaln(xi) - gammaln(n + xi)
    if n_blocks is None:
        return float(n_clusters * np.log(xi) + base + gammaln(sizes).sum())
    k = int(n_blocks)
    if n_clusters > k:
        return -np.inf
    return float(gammaln(k + 1) - gammaln(k - n_clusters + 1) + base
                 + gammaln(sizes + xi / k).sum() - n_clusters * gammaln(xi / k))


def log_likelihood_exponent(n_items, dof, r0):
    """``a = (n + r0) d / 2``, the exponent of ``T_B + s0`` in eq. 7."""
    return 0.5 * (n_items + r0) * dof


def collapsed_log_likelihood(sizes, sbars, trace, n_items, theta, *, dof, r0=0.01, s0=0.01,
                             alpha=None):
    """Log-likelihood of a partition (up to terms free of ``B`` and ``theta``).

    ``alpha=None``: ``alpha`` integrated out (eq. 7),
    ``-(d/2) L_B - a log(T_B + s0)``; a number: ``alpha`` fixed,
    ``-(d/2) L_B - d T_B / (2 alpha)``. ``theta`` may be an array (a grid).
    """
    t_value, l_value = wishart_terms(sizes, sbars, trace, theta)
    if alpha is None:
        return -0.5 * dof * l_value - log_likelihood_exponent(n_items, dof, r0) * np.log(
            t_value + s0)
    return -0.5 * dof * l_value - 0.5 * dof * t_value / alpha


def theta_log_weights(sizes, sbars, trace, n_items, theta_grid, *, dof, r0, s0, alpha=None,
                      log_prior=None):
    """Normalised log posterior of ``theta`` over its grid given the partition (spec §d)."""
    weights = collapsed_log_likelihood(sizes, sbars, trace, n_items, theta_grid, dof=dof,
                                       r0=r0, s0=s0, alpha=alpha)
    if log_prior is not None:
        weights = weights + log_prior
    return weights - logsumexp(weights)


def alpha_posterior(t_value, n_items, *, dof, r0, s0):
    """``(shape, scale)`` of ``alpha | B, theta, S ~ Inv-Gamma`` (spec §b)."""
    return log_likelihood_exponent(n_items, dof, r0), 0.5 * dof * (t_value + s0)


def _check_common(dof, concentration):
    check_scalar_param(dof, "dof", low=0.0, include_low=False)
    check_scalar_param(concentration, "concentration", low=0.0, include_low=False)


class WishartBlockModel(FlatModel):
    """Wishart block model with ``alpha`` and ``theta`` fixed and an Ewens (CRP) prior.

    The log posterior of a partition ``B`` of the n items is, up to terms that
    depend on ``S`` only, ``log p(B | xi) + log L(B)`` with the Wishart
    likelihood of the module docstring; it is a sum of cluster
    log-potentials::

        e(b) = log xi + log Gamma(n_b) - (d/2) log(1 + n_b theta)
               + d theta Sbar_b / (2 alpha (1 + n_b theta))

    plus the constant ``log Gamma(xi) - log Gamma(n + xi) - (n d / 2) log alpha
    - d tr(S) / (2 alpha)``. (A Dirichlet-multinomial prior with finitely many
    blocks does not factorise over clusters: its ``k! / (k - K)!`` depends on
    the number of clusters.)

    Parameters
    ----------
    dof : float, default=1.0
        Wishart degrees of freedom ``d``.
    alpha : float, default=1.0
        Within-block variance ``alpha > 0``.
    theta : float, default=1.0
        Ratio of between- to within-block variance ``theta > 0``.
    concentration : float, default=1.0
        Ewens / CRP concentration ``xi``.

    Attributes
    ----------
    inner_products_ : ndarray of shape (n, n)
        The matrix ``S``.
    n_items_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import WishartBlockModel
    >>> S = np.array([[2., 1.9, 0.], [1.9, 2., 0.], [0., 0., 2.]])
    >>> model = WishartBlockModel(dof=10, alpha=0.1, theta=10.).fit(S)
    >>> bool(model.log_potential([0, 0, 1]) > model.log_potential([0, 1, 2]))
    True
    """

    def __init__(self, dof=1.0, alpha=1.0, theta=1.0, concentration=1.0):
        self.dof = dof
        self.alpha = alpha
        self.theta = theta
        self.concentration = concentration

    def fit(self, inner_products, y=None):
        """Bind the model to a symmetric (n, n) inner-product matrix."""
        _check_common(self.dof, self.concentration)
        check_scalar_param(self.alpha, "alpha", low=0.0, include_low=False)
        check_scalar_param(self.theta, "theta", low=0.0, include_low=False)
        S = np.asarray(inner_products, dtype=np.float64)
        if S.ndim != 2 or S.shape[0] != S.shape[1]:
            raise ValueError(f"inner_products must be a square matrix, got shape {S.shape}.")
        self.inner_products_ = S
        self.n_items_ = S.shape[0]
        return self

    def _block_log_potential(self, sizes, sbars):
        d, alpha, theta, xi = (float(self.dof), float(self.alpha), float(self.theta),
                               float(self.concentration))
        one_plus = 1.0 + sizes * theta
        return (np.log(xi) + gammaln(sizes) - 0.5 * d * np.log(one_plus)
                + 0.5 * d * theta * sbars / (alpha * one_plus))

    def cluster_log_potential(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        sbar = float(self.inner_products_[np.ix_(idx, idx)].sum())
        return float(self._block_log_potential(np.float64(idx.size), sbar))

    def log_potential_constant(self):
        n, d, alpha, xi = (self.n_items_, float(self.dof), float(self.alpha),
                           float(self.concentration))
        return float(gammaln(xi) - gammaln(n + xi) - 0.5 * n * d * np.log(alpha)
                     - 0.5 * d * np.trace(self.inner_products_) / alpha)

    def log_potential_table(self):
        S = self.inner_products_
        n = self.n_items_
        off = S.copy()
        np.fill_diagonal(off, 0.0)
        # Sbar(B) = 2 sum_{i<j in B} S_ij + sum_{i in B} S_ii
        sbars = _pair_sum_table(off, n, 2.0)
        masks = np.arange(1 << n)
        sizes = np.zeros(1 << n)
        for i in range(n):
            bit = (masks >> i) & 1
            sizes += bit
            sbars += S[i, i] * bit
        table = np.zeros(1 << n)
        table[1:] = self._block_log_potential(sizes[1:], sbars[1:])
        return table


__all__ = ["block_statistics", "wishart_terms", "partition_log_prior",
           "collapsed_log_likelihood", "theta_log_weights", "alpha_posterior",
           "log_likelihood_exponent", "WishartBlockModel"]
