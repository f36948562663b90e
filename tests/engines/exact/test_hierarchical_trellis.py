"""The exact hierarchical trellis against enumeration of all binary trees."""

import itertools

import numpy as np
import pytest

from oracles import (allowed_tree_count, binary_trees, canonical_tree,
                         cluster_node_probabilities, cluster_node_probability,
                         random_split_table,
                         hierarchy_summaries, tree_log_potential, tree_sibling_pairs)
from sklearn_trellis.models import CallableEnergy, DasguptaEnergy, HCCEnergy
from sklearn_trellis.engines import ExactHierarchicalTrellis
from oracles import ginkgo_energy, small_ginkgo_jets
from sklearn_trellis.engines.exact.hierarchical import _crt, double_factorial_trees


def table_energy(table):
    return CallableEnergy(lambda X, left, right: table[tuple(left), tuple(right)])


def engine(model, beta=1.0, **kwargs):
    split, params, stats = model.kernel_inputs(beta)
    return ExactHierarchicalTrellis(split, params, stats, **kwargs).fit()


def enumerate_model(n, split_value):
    trees = binary_trees(tuple(range(n)))
    log_phi = [tree_log_potential(t, split_value) for t in trees]
    return trees, hierarchy_summaries(trees, log_phi)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("forbid", [0.0, 0.4])
@pytest.mark.parametrize("layered", [False, True])
def test_matches_enumeration(n, forbid, layered):
    rng = np.random.default_rng(10 * n + int(10 * forbid))
    table = random_split_table(rng, n, forbid=forbid)
    beta = 0.7
    model = table_energy(table).fit(np.zeros((n, 1)))
    trellis = engine(model, beta, layered=layered)
    trees, ref = enumerate_model(n, lambda l, r: beta * table[l, r])
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(ref["map_log_phi"], abs=1e-9)
    assert canonical_tree(trellis.map_tree) == ref["map_tree"]
    assert trellis.n_trees == ref["n_allowed"]
    assert isinstance(trellis.n_trees, int)
    assert trellis.log_potential(trellis.map_tree) == pytest.approx(ref["map_log_phi"], abs=1e-9)
    marginals = trellis.cluster_marginals()
    subsets = [s for k in range(1, n + 1) for s in itertools.combinations(range(n), k)]
    node_probs = cluster_node_probabilities(trees, ref["probs"])
    for subset in subsets:
        expected = node_probs.get(subset, 0.0)
        mask = sum(1 << i for i in subset)
        assert marginals[mask] == pytest.approx(expected, abs=1e-9)
        assert trellis.cluster_marginal(list(subset)) == pytest.approx(expected, abs=1e-9)


def test_subtree_marginal_matches_enumeration():
    rng = np.random.default_rng(3)
    n = 6
    table = random_split_table(rng, n, scale=1.0, forbid=0.2)
    trellis = engine(table_energy(table).fit(np.zeros((n, 1))))
    trees, ref = enumerate_model(n, lambda l, r: table[l, r])
    for subtree in [((0, 2), 4), (1, (3, 5)), ((0, 1), (2, 3)), (2, 5)]:
        pairs = set(tree_sibling_pairs(subtree))
        expected = sum(p for t, p in zip(trees, ref["probs"])
                       if pairs <= set(tree_sibling_pairs(t)))
        assert trellis.subtree_marginal(subtree) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("forbid", [0.0, 0.3])
def test_sampling_distribution_matches_exact(forbid):
    rng = np.random.default_rng(11)
    n = 5
    table = random_split_table(rng, n, scale=0.8, forbid=forbid)
    trellis = engine(table_energy(table).fit(np.zeros((n, 1))))
    trees, ref = enumerate_model(n, lambda l, r: table[l, r])
    n_draws = 30000
    draws = trellis.sample(n_draws, np.random.RandomState(0))
    index = {t: i for i, t in enumerate(trees)}
    counts = np.bincount([index[canonical_tree(t)] for t in draws], minlength=len(trees))
    assert counts[ref["probs"] == 0].sum() == 0  # forbidden trees are never drawn
    # every tree's frequency within 4.5 binomial standard deviations
    sd = np.sqrt(n_draws * ref["probs"] * (1 - ref["probs"])) + 1e-12
    assert np.all(np.abs(counts - n_draws * ref["probs"]) <= 4.5 * sd + 1)
    # and a chi-square goodness of fit on the trees with enough mass
    from scipy import stats
    keep = ref["probs"] * n_draws >= 5
    expected = ref["probs"][keep] * n_draws
    observed = counts[keep]
    rest_expected = n_draws - expected.sum()
    chi2 = ((observed - expected) ** 2 / expected).sum()
    dof = keep.sum() - 1
    if rest_expected >= 5:
        chi2 += ((n_draws - observed.sum()) - rest_expected) ** 2 / rest_expected
        dof += 1
    assert stats.chi2.sf(chi2, dof) > 1e-4
    # the same seed gives the same draws
    again = trellis.sample(50, np.random.RandomState(0))
    assert again == draws[:50]


def dasgupta_cost(tree, w):
    return sum((len(l) + len(r)) * w[np.ix_(l, r)].sum() for l, r in tree_sibling_pairs(tree))


def hcc_energy(tree, w):
    total = 0.0
    for l, r in tree_sibling_pairs(tree):
        total += np.clip(w[np.ix_(l, r)], 0, None).sum()
        for side in (l, r):
            block = w[np.ix_(side, side)]
            total += np.clip(-np.triu(block, 1), 0, None).sum()
    return total


@pytest.mark.parametrize("layered", [False, True])
@pytest.mark.parametrize("energy", ["dasgupta", "hcc"])
def test_pairwise_energies_match_their_definition(energy, layered):
    rng = np.random.default_rng(5)
    n = 6
    X = rng.normal(size=(n, 2))
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    if energy == "dasgupta":
        model = DasguptaEnergy(scale="median").fit(d)
        w = np.exp(-d / np.median(d[~np.eye(n, dtype=bool)]))
        np.fill_diagonal(w, 0)
        def cost(t): return -dasgupta_cost(t, w)
    else:
        model = HCCEnergy().fit(d)
        s = np.exp(-d / np.median(d[~np.eye(n, dtype=bool)]))
        np.fill_diagonal(s, 0)
        w = s - s.sum() / (n * (n - 1))
        np.fill_diagonal(w, 0)
        def cost(t): return -hcc_energy(t, w)
    beta = 1.3
    trees = binary_trees(tuple(range(n)))
    log_phi = [beta * cost(t) for t in trees]
    ref = hierarchy_summaries(trees, log_phi)
    split, params, stats = model.kernel_inputs(beta)
    trellis = ExactHierarchicalTrellis(split, params, stats, separable=model.separable_form(beta),
                                       layered=layered).fit()
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(ref["map_log_phi"], abs=1e-9)
    # HCC has exact ties (any tree of a positive clique costs the same): compare values
    assert beta * cost(trellis.map_tree) == pytest.approx(ref["map_log_phi"], abs=1e-9)
    if energy == "dasgupta":
        assert canonical_tree(trellis.map_tree) == ref["map_tree"]
    assert trellis.n_trees == double_factorial_trees(n)
    for t in trees[::37]:
        assert model.log_potential(t, beta) == pytest.approx(beta * cost(t), abs=1e-9)
        assert trellis.log_potential(t) == pytest.approx(beta * cost(t), abs=1e-9)


def test_ginkgo_reference_values():
    for jet in small_ginkgo_jets():
        model = ginkgo_energy(jet).fit(np.array(jet["leaves"]))
        for layered in (False, True):
            trellis = engine(model, layered=layered)
            assert trellis.log_partition_function == pytest.approx(jet["ref_logZ"], abs=1e-9)
            assert trellis.map_log_potential == pytest.approx(jet["ref_map_loglik"], abs=1e-9)
            assert trellis.n_trees == jet["ref_n_trees_allowed"]


def test_ginkgo_matches_enumeration():
    jet = small_ginkgo_jets()[-1]
    model = ginkgo_energy(jet).fit(np.array(jet["leaves"]))
    n = model.n_items_
    trees, ref = enumerate_model(
        n, lambda l, r: model.split_log_potential(np.array(l), np.array(r)))
    trellis = engine(model)
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
    assert trellis.n_trees == ref["n_allowed"]
    marginals = trellis.cluster_marginals()
    for subset in [(0, 1), (2, 3, 4), (0, 5), (1, 2, 3, 4, 5)]:
        mask = sum(1 << i for i in subset)
        assert marginals[mask] == pytest.approx(
            cluster_node_probability(trees, ref["probs"], subset), abs=1e-9)


def test_tree_count_is_exact_beyond_one_prime():
    n = 12  # 21!! * ... = 3.2e11 trees: two primes and the Chinese remainder theorem
    def rule(left, right):
        return not (sum(left) % 5 == 0 and len(right) > 1)

    model = CallableEnergy(
        lambda X, left, right: 0.0 if rule(left, right) else -np.inf).fit(np.zeros((n, 1)))
    trellis = engine(model)

    def allowed(lmask, rmask):
        return rule([i for i in range(n) if lmask >> i & 1],
                    [i for i in range(n) if rmask >> i & 1])

    expected = allowed_tree_count(n, allowed)
    assert 2 ** 31 < expected < double_factorial_trees(n)
    assert trellis.n_trees == expected  # int64 counts in the main pass
    assert trellis._count_allowed_trees() == expected  # int64 count pass
    assert trellis._count_allowed_trees(use_primes=True) == expected  # primes + CRT
    # with every tree of potential 1, Z is the number of allowed trees
    assert trellis.log_partition_function == pytest.approx(np.log(float(expected)), rel=1e-12)


def test_crt_reconstructs_big_integers():
    primes = [2147483647, 2147483629, 2147483587]
    value = 3 ** 80 % (primes[0] * primes[1] * primes[2])
    assert _crt([value % p for p in primes], primes) == value


def test_double_factorial():
    assert [double_factorial_trees(n) for n in range(1, 8)] == [1, 1, 3, 15, 105, 945, 10395]
    assert double_factorial_trees(25) == int(np.prod(np.arange(1, 48, 2, dtype=object)))


def test_huge_potentials_do_not_overflow():
    rng = np.random.default_rng(2)
    n = 6
    table = random_split_table(rng, n, scale=3e4)
    trellis = engine(table_energy(table).fit(np.zeros((n, 1))))
    trees, ref = enumerate_model(n, lambda l, r: table[l, r])
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], rel=1e-12)
    assert abs(trellis.cluster_marginals()[3] - cluster_node_probability(
        trees, ref["probs"], (0, 1))) < 1e-9


def test_errors():
    n = 4
    bad = CallableEnergy(lambda X, left, right: np.nan)
    with pytest.raises(ValueError, match="finite or -inf"):
        engine(bad.fit(np.zeros((n, 1))))
    nothing = CallableEnergy(lambda X, left, right: -np.inf).fit(np.zeros((n, 1)))
    with pytest.raises(ValueError, match="forbids all"):
        engine(nothing)
    with pytest.raises(ValueError, match="max_items"):
        CallableEnergy(lambda X, left, right: 0.0, max_items=5).fit(
            np.zeros((6, 1))).kernel_inputs()
    with pytest.raises(ValueError, match="above the exact limit"):
        ExactHierarchicalTrellis(0, np.ones(1), np.zeros((1, 1 << 10)), max_items=9)
