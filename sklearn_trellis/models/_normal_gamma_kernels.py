"""The Normal-Gamma formulas, once: for the normal cell type and the NormalGamma likelihood.

``x ~ N(mu, 1/tau)``, ``tau ~ Gamma(a0, rate=b0)``, ``mu | tau ~ N(m0, 1/(kappa0 tau))``.
After ``n`` observations the posterior is Normal-Gamma with ``kappa_n = kappa0 + n``,
``a_n = a0 + n/2`` and the rate ``b_n = b0 + SS/2 + kappa0 n (mean - m0)^2 / (2 kappa_n)``;
each statistics layout computes ``b_n`` its own way (the cell type from sums around
``m0``, the likelihood from running means) and both score with these functions.
"""

import math

from numba import njit

_LOG_PI = math.log(math.pi)
_LOG_2PI = math.log(2.0 * math.pi)

#: From this ``a`` on, :func:`log_gamma_half_ratio` sums its asymptotic series.
_SERIES_FROM = 16.0


@njit(cache=True)
def normal_gamma_log_marginal(kappa0, a0, b0, n, b_n):
    """``log m`` of ``n`` scalars whose posterior rate is ``b_n``."""
    return (normal_gamma_count_terms(a0, n)
            + normal_gamma_scale_terms(kappa0, a0, b0, n, b_n))


@njit(cache=True)
def normal_gamma_count_terms(a0, n):
    """The terms of :func:`normal_gamma_log_marginal` that depend on ``a0`` and ``n`` only
    (a grid over ``kappa0`` and ``b0`` computes them once per block)."""
    return math.lgamma(a0 + 0.5 * n) - math.lgamma(a0) - 0.5 * n * _LOG_2PI


@njit(cache=True)
def normal_gamma_scale_terms(kappa0, a0, b0, n, b_n):
    """The other terms of :func:`normal_gamma_log_marginal`."""
    return (a0 * math.log(b0) - (a0 + 0.5 * n) * math.log(b_n)
            + 0.5 * (math.log(kappa0) - math.log(kappa0 + n)))


@njit(cache=True, inline='always')
def log_gamma_half_ratio(a):
    """``lgamma(a + 1/2) - lgamma(a)``, one ``log`` instead of two ``lgamma`` for ``a >= 16``.

    The asymptotic series ``log(a) / 2 - 1/(8a) + 1/(192a^3) - 1/(640a^5) +
    17/(14336a^7) - 31/(18432a^9) + ...`` (from ``log Gamma(z + h)``'s expansion in
    Bernoulli polynomials), cut after ``a^-11``: within 1e-14 (relative) for ``a >=
    16``, where the difference of two ``lgamma`` (each of size ``a log a``) loses
    digits to rounding (4e-7 at ``a = 1e9``). Below 16, the difference itself.
    """
    if a < _SERIES_FROM:
        return math.lgamma(a + 0.5) - math.lgamma(a)
    r = 1.0 / a
    r2 = r * r
    return 0.5 * math.log(a) + r * (-0.125 + r2 * (1.0 / 192.0 + r2 * (
        -1.0 / 640.0 + r2 * (17.0 / 14336.0 + r2 * (-31.0 / 18432.0
                                                     + r2 * 0.0038341175426136364)))))


@njit(cache=True, inline='always')
def student_t_factor(kappa_n, b_n):
    """``r = kappa_n / (2 b_n (kappa_n + 1))``: the one-point predictive is a Student-t with
    ``2 a_n`` degrees of freedom, ``log p(x) = c - (a_n + 1/2) log(1 + r (x - mean_n)^2)``."""
    return kappa_n / (2.0 * b_n * (kappa_n + 1.0))


@njit(cache=True, inline='always')
def student_t_constant(a_n, r):
    """``c = lgamma(a_n + 1/2) - lgamma(a_n) + log(r / pi) / 2`` of that Student-t."""
    return log_gamma_half_ratio(a_n) + 0.5 * (math.log(r) - _LOG_PI)
