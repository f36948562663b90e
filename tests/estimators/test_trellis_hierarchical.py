"""``TrellisHierarchical``: the estimator against enumeration and as a drop-in
``AgglomerativeClustering``."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.cluster import AgglomerativeClustering
from sklearn.datasets import load_iris

from oracles import (binary_trees, canonical_tree, cluster_node_probabilities,
                         hierarchy_summaries, tree_leaves)
from oracles import ginkgo_energy, small_ginkgo_jets
from sklearn_examples import plot_dendrogram
from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.models import DasguptaEnergy


def iris16():
    iris = load_iris()
    rows = np.concatenate([np.arange(0, 50, 10), np.arange(50, 100, 9), np.arange(100, 150, 10)])
    return iris.data[rows[:16]]


def test_sklearn_dendrogram_example_runs_with_the_class_swapped():
    plt = pytest.importorskip("matplotlib.pyplot")
    X = iris16()
    assert X.shape == (16, 4)
    # setting distance_threshold=0 ensures we compute the full tree.
    model = TrellisHierarchical(distance_threshold=0, n_clusters=None)
    model = model.fit(X)
    plt.title("Hierarchical Clustering Dendrogram")
    # plot the top three levels of the dendrogram
    out = plot_dendrogram(model, truncate_mode="level", p=3)
    plt.xlabel("Number of points in node (or index of point if no parenthesis).")
    plt.close("all")
    assert out["ivl"]
    full = plot_dendrogram(model, no_plot=True)
    assert sorted(int(i) for i in full["ivl"]) == list(range(16))
    assert model.n_clusters_ == 16


def test_attributes_match_agglomerative_clustering():
    X = iris16()[:10]
    assert not hasattr(TrellisHierarchical(n_clusters=3).fit(X), "distances_")
    ours = TrellisHierarchical(n_clusters=3, compute_distances=True).fit(X)
    theirs = AgglomerativeClustering(n_clusters=3, compute_distances=True).fit(X)
    for name in ["labels_", "children_", "distances_"]:
        assert getattr(ours, name).dtype == getattr(theirs, name).dtype, name
        assert getattr(ours, name).shape == getattr(theirs, name).shape, name
    for name in ["n_clusters_", "n_leaves_", "n_connected_components_", "n_features_in_"]:
        assert getattr(ours, name) == getattr(theirs, name), name
    assert np.all(ours.distances_ >= 0) and np.all(np.diff(ours.distances_) >= 0)
    # children_ encodes the MAP tree
    nodes = list(range(10))
    for a, b in ours.children_:
        assert a < len(nodes) and b < len(nodes)
        nodes.append((nodes[a], nodes[b]))
    assert canonical_tree(nodes[-1]) == canonical_tree(ours.map_tree_)
    assert len(np.unique(ours.labels_)) == 3
    assert ours.log_potential(ours.map_tree_) == pytest.approx(ours.map_log_potential_, abs=1e-9)


def test_exact_quantities_match_enumeration():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2))
    model = TrellisHierarchical(beta=0.8, random_state=0).fit(X)
    trees = binary_trees(tuple(range(6)))
    # log_potential evaluates trees directly from the energy (no trellis)
    log_phi = [model.log_potential(t) for t in trees]
    ref = hierarchy_summaries(trees, log_phi)
    assert model.log_partition_function_ == pytest.approx(ref["log_z"], abs=1e-9)
    assert model.map_log_potential_ == pytest.approx(ref["map_log_phi"], abs=1e-9)
    assert canonical_tree(model.map_tree_) == ref["map_tree"]
    assert model.n_trees_ == 945 and isinstance(model.n_trees_, int)
    node_probs = cluster_node_probabilities(trees, ref["probs"])
    for cluster in [(0, 1), (2, 3, 5), (0, 1, 2, 3, 4), (4,)]:
        assert model.cluster_marginal(cluster) == pytest.approx(
            node_probs.get(cluster, 0.0), abs=1e-9)
    # the same distribution as the exact posterior: frequency of the MAP tree
    draws = model.sample_trees(4000)
    freq = np.mean([canonical_tree(t) == ref["map_tree"] for t in draws])
    p_map = ref["probs"][ref["map_index"]]
    assert abs(freq - p_map) < 4.5 * np.sqrt(p_map * (1 - p_map) / 4000) + 1e-3
    assert model.sample_trees(5) == model.sample_trees(5)
    assert model.sample_trees(5, random_state=1) == clone(model).fit(X).sample_trees(
        5, random_state=1)


def test_energies_by_name_instance_and_callable():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 3))
    by_name = TrellisHierarchical(energy="dasgupta").fit(X)
    by_instance = TrellisHierarchical(energy=DasguptaEnergy()).fit(X)
    assert by_name.log_partition_function_ == pytest.approx(by_instance.log_partition_function_)
    w = by_name.model_.similarity_

    def dasgupta(X_, left, right):
        return -(len(left) + len(right)) * w[np.ix_(left, right)].sum()

    by_callable = TrellisHierarchical(energy=dasgupta).fit(X)
    assert by_callable.log_partition_function_ == pytest.approx(
        by_name.log_partition_function_, abs=1e-9)
    assert canonical_tree(by_callable.map_tree_) == canonical_tree(by_name.map_tree_)
    # nested hyperparameters, as GridSearchCV sets them
    est = TrellisHierarchical(energy=DasguptaEnergy())
    est.set_params(energy__scale=0.5)
    assert est.get_params()["energy__scale"] == 0.5
    est.fit(X)
    assert est.model_.scale == 0.5 and est.energy.scale == 0.5
    assert not hasattr(est.energy, "similarity_")  # the given instance is not fitted
    # precomputed distances give the same result as the metric
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    pre = TrellisHierarchical(metric="precomputed", linkage="average").fit(d)
    assert pre.log_partition_function_ == pytest.approx(by_name.log_partition_function_)
    hcc = TrellisHierarchical(energy="hcc", beta=2.0).fit(X)
    assert hcc.n_trees_ == 10395


def test_ginkgo_through_the_estimator():
    jet = small_ginkgo_jets()[4]
    est = TrellisHierarchical(energy=ginkgo_energy(jet))
    est.fit(np.array(jet["leaves"]))
    assert est.log_partition_function_ == pytest.approx(jet["ref_logZ"], abs=1e-9)
    assert est.map_log_potential_ == pytest.approx(jet["ref_map_loglik"], abs=1e-9)
    assert est.n_trees_ == jet["ref_n_trees_allowed"]
    assert est.sample_trees(1, random_state=0)[0] is not None


def test_baselines_never_beat_the_exact_map():
    rng = np.random.default_rng(4)
    for trial in range(3):
        X = rng.normal(size=(8, 2))
        est = TrellisHierarchical(energy="hcc").fit(X)
        for tree, value in [est.greedy_tree(), est.beam_search_tree(),
                            est.beam_search_tree(beam_width=1), est.linkage_tree()]:
            assert value == pytest.approx(est.log_potential(tree), abs=1e-9)
            assert value <= est.map_log_potential_ + 1e-9
        # a beam of width 1 is the greedy search
        assert est.beam_search_tree(beam_width=1)[1] == pytest.approx(est.greedy_tree()[1])


def test_greedy_matches_a_python_reimplementation():
    jet = small_ginkgo_jets()[-1]
    est = TrellisHierarchical(energy=ginkgo_energy(jet))
    est.fit(np.array(jet["leaves"]))
    energy = est.model_
    clusters = [(i,) for i in range(len(jet["leaves"]))]
    total = 0.0
    while len(clusters) > 1:
        best = None
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                a, b = clusters[i], clusters[j]
                l, r = (a, b) if a[0] < b[0] else (b, a)
                value = energy.split_log_potential(np.array(l), np.array(r))
                if best is None or value > best[0]:
                    best = (value, i, j)
        value, i, j = best
        total += value
        merged = tuple(sorted(clusters[i] + clusters[j]))
        clusters = [c for k, c in enumerate(clusters) if k not in (i, j)] + [merged]
    assert est.greedy_tree()[1] == pytest.approx(total, abs=1e-9)


def test_cut_and_threshold():
    X = np.array([[0.0], [0.1], [1.0], [1.2], [5.0], [5.1]])
    est = TrellisHierarchical(n_clusters=1).fit(X)
    assert est.labels_.tolist() == [0] * 6
    est = TrellisHierarchical(n_clusters=6).fit(X)
    assert sorted(est.labels_.tolist()) == list(range(6))
    est = TrellisHierarchical(n_clusters=None, distance_threshold=1.5).fit(X)
    assert est.n_clusters_ == np.count_nonzero(est.distances_ >= 1.5) + 1
    assert len(np.unique(est.labels_)) == est.n_clusters_
    top = est.map_tree_
    left_items = set(tree_leaves(top[0]))
    two = TrellisHierarchical(n_clusters=2).fit(X)
    assert {i for i in range(6) if two.labels_[i] == two.labels_[min(left_items)]} == left_items


def test_errors():
    X = np.random.default_rng(0).normal(size=(5, 2))
    with pytest.raises(ValueError, match="connectivity"):
        TrellisHierarchical(connectivity=np.eye(4)).fit(X)     # wrong shape
    with pytest.raises(ValueError, match="energy"):
        TrellisHierarchical(energy="nope").fit(X)
    with pytest.raises(TypeError, match="energy"):
        TrellisHierarchical(energy=3).fit(X)
    with pytest.raises(ValueError, match="Exactly one"):
        TrellisHierarchical(n_clusters=None).fit(X)
    with pytest.raises(ValueError, match="more clusters"):
        TrellisHierarchical(n_clusters=9).fit(X)
    with pytest.raises(ValueError, match="exact limit") as refusal:
        TrellisHierarchical(method="exact").fit(np.zeros((29, 2)))
    # max_exact_size does not limit method='exact': the advice is the sparse trellis
    assert "method='sparse'" in str(refusal.value)
    assert "raise the limit" not in str(refusal.value)
    with pytest.raises(ValueError, match="beta"):
        TrellisHierarchical(beta=-1.0).fit(X)
    with pytest.raises(ValueError, match="shape"):
        TrellisHierarchical(energy="ginkgo").fit(X)
    est = TrellisHierarchical().fit(X)
    with pytest.raises(ValueError, match="exactly once"):
        est.log_potential(((0, 1), 2))
    with pytest.raises(ValueError, match="distinct"):
        est.subtree_marginal((0, 0))
    assert 0.0 <= est.subtree_marginal((0, 1)) <= 1.0
