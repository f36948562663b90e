"""The one tree store and cut of the four tree estimators (``HierarchyMixin``).

Each estimator's fitted tree is cut by the shared code at every ``n_clusters``
(1 and n included) and at every threshold (each merge height exactly, where
ties sit, and between them), and compared with scikit-learn's
``AgglomerativeClustering`` given the same tree and with scipy's ``fcluster``.
"""

import numpy as np
import pytest
from scipy.cluster.hierarchy import cophenet, fcluster, is_valid_linkage, linkage
from scipy.spatial.distance import squareform
from sklearn.cluster import AgglomerativeClustering
from sklearn.cluster._agglomerative import _hc_cut
from sklearn.datasets import make_blobs

from sklearn_trellis import (BayesianHierarchicalClustering, DivisiveClustering,
                             EntropyAgglomeration, TrellisHierarchical)
from sklearn_trellis._core.labels import first_appearance_labels
from sklearn_trellis._core.trees import (check_merge_heights, children_to_linkage,
                                         cut_children, scipy_to_children,
                                         threshold_n_clusters)

#: Integer coordinates: many tied merge heights (single linkage, cityblock diameters).
X_TIES = np.round(make_blobs(10, centers=3, random_state=3)[0])
X_BLOBS = make_blobs(16, centers=3, random_state=2)[0]
#: A sample set whose entropy agglomeration merges three times at entropy 0.
SAMPLES = [[[0, 2, 5, 6], [1], [3, 4]], [[0, 2, 5], [1, 6], [3, 4]],
           [[0, 1, 2, 5, 6], [3, 4]]]

ESTIMATORS = {
    "TrellisHierarchical": (lambda **cut: TrellisHierarchical(
        linkage="single", compute_distances=True, **cut), X_TIES),
    "BayesianHierarchicalClustering": (lambda **cut: BayesianHierarchicalClustering(**cut),
                                       X_BLOBS),
    "EntropyAgglomeration": (lambda **cut: EntropyAgglomeration(**cut), SAMPLES),
    "DivisiveClustering": (lambda **cut: DivisiveClustering(metric="cityblock", **cut),
                           X_TIES),
}


@pytest.fixture(scope="module", params=list(ESTIMATORS))
def fitted(request):
    make, X = ESTIMATORS[request.param]
    return request.param, make, X, make(n_clusters=2).fit(X)


def agglomerative_labels(children, heights, **cut):
    """``AgglomerativeClustering`` given the same tree: single linkage on the tree's
    cophenetic distances (an ultrametric) merges at exactly the tree's heights."""
    ultrametric = squareform(cophenet(children_to_linkage(children, heights)))
    model = AgglomerativeClustering(metric="precomputed", linkage="single", **cut)
    return first_appearance_labels(model.fit(ultrametric).labels_)


def test_tree_attributes_are_one_format(fitted):
    _, _, _, model = fitted
    n = model.n_leaves_
    assert model.children_.shape == (n - 1, 2) and model.children_.dtype == np.intp
    assert model.n_connected_components_ == 1
    check_merge_heights(model.distances_, n)
    Z = model.linkage_matrix_
    assert is_valid_linkage(Z)
    np.testing.assert_array_equal(scipy_to_children(Z), model.children_)
    np.testing.assert_array_equal(Z[:, 2], model.distances_)


def test_threshold_cut_matches_agglomerative_and_fcluster(fitted):
    _, _, _, model = fitted
    children, heights, n = model.children_, model.distances_, model.n_leaves_
    levels = np.unique(heights)
    assert levels.size < heights.size or heights[0] == 0.0   # some ties or a zero height
    thresholds = np.concatenate([[0.0], levels, (levels[:-1] + levels[1:]) / 2,
                                 [levels[-1] + 1.0]])
    for threshold in thresholds:
        k = threshold_n_clusters(heights, threshold)
        labels = cut_children(children, n, k)
        # scikit-learn keeps the merges below the threshold, undoes the others ...
        expected = agglomerative_labels(children, heights, n_clusters=None,
                                        distance_threshold=threshold)
        np.testing.assert_array_equal(labels, expected)
        assert k == np.count_nonzero(heights >= threshold) + 1
        # ... which is scipy's "cophenetic distance <= t" at the float just below it.
        flat = fcluster(model.linkage_matrix_, np.nextafter(threshold, -np.inf),
                        criterion="distance")
        np.testing.assert_array_equal(labels, first_appearance_labels(flat))


def test_n_clusters_cut_matches_agglomerative(fitted):
    _, _, _, model = fitted
    children, heights, n = model.children_, model.distances_, model.n_leaves_
    for k in range(1, n + 1):
        labels = cut_children(children, n, k)
        assert labels.max() + 1 == k
        np.testing.assert_array_equal(labels,
                                      first_appearance_labels(_hc_cut(k, children, n)))
        if k in (1, n) or heights[n - k] > heights[n - k - 1]:   # no tie across the cut
            np.testing.assert_array_equal(
                labels, agglomerative_labels(children, heights, n_clusters=k))
            flat = fcluster(model.linkage_matrix_, k, criterion="maxclust")
            np.testing.assert_array_equal(labels, first_appearance_labels(flat))


def test_estimators_cut_their_tree_with_the_shared_cut(fitted):
    name, make, X, model = fitted
    n = model.n_leaves_
    cuts = [dict(n_clusters=1), dict(n_clusters=3), dict(n_clusters=n)]
    if name != "BayesianHierarchicalClustering":   # BHC's own cut is r_k < 0.5
        tie = float(model.distances_[np.flatnonzero(np.diff(model.distances_) == 0)[0]])
        cuts += [dict(n_clusters=None, distance_threshold=tie),
                 dict(n_clusters=None, distance_threshold=0.0)]
    for cut in cuts:
        refit = make(**cut).fit(X)
        np.testing.assert_array_equal(refit.children_, model.children_)
        k = (cut["n_clusters"] if cut["n_clusters"] is not None
             else threshold_n_clusters(model.distances_, cut["distance_threshold"]))
        assert refit.n_clusters_ == k
        np.testing.assert_array_equal(refit.labels_, cut_children(model.children_, n, k))
    with pytest.raises(ValueError, match="more clusters"):
        make(n_clusters=n + 1).fit(X)
    if name != "BayesianHierarchicalClustering":
        with pytest.raises(ValueError, match="Exactly one"):
            make(n_clusters=None).fit(X)
        with pytest.raises(ValueError, match="Exactly one"):
            make(n_clusters=2, distance_threshold=1.0).fit(X)


def test_linkage_matrix_is_scipys():
    Z = linkage(X_BLOBS, method="average")
    np.testing.assert_array_equal(children_to_linkage(scipy_to_children(Z), Z[:, 2]), Z)


def test_merge_heights_are_checked():
    with pytest.raises(ValueError, match="non-decreasing"):
        check_merge_heights([1.0, 0.5], 3)
    with pytest.raises(ValueError, match="non-decreasing"):
        check_merge_heights([0.5, np.nan], 3)
    with pytest.raises(ValueError, match="2 merge heights"):
        check_merge_heights([0.5], 3)
    np.testing.assert_array_equal(check_merge_heights([0.0, np.inf], 3), [0.0, np.inf])
