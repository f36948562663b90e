"""Conjugate likelihoods: marginal likelihoods against numerical integration and
independent closed forms; incremental statistics against recomputation."""

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln

from sklearn_trellis.models import (BetaBernoulli, DirichletMultinomial, NormalGamma,
                                    NormalInverseWishart)
from sklearn_trellis.models import make_likelihood


def sequential_log_marginal(log_predictives):
    return float(np.sum(log_predictives))


# ---------------------------------------------------------------- numerical integration
def log_normal_pdf(x, mean, var):
    return -0.5 * math.log(2 * math.pi * var) - 0.5 * (x - mean) ** 2 / var


def test_niw_1d_equals_numerical_integration():
    # d = 1: NIW(mu0, kappa, nu, psi) is Normal-inverse-gamma; integrate over (mu, log var)
    X = np.array([0.3, -0.4, 1.1])
    lik = NormalInverseWishart(kappa=0.5, dof=3.0, mean_prior=[0.2],
                               covariance_prior=np.array([[1.0]])).fit(X[:, None])
    psi, nu, kappa, mu0 = lik.scale_matrix_[0, 0], lik.dof_, 0.5, 0.2
    a, b = nu / 2, psi / 2
    log_norm = a * math.log(b) - math.lgamma(a)

    def integrand(mu, u):
        var = math.exp(u)
        log_prior = log_norm - (a + 1) * u - b / var + log_normal_pdf(mu, mu0, var / kappa)
        log_like = sum(log_normal_pdf(x, mu, var) for x in X)
        return math.exp(log_prior + log_like + u)   # + u: d var = var du

    value = integrate.dblquad(integrand, -9, 7, -8, 8, epsabs=1e-14, epsrel=1e-10)[0]
    assert lik.log_marginal(X[:, None]) == pytest.approx(math.log(value), abs=1e-6)


def test_normal_gamma_equals_numerical_integration():
    X = np.array([[0.3, 2.0], [-0.4, 1.5], [1.1, 2.2]])
    lik = NormalGamma(kappa=0.7, shape=2.5, mean_prior=[0.0, 1.8],
                      variance_prior=[0.8, 0.3]).fit(X)
    total = 0.0
    for j in range(2):
        a0, b0, m0 = 2.5, lik.rate_[j], lik.mean_prior_[j]
        log_norm = a0 * math.log(b0) - math.lgamma(a0)

        def integrand(mu, u, j=j, a0=a0, b0=b0, m0=m0, log_norm=log_norm):
            tau = math.exp(u)
            log_prior = (log_norm + (a0 - 1) * u - b0 * tau
                         + log_normal_pdf(mu, m0, 1 / (0.7 * tau)))
            log_like = sum(log_normal_pdf(x, mu, 1 / tau) for x in X[:, j])
            return math.exp(log_prior + log_like + u)

        value = integrate.dblquad(integrand, -9, 7, -8, 8, epsabs=1e-14, epsrel=1e-10)[0]
        total += math.log(value)
    assert lik.log_marginal(X) == pytest.approx(total, abs=1e-6)


def test_beta_bernoulli_equals_numerical_integration():
    X = np.array([[1, 0, 1], [1, 1, 1], [0, 1, 1], [1, 0, 1]], dtype=float)
    lik = BetaBernoulli(a=[0.5, 2.0, 1.0], b=[1.5, 1.0, 3.0]).fit(X)
    total = 0.0
    for j in range(3):
        ones = X[:, j].sum()
        zeros = len(X) - ones
        a, b = lik.a_[j], lik.b_[j]
        value = integrate.quad(lambda p: stats.beta(a, b).pdf(p) * p ** ones
                               * (1 - p) ** zeros, 0, 1, epsabs=1e-14)[0]
        total += math.log(value)
        assert math.log(value) == pytest.approx(betaln(a + ones, b + zeros) - betaln(a, b))
    assert lik.log_marginal(X) == pytest.approx(total, abs=1e-8)


def test_dirichlet_multinomial_equals_numerical_integration():
    X = np.array([[2, 1], [0, 3], [1, 1]], dtype=float)
    lik = DirichletMultinomial(concentration=[0.7, 1.8]).fit(X)

    def integrand(p):
        prior = stats.beta(0.7, 1.8).pdf(p)
        return prior * np.prod([stats.multinomial(int(r.sum()), [p, 1 - p]).pmf(r) for r in X])

    value = integrate.quad(integrand, 0, 1, epsabs=1e-15)[0]
    assert lik.log_marginal(X) == pytest.approx(math.log(value), abs=1e-8)


# ---------------------------------------------------------------- independent closed forms
def test_niw_full_covariance_equals_sequential_student_t():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3)) @ np.array([[1, 0.5, 0], [0, 1, 0.3], [0, 0, 0.5]])
    lik = NormalInverseWishart(kappa=0.3, dof=5.5).fit(X)
    d = 3
    mu, kappa, nu, psi = lik.mean_prior_.copy(), 0.3, lik.dof_, lik.scale_matrix_.copy()
    total = 0.0
    for x in X:  # p(x_i | x_<i) is a multivariate Student t (Murphy 2007, Eq. 258)
        dof = nu - d + 1
        total += stats.multivariate_t(mu, psi * (kappa + 1) / (kappa * dof), df=dof).logpdf(x)
        psi = psi + kappa / (kappa + 1) * np.outer(x - mu, x - mu)
        mu = (kappa * mu + x) / (kappa + 1)
        kappa, nu = kappa + 1, nu + 1
    assert lik.log_marginal(X) == pytest.approx(total, abs=1e-9)
    assert lik.log_marginal_closed_form(X) == pytest.approx(total, abs=1e-9)


def test_dirichlet_multinomial_equals_scipy_sequential():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 4, size=(5, 4)).astype(float)
    X[0] = 0  # an empty document is allowed
    lik = DirichletMultinomial().fit(X)
    beta = lik.concentration_.copy()
    total = 0.0
    for x in X:
        if x.sum() > 0:
            total += stats.dirichlet_multinomial(beta, int(x.sum())).logpmf(x)
        beta = beta + x
    assert lik.log_marginal(X) == pytest.approx(total, abs=1e-9)


# ---------------------------------------------------------------- incremental statistics
def random_data(kind, rng, n, d):
    if kind == "bernoulli":
        return (rng.random((n, d)) < 0.4).astype(float)
    if kind == "multinomial":
        return rng.integers(0, 5, size=(n, d)).astype(float)
    return rng.normal(size=(n, d)) * 2 + 1


@pytest.mark.parametrize("kind", ["gaussian", "diagonal", "bernoulli", "multinomial"])
def test_add_remove_predictive_are_consistent(kind):
    rng = np.random.default_rng(3)
    X = random_data(kind, rng, 12, 3)
    lik = make_likelihood(kind).fit(X)
    k = lik.kernels
    params = lik.kernel_params()
    data = lik.kernel_data(X)
    stats_ = np.zeros((2, lik.n_stats))
    shared = np.zeros(1)
    work = np.zeros(lik.work_size(2))
    k.reset(params, stats_, 0)
    members = []
    for step in range(40):
        i = int(rng.integers(12))
        if i in members and rng.random() < 0.5:
            k.remove(params, data, stats_, shared, work, 0, i)
            members.remove(i)
            if not members:
                k.reset(params, stats_, 0)
        elif i not in members:
            before = lik.log_marginal(X[members]) if members else 0.0
            predictive = k.log_predictive(params, data, stats_, shared, work, 0, i)
            k.add(params, data, stats_, shared, work, 0, i)
            members.append(i)
            assert predictive == pytest.approx(lik.log_marginal(X[members]) - before, abs=1e-8)
        if members:
            assert k.log_cluster(params, stats_, shared, 0) == pytest.approx(
                lik.log_marginal(X[members]), abs=1e-8)


def test_data_dependent_defaults_and_validation():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 2)) * [1.0, 10.0]
    lik = NormalInverseWishart().fit(X)
    np.testing.assert_allclose(lik.mean_prior_, X.mean(axis=0))
    assert lik.dof_ == 4.0
    np.testing.assert_allclose(np.diag(lik.scale_matrix_), 0.1 * X.var(axis=0))
    ng = NormalGamma().fit(X)
    np.testing.assert_allclose(ng.rate_, 0.1 * X.var(axis=0))
    with pytest.raises(ValueError, match="dof"):
        NormalInverseWishart(dof=0.5).fit(X)
    with pytest.raises(ValueError, match="binary"):
        BetaBernoulli().fit(X)
    with pytest.raises(ValueError, match="counts"):
        DirichletMultinomial().fit(X)
    with pytest.raises(ValueError, match="likelihood"):
        make_likelihood("poisson")
    with pytest.raises(TypeError, match="likelihood"):
        make_likelihood(3)
    with pytest.raises(ValueError, match="features"):
        lik.check_data(X[:, :1])
    with pytest.raises(ValueError, match="NaN"):
        NormalGamma().fit(np.array([[np.nan, 1.0]]))


def test_normal_gamma_is_one_dimensional_niw():
    # In one dimension IW(nu, psi) = inverse-gamma(nu / 2, psi / 2), so NIW with
    # dof = 2 * shape and the same expected variance is the Normal-Gamma model.
    rng = np.random.default_rng(11)
    X = rng.normal(1.5, 2.0, size=(9, 1))
    ng = NormalGamma(kappa=0.3, shape=2.5, mean_prior=[0.4], variance_prior=[1.7]).fit(X)
    niw = NormalInverseWishart(kappa=0.3, dof=5.0, mean_prior=[0.4],
                               covariance_prior=np.array([[1.7]])).fit(X)
    for m in (1, 4, 9):
        assert ng.log_marginal(X[:m]) == pytest.approx(niw.log_marginal(X[:m]), abs=1e-10)



@pytest.mark.parametrize("likelihood", [NormalGamma, NormalInverseWishart])
def test_gaussian_priors_from_float32_rows_without_a_float64_copy(likelihood):
    """float32 rows give the data-dependent priors of their float64 values (moments summed
    in float64, to float64 rounding), and fit allocates far less than a float64 copy."""
    import tracemalloc
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(300_000, 16)) * rng.uniform(0.5, 4, 16) + 1e3).astype(np.float32)
    tracemalloc.start()
    try:
        lik = likelihood().fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes    # a float64 copy alone is 2 * X.nbytes
    reference = likelihood().fit(X.astype(np.float64))
    np.testing.assert_allclose(lik.mean_prior_, reference.mean_prior_, rtol=1e-12)
    np.testing.assert_allclose(lik.kernel_params(), reference.kernel_params(), rtol=1e-9)
    assert lik.mean_prior_.dtype == np.float64


# ---------------------------------------------------------------- read-only rows
def _read_only(X):
    X = np.array(X)
    X.setflags(write=False)
    return X


@pytest.mark.parametrize("kind", ["gaussian", "diagonal", "bernoulli", "multinomial"])
@pytest.mark.parametrize("method", ["check_data", "check_sampler_data"])
def test_small_read_only_rows_are_copied_large_ones_used_in_place(kind, method, monkeypatch):
    """The 64 MiB rule of ``writeable_if_small``: below it a writeable copy (one kernel
    version), above it (threshold patched to 0) the caller's rows themselves."""
    from sklearn_trellis._core import validation
    X = _read_only(random_data(kind, np.random.default_rng(0), 10, 3))
    lik = make_likelihood(kind).fit(X)
    small = getattr(lik, method)(X)
    assert small.flags.writeable and not np.shares_memory(small, X)
    np.testing.assert_array_equal(small, X)
    monkeypatch.setattr(validation, "READONLY_COPY_MAX_BYTES", 0)
    large = getattr(lik, method)(X)
    assert np.shares_memory(large, X) and not large.flags.writeable
    assert not X.flags.writeable
