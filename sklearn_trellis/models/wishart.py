"""The Wishart block model of (fast)TIWD (Adametz & Roth 2011; developer notes, fastTIWD (0), (a), (b), (d)).

An inner-product matrix ``S`` (n x n, positive semi-definite) is central
Wishart with ``d`` degrees of freedom and block covariance
``Sigma = scale (I + theta B)``, ``B`` the partition matrix. Per block ``b`` of
size ``n_b`` only ``Sbar_b = 1_b^T S 1_b`` matters::

    T_B(theta) = tr S - sum_b theta Sbar_b / (1 + n_b theta)      (scale tr(Psi S))
    L_B(theta) = sum_b log(1 + n_b theta)                         (-log det Psi at scale=1)
    log L      = -(n d / 2) log scale - (d / 2) L_B - d T_B / (2 scale)

With ``scale ~ Inv-Gamma(r0 d / 2, s0 d / 2)`` integrated out (eq. 7)::

    log P(B | S, theta) = log p(B) - (d/2) L_B - ((n + r0) d / 2) log(T_B + s0) + const

which couples the blocks; with ``scale`` and ``theta`` fixed the posterior
factorises over blocks, which is :class:`WishartBlockModel` (a flat model for
the exact trellis). This module holds these formulas, that flat model and the
predictive of new items; the same model as a plug-in of the collapsed Gibbs
engine is :class:`~.wishart_likelihood.WishartBlockLikelihood`.
"""

import functools

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln, logsumexp, multigammaln, polygamma

from .._core.interpreted import call
from .._core.subsets import subset_pair_sums
from .._core.validation import check_scalar_param
from . import _tiwd_kernels as _tk
from ._flat import FlatModel
from .priors import make_prior


#: Up to this many items the ``O(n^2)`` block and column sums of a labelling run
#: their kernels' own Python source (:mod:`~sklearn_trellis._core.interpreted`:
#: the same float additions in the same order): a few milliseconds at 40 items,
#: against about 0.6 s of compilation in a first fit.
INTERPRETED_BLOCK_ITEMS = 100


def _label_column_sums(S, labels, n_slots):
    """``_tk.label_column_sums`` (each term is added to a float64 entry: any ``S`` dtype)."""
    return call(_tk.label_column_sums, S, labels, n_slots,
                small=labels.shape[0] <= INTERPRETED_BLOCK_ITEMS)


def _labels_and_count(labels, n_clusters):
    """``labels`` as contiguous int64 and ``K`` (``labels.max() + 1`` when ``n_clusters`` is None)."""
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    return labels, int(labels.max()) + 1 if n_clusters is None else int(n_clusters)


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
    labels, k = _labels_and_count(labels, n_clusters)
    sizes = np.zeros(k)
    sbars = np.zeros(k)
    # interpreted: float64 only (a Python float plus a float32 scalar is a float32 in NumPy)
    call(_tk.block_sums, S, labels, k, sizes, sbars,
         small=labels.shape[0] <= INTERPRETED_BLOCK_ITEMS and S.dtype == np.float64)
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


def block_cross_sums(S, labels, n_clusters=None):
    """The ``K x K`` cross-block sums ``M_bc = 1_b^T S 1_c`` of a labelling (``O(n^2 + n K)``).

    Parameters
    ----------
    S, labels, n_clusters
        As in :func:`block_statistics`.

    Returns
    -------
    cross : ndarray of shape (K, K)
        Its diagonal is the ``sbars`` of :func:`block_statistics`.
    """
    labels, k = _labels_and_count(labels, n_clusters)
    columns = _label_column_sums(S, labels, k)
    return np.stack([np.bincount(labels, weights=columns[b], minlength=k) for b in range(k)])


def translation_invariant_terms(sizes, cross, trace, theta):
    """``(T~_B(theta), L~_B(theta))`` of the translation-invariant likelihood (developer notes, fastTIWD (f)).

    Distances determine ``S`` only up to ``S + 1 u^T + u 1^T``; their
    likelihood (TIWD, Vogt et al. 2010) is that of ``L S L^T ~ W_d(L Sigma
    L^T)`` for a contrast ``L`` (orthonormal rows orthogonal to ``1``), i.e. the
    Wishart terms with ``Psi~ = Psi - Psi 1 1^T Psi / (1^T Psi 1)`` in place of
    ``Psi = Sigma^-1``. For ``Sigma = scale (I + theta B)``, with ``w_b = 1 / (1
    + n_b theta)`` (``scale Psi 1 = w`` blockwise), ``sigma = sum_b n_b w_b``
    and ``q = sum_bc w_b M_bc w_c``::

        scale tr(Psi~ S)     = T_B(theta) - q / sigma                   = T~_B
        -log pdet Psi~ (scale = 1) = L_B(theta) + log(sigma / n)        = L~_B

    and ``scale`` has exponent ``(n - 1) d / 2``. ``theta`` may be an array.

    Examples
    --------
    One block: the translation removes the block's own variance, so ``theta``
    drops out and ``T~`` is the centred trace ``tr S - 1^T S 1 / n``.

    >>> T, L = translation_invariant_terms([2], [[7.0]], 5.0, theta=np.array([0.5, 3.0]))
    >>> np.allclose(T, 5.0 - 7.0 / 2), np.allclose(L, 0.0)
    (True, True)
    """
    theta = np.asarray(theta, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    cross = np.asarray(cross, dtype=np.float64)
    t_value, l_value = wishart_terms(sizes, np.diag(cross), trace, theta)
    w = 1.0 / (1.0 + np.multiply.outer(theta, sizes))
    q = np.einsum("...b,bc,...c->...", w, cross, w)
    sigma = np.sum(w * sizes, axis=-1)
    return t_value - q / sigma, l_value + np.log(sigma / sizes.sum())


def partition_log_prior(sizes, alpha, n_blocks=None):
    """``log p(B | alpha, k)`` (developer notes, fastTIWD (e)): Dirichlet-multinomial with ``k`` blocks, Ewens if ``k = None``.

    A thin wrapper of the shared priors of :mod:`sklearn_trellis.models.priors`.
    """
    return make_prior(alpha, n_components=n_blocks).log_eppf(sizes)


def estimate_dof(S, chunk=2048):
    """Moment estimate of the Wishart degrees of freedom ``d`` from ``S`` (``O(n^2)``, no copy).

    For ``S ~ W_d(Sigma)`` / d, ``Var(S_ij) = (Sigma_ii Sigma_jj + Sigma_ij^2) / d``;
    plugging ``S`` in for ``Sigma`` and pooling the off-diagonal entries gives
    ``d_hat = mean(S_ii S_jj + S_ij^2) / var(S_ij)``. The block structure adds
    variance to the off-diagonal entries, so ``d_hat`` errs low (about 0.8 d
    on the benchmark of :func:`~sklearn_trellis.datasets.make_wishart_blocks`),
    i.e. towards a warmer, more exploratory chain.
    """
    n = S.shape[0]
    if n < 2:
        return 1.0
    # The estimate is scale free; scale by a power of two (exact) so that the
    # squares neither overflow nor underflow whatever the data's units.
    top = max(float(np.max(S)), -float(np.min(S)))
    if not top > 0 or not np.isfinite(top):
        return 1.0
    exponent = int(np.frexp(top)[1])
    diag = np.ldexp(np.diag(S).astype(np.float64), -exponent)
    total = total_sq = 0.0
    for start in range(0, n, chunk):
        block = np.ldexp(np.asarray(S[start:start + chunk], dtype=np.float64), -exponent)
        total += float(block.sum())
        total_sq += float(np.einsum("ij,ij->", block, block))
    pairs = n * (n - 1)
    off_sum = total - diag.sum()
    off_sq = total_sq - float(diag @ diag)
    mean_off = off_sum / pairs
    var_off = off_sq / pairs - mean_off ** 2
    mean_diag_products = (diag.sum() ** 2 - float(diag @ diag)) / pairs
    if not var_off > 0:
        return 1.0
    return float(max(1.0, (mean_diag_products + off_sq / pairs) / var_off))


def estimate_dof_from_distances(D, chunk=2048):
    """Moment estimate of ``d`` from squared distances: the spread of ``log D_ij`` (``O(n^2)``, no copy).

    Under the Wishart block model every squared distance is a scaled ``chi^2_d / d``
    (``2 scale chi^2_d / d`` inside a block, ``2 scale (1 + theta) chi^2_d / d``
    across), so ``log D_ij`` has variance ``psi'(d / 2)`` (``psi'`` the trigamma
    function) plus the small spread of the two log scales (``log(1 + theta)``).
    Solving ``psi'(d / 2) = var(log D_ij)`` over the pairs with ``D_ij > 0`` gives
    ``d_hat``; it errs low only by that spread (about 0.93 d on
    :func:`~sklearn_trellis.datasets.make_wishart_blocks`, where the moment
    estimate of :func:`estimate_dof` on ``S*`` gives about 0.78 d). Scale free.

    Parameters
    ----------
    D : ndarray of shape (n, n)
        Squared distances.
    chunk : int, default=2048
        Rows per pass (memory ``O(chunk n)``).

    Returns
    -------
    dof : float
        At least 1; 1 when fewer than two pairs have a positive distance.

    Examples
    --------
    >>> from sklearn_trellis.datasets import make_wishart_blocks
    >>> D = make_wishart_blocks(n_samples=200, random_state=0).distances   # d = 300
    >>> 250 < estimate_dof_from_distances(D) < 320
    True
    """
    n = D.shape[0]
    count = total = total_sq = 0.0
    for start in range(0, n, chunk):
        block = np.asarray(D[start:start + chunk], dtype=np.float64)
        upper = np.arange(n)[None, :] > np.arange(start, start + block.shape[0])[:, None]
        values = block[upper & (block > 0)]
        logs = np.log(values)
        count += logs.size
        total += float(logs.sum())
        total_sq += float(logs @ logs)
    if count < 2:
        return 1.0
    mean = total / count
    variance = max(total_sq / count - mean ** 2, 0.0)
    # psi'(a) decreases from inf (a -> 0) to 0; psi'(a) ~ 1/a + 1/(2a^2) for large a
    if not variance > polygamma(1, 5e6):
        return 1e7
    half = brentq(lambda a: float(polygamma(1, a)) - variance, 1e-8, 5e6)
    return float(max(1.0, 2.0 * half))


def centred_log_pdet(S, *, translation_invariant, tol=None):
    """``log pdet`` of the matrix whose Wishart density the likelihood is, or None if singular.

    ``translation_invariant=False``: ``log det S`` (rank ``n``);
    ``translation_invariant=True``: the log pseudo-determinant of the centred
    ``J S J`` (``J = I - 1 1^T / n``), i.e. ``log det L S L^T`` for a contrast
    ``L`` with orthonormal rows (rank ``n - 1``), the same for every ``S`` with
    the same distances. One Cholesky factorisation, ``O(n^3)`` time and an
    ``n x n`` float64 copy. None when the matrix is numerically singular
    (a pivot below ``sqrt(tol)``, ``tol`` as in :func:`new_item_data_terms`,
    or a failed factorisation): points in fewer dimensions than that rank,
    where a Wishart with more degrees of freedom than the rank has no density.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> bool(np.isclose(centred_log_pdet(S, translation_invariant=False), np.log(1.75)))
    True
    >>> centred_log_pdet(np.ones((3, 3)), translation_invariant=True) is None
    True
    """
    S = np.array(S, dtype=np.float64)
    n = S.shape[0]
    if translation_invariant:
        column_means = S.mean(axis=0)
        S -= column_means[:, None]
        S -= column_means[None, :]
        S += float(column_means.mean())
        # the null direction 1 / sqrt(n) gets the eigenvalue `level` (removed after)
        level = max(float(np.trace(S)) / max(n - 1, 1), np.finfo(np.float64).tiny)
        S += level / n
    top = float(np.max(np.abs(np.diag(S)))) if n else 0.0
    if tol is None:
        tol = 100.0 * n * np.finfo(np.float64).eps * top
    try:
        factor = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return None
    pivots = np.diag(factor)
    if not np.all(pivots ** 2 > tol):
        return None
    value = 2.0 * float(np.sum(np.log(pivots)))
    return value - np.log(level) if translation_invariant else value


def _log_multigamma(a, rank):
    """``log Gamma_r(a)`` (``scipy.special.multigammaln`` without its argument checks)."""
    offsets = _multigamma_offsets(rank)
    return 0.25 * rank * (rank - 1) * np.log(np.pi) + float(np.sum(gammaln(a + offsets)))


@functools.lru_cache(maxsize=8)
def _multigamma_offsets(rank):
    return -0.5 * np.arange(rank, dtype=np.float64)


def dof_log_terms(dof, *, rank, log_pdet, r0, s0, scale=None):
    """The terms of ``log p(S | B, theta, dof)`` that depend on ``dof`` alone.

    :func:`collapsed_log_likelihood` leaves out every term free of ``B`` and
    ``theta``; to compare ``dof`` values they are needed. With ``r`` the
    rank (``n``; ``n - 1`` for distances) and ``log_pdet`` from
    :func:`centred_log_pdet`, they are the data terms of
    :func:`data_log_density_terms` and, with ``scale`` integrated out, the
    normalisers of the inverse-gamma prior and of its posterior
    (``a = (r + r0) d / 2``)::

        ((d - r - 1) / 2) log_pdet + (d r / 2) log(d / 2) - log Gamma_r(d / 2)
        + (r0 d / 2) log(s0 d / 2) - log Gamma(r0 d / 2) + log Gamma(a) - a log(d / 2)

    (the prior's two terms are dropped for the improper ``r0 = s0 = 0``; with
    ``scale`` fixed the last four are ``-(d r / 2) log scale``). ``-inf`` for
    ``d <= r - 1``. Adding them to :func:`collapsed_log_likelihood` gives
    :func:`dof_log_likelihood`.
    """
    d = float(dof)
    if d <= rank - 1:
        return -np.inf
    value = (0.5 * (d - rank - 1.0) * log_pdet + 0.5 * d * rank * np.log(0.5 * d)
             - _log_multigamma(0.5 * d, rank))
    if scale is not None:
        return value - 0.5 * d * rank * np.log(scale)
    a = log_likelihood_exponent(rank, d, r0)
    if r0 > 0:
        value += 0.5 * r0 * d * np.log(0.5 * s0 * d) - gammaln(0.5 * r0 * d)
    return value + gammaln(a) - a * np.log(0.5 * d)


def dof_log_likelihood(dof, sizes, sbars, trace, n_items, theta, *, log_pdet, r0=0.01, s0=0.01,
                       scale=None, cross=None):
    """The complete ``log p(S | B, theta, dof)``: every term, ``scale`` integrated out or fixed.

    :func:`collapsed_log_likelihood` at ``dof`` plus :func:`dof_log_terms`
    (``cross`` given: the translation-invariant density of the distances, rank
    ``n - 1``). It is the likelihood that FastTIWD's learned ``dof`` is
    sampled from. Arguments as in :func:`collapsed_log_likelihood`;
    ``log_pdet`` from :func:`centred_log_pdet`.
    """
    if cross is None:
        t_value, l_value = wishart_terms(sizes, sbars, trace, theta)
    else:
        t_value, l_value = translation_invariant_terms(sizes, cross, trace, theta)
    return dof_log_likelihood_of_terms(dof, float(t_value), float(l_value),
                                       rank=n_items - (cross is not None), log_pdet=log_pdet,
                                       r0=r0, s0=s0, scale=scale)


def dof_log_likelihood_of_terms(dof, t_value, l_value, *, rank, log_pdet, r0, s0, scale=None):
    """:func:`dof_log_likelihood` from the partition's ``(T, L)`` (or ``(T~, L~)``) at its
    ``theta`` and the rank ``r``: ``O(r)``, the partition enters through two numbers only."""
    extra = dof_log_terms(dof, rank=rank, log_pdet=log_pdet, r0=r0, s0=s0, scale=scale)
    if not np.isfinite(extra):
        return -np.inf
    d = float(dof)
    if scale is None:
        return extra - 0.5 * d * l_value - log_likelihood_exponent(rank, d, r0) * np.log(
            t_value + s0)
    return extra - 0.5 * d * l_value - 0.5 * d * t_value / scale


def log_likelihood_exponent(n_items, dof, r0):
    """``a = (n + r0) d / 2``, the exponent of ``T_B + s0`` in eq. 7."""
    return 0.5 * (n_items + r0) * dof


def collapsed_log_likelihood(sizes, sbars, trace, n_items, theta, *, dof, r0=0.01, s0=0.01,
                             scale=None, cross=None):
    """Log-likelihood of a partition (up to terms free of ``B`` and ``theta``).

    ``scale=None``: ``scale`` integrated out (eq. 7),
    ``-(d/2) L_B - a log(T_B + s0)``; a number: ``scale`` fixed,
    ``-(d/2) L_B - d T_B / (2 scale)``. ``theta`` may be an array (a grid).
    ``cross`` (the :func:`block_cross_sums`) given: the translation-invariant
    likelihood of the distances, ``T~``, ``L~`` of
    :func:`translation_invariant_terms` and ``a = (n - 1 + r0) d / 2``.
    """
    if cross is None:
        t_value, l_value = wishart_terms(sizes, sbars, trace, theta)
    else:
        t_value, l_value = translation_invariant_terms(sizes, cross, trace, theta)
        n_items = n_items - 1
    if scale is None:
        return -0.5 * dof * l_value - log_likelihood_exponent(n_items, dof, r0) * np.log(
            t_value + s0)
    return -0.5 * dof * l_value - 0.5 * dof * t_value / scale


def theta_log_weights(sizes, sbars, trace, n_items, theta_grid, *, dof, r0, s0, scale=None,
                      log_prior=None, cross=None):
    """Normalised log posterior of ``theta`` over its grid given the partition (developer notes, fastTIWD (d))."""
    weights = collapsed_log_likelihood(sizes, sbars, trace, n_items, theta_grid, dof=dof,
                                       r0=r0, s0=s0, scale=scale, cross=cross)
    if log_prior is not None:
        weights = weights + log_prior
    return weights - logsumexp(weights)


def scale_posterior(t_value, n_items, *, dof, r0, s0):
    """``(shape, scale)`` of ``scale | B, theta, S ~ Inv-Gamma`` (developer notes, fastTIWD (b)).

    For the translation-invariant likelihood pass ``T~`` and ``n - 1``.
    """
    return log_likelihood_exponent(n_items, dof, r0), 0.5 * dof * (t_value + s0)


def scale_summary(theta, *, posterior=None, fixed=None):
    """Summary of ``scale | B, theta, S ~ Inv-Gamma(shape, scale)``, or of a fixed ``scale``.

    ``posterior`` is the ``(shape, scale)`` pair of :func:`scale_posterior`;
    ``fixed`` a number, the value of a fixed ``scale`` (then ``posterior`` is
    unused). Returns a dict with ``'shape'``, ``'scale'`` (the inverse-gamma's
    parameters), ``'mean'``, ``'std'`` and ``'beta_mean'`` = ``theta * mean``
    (the between-block variance ``beta``). A fixed ``scale`` has infinite
    shape and scale parameters and zero spread.
    """
    if fixed is None:
        shape, scale = posterior
        mean = scale / (shape - 1.0)
        std = mean / np.sqrt(shape - 2.0) if shape > 2 else np.inf
    else:
        shape = scale = np.inf
        mean, std = float(fixed), 0.0
    return dict(shape=shape, scale=scale, mean=mean, std=std, beta_mean=theta * mean)


def block_scale_means(S, labels, sizes, sbars, theta, *, dof, r0, s0):
    """Per block, the posterior mean of a block-own within-block variance ``scale_b`` (a diagnostic).

    Only the block's entries of ``S`` inform ``scale_b`` (same inverse-gamma
    prior): ``(d/2)(T_b + s0) / ((n_b + r0) d / 2 - 1)`` with
    ``T_b = tr S_bb - theta Sbar_b / (1 + n_b theta)``.

    Parameters
    ----------
    S : ndarray of shape (n, n)
    labels : ndarray of shape (n,)
        Labels ``0..K-1``.
    sizes, sbars : ndarrays of shape (K,)
        :func:`block_statistics` of ``labels``.
    theta : float
    dof, r0, s0 : float

    Returns
    -------
    means : ndarray of shape (K,)
    """
    traces = np.bincount(labels, weights=np.diag(S).astype(np.float64), minlength=sizes.size)
    t_blocks = traces - theta * sbars / (1.0 + sizes * theta)
    return 0.5 * dof * (t_blocks + s0) / (0.5 * (sizes + r0) * dof - 1.0)


class WishartBlockModel(FlatModel):
    """Partition posterior of the Wishart block model with ``scale`` and ``theta`` fixed.

    The log posterior of a partition ``B`` of the n items is, up to terms that
    depend on ``S`` only, ``log p(B | alpha, k) + log L(B)`` with the Wishart
    likelihood of the module docstring. With ``scale`` and ``theta`` fixed it
    is a sum of cluster log-potentials::

        e(b) = log_block(n_b) - (d/2) log(1 + n_b theta)
               + d theta Sbar_b / (2 scale (1 + n_b theta))

    plus the constant ``log_normaliser(n) - (n d / 2) log scale - d tr(S) / (2 scale)``
    and, for a Dirichlet-multinomial prior with ``k`` blocks, the factor
    ``log k! / (k - K)!`` of the number of blocks ``K`` (for the Ewens / CRP
    prior, ``k = None``, it is ``K log alpha`` and folds into ``e``). The prior
    factors come from :mod:`sklearn_trellis.models.priors`.

    Parameters
    ----------
    dof : float, default=1.0
        Wishart degrees of freedom ``d``.
    scale : float, default=1.0
        Within-block variance ``scale > 0``.
    theta : float, default=1.0
        Ratio of between- to within-block variance ``theta > 0``.
    alpha : float, default=1.0
        Dirichlet rate / CRP concentration ``alpha``.
    n_blocks : int or None, default=None
        Number of population blocks ``k`` of the Dirichlet-multinomial prior;
        ``None`` is its Ewens (CRP) limit.

    Attributes
    ----------
    inner_products_ : ndarray of shape (n, n)
        The matrix ``S``.
    n_items_ : int
    prior_ : PartitionPrior

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import WishartBlockModel
    >>> S = np.array([[2., 1.9, 0.], [1.9, 2., 0.], [0., 0., 2.]])
    >>> model = WishartBlockModel(dof=10, scale=0.1, theta=10.).fit(S)
    >>> bool(model.log_potential([0, 0, 1]) > model.log_potential([0, 1, 2]))
    True
    """

    def __init__(self, dof=1.0, scale=1.0, theta=1.0, alpha=1.0, n_blocks=None):
        self.dof = dof
        self.scale = scale
        self.theta = theta
        self.alpha = alpha
        self.n_blocks = n_blocks

    def fit(self, inner_products, y=None):
        """Bind the model to a symmetric (n, n) inner-product matrix."""
        check_scalar_param(self.dof, "dof", low=0.0, include_low=False)
        check_scalar_param(self.scale, "scale", low=0.0, include_low=False)
        check_scalar_param(self.theta, "theta", low=0.0, include_low=False)
        self.prior_ = make_prior(self.alpha, n_components=self.n_blocks)
        S = np.asarray(inner_products, dtype=np.float64)
        if S.ndim != 2 or S.shape[0] != S.shape[1]:
            raise ValueError(f"inner_products must be a square matrix, got shape {S.shape}.")
        self.inner_products_ = S
        self.n_items_ = S.shape[0]
        return self

    @property
    def folds_count(self):
        """True for the CRP prior, whose ``K log alpha`` folds into the clusters."""
        return self.n_blocks is None

    def _block_log_potential(self, sizes, sbars):
        d, scale, theta = float(self.dof), float(self.scale), float(self.theta)
        sizes = np.asarray(sizes, dtype=np.float64)
        one_plus = 1.0 + sizes * theta
        value = (self.prior_.log_block(sizes) - 0.5 * d * np.log(one_plus)
                 + 0.5 * d * theta * sbars / (scale * one_plus))
        if self.folds_count:
            value = value + np.log(self.prior_.alpha)
        return value

    def cluster_log_potential(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        sbar = float(self.inner_products_[np.ix_(idx, idx)].sum())
        return float(self._block_log_potential(np.array([idx.size]), sbar)[0])

    def log_potential_constant(self):
        n, d, scale = self.n_items_, float(self.dof), float(self.scale)
        return float(self.prior_.log_normaliser(n) - 0.5 * n * d * np.log(scale)
                     - 0.5 * d * np.trace(self.inner_products_) / scale)

    def log_count_table(self):
        """``log_count(K)`` of the prior for ``K = 0..n``."""
        return self.prior_.log_count_table(self.n_items_)

    def log_potential(self, labels):
        value = super().log_potential(labels)
        if not self.folds_count:
            value += self.prior_.log_count(np.unique(labels).size)
        return value

    def log_potential_table(self):
        S = self.inner_products_
        n = self.n_items_
        off = S.copy()
        np.fill_diagonal(off, 0.0)
        # Sbar(B) = 2 sum_{i<j in B} S_ij + sum_{i in B} S_ii
        sbars = subset_pair_sums(off, 2.0)
        masks = np.arange(1 << n)
        sizes = np.zeros(1 << n)
        for i in range(n):
            bit = (masks >> i) & 1
            sizes += bit
            sbars += S[i, i] * bit
        table = np.zeros(1 << n)
        table[1:] = self._block_log_potential(sizes[1:], sbars[1:])
        return table


class ClusterSums:
    """Sizes, block sums ``Sbar`` and new items' row sums of a sequence of partitions.

    The predictive of :class:`~sklearn_trellis.FastTIWD` needs, for every
    kept sample, ``n_b``, ``Sbar_b`` and ``r_b = sum_{j in b} S_xj`` of each
    new item. Successive samples of a chain differ by a few moved items, so
    the column sums ``C[b, i] = sum_{j in b} S_ij`` and the row sums are
    carried from one sample to the next: clusters are matched to the
    previous sample's by their largest overlap and only the moved items
    update them (``O((n + m)`` per moved item); a sample that moves more than
    ``n / 8`` items is summed afresh (``O(n^2)``).

    Parameters
    ----------
    S : ndarray of shape (n, n)
    rows : ndarray of shape (m, n)
        The new items' inner products with the fitted ones.
    """

    def __init__(self, S, rows):
        self.S = S
        self.rows_by_item = np.ascontiguousarray(np.asarray(rows, dtype=np.float64).T)
        self._slots = None      # slot of each item in the current partition

    def _rebuild(self, labels):
        self._slots = labels.copy()
        n_slots = int(labels.max()) + 1
        self._columns = _label_column_sums(self.S, labels, n_slots)
        # per slot, the new items' row sums (slot-major: a moved item updates two rows)
        self._row_sums = np.zeros((n_slots, self.rows_by_item.shape[1]))
        _tk.add_rows(self._row_sums, self.rows_by_item, labels)

    def _match(self, labels):
        """Slots of ``labels``' clusters: the previous slot each overlaps most, else new ones."""
        k = int(labels.max()) + 1
        n_slots = self._columns.shape[0]
        overlap = np.bincount(labels * n_slots + self._slots,
                              minlength=k * n_slots).reshape(k, n_slots)
        slot_of = np.full(k, -1, dtype=np.int64)
        taken = np.zeros(n_slots, dtype=bool)
        for c in np.argsort(-overlap.max(axis=1), kind="stable"):
            for s in np.argsort(-overlap[c], kind="stable"):
                if overlap[c, s] == 0:
                    break
                if not taken[s]:
                    slot_of[c], taken[s] = s, True
                    break
        spare = np.flatnonzero(slot_of < 0)
        slot_of[spare] = n_slots + np.arange(spare.size)
        return slot_of

    def of_labels(self, labels):
        """``(sizes (K,), sbars (K,), row_sums (m, K))`` of a labelling ``0..K-1``."""
        labels = np.asarray(labels, dtype=np.int64)
        n = labels.size
        if self._slots is None:
            self._rebuild(labels)
            slot_of = np.arange(int(labels.max()) + 1)
        else:
            slot_of = self._match(labels)
            target = slot_of[labels]
            moved = np.flatnonzero(target != self._slots)
            if moved.size > n // 8:
                self._rebuild(labels)
                slot_of = np.arange(int(labels.max()) + 1)
            elif moved.size:
                n_slots = max(self._columns.shape[0], int(slot_of.max()) + 1)
                if n_slots > self._columns.shape[0]:
                    grow = n_slots - self._columns.shape[0]
                    self._columns = np.vstack([self._columns, np.zeros((grow, n))])
                    self._row_sums = np.vstack([self._row_sums,
                                                np.zeros((grow, self._row_sums.shape[1]))])
                old, new = self._slots[moved], target[moved]
                # S is symmetric: row i of S is column i
                _tk.move_rows(self._columns, self.S, moved, old, new)
                _tk.move_rows(self._row_sums, self.rows_by_item, moved, old, new)
                self._slots = target
        slots = slot_of
        self._slot_of = slot_of
        sizes = np.bincount(labels).astype(np.float64)
        own = self._columns[self._slots, np.arange(n)]      # C[slot of i, i]
        sbars = np.bincount(labels, weights=own, minlength=sizes.size)
        return sizes, sbars, self._row_sums[slots].T

    def cross_sums(self, labels):
        """The cross-block sums ``M_bc`` of the labelling last passed to :meth:`of_labels` (``O(n K)``)."""
        labels = np.asarray(labels, dtype=np.int64)
        k = self._slot_of.size
        return np.stack([np.bincount(labels, weights=self._columns[slot], minlength=k)
                         for slot in self._slot_of])


def new_item_log_likelihoods(sizes, sbars, row_sums, self_products, trace, n_items, theta,
                             *, dof, r0, s0, scale=None, cross=None):
    """Change of the collapsed log-likelihood when a new item joins each block or a new one.

    The partition of the ``n`` fitted items is held fixed; the new item ``x``
    enlarges ``S*`` by its row ``S_x.`` and corner ``S_xx``
    (``sklearn_trellis.preprocessing.distance_normalization.new_item_inner_products``).
    Joining block ``b`` adds ``2 r_b + S_xx`` to ``Sbar_b`` (``r_b = sum_{j in
    b} S_xj``) and one to ``n_b``; ``tr S`` grows by ``S_xx`` and ``n`` by one
    (the exponent ``a = (n + r0) d / 2``). The value is the log-likelihood of
    the enlarged matrix (scale integrated out, or fixed) minus that of the
    fitted one. Included are the factors of ``scale``'s prior integral
    (``log Gamma(a) - a log(d / 2)``; with ``scale`` fixed, ``-(d / 2) log
    scale`` per item), so the value is ``log p(S_x | S*, B, theta)`` up to the
    Wishart terms of ``S`` alone (``log det S``, ``Gamma_n(d / 2)``), which
    depend on ``d`` and the data but on nothing else.

    With ``cross`` (the fitted partition's :func:`block_cross_sums`) the
    likelihood is the translation-invariant one of
    :func:`translation_invariant_terms` (``a = (n - 1 + r0) d / 2``); joining
    block ``b`` also adds the new item's ``r_c`` to ``M_bc`` and ``M_cb``.

    Parameters
    ----------
    sizes, sbars : ndarrays of shape (K,)
        ``block_statistics`` of the fitted partition.
    row_sums : ndarray of shape (m, K)
        ``r_b`` of each new item.
    self_products : ndarray of shape (m,)
        ``S_xx`` of each new item.
    trace : float
        ``tr S*``.
    n_items : int
        ``n``.
    theta : float
    dof, r0, s0 : float
    scale : float or None, default=None
    cross : ndarray of shape (K, K) or None, default=None

    Returns
    -------
    ndarray of shape (m, K + 1)
        Last column: a new block.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    sbars = np.asarray(sbars, dtype=np.float64)
    row_sums = np.asarray(row_sums, dtype=np.float64)
    sxx = np.asarray(self_products, dtype=np.float64)[:, None]
    theta = float(theta)

    def f(m, s):
        return theta * s / (1.0 + m * theta)

    t_sum = float(np.sum(f(sizes, sbars)))
    l_sum = float(np.sum(np.log1p(sizes * theta)))
    joined = np.concatenate([sbars + 2.0 * row_sums + sxx, sxx], axis=1)
    old_sizes = np.append(sizes, 0.0)
    old_sbars = np.append(sbars, 0.0)
    t_new = t_sum + f(old_sizes + 1.0, joined) - f(old_sizes, old_sbars)
    l_new = l_sum + np.log1p((old_sizes + 1.0) * theta) - np.log1p(old_sizes * theta)
    old_trace = trace - t_sum
    new_trace = trace + sxx - t_new
    n_before, n_after = n_items, n_items + 1
    if cross is not None:
        # q = w^T M w and sigma = sum_b n_b w_b after the move, from their terms in w_c
        cross = np.asarray(cross, dtype=np.float64)
        w = 1.0 / (1.0 + sizes * theta)
        v = cross @ w
        q = float(w @ v)
        sigma = float(sizes @ w)
        rho = row_sums @ w
        w_old = np.append(w, 1.0)
        w_new = 1.0 / (1.0 + (old_sizes + 1.0) * theta)
        v_old = np.append(v, 0.0)
        r_old = np.concatenate([row_sums, np.zeros((row_sums.shape[0], 1))], axis=1)
        q_new = (q - 2.0 * w_old * v_old + w_old ** 2 * old_sbars
                 + 2.0 * w_new * (v_old - w_old * old_sbars + rho[:, None] - w_old * r_old)
                 + w_new ** 2 * joined)
        sigma_new = sigma - old_sizes * w_old + (old_sizes + 1.0) * w_new
        old_trace = old_trace - q / sigma
        new_trace = new_trace - q_new / sigma_new
        l_sum = l_sum + np.log(sigma / n_items)
        l_new = l_new + np.log(sigma_new / (n_items + 1))
        n_before, n_after = n_items - 1, n_items
    if scale is None:
        a_before = log_likelihood_exponent(n_before, dof, r0)
        a_after = log_likelihood_exponent(n_after, dof, r0)
        before = -0.5 * dof * l_sum - a_before * np.log(old_trace + s0)
        after = -0.5 * dof * l_new - a_after * np.log(new_trace + s0)
        # scale's integral: Gamma(a) ((d/2)(T + s0))^-a, a grows by d/2
        constant = gammaln(a_after) - gammaln(a_before) - 0.5 * dof * np.log(0.5 * dof)
    else:
        before = -0.5 * dof * l_sum - 0.5 * dof * old_trace / scale
        after = -0.5 * dof * l_new - 0.5 * dof * new_trace / scale
        constant = -0.5 * dof * np.log(scale)
    return after - before + constant


def _spectrum(S, tol=None):
    """``(eigenvalues, eigenvectors, kept)`` of ``S``; ``kept`` marks the eigenvalues above
    ``tol`` (``None``: ``100 n eps lambda_max``, ``eps`` of ``S``'s dtype), the range of ``S``."""
    S = np.asarray(S)
    eps = np.finfo(S.dtype if S.dtype in (np.float32, np.float64) else np.float64).eps
    values, vectors = np.linalg.eigh(np.asarray(S, dtype=np.float64))
    if tol is None:
        tol = 100.0 * S.shape[0] * eps * max(float(values[-1]), 0.0)
    return values, vectors, values > tol


def data_log_density_terms(S, *, dof, tol=None):
    """The Wishart terms of the data alone in ``log p(S)``: what the block terms leave out.

    With ``W = d S ~ W_d(Sigma)`` and ``S`` of rank ``r`` (``r = n`` for a
    full-rank ``S``, ``n - 1`` after the translation normalisation), the
    density of ``S`` on the matrices of its rank is the block terms of
    :class:`WishartBlockModel` (``-(d/2) log det Sigma - d tr(Sigma^-1 S) / 2``)
    plus::

        ((d - r - 1) / 2) log pdet S + (d r / 2) log(d / 2) - log Gamma_r(d / 2)

    (``Gamma_r`` the multivariate gamma function; the Jacobian ``d**(r (r + 1) / 2)``
    of ``S = W / d`` included), ``-inf`` when ``d <= r - 1`` (no such
    Wishart). Adding one item changes it by :func:`new_item_data_terms`, so
    the evidence and the held-out score are one model's.

    Parameters
    ----------
    S : ndarray of shape (n, n)
    dof : float
    tol : float or None, default=None
        As in :func:`new_item_data_terms`.

    Returns
    -------
    terms : float
    rank : int

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import wishart
    >>> S = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> terms, rank = data_log_density_terms(S, dof=5.0)
    >>> # the full density of S = W / 5, W ~ W_5(I): block terms are -5 tr(S) / 2 here
    >>> bool(np.isclose(terms - 2.5 * np.trace(S),
    ...                 wishart(df=5, scale=np.eye(2)).logpdf(5 * S) + 3 * np.log(5)))
    True
    """
    values, _, kept = _spectrum(S, tol)
    rank = int(kept.sum())
    d = float(dof)
    if d <= rank - 1:
        return -np.inf, rank
    return float(0.5 * (d - rank - 1.0) * np.sum(np.log(values[kept]))
                 + 0.5 * d * rank * np.log(0.5 * d) - multigammaln(0.5 * d, rank)), rank


def new_item_data_terms(S, rows, self_products, *, dof, tol=None, translation_invariant=False):
    """The Wishart terms of the data alone in ``log p(S_x | S)``, one per new item.

    :func:`new_item_log_likelihoods` leaves out the terms of the Wishart
    density that hold no ``Sigma``; they depend on ``dof`` and must be added
    for scores to compare ``dof`` values. With ``W = d S ~ W_d(Sigma)`` of
    rank ``r`` (``r = n - 1`` for a translation-normalised ``S*``, whose null
    vector the new items' rows respect), the new item's Schur complement
    ``s = S_xx - S_x. S^+ S_.x`` and the ratio of the densities of the
    enlarged and the fitted matrices give (Bartlett: ``w_22.1 / sigma_22.1 ~
    chi^2_{d - r}``, the new row Gaussian given ``W``)::

        ((d - r - 2) / 2) log s - (1 / 2) log pdet S + (d / 2) log(d / 2)
        - (r / 2) log pi - log Gamma((d - r) / 2),

    ``-inf`` when ``d <= r`` (a Wishart with ``d <= r`` degrees of freedom
    cannot produce ``S`` of rank ``r``) or ``s`` is within rounding of 0 (below
    ``100 (n + 1) eps`` times the largest eigenvalue or ``S_xx``: a new item
    that repeats a fitted one). ``O(n^3)`` once
    (eigendecomposition of ``S``), ``O(n r)`` per item.

    Parameters
    ----------
    S : ndarray of shape (n, n)
        Fitted inner products.
    rows : ndarray of shape (m, n)
        New items' inner products with the fitted ones.
    self_products : ndarray of shape (m,)
        ``S_xx`` of each new item.
    dof : float or ndarray of shape (k,)
        An array gives the terms at each of its values (one eigendecomposition).
    tol : float or None, default=None
        Eigenvalues below ``tol`` are the null space of ``S``; ``None`` means
        ``100 n eps lambda_max`` (``eps`` of ``S``'s dtype).
    translation_invariant : bool, default=False
        The terms of the translation-invariant likelihood of the distances:
        the density is that of ``L S L^T`` for a contrast ``L`` with orthonormal
        rows, so ``pdet`` is that of the centred ``S`` and, with the Helmert
        row of the new item, ``s`` is ``n / (n + 1)`` times the new item's
        Schur complement about the fitted items' centroid (the same whatever
        member of the translation class ``S`` is).

    Returns
    -------
    terms : ndarray of shape (m,), or (k, m) for an array ``dof``
    rank : int
        The numerical rank ``r`` of ``S``.
    """
    rows = np.asarray(rows, dtype=np.float64)
    self_products = np.asarray(self_products, dtype=np.float64)
    n = S.shape[0]
    if translation_invariant:
        S = np.asarray(S, dtype=np.float64)
        column_means = S.mean(axis=0)
        grand = float(column_means.mean())
        row_means = rows.mean(axis=1)
        self_products = self_products - 2.0 * row_means + grand
        rows = rows - row_means[:, None] - column_means[None, :] + grand
        S = S - column_means[:, None] - column_means[None, :] + grand
    values, vectors, kept = _spectrum(S, tol)
    rank = int(kept.sum())
    # a Schur complement within rounding of 0 is 0 (e.g. a copy of a fitted item): no
    # density, whatever sign the rounding gave it
    floor = 100.0 * (n + 1) * np.finfo(np.float64).eps * max(
        float(values[-1]), float(np.max(np.abs(self_products), initial=0.0)))
    dofs = np.asarray(dof, dtype=np.float64)
    d = np.atleast_1d(dofs)[:, None]
    coords = rows @ vectors[:, kept]
    schur = self_products - (coords ** 2) @ (1.0 / values[kept])
    if translation_invariant:
        schur = schur * (n / (n + 1.0))
    schur = np.where(schur > floor, schur, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_schur = np.where(schur > 0, np.log(np.where(schur > 0, schur, 1.0)), -np.inf)
        constant = (-0.5 * float(np.sum(np.log(values[kept]))) + 0.5 * d * np.log(0.5 * d)
                    - 0.5 * rank * np.log(np.pi) - gammaln(0.5 * (d - rank)))
        terms = 0.5 * (d - rank - 2.0) * log_schur + constant
    terms = np.where((schur > 0) & (d > rank), terms, -np.inf)
    return (terms[0] if dofs.ndim == 0 else terms), rank


__all__ = ["block_statistics", "block_cross_sums", "translation_invariant_terms",
           "centred_log_pdet", "dof_log_terms", "dof_log_likelihood",
           "dof_log_likelihood_of_terms",
           "estimate_dof", "estimate_dof_from_distances", "data_log_density_terms",
           "new_item_data_terms",
           "wishart_terms", "partition_log_prior", "collapsed_log_likelihood",
           "theta_log_weights", "scale_posterior", "scale_summary", "block_scale_means",
           "log_likelihood_exponent", "WishartBlockModel", "new_item_log_likelihoods",
           "ClusterSums"]
