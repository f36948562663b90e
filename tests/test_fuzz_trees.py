"""Fuzzing the tree estimators and the summaries at the edges (issue 31).

DivisiveClustering, TrellisHierarchical and EntropyAgglomeration on feature rows
at scales 1e-300 ... 1e300 (globally and per feature), with tied distances and
heights, identical rows, zero or one row, at fit, predict and score; the
summaries (``credible_ball``, ``point_estimate``, ``expected_loss``) on odd
label vectors. Each either passes the invariants or raises ValueError /
TypeError with a message. ``SKLEARN_TRELLIS_FUZZ=slow`` runs 200 examples per test.
"""

import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from fuzz_strategies import (FUZZ, REJECTED, check_labels, check_probabilities,  # noqa: E402
                             edge_feature_matrices, fit_or_clear_error, report_rejected)
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sklearn_trellis import (DivisiveClustering, EntropyAgglomeration,  # noqa: E402
                             TrellisHierarchical)
from sklearn_trellis.summaries import credible_ball, expected_loss, point_estimate  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    report_rejected(__name__)


def clear_error_or(call, name):
    """``call()``, or None after a ValueError / TypeError with a message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call()
    except (ValueError, TypeError) as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"
        REJECTED[name] += 1
        return None


def check_tree(model, n):
    """A valid tree whose heights are finite, non-decreasing and non-negative."""
    check_labels(model, n)
    heights = np.asarray(model.distances_)
    assert heights.shape == (n - 1,)
    assert np.all(np.isfinite(heights)) and np.all(heights >= 0)
    assert np.all(np.diff(heights) >= 0)
    sizes = np.ones(2 * n - 1)
    for row, (a, b) in enumerate(model.children_):
        assert a < n + row and b < n + row
        sizes[n + row] = sizes[a] + sizes[b]
    assert n == 1 or sizes[-1] == n


def _unit(X):
    top = np.max(np.abs(X)) if X.size else 0.0
    return X / top if np.isfinite(top) and top > 0 else X


@FUZZ
@given(X=edge_feature_matrices(),
       method=st.sampled_from(["diana", "kmeans", "kmedoids", "exact"]),
       metric=st.sampled_from(["euclidean", "cityblock", "sqeuclidean"]))
def test_divisive_clustering_edges(X, method, metric):
    model = fit_or_clear_error(DivisiveClustering(method=method, metric=metric,
                                                  random_state=0), X)
    if model is None:
        return
    n = X.shape[0]
    check_tree(model, n)
    # Scale-free where the model is: one global scale gives the scale-1 tree.
    span = np.ptp(np.abs(X)) if X.size else 0.0
    if n > 1 and np.isfinite(span):
        exponents = np.frexp(np.max(np.abs(X), axis=0))[1]
        if np.ptp(exponents) == 0:  # a global scale: compare with the rows at unit scale
            reference = fit_or_clear_error(DivisiveClustering(
                method=method, metric=metric, random_state=0), _unit(X))
            if reference is not None and method != "kmeans":
                np.testing.assert_array_equal(model.labels_, reference.labels_)


@FUZZ
@given(X=edge_feature_matrices(max_rows=7), X_new=edge_feature_matrices(0, 3),
       linkage=st.sampled_from(["ward", "average", "single", "complete"]))
def test_trellis_hierarchical_edges(X, X_new, linkage):
    model = fit_or_clear_error(TrellisHierarchical(n_clusters=min(2, max(X.shape[0], 1)),
                                                   linkage=linkage, compute_distances=True),
                               X)
    if model is None:
        return
    n = X.shape[0]
    check_tree(model, n)
    assert np.isfinite(model.log_partition_function_)
    assert model.log_partition_function_ >= model.map_log_potential_ - 1e-9 * max(
        1.0, abs(model.map_log_potential_))
    if X_new.shape[1] != X.shape[1]:
        return
    proba = clear_error_or(lambda: model.predict_proba(X_new), "TrellisHierarchical.predict")
    if proba is not None:
        check_probabilities(proba, axis=1)
    if not hasattr(model, "score"):  # available_if: not with every energy
        return
    score = clear_error_or(lambda: model.score(X_new), "TrellisHierarchical.score")
    if score is not None:
        assert np.isfinite(score)


@FUZZ
@given(n=st.integers(0, 8), n_samples=st.integers(0, 6), seed=st.integers(0, 2**16),
       kind=st.sampled_from(["labels", "big_codes", "identical", "nan", "inf", "float"]))
def test_entropy_agglomeration_edges(n, n_samples, seed, kind):
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, 3, size=(n_samples, n))
    if kind == "big_codes":
        samples = samples * 10 ** 15 - 7
    elif kind == "identical":
        samples = np.zeros((n_samples, n), dtype=np.int64)
    elif kind in ("nan", "inf") and samples.size:
        samples = samples.astype(float)
        samples.flat[0] = np.nan if kind == "nan" else np.inf
    elif kind == "float":
        samples = samples + 1e-300
    model = fit_or_clear_error(EntropyAgglomeration(), samples)
    if model is None:
        return
    check_labels(model, n)
    check_probabilities(model.cooccurrence_)


LABEL_VECTORS = st.one_of(
    st.lists(st.integers(-3, 5), min_size=0, max_size=7),
    st.lists(st.one_of(st.floats(-2, 5), st.just(float("nan")), st.just(float("inf"))),
             min_size=1, max_size=7),
    st.lists(st.integers(0, 2), min_size=1, max_size=7).map(lambda v: np.array(v) * 10 ** 18))


@FUZZ
@given(n=st.integers(1, 7), n_samples=st.integers(0, 6), seed=st.integers(0, 2**16),
       estimate=LABEL_VECTORS,
       loss=st.sampled_from(["binder", "vi", "omari", "nvi", "nid", "omari_approx", "vi_lb"]),
       level=st.sampled_from([0.5, 0.95, 1.0, 0.0, 1.5, float("nan")]))
def test_summaries_edges(n, n_samples, seed, estimate, loss, level):
    samples = np.random.default_rng(seed).integers(0, 3, size=(n_samples, n))
    labels = clear_error_or(lambda: point_estimate(samples, loss, random_state=0,
                                                   return_loss=True), "point_estimate")
    if labels is not None:
        labels, value = labels
        assert labels.shape == (n,) and np.isfinite(value)
        assert expected_loss(samples, labels, loss) == pytest.approx(value, abs=1e-9)
    value = clear_error_or(lambda: expected_loss(samples, estimate, loss), "expected_loss")
    if value is not None:
        assert np.isfinite(value)
        assert np.all(np.isfinite(np.asarray(estimate, dtype=float)))
    ball = clear_error_or(lambda: credible_ball(samples, estimate, level=level),
                          "credible_ball")
    if ball is not None:
        assert np.all(np.isfinite(np.asarray(estimate, dtype=float)))
        assert np.isfinite(ball.radius) and 0 < level <= 1
