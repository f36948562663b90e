"""make_gaussian_pairs draws from the Gaussian pair model at the parameters it is given."""

import itertools

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import chisquare

from sklearn_trellis.datasets import make_gaussian_pairs
from sklearn_trellis.datasets._gaussian_pairs import (uniform_partition_labels,
                                                      urn_count_probabilities)


def test_pair_moments_match_the_parameters():
    data = make_gaussian_pairs(300, beta=0.8, noise_variance=2.0, offset=0.5, alpha=3.0,
                               random_state=0)
    w, labels = data.affinity, data.target
    assert np.array_equal(w, w.T) and np.all(np.diag(w) == 0)
    rows, cols = np.triu_indices(300, 1)
    same = labels[rows] == labels[cols]
    values = w[rows, cols]
    # mu_same = c + beta s2 = 2.1, mu_diff = c - beta s2 = -1.1; thousands of pairs each
    assert values[same].mean() == pytest.approx(2.1, abs=0.1)
    assert values[~same].mean() == pytest.approx(-1.1, abs=0.05)
    assert values[~same].var() == pytest.approx(2.0, rel=0.05)
    first = np.unique(labels, return_index=True)[1]
    assert np.array_equal(labels[np.sort(first)], np.arange(labels.max() + 1))


def test_partition_is_the_chinese_restaurant_process():
    alpha, n = 1.5, 10
    counts = [make_gaussian_pairs(n, alpha=alpha, random_state=seed).target.max() + 1
              for seed in range(2000)]
    expected = sum(alpha / (alpha + i) for i in range(n))   # Ewens E[K] = 3.12
    assert np.mean(counts) == pytest.approx(expected, abs=0.1)   # 4 standard errors


def test_random_state_and_validation():
    a = make_gaussian_pairs(6, random_state=4)
    b = make_gaussian_pairs(6, random_state=4)
    assert np.array_equal(a.affinity, b.affinity) and np.array_equal(a.target, b.target)
    assert (a.beta, a.noise_variance, a.offset, a.alpha) == (0.5, 1.0, 0.0, 1.5)
    for kwargs, name in [(dict(beta=-1), "beta"), (dict(noise_variance=0.0), "noise_variance"),
                         (dict(alpha=0.0), "alpha"), (dict(offset=np.nan), "offset"),
                         (dict(n_samples=0), "n_samples")]:
        with pytest.raises(ValueError, match=name):
            make_gaussian_pairs(**{"n_samples": 5, **kwargs})


def bell_numbers(n_max):
    """Bell(0..n_max) in exact integers: the first entries of the Bell triangle's rows."""
    bells, row = [], [1]
    for _ in range(n_max + 1):
        bells.append(row[0])
        next_row = [row[-1]]
        for value in row:
            next_row.append(next_row[-1] + value)
        row = next_row
    return bells


def all_partitions(n):
    """Every partition of n items as labels in order of first appearance (restricted
    growth strings): Bell(n) of them."""
    found = [()]
    for _ in range(n):
        found = [p + (k,) for p in found for k in range(max(p, default=-1) + 2)]
    return found


def test_enumeration_oracle_counts_bell_numbers():
    assert [len(all_partitions(n)) for n in range(1, 8)] == bell_numbers(7)[1:]
    assert bell_numbers(12)[12] == 4213597


@pytest.mark.parametrize("n", [1, 2, 3, 6, 12, 25])
def test_stam_urn_counts_give_every_partition_probability_one_over_bell(n):
    # A partition with b blocks comes from k! / (k - b)! of the k**n throws into k urns,
    # so P(partition) = sum_k P(k urns) k! / ((k - b)! k**n), the same 1 / Bell(n) for
    # every b: the algorithm's own (truncated) urn probabilities against exact Bell numbers.
    probabilities = urn_count_probabilities(n)
    k = np.arange(1, probabilities.size + 1, dtype=np.float64)
    bell = bell_numbers(n)[n]
    for blocks in range(1, n + 1):
        keep = k >= blocks
        ways = np.exp(gammaln(k[keep] + 1) - gammaln(k[keep] - blocks + 1) - n * np.log(k[keep]))
        assert float(probabilities[keep] @ ways) * bell == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("n, n_draws", [(4, 1500), (6, 8000)])
def test_uniform_partitions_against_enumeration(n, n_draws):
    # Chi-square against the uniform distribution over all Bell(n) partitions (15 and 203
    # cells, about 100 and 40 draws each); fixed seed, so the test is deterministic.
    index = {p: i for i, p in enumerate(all_partitions(n))}
    rng = np.random.RandomState(0)
    counts = np.zeros(len(index))
    for _ in range(n_draws):
        counts[index[tuple(uniform_partition_labels(n, rng))]] += 1
    assert counts.min() > 0
    assert chisquare(counts).pvalue > 1e-3


def test_uniform_prior_through_make_gaussian_pairs():
    # E[K] of the uniform prior over partitions of 5 items: sum_b b S(5, b) / Bell(5) = 151 / 52
    counts = [make_gaussian_pairs(5, alpha=None, random_state=seed).target.max() + 1
              for seed in range(1500)]
    assert np.mean(counts) == pytest.approx(151 / 52, abs=0.08)   # 4 standard errors (0.02)
    data = make_gaussian_pairs(7, alpha=None, random_state=1)
    assert data.alpha is None and data.affinity.shape == (7, 7)
    first = np.unique(data.target, return_index=True)[1]
    assert np.array_equal(data.target[np.sort(first)], np.arange(data.target.max() + 1))


def test_crp_draws_unchanged():
    # alpha given: the same draws as before the uniform prior was added (fixed-seed values)
    data = make_gaussian_pairs(12, alpha=1.5, random_state=3)
    assert data.target.tolist() == [0, 1, 2, 1, 1, 3, 4, 1, 1, 0, 1, 0]
    assert float(data.affinity[0, 1]) == -1.1013124761891295
