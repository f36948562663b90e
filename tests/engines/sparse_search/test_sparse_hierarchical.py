"""The sparse hierarchical trellis against the exact engine and brute-force enumeration."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from scipy.cluster.hierarchy import linkage

from oracles import (binary_trees, canonical_tree, family_split_edges, family_tree_counts,
                     random_split_table, tree_clusters, tree_log_potential)
from oracles import ginkgo_energy, small_ginkgo_jets
from numba_threads import numba_threads
from sklearn_trellis.models import CallableEnergy, DasguptaEnergy, GinkgoEnergy, HCCEnergy
from sklearn_trellis.models.callable_energy import table_split
from sklearn_trellis.engines import ExactHierarchicalTrellis
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.exact.hierarchical import double_factorial_trees
from sklearn_trellis.engines.sparse.sparse_hierarchical import (SparseHierarchicalTrellis,
                                                         log_double_factorial_trees)


@pytest.fixture(autouse=True)
def compiled_discovery(monkeypatch):
    """The compiled edge discovery at every size (small families run its Python
    source: tested against it below)."""
    from sklearn_trellis.engines.sparse import _sparse_hier_kernels
    monkeypatch.setattr(_sparse_hier_kernels, "INTERPRETED_DISCOVERY_WORK", 0)


# -- helpers ---------------------------------------------------------------------
def random_children(rng, n):
    """A uniformly random merge order as a scikit-learn ``children_`` array."""
    active = list(range(n))
    children = []
    for k in range(n - 1):
        a, b = sorted(rng.choice(len(active), size=2, replace=False))
        children.append([active[a], active[b]])
        active.pop(b)
        active[a] = n + k
    return np.array(children, dtype=np.int64).reshape(-1, 2)


def children_to_nested(children, n):
    nodes = list(range(n))
    for a, b in children:
        nodes.append((nodes[a], nodes[b]))
    return nodes[-1]


def random_table(rng, n, forbid=0.0, scale=1.5):
    """Random split log-potentials of every split; caterpillar splits stay allowed."""
    return random_split_table(rng, n, scale=scale, forbid=forbid)


def table_energy(table, n):
    return CallableEnergy(lambda X, left, right: table[tuple(left), tuple(right)]).fit(
        np.zeros((n, 1)))


def sparse_from_exact_inputs(family, model, beta=1.0):
    """The exact engine's kernel inputs with their columns gathered at the vertices."""
    split, params, stats = model.kernel_inputs(beta)
    return SparseHierarchicalTrellis(family, split, params, stats[:, family.masks()],
                                     verify_edges=True).fit()


def pairwise_model(name, rng, n):
    if name == "dasgupta":
        w = rng.random((n, n))
        w = w + w.T
        np.fill_diagonal(w, 0)
        return DasguptaEnergy(similarity="precomputed").fit(w)
    w = rng.normal(size=(n, n))
    w = w + w.T
    np.fill_diagonal(w, 0)
    return HCCEnergy(similarity="precomputed").fit(w)


def family_members(family):
    return [frozenset(family.members(v).tolist()) for v in range(family.n_vertices)]


# -- the powerset family equals the exact engine -----------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("energy", ["dasgupta", "hcc", "table", "table-forbid"])
def test_powerset_family_equals_exact_engine(n, energy):
    rng = np.random.default_rng(100 * n + len(energy))
    beta = 0.8
    if energy.startswith("table"):
        model = table_energy(random_table(rng, n, forbid=0.35 * energy.endswith("forbid")), n)
    else:
        model = pairwise_model(energy, rng, n)
    family = ClusterFamily.powerset(n)
    masks = family.masks()
    exact = ExactHierarchicalTrellis(*model.kernel_inputs(beta)).fit()
    if energy.startswith("table"):
        sparse = sparse_from_exact_inputs(family, model, beta)
        assert sparse.split is table_split
    else:
        split, params, stats = model.family_kernel_inputs(family, beta)
        assert np.allclose(stats, model.kernel_inputs(beta).stats[:, masks], atol=1e-12)
        sparse = SparseHierarchicalTrellis(family, split, params, stats,
                                           verify_edges=True).fit()
    assert sparse.n_edges == (3 ** n - 2 ** (n + 1) + 1) // 2
    assert sparse.log_partition_function == pytest.approx(exact.log_partition_function,
                                                          abs=1e-9)
    assert sparse.map_log_potential == pytest.approx(exact.map_log_potential, abs=1e-9)
    # (HCC has ties: compare the potential of the trees, not the trees)
    assert exact.log_potential(sparse.map_tree) == pytest.approx(exact.map_log_potential,
                                                                 abs=1e-9)
    assert sparse.log_potential(sparse.map_tree) == pytest.approx(exact.map_log_potential,
                                                                  abs=1e-9)
    assert sparse.n_trees == exact.n_trees and isinstance(sparse.n_trees, int)
    if energy != "table-forbid":
        assert sparse.n_trees == double_factorial_trees(n)
        assert sparse.log10_sparsity_index == pytest.approx(0.0, abs=1e-9)
    assert np.allclose(sparse.cluster_marginals(), exact.cluster_marginals()[masks],
                       atol=1e-9)
    subset = list(range(0, n, 2))
    assert sparse.cluster_marginal(subset) == pytest.approx(exact.cluster_marginal(subset),
                                                            abs=1e-9)
    for subtree in ([((0, 2), 1), (1, (2, 3)), 3] if n >= 4 else []):
        assert sparse.subtree_marginal(subtree) == pytest.approx(
            exact.subtree_marginal(subtree), abs=1e-9)
    parents, lefts, rights = sparse.map_splits
    assert np.array_equal(family.sizes[parents], family.sizes[lefts] + family.sizes[rights])


def test_huge_potentials_do_not_overflow():
    rng = np.random.default_rng(2)
    n = 6
    model = table_energy(random_table(rng, n, scale=3e4), n)
    exact = ExactHierarchicalTrellis(*model.kernel_inputs()).fit()
    sparse = sparse_from_exact_inputs(ClusterFamily.powerset(n), model)
    assert np.isfinite(sparse.log_partition_function)
    assert sparse.log_partition_function == pytest.approx(exact.log_partition_function,
                                                          rel=1e-12)
    masks = sparse.family.masks()
    assert np.allclose(sparse.cluster_marginals(), exact.cluster_marginals()[masks], atol=1e-9)


def test_python_split_function_path_equals_kernel_path():
    rng = np.random.default_rng(5)
    n = 6
    model = table_energy(random_table(rng, n, forbid=0.3), n)
    family = ClusterFamily.powerset(n)
    slow = SparseHierarchicalTrellis.from_model(family, model, beta=0.5).fit()
    fast = sparse_from_exact_inputs(family, model, beta=0.5)
    assert slow.split_function is not None
    np.testing.assert_array_equal(slow.edge_log_potential, fast.edge_log_potential)
    assert slow.log_partition_function == fast.log_partition_function
    assert slow.n_trees == fast.n_trees
    with pytest.raises(ValueError, match="max_python_edges"):
        SparseHierarchicalTrellis.from_model(family, model, max_python_edges=10).fit()


def test_ginkgo_powerset_reproduces_reference_values():
    for jet in small_ginkgo_jets():
        model = ginkgo_energy(jet).fit(np.array(jet["leaves"]))
        family = ClusterFamily.powerset(model.n_items_)
        split, params, stats = model.family_kernel_inputs(family)
        assert np.allclose(stats, model.kernel_inputs().stats[:, family.masks()],
                           equal_nan=True)
        trellis = SparseHierarchicalTrellis(family, split, params, stats).fit()
        assert trellis.log_partition_function == pytest.approx(jet["ref_logZ"], abs=1e-9)
        assert trellis.map_log_potential == pytest.approx(jet["ref_map_loglik"], abs=1e-9)
        assert trellis.n_trees == jet["ref_n_trees_allowed"]
        # the model's own evaluation of the MAP tree agrees (root term included)
        assert model.log_potential(trellis.map_tree) == pytest.approx(
            trellis.map_log_potential, abs=1e-9)


# -- sparse families against enumeration of the trees they realise -------------------------
def random_family(rng, n, n_trees, n_extra):
    trees = [random_children(rng, n) for _ in range(n_trees)]
    extras = []
    for _ in range(n_extra):
        size = rng.integers(2, n)
        extras.append(rng.choice(n, size=size, replace=False).tolist())
    return ClusterFamily.from_trees(trees, n, extra_clusters=extras)


@pytest.mark.parametrize("seed", range(6))
def test_edges_are_exactly_the_splits_within_the_family(seed):
    rng = np.random.default_rng(seed)
    n = 24
    family = random_family(rng, n, n_trees=1 + seed % 4, n_extra=3 * seed)
    trellis = SparseHierarchicalTrellis(
        family, split_function=lambda left, right: 0.0, verify_edges=True).fit()
    got = set(zip(trellis.edge_parent.tolist(), trellis.edge_left.tolist(),
                  trellis.edge_right.tolist()))
    assert len(got) == trellis.n_edges
    assert got == family_split_edges(family_members(family))
    assert np.all(np.diff(trellis.edge_parent) >= 0)


@pytest.mark.parametrize("seed", range(5))
def test_sparse_family_matches_enumeration_of_its_trees(seed):
    rng = np.random.default_rng(20 + seed)
    n = 6
    family = random_family(rng, n, n_trees=3, n_extra=4)
    table = random_table(rng, n, forbid=0.2 if seed % 2 else 0.0)
    model = table_energy(table, n)
    trellis = sparse_from_exact_inputs(family, model)
    members = set(family_members(family))
    trees = [t for t in binary_trees(tuple(range(n)))
             if all(frozenset(c) in members for c in tree_clusters(t))]
    log_phi = np.array([tree_log_potential(t, lambda l, r: table[l, r]) for t in trees])
    finite = np.isfinite(log_phi)
    assert trellis.n_trees == finite.sum()
    log_z = np.logaddexp.reduce(log_phi[finite])
    assert trellis.log_partition_function == pytest.approx(log_z, abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(log_phi.max(), abs=1e-9)
    assert canonical_tree(trellis.map_tree) == canonical_tree(trees[int(np.argmax(log_phi))])
    probs = np.where(finite, np.exp(log_phi - log_z), 0.0)
    marginals = trellis.cluster_marginals()
    for v, cluster in enumerate(family_members(family)):
        expected = sum(p for t, p in zip(trees, probs)
                       if tuple(sorted(cluster)) in tree_clusters(t))
        assert marginals[v] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("family_kind", ["powerset", "sparse"])
def test_sampling_matches_exact_distribution(family_kind):
    rng = np.random.default_rng(7)
    n = 5
    table = random_table(rng, n, forbid=0.25, scale=0.8)
    model = table_energy(table, n)
    family = (ClusterFamily.powerset(n) if family_kind == "powerset"
              else random_family(rng, n, n_trees=4, n_extra=3))
    trellis = sparse_from_exact_inputs(family, model)
    members = set(family_members(family))
    trees = [t for t in binary_trees(tuple(range(n)))
             if all(frozenset(c) in members for c in tree_clusters(t))]
    log_phi = np.array([tree_log_potential(t, lambda l, r: table[l, r]) for t in trees])
    probs = np.exp(log_phi - np.logaddexp.reduce(log_phi))
    n_draws = 20000
    draws = trellis.sample(n_draws, np.random.RandomState(0))
    index = {canonical_tree(t): i for i, t in enumerate(trees)}
    counts = np.bincount([index[canonical_tree(t)] for t in draws], minlength=len(trees))
    assert counts[probs == 0].sum() == 0
    keep = probs * n_draws >= 5
    expected = probs[keep] * n_draws
    chi2 = ((counts[keep] - expected) ** 2 / expected).sum()
    rest = n_draws - expected.sum()
    dof = keep.sum() - 1
    if rest >= 5:
        chi2 += ((n_draws - counts[keep].sum()) - rest) ** 2 / rest
        dof += 1
    assert scipy_stats.chi2.sf(chi2, dof) > 1e-4
    assert trellis.sample(20, np.random.RandomState(0)) == draws[:20]
    # vertex frequencies of the draws estimate the marginals
    edges = trellis.sample_edges(n_draws, 1)
    assert np.allclose(trellis.vertex_frequencies(edges), trellis.cluster_marginals(),
                       atol=0.02)


# -- linkage-seeded families ------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("energy", ["dasgupta", "hcc"])
def test_linkage_family_bounds(seed, energy):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 13))
    X = rng.normal(size=(n, 3))
    from scipy.spatial.distance import pdist, squareform
    D = squareform(pdist(X))
    model = (DasguptaEnergy() if energy == "dasgupta" else HCCEnergy()).fit(D)
    beta = 0.3
    seeds = [linkage(X, method=m)[:, :2].astype(np.int64)
             for m in ("single", "average", "complete", "ward")]
    family = ClusterFamily.from_trees(seeds, n)
    trellis = SparseHierarchicalTrellis.from_model(family, model, beta).fit()
    exact = ExactHierarchicalTrellis(*model.kernel_inputs(beta)).fit()
    seed_values = [model.log_potential(children_to_nested(c, n), beta) for c in seeds]
    assert np.allclose(trellis.seed_tree_log_potentials(), seed_values, atol=1e-9)
    assert trellis.map_log_potential >= max(seed_values) - 1e-9
    assert trellis.map_log_potential <= exact.map_log_potential + 1e-9
    assert model.log_potential(trellis.map_tree, beta) == pytest.approx(
        trellis.map_log_potential, abs=1e-9)
    assert trellis.log_partition_function <= exact.log_partition_function + 1e-9
    distinct = {canonical_tree(children_to_nested(c, n)): v for c, v in zip(seeds, seed_values)}
    assert trellis.log_partition_function >= np.logaddexp.reduce(list(distinct.values())) - 1e-9
    assert trellis.n_trees >= len(distinct)
    assert 1 <= trellis.n_trees <= double_factorial_trees(n)
    assert trellis.log10_sparsity_index <= 1e-12
    # one seed tree realises exactly itself
    single = ClusterFamily.from_trees(seeds[:1], n)
    one = SparseHierarchicalTrellis.from_model(single, model, beta).fit()
    assert one.n_trees == 1
    assert one.log_partition_function == pytest.approx(seed_values[0], abs=1e-9)
    assert one.map_log_potential == pytest.approx(seed_values[0], abs=1e-9)
    assert canonical_tree(one.map_tree) == canonical_tree(children_to_nested(seeds[0], n))
    assert np.allclose(one.cluster_marginals(), 1.0)


def test_map_children_are_a_valid_sklearn_tree():
    rng = np.random.default_rng(3)
    n = 40
    X = rng.normal(size=(n, 2))
    from scipy.spatial.distance import pdist, squareform
    model = DasguptaEnergy().fit(squareform(pdist(X)))
    seeds = [linkage(X, method=m)[:, :2].astype(np.int64) for m in ("single", "ward")]
    trellis = SparseHierarchicalTrellis.from_model(ClusterFamily.from_trees(seeds, n),
                                                   model).fit()
    children, distances = trellis.map_children, trellis.map_distances
    assert children.shape == (n - 1, 2) and np.all(np.diff(distances) >= 0)
    seen = set()
    for row, (a, b) in enumerate(children):
        assert a < n + row and b < n + row and a not in seen and b not in seen
        seen.update((a, b))
    assert trellis.log_potential(children) == pytest.approx(trellis.map_log_potential)
    assert trellis.tree_nested(trellis.map_edges) == trellis.map_tree
    # the same encoding as the estimator's
    from sklearn_trellis._core.trees import tree_to_children
    ref_children, ref_distances = tree_to_children(trellis.map_tree, n)
    np.testing.assert_array_equal(children, ref_children)
    np.testing.assert_array_equal(distances, ref_distances)


def test_verbose_reports_stages(capsys):
    family = ClusterFamily.powerset(4)
    SparseHierarchicalTrellis(family, split_function=lambda l, r: 0.0, verbose=1).fit()
    out = capsys.readouterr().out
    assert "15 vertices, 25 edges" in out and "log Z and MAP" in out


# -- counting, deep trees -----------------------------------------------------------------
def test_tree_count_beyond_int64_is_exact():
    rng = np.random.default_rng(1)
    n = 48
    # Many random trees over 6 groups of 8 items: groups and merges of groups are shared.
    trees = []
    for _ in range(40):
        order = rng.permutation(6)
        inner = [random_children(rng, 8) for _ in range(6)]
        top = random_children(rng, 6)
        children, node_of = [], {}
        for g in range(6):
            base = 8 * order[g]
            ids = list(range(base, base + 8))
            for a, b in inner[g]:
                ids.append(n + len(children))
                children.append([ids[a], ids[b]])
            node_of[g] = ids[-1]
        ids = [node_of[g] for g in range(6)]
        for a, b in top:
            ids.append(n + len(children))
            children.append([ids[a], ids[b]])
        trees.append(np.array(children))
    family = ClusterFamily.from_trees(trees, n)
    trellis = SparseHierarchicalTrellis(family, split_function=lambda l, r: 0.0).fit()
    assert trellis.n_trees > 2 ** 63
    assert trellis.n_trees == family_tree_counts(family_members(family))[family.root]
    assert trellis.log_partition_function == pytest.approx(math.log(trellis.n_trees))
    assert trellis.log10_sparsity_index == pytest.approx(
        math.log10(trellis.n_trees) - log_double_factorial_trees(n) / math.log(10))


def test_deep_chain_trees_need_no_recursion():
    n = 3000
    chain = np.array([[0, 1]] + [[n + k - 1, k + 1] for k in range(1, n - 1)])
    reverse = np.array([[n - 2, n - 1]] + [[n + k - 1, n - 2 - k] for k in range(1, n - 1)])
    family = ClusterFamily.from_trees([chain, reverse], n)
    rng = np.random.default_rng(0)
    model = GinkgoEnergy(likelihood="ginkgo")   # finite on these heavy leaves
    values = np.abs(rng.normal(size=(n, 4))) + np.array([50.0, 0, 0, 0])
    model.fit(values)
    trellis = SparseHierarchicalTrellis.from_model(family, model).fit()
    assert trellis.n_edges >= 2 * (n - 1)
    children = trellis.map_children
    assert children.shape == (n - 1, 2)
    assert trellis.log_potential(children) == pytest.approx(trellis.map_log_potential)
    assert trellis.sample_edges(3, 0).shape == (3, n - 1)
    assert np.all(trellis.cluster_marginals() <= 1.0)


# -- perturb-and-MAP ------------------------------------------------------------------------
def test_perturb_and_map():
    rng = np.random.default_rng(4)
    n = 6
    model = table_energy(random_table(rng, n, forbid=0.2), n)
    trellis = sparse_from_exact_inputs(ClusterFamily.powerset(n), model)
    trees, marginals = trellis.perturb_and_map(5, scale=0.0, random_state=0)
    assert all(np.array_equal(row, trellis.map_edges) for row in trees)
    map_vertices = trellis.vertex_frequencies(trellis.map_edges[None])
    np.testing.assert_array_equal(marginals, map_vertices)
    a, pa = trellis.perturb_and_map(200, scale=1.0, random_state=3)
    b, pb = trellis.perturb_and_map(200, scale=1.0, random_state=3)
    np.testing.assert_array_equal(a, b)
    assert len({tuple(r) for r in a.tolist()}) > 1
    assert np.all(trellis.edge_log_potential[a] > -np.inf)  # forbidden splits stay out
    assert pa[trellis.family.root] == 1.0 and np.all(pa[:n] == 1.0)
    with pytest.raises(ValueError, match="scale"):
        trellis.perturb_and_map(3, scale=-1.0)


# -- errors ---------------------------------------------------------------------------------
def test_errors():
    family = ClusterFamily.powerset(4)
    model = DasguptaEnergy(similarity="precomputed").fit(np.ones((4, 4)) - np.eye(4))
    split, params, stats = model.family_kernel_inputs(family)
    with pytest.raises(ValueError, match="shape"):
        SparseHierarchicalTrellis(family, split, params, stats[:, :3])
    with pytest.raises(TypeError, match="split_function"):
        SparseHierarchicalTrellis(family)
    with pytest.raises(TypeError, match="ClusterFamily"):
        SparseHierarchicalTrellis(None, split, params, stats)
    with pytest.raises(ValueError, match="max_edges"):
        SparseHierarchicalTrellis(family, split, params, stats, max_edges=5).fit()
    with pytest.raises(ValueError, match="items"):
        model.family_kernel_inputs(ClusterFamily.powerset(3))
    with pytest.raises(NotImplementedError):
        table_energy(random_table(np.random.default_rng(0), 3), 3).family_kernel_inputs(
            ClusterFamily.powerset(3))
    bad = SparseHierarchicalTrellis(family, split_function=lambda l, r: np.nan)
    with pytest.raises(ValueError, match="nan"):
        bad.fit()
    forbid_all = SparseHierarchicalTrellis(family, split_function=lambda l, r: -np.inf)
    with pytest.raises(ValueError, match="log Z = -inf"):
        forbid_all.fit()
    trellis = SparseHierarchicalTrellis(ClusterFamily.from_trees([((0, 1), (2, 3))], 4),
                                        split, params,
                                        model.family_kernel_inputs(
                                            ClusterFamily.from_trees([((0, 1), (2, 3))], 4)
                                        ).stats).fit()
    with pytest.raises(ValueError, match="not in the family"):
        trellis.log_potential(((0, 2), (1, 3)))
    assert trellis.cluster_marginal([0, 2]) == 0.0


def test_marginals_and_samples_agree_on_a_larger_linkage_family():
    rng = np.random.default_rng(8)
    n = 150
    X = rng.normal(size=(n, 4))
    from scipy.spatial.distance import pdist, squareform
    model = DasguptaEnergy().fit(squareform(pdist(X)))
    seeds = [linkage(X, method=m)[:, :2].astype(np.int64)
             for m in ("single", "average", "complete", "ward")]
    family = ClusterFamily.from_trees(seeds, n)
    # a small beta spreads the distribution over the realised trees
    trellis = SparseHierarchicalTrellis.from_model(family, model, beta=2e-4).fit()
    marginals = trellis.cluster_marginals()
    internal = family.sizes > 1
    # every tree has N - 1 internal nodes, the root always among them
    assert marginals[internal].sum() == pytest.approx(n - 1, rel=1e-9)
    assert marginals[family.root] == pytest.approx(1.0)
    assert np.any((marginals > 0.05) & (marginals < 0.95))
    frequencies = trellis.vertex_frequencies(trellis.sample_edges(4000, random_state=0))
    assert np.max(np.abs(frequencies - marginals)) < 0.04


@pytest.mark.parametrize("seed", range(4))
def test_window_families_find_every_window_split(seed):
    """Windows add all unions of k tree nodes; discovery finds every split of them."""
    from sklearn_trellis.engines.sparse.seeds import tree_windows
    rng = np.random.default_rng(40 + seed)
    n = 30
    X = rng.normal(size=(n, 3))
    trees = [linkage(X, m)[:, :2].astype(np.int64) for m in ("average", "single")]
    windows = tree_windows(trees[0], n, size=3 + seed)
    family = ClusterFamily.from_trees(trees, n, windows=windows)
    trellis = SparseHierarchicalTrellis(
        family, split_function=lambda left, right: 0.0, verify_edges=True).fit()
    got = set(zip(trellis.edge_parent.tolist(), trellis.edge_left.tolist(),
                  trellis.edge_right.tolist()))
    expected = family_split_edges(family_members(family))
    assert got <= expected
    # Only splits mixing part of a window with clusters outside it may be left out.
    windowed = family.vertex_window
    for s, left, right in expected - got:
        assert windowed[left] >= 0 or windowed[right] >= 0
    # every split of a window union into unions of the same window is found
    for s, left, right in expected:
        if windowed[s] >= 0 and windowed[left] == windowed[s] == windowed[right]:
            assert (s, left, right) in got
    # the window's own root is a union of its pieces: a window of k pieces adds
    # 2**k - k - 1 unions (some may coincide with tree nodes)
    assert family.n_vertices <= 2 * n - 1 + 2 * n - 1 + sum(
        2 ** len(w) - len(w) - 1 for w in windows)


@pytest.mark.parametrize("seed", range(3))
def test_window_root_ranges_find_the_same_edges(seed, monkeypatch):
    """Bounding the tree walks of window unions by their window's root changes no edge."""
    from sklearn_trellis.engines.sparse import sparse_hierarchical
    from sklearn_trellis.engines.sparse.seeds import tree_windows
    rng = np.random.default_rng(70 + seed)
    n = 80
    X = rng.normal(size=(n, 3))
    trees = [linkage(X, m)[:, :2].astype(np.int64) for m in ("single", "average", "ward")]
    windows = tree_windows(trees[1], n, size=4 + seed)
    family = ClusterFamily.from_trees(trees, n, windows=windows)
    home, ranges = sparse_hierarchical.discovery_ranges(family)
    assert np.any(ranges != np.arange(family.n_vertices))    # some walks are bounded
    fitted = SparseHierarchicalTrellis(family, split_function=lambda a, b: -float(len(a)))
    fitted.fit()
    original = sparse_hierarchical.discovery_ranges
    monkeypatch.setattr(sparse_hierarchical, "discovery_ranges",
                        lambda f: original(f, window_roots=False))
    unbounded = SparseHierarchicalTrellis(family, split_function=lambda a, b: -float(len(a)))
    unbounded.fit()
    for name in ("edge_ptr", "edge_parent", "edge_left", "edge_right"):
        np.testing.assert_array_equal(getattr(fitted, name), getattr(unbounded, name))
    assert fitted.log_partition_function == unbounded.log_partition_function


def test_edge_discovery_is_the_same_on_any_number_of_threads(monkeypatch):
    """Threaded discovery (small chunks, buffers regrown many times) finds the same
    edges in the same order as the serial pass, so the same trees and ties."""

    from sklearn_trellis._core import parallel
    from sklearn_trellis.engines.sparse import _sparse_hier_kernels
    from sklearn_trellis.engines.sparse.seeds import tree_windows
    rng = np.random.default_rng(9)
    n = 150
    X = rng.normal(size=(n, 3))
    trees = [linkage(X, m)[:, :2].astype(np.int64) for m in ("single", "average", "ward")]
    family = ClusterFamily.from_trees(trees, n, windows=tree_windows(trees[1], n, size=5))

    def fitted(**options):
        return SparseHierarchicalTrellis(family, split_function=lambda a, b: -float(len(a)),
                                         verify_edges=True, **options).fit()

    serial = fitted()
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(_sparse_hier_kernels, "SLOT_CHUNK", 7)
    monkeypatch.setattr(_sparse_hier_kernels, "_ROWS_PER_VERTEX", 0)
    with numba_threads(2):
        threaded = fitted()
        assert fitted(max_edges=serial.n_edges).n_edges == serial.n_edges
        with pytest.raises(ValueError, match="max_edges"):
            fitted(max_edges=serial.n_edges - 1)
    assert serial.n_edges > 3 * n
    for name in ("edge_ptr", "edge_parent", "edge_left", "edge_right"):
        np.testing.assert_array_equal(getattr(serial, name), getattr(threaded, name))
    np.testing.assert_array_equal(serial.map_children, threaded.map_children)
    assert serial.log_partition_function == threaded.log_partition_function


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("rows_per_vertex", [4, 0])      # 0: the buffers grow
def test_interpreted_edge_discovery_is_the_kernels(seed, rows_per_vertex, monkeypatch):
    from sklearn_trellis._core import interpreted
    from sklearn_trellis.engines.sparse import _sparse_hier_kernels
    from sklearn_trellis.engines.sparse.seeds import tree_windows
    rng = np.random.default_rng(90 + seed)
    n = 30
    X = rng.normal(size=(n, 3))
    trees = [linkage(X, m)[:, :2].astype(np.int64) for m in ("single", "average")]
    extras = [rng.choice(n, size=rng.integers(2, n), replace=False).tolist() for _ in range(4)]
    family = ClusterFamily.from_trees(trees + [random_children(rng, n)], n,
                                      extra_clusters=extras,
                                      windows=tree_windows(trees[1], n, size=4 + seed))
    monkeypatch.setattr(_sparse_hier_kernels, "_ROWS_PER_VERTEX", rows_per_vertex)
    monkeypatch.setattr(interpreted, "INTERPRETED_BUDGET_SECONDS", np.inf)

    def fitted(work):
        monkeypatch.setattr(_sparse_hier_kernels, "INTERPRETED_DISCOVERY_WORK", work)
        spent = interpreted._spent
        trellis = SparseHierarchicalTrellis(family, split_function=lambda a, b: -float(len(a)),
                                            verify_edges=True).fit()
        assert (interpreted._spent > spent) == (work > 0)
        return trellis

    compiled, ours = fitted(0), fitted(10 ** 9)
    assert compiled.n_edges > 3 * n
    for name in ("lowest", "edge_ptr", "edge_parent", "edge_left", "edge_right"):
        got, want = getattr(ours, name), getattr(compiled, name)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ours.map_children, compiled.map_children)
    assert ours.log_partition_function == compiled.log_partition_function
