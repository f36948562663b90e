"""Issue 31, the tree estimators at the edges: huge precomputed inputs, extreme scales,
identical rows (DivisiveClustering, TrellisHierarchical)."""

import tracemalloc

import numpy as np
import pytest

from sklearn_trellis import DivisiveClustering, TrellisHierarchical
from sklearn_trellis._core import budget


# -- a precomputed matrix too large for memory is refused before any copy -----------------
@pytest.mark.parametrize("make", [
    lambda: TrellisHierarchical(metric="precomputed", linkage="average"),
    lambda: DivisiveClustering(metric="precomputed"),
])
def test_precomputed_matrix_refused_before_allocating(monkeypatch, make):
    # Issue 31: a (70000, 70000) broadcast view made TrellisHierarchical allocate an
    # 18.3 GiB condensed copy (the median of the distances) before any memory check.
    make().fit(np.broadcast_to(np.zeros(1), (3, 3)))  # compile for this layout first
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 1 << 20)  # 1 MiB free
    n = 3000
    X = np.broadcast_to(np.zeros(1), (n, n))  # 72 MB that take no memory
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"Not enough memory: .* needs about .* MiB, but "
                                             r"only 1 MiB is available"):
            make().fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * n * n // 20  # nothing of size N x N was allocated


# -- item 9: results do not depend on the units of X ----------------------------------------
SCALES = [1e-300, 1e-250, 1e-200, 1e-160, 1e-20, 1e20, 1e160, 1e200, 1e250, 1e300]


def _two_blobs(n=9, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    X[n // 2:] += 3.0
    return X


@pytest.mark.parametrize("make", [
    lambda: DivisiveClustering(n_clusters=3),
    lambda: DivisiveClustering(n_clusters=3, metric="cityblock"),
    lambda: DivisiveClustering(n_clusters=3, method="kmeans", random_state=0),
    lambda: DivisiveClustering(n_clusters=3, method="exact"),
    lambda: DivisiveClustering(n_clusters=3, method="exact", criterion="dasgupta"),
    lambda: DivisiveClustering(n_clusters=3, method="kmedoids"),
    lambda: TrellisHierarchical(n_clusters=3, compute_distances=True),
    lambda: TrellisHierarchical(n_clusters=3, compute_distances=True, linkage="average"),
    lambda: TrellisHierarchical(n_clusters=3, compute_distances=True, linkage="single", metric="manhattan"),
], ids=["diana", "diana-cityblock", "kmeans", "exact", "exact-dasgupta", "kmedoids",
        "trellis-ward", "trellis-average", "trellis-single-manhattan"])
def test_tree_and_heights_follow_a_global_scale(make):
    # Issue 31: at scales <= 1e-200 the squared distances underflowed: all heights
    # 0 and other labels than at scale 1.
    X = _two_blobs()
    reference = make().fit(X)
    for scale in SCALES:
        model = make().fit(X * scale)
        np.testing.assert_array_equal(model.labels_, reference.labels_)
        np.testing.assert_array_equal(model.children_, reference.children_)
        np.testing.assert_allclose(model.distances_ / scale, reference.distances_,
                                   rtol=1e-12)


@pytest.mark.parametrize("method", ["diana", "kmeans"])
def test_heights_float64_cannot_hold_are_refused_with_the_range(method):
    X = _two_blobs()
    for scale in (1e-200, 1e200):  # squared distances of 1e-400 / 1e400
        with pytest.raises(ValueError, match=r"merge heights of metric='sqeuclidean' "
                                             r"(underflow|overflow) .* between about"):
            DivisiveClustering(metric="sqeuclidean", method=method, random_state=0).fit(X * scale)
    reference = DivisiveClustering(metric="sqeuclidean", method=method, random_state=0).fit(X)
    model = DivisiveClustering(metric="sqeuclidean", method=method, random_state=0).fit(X * 1e-100)
    np.testing.assert_allclose(model.distances_ / 1e-200, reference.distances_, rtol=1e-12)
    # The distances themselves overflow: nothing to return.
    with pytest.raises(ValueError, match="overflow"):
        DivisiveClustering(method=method).fit(np.array([[1.7e308], [-1.7e308], [0.0]]))


# -- identical rows are cheap ---------------------------------------------------------------
def _depth(children, n):
    depth = np.zeros(2 * n - 1, dtype=np.int64)
    for row, (a, b) in enumerate(children):
        depth[n + row] = 1 + max(depth[a], depth[b])
    return int(depth[-1])


@pytest.mark.parametrize("method", ["kmeans", "kmedoids"])
def test_identical_rows_give_a_balanced_tree_at_height_zero(method):
    # Issue 31: method='kmeans' split n identical rows one at a time with an
    # O(m^2) diameter each: 37.5 s at n = 4,000 (0.14 s for 8,000 distinct rows).
    n = 2000 if method == "kmeans" else 300  # 'exact' and 'diana' keep their own splits
    X = np.zeros((n, 2))
    X[n // 2:] = 5.0  # two groups of identical rows
    model = DivisiveClustering(method=method, random_state=0).fit(X)
    assert model.labels_.tolist() == [0] * (n // 2) + [1] * (n - n // 2)
    assert np.count_nonzero(model.distances_) == 1
    assert _depth(model.children_, n) <= 2 * np.ceil(np.log2(n)) + 1
