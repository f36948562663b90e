"""A new energy plugs into every hierarchical engine without touching one.

``toy_energy.py`` is a complete energy module as a newcomer would write it;
registering it is one line (``ENERGIES["toy"] = ToyEnergy``). The engines
compile their kernels for its numba split function
(``sklearn_trellis._core.specialise``); these tests check their results against
enumeration of all binary trees, and that no engine module names an energy.
"""

import ast
import inspect
import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp

from oracles import (binary_trees, canonical_tree, cluster_node_probabilities,
                     hierarchy_summaries, tree_clusters, tree_log_potential)
from sklearn_trellis import TrellisHierarchical
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines import ExactHierarchicalTrellis, SparseHierarchicalTrellis
from sklearn_trellis.engines.map.search import beam_search_tree, beam_search_trees, greedy_tree
from sklearn_trellis.models import ENERGIES, CallableEnergy
from toy_energy import ToyEnergy, toy_split

import sklearn_trellis.engines as engines_package

BETA = 0.6


def toy_data(n, seed=0):
    """Positive weights in general position (a unique MAP tree), as one feature."""
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=(n, 1))


def toy_psi(X):
    """The toy's split log-potential on item tuples, written independently."""
    return lambda left, right: -(X[list(left), 0].sum() - X[list(right), 0].sum()) ** 2


def enumerate_toy(X, beta=BETA):
    trees = binary_trees(tuple(range(X.shape[0])))
    psi = toy_psi(X)
    log_phi = [beta * tree_log_potential(t, psi) for t in trees]
    return trees, hierarchy_summaries(trees, log_phi)


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setitem(ENERGIES, "toy", ToyEnergy)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_estimator_matches_enumeration(toy_registered, n):
    X = toy_data(n, seed=n)
    est = TrellisHierarchical(energy="toy", method="exact", beta=BETA).fit(X)
    trees, ref = enumerate_toy(X)
    assert isinstance(est.model_, ToyEnergy)
    assert est.log_partition_function_ == pytest.approx(ref["log_z"], abs=1e-9)
    assert est.map_log_potential_ == pytest.approx(ref["map_log_phi"], abs=1e-9)
    assert canonical_tree(est.map_tree_) == canonical_tree(ref["map_tree"])
    assert est.n_trees_ == ref["n_allowed"] == len(trees)
    # the energy's own (slow) evaluation agrees with the engine's
    assert est.model_.log_potential(est.map_tree_, BETA) == pytest.approx(
        ref["map_log_phi"], abs=1e-9)


def test_unregistered_name_is_refused():
    assert "toy" not in ENERGIES
    with pytest.raises(ValueError, match="energy"):
        TrellisHierarchical(energy="toy").fit(toy_data(4))


@pytest.mark.parametrize("layered", [False, True])
def test_exact_trellis_matches_enumeration(layered):
    n = 6
    X = toy_data(n, seed=1)
    model = ToyEnergy().fit(X)
    split, params, stats = model.kernel_inputs(BETA)
    assert split is toy_split and params[0] == BETA
    trellis = ExactHierarchicalTrellis(split, params, stats, layered=layered).fit()
    trees, ref = enumerate_toy(X)
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(ref["map_log_phi"], abs=1e-9)
    assert canonical_tree(trellis.map_tree) == canonical_tree(ref["map_tree"])
    assert trellis.n_trees == len(trees)
    # single splits through the same compiled kernels (the Python-callable evaluator)
    psi = toy_psi(X)
    for tree in trees[:20]:
        assert trellis.log_potential(tree) == pytest.approx(
            BETA * tree_log_potential(tree, psi), abs=1e-9)
    marginals = trellis.cluster_marginals()
    node_probs = cluster_node_probabilities(trees, ref["probs"])
    for k in range(1, n + 1):
        for subset in itertools.combinations(range(n), k):
            mask = sum(1 << i for i in subset)
            assert marginals[mask] == pytest.approx(node_probs.get(subset, 0.0), abs=1e-9)
    draws = trellis.sample(200, np.random.RandomState(0))
    allowed = {canonical_tree(u) for u in trees}   # built once, not once per draw
    assert all(canonical_tree(t) in allowed for t in draws)


def test_sparse_trellis_over_seed_family_matches_enumeration():
    n = 6
    X = toy_data(n, seed=2)
    model = ToyEnergy().fit(X)
    seeds = [((((0, 1), 2), 3), (4, 5)), (((0, 4), (1, 5)), (2, 3)), ((0, (1, 2)), ((3, 4), 5))]
    family = ClusterFamily.from_trees(seeds, n)
    trellis = SparseHierarchicalTrellis(family, *model.family_kernel_inputs(family, BETA),
                                        verify_edges=True).fit()
    # the trees realised by the family: every node is a cluster of the family
    clusters = {tuple(sorted(family.members(v).tolist())) for v in range(family.n_vertices)}
    trees, _ = enumerate_toy(X)
    realised = [t for t in trees if tree_clusters(t) <= clusters]
    psi = toy_psi(X)
    log_phi = np.array([BETA * tree_log_potential(t, psi) for t in realised])
    assert trellis.n_trees == len(realised) >= len(seeds)
    assert trellis.log_partition_function == pytest.approx(logsumexp(log_phi), abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(log_phi.max(), abs=1e-9)
    assert canonical_tree(trellis.map_tree) == canonical_tree(realised[int(np.argmax(log_phi))])
    # the slow path (one Python call per edge) gives the same trellis
    slow = SparseHierarchicalTrellis(
        family, split_function=lambda l, r: BETA * model.split_log_potential(l, r)).fit()
    assert slow.log_partition_function == pytest.approx(trellis.log_partition_function,
                                                        abs=1e-9)
    assert np.allclose(slow.edge_log_potential, trellis.edge_log_potential, atol=1e-12)


def test_sparse_estimator_runs(toy_registered):
    X = toy_data(7, seed=3)
    # windows of 3 clusters: a family short of the 127 subsets (a lower bound)
    est = TrellisHierarchical(energy="toy", method="sparse", window_size=3, beta=BETA).fit(X)
    assert est.map_is_exact_ is False and est.n_trellis_vertices_ < 2 ** 7 - 1
    _, ref = enumerate_toy(X)
    assert est.map_log_potential_ <= ref["map_log_phi"] + 1e-9
    assert est.log_partition_function_ <= ref["log_z"] + 1e-9
    assert est.model_.log_potential(est.map_tree_, BETA) == pytest.approx(
        est.map_log_potential_, abs=1e-9)
    # the default windows (8 >= 7 items) cover every subset: the exact trellis
    full = TrellisHierarchical(energy="toy", method="sparse", beta=BETA).fit(X)
    assert full.map_is_exact_ is True and full.approximation_ is None
    assert full.log_partition_function_ == pytest.approx(ref["log_z"], abs=1e-9)
    assert full.map_log_potential_ == pytest.approx(ref["map_log_phi"], abs=1e-9)


def test_greedy_and_beam_search():
    n = 7
    X = toy_data(n, seed=4)
    inputs = ToyEnergy().fit(X).kernel_inputs(BETA)
    trees, ref = enumerate_toy(X)
    psi = toy_psi(X)
    for tree, value in [greedy_tree(*inputs), beam_search_tree(*inputs)]:
        assert value == pytest.approx(BETA * tree_log_potential(tree, psi), abs=1e-9)
        assert value <= ref["map_log_phi"] + 1e-9
    found = beam_search_trees(*inputs, beam_width=4 * n * n)
    values = [value for _, value in found]
    assert values == sorted(values, reverse=True)
    assert len({canonical_tree(t) for t, _ in found}) == len(found)
    for tree, value in found:
        assert value == pytest.approx(BETA * tree_log_potential(tree, psi), abs=1e-9)
    # a wide beam finds the exact MAP of this small problem
    assert values[0] == pytest.approx(ref["map_log_phi"], abs=1e-9)


def test_split_must_be_a_numba_function():
    X = toy_data(4)
    _, params, stats = ToyEnergy().fit(X).kernel_inputs()
    with pytest.raises(TypeError, match="numba"):
        ExactHierarchicalTrellis(toy_split.py_func, params, stats)


# -- no engine names an energy ----------------------------------------------------------
def _code_words(path):
    """Identifiers, imported module names and string constants of a module's code.

    Docstrings (whose usage examples build an energy) and comments are left out.
    """
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    words = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            words.append(node.name)
        elif isinstance(node, ast.arg):
            words.append(node.arg)
        elif isinstance(node, ast.alias):
            words.extend([node.name, node.asname or ""])
        elif isinstance(node, ast.ImportFrom):
            words.append(node.module or "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            words.append(node.value)
    return words


def energy_names():
    """Every name an engine would use to single out an energy (lower case)."""
    names = set(ENERGIES) | {"toy", "kind_", "split_kernels", "table_split"}
    for model in list(ENERGIES.values()) + [CallableEnergy, ToyEnergy]:
        names |= {model.__name__, model.__module__.rsplit(".", 1)[-1]}
    return sorted(name.lower() for name in names)


def offending_words(path, names):
    return [word for word in _code_words(path) if any(name in word.lower() for name in names)]


def test_no_engine_module_names_an_energy():
    root = Path(engines_package.__file__).parent
    # The divisive engine takes no energy: its split criteria are its own (one
    # is named after Dasgupta's cut), so it is not an engine energies plug into.
    sources = sorted(p for p in root.rglob("*.py") if "divisive" not in p.parts)
    assert len(sources) > 10
    names = energy_names()
    assert {"dasgupta", "hcc", "ginkgo", "callable_energy", "toy", "kind_"} <= set(names)
    offending = {path.relative_to(root).as_posix(): offending_words(path, names)
                 for path in sources}
    assert {path: words for path, words in offending.items() if words} == {}
    # the check sees a module that does name an energy
    assert offending_words(Path(inspect.getfile(ENERGIES["dasgupta"])), names)
