"""The compiled connectivity-constrained linkages return scikit-learn's trees exactly."""

import warnings

import numpy as np
import pytest
from scipy import sparse
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
    # the fast kernel gives scikit-learn's tree when no current edges tie, and gives
    # up on a tie (the replayed heap then decides, as scikit-learn's does)
    from sklearn_trellis.engines.sparse._constrained_linkage import (average_complete_tree,
                                                                      edge_distances,
                                                                      heap_replay_tree)
    cases = dict((case[0], case) for case in _datasets())
    for label, done_expected in (("gaussian", True), ("ties", False)):
        _, X, k = cases[label]
        graph = _graph(X, k)
        args = (X.shape[0], graph.indptr.astype(np.int64), graph.indices.astype(np.int64),
                edge_distances(X, graph, "euclidean"), name == "complete")
        children, done = average_complete_tree(*args)
        assert done is done_expected
        if done:
            np.testing.assert_array_equal(children, _sklearn(name, X, graph))
        np.testing.assert_array_equal(heap_replay_tree(*args), _sklearn(name, X, graph))


def _random_connected_graph(rng, n, extra, levels):
    """A random spanning tree plus ``extra`` edges; distances from ``levels`` values
    (few levels: many ties) or continuous (``levels=0``)."""
    extra = min(extra, n * (n - 1) // 2 - (n - 1))     # a simple graph has no more
    edges = {}
    for b in range(1, n):
        edges[(int(rng.integers(b)), b)] = None
    while len(edges) < n - 1 + extra:
        a, b = sorted(rng.choice(n, 2, replace=False).tolist())
        edges[(a, b)] = None
    for pair in edges:
        edges[pair] = float(rng.integers(1, levels + 1)) if levels else float(rng.random())
    rows = [a for a, b in edges] + [b for a, b in edges]
    cols = [b for a, b in edges] + [a for a, b in edges]
    weights = list(edges.values()) * 2
    graph = sparse.csr_matrix((weights, (rows, cols)), shape=(n, n))
    graph.sort_indices()
    return edges, graph


@pytest.mark.parametrize("name", ["average", "complete"])
def test_fast_kernel_against_a_scan_of_every_edge(name):
    # random graphs, some with tied distances: the kernel's tree is the scan's
    # whenever no two current edges tie, and it reports every tie the scan meets
    from sklearn_trellis.engines.sparse._constrained_linkage import average_complete_tree
    from oracles import constrained_linkage_by_scan
    rng = np.random.default_rng(7)
    outcomes = set()
    for trial in range(120):
        n = int(rng.integers(2, 25))
        levels = (0, 3, 12, 40)[trial % 4]
        edges, graph = _random_connected_graph(rng, n, int(rng.integers(0, 2 * n)), levels)
        expected = constrained_linkage_by_scan(n, edges, name == "complete")
        children, done = average_complete_tree(
            n, graph.indptr.astype(np.int64), graph.indices.astype(np.int64),
            graph.data.astype(np.float64), name == "complete")
        assert done is (expected is not None)
        if done:
            np.testing.assert_array_equal(children, expected)
        outcomes.add(done)
    assert outcomes == {True, False}


@pytest.mark.parametrize("name", ["average", "complete"])
def test_distances_that_differ_between_an_edges_rows(name):
    # a precomputed matrix that is not symmetric: each row's own distance until a
    # merge, as scikit-learn's lists keep them (the replayed heap)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 3))
    D = pairwise_distances(X) + rng.random((150, 150)) * 1e-3
    graph = _graph(X, 5)
    np.testing.assert_array_equal(constrained_tree(name, D, graph, "precomputed"),
                                  _sklearn(name, D, graph, "precomputed"))
