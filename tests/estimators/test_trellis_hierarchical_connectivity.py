"""``TrellisHierarchical`` as a drop-in ``AgglomerativeClustering`` (issue 13):
connectivity against enumeration of the connected trees, merge heights in data
units, node marginals, scipy's linkage matrix, ``score`` and the parameter errors."""

from collections import Counter

import numpy as np
import pytest
from scipy import sparse
from scipy.cluster.hierarchy import dendrogram, is_valid_linkage
from sklearn.cluster import AgglomerativeClustering
from sklearn.datasets import make_blobs
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import kneighbors_graph

from oracles import (binary_trees, canonical_tree, cluster_node_probabilities, connected_trees,
                     ginkgo_energy, hierarchy_summaries, is_connected, small_ginkgo_jets,
                     tree_clusters)
from sklearn_trellis import TrellisHierarchical
from sklearn_trellis._core.merge_heights import linkage_heights
from sklearn_trellis._core.trees import children_to_tree


def random_graph(rng, n, p=0.35):
    """A random connected graph: a random spanning path plus random extra edges."""
    order = rng.permutation(n)
    dense = rng.random((n, n)) < p
    for a, b in zip(order[:-1], order[1:]):
        dense[a, b] = True
    dense = np.triu(dense, 1)
    dense = dense | dense.T
    return sparse.csr_matrix(dense.astype(float))


# seed 0 in the fast set; more random graphs (up to 10,395 trees scored each) are slow
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow),
                                  pytest.param(2, marks=pytest.mark.slow)])
def test_connectivity_equals_enumeration_of_connected_trees(seed):
    rng = np.random.default_rng(seed)
    n = 7
    X = rng.normal(size=(n, 2))
    graph = random_graph(rng, n)
    dense = graph.toarray() > 0
    est = TrellisHierarchical(connectivity=graph, n_clusters=2, random_state=0).fit(X)
    trees = connected_trees(n, dense)
    assert len(trees) < 10395                      # the graph removes trees
    log_phi = [est.log_potential(t) for t in trees]
    ref = hierarchy_summaries(trees, log_phi)
    assert est.map_is_exact_ and est.approximation_ is None
    assert est.n_trees_ == len(trees)
    assert est.log_partition_function_ == pytest.approx(ref["log_z"], rel=1e-12)
    assert est.map_log_potential_ == pytest.approx(ref["map_log_phi"], rel=1e-12)
    assert canonical_tree(est.map_tree_) == canonical_tree(ref["map_tree"])
    marginals = cluster_node_probabilities(trees, ref["probs"])
    for cluster, p in marginals.items():
        assert est.cluster_marginal(list(cluster)) == pytest.approx(p, abs=1e-12)
    # a disconnected cluster is never a node
    for mask in range(1, 1 << n):
        cluster = tuple(i for i in range(n) if mask >> i & 1)
        if not is_connected(cluster, dense):
            assert est.cluster_marginal(list(cluster)) == 0.0
    # node_marginals_ are the marginals of the children_ rows
    nodes = [(i,) for i in range(n)]
    for a, b in est.children_:
        nodes.append(tuple(sorted(nodes[a] + nodes[b])))
    np.testing.assert_allclose(est.node_marginals_, [marginals[c] for c in nodes[n:]],
                               atol=1e-12)
    # exact samples: every sampled tree is connected, frequencies match
    samples = est.sample_trees(4000, random_state=1)
    counts = Counter(canonical_tree(t) for t in samples)
    assert set(counts) <= {canonical_tree(t) for t in trees}
    best = canonical_tree(ref["map_tree"])
    p_best = ref["probs"][ref["map_index"]]
    assert counts[best] / 4000 == pytest.approx(p_best, abs=4 * np.sqrt(p_best / 4000) + 1e-3)


def test_connectivity_node_marginals_equal_enumeration_without_graph():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 2))
    est = TrellisHierarchical(beta=0.5).fit(X)
    trees = binary_trees(tuple(range(6)))
    ref = hierarchy_summaries(trees, [est.log_potential(t) for t in trees])
    marginals = cluster_node_probabilities(trees, ref["probs"])
    nodes = [(i,) for i in range(6)]
    for a, b in est.children_:
        nodes.append(tuple(sorted(nodes[a] + nodes[b])))
    np.testing.assert_allclose(est.node_marginals_, [marginals[c] for c in nodes[6:]],
                               atol=1e-12)


def test_sparse_with_connectivity_keeps_every_node_connected():
    X, _ = make_blobs(60, centers=3, random_state=0)
    graph = kneighbors_graph(X, 5, include_self=False)
    est = TrellisHierarchical(connectivity=graph, n_clusters=3, random_state=0).fit(X)
    assert not est.map_is_exact_ and "sparse trellis" in est.approximation_
    sym = ((graph + graph.T) > 0).toarray()
    for tree in [est.map_tree_] + est.sample_trees(20, random_state=0):
        assert all(is_connected(c, sym) for c in tree_clusters(tree))
    # the MAP is at least as good as every constrained linkage tree
    for linkage in ("ward", "average", "complete", "single"):
        greedy = AgglomerativeClustering(n_clusters=None, distance_threshold=0,
                                         linkage=linkage, connectivity=graph).fit(X)
        value = est.log_potential(children_to_tree(greedy.children_, 60))
        assert est.map_log_potential_ >= value - 1e-9 * abs(value)
    # marginals of the MAP nodes are probabilities, the root's is 1
    assert np.all((est.node_marginals_ >= 0) & (est.node_marginals_ <= 1 + 1e-12))
    assert est.node_marginals_[-1] == pytest.approx(1.0)


def test_connectivity_completion_warns_and_counts_components():
    X = np.random.default_rng(0).normal(size=(6, 2))
    graph = np.zeros((6, 6))
    graph[0, 1] = graph[2, 3] = graph[4, 5] = 1
    with pytest.warns(UserWarning, match="Completing it to avoid stopping the tree early"):
        est = TrellisHierarchical(connectivity=graph).fit(X)
    assert est.n_connected_components_ == 3
    plain = TrellisHierarchical().fit(X)
    assert plain.n_connected_components_ == 1


def test_connectivity_diagonal_and_callable_are_ignored_alike():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(9, 2))
    graph = kneighbors_graph(X, 3, include_self=False)
    with_diagonal = graph + sparse.eye(9)
    a = TrellisHierarchical(connectivity=graph).fit(X)
    b = TrellisHierarchical(connectivity=with_diagonal).fit(X)
    c = TrellisHierarchical(
        connectivity=lambda Z: kneighbors_graph(Z, 3, include_self=False)).fit(X)
    for other in (b, c):
        np.testing.assert_array_equal(a.children_, other.children_)
        assert a.log_partition_function_ == other.log_partition_function_


@pytest.mark.parametrize("linkage", ["ward", "complete", "average", "single"])
@pytest.mark.parametrize("connected", [False, True])
def test_heights_of_the_greedy_tree_are_scikit_learn_distances(linkage, connected):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 3))
    graph = kneighbors_graph(X, 6, include_self=False) if connected else None
    greedy = AgglomerativeClustering(n_clusters=None, distance_threshold=0,
                                     linkage=linkage, connectivity=graph).fit(X)
    if graph is not None:
        graph = ((graph + graph.T) > 0).astype(float).tocsr()
    heights = linkage_heights(greedy.children_, linkage, X=X, connectivity=graph)
    np.testing.assert_allclose(heights, greedy.distances_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("metric", ["l1", "manhattan", "cosine", "l2"])
def test_heights_with_other_metrics_and_precomputed(metric):
    from sklearn.metrics import pairwise_distances
    rng = np.random.RandomState(1)
    X = rng.normal(size=(30, 4))
    greedy = AgglomerativeClustering(n_clusters=None, distance_threshold=0,
                                     linkage="average", metric=metric).fit(X)
    heights = linkage_heights(greedy.children_, "average", X=X, metric=metric)
    np.testing.assert_allclose(heights, greedy.distances_, rtol=1e-9)
    D = pairwise_distances(X, metric=metric)
    heights = linkage_heights(greedy.children_, "average", distances=D, metric="precomputed")
    np.testing.assert_allclose(heights, greedy.distances_, rtol=1e-9)
    callable_heights = linkage_heights(
        greedy.children_, "average", X=X,
        metric=lambda a, b: np.abs(a - b).sum())
    manhattan = linkage_heights(greedy.children_, "average", X=X, metric="manhattan")
    np.testing.assert_allclose(callable_heights, manhattan, rtol=1e-9)


def test_threshold_is_in_data_units():
    X, _ = make_blobs(60, centers=5, random_state=0, cluster_std=0.3)
    counts, heights = [], []
    for scale in (0.01, 1.0, 100.0):
        est = TrellisHierarchical(n_clusters=None, distance_threshold=3 * scale).fit(
            X * scale)
        counts.append(est.n_clusters_)
        heights.append(est.distances_ / scale)
    assert counts[0] == counts[1] == counts[2] == 5
    np.testing.assert_allclose(heights[0], heights[1], rtol=1e-9)
    np.testing.assert_allclose(heights[2], heights[1], rtol=1e-9)


def test_distances_monotone_and_linkage_matrix():
    X, _ = make_blobs(25, centers=3, random_state=2)
    est = TrellisHierarchical(n_clusters=3, compute_distances=True, linkage="average").fit(X)
    assert np.all(np.diff(est.distances_) >= 0)
    Z = est.linkage_matrix_
    assert is_valid_linkage(Z)
    np.testing.assert_array_equal(Z[:, :2], est.children_)
    np.testing.assert_array_equal(Z[:, 2], est.distances_)
    assert Z[-1, 3] == 25
    assert sorted(dendrogram(Z, no_plot=True)["leaves"]) == list(range(25))
    # each height is at least the raw linkage distance of its merge
    raw = linkage_heights(est.children_, "average", X=X)
    assert np.all(est.distances_ >= raw - 1e-12)
    # beta does not move the MAP tree, hence labels_
    other = TrellisHierarchical(n_clusters=3, linkage="average", beta=3.0).fit(X)
    np.testing.assert_array_equal(other.labels_, est.labels_)


def test_partial_tree_with_connectivity():
    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    graph = kneighbors_graph(X, 5, include_self=False)
    full = TrellisHierarchical(n_clusters=4, connectivity=graph).fit(X)
    part = TrellisHierarchical(n_clusters=4, connectivity=graph,
                               compute_full_tree=False).fit(X)
    assert part.children_.shape == (26, 2) and full.children_.shape == (29, 2)
    np.testing.assert_array_equal(part.labels_, full.labels_)
    np.testing.assert_array_equal(part.children_, full.children_[:26])
    assert part.node_marginals_.shape == (26,)


def test_errors_as_scikit_learn():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match="compute_full_tree must be True"):
        TrellisHierarchical(n_clusters=None, distance_threshold=1,
                            compute_full_tree=False).fit(X)
    with pytest.raises(ValueError, match="Ward can only work with euclidean"):
        TrellisHierarchical(metric="manhattan").fit(X)
    TrellisHierarchical(metric="l2").fit(X)
    with pytest.raises(ValueError, match="Distance matrix should be square"):
        TrellisHierarchical(metric="precomputed", linkage="complete").fit(X)
    D = np.abs(X[:, :1] - X[:, :1].T) + np.eye(6)
    with pytest.raises(ValueError, match="zero diagonal"):
        TrellisHierarchical(metric="precomputed", linkage="complete").fit(D)
    with pytest.raises(ValueError, match="energy__lam"):
        TrellisHierarchical(energy="ginkgo").set_params(energy__lam=2.0)
    with pytest.raises(ValueError, match="diana"):
        TrellisHierarchical(seed_linkages="diana", method="sparse",
                            connectivity=kneighbors_graph(X, 2)).fit(X)


def test_exact_with_connectivity_refuses_before_allocating():
    with pytest.raises(ValueError, match="exact limit"):
        TrellisHierarchical(method="exact", connectivity=sparse.eye(30, k=1)).fit(
            np.zeros((30, 2)))


def test_score_is_the_marginal_likelihood_and_drives_grid_search():
    jet = max(small_ginkgo_jets(), key=lambda j: j["N"])
    X = np.array(jet["leaves"])
    momenta = ginkgo_energy(jet).set_params(likelihood="momenta")
    est = TrellisHierarchical(energy=momenta).fit(X)
    trees = binary_trees(tuple(range(len(X))))
    ref = hierarchy_summaries(trees, [est.log_potential(t) for t in trees])
    assert est.score(X) == pytest.approx(ref["log_z"], rel=1e-12)
    # the public Ginkgo likelihood is not a density of X: no score
    assert not hasattr(TrellisHierarchical(energy=ginkgo_energy(jet)), "score")
    search = GridSearchCV(TrellisHierarchical(energy=momenta),
                          {"energy__lam": [1.0, 1.5, 3.0]}, cv=2).fit(X)
    assert search.best_params_["energy__lam"] in (1.0, 1.5, 3.0)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    assert search.best_score_ == pytest.approx(scores.max())


def test_dasgupta_on_graph_edges_equals_the_dense_energy_masked_to_the_graph():
    from sklearn_trellis._core.family import ClusterFamily
    from sklearn_trellis.models import DasguptaEnergy
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 3))
    graph = kneighbors_graph(X, 4, mode="distance", include_self=False)
    graph = graph.maximum(graph.T).tocsr()
    on_edges = DasguptaEnergy(scale=0.7).fit(graph)
    dense_w = np.where(graph.toarray() > 0, np.exp(-graph.toarray() / 0.7), 0.0)
    dense = DasguptaEnergy(similarity="precomputed").fit(dense_w)
    trees = [AgglomerativeClustering(n_clusters=None, distance_threshold=0, linkage=link,
                                     connectivity=graph).fit(X).children_
             for link in ("ward", "average", "single")]
    family = ClusterFamily.from_trees(trees, 40, extra_clusters=[[0, 5, 7], [1, 2, 3, 4]])
    np.testing.assert_allclose(on_edges.family_kernel_inputs(family).stats,
                               dense.family_kernel_inputs(family).stats, rtol=1e-12)
    tree = children_to_tree(trees[1], 40)
    assert on_edges.log_potential(tree) == pytest.approx(dense.log_potential(tree), rel=1e-12)
    small = DasguptaEnergy(scale=0.7).fit(graph[:10][:, :10])
    dense_small = DasguptaEnergy(similarity="precomputed").fit(dense_w[:10, :10])
    np.testing.assert_allclose(small.kernel_inputs().stats, dense_small.kernel_inputs().stats)


def test_memory_refusals_come_before_allocation_and_say_how_to_go_on(monkeypatch):
    import sklearn_trellis._core.budget as budget
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 50_000)
    X = np.random.default_rng(0).normal(size=(80, 3))      # (N, N) float64: 51.2 kB
    with pytest.raises(ValueError, match="Not enough memory.*To go on: give a connectivity"):
        TrellisHierarchical().fit(X)
    with pytest.raises(ValueError, match="Not enough memory"):
        TrellisHierarchical(method="exact").fit(X[:20])
    # with a graph, Dasgupta's similarities are O(edges): no N x N matrix is needed
    # until the sparse trellis's own tables, which are refused before allocation too
    with pytest.raises(ValueError, match="Not enough memory.*To go on: lower window_size"):
        TrellisHierarchical(connectivity=kneighbors_graph(X, 5)).fit(X)
