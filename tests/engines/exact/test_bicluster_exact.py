"""The enumeration behind exact biclustering: partitions and their number, the size limit,
and the exact posterior's draws and marginals."""

import numpy as np
import pytest

from oracles import set_partitions as oracle_partitions
from sklearn_trellis.engines.exact.bicluster import (MAX_EXACT_PAIRS, ExactBiclusterPosterior,
                                                     bell, set_partitions)
from sklearn_trellis.models.cells import BernoulliCells
from sklearn_trellis.models.priors import CRP


@pytest.mark.parametrize("n", [0, 1, 2, 5, 7])
def test_set_partitions_and_bell_numbers(n):
    ours = set_partitions(n)
    assert ours.shape[0] == bell(n) == [1, 1, 2, 5, 15, 52, 203, 877][n]
    if n:
        assert {tuple(p) for p in ours} == {tuple(p) for p in oracle_partitions(n)}


def test_draws_follow_the_exact_posterior():
    rng = np.random.RandomState(0)
    X = (rng.random_sample((4, 3)) < 0.5).astype(float)
    posterior = ExactBiclusterPosterior(BernoulliCells().fit(X), CRP(1.0), CRP(2.0)).fit(X)
    probabilities = np.exp(posterior.log_joint - posterior.log_marginal_likelihood)
    assert probabilities.sum() == pytest.approx(1.0)
    assert posterior.row_probabilities().sum() == pytest.approx(1.0)
    assert np.exp(posterior.grid_log_posterior).sum() == pytest.approx(1.0)
    rows, columns, log_joints = posterior.sample(4000, np.random.RandomState(1))
    index = {tuple(p): k for k, p in enumerate(posterior.row_partitions)}
    frequencies = np.bincount([index[tuple(r)] for r in rows], minlength=15) / 4000
    assert np.abs(frequencies - posterior.row_probabilities()).max() < 0.03
    together = (rows[:, :, None] == rows[:, None, :]).mean(axis=0)
    assert np.abs(together - posterior.row_pairwise_marginals()).max() < 0.03
    a, b = np.unravel_index(np.argmax(posterior.log_joint), posterior.log_joint.shape)
    map_rows, map_columns = posterior.map_pair()
    assert np.array_equal(map_rows, posterior.row_partitions[a])
    assert np.array_equal(map_columns, posterior.column_partitions[b])
    assert log_joints.max() <= posterior.log_joint.max()


def test_too_many_pairs_raise():
    X = np.zeros((9, 8))
    assert bell(9) * bell(8) > MAX_EXACT_PAIRS
    with pytest.raises(ValueError, match="partition pairs"):
        ExactBiclusterPosterior(BernoulliCells().fit(X), CRP(1.0), CRP(1.0)).fit(X)
