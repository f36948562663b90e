"""make_gaussian_pairs draws from the Gaussian pair model at the parameters it is given."""

import numpy as np
import pytest

from sklearn_trellis.datasets import make_gaussian_pairs


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
