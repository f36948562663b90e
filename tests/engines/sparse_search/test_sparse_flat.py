"""Sparse flat trellis: against the exact engine (powerset) and brute force (tree, unions)."""

import numpy as np
import pytest
from scipy.stats import chisquare

from oracles import (
    canonical,
    cluster_probability,
    family_partitions,
    flat_summaries,
    together_probability,
)
from sklearn_trellis.models import CorrelationClusteringModel
from sklearn_trellis.models._flat import FlatModel
from sklearn_trellis.engines import ExactFlatTrellis
from sklearn_trellis._core.budget import BudgetExceeded
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees
from sklearn_trellis._core import interpreted as _interpreted
from sklearn_trellis.engines.sparse import _sparse_flat_kernels as kernels, sparse_flat
from sklearn_trellis.engines.sparse.sparse_flat import SparseFlatTrellis


@pytest.fixture(autouse=True)
def compiled_states(monkeypatch):
    """The compiled state enumeration at every N (up to INTERPRETED_STATE_ITEMS items a
    fit runs its Python source: tested against it below)."""
    monkeypatch.setattr(sparse_flat, "INTERPRETED_STATE_ITEMS", 0)
    monkeypatch.setattr(sparse_flat, "INTERPRETED_MAP_ITEMS", 0)


def correlation_model(n, seed, beta=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    w = np.exp(-d) - np.exp(-d).mean()
    return X, CorrelationClusteringModel(beta=beta).fit(w)


def random_tree(n, rng):
    """A uniformly random merge sequence (``children_``)."""
    nodes = list(range(n))
    children = []
    for k in range(n - 1):
        a, b = rng.choice(len(nodes), size=2, replace=False)
        children.append([nodes[a], nodes[b]])
        nodes = [x for i, x in enumerate(nodes) if i not in (a, b)] + [n + k]
    return np.array(children, dtype=np.int64)


def horizontal_cut(children, n, k):
    """Labels of the ``k`` clusters left after the first ``n - k`` merges."""
    members = [[i] for i in range(n)] + [None] * (n - 1)
    alive = set(range(n))
    for row, (a, b) in enumerate(children[:n - k]):
        members[n + row] = members[a] + members[b]
        alive -= {int(a), int(b)}
        alive.add(n + row)
    labels = np.empty(n, dtype=np.int64)
    for label, node in enumerate(sorted(alive)):
        labels[members[node]] = label
    return labels


def vertex_sets(family):
    return [frozenset(family.members(v).tolist()) for v in range(family.n_vertices)]


def oracle(family, model):
    """Brute force over the partitions whose clusters are all vertices."""
    sets = vertex_sets(family)
    value = {s: model.cluster_log_potential(sorted(s)) for s in sets}
    partitions, log_phi = family_partitions(family.n_items, sets, value.__getitem__)
    return partitions, log_phi, flat_summaries(partitions, log_phi)


def check_against_oracle(trellis, family, model):
    partitions, log_phi, ref = oracle(family, model)
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(ref["map_log_phi"], abs=1e-9)
    assert tuple(trellis.map_labels) == canonical(partitions[ref["map_index"]])
    assert trellis.log_potential(trellis.map_labels) == pytest.approx(
        trellis.map_log_potential, abs=1e-9)
    np.testing.assert_allclose(trellis.pairwise_marginals(), ref["pairwise"], atol=1e-10)
    rows = np.array([family.n_items - 1, 0, 2])
    np.testing.assert_allclose(trellis.pairwise_marginals(rows=rows), ref["pairwise"][rows],
                               atol=1e-10)
    marginals = trellis.cluster_marginals()
    for v, members in enumerate(vertex_sets(family)):
        assert marginals[v] == pytest.approx(
            cluster_probability(partitions, ref["probs"], sorted(members)), abs=1e-10)
    for subset in ([0, 1], [1, 2, 3], [0, 3, 5], list(range(family.n_items))):
        assert trellis.together_marginal(subset) == pytest.approx(
            together_probability(partitions, ref["probs"], subset), abs=1e-10)
    n_clusters = partitions.max(axis=1) + 1
    k_dist = np.bincount(n_clusters - 1, weights=ref["probs"], minlength=family.n_items)
    np.testing.assert_allclose(trellis.n_clusters_distribution(), k_dist, atol=1e-10)


# ------------------------------------------------------------------- powerset
@pytest.mark.parametrize("n, seed, beta", [(5, 0, 1.0), (7, 1, 3.0), (8, 2, 0.5)])
def test_powerset_family_equals_the_exact_engine(n, seed, beta):
    _, model = correlation_model(n, seed, beta)
    family = ClusterFamily.powerset(n)
    sparse = SparseFlatTrellis.from_model(model, family).fit()
    exact = ExactFlatTrellis(model.log_potential_table()).fit()
    assert sparse.method_ == "states"
    assert sparse.log_partition_function == pytest.approx(exact.log_partition_function,
                                                          abs=1e-9)
    assert sparse.map_log_potential == pytest.approx(exact.map_log_potential, abs=1e-9)
    np.testing.assert_array_equal(sparse.map_labels, exact.map_labels)
    np.testing.assert_allclose(sparse.pairwise_marginals(), exact.pairwise_marginals(),
                               atol=1e-10)
    marginals = sparse.cluster_marginals()
    for v in range(family.n_vertices):
        assert marginals[v] == pytest.approx(exact.cluster_marginal(family.members(v)),
                                             abs=1e-10)
    np.testing.assert_allclose(sparse.n_clusters_distribution(),
                               exact.n_clusters_distribution(), atol=1e-10)
    for subset in ([0, 2], [1, 3, 4]):
        assert sparse.together_marginal(subset) == pytest.approx(
            exact.together_marginal(subset), abs=1e-10)


def test_generic_family_log_potentials_match_the_fast_override():
    _, model = correlation_model(9, 3, beta=1.7)
    X = np.random.default_rng(3).normal(size=(9, 2))
    family = ClusterFamily.from_trees(linkage_seed_trees(X), 9)
    generic = FlatModel.family_log_potentials(model, family)
    np.testing.assert_allclose(model.family_log_potentials(family), generic, atol=1e-12)
    with pytest.raises(ValueError, match="over 4 items, the model over 9"):
        model.family_log_potentials(ClusterFamily.powerset(4))


# --------------------------------------------------------- tree and union families
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("method", ["tree", "states"])
def test_tree_family_equals_brute_force(seed, method):
    n = 8
    rng = np.random.default_rng(seed)
    _, model = correlation_model(n, seed, beta=2.0)
    family = ClusterFamily.from_trees([random_tree(n, rng)], n)
    trellis = SparseFlatTrellis.from_model(model, family, method=method).fit()
    assert trellis.method_ == method
    if method == "states":
        # the states are the root and the right children (in the tree's leaf order)
        assert trellis.n_states_ == n
        assert trellis.n_transitions_ == family.n_vertices
    check_against_oracle(trellis, family, model)


@pytest.mark.parametrize("seed", range(3))
def test_union_of_three_trees_equals_brute_force(seed):
    n = 8
    rng = np.random.default_rng(10 + seed)
    X, model = correlation_model(n, 10 + seed, beta=1.5)
    trees = [random_tree(n, rng), random_tree(n, rng)] + linkage_seed_trees(X, linkage="ward")
    family = ClusterFamily.from_trees(trees, n)
    trellis = SparseFlatTrellis.from_model(model, family).fit()
    assert trellis.method_ == "states" and trellis.n_states_ > n + 1
    check_against_oracle(trellis, family, model)


def test_item_order_changes_the_states_not_the_results():
    n = 40
    X, model = correlation_model(n, 30, beta=0.8)
    family = ClusterFamily.from_trees(linkage_seed_trees(X), n)
    reference = SparseFlatTrellis.from_model(model, family, order="first").fit()
    permutation = np.random.default_rng(0).permutation(n)
    for order in ("auto", permutation):
        other = SparseFlatTrellis.from_model(model, family, order=order).fit()
        assert other.log_partition_function == pytest.approx(
            reference.log_partition_function, abs=1e-9)
        assert other.map_log_potential == pytest.approx(reference.map_log_potential, abs=1e-9)
        np.testing.assert_allclose(other.cluster_marginals(), reference.cluster_marginals(),
                                   atol=1e-10)
    assert np.array_equal(other.rank_[permutation], np.arange(n))
    with pytest.raises(ValueError, match="permutation"):
        SparseFlatTrellis.from_model(model, family, order=np.zeros(n, dtype=int))
    with pytest.raises(ValueError, match="order must be"):
        SparseFlatTrellis.from_model(model, family, order="best")


def test_clusters_without_construction_split_and_no_seed_tree():
    n = 7
    _, model = correlation_model(n, 5, beta=1.0)
    family = ClusterFamily.from_clusters([[0, 3, 5], [1, 2], [4, 6], [1, 2, 4, 6],
                                          [0, 3], [2, 5, 6]], n)
    assert (family.build_left[family.sizes > 1] < 0).any()
    trellis = SparseFlatTrellis.from_model(model, family).fit()
    check_against_oracle(trellis, family, model)


@pytest.mark.parametrize("seed", range(3))
def test_bounds_against_exact_and_each_seed_tree(seed):
    n = 12
    X, model = correlation_model(n, 20 + seed, beta=1.0)
    trees = linkage_seed_trees(X)
    union = SparseFlatTrellis.from_model(model, ClusterFamily.from_trees(trees, n)).fit()
    exact = ExactFlatTrellis(model.log_potential_table()).fit()
    assert union.log_partition_function <= exact.log_partition_function + 1e-9
    assert union.map_log_potential <= exact.map_log_potential + 1e-9
    for tree in trees:
        single = SparseFlatTrellis.from_model(model, ClusterFamily.from_trees([tree], n)).fit()
        assert single.method_ == "tree"
        assert union.map_log_potential >= single.map_log_potential - 1e-9
        assert union.log_partition_function >= single.log_partition_function - 1e-9
        # the best cut of the tree is at least as good as every horizontal cut
        for k in range(1, n + 1):
            labels = horizontal_cut(tree, n, k)
            assert single.log_potential(labels) <= single.map_log_potential + 1e-9
            assert single.log_potential(labels) == pytest.approx(
                model.log_potential(labels) - model.log_potential_constant(), abs=1e-9)


# ------------------------------------------- interpreted and memoised enumeration
def _union_family(n, seed, random=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return ClusterFamily.from_trees(
        linkage_seed_trees(X) + ([random_tree(n, rng)] if random else []), n)


def _states_fit(model, family, monkeypatch, interpreted, **kwargs):
    monkeypatch.setattr(sparse_flat, "INTERPRETED_STATE_ITEMS", 48 if interpreted else 0)
    monkeypatch.setattr(sparse_flat, "INTERPRETED_MAP_ITEMS", 1_000 if interpreted else 0)
    monkeypatch.setattr(_interpreted, "INTERPRETED_BUDGET_SECONDS", np.inf)
    runs = []
    monkeypatch.setattr(sparse_flat, "run_interpreted",
                        lambda kernel, *args: runs.append(kernel) or
                        _interpreted.run_interpreted(kernel, *args))
    trellis = SparseFlatTrellis.from_model(model, family, **kwargs).fit()
    assert (kernels.enumerate_states in runs) == (interpreted and family.n_items <= 48)
    return trellis


@pytest.mark.parametrize("n, seed, random", [(9, 0, True), (24, 1, True), (48, 2, False)])
def test_interpreted_state_enumeration_is_the_kernels(n, seed, random, monkeypatch):
    _, model = correlation_model(n, seed)
    compiled = _states_fit(model, _union_family(n, seed, random), monkeypatch, False)
    # a fresh family each time: nothing memoised
    for max_states in (sparse_flat.INTERPRETED_MAX_STATES, 3):   # 3: starts over compiled
        monkeypatch.setattr(sparse_flat, "INTERPRETED_MAX_STATES", max_states)
        ours = _states_fit(model, _union_family(n, seed, random), monkeypatch, True)
        assert compiled.method_ == ours.method_ == "states"
        assert (ours.n_states_, ours.n_transitions_) == (compiled.n_states_,
                                                         compiled.n_transitions_)
        for got, want in zip(ours._states + (ours.rank_, ours._log_z, ours._back),
                             compiled._states + (compiled.rank_, compiled._log_z,
                                                 compiled._back)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        assert ours.log_partition_function == compiled.log_partition_function
        np.testing.assert_array_equal(ours.map_vertices, compiled.map_vertices)
        np.testing.assert_array_equal(ours.map_labels, compiled.map_labels)


def test_interpreted_tree_map_is_the_kernels(monkeypatch):
    n = 30
    _, model = correlation_model(n, 4, beta=2.0)
    family = ClusterFamily.from_trees([random_tree(n, np.random.default_rng(4))], n)
    potentials = model.family_log_potentials(family)
    monkeypatch.setattr(_interpreted, "INTERPRETED_BUDGET_SECONDS", np.inf)
    fits = []
    for items in (0, 1_000):
        monkeypatch.setattr(sparse_flat, "INTERPRETED_MAP_ITEMS", items)
        spent = _interpreted._spent
        fits.append(SparseFlatTrellis(family, potentials).fit())
        assert (_interpreted._spent > spent) == (items > 0)
    assert fits[0].method_ == "tree" and fits[0].map_vertices.size > 1
    np.testing.assert_array_equal(fits[1].map_vertices, fits[0].map_vertices)
    np.testing.assert_array_equal(fits[1].map_labels, fits[0].map_labels)


@pytest.mark.parametrize("interpreted", [True, False])
def test_state_cap_is_the_same_interpreted_or_compiled(interpreted, monkeypatch):
    n = 8
    rng = np.random.default_rng(1)
    _, model = correlation_model(n, 1)
    family = ClusterFamily.from_trees([random_tree(n, rng) for _ in range(4)], n)
    with pytest.raises(BudgetExceeded) as refused:
        _states_fit(model, family, monkeypatch, interpreted, max_states=3)
    assert refused.value.limit == 3 and refused.value.reached == 3


def test_a_family_enumerates_its_states_once(monkeypatch):
    n = 12
    family = _union_family(n, 3)
    _, cold = correlation_model(n, 3, beta=0.5)
    _, hot = correlation_model(n, 3, beta=2.0)
    first = _states_fit(cold, family, monkeypatch, False)
    second = _states_fit(hot, family, monkeypatch, False)
    assert all(a is b for a, b in zip(first._states, second._states))
    fresh = _states_fit(hot, _union_family(n, 3), monkeypatch, False)
    assert second.log_partition_function == fresh.log_partition_function
    np.testing.assert_array_equal(second.map_labels, fresh.map_labels)
    # a cap below the states known refuses, as a new enumeration would
    with pytest.raises(BudgetExceeded):
        _states_fit(hot, family, monkeypatch, False, max_states=first.n_states_ - 1)
    again = _states_fit(hot, family, monkeypatch, False, max_states=first.n_states_)
    assert again._states[0] is first._states[0]


# ------------------------------------------------------------------- sampling
@pytest.mark.parametrize("method", ["tree", "states"])
def test_samples_follow_the_family_distribution(method):
    n = 5
    rng = np.random.default_rng(7)
    X, model = correlation_model(n, 7, beta=1.0)
    trees = [random_tree(n, rng)]
    if method == "states":
        trees += [random_tree(n, rng), random_tree(n, rng)]
    family = ClusterFamily.from_trees(trees, n)
    trellis = SparseFlatTrellis.from_model(model, family, method=method).fit()
    partitions, _, ref = oracle(family, model)
    samples = trellis.sample(6000, random_state=0)
    np.testing.assert_array_equal(samples, trellis.sample(6000, random_state=0))
    index = {canonical(p): k for k, p in enumerate(partitions)}
    counts = np.bincount([index[tuple(s)] for s in samples], minlength=len(partitions))
    expected = ref["probs"] * len(samples)
    keep = expected > 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert chisquare(observed, expected).pvalue > 1e-4


# ------------------------------------------------------------------ large and errors
def test_tree_family_at_two_thousand_items():
    n = 2000
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    w = np.exp(-((X[:200, None] - X[None, :200]) ** 2).sum(-1))
    affinity = np.zeros((n, n))
    affinity[:200, :200] = w - 0.3       # a cheap, structured affinity
    model = CorrelationClusteringModel(beta=1.0).fit(affinity)
    family = ClusterFamily.from_trees(linkage_seed_trees(X, linkage="average"), n)
    trellis = SparseFlatTrellis.from_model(model, family).fit()
    assert trellis.method_ == "tree"
    assert np.isfinite(trellis.log_partition_function)
    assert trellis.log_potential(trellis.map_labels) == pytest.approx(
        trellis.map_log_potential, abs=1e-6)
    rows = trellis.pairwise_marginals(rows=[0, 1999])
    assert rows.shape == (2, n) and rows[0, 0] == 1.0
    assert trellis.sample(3, random_state=0).shape == (3, n)
    with pytest.raises(ValueError, match="max_bytes"):
        trellis.pairwise_marginals(max_bytes=10 ** 6)


def test_state_cap_and_input_errors():
    n = 8
    rng = np.random.default_rng(1)
    _, model = correlation_model(n, 1)
    family = ClusterFamily.from_trees([random_tree(n, rng) for _ in range(4)], n)
    with pytest.raises(ValueError, match="remainder states"):
        SparseFlatTrellis.from_model(model, family, max_states=3).fit()
    # A dedicated class carries the figures, so callers need not read the message.
    with pytest.raises(BudgetExceeded) as refused:
        SparseFlatTrellis.from_model(model, family, max_states=3).fit()
    assert refused.value.resource == "states" and refused.value.limit == 3
    assert refused.value.reached == 3
    with pytest.raises(ValueError, match="method='tree'"):
        SparseFlatTrellis.from_model(model, family, method="tree")
    with pytest.raises(ValueError, match="shape"):
        SparseFlatTrellis(family, np.zeros(3))
    with pytest.raises(TypeError, match="ClusterFamily"):
        SparseFlatTrellis(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        SparseFlatTrellis(family, np.full(family.n_vertices, np.nan))
    trellis = SparseFlatTrellis.from_model(model, family)
    with pytest.raises(RuntimeError, match="fit"):
        trellis.pairwise_marginals()
    trellis.fit()
    with pytest.raises(ValueError, match=r"\[0, 7\]"):
        trellis.together_marginal([8])
    assert trellis.cluster_marginal([0, 1, 2, 3, 4, 5, 6, 7]) > 0
