"""``family_pair_sums`` over a family with windows: the window unions' sums come
from their pieces and the cuts between pieces; they equal the direct sums."""

import numpy as np
import pytest

from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees, tree_windows
from sklearn_trellis.models._family_stats import family_pair_sums


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
