"""similarity_from_distances never writes into the caller's matrix, views included."""

import numpy as np

from sklearn_trellis._core.pairwise import similarity_from_distances


def test_a_view_of_the_distances_is_left_alone():
    base = np.abs(np.arange(5.0)[:, None] - np.arange(5.0)[None, :])
    view = base[:, :]  # a view: not the same object, same memory
    before = base.copy()
    for kind in ("exp", "precomputed"):
        similarity_from_distances(view, kind, None)
        np.testing.assert_array_equal(base, before)
