"""Tree-based normalisation of distance matrices (developer notes, fastTIWD (f))."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import cophenet, linkage
from scipy.spatial.distance import pdist, squareform

from sklearn_trellis.preprocessing.distance_normalization import (
    DistanceTree, conjugate_gradient, normalized_inner_products, single_linkage,
    tree_from_distances)


def _sq_distances(rng, n, dim=4, centres=3):
    X = rng.standard_normal((n, dim)) + 3 * rng.standard_normal((centres, dim))[
        rng.integers(0, centres, n)]
    return squareform(pdist(X, "sqeuclidean"))


@pytest.mark.parametrize("interpreted", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_single_linkage_matches_scipy(seed, interpreted, monkeypatch):
    from sklearn_trellis.preprocessing import distance_normalization
    D = _sq_distances(np.random.default_rng(seed), 40)
    monkeypatch.setattr(distance_normalization, "INTERPRETED_LINKAGE_ITEMS",
                        100 if interpreted else 0)
    ours = single_linkage(D)
    ref = linkage(squareform(D, checks=False), "single")
    np.testing.assert_allclose(ours[:, 2], ref[:, 2])
    np.testing.assert_allclose(cophenet(ours), cophenet(ref))
    np.testing.assert_array_equal(ours[:, 3], ref[:, 3])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_interpreted_single_linkage_is_the_kernels(monkeypatch, dtype):
    from sklearn_trellis.preprocessing import distance_normalization
    D = np.round(_sq_distances(np.random.default_rng(7), 60)).astype(dtype)  # ties
    monkeypatch.setattr(distance_normalization, "INTERPRETED_LINKAGE_ITEMS", 0)
    compiled = single_linkage(D)
    monkeypatch.setattr(distance_normalization, "INTERPRETED_LINKAGE_ITEMS", 100)
    np.testing.assert_array_equal(single_linkage(D), compiled)


@pytest.mark.parametrize("method", ["single", "average", "complete"])
def test_tree_matvec_matches_dense_and_distances_are_cophenetic(method):
    rng = np.random.default_rng(1)
    D = _sq_distances(rng, 35)
    tree = DistanceTree(linkage(squareform(D, checks=False), method))
    dense = tree.dense()
    for _ in range(3):
        y = rng.standard_normal(35)
        np.testing.assert_allclose(tree.matvec(y), dense @ y, rtol=1e-12, atol=1e-12)
    diag = np.diag(dense)
    d_tree = diag[:, None] + diag[None, :] - 2 * dense
    np.testing.assert_allclose(squareform(d_tree, checks=False),
                               cophenet(linkage(squareform(D, checks=False), method)),
                               rtol=1e-12, atol=1e-12)
    assert np.linalg.eigvalsh(dense).min() > 0


def test_linf_tree_is_closest_ultrametric_shift():
    rng = np.random.default_rng(2)
    D = _sq_distances(rng, 30)
    sub = squareform(cophenet(linkage(squareform(D, checks=False), "single")))
    excess = np.max(D - sub)
    dense = tree_from_distances(D, "linf").dense()
    diag = np.diag(dense)
    d_tree = diag[:, None] + diag[None, :] - 2 * dense
    off = ~np.eye(30, dtype=bool)
    np.testing.assert_allclose(d_tree[off], (sub + excess / 2)[off], rtol=1e-12)
    assert np.isclose(np.max(np.abs(D - d_tree)[off]), excess / 2)
    assert excess / 2 < np.max(np.abs(D - sub))


def test_conjugate_gradient_solves_tree_system():
    D = _sq_distances(np.random.default_rng(3), 50)
    tree = tree_from_distances(D)
    x, n_iter = conjugate_gradient(tree.matvec, np.ones(50))
    ref = np.linalg.solve(tree.dense(), np.ones(50))
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-8 * np.abs(ref).max())
    assert 0 < n_iter <= 50


@pytest.mark.parametrize("normalization", ["single", "linf", "center"])
def test_normalized_inner_products_reproduce_distances(normalization):
    rng = np.random.default_rng(4)
    D = _sq_distances(rng, 45)
    S, info = normalized_inner_products(D, normalization)
    diag = np.diag(S)
    np.testing.assert_allclose(diag[:, None] + diag[None, :] - 2 * S, D, atol=1e-10)
    np.testing.assert_allclose(S, S.T, atol=1e-12)
    assert np.linalg.eigvalsh(S).min() > -1e-9
    np.testing.assert_allclose(S @ info["weights"], 0.0, atol=1e-9)
    # any member of S(D) gives the same S*: start from the centred Gram matrix instead
    a = info["weights"]
    Q = np.eye(45) - np.outer(np.ones(45), a) / a.sum()
    centred = -0.5 * (np.eye(45) - 1 / 45) @ D @ (np.eye(45) - 1 / 45)
    np.testing.assert_allclose(Q @ centred @ Q.T, S, atol=1e-10)
    S32, _ = normalized_inner_products(D.astype(np.float32), normalization, dtype=np.float32)
    assert S32.dtype == np.float32
    np.testing.assert_allclose(S32, S, atol=1e-4 * np.abs(S).max())


def test_duplicate_points_keep_tree_positive_definite():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((12, 3))
    X[5] = X[4]
    D = squareform(pdist(X, "sqeuclidean"))
    tree = tree_from_distances(D)
    assert np.linalg.eigvalsh(tree.dense()).min() > 0
    S, _ = normalized_inner_products(D)
    assert np.all(np.isfinite(S))


def _normalize_with_thresholds(monkeypatch, D, items, **kwargs):
    from sklearn_trellis.preprocessing import distance_normalization
    monkeypatch.setattr(distance_normalization, "INTERPRETED_LINKAGE_ITEMS", items)
    monkeypatch.setattr(distance_normalization, "INTERPRETED_NORMALIZATION_ITEMS", items)
    S, info = normalized_inner_products(D, **kwargs)
    return S, info["weights"], info["tree"]._path, info["cg_iterations"]


@pytest.mark.parametrize("normalization", ["single", "linf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [2, 3, 40])
def test_interpreted_normalization_is_the_kernels(monkeypatch, normalization, dtype, n):
    """Tree path sums, matrix-vector products and the projection, run interpreted on a
    small input, give the compiled kernels' values bit for bit (the compiled path at
    every size: threshold 0)."""
    from sklearn_trellis._core import interpreted
    D = _sq_distances(np.random.default_rng(n), n).astype(dtype)
    compiled = _normalize_with_thresholds(monkeypatch, D, 0, normalization=normalization,
                                          dtype=dtype)
    assert interpreted._spent == 0.0
    interpreted_run = _normalize_with_thresholds(monkeypatch, D, 100,
                                                 normalization=normalization, dtype=dtype)
    assert interpreted._spent > 0.0
    for ours, theirs in zip(interpreted_run, compiled):
        np.testing.assert_array_equal(ours, theirs)
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype
