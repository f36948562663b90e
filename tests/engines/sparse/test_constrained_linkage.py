"""The compiled connectivity-constrained linkages return scikit-learn's trees exactly."""

import warnings

import numpy as np
import pytest
from sklearn.cluster import linkage_tree, ward_tree
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import kneighbors_graph

from sklearn_trellis._core.connectivity import check_connectivity
from sklearn_trellis.engines.sparse._constrained_linkage import constrained_tree


def _graph(X, k, metric="euclidean"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check_connectivity(kneighbors_graph(X, k, include_self=False), X, metric)[0]


def _sklearn(name, X, graph, metric="euclidean"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "ward":
            return ward_tree(X, connectivity=graph)[0]
        return linkage_tree(X, connectivity=graph, linkage=name, affinity=metric)[0]


def _datasets():
    rng = np.random.default_rng(0)
    yield "gaussian", rng.normal(size=(300, 3)), 5
    # integer coordinates: many equal distances, ties decided by the heap
    yield "ties", rng.integers(0, 4, size=(250, 2)).astype(float), 6
    # duplicate points: zero distances
    base = rng.normal(size=(60, 2))
    yield "duplicates", np.concatenate([base, base[:30]]), 4
    # separated blobs: the graph is completed between components
    yield "blobs", np.concatenate([rng.normal(0, 1, (100, 4)), rng.normal(20, 1, (100, 4))]), 3
    # a long line: one cluster grows through many merges (pool compaction)
    yield "line", np.c_[np.arange(400.0), rng.normal(0, 1e-3, 400)], 2


@pytest.mark.parametrize("name", ["ward", "average", "complete", "single"])
@pytest.mark.parametrize("case", list(_datasets()), ids=lambda c: c[0])
def test_same_tree_as_sklearn(name, case):
    _, X, k = case
    graph = _graph(X, k)
    expected = _sklearn(name, X, graph)
    np.testing.assert_array_equal(constrained_tree(name, X, graph), expected)


@pytest.mark.parametrize("name", ["average", "complete", "single"])
def test_same_tree_as_sklearn_other_metrics(name):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, size=(200, 3)).astype(float)
    graph = _graph(X, 5, "manhattan")
    np.testing.assert_array_equal(constrained_tree(name, X, graph, "manhattan"),
                                  _sklearn(name, X, graph, "manhattan"))
    D = pairwise_distances(X, metric="manhattan")
    np.testing.assert_array_equal(constrained_tree(name, D, graph, "precomputed"),
                                  _sklearn(name, D, graph, "precomputed"))


def test_two_items():
    X = np.array([[0.0], [1.0]])
    graph = _graph(X, 1)
    for name in ("ward", "average", "complete", "single"):
        np.testing.assert_array_equal(constrained_tree(name, X, graph), [[0, 1]])


@pytest.mark.parametrize("name", ["ward", "average", "complete"])
def test_same_tree_as_sklearn_large(name):
    # thousands of merges: the neighbour pool is compacted and the heap grows
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(n_samples=3000, n_features=10, centers=20, random_state=0)
    graph = _graph(X, 10)
    np.testing.assert_array_equal(constrained_tree(name, X, graph), _sklearn(name, X, graph))


@pytest.mark.parametrize("name", ["average", "complete"])
def test_fast_pass_and_its_tie_check(name):
    # the fast pass (small heap) gives scikit-learn's tree when no live edges tie,
    # and gives up on a tie (the exact heap then decides, as scikit-learn's does)
    from sklearn_trellis.engines.sparse._constrained_linkage import (average_complete_tree,
                                                                      edge_distances)
    cases = dict((case[0], case) for case in _datasets())
    for label, done_expected in (("gaussian", True), ("ties", False)):
        _, X, k = cases[label]
        graph = _graph(X, k)
        args = (X.shape[0], graph.indptr.astype(np.int64), graph.indices.astype(np.int64),
                edge_distances(X, graph, "euclidean"), name == "complete")
        children, done = average_complete_tree(*args, True)
        assert done is done_expected
        if done:
            np.testing.assert_array_equal(children, _sklearn(name, X, graph))
        exact, done = average_complete_tree(*args, False)
        assert done
        np.testing.assert_array_equal(exact, _sklearn(name, X, graph))
