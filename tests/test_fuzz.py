"""Fuzzing every estimator (issue 18): a result that passes the invariants, or a clear error.

Random shapes, dtypes, scales (1e-300 ... 1e300), NaN / inf at random positions,
precomputed matrices (asymmetric, negative, non-zero diagonal), index arguments and
warm starts with new data. Each estimator must either return a result that passes
the invariants (finite ``log Z >= MAP``, probabilities in [0, 1] summing to 1,
``log_potential(labels_) == map_log_potential_``) or raise ``ValueError`` /
``TypeError`` with a message.

Fast by default (a few examples per test). The ``slow`` profile runs many:
``SKLEARN_TRELLIS_FUZZ=slow python -m pytest tests/test_fuzz.py``.
"""

import os
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sklearn_trellis import (DivisiveClustering, DPMixture, EntropyAgglomeration,  # noqa: E402
                             ExactCorrelationClustering, FastTIWD, TrellisHierarchical)

_PROFILES = {"fast": 8, "slow": 200}
_PROFILE = os.environ.get("SKLEARN_TRELLIS_FUZZ", "fast")
if _PROFILE not in _PROFILES:
    raise ValueError(f"SKLEARN_TRELLIS_FUZZ must be one of {sorted(_PROFILES)}, got {_PROFILE!r}.")
FUZZ = settings(max_examples=_PROFILES[_PROFILE], deadline=None, derandomize=_PROFILE == "fast",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

#: Probabilities may exceed [0, 1] by rounding only.
TOL = 1e-9


# -- inputs ---------------------------------------------------------------------------
@st.composite
def feature_matrices(draw, min_rows=1, max_rows=9):
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    exponent = draw(st.sampled_from([-300, -150, -20, -3, 0, 3, 20, 150, 300]))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
    X = np.random.default_rng(seed).normal(size=(n, d))
    if draw(st.booleans()):
        X[n // 2:] += 4.0
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        X = (X * 10.0 ** exponent).astype(dtype) if dtype != np.int64 else \
            np.round(X * 3).astype(np.int64)
    bad = draw(st.sampled_from([None, None, None, np.nan, np.inf, -np.inf]))
    if bad is not None and dtype != np.int64:
        X = X.astype(np.float64)
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = bad
    return X


@st.composite
def square_matrices(draw, kind):
    """``kind='distances'``: squared distances of random points (some corrupted);
    ``'affinities'``: signed symmetric affinities (some corrupted)."""
    n = draw(st.integers(2, 8))
    seed = draw(st.integers(0, 2**16))
    exponent = draw(st.sampled_from([-300, -150, -3, 0, 3, 150, 300]))
    rng = np.random.default_rng(seed)
    if kind == "distances":
        P = rng.normal(size=(n, 3))
        M = ((P[:, None] - P[None]) ** 2).sum(axis=2)
    else:
        M = rng.normal(size=(n, n))
        M = M + M.T
        np.fill_diagonal(M, 0.0)
    with np.errstate(over="ignore", under="ignore"):
        M = M * 10.0 ** exponent
    corruption = draw(st.sampled_from(["none", "none", "asymmetric", "negative", "diagonal",
                                       "nan", "inf"]))
    i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
    if corruption == "asymmetric" and i != j:
        M[i, j] += 1.0 + abs(M[i, j])
    elif corruption == "negative":
        M[i, j] = M[j, i] = -1.0 - abs(M[i, j])
    elif corruption == "diagonal":
        M[i, i] = 1.0 + abs(M).max()
    elif corruption == "nan":
        M[i, j] = np.nan
    elif corruption == "inf":
        M[i, j] = np.inf
    return M


INDEX_ARGUMENTS = st.one_of(
    st.lists(st.integers(-3, 12), min_size=0, max_size=4),
    st.lists(st.one_of(st.floats(-2, 12), st.just(float("nan"))), min_size=1, max_size=3),
    st.lists(st.booleans(), min_size=1, max_size=2),
    st.just("0"), st.just(None))


# -- outcomes ---------------------------------------------------------------------------
def fit_or_clear_error(estimator, X, y=None):
    """The fitted estimator, or None after a ValueError / TypeError with a message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return estimator.fit(X, y)
    except (ValueError, TypeError) as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"
        return None


def check_probabilities(P, axis=None):
    P = np.asarray(P, dtype=np.float64)
    assert np.all(np.isfinite(P))
    assert np.all(P >= -TOL) and np.all(P <= 1 + TOL)
    if axis is not None:
        np.testing.assert_allclose(P.sum(axis=axis), 1.0, atol=1e-8)


def check_labels(model, n):
    labels = np.asarray(model.labels_)
    assert labels.shape == (n,)
    assert labels.min() == 0 and np.array_equal(np.unique(labels), np.arange(labels.max() + 1))


def check_index_argument(method, indices):
    try:
        value = method(indices)
    except (ValueError, TypeError) as error:
        assert str(error).strip()
        return
    assert -TOL <= float(value) <= 1 + TOL


def check_exact_model(model, n):
    """The invariants of the trellis estimators (flat and hierarchical)."""
    check_labels(model, n)
    log_z, best = model.log_partition_function_, model.map_log_potential_
    assert np.isfinite(log_z) and np.isfinite(best)
    assert log_z >= best - 1e-9 * max(1.0, abs(best))


# -- the estimators ---------------------------------------------------------------------
@FUZZ
@given(X=feature_matrices(), beta=st.sampled_from([0.0, 0.5, 1.0, 50.0]),
       indices=INDEX_ARGUMENTS)
def test_correlation_clustering_features(X, beta, indices):
    model = fit_or_clear_error(ExactCorrelationClustering(beta=beta), X)
    if model is None:
        return
    n = X.shape[0]
    check_exact_model(model, n)
    assert model.log_potential(model.labels_) == pytest.approx(model.map_log_potential_,
                                                               rel=1e-9, abs=1e-9)
    P = model.pairwise_marginals_
    check_probabilities(P)
    np.testing.assert_allclose(np.diag(P), 1.0, atol=1e-9)
    check_probabilities(model.n_clusters_distribution_, axis=0)
    check_index_argument(model.cluster_marginal, indices)
    check_index_argument(model.together_marginal, indices)


@FUZZ
@given(W=square_matrices("affinities"), beta=st.sampled_from([0.1, 1.0, 100.0]),
       max_exact_size=st.sampled_from([12, 4]))
def test_correlation_clustering_precomputed(W, beta, max_exact_size):
    model = fit_or_clear_error(ExactCorrelationClustering(
        beta=beta, affinity="precomputed", max_exact_size=max_exact_size), W)
    if model is None:
        return
    check_exact_model(model, W.shape[0])
    assert model.log_potential(model.labels_) == pytest.approx(model.map_log_potential_,
                                                               rel=1e-9, abs=1e-9)
    check_probabilities(model.pairwise_marginals_)


@FUZZ
@given(X=feature_matrices(), indices=INDEX_ARGUMENTS)
def test_trellis_hierarchical_features(X, indices):
    model = fit_or_clear_error(TrellisHierarchical(n_clusters=min(2, X.shape[0])), X)
    if model is None:
        return
    n = X.shape[0]
    check_exact_model(model, n)
    assert model.log_potential(model.map_tree_) == pytest.approx(model.map_log_potential_,
                                                                 rel=1e-9, abs=1e-9)
    check_index_argument(model.cluster_marginal, indices)


@FUZZ
@given(X=feature_matrices(min_rows=2), X_new=feature_matrices(min_rows=1, max_rows=3),
       likelihood=st.sampled_from(["gaussian", "diagonal"]),
       method=st.sampled_from(["gibbs", "exact"]))
def test_dp_mixture(X, X_new, likelihood, method):
    model = fit_or_clear_error(DPMixture(likelihood=likelihood, method=method, n_sweeps=6,
                                         random_state=0), X)
    if model is None:
        return
    n = X.shape[0]
    check_labels(model, n)
    assert np.all(np.isfinite(model.log_joints_))
    check_probabilities(model.pairwise_marginals_)
    check_probabilities(model.n_clusters_distribution_, axis=0)
    if X_new.shape[1] != X.shape[1]:
        return
    try:
        proba = model.predict_proba(X_new)
    except (ValueError, TypeError) as error:
        assert str(error).strip()
        return
    check_probabilities(proba, axis=1)


@FUZZ
@given(X1=feature_matrices(min_rows=3, max_rows=8), seed=st.integers(0, 100))
def test_dp_mixture_warm_start_with_new_data(X1, seed):
    model = fit_or_clear_error(DPMixture(method="gibbs", n_sweeps=6, warm_start=True,
                                         random_state=0), X1)
    if model is None:
        return
    X2 = np.random.default_rng(seed).normal(size=X1.shape) + 10.0  # other data
    model = fit_or_clear_error(model, X2)
    if model is None:
        return
    assert model.samples_.shape == (3, X1.shape[0])  # the samples of X1 were dropped
    assert np.all(np.isfinite(model.log_joints_))


@FUZZ
@given(D=square_matrices("distances"), warm=st.booleans(), seed=st.integers(0, 100))
def test_fast_tiwd_precomputed(D, warm, seed):
    model = fit_or_clear_error(FastTIWD(n_sweeps=6, warm_start=warm, random_state=0), D)
    if model is None:
        return
    n = D.shape[0]
    check_labels(model, n)
    assert np.all(np.isfinite(model.log_joints_))
    check_probabilities(model.pairwise_marginals_)
    if warm:  # new data of the same size
        P = np.random.default_rng(seed).normal(size=(n, 2))
        model = fit_or_clear_error(model, ((P[:, None] - P[None]) ** 2).sum(axis=2))
        if model is not None:
            assert np.all(np.isfinite(model.log_joints_))
            assert model.samples_.shape == (3, n)


@FUZZ
@given(X=feature_matrices(min_rows=2))
def test_fast_tiwd_features(X):
    model = fit_or_clear_error(FastTIWD(metric="sqeuclidean", n_sweeps=6, random_state=0), X)
    if model is None:
        return
    check_labels(model, X.shape[0])
    assert np.all(np.isfinite(model.log_joints_))


@FUZZ
@given(X=feature_matrices(), method=st.sampled_from(["diana", "kmeans"]))
def test_divisive_clustering(X, method):
    model = fit_or_clear_error(DivisiveClustering(method=method, random_state=0), X)
    if model is None:
        return
    check_labels(model, X.shape[0])
    assert np.all(np.isfinite(model.distances_))


@FUZZ
@given(n=st.integers(1, 8), n_samples=st.integers(1, 6), seed=st.integers(0, 2**16),
       kind=st.sampled_from(["labels", "floats", "negative", "nan"]))
def test_entropy_agglomeration(n, n_samples, seed, kind):
    samples = np.random.default_rng(seed).integers(0, 3, size=(n_samples, n))
    if kind == "floats":
        samples = samples + 0.5
    elif kind == "negative":
        samples = samples - 5
    elif kind == "nan":
        samples = samples.astype(float)
        samples[0, 0] = np.nan
    model = fit_or_clear_error(EntropyAgglomeration(), samples)
    if model is None:
        return
    check_labels(model, n)
    check_probabilities(model.cooccurrence_)
