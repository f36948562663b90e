"""CrossCat estimator: column types, fitted attributes, queries, pickling, bad input."""

import pickle

import numpy as np
import pytest

from sklearn_trellis import CrossCat

try:
    import pandas as pd
except ImportError:  # DataFrame input is optional
    pd = None

needs_pandas = pytest.mark.skipif(pd is None, reason="pandas is not installed")


def _two_views(n=60, seed=0):
    rng = np.random.RandomState(seed)
    a, b = rng.randint(2, size=n), rng.randint(2, size=n)
    X = np.column_stack([a * 6 + rng.randn(n), a * 6 + rng.randn(n),
                         b * 6 + rng.randn(n), b * 6 + rng.randn(n)])
    return X, a, b


@pytest.fixture(scope="module")
def fitted():
    X, a, b = _two_views()
    return CrossCat(n_sweeps=200, random_state=0).fit(X), X, a, b


def test_recovers_two_views_and_their_rows(fitted):
    model, X, a, b = fitted
    assert model.method_ == "gibbs"
    np.testing.assert_array_equal(model.views_, [0, 0, 1, 1])
    assert model.dependence_probability_[0, 1] > 0.9 > 0.1 > model.dependence_probability_[0, 2]
    np.testing.assert_allclose(model.dependence_probability_, model.dependence_probability_.T)
    np.testing.assert_allclose(np.diag(model.dependence_probability_), 1.0)
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(a, model.view_row_labels_[0]) == 1.0
    assert adjusted_rand_score(b, model.view_row_labels_[1]) == 1.0
    # labels_: the rows of the view with most columns (a tie here: the view of column 0)
    np.testing.assert_array_equal(model.labels_, model.view_row_labels_[0])
    assert model.view_samples_.shape == (100, 4) and len(model.row_samples_) == 100
    assert model.log_joints_.shape == (100,)
    similarity = model.row_similarity(view_of=3)
    assert similarity.shape == (60, 60)
    np.testing.assert_allclose(similarity, similarity.T)
    assert np.all((similarity > 0.5) == (b[:, None] == b[None, :]))


def test_labels_follow_the_largest_view():
    rng = np.random.RandomState(1)
    n = 50
    a, b = rng.randint(2, size=n), rng.randint(3, size=n)
    X = np.column_stack([b * 6 + rng.randn(n), a * 6 + rng.randn(n), a * 6 + rng.randn(n),
                         a * 6 + rng.randn(n)])
    model = CrossCat(n_sweeps=40, random_state=0).fit(X)
    largest = np.argmax(np.bincount(model.views_))
    assert np.bincount(model.views_)[largest] == 3
    np.testing.assert_array_equal(model.labels_, model.view_row_labels_[largest])
    np.testing.assert_array_equal(model.fit_predict(X), model.labels_)


@needs_pandas
def test_mixed_dataframe_types_and_queries():
    rng = np.random.RandomState(0)
    n = 80
    z = rng.randint(2, size=n)
    frame = pd.DataFrame({
        "height": z * 5 + rng.randn(n),
        "smoker": np.where(rng.rand(n) < 0.9, z, 1 - z),
        "grade": (z * 2 + rng.randint(2, size=n)),
        "colour": pd.Categorical(np.where(z == 1, "red", "blue"), categories=["blue", "red"]),
        "visits": rng.poisson(1 + 6 * z),
    })
    frame.loc[3, "height"] = np.nan
    frame.loc[5, "colour"] = np.nan
    model = CrossCat(likelihood="auto", n_sweeps=30, random_state=0).fit(frame)
    assert model.column_types_ == ["normal", "bernoulli", "categorical", "categorical", "normal"]
    assert list(model.feature_names_in_) == list(frame.columns)
    declared = CrossCat(likelihood=["normal", "bernoulli", "categorical", "categorical",
                                      "poisson"], n_sweeps=30, random_state=0).fit(frame)
    assert declared.column_types_[-1] == "poisson"

    query = frame.iloc[:4].copy()
    query.loc[0, "colour"] = np.nan
    query.loc[1, "height"] = np.nan
    filled, proba = declared.impute(query, return_proba=True)
    assert isinstance(filled, pd.DataFrame)
    assert filled.notna().all().all()
    assert filled.loc[0, "colour"] == ("red" if z[0] else "blue")
    assert abs(filled.loc[1, "height"] - 5 * z[1]) < 2.0
    observed = query.notna()
    for name in frame.columns:
        kept = observed[name].to_numpy()
        assert list(filled[name][kept]) == list(query[name][kept])
    np.testing.assert_allclose(proba[3].sum(axis=1), 1.0)
    assert proba[3].shape == (4, 2)

    draws = declared.simulate(200, given={"colour": "red"}, random_state=0)
    assert draws.shape == (200, 5)
    assert set(draws[:, 3]) == {"red"}
    heights = draws[:, 0].astype(float)
    assert abs(np.mean(heights) - 5.0) < 1.0   # red rows are the z = 1 cluster
    assert set(np.unique(draws[:, 1].astype(float))) <= {0.0, 1.0}

    scores = declared.score_samples(frame)
    assert np.all(np.isfinite(scores))
    shifted = frame.copy()
    shifted["height"] = shifted["height"] + 40
    assert declared.score(frame) > declared.score(shifted)


def test_exact_mode_on_a_tiny_table():
    X = np.array([[0.1, 0, 1], [0.3, 0, 2], [2.2, 1, 1], [2.5, 1, 0]], dtype=float)
    model = CrossCat(alpha_views=1.0, alpha_rows=1.0, alpha_prior=None, n_sweeps=50, random_state=0).fit(X)
    assert model.method_ == "exact"
    assert np.isfinite(model.log_marginal_likelihood_)
    assert model.view_samples_.shape == (50, 3)
    np.testing.assert_allclose(np.diag(model.dependence_probability_), 1.0)
    with pytest.raises(ValueError, match="fixed concentrations"):
        CrossCat(method="exact").fit(X)


def test_pickle_round_trip(fitted):
    model, X, _, _ = fitted
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.labels_, model.labels_)
    assert clone.score(X[:10]) == pytest.approx(model.score(X[:10]))
    Xm = X[:5].copy()
    Xm[:, 1] = np.nan
    np.testing.assert_allclose(clone.impute(Xm), model.impute(Xm))


def test_warm_start_appends_samples():
    X, _, _ = _two_views(40)
    model = CrossCat(n_sweeps=10, random_state=0, warm_start=True).fit(X)
    first = model.view_samples_.shape[0]
    model.fit(X)
    assert model.view_samples_.shape[0] == first + 10


@needs_pandas
@pytest.mark.parametrize("make, error, match", [
    (lambda X: np.column_stack([X, np.full(len(X), np.nan)]), ValueError, "all NaN"),
    (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X), ValueError,
     "infinite"),
    (lambda X: pd.DataFrame({"x": X[:, 0], "s": ["a", "b"] * (len(X) // 2)}), TypeError,
     "declare it categorical"),
])
def test_bad_input_gets_clear_errors(make, error, match):
    X, _, _ = _two_views(20)
    with pytest.raises(error, match=match):
        CrossCat(n_sweeps=2).fit(make(X))


@needs_pandas
def test_declared_types_are_checked():
    X, _, _ = _two_views(20)
    with pytest.raises(ValueError, match="4 columns"):
        CrossCat(likelihood=["normal"], n_sweeps=2).fit(X)
    with pytest.raises(ValueError, match="Unknown column type"):
        CrossCat(likelihood=["normal", "normal", "normal", "gamma"], n_sweeps=2).fit(X)
    with pytest.raises(ValueError, match="bernoulli"):
        CrossCat(likelihood=["bernoulli"] * 4, n_sweeps=2).fit(X)
    strings = pd.DataFrame({"x": X[:, 0], "s": ["a", "b"] * 10})
    model = CrossCat(likelihood=["normal", "categorical"], n_sweeps=4,
                     random_state=0).fit(strings)
    assert model.column_types_ == ["normal", "categorical"]
    with pytest.raises(ValueError, match="not one of the categories"):
        model.impute(pd.DataFrame({"x": [0.0], "s": ["c"]}))
    with pytest.raises(ValueError, match="column"):
        model.row_similarity(view_of=7)
    with pytest.raises(ValueError, match="alpha_views"):
        CrossCat(alpha_views=(1.0, 2.0, 3.0), n_sweeps=2).fit(X)


def test_warm_start_on_new_data_restarts_from_the_last_state():
    # The views' statistics belong to the first table: on other data of the same
    # shape each chain restarts from its last state with the new table's statistics
    # (a burn-in, the old samples dropped); the same data appends.
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(20, 6)), rng.normal(5.0, 1.0, size=(20, 6))
    model = CrossCat(n_sweeps=10, warm_start=True, random_state=0).fit(X1)
    n_first = model.log_joints_.size
    first = model.log_joints_.copy()
    model.fit(X2)
    cold = CrossCat(n_sweeps=10, random_state=0).fit(X2)
    assert model.log_joints_.size == n_first == cold.log_joints_.size
    assert not np.isin(model.log_joints_, first).any()
    assert np.all(model.view_samples_.shape == cold.view_samples_.shape)
    model.fit(X2)
    assert model.log_joints_.size == n_first + 10   # continuing: no burn-in


def test_new_values_outside_an_inferred_column_type_say_it_was_inferred():
    # A column of 0/1 (or of small counts) seen in fit is inferred 'bernoulli' (or
    # 'categorical'); a new row's 0.1 was refused as if the user had "declared" it.
    X = np.array([[0.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    model = CrossCat(method="exact", alpha_prior=None).fit(X)
    with pytest.raises(ValueError, match="Column 0 holds values other than 0 and 1, but its "
                                         "type 'bernoulli' was inferred"):
        model.score_samples([[0.1, 1.0]])
    with pytest.raises(ValueError, match="not one of the categories seen in fit.*"
                                         "'categorical' was inferred"):
        model.score_samples([[1.0, 7.0]])
    declared = CrossCat(likelihood=["bernoulli", "normal"], method="exact",
                        alpha_prior=None).fit(X)
    with pytest.raises(ValueError, match="Column 0 is declared 'bernoulli' but holds values "
                                         "other than 0 and 1.$"):
        declared.score_samples([[0.1, 1.0]])


@pytest.mark.parametrize("method", ["exact", "gibbs"])
def test_a_row_with_nothing_observed_has_log_density_exactly_zero(method):
    X = np.array([[0.1, 1.0], [0.3, 2.0], [2.2, 1.0], [2.5, 0.0]])
    model = CrossCat(method=method, alpha_prior=None, n_sweeps=10, random_state=0).fit(X)
    scores = model.score_samples([[np.nan, np.nan], [np.nan, 1.0]])
    assert scores[0] == 0.0          # was +-1e-16: sums of normalised weights
    assert scores[1] < 0.0
