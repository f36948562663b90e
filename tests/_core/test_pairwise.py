"""Pairwise helpers: similarities never write into the caller's matrix (views included) unless
given it (copy=False); condensed distances of every metric without an N x N array."""

import numpy as np
import pytest

from sklearn_trellis._core.pairwise import similarity_from_distances


def test_a_view_of_the_distances_is_left_alone():
    base = np.abs(np.arange(5.0)[:, None] - np.arange(5.0)[None, :])
    view = base[:, :]  # a view: not the same object, same memory
    before = base.copy()
    for kind in ("exp", "precomputed"):
        similarity_from_distances(view, kind, None)
        np.testing.assert_array_equal(base, before)


@pytest.mark.parametrize("metric", ["euclidean", "l2", "manhattan", "cosine", "chebyshev"])
def test_condensed_distances_are_the_metrics_pairwise_distances(metric):
    from scipy.spatial.distance import squareform
    from sklearn.metrics import pairwise_distances

    from sklearn_trellis._core.pairwise import condensed_distances, square_from_condensed
    X = np.random.default_rng(0).normal(size=(37, 4))
    condensed = condensed_distances(X, metric)
    assert condensed.shape == (37 * 36 // 2,)
    np.testing.assert_allclose(squareform(condensed), pairwise_distances(X, metric=metric),
                               atol=1e-12)
    square = square_from_condensed(condensed, np.full((37, 37), np.nan))
    np.testing.assert_array_equal(square, squareform(condensed))
    with pytest.raises(ValueError, match="zero vectors"):
        condensed_distances(np.zeros((3, 2)), "cosine")


def test_similarities_overwrite_the_distances_only_when_allowed():
    from sklearn_trellis._core.pairwise import similarity_from_distances
    rng = np.random.default_rng(1)
    D = squareform_of(rng.uniform(1, 2, size=10 * 9 // 2), 10)
    kept = D.copy()
    S = similarity_from_distances(D, "exp", None)
    np.testing.assert_array_equal(D, kept)           # default: the input is not touched
    S_in_place = similarity_from_distances(D, "exp", None, copy=False)
    assert S_in_place is D
    np.testing.assert_array_equal(S_in_place, S)


def squareform_of(condensed, n):
    from scipy.spatial.distance import squareform
    return squareform(condensed).astype(np.float64)


@pytest.mark.parametrize("twin", ["serial", "parallel"])
@pytest.mark.parametrize("shape", [(1, 3), (2, 1), (64, 2), (131, 7), (90, 40)])
def test_euclidean_square_is_pdist_bit_for_bit(twin, shape):
    from scipy.spatial.distance import pdist, squareform

    from sklearn_trellis._core.pairwise import euclidean_square
    rng = np.random.default_rng(shape[0])
    X = rng.normal(size=shape) * 10.0 ** rng.uniform(-3, 3, size=shape[1])
    out = getattr(euclidean_square, twin)(X, np.full((shape[0],) * 2, np.nan))
    np.testing.assert_array_equal(out, squareform(pdist(X)))


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_matrix_scan_is_the_kernels(monkeypatch, dtype, threads):
    """numpy's checks of a small matrix find what the kernel (serial, or its tiles
    dealt to slots on numba's threads) finds."""
    from sklearn_trellis._core import pairwise, parallel
    rng = np.random.default_rng(5)
    m = (rng.normal(size=(30, 30)) * 10.0 ** rng.integers(-3, 3, size=(30, 30))).astype(dtype)
    wide = rng.normal(size=(150, 150)).astype(dtype)           # three tiles of rows
    for matrix in (m, m + m.T, np.zeros((3, 3), dtype), -np.eye(4, dtype=dtype), wide,
                   wide + wide.T):
        small = pairwise.scan_pairwise_matrix(matrix)                  # numpy
        monkeypatch.setattr(pairwise, "SMALL_CHECK_ENTRIES", 0)
        if threads:
            monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
        assert pairwise.scan_pairwise_matrix(matrix) == small          # the kernel
        monkeypatch.undo()
    m[2, 7] = np.nan            # not finite: the kernel's maxima over the finite pairs
    finite, largest, asymmetry = pairwise.scan_pairwise_matrix(m)
    assert not finite and np.isfinite(largest) and np.isfinite(asymmetry)


@pytest.mark.parametrize("twin", ["serial", "parallel"])
@pytest.mark.parametrize("fitted", [True, False])
def test_local_scales_of_large_matrices_are_numpys_partition(monkeypatch, twin, fitted):
    """Beyond ``SMALL_CHECK_ENTRIES`` a compiled selection (rows in place) gives the
    k-th smallest of each row, ties and zeros included: numpy's partition's values."""
    from sklearn_trellis._core import pairwise
    from sklearn_trellis._core.pairwise import _kth_smallest_rows, local_scales
    rng = np.random.default_rng(3)
    d = rng.integers(0, 4, size=(30, 25)).astype(np.float64)    # many ties, some zeros
    d[3] = 0.0                                                  # a row of duplicates
    expected = local_scales(d, 6, fitted=fitted)                # numpy's partition
    for k in (0, 6, 24):
        np.testing.assert_array_equal(
            getattr(_kth_smallest_rows, twin)(d, k, np.empty(30)),
            np.partition(d, k, axis=1)[:, k])
    monkeypatch.setattr(pairwise, "SMALL_CHECK_ENTRIES", 0)
    monkeypatch.setattr(pairwise._kth_smallest_rows, "for_work",
                        lambda work: getattr(pairwise._kth_smallest_rows, twin))
    np.testing.assert_array_equal(local_scales(d, 6, fitted=fitted), expected)
