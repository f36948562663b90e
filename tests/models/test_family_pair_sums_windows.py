"""``family_pair_sums`` over a family with windows: the window unions' sums come
from their pieces and the cuts between pieces; they equal the direct sums."""

import numpy as np
import pytest

from numba_threads import numba_threads
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees, tree_windows
from sklearn_trellis.models import _family_stats
from sklearn_trellis.models._family_stats import family_pair_sums


@pytest.fixture(autouse=True)
def compiled_pair_sums(monkeypatch):
    """The compiled pair sums at every size (small families run their Python source:
    tested against them below)."""
    monkeypatch.setattr(_family_stats, "INTERPRETED_PAIR_TERMS", 0)


@pytest.mark.parametrize("windows", [0, 5])
@pytest.mark.parametrize("part", [None, "positive", "negative"])
def test_interpreted_pair_sums_are_the_kernels(part, windows, monkeypatch):
    from sklearn_trellis._core import interpreted
    rng = np.random.default_rng(2)
    n = 40
    X = rng.normal(size=(n, 3))
    trees = linkage_seed_trees(X)
    family = ClusterFamily.from_trees(
        trees, n, windows=tree_windows(trees[0], n, windows) if windows else (),
        extra_clusters=[rng.choice(n, 12, replace=False)])
    w = np.exp(-np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))) - 0.3
    compiled = family_pair_sums(w, family, part)
    monkeypatch.setattr(_family_stats, "INTERPRETED_PAIR_TERMS", 10 ** 9)
    monkeypatch.setattr(interpreted, "INTERPRETED_BUDGET_SECONDS", np.inf)
    spent = interpreted._spent
    ours = family_pair_sums(w, family, part)
    assert interpreted._spent > spent
    assert ours.dtype == compiled.dtype
    np.testing.assert_array_equal(ours, compiled)      # the same additions in the same order


@pytest.mark.parametrize("part", [None, "positive", "negative"])
def test_window_unions_equal_direct_pair_sums(part):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    trees = linkage_seed_trees(X)
    family = ClusterFamily.from_trees(trees, 120, windows=tree_windows(trees[0], 120, 6))
    assert np.any(family.vertex_window >= 0)
    w = np.exp(-np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))) - 0.3
    ours = family_pair_sums(w, family, part)
    sign = {None: lambda v: v, "positive": lambda v: np.maximum(v, 0),
            "negative": lambda v: np.maximum(-v, 0)}[part]
    for v in range(family.n_vertices):
        members = family.members(v)
        block = sign(w[np.ix_(members, members)])
        assert ours[v] == pytest.approx((block.sum() - np.trace(block)) / 2, abs=1e-9)


def test_graph_pair_sums_equal_direct_sums_on_any_number_of_threads(monkeypatch):
    """Sums over a graph's edges: the direct sums, bit for bit the same when the
    cuts run on two threads in small chunks."""
    from scipy import sparse

    from sklearn_trellis._core import parallel
    from sklearn_trellis.models import _family_stats
    from sklearn_trellis.models._family_stats import family_graph_pair_sums
    rng = np.random.default_rng(1)
    n = 150
    X = rng.normal(size=(n, 3))
    trees = linkage_seed_trees(X)
    family = ClusterFamily.from_trees(trees, n, windows=tree_windows(trees[0], n, 5),
                                      extra_clusters=[rng.choice(n, 20, replace=False)])
    w = np.exp(-np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1)))
    w[w < 0.4] = 0.0
    np.fill_diagonal(w, 0.0)
    graph = sparse.csr_matrix(w)
    serial = family_graph_pair_sums(graph, family)
    for v in range(family.n_vertices):
        members = family.members(v)
        assert serial[v] == pytest.approx(w[np.ix_(members, members)].sum() / 2, abs=1e-9)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(_family_stats, "SLOT_CHUNK", 5)
    with numba_threads(2):
        threaded = family_graph_pair_sums(graph, family)
    np.testing.assert_array_equal(serial, threaded)


@pytest.mark.parametrize("windows", [False, True])
@pytest.mark.parametrize("part", [None, "negative"])
def test_dense_pair_sums_on_threads_equal_the_serial_pass_bit_for_bit(monkeypatch, windows,
                                                                      part):
    """Large matrices: each vertex's cut on numba's threads, then one pass adding the
    children's sums; the same bits as the serial pass, windows or not."""

    from sklearn_trellis._core import parallel
    rng = np.random.default_rng(2)
    n = 90
    X = rng.normal(size=(n, 3))
    trees = linkage_seed_trees(X)
    family = ClusterFamily.from_trees(
        trees, n, windows=tree_windows(trees[3], n, 5) if windows else (),
        extra_clusters=[rng.choice(n, 15, replace=False)])      # one without a split
    assert (family.build_left[n:] < 0).any()
    assert np.any(family.vertex_window >= 0) == windows
    w = np.exp(-np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))) - 0.3
    serial = family_pair_sums(w, family, part)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    with numba_threads(2):
        threaded = family_pair_sums(w, family, part)
    assert serial.tobytes() == threaded.tobytes()
