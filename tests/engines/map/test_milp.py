"""Exact MAP of correlation clustering by MILP against the exact flat trellis."""

import itertools

import numpy as np
import pytest

from oracles import canonical
from sklearn_trellis.models import CorrelationClusteringModel
from sklearn_trellis.engines import ExactFlatTrellis
from sklearn_trellis.engines.map import _milp_kernels as kernels
from sklearn_trellis._core import budget
from sklearn_trellis.engines.map.milp import (clustering_objective,
                                              correlation_clustering_map_milp, milp_memory_bytes)


def symmetric(rng, n, kind):
    if kind == "normal":
        a = rng.standard_normal((n, n))
    elif kind == "positive":
        a = rng.random((n, n)) + 0.01
    elif kind == "negative":
        a = -rng.random((n, n)) - 0.01
    elif kind == "ties":  # many equal objectives, zero weights
        a = rng.integers(-1, 2, size=(n, n)).astype(float)
    elif kind == "sparse":  # mostly negative, several positive components
        a = np.where(rng.random((n, n)) < 0.25, rng.random((n, n)), -rng.random((n, n)))
    a = np.triu(a, 1)
    return a + a.T


def trellis_map(affinity, beta):
    model = CorrelationClusteringModel(beta).fit(affinity)
    return ExactFlatTrellis(model.log_potential_table()).fit()


@pytest.mark.parametrize("kind", ["normal", "positive", "negative", "ties", "sparse"])
@pytest.mark.parametrize("seed", range(4))
def test_matches_exact_trellis(kind, seed):
    rng = np.random.default_rng(seed)
    n = 10 if seed < 2 else int(rng.integers(2, 10))
    beta = 0.5 + seed
    affinity = symmetric(rng, n, kind)
    trellis = trellis_map(affinity, beta)
    result = correlation_clustering_map_milp(2 * beta * affinity)
    scale = max(1.0, 2 * beta * np.abs(affinity).max())
    assert result.certified and result.status == "optimal"
    assert result.objective == pytest.approx(trellis.map_log_potential, abs=1e-6 * scale)
    # The labels achieve the reported objective, as cluster log-potentials too.
    model = CorrelationClusteringModel(beta).fit(affinity)
    assert result.objective == pytest.approx(
        model.log_potential(result.labels) - model.log_potential_constant(), abs=1e-9 * scale)
    assert result.upper_bound >= result.objective
    assert result.gap == pytest.approx(0.0, abs=1e-6)
    assert canonical(result.labels) == tuple(result.labels)
    if kind == "negative":
        assert result.labels.tolist() == list(range(n))
    if kind == "positive":
        assert result.labels.tolist() == [0] * n


def test_single_item_and_pair():
    one = correlation_clustering_map_milp(np.zeros((1, 1)))
    assert one.labels.tolist() == [0] and one.objective == 0.0 and one.certified
    pair = correlation_clustering_map_milp(np.array([[0.0, 2.0], [2.0, 0.0]]))
    assert pair.labels.tolist() == [0, 0] and pair.objective == 2.0 and pair.certified


def test_violated_triangles_match_enumeration():
    rng = np.random.default_rng(3)
    n = 9
    w = symmetric(rng, n, "normal")
    x = rng.random((n, n))
    x = np.triu(x, 1)
    x = x + x.T
    for values in (x, (x > 0.5).astype(float)):
        legs_a, legs_b, base, violation, total = kernels.violated_triangles(
            values, w > 0, 1e-9, 10 ** 6)
        iu, ju = np.triu_indices(n, 1)
        pair = {(i, j): k for k, (i, j) in enumerate(zip(iu, ju))}
        expected = set()
        for a, b, c in itertools.permutations(range(n), 3):
            if a < c and (w[a, b] > 0 or w[b, c] > 0):
                if values[a, b] + values[b, c] - values[a, c] - 1 > 1e-9:
                    expected.add((pair[min(a, b), max(a, b)], pair[min(b, c), max(b, c)],
                                  pair[a, c]))
        got = set(zip(legs_a.tolist(), legs_b.tolist(), base.tolist()))
        assert got == expected and total == len(expected)
        # Each recorded violation is the inequality's value.
        xv = values[iu, ju]
        np.testing.assert_allclose(violation, xv[legs_a] + xv[legs_b] - xv[base] - 1)
        # The cap keeps the first ones and still counts all.
        capped = kernels.violated_triangles(values, w > 0, 1e-9, 3)
        assert capped[0].size == min(3, total) and capped[4] == total


def test_greedy_clustering_is_locally_optimal():
    rng = np.random.default_rng(5)
    w = symmetric(rng, 25, "normal")
    labels = kernels.greedy_clustering(w)
    value = clustering_objective(w, labels)
    for i in range(25):  # no single move (to a cluster or a new singleton) gains
        for target in list(np.unique(labels)) + [labels.max() + 1]:
            moved = labels.copy()
            moved[i] = target
            assert clustering_objective(w, moved) <= value + 1e-9


def test_time_limit_returns_best_known_clustering():
    rng = np.random.default_rng(0)
    w = symmetric(rng, 12, "normal")
    exact = trellis_map(w / 2, 1.0).map_log_potential
    # No time for a single solve: the greedy or the given labels, uncertified.
    quick = correlation_clustering_map_milp(w, time_limit=1e-9)
    assert not quick.certified and quick.status == "time_limit"
    assert quick.objective == pytest.approx(clustering_objective(w, quick.labels))
    assert quick.objective <= exact + 1e-9 <= quick.upper_bound + 2e-9
    assert quick.gap == pytest.approx((quick.upper_bound - quick.objective)
                                      / abs(quick.objective))
    full = correlation_clustering_map_milp(w)
    given = correlation_clustering_map_milp(w, time_limit=1e-9, initial_labels=full.labels)
    assert given.objective == pytest.approx(exact, abs=1e-6)
    assert not given.certified


@pytest.mark.parametrize("time_limit", [0.05, 0.3])
def test_interrupted_solve_is_honest(time_limit):
    # Dense random signed weights are the hard case: a short budget usually
    # stops inside an LP or MILP round. Either outcome must be truthful.
    rng = np.random.default_rng(7)
    w = symmetric(rng, 17, "normal")
    exact = trellis_map(w / 2, 1.0).map_log_potential
    result = correlation_clustering_map_milp(w, time_limit=time_limit)
    assert result.objective == pytest.approx(clustering_objective(w, result.labels))
    assert result.objective <= exact + 1e-9 <= result.upper_bound + 2e-9
    if result.certified:
        assert result.objective == pytest.approx(exact, abs=1e-6)
    else:
        assert result.status == "time_limit" and result.gap > 0


def test_constraint_limit_is_uncertified():
    rng = np.random.default_rng(1)
    w = symmetric(rng, 12, "normal")
    exact = trellis_map(w / 2, 1.0).map_log_potential
    result = correlation_clustering_map_milp(w, max_constraints=1)
    assert result.objective <= exact + 1e-9 <= result.upper_bound + 2e-9
    if not result.certified:
        assert result.status == "constraint_limit"


def test_bad_input():
    w = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="square"):
        correlation_clustering_map_milp(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        correlation_clustering_map_milp(np.array([[0.0, 1.0], [2.0, 0.0]]))
    with pytest.raises(ValueError, match="finite"):
        correlation_clustering_map_milp(np.array([[0.0, np.nan], [np.nan, 0.0]]))
    with pytest.raises(TypeError, match="numeric"):
        correlation_clustering_map_milp(np.array([["a", "b"], ["b", "a"]]))
    with pytest.raises(ValueError, match="time_limit"):
        correlation_clustering_map_milp(w, time_limit=0)
    with pytest.raises(TypeError, match="max_items"):
        correlation_clustering_map_milp(w, max_items=2.5)
    with pytest.raises(ValueError, match="initial_labels"):
        correlation_clustering_map_milp(w, initial_labels=[0, 0, 0])
    # Refused before allocating, with the memory it would need.
    with pytest.raises(ValueError, match="max_items=10.*pair variables.*B of memory"):
        correlation_clustering_map_milp(np.zeros((11, 11)), max_items=10)
    # The cut pool never holds more cuts than there are (3 per triple; none for 2 items):
    # 10**15 allowed cuts need no more memory than 10**6 (it was refused as 2 PB).
    assert milp_memory_bytes(w.shape[0], 10 ** 15) == milp_memory_bytes(w.shape[0], 10 ** 6)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(budget, "available_memory_bytes", lambda: 100)
        with pytest.raises(ValueError, match="Not enough memory.*Lower max_constraints"):
            correlation_clustering_map_milp(w, max_constraints=10 ** 15)
