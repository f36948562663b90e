"""find_root against a plain walk to the root, and the compression it leaves."""

import numpy as np
import pytest

from sklearn_trellis._core.union_find import find_root


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_find_root_returns_the_root_and_compresses_the_path(dtype):
    rng = np.random.default_rng(0)
    n = 200
    parent = np.arange(n, dtype=dtype)
    for x in rng.permutation(n)[:150]:     # random unions of roots
        a, b = x, rng.integers(n)
        while parent[a] != a:
            a = parent[a]
        while parent[b] != b:
            b = parent[b]
        if a != b:
            parent[a] = b
    for x in rng.integers(n, size=50):
        expected, path = x, [x]
        while parent[expected] != expected:
            expected = parent[expected]
            path.append(expected)
        before = parent.copy()
        assert find_root(parent, x) == expected
        assert all(parent[p] == expected for p in path)           # the path points at the root
        untouched = np.setdiff1d(np.arange(n), path)
        np.testing.assert_array_equal(parent[untouched], before[untouched])
