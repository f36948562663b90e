"""A kernel's interpreted twin: its own Python source, the kernels it calls included."""

import numpy as np
from numba import njit

from sklearn_trellis._core import interpreted as module
from sklearn_trellis._core.interpreted import interpreted, interpreting, run_interpreted
from sklearn_trellis._core.union_find import find_root


@njit
def _wrapped_hash(codes, items):
    """uint64 sums that wrap around (as the families' hashes do)."""
    total = np.uint64(0)
    for i in items:
        total += codes[i]
    return total * np.uint64(0x9E3779B97F4A7C15)


@njit
def _depth(n):
    return 0 if n == 0 else 1 + _depth(n - 1)


@njit
def _kernel(codes, items, parent):
    roots = np.empty(items.size, np.int64)
    for k in range(items.size):
        roots[k] = find_root(parent, items[k])
    return _wrapped_hash(codes, items), roots, _depth(items.size)


def test_the_twin_calls_twins_and_compiles_nothing():
    codes = np.array([2 ** 64 - 1, 2 ** 63 + 5, 7], dtype=np.uint64)
    items = np.array([0, 1, 2, 1], dtype=np.int64)
    parent = np.array([1, 2, 2], dtype=np.int64)
    got = run_interpreted(_kernel, codes, items, parent.copy())
    for dispatcher in (_kernel, _wrapped_hash, _depth):
        assert dispatcher.signatures == []       # nothing compiled
    assert interpreted(_kernel) is interpreted(_kernel)
    assert interpreted(_kernel).__globals__["find_root"] is interpreted(find_root)
    want = _kernel(codes, items, parent.copy())
    assert int(got[0]) == want[0]     # numba returns scalars as Python ints
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].dtype == want[1].dtype and got[2] == want[2] == 4


def test_a_process_stops_interpreting_once_its_budget_is_spent(monkeypatch):
    monkeypatch.setattr(module, "_spent", 0.0)
    assert interpreting()
    monkeypatch.setattr(module, "INTERPRETED_BUDGET_SECONDS", 0.0)
    assert not interpreting()
    run_interpreted(_depth, 3)
    assert module._spent > 0.0
