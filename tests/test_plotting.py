"""Displays drawn headless (matplotlib Agg); skipped when matplotlib is absent."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_trellis import EntropyAgglomeration, ExactCorrelationClustering  # noqa: E402
from sklearn_trellis.plotting import (CoClusteringDisplay, DendrogramDisplay,  # noqa: E402
                                      EntropySequenceDisplay, NClustersHistogramDisplay)
from sklearn_trellis.summaries import (cumulative_occurrence_distribution,  # noqa: E402
                                       entropy_sequence, pairwise_cooccurrence)

E3 = [[[0, 2, 5, 6], [1], [3, 4]], [[0, 2, 5], [1, 6], [3, 4]], [[0, 1, 2, 5, 6], [3, 4]]]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_dendrogram_display():
    ea = EntropyAgglomeration().fit(E3)
    names = [str(i + 1) for i in range(7)]
    display = DendrogramDisplay.from_estimator(ea, element_labels=names)
    assert sorted(display.leaves_) == list(range(7))
    # the two zero-entropy subsets of Figure 9a are contiguous leaves
    leaves = display.leaves_
    assert {leaves.index(3), leaves.index(4)} in ({i, i + 1} for i in range(6))
    positions = sorted(leaves.index(e) for e in (0, 2, 5))
    assert positions[-1] - positions[0] == 2
    # merge heights drawn equal the entropies
    heights = sorted({d[1] for d in display.dendrogram_["dcoord"]} - {0.0})
    np.testing.assert_allclose(heights, sorted(set(ea.distances_) - {0.0}))
    assert DendrogramDisplay.from_samples(E3).ax_ is not None



def assert_annotations_on_link_tops(display, orientation, every_link=True):
    """Each annotation sits at the top (midpoint, height) of one of scipy's drawn links
    (of every one, unless labels were left out for lack of room)."""
    tops = {(round((i[1] + i[2]) / 2, 9), round(d[1], 9))
            for i, d in zip(display.dendrogram_["icoord"], display.dendrogram_["dcoord"])}
    drawn = set()
    for a in display.annotations_:
        height, position = a.xy if orientation in ("left", "right") else a.xy[::-1]
        drawn.add((round(position, 9), round(height, 9)))
    assert len(drawn) == len(display.annotations_)
    assert drawn == tops if every_link else drawn <= tops


def _tree(n, seed=0, ties=False):
    """A scipy Ward linkage of n random points; ``ties``: heights lifted to the largest
    below, with non-monotone raw heights (as a MAP tree's), so merges share heights."""
    from scipy.cluster.hierarchy import linkage
    rng = np.random.default_rng(seed)
    Z = linkage(rng.normal(size=(n, 2)), "ward")
    if ties:
        raw = rng.permutation(Z[:, 2])
        lifted = np.zeros(2 * n - 1)
        for t, (a, b) in enumerate(Z[:, :2].astype(int)):
            lifted[n + t] = max(raw[t], lifted[a], lifted[b])
        Z[:, 2] = lifted[n:]
    return Z


def test_dendrogram_truncates_by_default_above_50_leaves():
    fig, ax = plt.subplots(figsize=(6, 4))
    assert len(DendrogramDisplay(_tree(50)).plot(ax=ax).leaves_) == 50
    # above 50: scipy's 'lastp' with as many leaves as fit the axes at 10 points each
    display = DendrogramDisplay(_tree(120)).plot(ax=ax)
    room = ax.get_window_extent().height * 72 / fig.dpi
    assert len(display.leaves_) == int(np.clip(room // 10, 10, 50)) < 50
    assert display.dendrogram_["ivl"][0].startswith("(")      # collapsed clusters
    tall = plt.subplots(figsize=(6, 12))[1]
    assert len(DendrogramDisplay(_tree(120)).plot(ax=tall).leaves_) == 50
    # overridable: p, another mode, or no truncation (names left out when they do not fit)
    assert len(DendrogramDisplay(_tree(120)).plot(ax=ax, p=40).leaves_) == 40
    assert len(DendrogramDisplay(_tree(120)).plot(ax=ax, truncate_mode="lastp").leaves_) == 30
    full = DendrogramDisplay(_tree(120)).plot(ax=ax, truncate_mode=None)
    assert len(full.leaves_) == 120
    assert not any(label.get_text() for label in ax.get_yticklabels())


@pytest.mark.parametrize("heights", ["distance", "rank", "log"])
@pytest.mark.parametrize("orientation", ["left", "top"])
def test_probability_labels_sit_on_link_tops_and_never_overlap(heights, orientation):
    n = 150
    probabilities = np.random.default_rng(1).uniform(size=n - 1)
    for truncate_mode in ("auto", None):
        fig, ax = plt.subplots(figsize=(5, 4))
        display = DendrogramDisplay(_tree(n, ties=True), node_probabilities=probabilities).plot(
            ax=ax, heights=heights, orientation=orientation, truncate_mode=truncate_mode)
        assert_annotations_on_link_tops(display, orientation, every_link=False)
        assert [a.get_text() for a in display.annotations_] == [
            f"{p:.2f}" for p in probabilities[display.annotated_merges_]]
        renderer = fig.canvas.get_renderer()
        boxes = np.array([a.get_window_extent(renderer).extents for a in display.annotations_])
        apart = ((boxes[:, None, 2] <= boxes[None, :, 0]) | (boxes[None, :, 2] <= boxes[:, None, 0])
                 | (boxes[:, None, 3] <= boxes[None, :, 1])
                 | (boxes[None, :, 3] <= boxes[:, None, 1]))
        assert apart[~np.eye(len(boxes), dtype=bool)].all()
        if truncate_mode is None:     # 150 leaves in 4 inches: many labels left out
            assert 0 < len(boxes) < n - 1
        # font size follows the leaf spacing, within [5, 10] points
        sizes = {a.get_fontsize() for a in display.annotations_}
        assert len(sizes) == 1 and 5 <= sizes.pop() <= 10


@pytest.mark.parametrize("heights", ["rank", "log"])
def test_height_scales_draw_every_merge_at_its_own_level(heights):
    from sklearn_trellis.plotting import scaled_heights
    Z = _tree(40, seed=2, ties=True)
    n = len(Z) + 1
    assert np.unique(Z[:, 2]).size < n - 1          # the distances stack merges
    drawn = scaled_heights(Z, heights)
    assert np.unique(drawn).size == n - 1
    for t, (a, b) in enumerate(Z[:, :2].astype(int)):   # a parent strictly above its children
        for child in (a, b):
            if child >= n:
                assert drawn[t] > drawn[child - n]
    if heights == "rank":
        np.testing.assert_array_equal(drawn, np.arange(1, n))
    np.testing.assert_array_equal(scaled_heights(Z), Z[:, 2])
    with pytest.raises(ValueError, match="heights must be one of"):
        scaled_heights(Z, "sqrt")


def test_rank_scale_of_a_truncated_tree_ranks_the_drawn_merges():
    display = DendrogramDisplay(_tree(200)).plot(heights="rank", p=20)
    assert len(display.leaves_) == 20
    tops = sorted(d[1] for d in display.dendrogram_["dcoord"])
    np.testing.assert_array_equal(tops, np.arange(1, 20))
    assert display.ax_.get_xlabel() == "merge rank"


@pytest.mark.parametrize("orientation", ["left", "top"])
def test_dendrogram_node_probabilities_sit_on_scipys_links(orientation):
    from sklearn_trellis import TrellisHierarchical
    X = np.random.default_rng(3).normal(size=(9, 2))
    model = TrellisHierarchical(compute_full_tree=True, n_clusters=3).fit(X)
    display = DendrogramDisplay.from_estimator(model, node_probabilities=True,
                                               orientation=orientation)
    probabilities = model.node_marginals_
    assert len(display.annotations_) == probabilities.size == 8
    assert [a.get_text() for a in display.annotations_] == [f"{p:.2f}" for p in probabilities]
    # every annotation at the top of one of scipy's links (midpoint, height)
    assert_annotations_on_link_tops(display, orientation)
    label = display.ax_.get_xlabel() if orientation == "left" else display.ax_.get_ylabel()
    assert label == "ward linkage distance"


@pytest.mark.parametrize("orientation", ["left", "top"])
def test_truncated_dendrogram_prints_probabilities_on_the_drawn_merges(orientation):
    from sklearn.datasets import make_blobs

    from sklearn_trellis import TrellisHierarchical
    X, _ = make_blobs(n_samples=200, centers=3, random_state=0)
    model = TrellisHierarchical(n_clusters=3, compute_full_tree=True).fit(X)
    display = DendrogramDisplay.from_estimator(model, node_probabilities=True,
                                               orientation=orientation,
                                               truncate_mode="lastp", p=12)
    assert len(display.leaves_) == 12
    # 'lastp' draws the last 11 merges; the collapsed leaves carry no probability
    drawn_rows = np.arange(200 - 12, 199)
    assert set(display.annotated_merges_) <= set(drawn_rows)
    assert ([a.get_text() for a in display.annotations_]
            == [f"{model.node_marginals_[t]:.2f}" for t in display.annotated_merges_])
    every_link = display.annotated_merges_.size == drawn_rows.size
    assert every_link or orientation == "top"     # side by side, two labels may not fit
    assert_annotations_on_link_tops(display, orientation, every_link=every_link)


def test_dendrogram_display_height_labels_and_errors():
    from sklearn_trellis import DivisiveClustering
    ea = EntropyAgglomeration().fit(E3)
    assert DendrogramDisplay.from_estimator(ea).ax_.get_xlabel() == "expected projection entropy"
    diana = DivisiveClustering().fit(np.arange(6.0)[:, None])
    assert DendrogramDisplay.from_estimator(diana).ax_.get_xlabel() == "diameter"
    assert DendrogramDisplay(ea.linkage_matrix_).plot().ax_.get_xlabel() == "height"
    with pytest.raises(ValueError, match="no node_marginals_"):
        DendrogramDisplay.from_estimator(ea, node_probabilities=True)
    with pytest.raises(ValueError, match="7 entries for a tree of 6 merges"):
        DendrogramDisplay(ea.linkage_matrix_, node_probabilities=np.ones(7)).plot()
    # a truncated tree: only the first rows are annotated
    display = DendrogramDisplay(ea.linkage_matrix_, node_probabilities=[0.5, 0.25]).plot()
    assert [a.get_text() for a in display.annotations_] == ["0.50", "0.25"]


def test_coclustering_display_orders_by_dendrogram():
    ea = EntropyAgglomeration().fit(E3)
    display = CoClusteringDisplay.from_estimator(ea)
    order = DendrogramDisplay.from_estimator(ea).leaves_
    shown = display.image_.get_array()
    np.testing.assert_allclose(shown, pairwise_cooccurrence(E3)[np.ix_(order, order)])
    CoClusteringDisplay.from_samples(E3, colorbar=False)


def test_histogram_display_from_samples_and_exact_estimator():
    samples = np.array([[0, 0, 1], [0, 1, 2], [0, 1, 1], [0, 0, 0]])
    display = NClustersHistogramDisplay.from_samples(samples)
    heights = [bar.get_height() for bar in display.bars_]
    np.testing.assert_allclose(heights, [0.25, 0.5, 0.25])
    model = ExactCorrelationClustering(beta=1.0).fit(np.random.default_rng(0).normal(size=(5, 2)))
    display = NClustersHistogramDisplay.from_estimator(model)
    assert sum(bar.get_height() for bar in display.bars_) == pytest.approx(1.0)
    CoClusteringDisplay.from_estimator(model)


def test_entropy_sequence_display():
    order = [0, 2, 5, 6, 1, 3, 4]
    display = EntropySequenceDisplay.from_samples(E3, order=order)
    np.testing.assert_allclose(display.cod, cumulative_occurrence_distribution(E3, order))
    line = display.axes_[1].get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), entropy_sequence(E3, order))
    ea = EntropyAgglomeration().fit(E3)
    display = EntropySequenceDisplay.from_estimator(ea, E3)
    assert sorted(display.order) == list(range(7))


def test_displays_refuse_wrong_estimators():
    from sklearn.cluster import KMeans
    from sklearn.exceptions import NotFittedError

    kmeans = KMeans(n_clusters=2, n_init=1, random_state=0).fit(np.arange(8.0)[:, None])
    with pytest.raises(TypeError, match="cooccurrence_"):
        CoClusteringDisplay.from_estimator(kmeans)
    with pytest.raises(TypeError, match="number of clusters"):
        NClustersHistogramDisplay.from_estimator(kmeans)
    with pytest.raises(NotFittedError):
        DendrogramDisplay.from_estimator(EntropyAgglomeration())



def test_credible_ball_display():
    from sklearn_trellis.plotting import CredibleBallDisplay
    from sklearn_trellis.summaries import credible_ball, point_estimate
    rng = np.random.default_rng(0)
    base = np.repeat([0, 1, 2], 4)
    samples = np.where(rng.random((30, 12)) < 0.2, rng.integers(0, 4, (30, 12)), base)
    estimate = point_estimate(samples, "vi", random_state=0)
    display = CredibleBallDisplay.from_samples(samples, estimate, level=0.9)
    ball = credible_ball(samples, estimate, level=0.9)
    assert len(display.axes_) == 4
    titles = [ax.get_title() for ax in display.axes_]
    assert titles[0].startswith("estimate") and titles[3].startswith("horizontal bound")
    k_upper = ball.upper_vertical[0].max() + 1
    assert f"{k_upper} clusters" in titles[1]
    # the drawn matrices are the co-clustering matrices of the estimate and the bounds
    order = np.argsort(estimate, kind="stable")
    for ax, labels in zip(display.axes_, [estimate, ball.upper_vertical[0],
                                          ball.lower_vertical[0], ball.horizontal[0]]):
        drawn = np.asarray(ax.get_images()[0].get_array())
        ordered = np.asarray(labels)[order]
        np.testing.assert_array_equal(drawn, ordered[:, None] == ordered[None, :])
    fitted = ExactCorrelationClustering(beta=1.0, random_state=0).fit(rng.normal(size=(5, 2)))
    with pytest.raises(TypeError, match="samples_"):
        CredibleBallDisplay.from_estimator(fitted)


def test_banner_display_draws_r_banner():
    from sklearn_trellis import DivisiveClustering
    from sklearn_trellis.plotting import BannerDisplay

    X = np.array([[0.0], [1.0], [5.0], [6.0], [20.0]])
    model = DivisiveClustering().fit(X)
    display = BannerDisplay.from_estimator(model, element_labels=list("abcde"))
    # One bar per gap, from its height to the top; first gap on top.
    starts = [bar.get_x() for bar in display.bars_]
    widths = [bar.get_width() for bar in display.bars_]
    np.testing.assert_allclose(starts, model.heights_)
    np.testing.assert_allclose(np.add(starts, widths), 20.0)
    rows = [bar.get_y() + bar.get_height() / 2 for bar in display.bars_]
    assert rows == sorted(rows, reverse=True)
    labels = [t.get_text() for t in display.ax_.get_yticklabels()]
    assert labels == ["a", "b", "c", "d", "e"]
    assert "0.76" in display.ax_.get_title(loc="left")
    plt.close("all")
    with pytest.raises(ValueError, match="expected 4"):
        BannerDisplay([0, 1, 2, 3, 4], [1.0, 2.0]).plot()
    plt.close("all")
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        BannerDisplay.from_estimator(DivisiveClustering())


def test_dependence_probability_display():
    from sklearn_trellis import CrossCat
    from sklearn_trellis.plotting import DependenceProbabilityDisplay
    X = np.array([[0.1, 0, 1], [0.3, 0, 2], [2.2, 1, 1], [2.5, 1, 0]], dtype=float)
    model = CrossCat(alpha_views=1.0, alpha_rows=1.0, alpha_prior=None, n_sweeps=20, random_state=0).fit(X)
    display = DependenceProbabilityDisplay.from_estimator(model, column_names=["a", "b", "c"])
    drawn = display.image_.get_array()
    order = display.order
    assert sorted(order) == [0, 1, 2]
    np.testing.assert_allclose(drawn, model.dependence_probability_[np.ix_(order, order)])
    # columns of the largest view come first
    sizes = np.bincount(model.views_)
    assert sizes[model.views_[order[0]]] == sizes.max()
    assert [t.get_text() for t in display.ax_.get_yticklabels()] == [
        "abc"[k] for k in order]


def test_fitted_estimators_of_the_wrong_kind_are_named_not_called_unfitted():
    # check_is_fitted(estimator, "linkage_matrix_") said "not fitted yet" of a fitted
    # estimator without a tree; a fitted one of the wrong kind is a TypeError naming why.
    from sklearn.cluster import KMeans, SpectralCoclustering
    from sklearn.exceptions import NotFittedError
    from sklearn_trellis.plotting import (BannerDisplay, CredibleBallDisplay,
                                          DependenceProbabilityDisplay)

    kmeans = KMeans(n_clusters=2, n_init=1, random_state=0).fit(np.arange(8.0)[:, None])
    ea = EntropyAgglomeration().fit(np.array([[0, 0, 1, 1], [0, 1, 1, 1]]))
    # a biclustering has row_labels_, no labels_ (as InfiniteBiclustering)
    biclusters = SpectralCoclustering(n_clusters=2, random_state=0).fit(np.eye(4) + 0.1)
    for call, match in [(lambda: DendrogramDisplay.from_estimator(kmeans), "linkage_matrix_"),
                        (lambda: EntropySequenceDisplay.from_estimator(kmeans, [[0, 1]]),
                         "linkage_matrix_"),
                        (lambda: BannerDisplay.from_estimator(ea), "order_ nor heights_"),
                        (lambda: DependenceProbabilityDisplay.from_estimator(ea),
                         "dependence_probability_"),
                        (lambda: CredibleBallDisplay.from_estimator(biclusters), "labels_")]:
        with pytest.raises(TypeError, match=match):
            call()
        plt.close("all")
    with pytest.raises(NotFittedError):   # an unfitted one is still "not fitted"
        DependenceProbabilityDisplay.from_estimator(KMeans())



def test_a_sample_set_of_one_element():
    # from_samples agglomerated with n_clusters=2 and said "n_clusters=2 exceeds the
    # number of elements (1)", a parameter the caller never passed.
    samples = np.zeros((3, 1), dtype=int)
    display = CoClusteringDisplay.from_samples(samples)
    np.testing.assert_array_equal(display.image_.get_array(), [[1.0]])
    plt.close("all")
    with pytest.raises(ValueError, match="at least 2 elements"):
        DendrogramDisplay.from_samples(samples)
    plt.close("all")


def test_scaled_heights_refuses_what_is_no_linkage_matrix():
    # (2, 3) returned its third column as heights, NaN heights went through
    from sklearn_trellis.plotting import scaled_heights
    with pytest.raises(ValueError, match=r"shape \(n - 1, 4\), got shape \(2, 3\)"):
        scaled_heights(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN or infinite merge heights"):
        scaled_heights(np.array([[0, 1, 0.5, 2], [2, 3, np.nan, 3]]), heights="log")
    assert scaled_heights(np.zeros((0, 4))).shape == (0,)


def test_dependence_display_names_column_names_in_its_error():
    from sklearn_trellis.plotting import DependenceProbabilityDisplay
    display = DependenceProbabilityDisplay(np.eye(3), column_names=["a"])
    with pytest.raises(ValueError, match="column_names has 1 entries for 3 columns"):
        display.plot()   # it named element_labels, which this display has not
    plt.close("all")


def test_co_clustering_display_refuses_what_is_no_square_finite_matrix():
    # a (2, 3) matrix drew its first 2 columns, silently
    for bad, match in ((np.ones((2, 3)), r"got shape \(2, 3\)\."),
                       (np.full((2, 2), np.nan), "holds NaN or inf")):
        with pytest.raises(ValueError, match=match):
            CoClusteringDisplay(bad).plot()
    plt.close("all")
