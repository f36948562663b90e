"""EntropyAgglomeration: the paper's Figure 9a, brute-force EA, scikit-learn encodings."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import dendrogram, is_valid_linkage
from oracles import (as_block_sets, entropy_agglomeration,
                               expected_projection_entropy, random_feature_allocations,
                               random_partition_samples)

from sklearn_trellis import EntropyAgglomeration
from sklearn_trellis.summaries import pairwise_cooccurrence

E3 = [[[0, 2, 5, 6], [1], [3, 4]],
      [[0, 2, 5], [1, 6], [3, 4]],
      [[0, 1, 2, 5, 6], [3, 4]]]


def _subsets(children, n):
    members = [[i] for i in range(n)]
    for a, b in children:
        members.append(sorted(members[a] + members[b]))
    return members[n:]


def test_figure_9a():
    ea = EntropyAgglomeration().fit(E3)
    subsets = _subsets(ea.children_, 7)
    # {4, 5} and {1, 3, 6} (1-based) are formed at entropy 0 ...
    zero = [s for s, d in zip(subsets, ea.distances_) if d == 0.0]
    assert [3, 4] in zero and [0, 2, 5] in zero
    assert len(zero) == 3  # {1,3}, {1,3,6}, {4,5}
    # ... then 7 joins {1, 3, 6}, then 2, then {4, 5}: the order of Figure 9a.
    assert subsets[3:] == [[0, 2, 5, 6], [0, 1, 2, 5, 6], list(range(7))]
    block_sets = as_block_sets(E3)
    for subset, distance in zip(subsets, ea.distances_):
        assert distance == pytest.approx(expected_projection_entropy(block_sets, subset),
                                         abs=1e-10)
    np.testing.assert_allclose(ea.distances_[3:], [0.18744505, 0.39113803, 0.8776539],
                               atol=1e-8)


@pytest.mark.parametrize("kind", ["partitions", "feature_allocations"])
def test_matches_brute_force_agglomeration(kind):
    rng = np.random.default_rng(0)
    for trial in range(6):
        n = int(rng.integers(2, 9))
        n_samples = int(rng.integers(1, 12))
        if kind == "partitions":
            samples = random_partition_samples(rng, n_samples, n, noise=0.4)
        else:
            samples = random_feature_allocations(rng, n_samples, n)
        ea = EntropyAgglomeration().fit(samples)
        children, distances = entropy_agglomeration(as_block_sets(samples), n)
        np.testing.assert_array_equal(ea.children_, children)
        np.testing.assert_allclose(ea.distances_, distances, atol=1e-9)
        assert ea.n_leaves_ == n


def test_tree_encodings():
    rng = np.random.default_rng(1)
    samples = random_partition_samples(rng, 30, 12)
    ea = EntropyAgglomeration(n_clusters=3).fit(samples)
    assert ea.children_.shape == (11, 2) and ea.distances_.shape == (11,)
    assert is_valid_linkage(ea.linkage_matrix_)
    np.testing.assert_array_equal(ea.linkage_matrix_[:, 3], ea.counts_)
    leaves = dendrogram(ea.linkage_matrix_, no_plot=True)["leaves"]
    assert sorted(leaves) == list(range(12))
    assert ea.n_clusters_ == 3 and np.unique(ea.labels_).size == 3
    assert ea.n_features_in_ == 12 and ea.n_samples_fit_ == 30
    np.testing.assert_allclose(ea.cooccurrence_, pairwise_cooccurrence(samples))
    # the cut after n - 3 merges: the subsets formed by the last two merges' children
    subsets = _subsets(ea.children_, 12)
    top_children = [c for c in ea.children_[-2:].ravel() if c < 12 + 9]
    parts = sorted(tuple(subsets[c - 12]) if c >= 12 else (c,) for c in top_children)
    cut = sorted(tuple(np.flatnonzero(ea.labels_ == k)) for k in range(3))
    assert parts == cut


def test_distance_threshold_cut_and_fit_predict():
    samples = np.array([[0, 0, 1, 1, 2], [0, 0, 1, 1, 1], [0, 0, 1, 1, 2]])
    ea = EntropyAgglomeration(n_clusters=None, distance_threshold=1e-9).fit(samples)
    np.testing.assert_array_equal(ea.labels_, [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(EntropyAgglomeration(n_clusters=2).fit_predict(samples),
                                  [0, 0, 1, 1, 1])


@pytest.mark.parametrize("kind", ["partitions", "feature_allocations"])
def test_distances_are_non_decreasing(kind):
    # Concavity of the entropy makes EA monotone (see the estimator's docstring);
    # check it, and each merge's entropy, on random sample sets.
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(3, 8))
        if kind == "partitions":
            samples = random_partition_samples(rng, 5, n, noise=0.6)
        else:
            samples = random_feature_allocations(rng, 5, n)
        ea = EntropyAgglomeration().fit(samples)
        block_sets = as_block_sets(samples)
        for subset, d in zip(_subsets(ea.children_, n), ea.distances_):
            assert d == pytest.approx(expected_projection_entropy(block_sets, subset), abs=1e-9)
        assert np.all(np.diff(ea.distances_) >= 0)


def test_dataframe_element_names():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([[0, 0, 1], [0, 1, 1]], columns=["a", "b", "c"])
    ea = EntropyAgglomeration().fit(frame)
    np.testing.assert_array_equal(ea.feature_names_in_, ["a", "b", "c"])


@pytest.mark.parametrize("params, match", [
    (dict(n_clusters=None), "Exactly one"),
    (dict(n_clusters=2, distance_threshold=0.1), "Exactly one"),
    (dict(n_clusters=0), r"n_clusters.*range \[1, inf\)"),
    (dict(n_clusters=9), "exceeds"),
])
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        EntropyAgglomeration(**params).fit(np.zeros((2, 3), int))


def test_feature_rows_are_refused_clearly():
    with pytest.raises(ValueError, match="feature rows"):
        EntropyAgglomeration().fit(np.random.default_rng(0).normal(size=(5, 3)))


def test_package_works_without_matplotlib():
    import subprocess
    import sys

    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "import sklearn_trellis, sklearn_trellis.plotting as p\n"
            "sklearn_trellis.EntropyAgglomeration().fit([[0, 0, 1]])\n"
            "try:\n    p.NClustersHistogramDisplay.from_samples([[0, 0, 1]])\n"
            "except ImportError as e:\n    assert 'plot' in str(e); print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_sparse_only_histograms_give_the_same_tree(monkeypatch):
    from sklearn_trellis.summaries import agglomeration

    rng = np.random.default_rng(5)
    samples = random_partition_samples(rng, 40, 60, noise=0.3, n_base=4)
    allocations = random_feature_allocations(rng, 15, 20)
    dense = [agglomeration.entropy_agglomeration_tree(s)[:3] for s in (samples, allocations)]
    monkeypatch.setattr(agglomeration, "DENSE_HISTOGRAM_BYTES", 0)
    sparse = [agglomeration.entropy_agglomeration_tree(s)[:3] for s in (samples, allocations)]
    for first, second in zip(dense, sparse):
        for x, y in zip(first, second):
            np.testing.assert_array_equal(x, y)
    # and the merges' entropies are those of the subsets they form
    children, distances, _ = dense[0]
    block_sets = as_block_sets(samples)
    for subset, d in list(zip(_subsets(children, 60), distances))[::7]:
        assert d == pytest.approx(expected_projection_entropy(block_sets, subset), abs=1e-9)


def test_agglomeration_in_chunks_makes_the_same_merges(monkeypatch):
    """The merges run in chunks (for progress lines); one merge per chunk gives the tree
    of a single chunk, for partitions (whose live singletons' columns are compacted
    between chunks) and for feature allocations."""
    import io

    from sklearn_trellis._core import progress as progress_module
    from sklearn_trellis._core.progress import Progress
    from sklearn_trellis.summaries import agglomeration

    rng = np.random.default_rng(7)
    samples = random_partition_samples(rng, 30, 50, noise=0.3, n_base=4)
    allocations = random_feature_allocations(rng, 12, 18)
    whole = [agglomeration.entropy_agglomeration_tree(s)[:3] for s in (samples, allocations)]
    monkeypatch.setattr(agglomeration, "FIRST_CHUNK", 1)
    monkeypatch.setattr(progress_module, "CHUNK_SECONDS", 0.0)   # chunks never grow
    stream = io.StringIO()
    progress = Progress("EA", verbose=1, interval=0.0, stream=stream)
    chunked = [agglomeration.entropy_agglomeration_tree(s, progress)[:3]
               for s in (samples, allocations)]
    for first, second in zip(whole, chunked):
        for x, y in zip(first, second):
            np.testing.assert_array_equal(x, y)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 49 + 17
    assert "49/49 merges" in lines[48] and "17/17 merges" in lines[-1]


def test_memory_is_checked_before_allocation(monkeypatch):
    from sklearn_trellis.summaries import agglomeration

    monkeypatch.setattr(agglomeration, "MAX_AGGLOMERATION_BYTES", 1000)
    with pytest.raises(ValueError, match="GiB"):
        EntropyAgglomeration().fit(np.zeros((3, 20), int))


def test_binary_block_arrays_and_block_lists_agree():
    binary = np.zeros((3, 3, 7), bool)
    for t, z in enumerate(E3):
        for b, block in enumerate(z):
            binary[t, b, block] = True
    from_binary = EntropyAgglomeration().fit(binary)
    from_lists = EntropyAgglomeration().fit(E3)
    labels = np.array([[0, 1, 0, 2, 2, 0, 0], [0, 1, 0, 2, 2, 0, 1], [0, 0, 0, 1, 1, 0, 0]])
    from_labels = EntropyAgglomeration().fit(labels)
    for other in (from_lists, from_labels):
        np.testing.assert_array_equal(from_binary.children_, other.children_)
        np.testing.assert_array_equal(from_binary.distances_, other.distances_)
    assert from_binary.n_features_in_ == 7


def _fit_with_thresholds(monkeypatch, samples, items, budget=1.0):
    from sklearn_trellis._core import interpreted
    from sklearn_trellis.summaries import agglomeration
    monkeypatch.setattr(agglomeration, "INTERPRETED_COOCCURRENCE_WORK", items)
    monkeypatch.setattr(agglomeration, "INTERPRETED_AGGLOMERATION_WORK", items)
    monkeypatch.setattr(interpreted, "INTERPRETED_BUDGET_SECONDS", budget)
    monkeypatch.setattr(interpreted, "_spent", 0.0)
    return EntropyAgglomeration(n_clusters=1).fit(samples), interpreted._spent


@pytest.mark.parametrize("feature_allocation", [False, True])
@pytest.mark.parametrize("n", [1, 2, 25])
def test_interpreted_agglomeration_is_the_kernels(monkeypatch, feature_allocation, n):
    """A small sample set's co-occurrence counts and agglomeration, run interpreted, give
    the compiled kernels' fit bit for bit (the compiled ones run at every size with the
    threshold 0), also when the process's budget runs out between the kernels (an
    interpreted start, then compiled merges on its state)."""
    rng = np.random.default_rng(n)
    if feature_allocation:   # (T, n_blocks, n) binary memberships: depth > 1
        samples = (rng.random((30, 4, n)) < 0.4).astype(np.int8)
    else:
        samples = rng.integers(0, 4, (30, n))
    compiled, spent = _fit_with_thresholds(monkeypatch, samples, 0)
    assert spent == 0.0
    for budget in (1.0, 1e-12):
        ours, spent = _fit_with_thresholds(monkeypatch, samples, 10 ** 9, budget)
        assert spent > 0.0
        for name in ("cooccurrence_", "children_", "distances_", "counts_", "labels_",
                     "n_clusters_histogram_"):
            np.testing.assert_array_equal(getattr(ours, name), getattr(compiled, name))
    np.testing.assert_allclose(compiled.cooccurrence_, pairwise_cooccurrence(samples))
