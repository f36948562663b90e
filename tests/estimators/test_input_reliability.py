"""Issue 18 items 2 and 4: a user's affinity callable is checked; one index validator."""

import numpy as np
import pytest

from sklearn_trellis import ExactCorrelationClustering, TrellisHierarchical

X8 = np.random.default_rng(0).normal(size=(8, 2))


@pytest.mark.parametrize("affinity, error, match", [
    (lambda A, B: np.ones((3, 3)), ValueError, "shape \\(3, 3\\)"),
    (lambda A, B: np.ones((len(A), 5)), ValueError, "shape \\(8, 5\\)"),
    (lambda A, B: np.random.default_rng(0).normal(size=(len(A), len(B))), ValueError, "symmetric"),
    (lambda A, B: np.full((len(A), len(B)), np.nan), ValueError, "NaN"),
    (lambda A, B: "affinities", TypeError, "numeric"),
])
def test_affinity_callable_output_is_checked(affinity, error, match):
    with pytest.raises(error, match=match):
        ExactCorrelationClustering(affinity=affinity).fit(X8)


def test_valid_affinity_callable_still_works_for_fit_and_predict():
    def affinity(A, B):
        return -np.abs(A[:, None, 0] - B[None, :, 0])
    model = ExactCorrelationClustering(beta=1.0, affinity=affinity).fit(X8)
    assert model.labels_.shape == (8,)
    assert model.predict(X8[:3]).shape == (3,)


FITTED = {  # fitted on first use, not at collection (a deselected test compiles nothing)
    "flat": lambda X8, X25: ExactCorrelationClustering(beta=1.0).fit(X8),
    "sparse-flat": lambda X8, X25: ExactCorrelationClustering(beta=1.0,
                                                              max_exact_size=10).fit(X25),
    "tree": lambda X8, X25: TrellisHierarchical(n_clusters=2).fit(X8),
    "sparse-tree": lambda X8, X25: TrellisHierarchical(
        n_clusters=2, max_exact_size=10, window_size=0, n_beam_trees=0).fit(X25),
}


@pytest.fixture(scope="module", params=list(FITTED))
def estimator(request):
    X25 = np.random.default_rng(1).normal(size=(25, 2))
    return FITTED[request.param](X8, X25)


def test_one_index_validator(estimator):
    methods = [estimator.cluster_marginal]
    if hasattr(estimator, "together_marginal"):
        methods.append(estimator.together_marginal)
    n = estimator.labels_.shape[0]
    for method in methods:
        with pytest.raises(TypeError, match="integers"):
            method([0.5])
        with pytest.raises(TypeError, match="integers"):
            method([1.0])  # a whole float is still not an index
        with pytest.raises(TypeError, match="integers"):
            method([True])
        with pytest.raises(ValueError, match="distinct"):
            method([0, 0, 1])
        with pytest.raises(ValueError, match="lie in"):
            method([n])
        with pytest.raises(ValueError, match="at least one"):
            method([])
        value = method(np.array([0, 1], dtype=np.int32))
        assert 0.0 <= value <= 1.0
        assert method([1, 0]) == value  # order does not matter
