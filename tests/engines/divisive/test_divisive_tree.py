"""Bisection splitters (K-means, K-medoids), feature diameters, trees and seed trees."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import cophenet, dendrogram, is_valid_linkage
from scipy.spatial.distance import pdist, squareform

from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis._core.trees import children_to_linkage, merge_to_children
from sklearn_trellis.engines.divisive import METHODS, divisive_seed_trees, divisive_tree
from sklearn_trellis.engines.divisive.bisection import (feature_diameter, two_means,
                                                         two_medoids)


def blobs(rng, n_per=15):
    centers = np.array([[0.0, 0.0], [8.0, 0.0], [30.0, 5.0]])
    return np.vstack([c + rng.normal(scale=0.5, size=(n_per, 2)) for c in centers])


@pytest.mark.parametrize("manhattan", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_feature_diameter_is_the_largest_distance(manhattan, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3)) * rng.random(3)
    members = np.sort(rng.choice(60, size=int(rng.integers(2, 60)), replace=False))
    expected = pdist(X[members], "cityblock" if manhattan else "euclidean").max()
    assert feature_diameter(X, members.astype(np.int64), manhattan) == pytest.approx(
        expected, rel=1e-14)


def test_two_means_and_two_medoids_separate_two_blobs():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    members = np.arange(40, dtype=np.int64)
    truth = np.repeat([0, 1], 20)
    labels = two_means(X, members, 7, 100)
    assert abs(np.corrcoef(labels, truth)[0, 1]) == pytest.approx(1.0)
    D = squareform(pdist(X))
    labels = two_medoids(D, members, 100)
    assert abs(np.corrcoef(labels, truth)[0, 1]) == pytest.approx(1.0)
    # Coincident points still give two non-empty parts.
    for labels in (two_means(np.zeros((5, 2)), members[:5], 0, 10),
                   two_medoids(np.zeros((5, 5)), members[:5], 10)):
        assert 0 < labels.sum() < 5


def medoid_cost(D, labels):
    return sum(D[np.ix_(part, part)].sum(axis=1).min()
               for part in (np.flatnonzero(labels == 0), np.flatnonzero(labels == 1)))


@pytest.mark.parametrize("seed", range(4))
def test_two_medoids_is_a_local_optimum_and_optimal_on_separated_sets(seed):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(5, 2)), rng.normal(size=(4, 2)) + 6.0])
    D = squareform(pdist(X))
    members = np.arange(9, dtype=np.int64)
    labels = two_medoids(D, members, 100)
    best = min(np.minimum(D[a], D[b]).sum() for a in range(9) for b in range(a + 1, 9))
    assert medoid_cost(D, labels) == pytest.approx(best)
    # On random data, no single medoid swap improves PAM's result.
    D = squareform(pdist(rng.normal(size=(12, 2))))
    labels = two_medoids(D, np.arange(12, dtype=np.int64), 100)
    medoids = [np.flatnonzero(labels == c)[D[np.ix_(labels == c, labels == c)].sum(1).argmin()]
               for c in (0, 1)]
    cost = np.minimum(D[medoids[0]], D[medoids[1]]).sum()
    for slot in range(2):
        for h in range(12):
            other = medoids[1 - slot]
            if h != other:
                assert np.minimum(D[other], D[h]).sum() >= cost - 1e-12


@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_a_valid_monotone_tree(method):
    rng = np.random.default_rng(2)
    X = blobs(rng)
    D = squareform(pdist(X))
    tree = divisive_tree(method, distances=D, X=X, random_state=0)
    n = X.shape[0]
    assert tree.children.shape == (n - 1, 2)
    ClusterFamily.from_trees([tree.children], n)
    linkage_matrix = children_to_linkage(tree.children, tree.distances)
    assert is_valid_linkage(linkage_matrix)
    assert np.all(np.diff(tree.distances) >= 0)
    np.testing.assert_array_equal(merge_to_children(tree.merge), tree.children)
    # Heights are diameters: the cophenetic distance never falls below the distance.
    coph = squareform(cophenet(linkage_matrix))
    assert np.all(coph >= D - 1e-12)
    assert tree.distances[-1] == pytest.approx(D.max())
    # scipy's dendrogram draws it in the banner order.
    assert dendrogram(linkage_matrix, no_plot=True)["leaves"] == tree.order.tolist()
    # The top two splits find the three blobs.
    sets = [frozenset([i]) for i in range(n)]
    for a, b in tree.children:
        sets.append(sets[a] | sets[b])
    for blob in range(3):
        assert frozenset(range(15 * blob, 15 * blob + 15)) in sets


def test_kmeans_heights_from_features_match_the_matrix():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3))
    from_features = divisive_tree("kmeans", X=X, random_state=1)
    D = squareform(pdist(X))
    with_matrix = divisive_tree("kmeans", X=X, distances=D, random_state=1)
    np.testing.assert_array_equal(from_features.children, with_matrix.children)
    np.testing.assert_allclose(from_features.distances, with_matrix.distances, rtol=1e-12)
    squared = divisive_tree("kmeans", X=X, squared=True, random_state=1)
    np.testing.assert_allclose(squared.distances, from_features.distances ** 2, rtol=1e-12)


def test_seed_trees():
    rng = np.random.default_rng(4)
    X = blobs(rng, 6)
    trees = divisive_seed_trees(X)
    assert len(trees) == 3
    for tree in trees:
        assert tree.dtype == np.int64 and tree.shape == (17, 2)
    family = ClusterFamily.from_trees(trees, 18)
    assert family.n_items == 18 if hasattr(family, "n_items") else True
    D = squareform(pdist(X))
    from_matrix = divisive_seed_trees(distances=D, method=["diana", "exact"])
    np.testing.assert_array_equal(from_matrix[0], trees[0])
    assert len(divisive_seed_trees(distances=D)) == 2  # no k-means without features
    assert [t.shape for t in divisive_seed_trees(X[:1])] == [(0, 2)] * 3
    with pytest.raises(ValueError, match="exactly one"):
        divisive_seed_trees()
    with pytest.raises(ValueError, match="Unknown method"):
        divisive_seed_trees(X, method="ward")
    with pytest.raises(ValueError, match="NaN"):
        divisive_seed_trees(np.array([[0.0], [np.nan]]))


def test_divisive_seeds_feed_a_sparse_trellis_next_to_the_linkages():
    from sklearn_trellis.engines.sparse import SparseHierarchicalTrellis
    from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees
    from sklearn_trellis.models import DasguptaEnergy

    rng = np.random.default_rng(6)
    X = blobs(rng, 5)
    n = X.shape[0]
    D = squareform(pdist(X))
    model = DasguptaEnergy().fit(D)
    linkage_only = ClusterFamily.from_trees(linkage_seed_trees(X), n)
    divisive = divisive_seed_trees(X)
    both = ClusterFamily.from_trees(linkage_seed_trees(X) + divisive, n)
    small = SparseHierarchicalTrellis.from_model(linkage_only, model).fit()
    large = SparseHierarchicalTrellis.from_model(both, model).fit()
    # Every divisive seed is realised, and more seeds never lower the MAP tree.
    for tree in divisive:
        assert large.log_potential(tree) <= large.log_potential(large.map_tree) + 1e-9
    assert large.log_potential(large.map_tree) >= small.log_potential(small.map_tree) - 1e-9
