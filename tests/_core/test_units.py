"""Distances in units where float64 holds their squares (``_core/units.py``)."""

import numpy as np
import pytest

from sklearn_trellis._core.units import from_units, to_units


@pytest.mark.parametrize("exponent", [-1100, -1074, -540, -3, 1, 500, 1023, 1100])
def test_from_units_is_ldexp_bit_for_bit(exponent):
    # The product by 2**shift must round as ldexp does, subnormal results and
    # overflow included; beyond float64's powers of two it is ldexp itself.
    values = np.array([0.0, 5e-324, 3.3e-320, 1e-310, 2.2250738585072014e-308, 0.7,
                       1.0, 3.0, 1.7e308])
    for metric, degree in (("euclidean", 1), ("sqeuclidean", 2)):
        with np.errstate(over="ignore", under="ignore"):
            expected = np.ldexp(values, exponent * degree)
        np.testing.assert_array_equal(from_units(values.copy(), exponent, metric), expected)
        out = values.copy()
        assert from_units(out, exponent, metric, out=out) is out
        np.testing.assert_array_equal(out, expected)


def test_units_round_trip_and_scale_free_metrics():
    X = np.array([[1e-200, 3.0], [2.5, -7.0]])
    np.testing.assert_array_equal(to_units(to_units(X, 5), -5), X)
    assert to_units(X, 0) is X
    assert from_units(X, 7, "cosine") is X
