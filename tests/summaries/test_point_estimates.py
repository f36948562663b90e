"""Point estimates (Binder, VI) against exhaustive minimisation; metrics against scikit-learn."""

import math

import numpy as np
import pytest
from oracles import expected_losses_by_enumeration
from sklearn.metrics import (adjusted_rand_score, mutual_info_score,
                             normalized_mutual_info_score, rand_score)
from oracles import random_partition_samples

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.summaries import (binder_loss, pairwise_cooccurrence, point_estimate,
                                       purity_score, variation_of_information)
from sklearn_trellis.summaries.metrics import pair_counts
from sklearn_trellis.summaries.point_estimates import expected_loss


def _entropy(labels):
    _, counts = np.unique(labels, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def _brute_binder(a, b):
    same_a = a[:, None] == a[None, :]
    same_b = b[:, None] == b[None, :]
    return np.triu(same_a != same_b, 1).sum()


def _brute_vi(a, b):
    return _entropy(a) + _entropy(b) - 2.0 * mutual_info_score(a, b)


def _posterior_samples(rng, n, n_samples):
    model = ExactCorrelationClustering(beta=float(rng.uniform(0.3, 1.5)), random_state=0)
    model.fit(rng.normal(size=(n, 2)))
    return model.sample(n_samples, random_state=int(rng.integers(1 << 31)))


@pytest.mark.parametrize("loss", ["binder", "vi"])
def test_point_estimate_equals_exhaustive_minimum(loss):
    rng = np.random.default_rng(0)
    for trial in range(3):
        n = [6, 7, 8][trial]
        samples = _posterior_samples(rng, n, 25)
        partitions, losses = expected_losses_by_enumeration(samples, loss)
        labels, value = point_estimate(samples, loss=loss, random_state=trial, return_loss=True)
        assert value == pytest.approx(losses.min(), abs=1e-9)
        index = [tuple(p) for p in partitions].index(tuple(labels))
        assert losses[index] == pytest.approx(losses.min(), abs=1e-9)
        # never worse than any sampled partition
        lookup = {tuple(p): v for p, v in zip(partitions, losses)}
        assert all(value <= lookup[tuple(s)] + 1e-9 for s in samples)
        assert expected_loss(samples, labels, loss) == pytest.approx(value, abs=1e-12)


def test_point_estimate_on_noisy_samples_and_pairwise_input():
    rng = np.random.default_rng(1)
    for trial in range(3):
        samples = random_partition_samples(rng, 15, 7, noise=0.35)
        partitions, losses = expected_losses_by_enumeration(samples, "binder")
        labels = point_estimate(samples, random_state=trial)
        from_pairwise, value = point_estimate(pairwise_cooccurrence(samples),
                                              random_state=trial, return_loss=True)
        assert value == pytest.approx(losses.min(), abs=1e-9)
        assert expected_loss(samples, labels) == pytest.approx(losses.min(), abs=1e-9)
        assert expected_loss(samples, from_pairwise) == pytest.approx(losses.min(), abs=1e-9)


def test_point_estimate_is_reproducible_and_canonical():
    rng = np.random.default_rng(2)
    samples = random_partition_samples(rng, 40, 30, noise=0.2)
    first = point_estimate(samples, "vi", random_state=3)
    np.testing.assert_array_equal(first, point_estimate(samples, "vi", random_state=3))
    _, first_seen = np.unique(first, return_index=True)
    assert np.all(np.diff(first_seen) > 0) and first[0] == 0


def test_point_estimate_errors():
    samples = np.array([[0, 0, 1], [0, 1, 1]])
    with pytest.raises(ValueError, match="needs the samples"):
        point_estimate(pairwise_cooccurrence(samples), loss="vi")
    with pytest.raises(ValueError, match="loss must be one of"):
        point_estimate(samples, loss="rand")
    with pytest.raises(ValueError, match="partitions only"):
        point_estimate([[[0, 1], [1, 2]]])
    with pytest.raises(ValueError, match="symmetric"):
        point_estimate(np.array([[1.0, 0.2], [0.3, 1.0]]))


def test_metrics_agree_with_scikit_learn():
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(2, 25))
        a = rng.integers(0, int(rng.integers(1, 6)), n)
        b = rng.integers(0, int(rng.integers(1, 6)), n)
        n_pairs = n * (n - 1) / 2
        assert binder_loss(a, b) == _brute_binder(a, b)
        assert binder_loss(a, b) == pytest.approx((1 - rand_score(a, b)) * n_pairs)
        assert binder_loss(a, b, normalize=True) == pytest.approx(1 - rand_score(a, b))
        vi = variation_of_information(a, b)
        assert vi == pytest.approx(_brute_vi(a, b), abs=1e-12)
        h = _entropy(a) + _entropy(b)
        if h > 0:
            assert vi == pytest.approx(h * (1 - normalized_mutual_info_score(a, b)), abs=1e-12)
        # adjusted Rand from the pair counts (Hubert & Arabie) equals scikit-learn's
        both, only_a, only_b, total = pair_counts(a, b)
        in_a, in_b = both + only_a, both + only_b
        expected = in_a * in_b / total
        maximum = (in_a + in_b) / 2
        ari = 1.0 if maximum == expected else (both - expected) / (maximum - expected)
        assert ari == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
    assert variation_of_information([0, 1, 2, 3], [0, 0, 0, 0]) == pytest.approx(math.log(4))
    assert variation_of_information([0, 0, 1], [5, 5, 7]) == 0.0


def test_purity_hand_computed():
    # Murphy's definition: clusters {0,1,2,3} (classes A A A B) and {4,5} (B C): (3 + 1) / 6
    classes = np.array([0, 0, 0, 1, 1, 2])
    clusters = np.array([0, 0, 0, 0, 1, 1])
    assert purity_score(classes, clusters) == pytest.approx(4 / 6)
    assert purity_score(classes, np.arange(6)) == 1.0
    assert purity_score(classes, np.zeros(6, int)) == pytest.approx(3 / 6)
    with pytest.raises(ValueError, match="different lengths"):
        purity_score([0, 1], [0, 1, 2])


# -- exact expected losses from cluster marginals ----------------------------------------

def _weighted_partitions(rng, n):
    """Every partition of ``n`` items with random weights, and its cluster marginals."""
    from oracles import set_partitions
    from sklearn_trellis.summaries.point_estimates import ClusterMarginals
    partitions = set_partitions(n)
    weights = rng.dirichlet(np.full(len(partitions), 0.2))
    marginals = np.zeros(1 << n)
    for w, z in zip(weights, partitions):
        for k in range(z.max() + 1):
            marginals[int(np.sum((z == k) << np.arange(n)))] += w
    return partitions, weights, ClusterMarginals(marginals)


@pytest.mark.parametrize("loss", ["vi", "binder"])
def test_cluster_marginals_give_the_exact_expected_loss(loss):
    """Binder and VI from ``P(B is a cluster)`` are the weighted mean over every partition."""
    from oracles import partition_losses
    rng = np.random.RandomState(0)
    partitions, weights, marginals = _weighted_partitions(rng, 6)
    candidates = partitions[rng.choice(len(partitions), 8, replace=False)]
    expected = partition_losses(candidates, partitions, loss) @ weights
    got = [expected_loss(marginals, c, loss) for c in candidates]
    assert np.allclose(got, expected, rtol=0, atol=1e-10)
    if loss == "vi":   # a VI with the split weight a = 0.5
        expected = partition_losses(candidates, partitions, loss, a=0.5) @ weights
        got = [expected_loss(marginals, c, loss, a=0.5) for c in candidates]
        assert np.allclose(got, expected, rtol=0, atol=1e-10)


def test_cluster_marginals_search_finds_the_minimiser_without_the_exhaustive_check(monkeypatch):
    """The search itself (sequential allocation, sweetening, zealous updates on the weighted
    pseudo-samples), with the final exhaustive check switched off."""
    from oracles import partition_losses
    from sklearn_trellis.summaries import point_estimates
    monkeypatch.setattr(point_estimates, "_EXHAUSTIVE_WORK", 0)
    rng = np.random.RandomState(1)
    partitions, weights, marginals = _weighted_partitions(rng, 6)
    losses = partition_losses(partitions, partitions, "vi") @ weights
    labels, value = point_estimate(marginals, loss="vi", random_state=0, return_loss=True)
    assert value == pytest.approx(losses.min(), abs=1e-10)
    assert value == pytest.approx(expected_loss(marginals, labels, "vi"), abs=1e-10)


def test_cluster_marginals_refuse_the_losses_that_are_not_cluster_sums():
    marginals = _weighted_partitions(np.random.RandomState(2), 4)[2]
    for loss in ("omari", "nvi", "nid"):
        with pytest.raises(ValueError, match="not a sum over the clusters"):
            point_estimate(marginals, loss=loss)
    with pytest.raises(ValueError, match="cluster marginals"):
        point_estimate(marginals, loss="vi", method="draws")
    from sklearn_trellis.summaries.point_estimates import ClusterMarginals
    with pytest.raises(ValueError, match="2\\*\\*n"):
        ClusterMarginals(np.ones(6) / 6)


def test_square_float_label_samples_are_told_how_to_pass_labels():
    # (n, n) floats are a pairwise matrix: label samples in floats met "must lie in
    # [0, 1]" with no word of why; the message now names the int sample set.
    samples = np.array([[0, 0, 1], [0, 1, 1], [2, 2, 2]], dtype=float)
    with pytest.raises(ValueError, match=r"\[0, 1\]. A float \(n, n\) array is read as a "
                                         r"pairwise matrix.*astype\(int\)"):
        point_estimate(samples)
    assert np.array_equal(point_estimate(samples.astype(int), random_state=0),
                          point_estimate(samples.astype(int), random_state=0))
