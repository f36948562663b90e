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

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from fuzz_strategies import (FUZZ, INDEX_ARGUMENTS, check_exact_model,  # noqa: E402
                             check_index_argument, check_labels, check_probabilities,
                             feature_matrices, fit_or_clear_error, square_matrices)
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sklearn_trellis import (DivisiveClustering, DPMixture, EntropyAgglomeration,  # noqa: E402
                             ExactCorrelationClustering, FastTIWD, TrellisHierarchical)

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
