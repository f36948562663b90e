"""The k-d tree completion of a disconnected graph adds scikit-learn's edges."""

import warnings

import numpy as np
import pytest
from sklearn.cluster._agglomerative import _fix_connectivity
from sklearn.neighbors import kneighbors_graph

from sklearn_trellis._core.connectivity import check_connectivity


def _sklearn_graph(X, graph, metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixed, n_components = _fix_connectivity(X, graph, affinity=metric)
    fixed = (abs(fixed) + abs(fixed).T).tocsr()
    fixed.setdiag(0)
    fixed.eliminate_zeros()
    return fixed, n_components


def _datasets():
    rng = np.random.default_rng(0)
    yield "blobs", np.concatenate([rng.normal(c, 1, (40, 3)) for c in (0, 8, 16, 30)]), 3
    # integer coordinates: closest pairs tie, scikit-learn takes the first (row-major)
    yield "ties", np.concatenate([rng.integers(0, 3, (30, 2)),
                                  rng.integers(6, 9, (30, 2)),
                                  rng.integers(12, 14, (20, 2))]).astype(float), 2
    yield "duplicates", np.repeat(rng.normal(size=(15, 2)), 2, axis=0), 1
    yield "singletons", rng.normal(size=(30, 4)), 1


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("case", list(_datasets()), ids=lambda c: c[0])
def test_same_completion_as_sklearn(case, metric):
    _, X, k = case
    knn = kneighbors_graph(X, k, include_self=False)
    expected, n_expected = _sklearn_graph(X, knn, metric)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph, n_components = check_connectivity(knn, X, metric)
    assert n_components == n_expected > 1
    assert any("Completing it" in str(w.message) for w in caught)
    assert (graph != 0).toarray().tolist() == (expected != 0).toarray().tolist()


def test_connected_graph_unchanged():
    X = np.arange(10.0).reshape(-1, 1)
    knn = kneighbors_graph(X, 2, include_self=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph, n_components = check_connectivity(knn, X, "euclidean")
    assert n_components == 1
    expected, _ = _sklearn_graph(X, knn, "euclidean")
    assert (graph != 0).toarray().tolist() == (expected != 0).toarray().tolist()


def test_wrong_shape():
    with pytest.raises(ValueError, match="Wrong shape for connectivity matrix"):
        check_connectivity(np.ones((3, 3)), np.zeros((4, 2)), "euclidean")
