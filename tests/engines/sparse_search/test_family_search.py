"""Seed-family search: the strategy both trellis estimators share."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from sklearn_trellis._core.budget import BudgetExceeded
from sklearn_trellis.engines.sparse import family_search
from sklearn_trellis.engines.sparse.family_search import linkage_trees, seed_family
from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees
from sklearn_trellis.engines.sparse.sparse_flat import SparseFlatTrellis
from sklearn_trellis.models import CorrelationClusteringModel


def blobs(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0, 1, (n // 2, 2)), rng.normal(5, 1, (n - n // 2, 2))])


def test_linkage_trees_name_each_tree_ward_last():
    X = blobs(12)
    trees, names = linkage_trees(["ward", "single"], pdist(X), X)
    assert names == ["single", "ward"]
    assert np.array_equal(trees[0], linkage_seed_trees(X, linkage="single")[0])
    assert np.array_equal(trees[1], linkage_seed_trees(X, linkage="ward")[0])
    # Without features there is no Ward tree.
    trees, names = linkage_trees(["ward", "single"], pdist(X))
    assert names == ["single"] and len(trees) == 1


def flat_build(n, seed=0):
    X = blobs(n, seed)
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    w = np.exp(-d) - np.exp(-d).mean()
    np.fill_diagonal(w, 0.0)
    model = CorrelationClusteringModel(beta=1.0).fit(w)
    return X, model, lambda family, **budget: SparseFlatTrellis.from_model(
        model, family, **budget).fit()


def test_grown_union_skips_only_budget_refusals(monkeypatch):
    X, model, build = flat_build(30, seed=3)
    trees, names = linkage_trees(["single", "average", "complete", "ward"], pdist(X), X)
    full = seed_family(build, trees, 30, names=names)
    assert "linkage trees" in full.description and full.family is full.trellis.family
    monkeypatch.setattr(family_search, "MAX_SPARSE_STATES", 5)
    small = seed_family(build, trees, 30, names=names)
    assert "needed more than 5 states" in small.description
    assert small.family.n_vertices == 2 * 30 - 1
    assert small.trellis.log_partition_function <= full.trellis.log_partition_function

    def failing(family, **budget):
        if budget:
            raise ValueError("something else about states")
        return build(family)

    with pytest.raises(ValueError, match="something else"):
        seed_family(failing, trees, 30, names=names)

    def refusing(family, **budget):
        if budget:
            raise BudgetExceeded("over", resource="states", limit=1)
        return build(family)

    refused = seed_family(refusing, trees, 30, names=names)
    assert refused.family.n_vertices == 2 * 30 - 1
    assert "unions with the" in refused.description
    assert "exact over the clusterings made of these clusters" in refused.note()


def test_one_item_is_its_only_clustering():
    _, model, build = flat_build(1)
    found = seed_family(build, [np.zeros((0, 2), np.int64)], 1, names=["single"])
    assert found.note("clusterings") == "one item: the only clustering"
    assert found.trellis.log_partition_function == pytest.approx(0.0)


def test_diana_seed_tree_joins_the_linkage_seeds():
    """'diana' adds the divisive tree of the same dissimilarities to the seed trees."""
    from scipy.spatial.distance import pdist, squareform

    from sklearn_trellis.engines.divisive import divisive_seed_trees
    from sklearn_trellis.engines.sparse.family_search import linkage_trees

    X = np.random.default_rng(0).normal(size=(30, 3))
    d = pdist(X)
    trees, names = linkage_trees(["average", "diana", "ward"], d.copy(), X)
    assert names == ["average", "diana", "ward"]
    expected = divisive_seed_trees(distances=squareform(d), method="diana")[0]
    np.testing.assert_array_equal(trees[1], expected)


def test_estimators_accept_the_diana_seed():
    from sklearn_trellis import ExactCorrelationClustering, TrellisHierarchical

    X = np.random.default_rng(1).normal(size=(40, 2))
    flat = ExactCorrelationClustering(beta=1.0, seed_linkages=["average", "diana"],
                                      max_exact_size=8).fit(X)
    assert "diana" in flat.approximation_
    tree = TrellisHierarchical(seed_linkages=["diana"], max_exact_size=8, window_size=0,
                               n_beam_trees=0).fit(X)
    from sklearn_trellis._core.trees import children_to_tree
    from sklearn_trellis.engines.divisive import divisive_seed_trees
    diana = children_to_tree(divisive_seed_trees(X, method="diana")[0], 40)
    assert "1 seed trees" in tree.approximation_
    assert tree.map_log_potential_ >= tree.log_potential(diana) - 1e-9  # never worse than its seed
    # the baseline is scikit-learn's tree of `linkage` (Ward), whatever the seeds
    from sklearn.cluster import AgglomerativeClustering
    ward = AgglomerativeClustering(n_clusters=None, distance_threshold=0).fit(X)
    baseline, value = tree.linkage_tree()
    assert baseline == children_to_tree(ward.children_, 40)
    assert value == tree.log_potential(baseline)


def test_no_seed_tree_is_a_clear_error():
    """Ward alone on a precomputed affinity gives no seed tree: say so, not an IndexError."""
    from sklearn_trellis import ExactCorrelationClustering

    X = np.random.default_rng(0).normal(size=(25, 3))
    W = np.corrcoef(X) - 0.3
    np.fill_diagonal(W, 0.0)
    with pytest.raises(ValueError, match="No seed tree"):
        ExactCorrelationClustering(seed_linkages="ward", affinity="precomputed",
                                   max_exact_size=10).fit(W)
    with pytest.raises(ValueError, match="No seed tree"):
        seed_family(lambda family, **budget: None, [], 5)


def test_ward_seed_from_the_shared_euclidean_distances_is_wards_tree_of_x():
    from scipy.spatial.distance import pdist

    from sklearn_trellis.engines.sparse.family_search import linkage_trees
    X = np.random.default_rng(5).normal(size=(80, 3))
    names = ["single", "average", "complete", "ward"]
    shared, built = linkage_trees(names, pdist(X), X, euclidean=True,
                                  work=np.empty((80, 80)))
    again, _ = linkage_trees(names, pdist(X), X)
    assert built == names
    for a, b in zip(shared, again):
        np.testing.assert_array_equal(a, b)
