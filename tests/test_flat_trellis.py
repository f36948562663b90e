"""The exact flat trellis engine against enumeration of all set partitions."""

import numpy as np
import pytest
from scipy import stats

from brute_force import (canonical, cluster_probability, flat_summaries,
                         random_subsets, set_partitions, together_probability)
from sklearn_trellis.trellis import ExactFlatTrellis
from sklearn_trellis.trellis._subsets import mask_of, sum_exp_shifted


def table_log_phi(partitions, table):
    """log phi of each partition for an arbitrary cluster log-potential table."""
    out = np.zeros(len(partitions))
    for t, row in enumerate(partitions):
        for label in np.unique(row):
            out[t] += table[mask_of(np.flatnonzero(row == label))]
    return out


def random_table(rng, n, scale=3.0, forbid=0.0):
    table = scale * rng.standard_normal(1 << n)
    table[0] = 0.0
    if forbid:
        # forbid some clusters of size >= 2; singletons stay allowed
        sizes = np.array([bin(m).count("1") for m in range(1 << n)])
        drop = (rng.random(1 << n) < forbid) & (sizes >= 2)
        table[drop] = -np.inf
    return table


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8])
@pytest.mark.parametrize("forbid", [0.0, 0.3])
def test_matches_enumeration(n, forbid):
    rng = np.random.default_rng(100 * n + int(10 * forbid))
    table = random_table(rng, n, forbid=forbid)
    parts = set_partitions(n)
    log_phi = table_log_phi(parts, table)
    ref = flat_summaries(parts, log_phi)
    trellis = ExactFlatTrellis(table).fit()
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(ref["map_log_phi"], abs=1e-9)
    assert canonical(trellis.map_labels) == tuple(parts[ref["map_index"]])
    np.testing.assert_allclose(trellis.pairwise_marginals(), ref["pairwise"], atol=1e-9)
    np.testing.assert_allclose(trellis.n_clusters_distribution(), ref["k_dist"], atol=1e-9)
    for subset in random_subsets(rng, n, 6):
        assert trellis.cluster_marginal(subset) == pytest.approx(
            cluster_probability(parts, ref["probs"], subset), abs=1e-9)
        assert trellis.together_marginal(subset) == pytest.approx(
            together_probability(parts, ref["probs"], subset), abs=1e-9)


def test_huge_potentials_do_not_overflow():
    rng = np.random.default_rng(1)
    n = 7
    table = random_table(rng, n, scale=5e4)
    parts = set_partitions(n)
    ref = flat_summaries(parts, table_log_phi(parts, table))
    trellis = ExactFlatTrellis(table).fit()
    assert np.isfinite(trellis.log_partition_function)
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], rel=1e-13)
    np.testing.assert_allclose(trellis.pairwise_marginals(), ref["pairwise"], atol=1e-9)


def test_uniform_table_counts_bell_numbers():
    for n, bell in [(4, 15), (6, 203), (10, 115975)]:
        trellis = ExactFlatTrellis(np.zeros(1 << n)).fit()
        assert np.exp(trellis.log_partition_function) == pytest.approx(bell, rel=1e-12)


def test_sampling_distribution_matches_exact():
    rng = np.random.default_rng(7)
    n = 5
    table = random_table(rng, n, scale=1.0)
    parts = set_partitions(n)
    ref = flat_summaries(parts, table_log_phi(parts, table))
    trellis = ExactFlatTrellis(table).fit()
    draws = trellis.sample(40000, np.random.RandomState(0))
    index = {tuple(p): i for i, p in enumerate(parts)}
    counts = np.bincount([index[canonical(d)] for d in draws], minlength=len(parts))
    expected = ref["probs"] * len(draws)
    keep = expected > 5
    chi2 = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    p_value = stats.chi2.sf(chi2, keep.sum() - 1)
    assert p_value > 1e-4, p_value
    # draws are label vectors in order of first appearance
    assert all(canonical(d) == tuple(d) for d in draws[:100])


def test_sampling_is_reproducible():
    table = random_table(np.random.default_rng(3), 6)
    trellis = ExactFlatTrellis(table).fit()
    a = trellis.sample(50, np.random.RandomState(5))
    b = trellis.sample(50, np.random.RandomState(5))
    np.testing.assert_array_equal(a, b)


def test_forbidden_everything_raises():
    table = np.full(1 << 3, -np.inf)
    table[0] = 0.0
    with pytest.raises(ValueError, match="forbids all"):
        ExactFlatTrellis(table).fit()


@pytest.mark.parametrize("bad", [np.zeros(6), np.zeros((4, 4)), np.array([0.0]),
                                 np.array([0, np.nan, 0, 0.0])])
def test_bad_tables(bad):
    with pytest.raises(ValueError):
        ExactFlatTrellis(bad)


def test_refuses_above_limit_before_allocating():
    with pytest.raises(ValueError, match=r"memory.*CPU time"):
        ExactFlatTrellis(np.zeros(1 << 12), max_items=10)


def test_polynomial_exp_accuracy():
    x = np.linspace(-700, 0, 200001)
    values = x.copy()
    scratch = np.empty(x.size, np.int64)
    # one term at a time to check each value
    approx = np.array([sum_exp_shifted(np.array([v]), np.empty(1, np.int64), 1, 0.0) for v in x[::1000]])
    np.testing.assert_allclose(approx, np.exp(x[::1000]), rtol=4e-16)
    total = sum_exp_shifted(values, scratch, x.size, 0.0)
    assert total == pytest.approx(np.exp(x).sum(), rel=1e-14)
