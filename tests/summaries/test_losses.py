"""Losses against their definitions; expected losses against brute-force averages."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import pairwise_losses, partition_losses, random_partition_samples
from sklearn.metrics import adjusted_rand_score, mutual_info_score, rand_score

from sklearn_trellis.summaries import (adjusted_rand_loss, binder_loss, expected_loss,
                                       normalized_information_distance,
                                       normalized_variation_of_information,
                                       pairwise_cooccurrence, variation_of_information)

METRICS = {
    "binder": binder_loss,
    "vi": variation_of_information,
    "omari": lambda t, e, **kw: adjusted_rand_loss(t, e),
    "nvi": lambda t, e, **kw: normalized_variation_of_information(t, e),
    "nid": lambda t, e, **kw: normalized_information_distance(t, e),
}


def _entropy(labels):
    _, counts = np.unique(labels, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def test_hand_computed_losses():
    truth, estimate = [0, 0, 1, 1], [0, 0, 0, 1]
    # split (2, 3); joined (0, 2), (1, 2)
    assert binder_loss(truth, estimate) == 3.0
    assert binder_loss(truth, estimate, a=2.0, b=0.5) == 2.0 + 1.0
    assert binder_loss(truth, estimate, a=3.0, b=0.0, normalize=True) == pytest.approx(3 / 6)
    # one cluster against two halves: H(truth) = log 2, H(est) = 0, H(J) = log 2
    assert variation_of_information(truth, [0] * 4) == pytest.approx(math.log(2))
    assert variation_of_information(truth, [0] * 4, a=0.5) == pytest.approx(1.5 * math.log(2))
    assert variation_of_information(truth, [0, 1, 2, 3], a=0.5) == pytest.approx(
        0.5 * math.log(2))  # splitting is weighted by a
    assert normalized_variation_of_information(truth, [0] * 4) == pytest.approx(1.0)
    assert normalized_information_distance(truth, [0] * 4) == pytest.approx(1.0)
    h3, h2 = math.log(3), (-(1 / 3) * math.log(1 / 3) - (2 / 3) * math.log(2 / 3))
    assert normalized_information_distance([0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 1, 1]) == \
        pytest.approx(1 - h2 / h3)  # I = H(coarse) = h2, max entropy log 3
    assert normalized_variation_of_information([0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 1, 1]) == \
        pytest.approx(1 - h2 / h3)  # H(J) = log 3
    assert adjusted_rand_loss(truth, truth) == 0.0
    assert adjusted_rand_loss([0, 0, 0], [0, 0, 0]) == 0.0
    assert adjusted_rand_loss([0, 1, 2], [0, 1, 2]) == 0.0
    assert adjusted_rand_loss(truth, estimate) == pytest.approx(
        1 - adjusted_rand_score(truth, estimate))
    with pytest.raises(ValueError, match="a must"):
        binder_loss(truth, estimate, a=-1.0)
    with pytest.raises(ValueError, match="a must lie"):
        variation_of_information(truth, estimate, a=2.5)


labelings = st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 4), min_size=n, max_size=n),
    st.lists(st.integers(0, 4), min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(labelings, st.floats(0.0, 2.0), st.floats(0.0, 3.0))
def test_losses_equal_their_definitions(pair, a, b):
    truth, estimate = (np.array(x) for x in pair)
    n = truth.size
    together_t = truth[:, None] == truth[None, :]
    together_e = estimate[:, None] == estimate[None, :]
    upper = np.triu(np.ones((n, n), bool), 1)
    split = np.sum(upper & together_t & ~together_e)
    joined = np.sum(upper & ~together_t & together_e)
    assert binder_loss(truth, estimate, a=a, b=b) == pytest.approx(a * split + b * joined)
    assert binder_loss(truth, estimate) == pytest.approx(
        (1 - rand_score(truth, estimate)) * n * (n - 1) / 2)
    h_t, h_e = _entropy(truth), _entropy(estimate)
    info = mutual_info_score(truth, estimate)
    joint = h_t + h_e - info
    # generalised VI = a H(est | truth) + (2 - a) H(truth | est)
    assert variation_of_information(truth, estimate, a=a) == pytest.approx(
        a * (joint - h_t) + (2 - a) * (joint - h_e), abs=1e-12)
    assert normalized_variation_of_information(truth, estimate) == pytest.approx(
        1 - info / joint if joint > 1e-12 else 0.0, abs=1e-9)
    top = max(h_t, h_e)
    assert normalized_information_distance(truth, estimate) == pytest.approx(
        1 - info / top if top > 1e-12 else 0.0, abs=1e-9)
    assert adjusted_rand_loss(truth, estimate) == pytest.approx(
        1 - adjusted_rand_score(truth, estimate), abs=1e-12)
    for loss in METRICS:  # the test oracle agrees with the metrics
        oracle = partition_losses(estimate[None], truth[None], loss, a=a, b=b)[0, 0]
        kwargs = {"a": a, "b": b} if loss == "binder" else {"a": a} if loss == "vi" else {}
        assert oracle == pytest.approx(METRICS[loss](truth, estimate, **kwargs), abs=1e-9)


@pytest.mark.parametrize("loss", sorted(METRICS))
def test_expected_losses_from_samples_equal_brute_force_averages(loss):
    rng = np.random.default_rng(4)
    for trial in range(4):
        n = int(rng.integers(3, 14))
        samples = random_partition_samples(rng, int(rng.integers(1, 30)), n, noise=0.4)
        a, b = float(rng.uniform(0, 2)), float(rng.uniform(0, 2))
        kwargs = {"a": a, "b": b} if loss == "binder" else {"a": a} if loss == "vi" else {}
        for _ in range(3):
            labels = rng.integers(0, 4, n)
            brute = np.mean([METRICS[loss](s, labels, **kwargs) for s in samples])
            assert expected_loss(samples, labels, loss, **kwargs) == pytest.approx(
                brute, abs=1e-10)
            # block-list input gives the same value
            blocks = [[np.flatnonzero(s == v).tolist() for v in np.unique(s)] for s in samples]
            assert expected_loss(blocks, labels, loss, **kwargs) == pytest.approx(
                brute, abs=1e-10)


@pytest.mark.parametrize("loss", ["binder", "omari_approx", "vi_lb"])
def test_pairwise_losses_equal_their_formulas(loss):
    rng = np.random.default_rng(5)
    for trial in range(4):
        n = int(rng.integers(3, 12))
        samples = random_partition_samples(rng, 25, n, noise=0.4)
        pairwise = pairwise_cooccurrence(samples)
        a, b = float(rng.uniform(0, 2)), float(rng.uniform(0, 2))
        kwargs = {"a": a, "b": b} if loss == "binder" else {}
        for _ in range(3):
            labels = rng.integers(0, 4, n)
            formula = pairwise_losses(labels[None], pairwise, loss, a=a, b=b)[0]
            assert expected_loss(pairwise, labels, loss, **kwargs) == pytest.approx(
                formula, abs=1e-10)
            assert expected_loss(samples, labels, loss, **kwargs) == pytest.approx(
                formula, abs=1e-10)
    if loss == "binder":  # Binder's expected loss is linear in P: the sample average
        labels = rng.integers(0, 3, samples.shape[1])
        brute = np.mean([binder_loss(s, labels, a=0.3, b=1.7) for s in samples])
        assert expected_loss(pairwise_cooccurrence(samples), labels, a=0.3, b=1.7) == \
            pytest.approx(brute, abs=1e-10)


def test_vi_lower_bound_is_below_the_expected_vi():
    rng = np.random.default_rng(6)
    for _ in range(10):
        samples = random_partition_samples(rng, 30, 10, noise=0.5)
        labels = rng.integers(0, 3, 10)
        assert expected_loss(samples, labels, "VI.lb") <= expected_loss(samples, labels,
                                                                         "vi") + 1e-12


def test_loss_names_and_errors():
    samples = np.array([[0, 0, 1], [0, 1, 1]])
    assert expected_loss(samples, [0, 0, 1], "omARI") == expected_loss(samples, [0, 0, 1],
                                                                        "omari")
    assert expected_loss(samples, [0, 0, 1], "omARI.approx") == expected_loss(
        samples, [0, 0, 1], "omari_approx")
    with pytest.raises(ValueError, match="loss must be one of"):
        expected_loss(samples, [0, 0, 1], "rand")
    with pytest.raises(ValueError, match="needs the samples"):
        expected_loss(pairwise_cooccurrence(samples), [0, 0, 1], "nid")
    with pytest.raises(ValueError, match="entries"):
        expected_loss(samples, [0, 0], "vi")


def test_losses_read_any_labels_as_scikit_learn_does():
    # Strings, objects, bools and fractional floats name clusters (as in
    # adjusted_rand_score); the values equal those of the same partition in ints.
    from sklearn.metrics import adjusted_rand_score

    from sklearn_trellis.summaries import (adjusted_rand_loss, binder_loss, expected_loss,
                                           normalized_information_distance,
                                           normalized_variation_of_information, purity_score,
                                           variation_of_information)
    ints_a, ints_b = [0, 0, 1, 1, 2, 2, 2, 0], [1, 1, 1, 0, 0, 2, 2, 2]
    forms_a = [list("aabbccca"), np.array(ints_a) * 0.5 + 0.25,
               np.array([0, 0, "x", "x", 2.5, 2.5, 2.5, 0], dtype=object)]
    forms_b = [["u", "u", "u", "v", "v", "w", "w", "w"], np.array(ints_b) - 0.5,
               np.array(ints_b)]
    for loss in (binder_loss, variation_of_information, normalized_variation_of_information,
                 normalized_information_distance, adjusted_rand_loss, purity_score):
        expected = loss(ints_a, ints_b)
        for a, b in zip(forms_a, forms_b):
            assert loss(a, b) == expected, loss.__name__
    assert adjusted_rand_loss(forms_a[0], forms_b[0]) == pytest.approx(
        1 - adjusted_rand_score(ints_a, ints_b))
    samples = np.array([ints_b, ints_a])
    assert expected_loss(samples, list("aabbccca")) == expected_loss(samples, ints_a)
    with pytest.raises(ValueError, match="labels_pred hold NaN"):
        purity_score([0, 1], [0.0, np.nan])
