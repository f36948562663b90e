"""The kernels' stable argsort is numpy's stable argsort, ties and NaN included."""

import numpy as np
import pytest

from sklearn_trellis._core.sorting import stable_argsort


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 16, 33])
def test_matches_numpy_stable_argsort_on_floats_with_ties_and_nan(seed, n):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, n).astype(np.float64)  # many ties
    values[rng.random(n) < 0.2] = np.nan
    values[rng.random(n) < 0.1] = -np.inf
    np.testing.assert_array_equal(stable_argsort(values), np.argsort(values, kind="stable"))


@pytest.mark.parametrize("seed", range(3))
def test_matches_numpy_stable_argsort_on_integers(seed):
    values = np.random.default_rng(seed).integers(-5, 5, 50)
    np.testing.assert_array_equal(stable_argsort(values), np.argsort(values, kind="stable"))
