"""Cumulative statistics, projections, COD matrices, projection entropy, co-occurrence."""

import math

import numpy as np
import pytest
from oracles import (as_block_sets, cod, expected_projection_entropy, phi,
                               random_feature_allocations, random_partition_samples)

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.summaries import (cumulative_occurrence_distribution, cumulative_statistic,
                                       entropy_sequence, n_clusters_histogram,
                                       pairwise_cooccurrence, projection, projection_entropy)

# The paper's example E3 (Fidaner & Cemgil 2013, Section 2), converted to 0-based elements.
E3_ONE_BASED = [
    [[1, 3, 6, 7], [2], [4, 5]],
    [[1, 3, 6], [2, 7], [4, 5]],
    [[1, 2, 3, 6, 7], [4, 5]],
]
E3 = [[[e - 1 for e in block] for block in z] for z in E3_ONE_BASED]


def test_cumulative_statistic_figure_1():
    # Z(1) has blocks of sizes 4, 2, 1: phi = (3, 2, 1, 1, 0, 0, 0), summing to n = 7.
    phi1 = cumulative_statistic(E3[0])
    np.testing.assert_array_equal(phi1, phi(as_block_sets([E3[0]])[0], 7))
    assert phi1.sum() == 7
    assert phi1[0] == 3  # number of blocks
    # Figure 1b: PROJ(Z(1), S1) = {{1, 3}, {2}, {4}} has phi = (3, 1, 0, 0)
    s1 = [0, 1, 2, 3]
    assert projection(E3[0], s1) == [[0, 2], [1], [3]]
    np.testing.assert_array_equal(cumulative_statistic(projection(E3[0], s1)), [3, 1, 0, 0])


def test_cumulative_statistic_formats_agree():
    rng = np.random.default_rng(0)
    for _ in range(10):
        labels = rng.integers(0, 4, 9)
        blocks = [list(map(int, b)) for b in map(sorted, as_block_sets(labels[None])[0])]
        binary = np.array([[i in b for i in range(9)] for b in blocks])
        expected = phi(as_block_sets(labels[None])[0], 9)
        for form in (labels, blocks, binary):
            np.testing.assert_array_equal(cumulative_statistic(form), expected)
        assert sum(expected) == 9


def test_projections_of_the_paper():
    s1, s2, s3 = [0, 1, 2, 3], [0, 2, 5, 6], [0, 1, 2]
    assert projection(E3[0], s2) == [[0, 2, 5, 6]]
    assert projection(E3[0], s3) == [[0, 2], [1]]
    assert projection(E3[1], s1) == [[0, 2], [1], [3]]
    assert projection(E3[1], s2) == [[0, 2, 5], [6]]
    assert projection(E3[1], s3) == [[0, 2], [1]]
    # label-vector input, any subset order
    labels = np.array([0, 1, 0, 2, 2, 0, 0])
    assert projection(labels, [6, 3, 0]) == [[0, 6], [3]]


def test_cod_matrix_of_figure_4():
    # Figure 4: CODs over E3 for the orders (1, ..., 7) and (1, 3, 6, 7, 2, 4, 5).
    figure_4_left = [[1.0], [1.7, 0.3], [1.7, 1.0, 0.3], [2.7, 1.0, 0.3, 0.0],
                     [2.7, 2.0, 0.3, 0.0, 0.0], [2.7, 2.0, 1.0, 0.3, 0.0, 0.0],
                     [2.7, 2.3, 1.0, 0.7, 0.3, 0.0, 0.0]]
    figure_4_right = [[1.0], [1.0, 1.0], [1.0, 1.0, 1.0], [1.3, 1.0, 1.0, 0.7],
                      [1.7, 1.3, 1.0, 0.7, 0.3], [2.7, 1.3, 1.0, 0.7, 0.3, 0.0],
                      [2.7, 2.3, 1.0, 0.7, 0.3, 0.0, 0.0]]
    # Our copy of the figure prints row 6 as "2.7 2.3 1.0 0.7 0.3 0.0", which sums
    # to 7, against Eq. 6 (row i sums to i). By hand: PROJ onto {1,3,6,7,2,4} has
    # block sizes (4,1,1), (3,2,1), (5,1), so phi_2 = (1 + 2 + 1) / 3 = 1.3.
    for order, figure in ((None, figure_4_left), ([0, 2, 5, 6, 1, 3, 4], figure_4_right)):
        delta = cumulative_occurrence_distribution(E3, order)
        expected = np.zeros((7, 7))
        for i, row in enumerate(figure):
            expected[i, :len(row)] = row
        np.testing.assert_allclose(delta, expected, atol=0.05)  # the figure rounds to 0.1
        np.testing.assert_allclose(delta.sum(axis=1), np.arange(1, 8))  # Eq. 6
        assert np.all(np.triu(delta, 1) == 0)
        np.testing.assert_allclose(
            delta, cod(as_block_sets(E3), list(order or range(7))), atol=1e-12)
    # the entropies of Figure 4 (right) stay at 0 along 1, 3, 6
    h = entropy_sequence(E3, [0, 2, 5, 6, 1, 3, 4])
    np.testing.assert_allclose(h[:3], 0.0, atol=1e-15)
    np.testing.assert_allclose(h, [expected_projection_entropy(
        as_block_sets(E3), [0, 2, 5, 6, 1, 3, 4][:i]) for i in range(1, 8)], atol=1e-12)


@pytest.mark.parametrize("kind", ["partitions", "feature_allocations"])
def test_cod_and_entropy_match_brute_force(kind):
    rng = np.random.default_rng(1)
    for _ in range(4):
        n = int(rng.integers(3, 9))
        if kind == "partitions":
            samples = random_partition_samples(rng, 6, n)
        else:
            samples = random_feature_allocations(rng, 6, n)
        block_sets = as_block_sets(samples)
        order = list(rng.permutation(n)[:int(rng.integers(1, n + 1))])
        np.testing.assert_allclose(cumulative_occurrence_distribution(samples, order),
                                   cod(block_sets, order), atol=1e-12)
        expected = [expected_projection_entropy(block_sets, order[:i])
                    for i in range(1, len(order) + 1)]
        np.testing.assert_allclose(entropy_sequence(samples, order), expected, atol=1e-12)
        for _ in range(3):
            subset = list(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
            assert projection_entropy(samples, subset) == pytest.approx(
                expected_projection_entropy(block_sets, subset), abs=1e-12)


def test_projection_entropy_extremes():
    together = np.zeros((3, 5), int)
    apart = np.tile(np.arange(5), (3, 1))
    assert projection_entropy(together, [0, 3, 4]) == 0.0
    assert projection_entropy(apart, [0, 3, 4]) == pytest.approx(math.log(3))
    assert projection_entropy(apart, [2]) == 0.0


def test_input_forms_are_equivalent():
    rng = np.random.default_rng(2)
    labels = random_partition_samples(rng, 5, 6)
    blocks = [[sorted(b) for b in z] for z in as_block_sets(labels)]
    n_blocks = max(len(z) for z in blocks)
    binary = np.zeros((5, n_blocks + 1, 6), bool)  # one all-zero padding row
    for t, z in enumerate(blocks):
        for b, block in enumerate(z):
            binary[t, b, block] = True
    reference = cumulative_occurrence_distribution(labels)
    for form in (blocks, binary, labels.tolist(), labels + 10, labels.astype(float)):
        np.testing.assert_allclose(cumulative_occurrence_distribution(form), reference)
        np.testing.assert_allclose(pairwise_cooccurrence(form), pairwise_cooccurrence(labels))


def test_pairwise_cooccurrence_and_histogram_brute_force():
    rng = np.random.default_rng(3)
    labels = random_partition_samples(rng, 20, 7)
    expected = (labels[:, :, None] == labels[:, None, :]).mean(axis=0)
    np.testing.assert_allclose(pairwise_cooccurrence(labels), expected)
    n_blocks = np.array([np.unique(row).size for row in labels])
    histogram = n_clusters_histogram(labels)
    np.testing.assert_allclose(histogram, np.bincount(n_blocks, minlength=8) / 20)
    np.testing.assert_array_equal(n_clusters_histogram(labels, normalize=False),
                                  np.bincount(n_blocks, minlength=8))
    # feature allocations: mean number of shared blocks, phi_2 of the pair projection
    allocations = random_feature_allocations(rng, 10, 6)
    block_sets = as_block_sets(allocations)
    expected = np.array([[np.mean([sum(i in b and j in b for b in z) for z in block_sets])
                          for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(pairwise_cooccurrence(allocations), expected)


def test_sampled_summaries_converge_to_exact_marginals():
    rng = np.random.default_rng(4)
    model = ExactCorrelationClustering(beta=2.0, random_state=0).fit(rng.normal(size=(6, 2)))
    samples = model.sample(4000)
    np.testing.assert_allclose(pairwise_cooccurrence(samples), model.pairwise_marginals_,
                               atol=0.03)
    np.testing.assert_allclose(n_clusters_histogram(samples)[1:],
                               model.n_clusters_distribution_, atol=0.03)


@pytest.mark.parametrize("bad, error, match", [
    (np.array([[0.5, 1.0]]), ValueError, "non-integral"),
    (np.array([0, 1, 1]), ValueError, "wrap it"),
    ([[[0, 1], [1, 2]], [[0, 0]]], ValueError, "twice"),
    ([[[0, 1], []]], ValueError, "empty"),
    ([[[0, -1]]], ValueError, "negative"),
    (np.zeros((0, 3), int), ValueError, "at least one sample"),
    (np.full((2, 2, 3), 2), ValueError, "0/1"),
    ("abc", TypeError, "sample set"),
])
def test_bad_sample_sets(bad, error, match):
    with pytest.raises(error, match=match):
        pairwise_cooccurrence(bad)


def test_bad_orders():
    samples = np.zeros((2, 4), int)
    with pytest.raises(ValueError, match="twice"):
        entropy_sequence(samples, [0, 0])
    with pytest.raises(ValueError, match="outside"):
        cumulative_occurrence_distribution(samples, [0, 4])
    with pytest.raises(ValueError, match="at least one"):
        projection_entropy(samples, [])


def test_pairwise_cooccurrence_of_labels_matches_numpy():
    rng = np.random.default_rng(0)
    samples = rng.integers(0, 4, size=(50, 40))
    expected = (samples[:, :, None] == samples[:, None, :]).mean(axis=0)
    np.testing.assert_allclose(pairwise_cooccurrence(samples), expected)
    with pytest.raises(ValueError, match="samples"):
        pairwise_cooccurrence(np.zeros((0, 3)))
    with pytest.raises(TypeError, match="integer"):  # integral floats are labels too
        pairwise_cooccurrence(np.zeros((2, 3), dtype=complex))


@pytest.mark.parametrize("n_labels", [1, 3, 40, 300])
def test_pairwise_cooccurrence_both_label_paths_match_numpy(n_labels, monkeypatch):
    """Indicator products (few labels) and the comparison kernel (many) give exact counts."""
    from sklearn_trellis.summaries import occurrence
    rng = np.random.default_rng(n_labels)
    samples = rng.integers(-5, n_labels - 5, size=(90, 35)).astype(np.int32)
    samples[7] += 100_000     # a row outside int16 with a shifted label range
    expected = (samples[:, :, None] == samples[:, None, :]).mean(axis=0)
    np.testing.assert_allclose(pairwise_cooccurrence(samples), expected, atol=1e-15)
    # tiny indicator blocks: every row boundary case, including rows wider than a block
    monkeypatch.setattr(occurrence, "INDICATOR_BLOCK", 7)
    np.testing.assert_allclose(occurrence._counts_by_indicator_products(samples) / 90,
                               expected, atol=1e-15)
    monkeypatch.setattr(occurrence, "MAX_MEAN_LABELS_FOR_BLAS", -1)
    np.testing.assert_allclose(pairwise_cooccurrence(samples), expected, atol=1e-15)


def test_sample_sets_and_partitions_of_string_labels():
    # Labels that are no numbers name blocks too: the same summaries as integer labels.
    strings = np.array([["a", "a", "b"], ["x", "y", "y"]])
    ints = np.array([[0, 0, 1], [0, 1, 1]])
    np.testing.assert_array_equal(pairwise_cooccurrence(strings), pairwise_cooccurrence(ints))
    np.testing.assert_array_equal(pairwise_cooccurrence(strings.astype(object)),
                                  pairwise_cooccurrence(ints))
    np.testing.assert_array_equal(cumulative_statistic(list("aabbc")),
                                  cumulative_statistic([0, 0, 1, 1, 2]))


def test_cooccurrence_too_large_for_memory_is_refused_before_allocating():
    # 300,000 elements: a 1.6 TiB (n, n) matrix; numpy's MemoryError before, now the
    # package's message with the size and the way out, for labels and block lists alike.
    for samples in (np.zeros((1, 300_000), np.int8), [[[0, 299_999]]]):
        with pytest.raises(ValueError, match=r"co-occurrence matrix .* needs about 1.64 TiB"):
            pairwise_cooccurrence(samples)


def test_subsets_past_a_label_vector_and_boolean_masks():
    # An index past a label vector was dropped silently ([[0]] for subset [0, 5]);
    # blocks name their elements, so there it still names an element in no block.
    with pytest.raises(ValueError, match="outside 0..2"):
        projection([0, 0, 1], [0, 5])
    assert projection([[0, 1], [2]], [0, 5]) == [[0]]
    # a boolean mask selects elements (it read as the indices 0 and 1: "twice")
    samples = np.array([[0, 0, 1, 1, 2], [0, 0, 0, 1, 1]])
    mask = np.array([True, False, True, False, False])
    assert projection_entropy(samples, mask) == projection_entropy(samples, [0, 2])
    assert projection([0, 0, 1, 1, 2], mask) == [[0], [2]]
    with pytest.raises(ValueError, match="mask of the 5 elements"):
        projection_entropy(samples, mask[:3])
