"""Issue 31, the Bayesian estimators at the edges: extreme scales, concentrations, codes.

InfiniteBiclustering, CrossCat, FastTIWD, BayesianHierarchicalClustering and
DPMixture: a right, unit-free answer at any scale a float64 holds, or a clear
ValueError naming the problem and the range that works.
"""

import math
import warnings

import numpy as np
import pytest
from oracles import crp_log_evidence_by_enumeration
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import (BayesianHierarchicalClustering, CrossCat, DPMixture, FastTIWD,
                             InfiniteBiclustering)
from sklearn_trellis.datasets import make_wishart_blocks
from sklearn_trellis.engines.exact.grid_marginal import GridMarginalPosterior
from sklearn_trellis.models import BernoulliCells, NormalCells
from sklearn_trellis.models.cells import CategoricalCells
from sklearn_trellis.models.priors import CRP, PitmanYor

#: Powers of two: scaling by them is exact in float64, so results must match bit for bit
#: (up to the Jacobian term ``-n log c`` of densities).
TINY, HUGE = 2.0 ** -990, 2.0 ** 990


def _table(seed=0, n=5, d=3):
    X = np.random.default_rng(seed).normal(size=(n, d))
    X[: n // 2] += 3.0
    return X


# -- item 2: FastTIWD's predictive is unit free ---------------------------------------
def test_fast_tiwd_predict_proba_does_not_depend_on_the_distances_units():
    data = make_wishart_blocks(n_samples=44, random_state=0)
    D = data.distances
    fitted, new = np.arange(40), np.arange(40, 44)
    reference = None
    for c in (1.0, 1e-6, 1e-8, 1e3):
        model = FastTIWD(n_sweeps=20, random_state=0).fit(c * D[np.ix_(fitted, fitted)])
        proba = model.predict_proba(c * D[np.ix_(new, fitted)])
        if reference is None:
            reference = (model.samples_, proba)
        np.testing.assert_array_equal(model.samples_, reference[0])
        np.testing.assert_allclose(proba, reference[1], atol=1e-9)


def test_fast_tiwd_new_items_whose_squared_distances_overflow_are_refused():
    # found by the slow fuzz: identical fitted rows, a query at 1.26e299
    model = FastTIWD(metric="sqeuclidean", n_sweeps=4, random_state=0).fit(np.zeros((2, 1)))
    for method in (model.predict_proba, model.score_samples):
        with pytest.raises(ValueError, match="new items .* overflow float64"):
            method(np.array([[1.26e299]]))
    with warnings.catch_warnings():   # rank-0 S*: the dof terms are left out, with a warning
        warnings.simplefilter("ignore", UserWarning)
        assert np.all(np.isfinite(model.score_samples(np.array([[1.0]]))))


def test_dp_mixture_density_float64_cannot_hold_is_refused_not_nan():
    # found by the slow fuzz: identical rows at 2e-150, a query at 1.26e-301 gave NaN
    X = np.full((2, 1), 2.04091912e-150)
    with warnings.catch_warnings():   # k-means init on identical rows
        warnings.simplefilter("ignore")
        model = DPMixture("diagonal", alpha=1e-12, n_sweeps=4, random_state=0).fit(X)
        gibbs = DPMixture("diagonal", alpha=1e-12, n_sweeps=4, method="gibbs",
                          random_state=0).fit(X)
    query = np.array([[1.25730221e-301]])
    for method in (gibbs.predict_proba, gibbs.score_samples):
        with pytest.raises(ValueError, match="no predictive density float64 can hold"):
            method(query)
    # the exact fit's predict_proba is the 3 rows' posterior over the query's cluster:
    # it holds (x alone: the cluster marginal of {x}, bit 0 of the joined rows)
    joined = np.vstack([model.model_.check_data(query), model._data])
    alone = GridMarginalPosterior(model.prior_, model.model_, 3).fit(joined).cluster_marginals()[1]
    proba = model.predict_proba(query)
    assert model.n_clusters_ == 1 and np.all(np.isfinite(proba))
    assert proba[0, 1] == pytest.approx(alone, abs=1e-12)
    assert proba.sum() == pytest.approx(1.0, abs=1e-12)
    # the exact fit's score sums over the subsets, not one sample's clusters: it holds
    # log p(X + x) - log p(X) (248.39, checked against brute-force enumeration)
    data = np.vstack([model._data, model.model_.check_data(query)])
    expected = (GridMarginalPosterior(model.prior_, model.model_, 3).fit(data)
                .log_marginal_likelihood - model.log_marginal_likelihood_)
    assert model.method_ == "exact" and np.isfinite(expected)
    assert model.score_samples(query)[0] == pytest.approx(expected, abs=1e-9)


# -- item 3: CrossCat keeps the codes of a categorical cell model ---------------------
def test_crosscat_uses_the_codes_of_a_categorical_cell_model():
    values = np.array([[1.0], [2.0], [1.0], [1.0], [2.0]])
    cell = CategoricalCells(n_categories=3, mean=[0.8, 0.1, 0.1], strength=2.0)
    crosscat = CrossCat([cell], alpha_prior=None, n_sweeps=5, random_state=0).fit(values)
    biclustering = InfiniteBiclustering(cell, n_sweeps=5, random_state=0).fit(values)
    assert crosscat.log_marginal_likelihood_ == pytest.approx(
        biclustering.log_marginal_likelihood_, rel=1e-12)
    assert crosscat.cell_models_[0].n_categories_ == 3
    imputed, proba = crosscat.impute(np.array([[np.nan]]), return_proba=True)
    assert proba[0].shape == (1, 3)   # the three codes, as given
    assert imputed.dtype == np.float64 and imputed[0, 0] == np.argmax(proba[0])


@pytest.mark.parametrize("bad", [3.0, 1.5, -1.0])
def test_crosscat_refuses_codes_outside_the_cell_models_categories(bad):
    values = np.array([[1.0], [2.0], [bad]])
    cell = CategoricalCells(n_categories=3)
    with pytest.raises(ValueError, match=r"integer codes in \[0, 3\)"):
        CrossCat([cell], alpha_prior=None, n_sweeps=5).fit(values)


# -- item 4: large (and tiny) concentrations ------------------------------------------
@pytest.mark.parametrize("alpha", [1e-12, 1.0, 1e12, 1e16, 1e100, 1e300])
def test_dp_evidence_is_exact_at_any_concentration(alpha):
    X = (np.random.default_rng(3).random((6, 4)) < 0.4).astype(float)
    bhc = BayesianHierarchicalClustering("bernoulli", alpha=alpha).fit(X)
    model = bhc.model_
    expected = crp_log_evidence_by_enumeration(6, alpha, lambda b: model.log_marginal(X[b]))
    assert bhc.log_marginal_likelihood_dp_ == pytest.approx(expected, abs=1e-9)
    assert bhc.log_evidence_lower_bound_ <= bhc.log_marginal_likelihood_dp_ + 1e-9
    dp = DPMixture("bernoulli", alpha=alpha, method="exact", n_sweeps=5, random_state=0).fit(X)
    assert dp.log_marginal_likelihood_ == pytest.approx(expected, abs=1e-9)
    if alpha >= 1e12:   # every item alone, the limit of alpha -> infinity
        singletons = sum(model.log_marginal(X[i:i + 1]) for i in range(6))
        assert bhc.log_evidence_lower_bound_ == pytest.approx(singletons, abs=1e-6)


@pytest.mark.parametrize("alpha", [1e-12, 0.5, 1e8, 1e16, 1e300])
def test_partition_priors_normaliser_is_the_rising_factorial(alpha):
    for n in (1, 7, 300):
        expected = -math.fsum(math.log(alpha + j) for j in range(n))
        assert CRP(alpha).log_normaliser(n) == pytest.approx(expected, rel=1e-13, abs=1e-12)
        assert PitmanYor(alpha, 0.3).log_normaliser(n) == pytest.approx(expected, rel=1e-13,
                                                                        abs=1e-12)


# -- item 5: counts beyond float64's exact log-probabilities --------------------------
def test_multinomial_refuses_counts_whose_log_probabilities_float64_cannot_hold():
    counts = np.random.default_rng(0).integers(0, 5, size=(6, 3)).astype(float)
    with pytest.raises(ValueError, match="counts"):
        BayesianHierarchicalClustering("multinomial").fit(counts * 1e300)
    with pytest.raises(ValueError, match="counts"):
        DPMixture("multinomial", n_sweeps=5).fit(counts * 1e300)
    large = BayesianHierarchicalClustering("multinomial").fit(counts * 1e6)
    assert large.log_marginal_likelihood_ <= 0.0   # a probability mass function


# -- item 6: per-feature rescaling ---------------------------------------------------
# s = 1e4, between the two ends, runs with the slow tests (1.5 CPU s each)
@pytest.mark.parametrize("s", [100.0, pytest.param(1e4, marks=pytest.mark.slow), 1e50])
def test_bhc_and_dp_mixture_do_not_depend_on_per_feature_units(s):
    X = _table(seed=1, n=8)
    scaled = X * [s, 1.0, 1.0 / s]   # the Jacobian log s + log(1/s) = 0: same evidence
    for params in ({}, {"likelihood": "diagonal"}):
        a = BayesianHierarchicalClustering(**params).fit(X)
        b = BayesianHierarchicalClustering(**params).fit(scaled)
        np.testing.assert_array_equal(a.labels_, b.labels_)
        assert b.log_marginal_likelihood_ == pytest.approx(a.log_marginal_likelihood_,
                                                           rel=1e-9)
        a = DPMixture(method="exact", n_sweeps=5, random_state=0, **params).fit(X)
        b = DPMixture(method="exact", n_sweeps=5, random_state=0, **params).fit(scaled)
        np.testing.assert_array_equal(a.labels_, b.labels_)
        assert b.log_marginal_likelihood_ == pytest.approx(a.log_marginal_likelihood_,
                                                           rel=1e-9)


# -- items 7, 8: InfiniteBiclustering and CrossCat at 1e-300 and 1e300 ----------------
@pytest.mark.parametrize("c", [TINY, HUGE])
def test_infinite_biclustering_normal_cells_are_unit_free(c):
    X = _table(seed=2, n=5, d=3)
    base = InfiniteBiclustering(n_sweeps=10, random_state=0).fit(X)
    scaled = InfiniteBiclustering(n_sweeps=10, random_state=0).fit(X * c)
    jacobian = -X.size * math.log(c)
    assert scaled.log_marginal_likelihood_ == pytest.approx(
        base.log_marginal_likelihood_ + jacobian, rel=1e-12)
    new = _table(seed=3, n=2, d=3)     # held-out rows: densities in units of c too
    np.testing.assert_allclose(scaled.score_samples(new * c),
                               base.score_samples(new) - 3 * math.log(c), rtol=1e-12)
    X = _table(seed=2, n=30, d=8)
    base = InfiniteBiclustering(n_sweeps=10, method="gibbs", random_state=0).fit(X)
    scaled = InfiniteBiclustering(n_sweeps=10, method="gibbs", random_state=0).fit(X * c)
    np.testing.assert_array_equal(scaled.row_samples_, base.row_samples_)
    np.testing.assert_allclose(scaled.log_joints_, base.log_joints_ - X.size * math.log(c),
                               rtol=1e-12)
    new = _table(seed=3, n=2, d=8)
    np.testing.assert_allclose(scaled.score_samples(new * c),
                               base.score_samples(new) - 8 * math.log(c), rtol=1e-12)


@pytest.mark.parametrize("c", [1e-300, 1e300])
def test_infinite_biclustering_at_the_ends_of_float64_finds_the_blocks(c):
    X = _table(seed=2, n=30, d=8)
    base = InfiniteBiclustering(n_sweeps=10, method="gibbs", random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaled = InfiniteBiclustering(n_sweeps=10, method="gibbs", random_state=0).fit(X * c)
    assert np.all(np.isfinite(scaled.log_joints_))
    assert adjusted_rand_score(base.row_labels_, scaled.row_labels_) == 1.0


@pytest.mark.parametrize("c", [TINY, HUGE])
def test_crosscat_normal_columns_are_unit_free(c):
    X = _table(seed=4, n=6, d=2)
    base = CrossCat(alpha_prior=None, n_sweeps=5, random_state=0).fit(X)
    scaled = CrossCat(alpha_prior=None, n_sweeps=5, random_state=0).fit(X * c)
    assert scaled.log_marginal_likelihood_ == pytest.approx(
        base.log_marginal_likelihood_ - X.size * math.log(c), rel=1e-12)
    new = _table(seed=5, n=2, d=2)     # exact held-out densities, in units of c too
    np.testing.assert_allclose(scaled.score_samples(new * c),
                               base.score_samples(new) - 2 * math.log(c), rtol=1e-12)
    X = _table(seed=4, n=40, d=4)
    base = CrossCat(n_sweeps=8, random_state=0).fit(X)
    scaled = CrossCat(n_sweeps=8, random_state=0).fit(X * c)
    np.testing.assert_array_equal(scaled.view_samples_, base.view_samples_)
    np.testing.assert_allclose(scaled.log_joints_, base.log_joints_ - X.size * math.log(c),
                               rtol=1e-9)
    assert scaled.score(X[:3] * c) == pytest.approx(base.score(X[:3]) - 4 * math.log(c),
                                                    rel=1e-9)


def test_crosscat_fits_and_simulates_at_1e300():
    X = _table(seed=4, n=40, d=4)
    model = CrossCat(n_sweeps=5, random_state=0).fit(X * 1e300)
    assert np.all(np.isfinite(model.log_joints_))
    exact = CrossCat(alpha_prior=None, n_sweeps=5, random_state=0).fit(X[:6] * 1e300)
    assert np.isfinite(exact.log_marginal_likelihood_)
    fitted = CrossCat(n_sweeps=5, random_state=0).fit(X)
    rows = fitted.simulate(3, given={0: 1e300}, random_state=0)
    assert rows.shape == (3, 4) and np.all(rows[:, 0] == 1e300)
    assert np.all(np.isfinite(rows))


# -- item 10: empty input at score -----------------------------------------------------
def test_crosscat_refuses_empty_input_at_score_and_impute():
    model = CrossCat(n_sweeps=5, random_state=0).fit(_table(n=8))
    for method in (model.score, model.score_samples, model.impute):
        with pytest.raises(ValueError, match="0 sample"):
            method(np.zeros((0, 3)))


# -- item 12: 0/1 data are Bernoulli cells by default ---------------------------------
def test_infinite_biclustering_infers_the_cell_type_like_crosscat():
    rng = np.random.default_rng(0)
    rows, columns = rng.integers(3, size=60), rng.integers(4, size=24)
    p = np.array([[0.9, 0.1, 0.8, 0.2], [0.1, 0.9, 0.2, 0.7], [0.8, 0.8, 0.1, 0.1]])
    X = (rng.random((60, 24)) < p[rows][:, columns]).astype(float)
    model = InfiniteBiclustering(n_sweeps=30, random_state=0).fit(X)
    assert model.likelihood == "auto"
    assert isinstance(model.model_, BernoulliCells)
    assert adjusted_rand_score(rows, model.row_labels_) > 0.8
    assert adjusted_rand_score(columns, model.column_labels_) > 0.8
    assert isinstance(InfiniteBiclustering(n_sweeps=5).fit(_table()).model_, NormalCells)
    codes = rng.integers(5, size=(6, 4)).astype(float)
    assert isinstance(InfiniteBiclustering(n_sweeps=5).fit(codes).model_, CategoricalCells)


# -- crashes that become clear errors ---------------------------------------------------
@pytest.mark.parametrize("estimator, key", [
    (BayesianHierarchicalClustering(), "likelihood__kappa"),
    (DPMixture(), "likelihood__kappa"),
    (InfiniteBiclustering(), "likelihood__strength"),
    (CrossCat(), "likelihood__strength"),
])
def test_nested_parameters_of_a_named_model_are_a_clear_error(estimator, key):
    with pytest.raises(ValueError, match="not an estimator"):
        estimator.set_params(**{key: -1})


def test_infinite_biclustering_bicluster_index_out_of_range():
    model = InfiniteBiclustering(n_sweeps=5, random_state=0).fit(_table())
    n = model.rows_.shape[0]
    with pytest.raises(ValueError, match=rf"\[0, {n}\)"):
        model.get_shape(99)
    with pytest.raises(ValueError, match=rf"\[0, {n}\)"):
        model.get_indices(-1 - n)


def test_categorical_codes_beyond_the_largest_category_count_are_refused():
    codes = np.random.default_rng(0).integers(3, size=(6, 4)).astype(float)
    with pytest.raises(ValueError, match="category codes"):
        InfiniteBiclustering("categorical", n_sweeps=5).fit(codes * 1e300)
