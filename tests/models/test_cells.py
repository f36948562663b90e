"""Cell models: marginal likelihoods against numerical integration and direct formulas,
the sequential-predictive identity, missing cells, the grid hyperprior and validation."""

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

from sklearn_trellis.models import CELL_MODELS, make_cell_model
from sklearn_trellis.models import cell_loops as ck
from sklearn_trellis.models.cells import BernoulliCells, CategoricalCells, NormalCells, PoissonCells

VALUES = {
    "normal": np.array([0.3, -0.4, np.nan, 1.1, 0.5]),
    "bernoulli": np.array([1, 0, 1, np.nan, 1, 1], dtype=float),
    "poisson": np.array([0, 3, 1, np.nan, 2, 5], dtype=float),
    "categorical": np.array([0, 2, 2, np.nan, 1, 2], dtype=float),
}


def values_stats(model, params, values):
    """Statistics of the cells ``values`` under the fitted cell ``model`` (its type's kernel)."""
    return ck.one_type(model.cell_type).typed_values_stats(
        params, np.asarray(values, dtype=np.float64), model.n_stats)


def fixed_model(name):
    if name == "normal":
        return NormalCells(kappa=0.7, shape=2.5, mean_prior=0.2, variance_prior=0.8,
                           hyperprior="fixed")
    if name == "bernoulli":
        return BernoulliCells(strength=2.5, mean=0.3)
    if name == "poisson":
        return PoissonCells(strength=1.5, mean=2.0)
    return CategoricalCells(n_categories=3, strength=2.0, mean=[0.2, 0.3, 0.5])


def log_normal_pdf(x, mean, var):
    return -0.5 * math.log(2 * math.pi * var) - 0.5 * (x - mean) ** 2 / var


def numerical_log_marginal(name, model, values):
    x = values[~np.isnan(values)]
    p = model.kernel_params()
    if name == "normal":
        m0, kappa, a0, b0, inverse_unit, _ = p
        b0 = b0 / inverse_unit ** 2   # the kernels' b0 is in units of unit**2
        log_norm = a0 * math.log(b0) - math.lgamma(a0)

        def integrand(mu, u):
            tau = math.exp(u)
            log_prior = (log_norm + (a0 - 1) * u - b0 * tau
                         + log_normal_pdf(mu, m0, 1 / (kappa * tau)))
            return math.exp(log_prior + sum(log_normal_pdf(v, mu, 1 / tau) for v in x) + u)

        return math.log(integrate.dblquad(integrand, -9, 7, -8, 8, epsabs=1e-14,
                                          epsrel=1e-10)[0])
    if name == "bernoulli":
        a, b = p
        ones, zeros = x.sum(), x.size - x.sum()
        return math.log(integrate.quad(lambda q: stats.beta(a, b).pdf(q) * q ** ones
                                       * (1 - q) ** zeros, 0, 1, epsabs=1e-14)[0])
    if name == "poisson":
        a0, b0 = p

        def integrand(lam):
            return stats.gamma(a0, scale=1 / b0).pdf(lam) * np.prod(stats.poisson(lam).pmf(x))

        return math.log(integrate.quad(integrand, 0, 60, epsabs=1e-15, limit=200)[0])
    # categorical: the Dirichlet integral in closed form, written independently
    beta = p[2:]
    counts = np.bincount(x.astype(int), minlength=3)
    return float(gammaln(beta.sum()) - gammaln(beta.sum() + x.size)
                 + np.sum(gammaln(beta + counts) - gammaln(beta)))


@pytest.mark.parametrize("name", sorted(CELL_MODELS))
def test_log_marginal_equals_numerical_integration(name):
    values = VALUES[name]
    model = fixed_model(name).fit(values)
    expected = numerical_log_marginal(name, model, values)
    assert model.log_marginal(values) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("name", sorted(CELL_MODELS))
def test_sequential_predictive_identity(name):
    values = VALUES[name]
    model = fixed_model(name).fit(values)
    fns, p = model.kernels, model.kernel_params()
    s = np.zeros(model.n_stats)
    total = 0.0
    for x in values:
        total += fns.log_predictive(p, s, x)
        fns.add_cell(p, s, x, 1.0)
    assert fns.log_marginal(p, s) == pytest.approx(total, abs=1e-10)
    # the type-code switch runs the same kernels
    assert ck.cell_log_marginal(model.code, p, s) == fns.log_marginal(p, s)
    assert ck.cell_log_predictive(model.code, p, s, values[0]) == fns.log_predictive(
        p, s, values[0])
    # removing every cell returns the empty statistics (log m = 0)
    for x in values:
        ck.cell_add(model.code, p, s, x, -1.0)
    assert np.allclose(s, 0.0, atol=1e-12)
    assert fns.log_marginal(p, s) == 0.0


@pytest.mark.parametrize("name", sorted(CELL_MODELS))
def test_missing_cells_contribute_nothing(name):
    values = VALUES[name]
    model = fixed_model(name).fit(values)
    observed = values[~np.isnan(values)]
    assert model.log_marginal(values) == model.log_marginal(observed)
    assert model.kernels.log_predictive(model.kernel_params(), np.zeros(model.n_stats),
                                        np.nan) == 0.0
    assert model.log_marginal([np.nan, np.nan]) == 0.0


@pytest.mark.parametrize("name", sorted(CELL_MODELS))
def test_statistics_are_additive(name):
    values = VALUES[name]
    model = fixed_model(name).fit(values)
    p = model.kernel_params()
    whole = values_stats(model, p, values)
    parts = values_stats(model, p, values[:3]) + values_stats(model, p, values[3:])
    assert np.allclose(whole, parts)
    assert whole[0] == np.sum(~np.isnan(values))


def test_normal_cells_are_units_free():
    rng = np.random.RandomState(0)
    x = rng.normal(size=15)
    a, b = 250.0, -40.0
    small = NormalCells().fit(x)
    large = NormalCells().fit(a * x + b)
    assert np.allclose(small.grid_scale_, large.grid_scale_)
    # log m(a x + b) = log m(x) - n log a at every grid point
    for g in range(0, small.grid_scale_.size, 7):
        assert large.log_marginal(a * x + b, params=large._grid_params(g)) == pytest.approx(
            small.log_marginal(x, params=small._grid_params(g)) - x.size * math.log(a))


@pytest.mark.parametrize("name", sorted(CELL_MODELS))
def test_grid_hyperprior(name):
    values = VALUES[name]
    model = CELL_MODELS[name]().fit(values)
    params, log_prior = model.hyperparameter_grid()
    assert params.shape == (model.grid_scale_.size, model.kernel_params().size)
    assert np.isclose(np.exp(log_prior).sum(), 1.0)
    rows = np.array([values_stats(model, model.kernel_params(), values[:3]),
                     values_stats(model, model.kernel_params(), values[3:])])
    expected = [sum(model.kernels.log_marginal(p, r) for r in rows) for p in params]
    assert np.allclose(model._grid_log_likelihoods(model.kernel_params(), rows), expected)
    rng = np.random.RandomState(0)
    draws = [model.resample_params(model.kernel_params(), rows, None, None, np.arange(2), rng)
             for _ in range(200)]
    index = [int(np.flatnonzero(np.all(np.isclose(params, d), axis=1))[0]) for d in draws]
    weights = np.exp(np.array(expected) - max(expected))
    weights /= weights.sum()
    best = int(np.argmax(weights))
    assert abs(np.mean(np.array(index) == best) - weights[best]) < 4 * math.sqrt(
        weights[best] * (1 - weights[best]) / 200) + 1e-9


@pytest.mark.parametrize("name", sorted(CELL_MODELS))
def test_fixed_hyperprior_has_no_grid(name):
    model = CELL_MODELS[name](hyperprior="fixed").fit(VALUES[name])
    assert model.hyperparameter_grid() is None
    assert not model.resamples_hyperparameters


def test_defaults_follow_the_data():
    b = BernoulliCells(hyperprior="fixed").fit([1, 1, 1, 0])
    assert b.kernel_params() == pytest.approx([1.5, 0.5])
    p = PoissonCells(hyperprior="fixed").fit([0, 4, np.nan])
    assert p.kernel_params() == pytest.approx([2.0, 1.0])
    c = CategoricalCells(hyperprior="fixed").fit([0, 1, 1])
    assert c.n_categories_ == 2 and c.n_stats == 3
    assert c.kernel_params() == pytest.approx([2, 2, 2 * 2 / 5, 2 * 3 / 5])


@pytest.mark.parametrize("model, values, match", [
    (BernoulliCells(), [0, 2], "binary"),
    (PoissonCells(), [1.5], "integer"),
    (PoissonCells(), [-1], "integer"),
    (CategoricalCells(), [0, 0.5], "codes"),
    (CategoricalCells(n_categories=2), [0, 2], "n_categories"),
    (NormalCells(), [0.0, np.inf], "infinity"),
    (NormalCells(kappa=-1.0), [0.0, 1.0], "kappa"),
    (NormalCells(hyperprior="nope"), [0.0, 1.0], "hyperprior"),
    (BernoulliCells(mean=1.0), [0, 1], "mean"),
])
def test_bad_values_and_parameters_raise(model, values, match):
    with pytest.raises(ValueError, match=match):
        model.fit(values)


def test_fitted_categorical_refuses_new_codes():
    model = CategoricalCells().fit([0, 1])
    with pytest.raises(ValueError, match="categories"):
        model.check_values([2])


def test_unfitted_and_registry_errors():
    with pytest.raises(ValueError, match="not fitted"):
        NormalCells().kernel_params()
    with pytest.raises(TypeError, match="numeric"):
        NormalCells().fit(["a", "b"])
    with pytest.raises(ValueError, match="likelihood must be one of"):
        make_cell_model("gaussian")
    with pytest.raises(TypeError, match="cell model"):
        make_cell_model(3)
    assert isinstance(make_cell_model("poisson"), PoissonCells)
    assert make_cell_model(BernoulliCells(strength=3.0)).strength == 3.0


@pytest.mark.parametrize("name", sorted(CELL_MODELS))
def test_cached_predictive_equals_the_marginal_difference(name):
    """The one-cell predictive from cached constants is log m(block + x) - log m(block), at
    several grid points, with missing cells, along a long random add / remove walk."""
    rng = np.random.RandomState(7)
    draws = {"normal": rng.normal(3.0, 2.0, 400),
             "bernoulli": rng.randint(2, size=400).astype(float),
             "poisson": np.concatenate([rng.poisson(4.0, 396), [0, 13, 30, 50]]).astype(float),
             "categorical": rng.randint(4, size=400).astype(float)}
    values = draws[name]
    values[rng.rand(values.size) < 0.1] = np.nan
    model = CELL_MODELS[name]().fit(values)
    grid = model.hyperparameter_grid()[0]
    for p in grid[[0, len(grid) // 2, -1]]:
        stats, cache = np.zeros(model.n_stats), np.zeros(model.n_stats)
        inside = []
        for _ in range(1500):
            ck.cell_predictive_cache(model.code, p, stats, cache)
            scale = max(1.0, abs(ck.cell_log_marginal(model.code, p, stats)))
            for x in values[rng.randint(values.size, size=3)]:
                expected = (ck.cell_log_marginal(model.code, p, stats + values_stats(
                    model, p, np.array([x])))
                            - ck.cell_log_marginal(model.code, p, stats))
                got = ck.cell_cached_log_predictive(model.code, p, stats, cache, x)
                assert abs(got - expected) <= 1e-12 * scale
                if np.isnan(x):
                    assert got == 0.0
            if inside and rng.rand() < 0.4:   # remove a cell the block holds
                ck.cell_add(model.code, p, stats, inside.pop(rng.randint(len(inside))), -1.0)
            else:
                x = values[rng.randint(values.size)]
                ck.cell_add(model.code, p, stats, x, 1.0)
                inside.append(x)


def test_normal_cells_equal_the_normal_gamma_likelihood():
    """One set of Normal-Gamma formulas: a normal cell block and a one-feature NormalGamma
    cluster with the same hyperparameters give the same log marginal and predictive."""
    from sklearn_trellis.models import NormalGamma
    rng = np.random.RandomState(3)
    x = rng.normal(1.0, 2.0, size=40)
    lik = NormalGamma(kappa=0.3, shape=2.5, mean_prior=[0.5], variance_prior=[1.7]).fit(
        x[:, None])
    params = lik.kernel_params()          # [d, kappa0, a0, m0, b0]
    # [m0, kappa0, a0, b0, 1 / unit, log(1 / unit)] with unit 1
    cell_params = np.array([params[3], params[1], params[2], params[4], 1.0, 0.0])
    stats = np.zeros(3)
    fns = lik.kernels
    table = np.zeros((1, lik.n_stats))
    shared, work = np.zeros(max(1, lik.n_shared)), np.zeros(max(1, lik.work_size(1)))
    data = lik.kernel_data(x[:, None])
    fns.reset(params, table, 0)
    for n, value in enumerate(x[:30], start=1):
        cache = np.empty(3)
        ck.cell_predictive_cache(0, cell_params, stats, cache)
        assert ck.cell_cached_log_predictive(0, cell_params, stats, cache, value) == \
            pytest.approx(fns.log_predictive(params, data, table, shared, work, 0, n - 1),
                          rel=1e-12, abs=1e-12)
        ck.cell_add(0, cell_params, stats, value, 1.0)
        fns.add(params, data, table, shared, work, 0, n - 1)
        assert ck.cell_log_marginal(0, cell_params, stats) == pytest.approx(
            fns.log_cluster(params, table, shared, 0), rel=1e-12)
    assert lik.log_marginal(x[:, None]) == pytest.approx(
        NormalCells(hyperprior="fixed").fit(x).log_marginal(x, cell_params), rel=1e-12)
