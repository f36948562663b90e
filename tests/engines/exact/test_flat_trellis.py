"""The exact flat trellis engine against enumeration of all set partitions."""

import numpy as np
import pytest
from scipy import stats

from oracles import (canonical, cluster_probability, flat_log_z_table, flat_summaries,
                     random_subsets, set_partitions, subset_convolution, together_probability)
from sklearn_trellis.engines import ExactFlatTrellis
from sklearn_trellis._core.subsets import mask_of, sum_exp_shifted


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


# -- the blocked kernels and the linear / log-space layers ---------------------

from sklearn_trellis.engines.exact import _block_codegen, _flat_block_kernels  # noqa: E402
from sklearn_trellis.engines.exact import _flat_passes as passes  # noqa: E402
from sklearn_trellis.engines.exact import flat  # noqa: E402


def test_generated_kernels_are_up_to_date():
    with open(_block_codegen.target_path()) as handle:
        assert handle.read() == _block_codegen.generate()


@pytest.mark.parametrize("n_bits", [4, 5, 7])
def test_block_convolutions_match_naive(n_bits):
    rng = np.random.default_rng(n_bits)
    a, b = rng.random(1 << n_bits), rng.random(1 << n_bits)
    n_blocks = 1 << (n_bits - _block_codegen.BLOCK_BITS)
    expected = subset_convolution(a, b, n_bits, np.multiply)
    for run in (lambda out: _flat_block_kernels.conv_sum_blocks(a, b, out, n_bits, 0),
                lambda out: _flat_block_kernels.conv_sum_range(a, b, out, 0, n_blocks, 0)):
        out = np.full(1 << n_bits, np.nan)
        run(out)
        np.testing.assert_allclose(out, expected, rtol=1e-14)
    log_a, log_b = 5 * rng.standard_normal((2, 1 << n_bits))
    log_a[rng.random(1 << n_bits) < 0.3] = -np.inf
    log_b[rng.random(1 << n_bits) < 0.3] = -np.inf
    log_a[0] = -np.inf  # so out[0] = -inf
    expected = subset_convolution(log_a, log_b, n_bits, np.add)
    assert np.isneginf(expected).any() and np.isfinite(expected).any()
    for run in (lambda out: _flat_block_kernels.conv_max_blocks(log_a, log_b, out, n_bits),
                lambda out: _flat_block_kernels.conv_max_range(log_a, log_b, out, 0,
                                                               n_blocks)):
        out = np.full(1 << n_bits, np.nan)
        run(out)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("n_bits", [0, 4, 12, 21])
@pytest.mark.parametrize("range_a", [0.0, 1.0, 300.0, 649.0, 900.0, 1300.0, 2000.0])
@pytest.mark.parametrize("range_b", [0.0, 5.0, 400.0, 1000.0])
def test_linear_shifts_keep_products_representable(n_bits, range_a, range_b):
    shifts = passes.linear_shifts(range_a, range_b, n_bits)
    spread = range_a + range_b
    limit = passes.LINEAR_FLOOR + passes.LINEAR_CEIL - n_bits * np.log(2)
    assert (shifts is None) == (spread > limit)
    if shifts is None:
        return
    shift_a, shift_b = shifts
    for shift, width in ((shift_a, range_a), (shift_b, range_b)):
        # scaled weights exp(shift - width) .. exp(shift) are normal doubles
        assert -passes.LINEAR_EXP_LIMIT <= shift - width and shift <= passes.LINEAR_EXP_LIMIT
    total = shift_a + shift_b
    assert total - spread >= -passes.LINEAR_FLOOR - 1e-9       # smallest product
    assert total + n_bits * np.log(2) <= passes.LINEAR_CEIL + 1e-9  # largest sum
    if spread <= passes.LINEAR_FLOOR:
        assert shift_a == shift_b == 0.0  # no shift: exponent arguments stay small


@pytest.fixture
def blocked_layers(monkeypatch):
    """Every layer from ``BLOCK_BITS`` bits runs the blocked kernels (linear ``log Z``).

    By default only layers of ``BLOCKED_MIN_BITS`` (12) bits or more do, so the
    small tables of these tests would never reach them.
    """
    monkeypatch.setattr(passes, "BLOCKED_MIN_BITS", _block_codegen.BLOCK_BITS)


def fit_both_ways(table):
    """The same table with linear layers allowed (default) and forced into log space."""
    linear = ExactFlatTrellis(table).fit()
    logspace = ExactFlatTrellis(table)
    logspace._linear = False
    logspace.fit()
    return linear, logspace


def assert_same_results(first, second, atol=1e-12):
    finite = np.isfinite(first.log_z)
    np.testing.assert_array_equal(finite, np.isfinite(second.log_z))
    np.testing.assert_allclose(first.log_z[finite], second.log_z[finite], rtol=1e-13,
                               atol=atol)
    assert first.map_log_potential == second.map_log_potential
    np.testing.assert_array_equal(first.map_labels, second.map_labels)
    np.testing.assert_allclose(first.pairwise_marginals(), second.pairwise_marginals(),
                               atol=atol)
    np.testing.assert_allclose(first.n_clusters_distribution(),
                               second.n_clusters_distribution(), atol=atol)


@pytest.mark.parametrize("forbid", [0.0, 0.4])
def test_linear_and_log_space_layers_agree(forbid, blocked_layers):
    table = random_table(np.random.default_rng(11), 10, forbid=forbid)
    linear, logspace = fit_both_ways(table)
    assert linear._linear_layers[_block_codegen.BLOCK_BITS:].all()
    assert not logspace._linear_layers.any()
    assert_same_results(linear, logspace)
    assert linear._n_clusters_linear_layers.all()
    assert not logspace._n_clusters_linear_layers.any()


def straddling_table(rng, n, scales):
    """Cluster log-potentials whose spread depends on the cluster's highest item."""
    table = np.zeros(1 << n)
    for highest, scale in enumerate(scales):
        low = 1 << highest
        table[low:2 * low] = scale * rng.random(low)
    return table


def test_layers_straddling_the_linear_threshold_match_enumeration(blocked_layers):
    rng = np.random.default_rng(5)
    n = 8
    # layer 4: small range (linear, no shift); 5: range ~900 (linear, shifted);
    # 6: range ~2000 (log space); 7: inherits the range of layer 6 (log space)
    table = straddling_table(rng, n, [3, 3, 3, 3, 3, 900, 2000, 3])
    table[rng.random(1 << n) < 0.2] = -np.inf
    table[[1 << i for i in range(n)]] = 0.0  # singletons stay allowed
    parts = set_partitions(n)
    ref = flat_summaries(parts, table_log_phi(parts, table))
    linear, logspace = fit_both_ways(table)
    np.testing.assert_array_equal(linear._linear_layers, [0, 0, 0, 0, 1, 1, 0, 0])
    a, b = table[32:64], linear.log_z[:32]
    spread = np.ptp(a[np.isfinite(a)]) + np.ptp(b[np.isfinite(b)])
    assert sum(passes.linear_shifts(np.ptp(a[np.isfinite(a)]), np.ptp(b[np.isfinite(b)]),
                                  5)) > 0 and spread > passes.LINEAR_FLOOR  # layer 5 shifted
    for trellis in (linear, logspace):
        assert trellis.log_partition_function == pytest.approx(ref["log_z"], rel=1e-13)
        assert trellis.map_log_potential == pytest.approx(ref["map_log_phi"], rel=1e-13)
        np.testing.assert_allclose(trellis.pairwise_marginals(), ref["pairwise"], atol=1e-9)
        np.testing.assert_allclose(trellis.n_clusters_distribution(), ref["k_dist"],
                                   atol=1e-9)
    assert_same_results(linear, logspace, atol=1e-9)
    # the number-of-clusters pass keeps a layer linear only below LINEAR_CEIL
    np.testing.assert_array_equal(linear._n_clusters_linear_layers, [1] * 5 + [0] * 3)


def test_forbidden_singletons_give_minus_infinity_subsets(blocked_layers):
    rng = np.random.default_rng(9)
    n = 8
    table = random_table(rng, n, forbid=0.3)
    table[[1 << 0, 1 << 3, 1 << 6]] = -np.inf  # these items can never be alone
    parts = set_partitions(n)
    ref = flat_summaries(parts, table_log_phi(parts, table))
    linear, logspace = fit_both_ways(table)
    assert np.isneginf(linear.log_z[1 << 3])
    for trellis in (linear, logspace):
        assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
        assert canonical(trellis.map_labels) == tuple(parts[ref["map_index"]])
        np.testing.assert_allclose(trellis.pairwise_marginals(), ref["pairwise"], atol=1e-9)
        np.testing.assert_allclose(trellis.n_clusters_distribution(), ref["k_dist"],
                                   atol=1e-9)


@pytest.mark.parametrize("forbid", [0.0, 0.4])
def test_small_layers_run_the_plain_kernels_with_the_blocked_kernels_results(
        forbid, monkeypatch):
    # Below BLOCKED_MIN_BITS the layers run the one-loop kernels in log space; the
    # blocked (linear) kernels give the same results to rounding, the same MAP exactly.
    table = random_table(np.random.default_rng(12), 9, forbid=forbid)
    plain = ExactFlatTrellis(table).fit()
    assert not plain._linear_layers.any()
    monkeypatch.setattr(passes, "BLOCKED_MIN_BITS", _block_codegen.BLOCK_BITS)
    blocked = ExactFlatTrellis(table).fit()
    assert blocked._linear_layers[_block_codegen.BLOCK_BITS:].all()
    assert_same_results(plain, blocked)
    parts = set_partitions(9)
    ref = flat_summaries(parts, table_log_phi(parts, table))
    assert plain.log_partition_function == pytest.approx(ref["log_z"], rel=1e-13)


def test_parallel_kernels_match_serial(monkeypatch, blocked_layers):
    table = random_table(np.random.default_rng(4), 9, forbid=0.2)
    serial = fit_both_ways(table)
    monkeypatch.setattr(passes, "PARALLEL_MIN_BITS", 5)
    monkeypatch.setattr(passes, "PARALLEL_MIN_BITS_LINEAR_WORK", 5)
    monkeypatch.setattr(passes, "SUPERSET_BLOCK_BITS", 3)
    parallel = fit_both_ways(table)
    for first, second in zip(serial, parallel):
        assert_same_results(first, second, atol=1e-13)


def test_sum_kernel_skips_sparse_block_pairs():
    rng = np.random.default_rng(2)
    n_bits, skip = 7, 2
    a, b = rng.random(1 << n_bits), rng.random(1 << n_bits)
    n_blocks = 1 << (n_bits - _block_codegen.BLOCK_BITS)
    expected = np.zeros(1 << n_bits)
    for j in range(1 << n_bits):
        for t in range(1 << n_bits):
            high = (j ^ t) >> _block_codegen.BLOCK_BITS
            if t & j == t and bin(high).count("1") >= skip:
                expected[j] += a[t] * b[j ^ t]
    for parallel in (True, False):
        out = np.full(1 << n_bits, np.nan)
        if parallel:
            _flat_block_kernels.conv_sum_blocks(a, b, out, n_bits, skip)
        else:
            _flat_block_kernels.conv_sum_range(a, b, out, 0, n_blocks, skip)
        np.testing.assert_allclose(out, expected, rtol=1e-14)


def test_budget_uses_the_engines_cost_per_step():
    from sklearn_trellis._core import budget as _budget
    n_bytes, seconds = _budget.exact_cost(20, flat.BYTES_PER_SUBSET)
    assert n_bytes == flat.BYTES_PER_SUBSET * 2 ** 20
    assert seconds == pytest.approx(_budget.NS_PER_STEP * 1e-9 * 3.0 ** 20)
    _, slower = _budget.exact_cost(20, flat.BYTES_PER_SUBSET, ns_per_step=10.0)
    assert slower == pytest.approx(1e-8 * 3.0 ** 20)
    with pytest.raises(ValueError, match="CPU time"):
        _budget.check_exact_budget(12, 8, max_items=10, ns_per_step=3.0)


@pytest.mark.parametrize("scale", [3.0, 60.0, 5e4])
def test_every_subset_log_z_matches_full_sums(scale):
    n = 8
    table = random_table(np.random.default_rng(int(scale)), n, scale=scale, forbid=0.2)
    expected = flat_log_z_table(table, n)
    for trellis in fit_both_ways(table):  # pruned log-space sums and linear layers
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(np.isfinite(trellis.log_z), finite)
        np.testing.assert_allclose(trellis.log_z[finite], expected[finite], rtol=1e-14,
                                   atol=1e-12)


@pytest.mark.parametrize("linear", [True, False])
def test_fit_without_map_or_marginals_keeps_log_z_and_marginals(linear):
    """``fit(map_clustering=False, marginals=False)`` (empirical Bayes' fits): the same
    ``log Z`` table bit for bit, no MAP, and the marginals computed on first use equal."""
    rng = np.random.default_rng(5)
    e = rng.normal(0.0, 3.0, 2 ** 7)
    full = ExactFlatTrellis(e)
    full._linear = linear
    full.fit()
    lean = ExactFlatTrellis(e)
    lean._linear = linear
    lean.fit(map_clustering=False, marginals=False)
    assert np.array_equal(lean.log_z, full.log_z)
    assert lean.log_partition_function == full.log_partition_function
    assert not hasattr(lean, "map_labels") and not hasattr(lean, "map_log_potential")
    assert np.array_equal(lean.pairwise_marginals(), full.pairwise_marginals())
    assert lean.together_marginal([0, 3, 5]) == full.together_marginal([0, 3, 5])
    no_map = ExactFlatTrellis(e).fit(map_clustering=False)
    assert np.array_equal(no_map.pairwise_marginals(), full.pairwise_marginals())
