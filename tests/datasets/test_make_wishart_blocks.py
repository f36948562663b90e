"""make_wishart_blocks: the feature rows it returns are the rows behind its distances; given
blocks (``labels``)."""

import numpy as np
import pytest
from sklearn.metrics import pairwise_distances

from sklearn_trellis.datasets import make_wishart_blocks


def test_features_give_the_distances_and_the_block_covariance():
    data = make_wishart_blocks(n_samples=30, dof=4000, random_state=0, return_features=True)
    features = data.features
    assert features.shape == (30, 4000)
    np.testing.assert_allclose(pairwise_distances(features, metric="sqeuclidean"),
                               data.distances, atol=1e-9)
    # S = F F^T estimates Sigma = scale (I + theta B) (zero mean: no offset left)
    same = data.target[:, None] == data.target[None, :]
    S = features @ features.T
    off = ~np.eye(30, dtype=bool)
    # entries' standard error is about sqrt(2 scale^2 / d) / sqrt(count) < 0.01
    assert abs(S[same & off].mean() - data.scale * data.theta) < 0.03
    assert abs(S[~same].mean()) < 0.03
    assert abs(np.diag(S).mean() - data.scale * (1 + data.theta)) < 0.03


def test_features_are_not_returned_by_default():
    assert "features" not in make_wishart_blocks(n_samples=10, random_state=0)


def test_given_labels_are_the_blocks():
    labels = np.repeat([7, -2, 5], [4, 10, 6])
    data = make_wishart_blocks(n_samples=20, dof=4000, theta=1.0, labels=labels,
                               random_state=0)
    np.testing.assert_array_equal(data.target, np.repeat([2, 0, 1], [4, 10, 6]))
    # mean squared distance 2 scale inside a block, 2 scale (1 + theta) across
    same = data.target[:, None] == data.target[None, :]
    off = ~np.eye(20, dtype=bool)
    assert abs(data.distances[same & off].mean() - 2 * data.scale) < 0.1
    assert abs(data.distances[~same].mean() - 2 * data.scale * 2.0) < 0.2


def test_drawn_blocks_are_unchanged_by_the_labels_option():
    # the labels option must not move the random stream of the default draw
    data = make_wishart_blocks(n_samples=12, dof=5, random_state=3)
    np.testing.assert_array_equal(data.target, [1, 2, 2, 0, 0, 0, 1, 0, 1, 1, 0, 1])


def test_bad_labels_are_refused():
    with pytest.raises(ValueError, match="labels must hold 5 integers"):
        make_wishart_blocks(n_samples=5, labels=[0, 1, 0])
    with pytest.raises(ValueError, match="labels must hold 5 integers"):
        make_wishart_blocks(n_samples=5, labels=[0.5, 1, 0, 1, 1])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_samples=2.5), TypeError, "n_samples must be an integer"),
    (dict(n_samples=-1), ValueError, "n_samples must be >= 0"),
    (dict(n_blocks=0), ValueError, "n_blocks must be >= 1"),
    (dict(dof=0), ValueError, "dof must be >= 1"),      # the distances divide by dof
    (dict(scale=-1.0), ValueError, "scale must be > 0"),  # its square root scales X
    (dict(theta=np.nan), ValueError, "theta must be finite"),
    (dict(offset=np.inf), ValueError, "offset must be finite"),
    (dict(dtype=np.int64), ValueError, "dtype must be np.float32 or np.float64"),
])
def test_parameters_at_their_edges_are_refused_clearly(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_wishart_blocks(**{"n_samples": 6, "random_state": 0, **kwargs})


def test_other_generators_check_their_sizes():
    from sklearn_trellis.datasets import load_ginkgo_jets, load_tumour_subset, make_ginkgo_jets
    with pytest.raises(ValueError, match="n_jets must be >= 0"):
        make_ginkgo_jets(-1, random_state=0)      # made no jet, silently
    with pytest.raises(TypeError, match="n_jets must be an integer"):
        make_ginkgo_jets(2.5, random_state=0)     # made 2 jets, silently
    with pytest.raises(ValueError, match="n_per_class must be <= 212"):
        load_tumour_subset(213)
    assert load_tumour_subset(np.int64(2)).data.shape == (4, 30)
    assert len(load_ginkgo_jets(n_leaves=np.int64(5)).jets) == len(
        load_ginkgo_jets(n_leaves=5).jets)
