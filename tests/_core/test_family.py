"""ClusterFamily: deduplication, numbering, construction splits, per-vertex statistics."""

import itertools

import numpy as np
import pytest
from scipy.cluster.hierarchy import linkage

from sklearn_trellis.models._family_stats import family_item_sums, family_pair_sums
from sklearn_trellis._core.family import ClusterFamily


def scipy_children(X, method):
    return linkage(X, method=method)[:, :2].astype(np.int64)


def tree_clusters(children, n):
    members = [{i} for i in range(n)]
    for a, b in children:
        members.append(members[a] | members[b])
    return {frozenset(m) for m in members}


@pytest.mark.parametrize("seed", range(4))
def test_union_of_linkage_trees_is_deduplicated_and_sorted(seed):
    rng = np.random.default_rng(seed)
    n = 30
    X = rng.normal(size=(n, 3))
    trees = [scipy_children(X, m) for m in ("single", "average", "complete", "ward")]
    family = ClusterFamily.from_trees(trees, n)
    expected = set().union(*(tree_clusters(t, n) for t in trees))
    got = [frozenset(family.members(v).tolist()) for v in range(family.n_vertices)]
    assert len(got) == len(set(got)) == len(expected)
    assert set(got) == expected
    assert np.all(np.diff(family.sizes) >= 0)
    assert [family.members(i).tolist() for i in range(n)] == [[i] for i in range(n)]
    assert family.members(family.root).tolist() == list(range(n))
    # construction splits partition their vertex into two smaller vertices
    for v in range(n, family.n_vertices):
        left, right = family.build_left[v], family.build_right[v]
        assert left >= 0 and right >= 0
        assert (set(family.members(left).tolist()) | set(family.members(right).tolist())
                == set(got[v]))
        assert family.sizes[left] + family.sizes[right] == family.sizes[v]
    # each seed tree's nodes map to the right vertices
    for tree, vertices in zip(trees, family.seed_tree_vertices):
        members = [{i} for i in range(n)]
        for a, b in tree:
            members.append(members[a] | members[b])
        for node, v in enumerate(vertices):
            assert set(family.members(v).tolist()) == members[node]


def test_vertex_of_and_nested_trees():
    family = ClusterFamily.from_trees([(((0, 1), 2), (3, 4))], 5)
    assert family.vertex_of([1, 0]) >= 0
    assert family.vertex_of([0, 2]) == -1
    assert family.n_vertices == 5 + 4
    with pytest.raises(ValueError, match="items must be in"):
        family.vertex_of([7])


def test_powerset_and_statistics_match_direct_sums():
    rng = np.random.default_rng(3)
    n = 6
    w = rng.normal(size=(n, n))
    w = w + w.T
    x = rng.normal(size=(n, 2))
    family = ClusterFamily.powerset(n)
    assert family.n_vertices == 2 ** n - 1
    assert np.all(family.build_left[n:] >= 0)
    pair = family_pair_sums(w, family)
    lin = family_item_sums(x, family)
    for v in range(family.n_vertices):
        m = family.members(v)
        direct = sum(w[i, j] for i, j in itertools.combinations(m, 2))
        assert pair[v] == pytest.approx(direct, abs=1e-12)
        assert np.allclose(lin[:, v], x[m].sum(axis=0))


def test_clusters_without_split_use_direct_sums():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(7, 7))
    w = w + w.T
    family = ClusterFamily.from_clusters([[0, 3, 5], [2, 6, 1, 4]], 7)
    pair = family_pair_sums(w, family)
    for v in range(family.n_vertices):
        m = family.members(v)
        assert pair[v] == pytest.approx(sum(w[i, j] for i, j in itertools.combinations(m, 2)))


def test_bad_input():
    with pytest.raises(ValueError, match="children_"):
        ClusterFamily.from_trees([np.zeros((2, 2))], 4)
    with pytest.raises(ValueError, match="Invalid seed tree"):
        ClusterFamily.from_trees([np.array([[0, 1], [0, 2]])], 3)
    with pytest.raises(TypeError, match="n_items"):
        ClusterFamily.from_clusters([], 2.5)
    with pytest.raises(ValueError, match="non-empty"):
        ClusterFamily.from_clusters([[]], 3)
    with pytest.raises(ValueError, match="refusing"):
        ClusterFamily.powerset(30)
    with pytest.raises(ValueError, match="matrix"):
        family_pair_sums(np.zeros((2, 2)), ClusterFamily.powerset(3))


def test_large_deep_tree_is_fast_and_linear_memory():
    n = 5000
    chain = np.empty((n - 1, 2), dtype=np.int64)
    chain[0] = [0, 1]
    for k in range(1, n - 1):
        chain[k] = [n + k - 1, k + 1]
    family = ClusterFamily.from_trees([chain], n)
    assert family.n_vertices == 2 * n - 1
    assert family.items.size <= 2 * n + n


def test_similarity_checks_without_full_size_temporaries():
    from sklearn_trellis._core.pairwise import (check_pairwise_matrix, median_off_diagonal,
                                                  similarity_from_distances)
    rng = np.random.default_rng(1)
    d = rng.random((70, 70))
    d = d + d.T
    np.fill_diagonal(d, 0.0)
    skew = d.copy()
    skew[3, 5] += 1e-13            # rounding-size asymmetry is averaged away
    sym = check_pairwise_matrix(skew, "D")
    assert np.array_equal(sym, sym.T) and sym[3, 5] == pytest.approx(d[3, 5])
    skew[3, 5] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        check_pairwise_matrix(skew, "D")
    bad = d.copy()
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_pairwise_matrix(bad, "D")
    off = d[~np.eye(70, dtype=bool)]
    assert median_off_diagonal(d) == pytest.approx(np.median(off))
    assert median_off_diagonal(d[:5, :5]) == pytest.approx(np.median(d[:5, :5][~np.eye(5, dtype=bool)]))
    before = d.copy()
    s = similarity_from_distances(d, "exp", None)
    assert np.array_equal(d, before)          # the input is never modified
    expected = np.exp(-d / np.median(off))
    np.fill_diagonal(expected, 0.0)
    assert np.allclose(s, expected, rtol=1e-15, atol=0)
    p = similarity_from_distances(d, "precomputed", None)
    assert p is not d and np.array_equal(d, before)
