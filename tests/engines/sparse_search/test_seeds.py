"""Seed trees: scipy linkages as ``children_`` arrays, and the beam's best distinct trees."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform
from sklearn.cluster import AgglomerativeClustering

from oracles import canonical_tree
from sklearn_trellis.models import DasguptaEnergy, HCCEnergy
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.map.search import beam_search_tree, greedy_tree
from sklearn_trellis._core.trees import scipy_to_children
from sklearn_trellis.engines.sparse.seeds import LINKAGES, beam_seed_trees, linkage_seed_trees


def node_sets(children, n):
    members = [frozenset([i]) for i in range(n)]
    for a, b in children:
        members.append(members[a] | members[b])
    return set(members)


@pytest.mark.parametrize("seed", range(3))
def test_linkage_trees_match_scikit_learn(seed):
    n = 25
    X = np.random.default_rng(seed).normal(size=(n, 3))
    trees = linkage_seed_trees(X)
    assert len(trees) == 4
    for name, tree in zip(LINKAGES, trees):
        assert tree.dtype == np.int64 and tree.shape == (n - 1, 2)
        ClusterFamily.from_trees([tree], n)       # a valid children_ array
        reference = AgglomerativeClustering(n_clusters=None, distance_threshold=0.0,
                                            compute_full_tree=True, linkage=name).fit(X)
        assert node_sets(tree, n) == node_sets(reference.children_, n), name


def test_precomputed_distances_give_the_same_trees():
    X = np.random.default_rng(4).normal(size=(15, 2))
    from_features = linkage_seed_trees(X)
    condensed = pdist(X)
    for other in (linkage_seed_trees(distances=condensed),
                  linkage_seed_trees(distances=squareform(condensed))):
        for a, b in zip(from_features, other):
            np.testing.assert_array_equal(a, b)
    cityblock = linkage_seed_trees(X, linkage=["average", "single"], metric="cityblock")
    assert len(cityblock) == 2


def test_scipy_conversion_and_small_inputs():
    from scipy.cluster.hierarchy import linkage
    X = np.array([[0.0], [0.1], [5.0], [5.3]])
    Z = linkage(X, "single")
    np.testing.assert_array_equal(scipy_to_children(Z), Z[:, :2].astype(np.int64))
    assert [t.shape for t in linkage_seed_trees(X[:1])] == [(0, 2)] * 4
    assert linkage_seed_trees(X[:2], linkage="ward")[0].tolist() == [[0, 1]]


def test_linkage_errors():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="exactly one"):
        linkage_seed_trees()
    with pytest.raises(ValueError, match="exactly one"):
        linkage_seed_trees(X, distances=np.zeros((4, 4)))
    with pytest.raises(ValueError, match="Unknown linkage"):
        linkage_seed_trees(X, linkage="centroid")
    with pytest.raises(ValueError, match="no linkage"):
        linkage_seed_trees(X, linkage=[])
    with pytest.raises(ValueError, match="Ward linkage needs"):
        linkage_seed_trees(X, metric="cityblock")
    with pytest.raises(ValueError, match="NaN"):
        linkage_seed_trees(np.array([[0.0], [np.nan]]))
    with pytest.raises(ValueError, match="symmetric"):
        linkage_seed_trees(distances=np.array([[0.0, 1.0], [2.0, 0.0]]))
    with pytest.raises(ValueError, match="N \\(N - 1\\) / 2"):
        linkage_seed_trees(distances=np.ones(4))
    with pytest.raises(ValueError, match="non-negative"):
        linkage_seed_trees(distances=-np.ones(3))
    with pytest.raises(ValueError, match="2-d"):
        linkage_seed_trees(np.zeros(3))


@pytest.mark.parametrize("energy", [DasguptaEnergy, HCCEnergy])
def test_beam_seed_trees_are_the_best_distinct_trees_of_the_beam(energy):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 2))
    model = energy().fit(squareform(pdist(x)))
    inputs = model.kernel_inputs()
    trees, values = beam_seed_trees(model, 40)
    assert 1 < len(trees) <= 40
    assert np.all(np.diff(values) <= 1e-12)
    # the first is the beam search's tree (the beam widened to 40 trees)
    best_tree, best_value = beam_search_tree(*inputs, beam_width=40)
    assert values[0] == pytest.approx(best_value)
    family = ClusterFamily.from_trees(trees, 8)
    nested = []
    for tree, value in zip(trees, values):
        members = list(range(8))
        for a, b in tree:
            members.append((members[a], members[b]))
        nested.append(canonical_tree(members[-1]))
        assert model.log_potential(members[-1]) == pytest.approx(value, abs=1e-9)
    assert nested[0] == canonical_tree(best_tree)
    assert len(set(nested)) == len(nested)             # distinct trees
    assert family.n_vertices > 2 * 8 - 1
    # a beam of width w keeps at most w trees; width 1 is the greedy tree
    few, _ = beam_seed_trees(model, 40, beam_width=3)
    assert len(few) <= 3
    one, one_value = beam_seed_trees(model, 1, beam_width=1)
    assert one_value[0] == pytest.approx(greedy_tree(*inputs)[1])
    with pytest.raises(ValueError, match="n_trees"):
        beam_seed_trees(model, 0)
    with pytest.raises(TypeError, match="n_trees"):
        beam_seed_trees(model, 2.5)



@pytest.mark.parametrize("energy", [DasguptaEnergy, HCCEnergy])
def test_beam_seed_trees_refuse_a_table_beyond_memory_before_building_it(energy,
                                                                         monkeypatch):
    """The ``2**N`` statistics table (two rows here: 2 * 8 * 2 * 2**10 bytes with its
    temporaries at N = 10) is refused before ``kernel_inputs`` builds it."""
    from sklearn_trellis._core import budget

    model = energy().fit(squareform(pdist(np.random.default_rng(1).normal(size=(10, 2)))))
    trees, _ = beam_seed_trees(model, 4)
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 2 * 8 * 2 * 2**10 / 0.8 - 1)

    def not_built(*args, **kwargs):
        raise AssertionError("the table was built")

    monkeypatch.setattr(model, "kernel_inputs", not_built)
    with pytest.raises(ValueError, match=r"Not enough memory: the beam search's table .*2\*\*10"):
        beam_seed_trees(model, 4)
    monkeypatch.undo()
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 2 * 8 * 2 * 2**10 / 0.8)
    again, _ = beam_seed_trees(model, 4)
    assert all(np.array_equal(a, b) for a, b in zip(trees, again))

def test_tree_windows_cover_the_tree_and_respect_the_budget():
    from scipy.cluster.hierarchy import linkage as scipy_linkage

    from sklearn_trellis.engines.sparse.seeds import tree_windows
    X = np.random.default_rng(0).normal(size=(200, 2))
    tree = scipy_linkage(X, "single")[:, :2].astype(np.int64)
    windows = tree_windows(tree, 200, size=6)
    assert all(2 <= len(w) <= 6 for w in windows)
    for w in windows:                      # pieces of a window are disjoint
        items = np.concatenate(w)
        assert items.size == np.unique(items).size
    # every internal node is a window root exactly once: (N - 1) merges covered
    assert sum(len(w) - 1 for w in windows) == 199
    cost = sorted((1 << (len(w) - 1)) * sum(p.size for p in w) for w in windows)
    budget = sum(cost[:10])
    kept = tree_windows(tree, 200, size=6, max_union_items=budget)
    assert len(kept) == 10
    with pytest.raises(ValueError, match="size"):
        tree_windows(tree, 200, size=1)
