"""make_wishart_blocks: the feature rows it returns are the rows behind its distances."""

import numpy as np
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
