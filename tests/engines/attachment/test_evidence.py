"""A new item's evidence over the tree posterior against enumeration of all enlarged trees.

``log Z(train + x) - log Z(train)`` and ``P(C + {x} is a node)`` on the exact
trellis are sums over every binary tree of the ``N + 1`` items; on a sparse
trellis over every tree the family realises with ``x`` inserted above one of
its nodes. Both are enumerated here, each tree's potential from the enlarged
model's ``log_potential`` (the fitted constants held fixed).
"""

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.metrics import pairwise_distances

from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines import ExactHierarchicalTrellis
from sklearn_trellis.engines.attachment import new_item_evidence
from sklearn_trellis.engines.sparse.sparse_hierarchical import SparseHierarchicalTrellis
from sklearn_trellis.models import DasguptaEnergy, ExponentialTreeEnergy, GinkgoEnergy

from oracles import binary_trees, insertions, tree_clusters

N_ITEMS = 5


def _momenta(rng, m):
    p = rng.normal(0, 3, (m, 3))
    e = np.sqrt((p ** 2).sum(axis=1) + rng.uniform(20, 60, m))
    return np.column_stack([e, p])


def fitted(name, rng):
    """``(model, new rows as the model takes them, beta)``."""
    if name == "ginkgo":     # a root term: the enlarged whole set is root + x
        return GinkgoEnergy(t_cut=4.0).fit(_momenta(rng, N_ITEMS)), _momenta(rng, 2), 1.0
    X = rng.normal(size=(N_ITEMS + 2, 2))
    d = pairwise_distances(X)
    if name == "dasgupta":
        return DasguptaEnergy(scale="median").fit(d[:N_ITEMS, :N_ITEMS]), d[N_ITEMS:, :N_ITEMS], 0.7
    return (ExponentialTreeEnergy(scale=0.8).fit(d[:N_ITEMS, :N_ITEMS]), d[N_ITEMS:, :N_ITEMS],
            1.3)


def brute_force(model, row, beta, trees, clusters):
    """``log sum phi(enlarged) - log sum phi(tree)`` and ``P(C + x node)`` by enumeration."""
    enlarged_model = model.with_new_item(row)
    n = model.n_items_
    base = [model.log_potential(t, beta) for t in trees]
    enlarged = [t for tree in trees for t in insertions(tree, n)]
    log_phi = np.array([enlarged_model.log_potential(t, beta) for t in enlarged])
    log_y = logsumexp(log_phi)
    probs = np.exp(log_phi - log_y)
    nodes = [tree_clusters(t) for t in enlarged]
    inside = [sum(p for p, c in zip(probs, nodes) if tuple(sorted([*cluster, n])) in c)
              for cluster in clusters]
    return log_y - logsumexp(base), np.array(inside)


@pytest.mark.parametrize("name", ["exponential_tree", "dasgupta", "ginkgo"])
def test_exact_trellis_sums_every_tree_of_n_plus_one_items(name):
    rng = np.random.default_rng(0)
    model, new, beta = fitted(name, rng)
    trellis = ExactHierarchicalTrellis(*model.kernel_inputs(beta)).fit()
    clusters = [[0, 1], [2], [0, 1, 2, 3, 4], [1, 3, 4]]
    log_ratio, log_inside = new_item_evidence(trellis, model, new, beta, clusters)
    trees = binary_trees(range(N_ITEMS))
    assert len([t for tree in trees for t in insertions(tree, N_ITEMS)]) == 945
    for j, row in enumerate(new):
        ratio, inside = brute_force(model, row, beta, trees, clusters)
        assert log_ratio[j] == pytest.approx(ratio, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(np.exp(log_inside[j]), inside, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["exponential_tree", "dasgupta", "ginkgo"])
def test_sparse_trellis_sums_the_family_trees_enlarged(name):
    rng = np.random.default_rng(1)
    model, new, beta = fitted(name, rng)
    seeds = [np.array([[0, 1], [2, 5], [3, 4], [6, 7]]),
             np.array([[0, 2], [1, 5], [3, 6], [4, 7]]),
             np.array([[3, 4], [2, 5], [1, 6], [0, 7]])]
    family = ClusterFamily.from_trees(seeds, N_ITEMS)
    trellis = SparseHierarchicalTrellis(family, *model.family_kernel_inputs(family, beta)).fit()
    members = {tuple(family.members(v).tolist()) for v in range(family.n_vertices)}
    trees = [t for t in binary_trees(range(N_ITEMS)) if tree_clusters(t) <= members]
    assert 3 <= len(trees) < 105
    assert trellis.n_trees == len(trees)
    clusters = [[0, 1], [3, 4], [0, 1, 2], [0, 2], [1, 3]]     # the last is not in the family
    log_ratio, log_inside = new_item_evidence(trellis, model, new, beta, clusters)
    assert np.all(log_inside[:, -1] == -np.inf)
    for j, row in enumerate(new):
        ratio, inside = brute_force(model, row, beta, trees, clusters)
        assert log_ratio[j] == pytest.approx(ratio, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(np.exp(log_inside[j]), inside, rtol=1e-9, atol=1e-12)
