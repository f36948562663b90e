"""Input checks shared by the estimators: clear errors before any heavy work."""

import numbers

import numpy as np


def check_scalar_param(value, name, *, kind=numbers.Real, low=None, high=None,
                       include_low=True, allow_none=False):
    """Raise ``TypeError``/``ValueError`` naming ``name`` if ``value`` is invalid."""
    if value is None and allow_none:
        return value
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an integer' if kind is numbers.Integral else 'a number'}, "
                        f"got {value!r} of type {type(value).__name__}.")
    if isinstance(value, numbers.Real) and not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if low is not None and (value < low or (value == low and not include_low)):
        bound = ">=" if include_low else ">"
        raise ValueError(f"{name} must be {bound} {low}, got {value!r}.")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}.")
    return value


def check_option(value, name, options):
    """Raise ``ValueError`` unless ``value`` is one of ``options``."""
    if not (isinstance(value, str) and value in options):
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}.")
    return value
