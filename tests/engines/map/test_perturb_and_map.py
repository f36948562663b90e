"""Perturb-and-MAP marginals and the MAP solvers it calls."""

import numpy as np
import pytest

from oracles import correlation_log_potentials, flat_summaries, set_partitions
from sklearn_trellis.models import CorrelationClusteringModel
from sklearn_trellis.engines import ExactFlatTrellis
from sklearn_trellis.engines.exact.flat import exact_flat_map
from sklearn_trellis.engines.map.milp import clustering_objective
from sklearn_trellis.engines.map.perturb_and_map import (MilpMapSolver, TrellisMapSolver,
                                                     perturb_and_map)


def symmetric(rng, n, scale=1.0):
    a = np.triu(scale * rng.standard_normal((n, n)), 1)
    return a + a.T


@pytest.mark.parametrize("n", [1, 2, 4, 7, 10])
def test_exact_flat_map_matches_full_trellis(n):
    rng = np.random.default_rng(n)
    table = 3 * rng.standard_normal(1 << n)
    table[0] = 0.0
    table[rng.random(1 << n) < 0.2] = -np.inf
    table[[1 << i for i in range(n)]] = 0.0  # singletons allowed: some clustering is
    value, labels = exact_flat_map(table)
    trellis = ExactFlatTrellis(table).fit()
    assert value == trellis.map_log_potential
    assert labels.tolist() == trellis.map_labels.tolist()


def test_solvers_agree_with_brute_force():
    rng = np.random.default_rng(2)
    n = 7
    affinity = symmetric(rng, n)
    parts = set_partitions(n)
    best = parts[flat_summaries(parts, correlation_log_potentials(parts, affinity, 1.0))
                 ["map_index"]]
    W = 2.0 * affinity
    for solver in (TrellisMapSolver(), MilpMapSolver()):
        labels = solver(W)
        assert clustering_objective(W, labels) == pytest.approx(clustering_objective(W, best))


@pytest.mark.parametrize("solver", ["trellis", "milp"])
def test_zero_noise_gives_the_map(solver):
    rng = np.random.default_rng(0)
    W = symmetric(rng, 8)
    exact = ExactFlatTrellis(CorrelationClusteringModel(0.5).fit(W).log_potential_table()).fit()
    result = perturb_and_map(W, n_samples=5, noise_scale=0.0, map_solver=solver,
                             random_state=0)
    assert result.solver == solver
    assert (result.samples == exact.map_labels).all()
    same = exact.map_labels[:, None] == exact.map_labels[None, :]
    np.testing.assert_array_equal(result.pairwise_marginals, same.astype(float))
    assert result.n_uncertified == (0 if solver == "milp" else None)


def test_marginals_are_symmetric_reproducible_and_match_samples():
    rng = np.random.default_rng(1)
    W = symmetric(rng, 9)
    a = perturb_and_map(W, n_samples=40, random_state=3)
    b = perturb_and_map(W, n_samples=40, random_state=np.random.RandomState(3))
    c = perturb_and_map(W, n_samples=40, random_state=4)
    np.testing.assert_array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)
    p = a.pairwise_marginals
    np.testing.assert_array_equal(p, p.T)
    np.testing.assert_array_equal(np.diag(p), 1.0)
    same = (a.samples[:, :, None] == a.samples[:, None, :]).mean(axis=0)
    np.testing.assert_allclose(p, same)
    # Samples are labelled in order of first appearance.
    for row in a.samples:
        firsts = [row[: i + 1].max() for i in range(row.size)]
        assert row[0] == 0 and all(x <= f for x, f in zip(row, firsts))


@pytest.mark.parametrize("noise", ["gumbel", "logistic"])
def test_marginals_track_exact_ones(noise):
    # A baseline, not an exact method: only a clear positive correlation is claimed.
    rng = np.random.default_rng(5)
    n, beta = 8, 1.0
    affinity = symmetric(rng, n)
    trellis = ExactFlatTrellis(CorrelationClusteringModel(beta).fit(affinity)
                               .log_potential_table()).fit()
    exact = trellis.pairwise_marginals()
    result = perturb_and_map(2 * beta * affinity, n_samples=200, noise=noise,
                             random_state=0)
    iu = np.triu_indices(n, 1)
    assert np.corrcoef(exact[iu], result.pairwise_marginals[iu])[0, 1] > 0.5


def test_gumbel_noise_favours_joining():
    # Gumbel noise has mean 0.577 > 0: pairs with zero gain join more often than
    # under zero-mean logistic noise, the bias the paper reports.
    W = np.zeros((6, 6))
    gumbel = perturb_and_map(W, n_samples=100, noise="gumbel", random_state=0)
    logistic = perturb_and_map(W, n_samples=100, noise="logistic", random_state=0)
    iu = np.triu_indices(6, 1)
    assert gumbel.pairwise_marginals[iu].mean() > logistic.pairwise_marginals[iu].mean()


def test_custom_solver_and_auto_choice():
    W = symmetric(np.random.default_rng(0), 5)
    calls = []

    def singletons(weights):
        calls.append(weights.copy())
        return np.arange(weights.shape[0])

    result = perturb_and_map(W, n_samples=3, map_solver=singletons, random_state=0)
    assert len(calls) == 3 and result.solver.startswith("<function")
    np.testing.assert_array_equal(result.pairwise_marginals, np.eye(5))
    # The solver sees symmetric perturbed gains with a zero diagonal.
    for perturbed in calls:
        np.testing.assert_array_equal(perturbed, perturbed.T)
        assert not np.any(np.diag(perturbed))
    assert perturb_and_map(W, n_samples=1).solver == "trellis"
    big = symmetric(np.random.default_rng(0), 17, scale=0.01) + 5.0
    np.fill_diagonal(big, 0.0)
    assert perturb_and_map(big, n_samples=1, noise_scale=0.0).solver == "milp"


def test_bad_input():
    W = np.zeros((3, 3))
    with pytest.raises(ValueError, match="noise_scale"):
        perturb_and_map(W, noise_scale=-1.0)
    with pytest.raises(TypeError, match="n_samples"):
        perturb_and_map(W, n_samples=2.5)
    with pytest.raises(ValueError, match="noise"):
        perturb_and_map(W, noise="normal")
    with pytest.raises(ValueError, match="map_solver"):
        perturb_and_map(W, map_solver="beam")
    with pytest.raises(ValueError, match="symmetric"):
        perturb_and_map(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        perturb_and_map(W, n_samples=1, map_solver=lambda w: np.zeros(2, int))
    with pytest.raises(ValueError, match="N <= 4"):
        TrellisMapSolver(max_items=4)(np.zeros((5, 5)))
