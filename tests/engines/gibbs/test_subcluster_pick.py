"""The label pass's draw from log weights: skipping ``exp`` far below the largest weight
changes no bit (the weights and the index drawn are those of ``exp`` on every entry)."""

import math

import numpy as np

from sklearn_trellis.engines.gibbs._subcluster_kernels import EXP_UNDERFLOW, _pick


def _pick_every_exp(logw, u):
    """The draw with ``exp`` on every entry (the kernel before the skip)."""
    largest = max(logw)
    weights = [math.exp(v - largest) for v in logw]
    target = u * sum(weights)
    cumulative = 0.0
    for a, w in enumerate(weights):
        cumulative += w
        if cumulative > target:
            return a, weights
    return max(a for a, w in enumerate(weights) if w > 0), weights


def test_exp_is_zero_below_the_threshold():
    assert math.exp(EXP_UNDERFLOW) == 0.0
    assert np.exp(EXP_UNDERFLOW) == 0.0


def test_pick_matches_exp_on_every_entry_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        # separated clusters: most weights thousands of nats below the best, a few near it
        # and some right at the threshold
        logw = -rng.exponential(3000.0, n)
        logw[rng.random(n) < 0.3] = -rng.exponential(2.0, 1)[0]
        logw[rng.random(n) < 0.1] = EXP_UNDERFLOW + rng.normal(0.0, 60.0)
        logw[rng.random(n) < 0.05] = -np.inf
        logw[0] = max(logw[0], -5.0)
        u = rng.random()
        expected, weights = _pick_every_exp(list(logw), u)
        work = logw.copy()
        assert _pick(work, n, u) == expected
        np.testing.assert_array_equal(work, np.array(weights))
