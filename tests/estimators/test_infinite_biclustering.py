"""InfiniteBiclustering: exact mode against an independent brute force, Gibbs co-clustering
frequencies against exact mode, the bicluster API, missing entries, warm starts, errors."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, consensus_score

from oracles import biclustering_by_enumeration
from sklearn_trellis import InfiniteBiclustering
from sklearn_trellis.models.cells import BernoulliCells, NormalCells, PoissonCells


def small_matrix(kind, seed=0, shape=(5, 4)):
    rng = np.random.RandomState(seed)
    n, d = shape
    if kind == "normal":
        X = rng.normal(size=shape)
        X[:2, :2] += 2.0
    elif kind == "bernoulli":
        X = (rng.random_sample(shape) < 0.3).astype(float)
        X[:2, :2] = 1.0
    else:
        X = rng.poisson(1.0, size=shape).astype(float)
        X[:2, :2] += 3
    X[n - 2, 1] = np.nan   # a missing entry
    return X


@pytest.mark.parametrize("kind", ["normal", "bernoulli", "poisson"])
def test_exact_equals_brute_force(kind):
    X = small_matrix(kind)
    model = InfiniteBiclustering(likelihood=kind, alpha_rows=0.8, alpha_columns=1.3,
                                 point_estimate="map", n_sweeps=50, random_state=0).fit(X)
    assert model.method_ == "exact"
    log_z, row_pairwise, column_pairwise, map_rows, map_columns = biclustering_by_enumeration(
        kind, X, model.model_, 0.8, 1.3)
    assert model.log_marginal_likelihood_ == pytest.approx(log_z, abs=1e-8)
    assert np.allclose(model.row_pairwise_marginals_, row_pairwise, atol=1e-10)
    assert np.allclose(model.column_pairwise_marginals_, column_pairwise, atol=1e-10)
    assert adjusted_rand_score(model.row_labels_, map_rows) == 1.0
    assert adjusted_rand_score(model.column_labels_, map_columns) == 1.0
    assert model.row_samples_.shape == (50, 5) and model.column_samples_.shape == (50, 4)


def test_missing_entries_are_marginalised_not_zero():
    X = small_matrix("normal")
    cells = NormalCells(hyperprior="fixed", mean_prior=0.0, variance_prior=1.0, kappa=0.1)
    with_nan = InfiniteBiclustering(likelihood=cells, random_state=0).fit(X)
    filled = X.copy()
    filled[np.isnan(filled)] = 0.0
    with_zero = InfiniteBiclustering(likelihood=cells, random_state=0).fit(filled)
    assert not np.isclose(with_nan.log_marginal_likelihood_, with_zero.log_marginal_likelihood_)
    assert with_nan.log_marginal_likelihood_ == pytest.approx(
        biclustering_by_enumeration("normal", X, with_nan.model_, 1.0, 1.0)[0])


# the chain from singletons runs with the slow tests: the chain from one cluster checks the
# same co-clustering against exact in the fast set (2.5 CPU s each)
@pytest.mark.parametrize("init", ["one", pytest.param("singletons", marks=pytest.mark.slow)])
def test_gibbs_coclustering_frequencies_match_exact(init):
    X = small_matrix("normal", seed=1)
    exact = InfiniteBiclustering(method="exact", random_state=0).fit(X)
    gibbs = InfiniteBiclustering(method="gibbs", init=init, n_sweeps=2500, burn_in=50,
                                 n_split_merge=2, random_state=1).fit(X)
    assert gibbs.method_ == "gibbs"
    assert np.abs(gibbs.row_pairwise_marginals_ - exact.row_pairwise_marginals_).max() < 0.05
    assert np.abs(gibbs.column_pairwise_marginals_
                  - exact.column_pairwise_marginals_).max() < 0.05
    assert gibbs.hyperparameters_["rate"].shape == (2450,)


def test_concentration_hyperprior_moves_both_alphas():
    X = small_matrix("bernoulli", seed=2)
    model = InfiniteBiclustering(likelihood="bernoulli", alpha_prior=(2.0, 1.0), n_sweeps=200,
                                 random_state=0).fit(X)
    assert model.method_ == "gibbs"
    assert np.unique(model.alphas_rows_).size > 10
    assert np.unique(model.alphas_columns_).size > 10
    with pytest.raises(ValueError, match="alpha_prior"):
        InfiniteBiclustering(alpha_prior=(2.0, 1.0), method="exact").fit(X)


def planted(seed=0, noise=0.5):
    rng = np.random.RandomState(seed)
    rows = np.repeat([0, 1, 2], [20, 15, 10])
    columns = np.repeat([0, 1], [12, 18])
    means = rng.normal(scale=3.0, size=(3, 2))
    X = means[rows][:, columns] + rng.normal(scale=noise, size=(45, 30))
    order_rows, order_columns = rng.permutation(45), rng.permutation(30)
    return X[order_rows][:, order_columns], rows[order_rows], columns[order_columns]


def test_planted_blocks_are_recovered_and_the_bicluster_api_works():
    X, rows, columns = planted()
    X[3, 4] = np.nan
    model = InfiniteBiclustering(n_sweeps=60, random_state=0).fit(X)
    assert adjusted_rand_score(rows, model.row_labels_) == 1.0
    assert adjusted_rand_score(columns, model.column_labels_) == 1.0
    assert model.rows_.shape == (6, 45) and model.columns_.shape == (6, 30)
    truth_rows = np.repeat(rows[None, :] == np.arange(3)[:, None], 2, axis=0)
    truth_columns = np.tile(columns[None, :] == np.arange(2)[:, None], (3, 1))
    assert consensus_score((model.rows_, model.columns_),
                           (truth_rows, truth_columns)) == pytest.approx(1.0)
    row_idx, column_idx = model.get_indices(0)
    assert model.get_shape(0) == (row_idx.size, column_idx.size)
    assert np.array_equal(model.get_submatrix(0, X), X[np.ix_(row_idx, column_idx)])
    assert model.row_pairwise_marginals_.shape == (45, 45)
    assert model.log_joints_.shape == (30,)


def test_warm_start_appends_samples_and_chains_run_in_parallel():
    X, _, _ = planted(seed=1)
    model = InfiniteBiclustering(n_sweeps=10, n_chains=2, warm_start=True,
                                 random_state=0).fit(X)
    first = model.row_samples_.copy()
    assert first.shape == (10, 45)
    model.set_params(n_sweeps=4).fit(X)
    assert model.row_samples_.shape == (18, 45)   # 2 chains x 4 more sweeps, no burn-in
    assert np.array_equal(model.row_samples_[:10], first)
    with pytest.raises(ValueError, match="shape"):
        model.fit(X[:30])
    with pytest.raises(ValueError, match="features"):
        model.fit(X[:, :20])
    sequential = InfiniteBiclustering(n_sweeps=6, n_chains=2, init="random",
                                      random_state=3).fit(X)
    parallel = InfiniteBiclustering(n_sweeps=6, n_chains=2, init="random", n_jobs=2,
                                    random_state=3).fit(X)
    assert np.array_equal(sequential.row_samples_, parallel.row_samples_)
    assert np.array_equal(sequential.column_samples_, parallel.column_samples_)


def test_count_and_category_cells_run():
    rng = np.random.RandomState(0)
    rates = np.array([[0.5, 6.0], [6.0, 0.5]])
    rows, columns = np.repeat([0, 1], 15), np.repeat([0, 1], 10)
    X = rng.poisson(rates[rows][:, columns]).astype(float)
    model = InfiniteBiclustering(likelihood=PoissonCells(), n_sweeps=30, random_state=0).fit(X)
    assert adjusted_rand_score(rows, model.row_labels_) == 1.0
    codes = np.where(rng.random_sample(X.shape) < 0.9, (rows[:, None] + columns[None, :]) % 3,
                     rng.randint(3, size=X.shape))
    model = InfiniteBiclustering(likelihood="categorical", n_sweeps=30, random_state=0).fit(codes)
    assert adjusted_rand_score(rows, model.row_labels_) == 1.0
    assert adjusted_rand_score(columns, model.column_labels_) == 1.0


@pytest.mark.parametrize("params, X, error, match", [
    (dict(likelihood="gaussian"), np.zeros((3, 3)), ValueError, "likelihood"),
    (dict(likelihood="bernoulli"), np.full((3, 3), 2.0), ValueError, "binary"),
    (dict(method="exact"), np.zeros((9, 9)), ValueError, "partition pairs"),
    (dict(init=(np.zeros(3, int),), method="gibbs"), np.zeros((3, 3)), ValueError, "pair"),
    (dict(init=(np.zeros(2, int), np.zeros(3, int)), method="gibbs"), np.zeros((3, 3)),
     ValueError, "row labels"),
    (dict(burn_in=5, n_sweeps=5), np.zeros((3, 3)), ValueError, "burn_in"),
    (dict(alpha_prior=(1.0, 2.0, 3.0)), np.zeros((3, 3)), ValueError, "alpha_prior"),
    (dict(alpha_rows=0.0), np.zeros((3, 3)), ValueError, "alpha_rows"),
    (dict(), np.array([[0.0, np.inf]]), ValueError, "infinity"),
    (dict(likelihood=BernoulliCells(strength=-1.0)), np.zeros((3, 3)), ValueError, "strength"),
])
def test_bad_input_raises(params, X, error, match):
    with pytest.raises(error, match=match):
        InfiniteBiclustering(**params).fit(X)


def test_verbose_progress_and_fixed_hyperparameters(capsys):
    X, _, _ = planted(seed=2)
    cells = NormalCells(hyperprior="fixed")
    model = InfiniteBiclustering(likelihood=cells, n_sweeps=10, verbose=1, random_state=0).fit(X)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 10 and "[Bicluster chain 0] sweep 10/10" in lines[-1]
    assert model.hyperparameters_ is None
    assert model.alphas_rows_.tolist() == [1.0] * 5


def test_warm_start_on_new_data_restarts_from_the_last_state():
    # The stored chains' block statistics belong to the first matrix: on other
    # data of the same shape the fit equals a fit started from the chains' last
    # partitions (no old samples, no stale statistics); on the same data it appends.
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(20, 6)), rng.normal(5.0, 1.0, size=(20, 6))
    model = InfiniteBiclustering(n_sweeps=10, warm_start=True, random_state=0).fit(X1)
    n_first = model.log_joints_.size
    last = model._chains[0]
    model.fit(X2)
    cold = InfiniteBiclustering(n_sweeps=10, init=(last.row_labels, last.column_labels),
                                random_state=0).fit(X2)
    assert model.log_joints_.size == n_first
    np.testing.assert_allclose(model.log_joints_, cold.log_joints_)
    np.testing.assert_array_equal(model.row_samples_, cold.row_samples_)
    model.fit(X2)
    assert model.log_joints_.size == n_first + 10   # continuing: no burn-in


def test_new_values_outside_the_inferred_cell_type_say_it_was_inferred():
    X = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    model = InfiniteBiclustering(method="exact").fit(X)          # 'auto': bernoulli
    with pytest.raises(ValueError, match="'bernoulli' was inferred .*likelihood='auto'"):
        model.score_samples([[0.5, 1.0]])
    declared = InfiniteBiclustering("bernoulli", method="exact").fit(X)
    with pytest.raises(ValueError, match=r"binary cells \(0 or 1; NaN for missing\).$"):
        declared.score_samples([[0.5, 1.0]])


def test_a_matrix_without_observed_cells_is_refused():
    # 'auto' inferred 'bernoulli' from no value at all, and fit sampled the prior.
    with pytest.raises(ValueError, match="no observed cell"):
        InfiniteBiclustering(method="exact").fit(np.full((3, 2), np.nan))
    X = np.array([[0.2, np.nan], [1.5, np.nan], [3.1, np.nan]])   # one empty column is data
    assert InfiniteBiclustering(method="exact").fit(X).column_labels_.shape == (2,)


@pytest.mark.parametrize("method", ["exact", "gibbs"])
def test_a_row_with_nothing_observed_has_log_density_exactly_zero(method):
    X = np.array([[0.2, 1.3, 0.1], [1.5, 0.2, 2.0], [3.1, 2.2, 0.4]])
    model = InfiniteBiclustering(method=method, n_sweeps=10, random_state=0).fit(X)
    scores = model.score_samples([[np.nan] * 3, [np.nan, 1.0, np.nan]])
    assert scores[0] == 0.0          # was +-1e-16: sums of normalised weights
    assert scores[1] < 0.0


def test_exact_vi_estimates_minimise_the_exact_expected_vi():
    """Exact mode: row_labels_ and column_labels_ reach the smallest expected VI over every
    partition under the enumerated posterior, whatever the random_state (searched on the
    exact cluster marginals, not on the draws)."""
    from oracles import expected_losses_by_enumeration
    X = small_matrix("normal", seed=3)
    fits = [InfiniteBiclustering(likelihood="normal", alpha_rows=0.8, alpha_columns=1.3,
                                 n_sweeps=5, random_state=seed).fit(X) for seed in (0, 1)]
    model = fits[0]
    assert model.method_ == "exact" and model.point_estimate == "vi"
    *_, rows, row_probs, columns, column_probs = biclustering_by_enumeration(
        "normal", X, model.model_, 0.8, 1.3, return_probabilities=True)
    for labels, partitions, probs in ((model.row_labels_, rows, row_probs),
                                      (model.column_labels_, columns, column_probs)):
        losses = expected_losses_by_enumeration(partitions, "vi", weights=probs)[1]
        index = np.flatnonzero(np.all(partitions == labels, axis=1))[0]
        assert losses[index] <= losses.min() + 1e-10
    assert np.array_equal(fits[1].row_labels_, model.row_labels_)
    assert np.array_equal(fits[1].column_labels_, model.column_labels_)
