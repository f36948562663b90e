"""DivisiveClustering: R's diana through the estimator, the tree encodings, cuts, errors."""

import json
import os

import numpy as np
import pytest
from scipy.cluster.hierarchy import dendrogram
from scipy.spatial.distance import pdist, squareform

from sklearn_examples import plot_dendrogram
from oracles import assert_merges_match_r, min_over_bipartitions
from sklearn_trellis import DivisiveClustering

REFERENCE_PATH = os.path.join(os.path.dirname(__file__), os.pardir, "data",
                              "diana_reference.json")
with open(REFERENCE_PATH) as handle:
    REFERENCE = json.load(handle)


def reference_fit(entry):
    x = np.array([[np.nan if v is None else v for v in row] for row in entry["x"]])
    metric = {"euclidean": "euclidean", "manhattan": "manhattan",
              "precomputed": "precomputed"}[entry["metric"]]
    return DivisiveClustering(metric=metric).fit(x)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_estimator_reproduces_r(name):
    entry = REFERENCE[name]
    model = reference_fit(entry)
    assert_merges_match_r(model.merge_, entry["merge"], model.distances_)
    np.testing.assert_array_equal(model.order_ + 1, entry["order"])
    assert model.heights_.tolist() == entry["height"]
    assert model.divisive_coefficient_ == entry["dc"]
    n = len(entry["x"])
    assert model.n_leaves_ == n and model.children_.shape == (n - 1, 2)


def test_dendrogram_recipe_and_scipy_draw_the_banner_order():
    entry = REFERENCE["iris"]
    model = reference_fit(entry)
    leaves = plot_dendrogram(model, no_plot=True)["leaves"]
    assert leaves == model.order_.tolist()
    assert dendrogram(model.linkage_matrix_, no_plot=True)["leaves"] == leaves
    np.testing.assert_array_equal(model.linkage_matrix_[:, 2], model.distances_)
    assert model.linkage_matrix_[-1, 3] == 150


def clusters_of(children, n):
    sets = [frozenset([i]) for i in range(n)]
    for a, b in children:
        sets.append(sets[a] | sets[b])
    return set(sets)


@pytest.mark.parametrize("method", ["diana", "kmeans", "kmedoids", "exact"])
def test_cuts_split_the_largest_diameters_first(method):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    D = squareform(pdist(X))
    for k in (1, 2, 3, 5, 40):
        model = DivisiveClustering(n_clusters=k, method=method, random_state=0).fit(X)
        assert model.n_clusters_ == k
        parts = [frozenset(np.flatnonzero(model.labels_ == c).tolist()) for c in range(k)]
        nodes = clusters_of(model.children_, 40)
        assert all(part in nodes for part in parts)
        if 1 < k < 40:
            # Every part is no wider than any split made above the cut.
            widest = max(D[np.ix_(list(p), list(p))].max() for p in parts)
            assert widest <= model.distances_[40 - k] + 1e-12
    threshold = float(np.median(model.distances_))
    cut = DivisiveClustering(n_clusters=None, distance_threshold=threshold,
                             method=method, random_state=0).fit(X)
    assert cut.n_clusters_ == 40 - np.count_nonzero(cut.distances_ < threshold)


def test_methods_recover_separated_groups():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(15, 3)) + shift for shift in (0.0, 9.0, 30.0)])
    truth = np.repeat([0, 1, 2], 15)
    for method in ("diana", "kmeans", "kmedoids", "exact"):
        for metric in ("euclidean", "sqeuclidean", "cityblock", "correlation"):
            if metric == "correlation":
                continue
            labels = DivisiveClustering(n_clusters=3, method=method, metric=metric,
                                        random_state=0).fit_predict(X)
            assert np.array_equal(labels, truth), (method, metric)


def test_other_metrics_and_precomputed():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(25, 6)).astype(float)
    hamming = DivisiveClustering(metric="hamming").fit(X)
    same = DivisiveClustering(metric="precomputed").fit(squareform(pdist(X, "hamming")))
    np.testing.assert_array_equal(hamming.children_, same.children_)
    correlation = DivisiveClustering(metric="correlation", method="kmedoids").fit(
        rng.normal(size=(20, 5)))
    assert correlation.heights_.max() <= 2.0
    squared = DivisiveClustering(metric="sqeuclidean").fit(X)
    plain = DivisiveClustering(metric="euclidean").fit(X)
    assert squared.distances_[-1] == pytest.approx(plain.distances_[-1] ** 2)


def test_exact_reports_its_fallback_and_keeps_diameters():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    model = DivisiveClustering(method="exact", max_exact_size=12).fit(X)
    assert "max_exact_size=12" in model.approximation_ and "30" in model.approximation_
    small = DivisiveClustering(method="exact", criterion="dasgupta").fit(X[:15])
    assert small.approximation_ is None
    # Heights stay diameters of the dissimilarities (the similarities of the cut
    # criteria are a separate matrix).
    assert small.distances_[-1] == pytest.approx(pdist(X[:15]).max())
    assert DivisiveClustering(method="diana").fit(X).approximation_ is None


def test_missing_values_follow_r_and_are_refused_elsewhere():
    X = np.array([[0.0, 1.0], [np.nan, 1.5], [3.0, 2.0], [3.5, 4.0]])
    model = DivisiveClustering(metric="manhattan").fit(X)
    # Pair (0, 1): only feature 1 present, |1 - 1.5| rescaled by 2 / 1.
    assert model.n_leaves_ == 4
    from sklearn_trellis.engines.divisive._diana_kernels import r_dissimilarities
    D, ok = r_dissimilarities.serial(X, True, False)
    assert ok and D[0, 1] == 1.0 and D[0, 2] == 4.0
    assert DivisiveClustering(metric="nan_euclidean").fit(X).n_leaves_ == 4
    with pytest.raises(ValueError, match="metric='correlation' cannot handle missing"):
        DivisiveClustering(metric="correlation").fit(X)
    with pytest.raises(ValueError, match="method='kmeans' needs complete"):
        DivisiveClustering(method="kmeans").fit(X)
    with pytest.raises(ValueError, match="no feature present"):
        DivisiveClustering().fit(np.array([[0.0, np.nan], [np.nan, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        DivisiveClustering(metric="precomputed").fit(np.array([[0.0, np.nan], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match="infinity"):
        DivisiveClustering(metric="hamming").fit(np.array([[0.0, np.inf], [1.0, 1.0]]))


def test_bad_input_gets_clear_errors():
    D = squareform(pdist(np.arange(8.0).reshape(4, 2)))
    with pytest.raises(ValueError, match="square"):
        DivisiveClustering(metric="precomputed").fit(D[:3])
    with pytest.raises(ValueError, match="non-negative"):
        DivisiveClustering(metric="precomputed").fit(-D)
    with pytest.raises(ValueError, match="symmetric"):
        asymmetric = D.copy()
        asymmetric[0, 1] += 1.0
        DivisiveClustering(metric="precomputed").fit(asymmetric)
    with pytest.raises(ValueError, match="zero diagonal"):
        DivisiveClustering(metric="precomputed").fit(D + np.eye(4))
    with pytest.raises(ValueError, match="kmedoids"):
        DivisiveClustering(metric="precomputed", method="kmeans").fit(D)
    with pytest.raises(ValueError, match="exceeds the number of samples"):
        DivisiveClustering(n_clusters=5).fit(D)
    with pytest.raises(ValueError, match="Exactly one"):
        DivisiveClustering(n_clusters=None).fit(D)
    with pytest.raises(ValueError, match="method"):
        DivisiveClustering(method="ward").fit(D)
    with pytest.raises(ValueError, match="max_exact_size"):
        DivisiveClustering(method="exact", max_exact_size=40).fit(D)


def test_kmeans_is_reproducible_with_random_state():
    X = np.random.default_rng(4).normal(size=(200, 3))
    a = DivisiveClustering(method="kmeans", random_state=7).fit(X)
    b = DivisiveClustering(method="kmeans", random_state=7).fit(X)
    np.testing.assert_array_equal(a.children_, b.children_)
    np.testing.assert_array_equal(a.distances_, b.distances_)


@pytest.mark.parametrize("method", ["diana", "exact", "kmedoids"])
def test_every_node_is_a_split_made_at_its_diameter_when_heights_tie(method):
    # Issue 31: tied successive diameters made the banner reading build clusters
    # that were never formed, at heights that were not their diameters, and the
    # 'exact' tree's splits were then not optimal.
    for seed in range(25):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(4, 11))
        D = squareform(rng.choice([0.5, 1.0, 1.5], size=n * (n - 1) // 2))
        model = DivisiveClustering(method=method, metric="precomputed").fit(D)
        sets = [frozenset([i]) for i in range(n)]
        for (a, b), height in zip(model.children_, model.distances_):
            sets.append(sets[a] | sets[b])
            members = sorted(sets[-1])
            assert height == D[np.ix_(members, members)].max()
            if method == "exact":
                sub = D[np.ix_(members, members)]

                def average(mask):
                    return sum(sub[np.ix_(part, part)].sum() / (2 * part.sum())
                               for part in (mask, ~mask))
                left = np.isin(members, sorted(sets[a]))
                assert average(left) == pytest.approx(
                    min_over_bipartitions(len(members), average), abs=1e-12)
        np.testing.assert_array_equal(model.linkage_matrix_[:, :2], model.children_)
        assert np.all(np.diff(model.distances_) >= 0)
