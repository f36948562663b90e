"""Issue 31, the tree estimators at the edges: huge precomputed inputs, extreme scales,
identical rows (DivisiveClustering, TrellisHierarchical)."""

import tracemalloc

import numpy as np
import pytest

from sklearn_trellis import DivisiveClustering, TrellisHierarchical
from sklearn_trellis._core import budget


# -- a precomputed matrix too large for memory is refused before any copy -----------------
@pytest.mark.parametrize("make", [
    lambda: TrellisHierarchical(metric="precomputed", linkage="average"),
    lambda: DivisiveClustering(metric="precomputed"),
])
def test_precomputed_matrix_refused_before_allocating(monkeypatch, make):
    # Issue 31: a (70000, 70000) broadcast view made TrellisHierarchical allocate an
    # 18.3 GiB condensed copy (the median of the distances) before any memory check.
    make().fit(np.broadcast_to(np.zeros(1), (3, 3)))  # compile for this layout first
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 1 << 20)  # 1 MiB free
    n = 3000
    X = np.broadcast_to(np.zeros(1), (n, n))  # 72 MB that take no memory
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"Not enough memory: .* needs about .* MiB, but "
                                             r"only 1 MiB is available"):
            make().fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * n * n // 20  # nothing of size N x N was allocated
