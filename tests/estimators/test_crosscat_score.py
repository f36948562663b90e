"""CrossCat.score: the held-out rows' log posterior predictive density (issue 28).

An exact fit sums every row's predictive over the whole enumerated posterior: against
``log p(X + x) - log p(X)`` from two exact fits' evidences; a Gibbs fit against exact
within Monte Carlo error."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_trellis import CrossCat
from sklearn_trellis.engines.gibbs.crosscat import view_predictives
from sklearn_trellis.models.cells import (BernoulliCells, CategoricalCells, NormalCells,
                                          PoissonCells)

# Priors that do not depend on the data (the grids too), so a fit on X and one on X + x
# use the same cell models and their evidences differ by log p(x | X) exactly.
DATA_FREE_CELLS = {
    "normal": lambda: NormalCells(mean_prior=0.0, variance_prior=1.0),   # grid over kappa
    "bernoulli": lambda: BernoulliCells(mean=0.4),                      # grid over strength
    "poisson": lambda: PoissonCells(mean=1.5),
    "categorical": lambda: CategoricalCells(n_categories=3, mean=[0.2, 0.3, 0.5]),
}


def _draw(kind, rng, n):
    if kind == "normal":
        return rng.normal(size=n)
    if kind == "bernoulli":
        return (rng.random_sample(n) < 0.4).astype(float)
    if kind == "poisson":
        return rng.poisson(1.5, size=n).astype(float)
    return np.append([0.0, 1.0, 2.0], rng.randint(3, size=n - 3))   # every category seen


@pytest.mark.parametrize("kinds, seed", [
    (("normal", "normal", "bernoulli"), 0),
    (("poisson", "categorical", "normal"), 1),
    (("bernoulli", "poisson", "categorical", "normal"), 2),
])
def test_exact_score_is_the_ratio_of_two_exact_evidences(kinds, seed):
    rng = np.random.RandomState(seed)
    n_rows = 5 if len(kinds) < 4 else 4
    table = np.column_stack([_draw(kind, rng, n_rows + 2) for kind in kinds])
    X, new = table[:n_rows], table[n_rows:]
    X[1, 0] = np.nan
    new[1, -1] = np.nan                     # a missing cell of a new row is marginalised
    params = dict(alpha_views=0.8, alpha_rows=1.3, alpha_prior=None, n_sweeps=5,
                  random_state=0)
    fit = lambda data: CrossCat([DATA_FREE_CELLS[k]() for k in kinds], **params).fit(data)
    fitted = fit(X)
    assert fitted.method_ == "exact"
    assert all(cell.hyperparameter_grid() is not None for cell in fitted.cell_models_)
    expected = [fit(np.vstack([X, row])).log_marginal_likelihood_
                - fitted.log_marginal_likelihood_ for row in new]
    assert np.allclose(fitted.score_samples(new), expected, rtol=0, atol=1e-10)
    assert fitted.score(new) == pytest.approx(np.mean(expected), abs=1e-10)


def test_exact_score_of_a_row_with_every_cell_missing_is_zero():
    X = np.random.RandomState(3).normal(size=(4, 2))
    fitted = CrossCat(alpha_prior=None, n_sweeps=5, random_state=0).fit(X)
    assert fitted.score_samples(np.full((1, 2), np.nan)) == pytest.approx([0.0], abs=1e-12)


@pytest.mark.slow   # statistical and loose (4 Monte Carlo errors); the exact tests are precise
def test_gibbs_score_matches_exact_within_monte_carlo_error():
    rng = np.random.RandomState(1)
    X = rng.normal(scale=0.5, size=(6, 3))
    X[:3, :2] += 3.0
    X[4, 2] = np.nan
    new = rng.normal(scale=0.5, size=(3, 3))
    new[0, :2] += 3.0
    new[2, 1] = np.nan
    # fixed cell hyperparameters: the picked samples differ by their structures only
    cells = [NormalCells(hyperprior="fixed") for _ in range(3)]
    params = dict(alpha_views=1.0, alpha_rows=1.0, alpha_prior=None)
    exact = CrossCat(cells, method="exact", n_sweeps=5, **params).fit(X).score_samples(new)
    gibbs = CrossCat(cells, method="gibbs", n_sweeps=400, burn_in=20, random_state=0,
                     **params).fit(X)
    # each picked sample's density: their spread gives the Monte Carlo error of the mean
    per_sample = np.exp([sum(logsumexp(v.log_weights, axis=1)
                             for v in view_predictives(gibbs.model_, sample, new))
                         for sample in gibbs._predictive_samples()])
    assert per_sample.shape == (25, 3)
    error = per_sample.std(axis=0) / per_sample.mean(axis=0) / np.sqrt(len(per_sample))
    difference = gibbs.score_samples(new) - exact
    assert np.all(np.abs(difference) < 4 * error + 0.01), (difference, error)


def test_gibbs_score_averages_the_shared_picks():
    """Up to 25 kept samples, evenly spaced and rounded to nearest (``predictive_picks``)."""
    X = np.random.RandomState(2).normal(size=(12, 2))
    model = CrossCat(n_sweeps=60, burn_in=0, random_state=0).fit(X)
    picked = model._predictive_samples()
    expected = np.linspace(0, 59, 25).round().astype(int)
    assert [id(s) for s in picked] == [id(model._samples[k]) for k in expected]


def test_exact_score_sums_the_grid_in_logs_where_the_scaled_sum_underflows(monkeypatch):
    """The grid sum is a matrix product of probabilities and scaled gains; the sums below
    ``_SMALLEST_SUM`` are redone in logs: forced for every entry, the scores agree."""
    from sklearn_trellis.engines.exact import crosscat as exact_engine
    rng = np.random.RandomState(0)
    X = rng.normal(size=(5, 2))
    new = rng.normal(size=(3, 2))
    new[1] *= 1e3
    new[2, 0] = 1e150                        # far out: its gains span hundreds of nats
    fitted = CrossCat(alpha_prior=None, n_sweeps=5, random_state=0).fit(X)
    by_product = fitted.score_samples(new)
    monkeypatch.setattr(exact_engine, "_SMALLEST_SUM", np.inf)
    assert np.allclose(fitted.score_samples(new), by_product, rtol=1e-13, atol=0)
