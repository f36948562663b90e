"""Exact bipartitions against brute force, and against DIANA on their own criterion."""

import itertools

import numpy as np
import pytest
from oracles import min_over_bipartitions

from sklearn_trellis.engines.divisive import (CRITERIA, best_bipartition, divisive_tree,
                                              split_criterion)
from sklearn_trellis.engines.divisive._diana_kernels import diana_split, r_dissimilarities
from sklearn_trellis.engines.divisive.exact_split import pair_sum_table


def random_matrices(rng, m):
    X = rng.normal(size=(m, 3))
    D = r_dissimilarities.serial(X, False, False)[0]
    return D, np.exp(-D / np.median(D[np.triu_indices(m, 1)]))


def test_pair_sum_table_is_the_subset_sum():
    rng = np.random.default_rng(0)
    values = rng.random((7, 7))
    values = values + values.T
    table = pair_sum_table(values)
    for mask in range(1 << 7):
        items = [i for i in range(7) if mask >> i & 1]
        expected = sum(values[i, j] for i, j in itertools.combinations(items, 2))
        assert table[mask] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("criterion", sorted(CRITERIA))
@pytest.mark.parametrize("m", range(2, 13))
def test_exact_is_the_brute_force_optimum(criterion, m):
    rng = np.random.default_rng(100 + m)
    D, W = random_matrices(rng, m)
    values = D if CRITERIA[criterion] == "dissimilarity" else W
    left, value = best_bipartition(values, criterion)
    assert 0 < left.sum() < m
    assert value == pytest.approx(split_criterion(values, left, criterion), rel=1e-10)
    brute_force = min_over_bipartitions(m, lambda mask: split_criterion(values, mask, criterion))
    assert value == pytest.approx(brute_force, rel=1e-10, abs=1e-12)


def diana_split_mask(D):
    m = D.shape[0]
    ner = np.arange(m, dtype=np.int64)
    jmb = diana_split(np.ascontiguousarray(D), ner, 0, m - 1, np.zeros(m), np.zeros(m))
    mask = np.zeros(m, bool)
    mask[ner[:jmb]] = True
    return mask


@pytest.mark.parametrize("criterion", sorted(CRITERIA))
@pytest.mark.parametrize("seed", range(8))
def test_exact_never_worse_than_diana(criterion, seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 16))
    D, W = random_matrices(rng, m)
    values = D if CRITERIA[criterion] == "dissimilarity" else W
    _, exact = best_bipartition(values, criterion)
    assert exact <= split_criterion(values, diana_split_mask(D), criterion) + 1e-12


def test_average_criterion_is_exact_two_means_on_squared_distances():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(10, 2))
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    left, value = best_bipartition(D, "average")

    def within_ss(mask):
        return sum(((X[part] - X[part].mean(0)) ** 2).sum() for part in (mask, ~mask))

    assert value == pytest.approx(within_ss(left))
    best = min(within_ss(np.array([(k >> i) & 1 for i in range(10)], bool))
               for k in range(1, 2 ** 9))
    assert value == pytest.approx(best)


def test_exact_tree_splits_are_optimal_and_fall_back_above_the_size():
    rng = np.random.default_rng(5)
    D, _ = random_matrices(rng, 14)
    tree = divisive_tree("exact", distances=D, max_exact_size=10)
    assert tree.fallback_sizes == [14] or tree.fallback_sizes[0] == 14
    assert all(size > 10 for size in tree.fallback_sizes)
    small = divisive_tree("exact", distances=D[:9, :9], max_exact_size=10)
    assert small.fallback_sizes == []
    # The root split of the small tree is the optimum of the whole set.
    left, _ = best_bipartition(D[:9, :9], "average")
    sets = [frozenset([i]) for i in range(9)]
    for a, b in small.children:
        sets.append(sets[a] | sets[b])
    root_children = {sets[small.children[-1][0]], sets[small.children[-1][1]]}
    assert frozenset(np.flatnonzero(left).tolist()) in root_children


def test_bad_arguments():
    with pytest.raises(ValueError, match="criterion"):
        best_bipartition(np.zeros((3, 3)), "nope")
    with pytest.raises(ValueError, match="out of reach"):
        best_bipartition(np.zeros((25, 25)), "average")
    with pytest.raises(ValueError, match="max_exact_size"):
        divisive_tree("exact", distances=np.zeros((3, 3)), max_exact_size=30)
