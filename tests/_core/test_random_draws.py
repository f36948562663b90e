"""The kernels' permutation draws what numba's np.random.permutation draws."""

import numpy as np
import pytest
from numba import njit

from sklearn_trellis._core.random_draws import permutation


@njit
def _both(n, seed):
    np.random.seed(seed)
    ours = permutation(n)
    np.random.seed(seed)
    return ours, np.random.permutation(n)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 17])
@pytest.mark.parametrize("seed", [0, 3])
def test_permutation_matches_numba_np_random_permutation(n, seed):
    ours, numbas = _both(n, seed)
    np.testing.assert_array_equal(ours, numbas)
    np.testing.assert_array_equal(np.sort(ours), np.arange(n))
