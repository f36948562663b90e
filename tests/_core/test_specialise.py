"""Kernel templates compiled per model (``_core.specialise``)."""

import importlib
import textwrap

import numpy as np
from numba import njit

HELPER = '''
from sklearn_trellis._core.specialise import template

OFFSET = 10.0


@template(inline="always")
def shifted(x):
    return model_fn(x) + OFFSET
'''

KERNELS = '''
from sklearn_trellis._core.specialise import specialise as _specialise, template
from {helper} import shifted

OFFSET = -1000.0  # the imported template must see its own module's OFFSET


@template
def total(values):
    acc = 0.0
    for v in values:
        acc += shifted(v)
    return acc


def specialise(function):
    return _specialise(globals(), {{"model_fn": function}})
'''


@njit
def double(x):
    return 2.0 * x


@njit
def square(x):
    return x * x


def write_modules(tmp_path, monkeypatch):
    helper = f"spec_helper_{tmp_path.name}".replace("-", "_")
    kernels = f"spec_kernels_{tmp_path.name}".replace("-", "_")
    (tmp_path / f"{helper}.py").write_text(textwrap.dedent(HELPER))
    (tmp_path / f"{kernels}.py").write_text(textwrap.dedent(KERNELS.format(helper=helper)))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(kernels)


def test_templates_are_compiled_per_model_with_imported_helpers(tmp_path, monkeypatch):
    module = write_modules(tmp_path, monkeypatch)
    values = np.array([1.0, 2.0])
    with_double = module.specialise(double)
    with_square = module.specialise(square)
    assert with_double.total(values) == (2.0 + 10.0) + (4.0 + 10.0)
    assert with_square.total(values) == (1.0 + 10.0) + (4.0 + 10.0)
    assert module.specialise(double) is with_double          # memoised
    assert set(vars(with_double)) == {"total", "shifted"}
    # the templates themselves stay plain Python functions
    assert not hasattr(module.total, "py_func")
