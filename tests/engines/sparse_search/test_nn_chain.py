"""The compiled nearest-neighbour chain gives scipy's linkage matrices exactly."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from numba_threads import numba_threads
from sklearn_trellis.engines.sparse import _nn_chain
from sklearn_trellis.engines.sparse._nn_chain import (euclidean_linkage_matrices, linkage_matrices,
                                                     nn_chain_linkage)


@pytest.fixture(autouse=True)
def compiled_chains(monkeypatch):
    """Run the compiled chains at every N (up to SCIPY_LINKAGE_ITEMS, scipy's own run)."""
    monkeypatch.setattr(_nn_chain, "SCIPY_LINKAGE_ITEMS", 0)


def _condensed():
    rng = np.random.default_rng(0)
    yield "gaussian", pdist(rng.normal(size=(200, 3)))
    # integer coordinates: many equal distances (ties decided by the chain's order)
    yield "ties", pdist(rng.integers(0, 4, size=(150, 2)).astype(float))
    yield "duplicates", pdist(np.repeat(rng.normal(size=(40, 2)), 3, axis=0))
    yield "manhattan", pdist(rng.normal(size=(120, 5)), "cityblock")
    yield "two", np.array([1.5])


@pytest.mark.parametrize("square", [True, False])
@pytest.mark.parametrize("method", ["average", "complete", "ward"])
@pytest.mark.parametrize("case", list(_condensed()), ids=lambda c: c[0])
def test_same_linkage_matrix_as_scipy(method, case, square):
    _, condensed = case
    n = int(round((1 + np.sqrt(1 + 8 * condensed.size)) / 2))
    expected = linkage(condensed, method=method)
    got = nn_chain_linkage(condensed, n, {"average": 0, "complete": 1, "ward": 2}[method],
                           square=square)
    np.testing.assert_array_equal(got, expected)


def test_threads_give_the_same_matrices():
    rng = np.random.default_rng(1)
    condensed = pdist(rng.normal(size=(300, 4)))
    methods = ["single", "average", "complete", "ward"]
    jobs = [(method, condensed) for method in methods]
    for n_threads in (1, 2):
        for got, method in zip(linkage_matrices(jobs, n_threads=n_threads), methods):
            np.testing.assert_array_equal(got, linkage(condensed, method=method))
    # the input is not modified
    np.testing.assert_array_equal(condensed, pdist(np.random.default_rng(1).normal(size=(300, 4))))


def test_non_finite_refused():
    with pytest.raises(ValueError, match="finite"):
        linkage_matrices([("average", np.array([1.0, np.inf, 2.0]))])


@pytest.mark.parametrize("square", [True, False])
def test_chunked_chain_reports_progress_and_gives_scipys_matrix(square):
    import io

    from sklearn_trellis._core.progress import Progress
    condensed = pdist(np.random.default_rng(2).normal(size=(120, 3)))
    stream = io.StringIO()
    progress = Progress("fit", verbose=1, interval=0.0, stream=stream)
    got = linkage_matrices([("single", condensed), ("ward", condensed)], progress=progress)
    np.testing.assert_array_equal(got[1], linkage(condensed, method="ward"))
    lines = stream.getvalue().splitlines()
    # a stage line for the chain, then one line per compiled chunk of merges
    assert lines[0].startswith("[fit] ward linkage of 120 items")
    assert lines[-1].startswith("[fit] ward linkage of 120 items: 119/119 merges")
    assert len(lines) == 1 + 119 // (119 // 50) + (119 % (119 // 50) > 0)
    got = nn_chain_linkage(condensed, 120, 0, square=square, progress=progress)
    np.testing.assert_array_equal(got, linkage(condensed, method="average"))


def test_chain_in_a_lent_working_array_gives_scipys_matrix():
    condensed = pdist(np.random.default_rng(3).normal(size=(90, 2)))
    work = np.full((90, 90), np.nan)
    for method, code in (("average", 0), ("ward", 2)):
        got = nn_chain_linkage(condensed, 90, code, work=work)
        np.testing.assert_array_equal(got, linkage(condensed, method=method))
    got = linkage_matrices([("single", condensed), ("complete", condensed)], work=work)
    np.testing.assert_array_equal(got[1], linkage(condensed, method="complete"))


def _rows():
    rng = np.random.default_rng(3)
    yield "gaussian", rng.normal(size=(150, 3))
    yield "ties", rng.integers(0, 4, size=(140, 2)).astype(float)     # equal distances
    yield "duplicates", np.repeat(rng.normal(size=(30, 2)), 3, axis=0)
    yield "wide", rng.normal(size=(70, 67)) * 1e-3                    # more than a tile
    yield "two", np.array([[0.0], [1.5]])


@pytest.mark.parametrize("lanes", [1, 2])
@pytest.mark.parametrize("case", list(_rows()), ids=lambda c: c[0])
def test_euclidean_linkages_from_one_square_array_are_scipys(monkeypatch, case, lanes):
    """One array, the chains in turn; or two arrays, two chains at once (two threads)."""
    import numba
    _, X = case
    n = X.shape[0]
    if lanes == 1:
        monkeypatch.setattr(_nn_chain, "SECOND_CHAIN_BYTES", 0)
    elif numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("two lanes need two numba threads")
    used = []
    two_lanes = _nn_chain._two_lanes
    monkeypatch.setattr(_nn_chain, "_two_lanes",
                        lambda *args: used.append(1) or two_lanes(*args))
    methods = ["ward", "single", "complete", "average"]   # any order, single anywhere
    work = np.full((n, n), np.nan)
    with numba_threads(2):
        got = euclidean_linkage_matrices(methods, X, work)
    assert len(used) == (lanes == 2)
    for method, Z in zip(methods, got):
        np.testing.assert_array_equal(Z, linkage(pdist(X), method=method))


@pytest.mark.parametrize("euclidean", [True, False])
def test_small_inputs_take_scipys_linkages_with_the_same_matrices(monkeypatch, euclidean):
    import io

    from sklearn_trellis._core.progress import Progress
    X = np.random.default_rng(4).integers(0, 4, size=(60, 2)).astype(float)   # ties
    methods = ["single", "average", "complete", "ward"]

    def run():
        stream = io.StringIO()
        progress = Progress("fit", verbose=1, interval=0.0, stream=stream)
        if euclidean:
            return euclidean_linkage_matrices(methods, X, np.empty((60, 60)), progress), stream
        return linkage_matrices([(m, pdist(X)) for m in methods], progress=progress), stream

    compiled, _ = run()
    monkeypatch.setattr(_nn_chain, "SCIPY_LINKAGE_ITEMS", 60)
    small, stream = run()
    for got, expected in zip(small, compiled):
        np.testing.assert_array_equal(got, expected)
    assert [line.split(" linkage")[0] for line in stream.getvalue().splitlines()] == \
        [f"[fit] {m}" for m in methods]
    with pytest.raises(ValueError, match="finite"):
        linkage_matrices([("average", np.array([1.0, np.inf, 2.0]))])
