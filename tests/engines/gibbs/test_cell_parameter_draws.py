"""Explicit cell parameters of the slice-sampler row move: posterior draws and densities."""

import numba
import numpy as np
import pytest
from scipy import stats as st

from sklearn_trellis.models import cell_kernels as ck
from sklearn_trellis.models import cell_loops
from sklearn_trellis.models._normal_gamma_kernels import log_gamma_half_ratio

N_DRAWS = 20000


def _draws(code, params, stats, size):
    """``N_DRAWS`` posterior draws of theta (numba's generator seeded once)."""

    out = np.empty((N_DRAWS, size))
    ck_seed(0)
    for r in range(N_DRAWS):
        cell_loops.cell_posterior_draw(code, params, stats, out[r])
    return out


@numba.njit
def ck_seed(seed):
    np.random.seed(seed)


def _close(draws, expected, sd):
    """Mean of ``draws`` within 5 Monte Carlo standard errors of ``expected``."""
    assert abs(np.mean(draws) - expected) < 5 * sd / np.sqrt(draws.size)


@pytest.mark.parametrize("with_cells", [False, True])
def test_normal_posterior_draw_moments(with_cells):
    m0, kappa0, a0, b0 = 0.5, 2.0, 3.0, 1.5
    params = np.array([m0, kappa0, a0, b0, 1.0, 0.0])   # unit 1: y = x - m0
    x = np.array([1.0, 2.5, -0.3, 0.7]) if with_cells else np.zeros(0)
    stats = np.array([x.size, np.sum(x - m0), np.sum((x - m0) ** 2)])
    kappa, a = kappa0 + x.size, a0 + x.size / 2
    mean = (kappa0 * m0 + x.sum()) / kappa
    b = b0 + 0.5 * (np.sum((x - x.mean()) ** 2) if x.size else 0.0) + (
        kappa0 * x.size * (x.mean() - m0) ** 2 / (2 * kappa) if x.size else 0.0)
    theta = _draws(ck.NORMAL, params, stats, 5)
    precision = st.gamma(a, scale=1 / b)
    _close(theta[:, 1], precision.mean(), precision.std())
    # mu | tau ~ N(mean, 1 / (kappa tau)), drawn as the mean of y = x - m0: the
    # standardised draws are N(0, 1)
    z = (theta[:, 0] + m0 - mean) * np.sqrt(kappa * theta[:, 1])
    _close(z, 0.0, 1.0)
    _close(z ** 2, 1.0, np.sqrt(2.0))
    np.testing.assert_allclose(theta[:, 2], 0.5 * np.log(theta[:, 1] / (2 * np.pi)))
    np.testing.assert_array_equal(theta[:, 3:], [[m0, 1.0]] * N_DRAWS)


def test_bernoulli_posterior_draw_moments():
    params = np.array([0.3, 0.7])   # small shapes: the draws stay finite in log space
    stats = np.array([5.0, 1.0])
    theta = _draws(ck.BERNOULLI, params, stats, 2)
    p = np.exp(theta[:, 1])
    np.testing.assert_allclose(p + np.exp(theta[:, 0]), 1.0)
    posterior = st.beta(0.3 + 1, 0.7 + 4)
    _close(p, posterior.mean(), posterior.std())
    assert np.all(np.isfinite(theta))


def test_poisson_posterior_draw_moments():
    params = np.array([2.0, 0.5])
    x = np.array([3.0, 0.0, 5.0])
    from scipy.special import gammaln
    stats = np.array([3.0, x.sum(), gammaln(x + 1).sum()])
    theta = _draws(ck.POISSON, params, stats, 2)
    posterior = st.gamma(2.0 + 8.0, scale=1 / (0.5 + 3))
    _close(theta[:, 0], posterior.mean(), posterior.std())
    np.testing.assert_allclose(theta[:, 1], np.log(theta[:, 0]))


def test_categorical_posterior_draw_moments():
    beta = np.array([0.2, 1.0, 2.5])
    params = np.concatenate([[3, beta.sum()], beta])
    stats = np.array([4.0, 0.0, 3.0, 1.0])
    theta = _draws(ck.CATEGORICAL, params, stats, 3)
    p = np.exp(theta)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    posterior = st.dirichlet(beta + stats[1:])
    for c in range(3):
        _close(p[:, c], posterior.mean()[c], np.sqrt(posterior.var()[c]))


@pytest.mark.parametrize("code, theta, values, reference", [
    (ck.NORMAL, [0.4, 2.5, 0.5 * np.log(2.5 / (2 * np.pi)), 0.0, 1.0], [-1.0, 0.4, 3.2],
     lambda x: st.norm(0.4, 1 / np.sqrt(2.5)).logpdf(x)),
    (ck.BERNOULLI, [np.log(0.7), np.log(0.3)], [0.0, 1.0], lambda x: st.bernoulli(0.3).logpmf(x)),
    (ck.POISSON, [2.2, np.log(2.2)], [0.0, 1.0, 7.0], lambda x: st.poisson(2.2).logpmf(x)),
    (ck.CATEGORICAL, list(np.log([0.2, 0.5, 0.3])), [0.0, 1.0, 2.0],
     lambda x: np.log([0.2, 0.5, 0.3])[int(x)]),
])
def test_cell_log_density_matches_scipy(code, theta, values, reference):
    theta = np.array(theta)
    for x in values:
        assert cell_loops.cell_log_density(code, theta, x) == pytest.approx(reference(x), rel=1e-12)
    assert cell_loops.cell_log_density(code, theta, np.nan) == 0.0


@pytest.mark.parametrize("code, theta, x", [
    (ck.NORMAL, [0.4, 2.5, 0.5 * np.log(2.5 / (2 * np.pi)), 0.0, 1.0], 3.2),
    (ck.BERNOULLI, [np.log(0.7), np.log(0.3)], 1.0),
    (ck.POISSON, [2.2, np.log(2.2)], 7.0),
    (ck.POISSON, [2.2, np.log(2.2)], 0.0),
    (ck.CATEGORICAL, list(np.log([0.2, 0.5, 0.3])), 2.0),
])
def test_log_kernel_leaves_out_only_a_term_of_x(code, theta, x):
    """What the row move compares between clusters: the density but for ``-log x!``."""
    from scipy.special import gammaln
    theta = np.array(theta)
    missing = gammaln(x + 1.0) if code == ck.POISSON else 0.0
    assert ck.log_kernel_at(code, theta, 0, x) - missing == pytest.approx(
        cell_loops.cell_log_density(code, theta, x), rel=1e-13, abs=1e-13)
    assert ck.log_kernel_at(code, theta, 0, np.nan) == 0.0


def test_log_gamma_half_ratio_is_accurate():
    """``lgamma(a + 1/2) - lgamma(a)`` within 2e-14 (relative) on both sides of the switch
    to the series, against 40-digit arithmetic."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    values = np.concatenate([np.linspace(0.05, 40.0, 400), np.logspace(1.3, 9, 200)])
    for a in values:
        exact = float(mpmath.loggamma(mpmath.mpf(a) + mpmath.mpf(1) / 2)
                      - mpmath.loggamma(mpmath.mpf(a)))
        assert abs(log_gamma_half_ratio(a) - exact) <= 2e-14 * max(1.0, abs(exact))
