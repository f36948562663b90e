"""FastTIWD.score is the full held-out log predictive: every term that depends on
``dof`` is in it, so GridSearchCV's default scoring chooses ``dof`` (issue 28)."""

import numpy as np
import pytest
from sklearn.base import clone
from scipy.special import logsumexp
from scipy.stats import wishart
from sklearn.model_selection import GridSearchCV

from oracles import log_eppf, set_partitions
from sklearn_trellis import FastTIWD
from sklearn_trellis.datasets import make_wishart_blocks
from sklearn_trellis.models.wishart import (block_statistics, data_log_density_terms,
                                            new_item_data_terms, new_item_log_likelihoods)


def _sigma(labels, scale, theta):
    labels = np.asarray(labels)
    return scale * (np.eye(labels.size) + theta * (labels[:, None] == labels[None, :]))


def _log_wishart(S, labels, scale, theta, dof):
    """``log p(S)`` for ``d S ~ W_d(scale (I + theta B))`` (scipy's density)."""
    return wishart(df=dof, scale=_sigma(labels, scale, theta) / dof).logpdf(S)


def _model_draw(rng, labels, scale, theta, dof):
    """``S = Y Y^T / d`` with the d columns of ``Y`` drawn from ``N(0, Sigma_B)``."""
    Y = rng.multivariate_normal(np.zeros(len(labels)), _sigma(labels, scale, theta),
                                size=int(dof)).T
    return Y @ Y.T / dof


def test_one_partition_matches_the_ratio_of_wishart_densities():
    rng = np.random.default_rng(0)
    scale, theta, dof = 0.7, 1.5, 9.0
    labels = np.array([0, 0, 1, 1, 1, 2, 0])     # the last item is the new one
    big = _model_draw(rng, labels, scale, theta, dof)
    S, row, corner = big[:-1, :-1], big[-1:, :-1], big[-1:, -1]
    fitted = labels[:-1]
    sizes, sbars = block_statistics(S, fitted)
    row_sums = np.array([[row[0, fitted == b].sum() for b in range(3)]])
    ours = (new_item_log_likelihoods(sizes, sbars, row_sums, corner, np.trace(S), S.shape[0],
                                     theta, dof=dof, r0=0.0, s0=0.0, scale=scale)
            + new_item_data_terms(S, row, corner, dof=dof)[0][:, None])[0]
    before = _log_wishart(S, fitted, scale, theta, dof)
    for block in range(4):      # each existing block, then a new one
        after = _log_wishart(big, np.append(fitted, block), scale, theta, dof)
        assert ours[block] == pytest.approx(after - before, rel=1e-9)


def test_data_terms_refuse_a_dof_below_the_rank():
    S = np.eye(6)
    row, corner = np.full((1, 6), 0.1), np.array([1.0])    # Schur complement 0.94
    assert np.isneginf(new_item_data_terms(S, row, corner, dof=6.0)[0]).all()
    terms, rank = new_item_data_terms(S, row, corner, dof=6.5)
    assert np.isfinite(terms).all() and rank == 6


def test_score_equals_the_predictive_by_enumeration():
    # feature rows with normalization='none': S = X X^T; scale and theta fixed: exact mode,
    # whose score sums over every partition (the exact posterior of the n + 1 items)
    rng = np.random.default_rng(2)
    scale, theta, dof, alpha = 0.5, 30.0, 12.0, 0.8
    labels = np.array([0, 0, 0, 1, 1, 0])
    Y = rng.multivariate_normal(np.zeros(6), _sigma(labels, scale, theta), size=12).T
    X, new = Y[:5], Y[5:]
    model = FastTIWD(metric="sqeuclidean", normalization="none", scale=scale, theta=theta,
                     dof=dof, alpha=alpha, n_sweeps=25, random_state=0).fit(X)
    assert model.method_ == "exact"

    def log_evidence(S):
        parts = set_partitions(S.shape[0])
        return logsumexp([log_eppf(np.bincount(p), alpha) + _log_wishart(S, p, scale, theta, dof)
                          for p in parts])

    S_big = np.vstack([X, new]) @ np.vstack([X, new]).T
    expected = log_evidence(S_big) - log_evidence(S_big[:5, :5])
    assert model.score(new) == pytest.approx(expected, abs=1e-9)
    # deterministic: the exact draws (random_state) do not enter it
    other = clone(model).set_params(random_state=1, n_sweeps=3).fit(X)
    assert other.score(new) == model.score(new)


@pytest.mark.parametrize("dof", [7.0, 12.0])
def test_exact_log_marginal_likelihood_matches_enumeration(dof):
    # every term of the Wishart density, the data's alone included: log p(S) by summing
    # scipy's density over all partitions (full-rank S = X X^T, normalization='none')
    rng = np.random.default_rng(3)
    scale, theta, alpha = 0.5, 4.0, 0.8
    X = rng.standard_normal((6, 9))
    model = FastTIWD(metric="sqeuclidean", normalization="none", scale=scale, theta=theta,
                     dof=dof, alpha=alpha, n_sweeps=4, random_state=0).fit(X)
    assert model.method_ == "exact"
    S = model.inner_products_
    expected = logsumexp([log_eppf(np.bincount(p), alpha) + _log_wishart(S, p, scale, theta, dof)
                          for p in set_partitions(6)])
    assert model.log_marginal_likelihood_ == pytest.approx(expected, abs=1e-8)


def test_data_log_density_terms_refuse_a_dof_below_the_rank_minus_one():
    assert np.isneginf(data_log_density_terms(np.eye(4), dof=3.0)[0])
    terms, rank = data_log_density_terms(np.eye(4), dof=3.5)
    assert np.isfinite(terms) and rank == 4


def _selected_dof(n, dof, grid, cv, n_sweeps):
    data = make_wishart_blocks(n_samples=n, dof=dof, random_state=0)
    search = GridSearchCV(FastTIWD(n_sweeps=n_sweeps, random_state=0), {"dof": grid},
                          cv=cv).fit(data.distances)
    return search.best_params_["dof"]


def test_grid_search_recovers_dof_small():
    assert abs(_selected_dof(40, 80, [40, 60, 80, 110, 160], 2, 12) - 80) <= 0.15 * 80


@pytest.mark.slow
def test_grid_search_recovers_dof_large():
    grid = [180, 220, 260, 300, 340, 380, 450]
    assert abs(_selected_dof(200, 300, grid, 5, 40) - 300) <= 0.15 * 300


def test_score_warns_when_dof_does_not_exceed_the_rank():
    data = make_wishart_blocks(n_samples=30, dof=60, random_state=0)
    D = data.distances
    model = FastTIWD(dof=10.0, n_sweeps=6, random_state=0).fit(D[:20, :20])
    with pytest.warns(UserWarning, match="does not exceed the rank 19"):
        assert model.score(D[20:, :20]) == -np.inf


def test_score_on_low_dimensional_points_leaves_out_the_data_terms():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    model = FastTIWD(metric="sqeuclidean", dof=30.0, n_sweeps=6, random_state=0).fit(X[:15])
    with pytest.warns(UserWarning, match="rank 3 < 14"):
        assert np.isfinite(model.score(X[15:]))


def test_score_of_training_rows_is_minus_infinity_with_the_reason():
    # Features in more dimensions than items: S* has full rank, a fitted row scored
    # again lies in the span of the fitted items (Schur complement 0), a singular
    # Wishart with no density. Right by the model; the warning says why.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 50))
    model = FastTIWD(metric="sqeuclidean", n_sweeps=6, random_state=0).fit(X)
    with pytest.warns(UserWarning, match=r"-inf for 2 new item\(s\) \(rows 0, 2\).*span"):
        scores = model.score_samples(np.vstack([X[0], rng.normal(size=50), X[3]]))
    assert np.isneginf(scores[[0, 2]]).all() and np.isfinite(scores[1])


def _contrast(n):
    """``(n - 1, n)`` orthonormal rows orthogonal to ``1``."""
    q, _ = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, :n - 1]]))
    return q[:, 1:].T


def test_score_on_distances_equals_the_translation_invariant_predictive():
    """Distances: the score is the sampled partitions' mean of p(D_big | B) / p(D | B) of the
    translation-invariant model, every term included (the density of L S L^T for an
    orthonormal contrast L, the prior's predictive weight), by dense brute force."""
    from oracles import translation_invariant_wishart_log_likelihood as dense
    from sklearn.metrics import pairwise_distances

    rng = np.random.default_rng(2)
    scale, theta, dof, alpha = 0.5, 3.0, 12.0, 0.8
    labels = np.array([0, 0, 0, 1, 1, 0, 1])
    Y = rng.multivariate_normal(np.zeros(7), _sigma(labels, scale, theta), size=12).T
    D_big = pairwise_distances(Y, metric="sqeuclidean")
    n = 5
    model = FastTIWD(scale=scale, theta=theta, dof=dof, alpha=alpha, n_sweeps=40,
                     random_state=0).fit(D_big[:n, :n])
    assert model.method_ == "gibbs"
    small, big = _contrast(n), _contrast(n + 1)
    expected = []
    for item in (n, n + 1):
        D = D_big[np.ix_(list(range(n)) + [item], list(range(n)) + [item])]
        data_terms = (data_log_density_terms(big @ (-0.5 * D) @ big.T, dof=dof)[0]
                      - data_log_density_terms(small @ (-0.5 * D[:n, :n]) @ small.T,
                                               dof=dof)[0])
        per_sample = []
        for z in model.samples_[:25]:
            z = np.unique(z, return_inverse=True)[1]
            before = log_eppf(np.bincount(z), alpha) + dense(D[:n, :n], z, theta, dof=dof,
                                                             scale=scale)
            per_sample.append(logsumexp(
                [log_eppf(np.bincount(np.append(z, c)), alpha)
                 + dense(D, np.append(z, c), theta, dof=dof, scale=scale) - before
                 for c in range(z.max() + 2)]))
        expected.append(data_terms + logsumexp(per_sample) - np.log(len(per_sample)))
    np.testing.assert_allclose(model.score_samples(D_big[n:, :n]), expected, rtol=1e-8)
