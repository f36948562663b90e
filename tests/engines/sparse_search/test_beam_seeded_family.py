"""Figure 7 of Greenberg et al. (2021) on a few 9-leaf Ginkgo jets: the MAP over the
family of more and more beam-search seed trees climbs from beam search to the exact MAP.

The family MAP comes from a pure-Python test oracle over bitmasks
(``oracles.family_hierarchy_map``) and from the engine,
:class:`~sklearn_trellis.engines.SparseHierarchicalTrellis`; the two must agree.
"""

import numpy as np
import pytest

from oracles import family_hierarchy_map, ginkgo_energy
from sklearn_trellis.datasets import load_ginkgo_jets
from sklearn_trellis.engines import ExactHierarchicalTrellis, SparseHierarchicalTrellis
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.exact.hierarchical import double_factorial_trees
from sklearn_trellis.engines.map.search import beam_search_tree, greedy_tree
from sklearn_trellis._core.trees import permute_leaves
from sklearn_trellis.engines.sparse.seeds import beam_seed_trees


def nested(children):
    nodes = list(range(len(children) + 1))
    for a, b in children:
        nodes.append((nodes[a], nodes[b]))
    return nodes[-1]


def nine_leaf_jets():
    return load_ginkgo_jets(n_leaves=9).jets[:3]


@pytest.mark.parametrize("jet_index", range(3))
def test_beam_seeded_family_climbs_to_the_exact_map(jet_index):
    jet = nine_leaf_jets()[jet_index]
    model = ginkgo_energy(jet).fit(np.array(jet["leaves"]))
    n = model.n_items_
    inputs = model.kernel_inputs()
    exact = ExactHierarchicalTrellis(*inputs).fit()
    _, beam = beam_search_tree(*inputs)
    _, greedy = greedy_tree(*inputs)
    split = exact.split_log_potential

    # the oracle agrees with the exact engine on the full powerset
    powerset = ClusterFamily.powerset(n, max_items=9).masks()
    full_map, full_count = family_hierarchy_map(powerset, split)
    assert full_map == pytest.approx(exact.map_log_potential, abs=1e-9)
    assert full_count == exact.n_trees <= double_factorial_trees(n)

    trees, values = beam_seed_trees(model, 64)
    assert values[0] >= beam - 1e-9           # a wider beam than the paper's
    previous = -np.inf
    for k in (1, 2, 4, 16, 64):
        family = ClusterFamily.from_trees(trees[:k], n)
        value, n_trees = family_hierarchy_map(family.masks(), split)
        sparse = SparseHierarchicalTrellis.from_model(family, model).fit()
        assert sparse.map_log_potential == pytest.approx(value, abs=1e-9)
        assert sparse.n_trees == n_trees
        assert k <= n_trees <= double_factorial_trees(n)
        if k == 1:   # one seed tree realises only itself
            assert n_trees == 1 and value == pytest.approx(values[0], abs=1e-9)
        assert value >= values[:k].max() - 1e-9      # never worse than a seed
        assert value >= previous - 1e-9               # a larger family does no worse
        assert value <= exact.map_log_potential + 1e-9
        previous = value
    assert exact.map_log_potential >= beam - 1e-9 and exact.map_log_potential >= greedy - 1e-9


def test_seeds_prebuilt_on_other_jets_never_exceed_the_exact_map():
    """The paper's setting: beam trees of other jets, leaves matched by momentum rank."""
    jets = nine_leaf_jets()
    models = [ginkgo_energy(j).fit(
        np.array(j["leaves"])) for j in jets]
    order = [np.argsort(np.linalg.norm(np.array(j["leaves"])[:, 1:], axis=1)) for j in jets]
    target = models[0]
    exact = ExactHierarchicalTrellis(*target.kernel_inputs()).fit()
    laid = []
    for model, leaves in zip(models[1:], order[1:]):
        trees, _ = beam_seed_trees(model, 16)
        laid += [permute_leaves(permute_leaves(t, np.argsort(leaves)), order[0])
                 for t in trees]
    values = [target.log_potential(nested(tree)) for tree in laid]
    previous = -np.inf
    for k in (1, 4, 16, len(laid)):
        family = ClusterFamily.from_trees(laid[:k], 9)
        value, _ = family_hierarchy_map(family.masks(), exact.split_log_potential)
        assert value >= max(values[:k]) - 1e-9 and value >= previous - 1e-9
        assert value <= exact.map_log_potential + 1e-9
        previous = value
