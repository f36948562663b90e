"""The label pass's draw from log weights: skipping ``exp`` far below the largest weight, or
far below a weight already summed, changes no bit (the index drawn is that of ``exp`` on
every entry, and so is every weight it computes)."""

import math

import numpy as np

from sklearn_trellis.engines.gibbs._subcluster_kernels import EXP_UNDERFLOW, NEGLIGIBLE_NATS, _pick


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


def check_pick(logw, u):
    """``_pick`` draws the index of ``exp`` on every entry; the weights it computed are
    those, and the entries it left out are log weights whose ``exp`` could not change
    the sum they were left out of."""
    n = len(logw)
    expected, weights = _pick_every_exp(list(logw), u)
    work = np.array(logw, dtype=np.float64)
    assert _pick(work, n, u) == expected, (list(logw), u)
    computed = work >= 0
    np.testing.assert_array_equal(work[computed], np.array(weights)[computed])
    for a in np.flatnonzero(~computed):
        assert weights[a] < 2.0**-54 * max(weights[:a])
        assert work[a] == logw[a] - max(logw)


def test_negligible_weights_are_below_half_a_last_bit():
    assert math.exp(-NEGLIGIBLE_NATS) * (1 + 2.0**-52) < 2.0**-54 * (1 - 2.0**-52)


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
        check_pick(logw, rng.random())
    for _ in range(600):
        # close clusters (every exp computed before the skip), weights on both sides of the
        # negligible distance, in the subnormal range of exp, and special values
        n = int(rng.integers(1, 25))
        kind = rng.integers(4)
        if kind == 0:
            logw = rng.normal(0.0, 30.0, n)
        elif kind == 1:
            logw = -NEGLIGIBLE_NATS * rng.integers(0, 3, n) + rng.normal(0.0, 1.0, n)
        elif kind == 2:
            logw = -700.0 - 110.0 * rng.random(n)
            logw[0] = -rng.exponential(20.0)
        else:
            logw = rng.choice([0.0, -1.0, -37.5, -NEGLIGIBLE_NATS, -38.5, -745.0, -745.2,
                               -np.inf], n)
            logw[rng.integers(n)] = 0.0
        u = rng.choice([0.0, 2.0**-53, 0.5, 1 - 2.0**-53, rng.random()])
        check_pick(logw + rng.normal(0.0, 100.0), u)


def test_pick_at_the_edge_of_a_last_bit():
    """A weight just above ``2**-53`` changes a total of 1.0, and with it the draw of
    ``u = 1 - 2**-53``: the skip must compute it (a skip from 36 nats fails here)."""
    for first in (0.0, -0.5, -3.0):
        for delta in np.linspace(-NEGLIGIBLE_NATS - 2.0, -30.0, 161):
            for u in (0.0, 2.0**-53, 0.5, 1 - 2.0**-53, 1 - 2.0**-52):
                check_pick([first, 0.0, delta], u)
                check_pick([0.0, delta, first], u)
                check_pick([delta, 0.0, delta - 1.0, delta + 1.0], u)
