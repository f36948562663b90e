"""The Ginkgo toy parton-shower likelihood (Cranmer et al. 2019) as a split model.

Leaves are 4-momenta ``p = (E, px, py, pz)``; a cluster's momentum is the sum
of its leaves' and ``t(p) = E^2 - px^2 - py^2 - pz^2``. With
``c(lam) = -log(1 - exp(-(1 - 1e-3) lam))``::

    log f(t | t_P, lam) = c + log lam - log t_P - lam t / t_P          if t > t_cut
                        = c + log(1 - exp(-lam min(t_P, t_cut) / t_P))  otherwise

    psi(L, R) = -inf  if t_P <= t_cut, or t_L or t_R >= (1 - 1e-3) t_P,
                      or sqrt t_L + sqrt t_R > sqrt t_P;
    otherwise logaddexp(a, b) + log(1 / (4 pi)) with
        a = log 1/2 + log f(t_L | t_P) + log f(t_R | (sqrt t_P - sqrt t_L)^2)
        b = log 1/2 + log f(t_R | t_P) + log f(t_L | (sqrt t_P - sqrt t_R)^2)

using ``lam_root`` for the split of the whole jet and ``lam`` elsewhere
(``sqrt`` of ``max(t, 0)``). Per subset the model keeps ``t`` and ``sqrt t``
of the summed momentum, so a split costs a few logarithms.

That is the public Ginkgo likelihood (``likelihood='ginkgo'``): the density
of the inner masses, the leaves' masses censored at ``t_cut``. It is not the
density of the observed leaf momenta, and its maximum over ``lam`` is biased
(high). ``likelihood='momenta'`` is that density: every child, leaf or not,
contributes the density ``f(t | t_max)`` of its observed mass (no censoring),
and each split the two-body phase-space Jacobian from (``t_L``, ``t_R``,
decay direction) to the left child's 4-momentum::

    psi(L, R) = logaddexp(a, b) + log(1 / (4 pi)) + log(8 t_P)
                - log(lambda(t_P, t_L, t_R)) / 2,
    lambda(x, y, z) = (x - y - z)^2 - 4 y z   (Kallen's function),

so ``log phi(H) = log p(X, H | lam)`` (up to a constant in ``N``) and ``log Z``
is the marginal likelihood of the jet, which is maximal near the generating
``lam`` (the leaf momenta given the jet's; the root momentum is not modelled).
"""

import math

import numpy as np
from numba import njit

from .._core.subsets import subset_sums
from .._core.validation import check_scalar_param
from ._family_stats import family_item_sums
from ._split import InsertionInputs, SplitKernelInputs, SplitModel

_LOG_HALF = math.log(0.5)
_LOG_INV_4PI = math.log(1.0 / (4.0 * math.pi))
_ONE_MINUS = 1.0 - 1e-3


def _log_normaliser(lam):
    """``c(lam) + log(lam)`` pieces: returns ``(c, log lam)``."""
    return -math.log(1.0 - math.exp(-_ONE_MINUS * lam)), math.log(lam)


@njit(cache=True, inline="always")
def _second_factor(t, t_parent, lam, c_log_lam, c, t_cut):
    """``log f(t | t_parent) = exponent + log(multiplier)``, split to save logarithms."""
    if t > t_cut:
        inv = 1.0 / t_parent
        return c_log_lam - lam * t * inv, inv
    return c, -math.expm1(-lam * min(t_parent, t_cut) / t_parent)


@njit(cache=True, inline="always")
def ginkgo_split(params, stats, full, parent, left, right):
    """Ginkgo split log-likelihood.

    ``params = [beta, t_cut, lam, c, log lam, lam_root, c_root, log lam_root,
    leaf term of the root]``; ``stats = [t, sqrt max(t, 0), log t, 1 / t,
    leaf term]`` per subset, the leaf term being ``log f(t_child <= t_cut |
    t_S, lam) = c + log(1 - exp(-lam min(t_S, t_cut) / t_S))``. Each ordering
    ``a``/``b`` is ``exponent + log(multiplier)``, so the two are combined with
    one ``exp`` and one ``log`` (plus ``expm1`` for light children):
    ``psi = E_max + log(m_max + exp(E_min - E_max) m_min) + log(1/2) + log(1/(4 pi))``.
    """
    t_cut = params[1]
    t_p = stats[0, parent]
    if t_p <= t_cut:
        return -np.inf
    t_l = stats[0, left]
    t_r = stats[0, right]
    if t_l >= _ONE_MINUS * t_p or t_r >= _ONE_MINUS * t_p:
        return -np.inf
    s_p = stats[1, parent]
    s_l = stats[1, left]
    s_r = stats[1, right]
    if s_l + s_r > s_p:
        return -np.inf
    if parent == full:
        lam = params[5]
        c = params[6]
        log_lam = params[7]
        leaf_p = params[8]
    else:
        lam = params[2]
        c = params[3]
        log_lam = params[4]
        leaf_p = stats[4, parent]
    c_log_lam = c + log_lam
    base = c_log_lam - stats[2, parent]
    inv_p = stats[3, parent]
    f_l_p = base - lam * t_l * inv_p if t_l > t_cut else leaf_p
    f_r_p = base - lam * t_r * inv_p if t_r > t_cut else leaf_p
    d_l = s_p - s_l
    d_r = s_p - s_r
    e_a, m_a = _second_factor(t_r, d_l * d_l, lam, c_log_lam, c, t_cut)
    e_b, m_b = _second_factor(t_l, d_r * d_r, lam, c_log_lam, c, t_cut)
    e_a += f_l_p
    e_b += f_r_p
    if e_a >= e_b:
        both = e_a + math.log(m_a + math.exp(e_b - e_a) * m_b)
    else:
        both = e_b + math.log(m_b + math.exp(e_a - e_b) * m_a)
    return both + _LOG_HALF + _LOG_INV_4PI


@njit(cache=True, inline="always")
def _log_density(t, t_max, c_log_lam, lam):
    """``log f(t | t_max)`` on its support ``0 <= t < (1 - 1e-3) t_max``, else ``-inf``."""
    if t < 0.0 or t >= _ONE_MINUS * t_max:
        return -np.inf
    return c_log_lam - math.log(t_max) - lam * t / t_max


@njit(cache=True, inline="always")
def ginkgo_momenta_split(params, stats, full, parent, left, right):
    """Density of the left child's 4-momentum given its parent's (``likelihood='momenta'``).

    Same ``params`` and ``stats`` as :func:`ginkgo_split`. Both children's
    masses have the truncated-exponential density (leaves' too), and
    ``log(8 t_P) - log(lambda(t_P, t_L, t_R)) / 2`` is the Jacobian of the
    isotropic two-body decay: ``d^4 p_L = p* / (4 sqrt t_P) dt_L dt_R dOmega``
    with ``p* = sqrt(lambda) / (2 sqrt t_P)``.
    """
    t_cut = params[1]
    t_p = stats[0, parent]
    if t_p <= t_cut:
        return -np.inf
    t_l = stats[0, left]
    t_r = stats[0, right]
    s_p = stats[1, parent]
    d_l = s_p - stats[1, left]
    d_r = s_p - stats[1, right]
    kallen = (t_p - t_l - t_r) ** 2 - 4.0 * t_l * t_r
    if t_l < 0.0 or t_r < 0.0 or d_l <= 0.0 or d_r <= 0.0 or kallen <= 0.0 \
            or stats[1, left] + stats[1, right] > s_p:
        return -np.inf
    if parent == full:
        lam = params[5]
        c_log_lam = params[6] + params[7]
    else:
        lam = params[2]
        c_log_lam = params[3] + params[4]
    a = _log_density(t_l, t_p, c_log_lam, lam) + _log_density(t_r, d_l * d_l, c_log_lam, lam)
    b = _log_density(t_r, t_p, c_log_lam, lam) + _log_density(t_l, d_r * d_r, c_log_lam, lam)
    if a == -np.inf and b == -np.inf:
        return -np.inf
    both = max(a, b) + math.log1p(math.exp(-abs(a - b)))
    return (both + _LOG_HALF + _LOG_INV_4PI + math.log(8.0 * t_p)
            - 0.5 * math.log(kallen))


_KERNELS = {"ginkgo": ginkgo_split, "momenta": ginkgo_momenta_split}


@njit(cache=True)
def _leaf_term(t, lam, c, t_cut):
    if t <= 0:
        return -np.inf
    return c + math.log(-math.expm1(-lam * min(t, t_cut) / t))


@njit(cache=True)
def _mass_stats(momentum_sums, lam, c, t_cut):
    """``[t, sqrt t, log t, 1 / t, leaf term]`` per subset from summed 4-momenta (4, 2**N)."""
    size = momentum_sums.shape[1]
    out = np.empty((5, size))
    for mask in range(size):
        e = momentum_sums[0, mask]
        px = momentum_sums[1, mask]
        py = momentum_sums[2, mask]
        pz = momentum_sums[3, mask]
        t = e * e - px * px - py * py - pz * pz
        out[0, mask] = t
        if t > 0:
            out[1, mask] = math.sqrt(t)
            out[2, mask] = math.log(t)
            out[3, mask] = 1.0 / t
        else:
            out[1, mask] = 0.0
            out[2, mask] = -np.inf
            out[3, mask] = 0.0
        out[4, mask] = _leaf_term(t, lam, c, t_cut)
    return out


class GinkgoEnergy(SplitModel):
    """Ginkgo jet likelihood of a binary splitting history of 4-momenta.

    :meth:`fit` takes ``X`` of shape (N, 4), one 4-momentum
    ``(E, px, py, pz)`` per leaf (the estimator's ``metric`` is not used).

    Parameters
    ----------
    lam : float, default=1.5
        Decay rate ``lambda`` of every split but the root's.
    lam_root : float, default=3.0
        Decay rate of the split of the whole jet.
    t_cut : float, default=6.25
        Invariant-mass-squared cut below which a particle does not split
        (Ginkgo's ``pt_cut``/``delta_min``).
    likelihood : {'momenta', 'ginkgo'}, default='momenta'
        ``'momenta'``: the density of the observed leaf 4-momenta given the
        tree (leaf masses' densities and the two-body Jacobian included), so
        the partition function is the jet's marginal likelihood ``p(X | lam)``
        and maximising it over ``lam`` (``GridSearchCV`` on
        ``TrellisHierarchical.score``) recovers the generating rate.
        ``'ginkgo'``: the public Ginkgo likelihood, which censors the leaves'
        masses at ``t_cut`` and leaves out the Jacobian; it reproduces the
        published values (``truth_logLH`` of :func:`~sklearn_trellis.datasets.load_ginkgo_jets`,
        the reference trellis values) but is not a density of ``X``: its
        maximum over ``lam`` is biased high, and ``score`` is not offered.

    Attributes
    ----------
    momenta_ : ndarray of shape (N, 4)
    n_items_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import GinkgoEnergy
    >>> X = np.array([[20., 10., 10., 10.], [40., 20., 25., 15.]])
    >>> energy = GinkgoEnergy(likelihood="ginkgo").fit(X)
    >>> round(energy.log_potential((0, 1)), 4)
    -15.8506
    """

    input_kind = "features"

    def __init__(self, lam=1.5, lam_root=3.0, t_cut=6.25, likelihood="momenta"):
        self.lam = lam
        self.lam_root = lam_root
        self.t_cut = t_cut
        self.likelihood = likelihood

    def _check_params(self):
        check_scalar_param(self.lam, "lam", low=0.0, include_low=False)
        check_scalar_param(self.lam_root, "lam_root", low=0.0, include_low=False)
        check_scalar_param(self.t_cut, "t_cut", low=0.0)
        if not isinstance(self.likelihood, str) or self.likelihood not in _KERNELS:
            raise ValueError("likelihood must be 'momenta' (density of the leaf momenta) or "
                             f"'ginkgo' (the public Ginkgo likelihood), got {self.likelihood!r}.")

    @property
    def is_density(self):
        """Whether ``log phi(H)`` is ``log p(X, H)``, so that ``log Z`` is a marginal likelihood."""
        return self.likelihood == "momenta"

    def fit(self, data, y=None):
        """Bind the model to ``N`` leaf 4-momenta, an array of shape (N, 4)."""
        self._check_params()
        X = np.asarray(data, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != 4:
            raise ValueError("GinkgoEnergy needs 4-momenta (E, px, py, pz): X must have "
                             f"shape (N, 4), got {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("The 4-momenta contain NaN or infinite values.")
        self.momenta_ = X
        self.n_items_ = X.shape[0]
        return self

    def _inputs(self, momentum_sums, full, beta):
        """Kernel inputs from summed momenta (4, m) of m subsets (``full``: the whole jet's)."""
        c, log_lam = _log_normaliser(float(self.lam))
        c_root, log_lam_root = _log_normaliser(float(self.lam_root))
        t_cut = float(self.t_cut)
        stats = _mass_stats(momentum_sums, float(self.lam), c, t_cut)
        leaf_root = _leaf_term(stats[0, full], float(self.lam_root), c_root, t_cut)
        params = np.array([float(beta), t_cut, float(self.lam), c, log_lam,
                           float(self.lam_root), c_root, log_lam_root, leaf_root])
        return SplitKernelInputs(_KERNELS[self.likelihood], params, stats)

    def split_log_potential(self, left, right):
        p_l = self.momenta_[np.asarray(left)].sum(axis=0)
        p_r = self.momenta_[np.asarray(right)].sum(axis=0)
        sums = np.stack([np.zeros(4), p_l, p_r, p_l + p_r], axis=1)  # masks 0, 1, 2, 3
        is_root = len(left) + len(right) == self.n_items_
        kernel, params, stats = self._inputs(sums, 3, 1.0)
        return float(kernel(params, stats, 3 if is_root else 7, 3, 1, 2))

    def family_kernel_inputs(self, family, beta=1.0):
        self._check_family(family)
        return self._inputs(family_item_sums(self.momenta_, family), family.root, beta)

    def kernel_inputs(self, beta=1.0):
        return self._inputs(subset_sums(self.momenta_), (1 << self.n_items_) - 1, beta)

    def _check_momenta(self, rows):
        rows = np.asarray(rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != 4 or not np.all(np.isfinite(rows)):
            raise ValueError("New leaves must be finite 4-momenta (E, px, py, pz): shape "
                             f"(m, 4), got {rows.shape}.")
        return rows

    def insertion_inputs(self, family, fitted, new_data):
        # A cluster's statistics are functions of its summed momentum: S + x sums p_S + p_x.
        rows = self._check_momenta(new_data)
        m, n_vertices = rows.shape[0], family.n_vertices
        sums = family_item_sums(self.momenta_, family)
        joined = np.empty((m, fitted.stats.shape[0], n_vertices))
        alone = np.empty((m, fitted.stats.shape[0]))
        params = np.empty((m, fitted.params.size))
        beta = float(fitted.params[0])
        for j in range(m):
            enlarged = np.concatenate([sums + rows[j][:, None], rows[j][:, None]], axis=1)
            # the enlarged jet's root is S_root + x (its own lam_root terms)
            _, params[j], stats = self._inputs(enlarged, family.root, beta)
            joined[j] = stats[:, :n_vertices]
            alone[j] = stats[:, n_vertices]
        return InsertionInputs(params, joined, alone)

    def with_new_item(self, new_row):
        row = self._check_momenta(np.reshape(new_row, (1, -1)))
        return GinkgoEnergy(**self.get_params()).fit(np.vstack([self.momenta_, row]))


__all__ = ["GinkgoEnergy", "ginkgo_split", "ginkgo_momenta_split"]
