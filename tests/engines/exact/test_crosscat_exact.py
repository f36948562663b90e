"""Exact CrossCat enumeration against a brute-force joint sum over every structure."""

import itertools

import numpy as np
import pytest
from scipy.special import betaln, gammaln, logsumexp

from oracles import set_partitions
from sklearn_trellis._core.labels import set_partitions as rgs
from sklearn_trellis.engines.exact.crosscat import exact_crosscat
from sklearn_trellis.engines.gibbs import crosscat as engine
from sklearn_trellis.models import CELL_MODELS
from sklearn_trellis.models.priors import GammaHyperprior


def _crp(labels, alpha):
    sizes = np.bincount(labels)
    n = labels.size
    return (sizes.size * np.log(alpha) + gammaln(sizes).sum() + gammaln(alpha)
            - gammaln(alpha + n))


def _bernoulli(cells, a, b):
    cells = cells[~np.isnan(cells)]
    return betaln(a + cells.sum(), b + cells.size - cells.sum()) - betaln(a, b)


def _categorical(cells, beta):
    cells = cells[~np.isnan(cells)].astype(int)
    counts = np.bincount(cells, minlength=beta.size)
    return (gammaln(beta.sum()) - gammaln(beta.sum() + cells.size)
            + np.sum(gammaln(beta + counts) - gammaln(beta)))


def _column_factor(x, labels, grid, kind):
    """log sum_g prior(g) prod_k m(x_k | g), written from the formulas."""
    params, log_prior = grid
    terms = []
    for p, lp in zip(params, log_prior):
        if kind == "bernoulli":   # params [a, b]
            terms.append(lp + sum(_bernoulli(x[labels == k], p[0], p[1])
                                  for k in np.unique(labels)))
        else:                     # params [k, sum(beta), beta (k)]
            terms.append(lp + sum(_categorical(x[labels == k], p[2:])
                                  for k in np.unique(labels)))
    return logsumexp(terms)


def test_exact_crosscat_matches_brute_force():
    X = np.array([[0, 1, 2], [0, 1, 0], [1, 0, 2], [1, np.nan, 1]], dtype=float)
    kinds = ["bernoulli", "bernoulli", "categorical"]
    cells = [CELL_MODELS[k]().fit(X[:, j]) for j, k in enumerate(kinds)]
    grids = [c.hyperparameter_grid() for c in cells]
    assert all(len(g[1]) > 1 for g in grids)
    alpha_views, alpha_rows = 0.7, 1.3
    model = engine.CrossCatModel(cells, X, engine.ConcentrationPrior(alpha_views),
                                 engine.ConcentrationPrior(alpha_rows))
    exact = exact_crosscat(model)
    n, d = X.shape
    factors = {}   # a column's factor depends on its row partition only: computed once

    def column_factor(j, labels):
        key = (j, tuple(labels))
        if key not in factors:
            factors[key] = _column_factor(X[:, j], labels, grids[j], kinds[j])
        return factors[key]

    joints, same_view, co_rows = [], [], []
    for views in set_partitions(d):
        n_views = views.max() + 1
        for rows in itertools.product(set_partitions(n), repeat=n_views):
            log_p = _crp(views, alpha_views)
            for v in range(n_views):
                log_p += _crp(rows[v], alpha_rows)
                for j in np.flatnonzero(views == v):
                    log_p += column_factor(j, rows[v])
            joints.append(log_p)
            same_view.append(views[:, None] == views[None, :])
            co_rows.append([rows[views[j]][:, None] == rows[views[j]][None, :]
                            for j in range(d)])
    joints = np.array(joints)
    weights = np.exp(joints - logsumexp(joints))
    assert exact.log_marginal_likelihood == pytest.approx(logsumexp(joints), rel=1e-10)
    np.testing.assert_allclose(exact.dependence_probability,
                               np.tensordot(weights, np.array(same_view, float), axes=1),
                               atol=1e-12)
    np.testing.assert_allclose(exact.row_similarity,
                               np.tensordot(weights, np.array(co_rows, float), axes=1),
                               atol=1e-12)


def test_set_partitions_are_bell_many_and_distinct():
    for n, bell in [(1, 1), (3, 5), (5, 52)]:
        parts = rgs(n)
        assert parts.shape == (bell, n)
        assert len({tuple(p) for p in parts}) == bell
        assert {tuple(p) for p in parts} == {tuple(p) for p in set_partitions(n)}


def test_exact_refuses_large_tables_and_hyperpriors():
    X = np.zeros((9, 2))
    cells = [CELL_MODELS["bernoulli"]().fit(X[:, j]) for j in range(2)]
    with pytest.raises(ValueError, match="at most"):
        exact_crosscat(engine.CrossCatModel(cells, X, engine.ConcentrationPrior(1.0),
                                            engine.ConcentrationPrior(1.0)))
    with pytest.raises(ValueError, match="fixed concentrations"):
        exact_crosscat(engine.CrossCatModel(cells, X[:3], engine.ConcentrationPrior(1.0),
                                            engine.ConcentrationPrior(1.0, GammaHyperprior())))
