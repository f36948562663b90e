"""TrellisHierarchical at extreme scales (issue 18, items 5 and 8, hierarchical half).

Overflow of ``beta * psi`` is refused with a clear error (not "zero potential",
not a silent inf); leaves and the root have marginal exactly 1; and cluster
marginals meet the documented bound ``1e-12 + N * eps * max |log phi|``
against enumeration of every tree.
"""

import math

import numpy as np
import pytest

from oracles import binary_trees, cluster_node_probabilities, tree_sibling_pairs
from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.models import CallableEnergy, DasguptaEnergy

EPS = np.finfo(np.float64).eps
METHODS = [dict(method="exact", layered=False), dict(method="exact", layered=True),
           dict(method="sparse")]


def fit(X, method, layered=None, **kwargs):
    model = TrellisHierarchical(method=method, linkage="average", **kwargs)
    if layered is not None:  # the layered (parallel, separable) pass of the exact engine
        import sklearn_trellis.engines.exact.hierarchical as hierarchical
        serial_below = hierarchical.SERIAL_BELOW
        hierarchical.SERIAL_BELOW = 0 if layered else 64
        try:
            return model.fit(X)
        finally:
            hierarchical.SERIAL_BELOW = serial_below
    return model.fit(X)


def similarities(n, scale, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.random((n, n))
    w = (w + w.T) * scale
    np.fill_diagonal(w, 0.0)
    return w


@pytest.mark.parametrize("options", METHODS)
@pytest.mark.parametrize("case", ["dasgupta_beta", "precomputed", "callable_negative",
                                  "callable_positive"])
def test_overflow_of_scaled_potentials_is_refused(case, options):
    X = np.random.default_rng(1).random((7, 2))
    if case == "dasgupta_beta":
        args = dict(energy="dasgupta", beta=1e300)
    elif case == "precomputed":
        X = similarities(7, 1e306)
        args = dict(energy=DasguptaEnergy(similarity="precomputed"), metric="precomputed",
                    beta=100.0)
    elif case == "callable_negative":
        args = dict(energy=CallableEnergy(lambda X, left, right: -1e306), beta=100.0)
    else:
        args = dict(energy=CallableEnergy(lambda X, left, right: 1e306), beta=100.0)
    with pytest.raises(ValueError, match="overflow float64.*lower beta"):
        fit(X, **options, **args)


@pytest.mark.parametrize("options", METHODS)
def test_zero_potential_keeps_its_error(options):
    X = np.random.default_rng(1).random((7, 2))
    energy = CallableEnergy(lambda X, left, right: -np.inf)
    with pytest.raises(ValueError, match="zero potential|positive potential"):
        fit(X, **options, energy=energy, beta=100.0)


@pytest.mark.parametrize("options", METHODS)
@pytest.mark.parametrize("scale", [1e10, 1e11])
@pytest.mark.parametrize("seed", [0, 1])
def test_leaf_and_root_marginals_are_exactly_one(options, scale, seed):
    n = 7
    X = similarities(n, scale, seed)   # |log phi| ~ 1e13: rounding shows (0.996 for a leaf)
    model = fit(X, **options, energy=DasguptaEnergy(similarity="precomputed"),
                metric="precomputed", beta=3.0)
    for i in range(n):
        assert model.cluster_marginal([i]) == 1.0
        assert model.subtree_marginal(i) == 1.0
    assert model.cluster_marginal(list(range(n))) == 1.0
    assert model.children_.shape[0] == n - 1
    assert model.node_marginals_[-1] == 1.0    # the last row is the root
    assert np.all(model.node_marginals_ <= 1.0)


def exact_split_values(n, offset, seed):
    """A split table ``offset + O(1)`` and its enumeration with exact differences."""
    rng = np.random.default_rng(seed)
    table = {}
    trees = binary_trees(tuple(range(n)))
    for tree in trees:
        for left, right in tree_sibling_pairs(tree):
            if (left, right) not in table:
                table[left, right] = offset + 3.0 * rng.standard_normal()
    pairs = [tree_sibling_pairs(t) for t in trees]
    log_phi = [math.fsum(table[p] for p in ps) for ps in pairs]
    best = pairs[int(np.argmax(log_phi))]
    # fsum of the splits of t minus those of the MAP tree: the exact difference
    # of the float split values, rounded once (the enumeration's own error ~ eps).
    diffs = np.array([math.fsum([table[p] for p in ps] + [-table[p] for p in best])
                      for ps in pairs])
    probs = np.exp(diffs) / np.exp(diffs).sum()
    return table, trees, probs, max(abs(v) for v in log_phi)


@pytest.mark.parametrize("options", METHODS[:2])
@pytest.mark.parametrize("offset", [1e3, 1e8, 4e11])
def test_cluster_marginals_meet_the_documented_bound(offset, options):
    n = 6
    for seed in range(3):
        table, trees, probs, max_log_phi = exact_split_values(n, -offset, seed)
        energy = CallableEnergy(lambda X, left, right: table[tuple(left), tuple(right)])
        model = fit(np.zeros((n, 1)), **options, energy=energy)
        bound = 1e-12 + n * EPS * max_log_phi
        for cluster, p in cluster_node_probabilities(trees, probs).items():
            assert abs(model.cluster_marginal(list(cluster)) - p) <= bound, (cluster, p)


def test_predict_of_items_far_beyond_the_fitted_scale():
    # The new items' distances were computed in the fitted rows' units, where the
    # square of 1e160 overflows: predict said "distances contain NaN or infinite
    # values" of finite rows. In the larger of both units they are finite, and an
    # item 1e160 away is placed as one 1e100 away (its similarity to all is 0).
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(4, 2)), rng.normal(size=(4, 2)) + 6.0])
    model = TrellisHierarchical(random_state=0).fit(X)
    near = model.predict_proba(X[:2] + 1e100)
    for offset in (1e160, 1e300):
        np.testing.assert_array_equal(model.predict_proba(X[:2] + offset), near)
