"""InfiniteBiclustering.score: the held-out rows' log posterior predictive density (issue 28).

Exact fits against brute force (``log p(X + x) - log p(X)``, by two exact fits and by the
oracle's enumeration), one Gibbs sample's predictive against a brute-force sum over
the new row's placements, Gibbs fits against exact within Monte Carlo error,
GridSearchCV with the default scoring, and the input checks."""

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV

from oracles import biclustering_by_enumeration, cell_block_log_marginal, log_eppf
from sklearn_trellis import InfiniteBiclustering
from sklearn_trellis.engines.gibbs.bicluster import make_blocks, new_row_log_weights
from sklearn_trellis.models.cells import (BernoulliCells, CategoricalCells, NormalCells,
                                          PoissonCells)
from sklearn_trellis.models.priors import CRP


def _draw(kind, rng, shape):
    if kind == "normal":
        return rng.normal(size=shape)
    if kind == "bernoulli":
        return (rng.random_sample(shape) < 0.4).astype(float)
    if kind == "poisson":
        return rng.poisson(1.5, size=shape).astype(float)
    return rng.randint(3, size=shape).astype(float)


# Priors that do not depend on the data (the grids too), so a fit on X and one on X + x
# use the same cell model and their evidences differ by log p(x | X) exactly.
DATA_FREE_CELLS = {
    "normal": lambda: NormalCells(mean_prior=0.0, variance_prior=1.0),   # grid over kappa
    "bernoulli": lambda: BernoulliCells(mean=0.4),                      # grid over strength
    "poisson": lambda: PoissonCells(mean=1.5),
    "categorical": lambda: CategoricalCells(n_categories=3, mean=[0.2, 0.3, 0.5]),
}


@pytest.mark.parametrize("kind", list(DATA_FREE_CELLS))
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_score_is_the_ratio_of_two_exact_evidences(kind, seed):
    rng = np.random.RandomState(seed)
    X, new = _draw(kind, rng, (4, 3)), _draw(kind, rng, (2, 3))
    X[0, 1] = np.nan
    new[1, 2] = np.nan                      # a missing cell of a new row is marginalised
    params = dict(likelihood=DATA_FREE_CELLS[kind](), alpha_rows=0.7, alpha_columns=1.4,
                  n_sweeps=5, random_state=0)
    fitted = InfiniteBiclustering(**params).fit(X)
    assert fitted.method_ == "exact" and fitted.model_.hyperparameter_grid() is not None
    expected = [InfiniteBiclustering(**params).fit(np.vstack([X, row])).log_marginal_likelihood_
                - fitted.log_marginal_likelihood_ for row in new]
    assert np.allclose(fitted.score_samples(new), expected, rtol=0, atol=1e-10)
    assert fitted.score(new) == pytest.approx(np.mean(expected), abs=1e-10)   # the mean
    assert fitted.score(new[:1]) == pytest.approx(expected[0], abs=1e-10)


@pytest.mark.parametrize("kind", ["normal", "bernoulli", "poisson"])
def test_exact_score_matches_the_enumeration_with_the_fitted_grid(kind):
    """The default cell models' grids follow the data: the oracle enumerates X + x under
    the model fitted to X (every pair and grid point, its own closed forms)."""
    rng = np.random.RandomState(3)
    X, x = _draw(kind, rng, (4, 3)), _draw(kind, rng, (1, 3))
    X[2, 0] = np.nan
    fitted = InfiniteBiclustering(likelihood=kind, alpha_rows=1.3, alpha_columns=0.6,
                                  n_sweeps=5, random_state=0).fit(X)
    log_z = biclustering_by_enumeration(kind, X, fitted.model_, 1.3, 0.6)[0]
    log_z_new = biclustering_by_enumeration(kind, np.vstack([X, x]), fitted.model_, 1.3, 0.6)[0]
    assert fitted.score(x) == pytest.approx(log_z_new - log_z, abs=1e-9)


def _oracle_sample_log_predictive(kind, X, x, rows, columns, params, alpha):
    """``log p(x | r, c, theta, X)`` by brute force: the new row in each place (every
    cluster of ``rows`` and a new one), ``log p(r + place, c, X + x) - log p(r, c, X)`` with
    the CRP's EPPF and the oracle's block marginals, summed."""
    def log_joint(data, labels):
        blocks = sum(cell_block_log_marginal(kind, data[np.ix_(labels == a, columns == b)]
                                             .ravel(), params[None])[0]
                     for a in range(labels.max() + 1) for b in range(columns.max() + 1))
        return log_eppf(np.bincount(labels), alpha) + blocks

    data = np.vstack([X, x])
    base = log_joint(X, rows)
    return logsumexp([log_joint(data, np.append(rows, place)) - base
                      for place in range(rows.max() + 2)])


@pytest.mark.parametrize("kind", ["normal", "bernoulli", "poisson"])
def test_one_samples_predictive_matches_the_brute_force_over_placements(kind):
    rng = np.random.RandomState(4)
    X, new = _draw(kind, rng, (6, 5)), _draw(kind, rng, (2, 5))
    X[1, 3] = new[0, 4] = np.nan
    rows, columns = np.array([0, 1, 0, 2, 1, 1]), np.array([0, 0, 1, 0, 1])
    cells = {"normal": NormalCells, "bernoulli": BernoulliCells,
             "poisson": PoissonCells}[kind]().fit(X)
    params = cells.hyperparameter_grid()[0][2]          # a grid point, not the start
    blocks = make_blocks(cells, X, np.ascontiguousarray(X.T))
    weights = new_row_log_weights(blocks[0], X, rows, columns, params, CRP(0.8), new)
    assert weights.shape == (2, 4)
    expected = [_oracle_sample_log_predictive(kind, X, x, rows, columns, params, 0.8)
                for x in new]
    assert np.allclose(logsumexp(weights, axis=1), expected, rtol=0, atol=1e-10)


def test_gibbs_score_matches_exact_within_monte_carlo_error():
    rng = np.random.RandomState(1)
    X = rng.normal(scale=0.5, size=(6, 4))
    X[:3, :2] += 3.0
    X[3:, 2:] -= 3.0
    X[3, 1] = np.nan
    new = rng.normal(scale=0.5, size=(3, 4))
    new[0, :2] += 3.0
    new[1, 2:] -= 3.0
    new[2] += 6.0            # far from every block: its density is the new-cluster term's
    new[2, 3] = np.nan
    # fixed cell hyperparameters: the picked samples differ by their partitions only (on
    # the grid, the far row's density is heavy-tailed over the samples and 25 samples do
    # not estimate their spread); each sample's own hyperparameters: the next test
    cells = NormalCells(hyperprior="fixed")
    exact = InfiniteBiclustering(cells, method="exact", n_sweeps=5).fit(X).score_samples(new)
    gibbs = InfiniteBiclustering(cells, method="gibbs", n_sweeps=300, burn_in=20,
                                 random_state=0).fit(X)
    # the density of each picked sample: their spread gives the Monte Carlo error of the mean
    per_sample = np.exp([logsumexp(w, axis=1) for _, w in gibbs._predictive(new)])
    assert per_sample.shape == (25, 3)
    error = per_sample.std(axis=0) / per_sample.mean(axis=0) / np.sqrt(len(per_sample))
    difference = gibbs.score_samples(new) - exact
    assert np.all(np.abs(difference) < 4 * error + 0.01), (difference, error)


def _log_mean_predictive(model, X, new):
    """The score by hand: the log mean over the picked kept samples (up to 25, evenly
    spaced) of each sample's predictive on the rows ``X``, at its own alpha_rows and cell
    parameters."""
    blocks = make_blocks(model.model_, X, np.ascontiguousarray(X.T))
    n_kept = model.row_samples_.shape[0]
    per_sample = []
    for s in np.unique(np.linspace(0, n_kept - 1, min(n_kept, 25)).round().astype(int)):
        rows = np.unique(model.row_samples_[s], return_inverse=True)[1]
        per_sample.append(logsumexp(new_row_log_weights(
            blocks[0], X, rows, model.column_samples_[s].astype(np.int64),
            model._pooled["cell_params"][s], CRP(model.alphas_rows_[s]), new), axis=1))
    return logsumexp(per_sample, axis=0) - np.log(len(per_sample))


def test_gibbs_scores_average_each_samples_own_hyperparameters():
    """Each picked sample is scored at its own alpha_rows and cell hyperparameters: the
    score is the log mean over the samples of the per-sample predictive."""
    rng = np.random.RandomState(2)
    X = (rng.random_sample((12, 6)) < 0.3).astype(float)
    model = InfiniteBiclustering(likelihood="bernoulli", alpha_prior=(1.0, 1.0), n_sweeps=30,
                                 random_state=0).fit(X)
    assert np.ptp(model.alphas_rows_) > 0 and np.ptp(model.hyperparameters_["a"]) > 0
    new = (rng.random_sample((2, 6)) < 0.3).astype(float)
    assert np.allclose(model.score_samples(new), _log_mean_predictive(model, X, new),
                       rtol=0, atol=1e-12)


def test_warm_starts_score_on_their_own_data_and_samples():
    rng = np.random.RandomState(5)
    X, other = (rng.random_sample((2, 12, 6)) < 0.3).astype(float)
    new = (rng.random_sample((2, 6)) < 0.3).astype(float)
    model = InfiniteBiclustering(likelihood=BernoulliCells(mean=0.3), n_sweeps=20,
                                 warm_start=True, random_state=0).fit(X)
    model.fit(X)                       # continued: 10 kept samples, then 30
    assert model.row_samples_.shape[0] == 30
    assert np.allclose(model.score_samples(new), _log_mean_predictive(model, X, new),
                       rtol=0, atol=1e-12)
    model.fit(other)                   # new data: the chains restart, the rows are other's
    assert np.allclose(model.score_samples(new), _log_mean_predictive(model, other, new),
                       rtol=0, atol=1e-12)


def _planted_bernoulli(n_rows, seed):
    """Rows in 3 clusters x columns in 2 clusters, cells Bernoulli(0.1 or 0.9) per block."""
    rng = np.random.RandomState(seed)
    rows, columns = np.arange(n_rows) % 3, np.arange(12) % 2
    p = np.array([[0.1, 0.9], [0.9, 0.1], [0.9, 0.9]])[rows[:, None], columns[None, :]]
    return (rng.random_sample((n_rows, 12)) < p).astype(float)


def test_grid_search_with_default_scoring_chooses_alpha_rows_and_a_cell_prior():
    X = _planted_bernoulli(30, seed=0)
    estimator = InfiniteBiclustering(likelihood=BernoulliCells(mean=0.5, hyperprior="fixed"),
                                     n_sweeps=20, random_state=0)
    search = GridSearchCV(estimator, {"alpha_rows": [1.0, 300.0],
                                      "likelihood__strength": [1.0, 300.0]}, cv=3).fit(X)
    # blocks of 0.1 / 0.9 are far from a Beta(150, 150) prior; alpha_rows=300 makes most
    # rows singletons, which predict a new row by the prior alone
    assert search.best_params_ == {"alpha_rows": 1.0, "likelihood__strength": 1.0}
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("X_new, error, match", [
    (np.zeros((1, 3)), ValueError, "features"),
    (np.array([[0.0, 1.0, np.inf, 0.0]]), ValueError, "infinity"),
    (np.array([["a", "b", "c", "d"]]), ValueError, "string|convert"),
    (np.array([[0.0, 1.0, 2.0, 0.0]]), ValueError, "binary"),
    (np.zeros((0, 4)), ValueError, "0 sample"),
])
def test_score_validates_the_new_rows(X_new, error, match):
    X = (np.random.RandomState(0).random_sample((5, 4)) < 0.5).astype(float)
    model = InfiniteBiclustering(likelihood="bernoulli", n_sweeps=5).fit(X)
    with pytest.raises(error, match=match):
        model.score(X_new)


def test_score_needs_a_fit():
    with pytest.raises(NotFittedError):
        InfiniteBiclustering().score(np.zeros((1, 3)))
