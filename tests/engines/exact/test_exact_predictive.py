"""The exact mixture predictive's tabulated evaluation (ExactMixturePredictive).

Each new row costs one posterior predictive evaluation per (grid point, subset) from
statistics tabulated once; checked against the previous algorithm (the subset kernel
over ``[x, X]`` per row, ``reference_log_terms``) to 1e-12, against a 60-digit closed form
where that algorithm loses digits, and for bit-identical results in grid chunks."""

import pickle

import mpmath
import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_trellis import DPMixture
from sklearn_trellis.engines.exact import grid_marginal
from sklearn_trellis.models import (BetaBernoulli, DirichletMultinomial, NormalGamma,
                                    NormalInverseWishart)

LIKELIHOODS = {
    "niw-grid": (NormalInverseWishart(), "gaussian"),
    "niw-fixed": (NormalInverseWishart(hyperprior="fixed"), "gaussian"),
    "ng-fixed": (NormalGamma(), "gaussian"),
    "ng-grid": (NormalGamma(hyperprior="grid"), "gaussian"),
    "bernoulli": (BetaBernoulli(a=0.7, b=1.5), "binary"),
    "multinomial": (DirichletMultinomial(), "counts"),
}


def _draw(kind, rng, n, d=2):
    if kind == "binary":
        return (rng.random_sample((n, 4)) < 0.4).astype(float)
    if kind == "counts":
        return rng.poisson(2.0, size=(n, 4)).astype(float)
    X = rng.normal(size=(n, d))
    X[: n // 2] += 2.5
    return X


def _fit(name, n=6, prior=None, seed=0):
    likelihood, kind = LIKELIHOODS[name]
    rng = np.random.RandomState(seed)
    X, new = _draw(kind, rng, n), _draw(kind, rng, 4)
    if kind == "gaussian":
        new[1] *= 4.0
        new[2] += 15.0    # far, within the precision of the previous algorithm
    prior = prior or dict(alpha=1.3, discount=0.4)
    model = DPMixture(likelihood, method="exact", n_sweeps=5, random_state=0, **prior).fit(X)
    return model, model._new_rows(new)


@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_tabulated_predictive_matches_the_previous_algorithm(name):
    """``log p(x | X)`` to 1e-12 (absolute in log, relative in density) and every subset's
    probability to 1e-12 relative; the finite prior of 3 components on the grids."""
    prior = dict(alpha=2.0, n_prior_components=3) if name.endswith("grid") else None
    model, data_new = _fit(name, prior=prior)
    exact = model._exact_predictive
    terms = [exact.reference_log_terms(data_new[r:r + 1]) for r in range(len(data_new))]
    expected = np.array([logsumexp(t) for t in terms]) - exact.log_normaliser
    np.testing.assert_allclose(exact.log_density(data_new), expected, rtol=0, atol=1e-12)
    probs = np.array([np.exp(t - t.max()).sum(axis=0) for t in terms])
    probs /= probs.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(exact.assignment_probabilities(data_new), probs,
                               rtol=1e-12, atol=1e-300)


def _student_t_log_density(likelihood, X, x):
    """``log p(x | X)`` of the NIW posterior predictive, Student-t closed form in 60 digits."""
    mpmath.mp.dps = 60
    d = X.shape[1]
    kappa, nu = mpmath.mpf(likelihood.kappa) + len(X), mpmath.mpf(likelihood.dof_) + len(X)
    mu0 = mpmath.matrix(list(likelihood.mean_prior_))
    psi = mpmath.matrix(likelihood.scale_matrix_.tolist())
    rows = [mpmath.matrix(list(r)) for r in X]
    mean = (sum(rows, mpmath.matrix(d, 1)) / len(X)) if len(X) else mu0
    for r in rows:
        psi += (r - mean) * (r - mean).T
    if len(X):
        psi += likelihood.kappa * len(X) / kappa * (mean - mu0) * (mean - mu0).T
    mu = (likelihood.kappa * mu0 + len(X) * mean) / kappa
    dof = nu - d + 1
    scale = psi * (kappa + 1) / (kappa * dof)
    diff = mpmath.matrix(list(x)) - mu
    quad = (diff.T * mpmath.inverse(scale) * diff)[0]
    return (mpmath.loggamma((dof + d) / 2) - mpmath.loggamma(dof / 2)
            - d / 2 * mpmath.log(dof * mpmath.pi) - mpmath.log(mpmath.det(scale)) / 2
            - (dof + d) / 2 * mpmath.log(1 + quad / dof))


def test_a_far_row_keeps_its_digits():
    """At (1e6, 1e6) the previous algorithm (``log m(x + X_B) - log m(X_B)`` from the
    Cholesky factor of ``Psi_n`` with ``x x^T`` in it) lost about 1e-5 of ``log p``; the
    posterior predictive of the tabulated ``X_B`` keeps it to 1e-12 of the 60-digit sum."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(4, 2))
    model = DPMixture(NormalInverseWishart(hyperprior="fixed"), method="exact", n_sweeps=5,
                      random_state=0, alpha=1.0).fit(X)
    exact = model._exact_predictive
    x = np.array([[1e6, 1e6]])
    weights = np.concatenate([exact.log_new_weights, exact.log_join_weights[0]])
    total = mpmath.fsum(
        mpmath.exp(weights[mask] + _student_t_log_density(
            model.model_, model._data[[i for i in range(4) if mask >> i & 1]], x[0]))
        for mask in range(16))
    expected = float(mpmath.log(total)) - exact.log_normaliser
    assert exact.log_density(x)[0] == pytest.approx(expected, rel=0, abs=1e-12)
    previous = logsumexp(exact.reference_log_terms(x)) - exact.log_normaliser
    assert abs(previous - expected) > 1e-8     # what the check is about


def test_grid_chunks_give_the_same_bits_and_keep_nothing(monkeypatch):
    """Above PREDICTIVE_TABLE_BYTES the grid is tabulated in chunks per call (each row's
    terms in the same order): the same bits, and no table is kept."""
    model, data_new = _fit("niw-grid")
    exact = model._exact_predictive
    density, probs = exact.log_density(data_new), exact.assignment_probabilities(data_new)
    assert exact._tables is not None
    blob = pickle.dumps(model)
    assert len(blob) < exact._tables[2].nbytes / 4      # the tables are not pickled
    n_subsets = 1 << model._data.shape[0]
    per_point = n_subsets * (model.model_.predictive_size + 1) * 8
    monkeypatch.setattr(grid_marginal, "PREDICTIVE_TABLE_BYTES", 7 * per_point)
    chunked = pickle.loads(blob)._exact_predictive
    np.testing.assert_array_equal(chunked.log_density(data_new), density)
    np.testing.assert_array_equal(chunked.assignment_probabilities(data_new), probs)
    assert getattr(chunked, "_tables", None) is None
