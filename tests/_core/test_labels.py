"""The one relabelling in order of first appearance, against a dictionary reference."""

import numpy as np
import pytest

from sklearn_trellis._core.labels import canonical_rows, compact_labels, first_appearance_labels


def reference(labels):
    seen = {}
    return [seen.setdefault(v, len(seen)) for v in labels]


@pytest.mark.parametrize("seed", range(5))
def test_all_three_agree_with_the_reference(seed):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 3 + 4 * seed, size=(6, 1 + 5 * seed))
    expected = np.array([reference(r.tolist()) for r in rows])
    np.testing.assert_array_equal(canonical_rows(rows), expected)
    for row, want in zip(rows, expected):
        np.testing.assert_array_equal(first_appearance_labels(row), want)
        out = np.empty(row.size, np.int64)
        assert compact_labels(row, out) == len(set(row.tolist()))
        np.testing.assert_array_equal(out, want)


def test_any_integer_labels_and_empty():
    assert first_appearance_labels([5, 5, 2, 7, 2]).tolist() == [0, 0, 1, 2, 1]
    assert first_appearance_labels([-3, 9, -3]).tolist() == [0, 1, 0]
    assert first_appearance_labels([]).shape == (0,)
    assert first_appearance_labels(np.array([[1, 0], [0, 2]])).tolist() == [0, 1, 1, 2]
