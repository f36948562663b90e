"""Parallel kernels with a serial twin (``_core.parallel``)."""

import numpy as np
from numba import prange

from sklearn_trellis._core import parallel
from sklearn_trellis._core.parallel import PARALLEL_MIN_WORK, parallel_kernel


@parallel_kernel
def _row_sums(x):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc
    return out


def test_twins_agree_bit_for_bit_and_are_picked_by_work():
    x = np.random.default_rng(0).standard_normal((50, 7))
    serial = _row_sums.for_work(PARALLEL_MIN_WORK - 1)
    assert serial is _row_sums.serial
    np.testing.assert_allclose(serial(x), x.sum(axis=1))
    np.testing.assert_array_equal(_row_sums.serial(x), _row_sums.parallel(x))
    np.testing.assert_array_equal(_row_sums(x), _row_sums.parallel(x))
    assert not _row_sums.serial.targetoptions.get("parallel")
    assert _row_sums.parallel.targetoptions.get("parallel")


def test_large_work_runs_parallel_unless_one_thread(monkeypatch):
    assert _row_sums.for_work(PARALLEL_MIN_WORK) is _row_sums.parallel
    monkeypatch.setattr(parallel.numba, "get_num_threads", lambda: 1)
    assert _row_sums.for_work(PARALLEL_MIN_WORK) is _row_sums.serial


def test_twins_have_their_own_disk_cache():
    """numba keys its cache on the function's name, not on the flags: distinct names."""
    assert _row_sums.serial.py_func.__qualname__ == "_row_sums_serial"
    assert _row_sums.parallel.py_func.__qualname__ == "_row_sums"
    serial, parallel_ = (k._cache._cache_file._index_name
                         for k in (_row_sums.serial, _row_sums.parallel))
    assert serial != parallel_


def test_a_specialised_twin_pickles():
    # a fitted estimator holds specialised kernels: their source copies are not
    # reachable by name, so the twin pickles through numba's dispatchers
    import pickle
    import types
    source = _row_sums.__wrapped__
    copy = types.FunctionType(source.__code__, source.__globals__, "row_sums_0123abcd")
    copy.__qualname__ = "row_sums_0123abcd"
    kernel = parallel.ParallelKernel(copy, {})
    x = np.random.default_rng(1).standard_normal((9, 4))
    again = pickle.loads(pickle.dumps(kernel))
    np.testing.assert_array_equal(again.for_work(1)(x), kernel.serial(x))
    np.testing.assert_array_equal(again(x), kernel.parallel(x))
    assert again.__name__ == "row_sums_0123abcd"


def test_run_beside_returns_both_results_in_order(monkeypatch):
    import threading
    seen = {}

    def background():
        seen["background"] = threading.current_thread()
        return "b"

    def foreground():
        seen["foreground"] = threading.current_thread()
        return "f"

    monkeypatch.setattr(parallel.numba, "get_num_threads", lambda: 2)
    assert parallel.run_beside(background, foreground) == ("b", "f")
    assert seen["background"] is not seen["foreground"]       # a second thread
    monkeypatch.setattr(parallel.numba, "get_num_threads", lambda: 1)
    assert parallel.run_beside(background, foreground) == ("b", "f")
    assert seen["background"] is seen["foreground"]           # one thread: in turn


def test_run_beside_raises_the_tasks_errors(monkeypatch):
    import pytest

    def fail():
        raise ValueError("background failed")

    monkeypatch.setattr(parallel.numba, "get_num_threads", lambda: 2)
    with pytest.raises(ValueError, match="background failed"):
        parallel.run_beside(fail, lambda: 0)
