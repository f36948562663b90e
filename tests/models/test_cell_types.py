"""The cell-model protocol: the generated dispatch, a toy cell type, engines blind to types.

``toy_cells.py`` is a complete cell type as a newcomer would write it. Registering it
means one line in ``CELL_MODELS`` and regenerating :mod:`sklearn_trellis.models.cell_kernels`;
here the dispatch is generated with it registered into a temporary module and checked
against the toy's closed forms, while the four shipped types keep their codes.
"""

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.special import gammaln

import sklearn_trellis.engines as engines_package
from sklearn_trellis.models import CELL_MODELS, cell_kernels
from sklearn_trellis.models._cell_codegen import generate
from toy_cells import ExponentialCells

import toy_cells


def test_the_dispatch_module_is_generated_from_the_registry():
    """``cell_kernels.py`` is what the generator writes for ``CELL_MODELS`` (regenerate with
    ``python -m sklearn_trellis.models._cell_codegen``)."""
    assert Path(cell_kernels.__file__).read_text() == generate(CELL_MODELS)
    for code, (name, cls) in enumerate(CELL_MODELS.items()):
        assert cls().code == code == getattr(cell_kernels, name.upper())


@pytest.fixture(scope="module")
def toy_dispatch(tmp_path_factory):
    """The dispatch generated with the toy registered last, as a module of the package."""
    registry = dict(CELL_MODELS, exponential=ExponentialCells)
    path = tmp_path_factory.mktemp("dispatch") / "toy_cell_kernels.py"
    path.write_text(generate(registry))
    spec = importlib.util.spec_from_file_location("sklearn_trellis.models._toy_cell_kernels",
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _toy_log_marginal(a0, b0, x):
    """``log int prod_i rate exp(-rate x_i) Gamma(rate; a0, b0) d rate``, written independently."""
    n, total = len(x), float(np.sum(x))
    return a0 * math.log(b0) - gammaln(a0) + gammaln(a0 + n) - (a0 + n) * math.log(b0 + total)


def test_the_toy_cell_type_through_the_generated_dispatch(toy_dispatch):
    k = toy_dispatch
    code = len(CELL_MODELS)
    assert k.code_of(toy_cells) == code and k.EXPONENTIAL == code
    x = np.array([0.5, 2.0, np.nan, 1.25, 0.1])
    model = ExponentialCells(shape=3.0).fit(x)
    params = model.kernel_params()
    stats = np.zeros(2)
    for value in x:
        k.accumulate_at(code, params, 0, stats, 0, value, 1.0)
    observed = x[~np.isnan(x)]
    np.testing.assert_allclose(stats, [4.0, observed.sum()])
    expected = _toy_log_marginal(params[0], params[1], observed)
    assert k.log_marginal_at(code, params, 0, stats, 0) == pytest.approx(expected, rel=1e-12)
    new = 0.7
    predictive = (_toy_log_marginal(params[0], params[1], np.append(observed, new)) - expected)
    assert k.log_predictive_at(code, params, 0, stats, 0, new) == pytest.approx(predictive,
                                                                                rel=1e-12)
    cache = np.empty(2)
    k.predictive_cache_at(code, params, 0, stats, 0, cache, 0)
    assert k.cached_log_predictive_at(code, params, 0, stats, 0, cache, 0, new) == \
        pytest.approx(predictive, rel=1e-12)
    assert k.log_predictive_at(code, params, 0, stats, 0, np.nan) == 0.0
    # the defaults of the optional functions
    assert k.cell_constant(code, 2.0) == 0.0
    theta = np.array([1.5, math.log(1.5)])
    assert k.log_density_at(code, theta, 0, 2.0) == pytest.approx(math.log(1.5) - 3.0)
    out = np.zeros(x.size)
    k.add_log_kernels_at(code, theta, 0, x, 0, x.size, out)
    np.testing.assert_allclose(out, np.where(np.isnan(x), 0.0, math.log(1.5) - 1.5 * x))
    grid = np.array([params, [1.0, 2.0]])
    scores = np.empty(2)
    blocks = np.concatenate([stats, stats / 2.0])
    k.grid_log_scores_at(code, grid, 2, np.log([0.25, 0.75]), blocks, 0, 2, 2, scores)
    for g in range(2):
        naive = np.log([0.25, 0.75])[g] + sum(k.log_marginal_at(code, grid[g], 0, blocks, o)
                                              for o in (0, 2))
        assert scores[g] == pytest.approx(naive, rel=1e-12)
    # posterior draws of the rate: Gamma(a0 + n, b0 + sum x)
    np.random.seed(0)
    draws = np.empty((4000, 2))
    for r in range(draws.shape[0]):
        k.posterior_draw_at(code, params, 0, stats, 0, draws[r], 0)
    assert draws[:, 0].mean() == pytest.approx((params[0] + 4) / (params[1] + stats[1]),
                                               rel=0.05)
    # the shipped types keep their codes and numbers in the regenerated dispatch
    normal = CELL_MODELS["normal"]().fit(observed)
    p, s = normal.kernel_params(), np.zeros(3)
    for value in observed:
        k.accumulate_at(0, p, 0, s, 0, value, 1.0)
    assert k.log_marginal_at(0, p, 0, s, 0) == normal.log_marginal(observed)


def test_the_offset_zero_forms_pass_no_literal_to_the_dispatch():
    """The per-type kernels pass int64 codes and offsets, as the engines do: numba compiles
    each dispatcher once for every caller, not once more per literal argument."""
    from numba import njit, types

    array = types.float64[::1]
    arguments = {"add_cell": (array, array, types.float64, types.float64),
                 "log_marginal": (array, array), "log_predictive": (array, array, types.float64)}
    kernels = cell_kernels.KERNELS[-1]   # (one type: every type's forms share a template)
    for field, kernel in zip(kernels._fields, kernels):
        # a fresh, uncached copy: its typing calls the dispatchers (a cached kernel's
        # machine code would call none of them)
        njit(kernel.py_func).compile(arguments[field])
    for dispatcher in (cell_kernels.accumulate_at, cell_kernels.log_marginal_at,
                       cell_kernels.log_predictive_at):
        for signature in dispatcher.signatures:
            assert not any(isinstance(t, types.Literal) for t in signature), signature


def test_no_engine_names_a_cell_type():
    """Engines pass type codes to the dispatch; only ``models/cell_kernels.py`` branches."""
    pattern = re.compile(r"\b(NORMAL|BERNOULLI|POISSON|CATEGORICAL)\b|cell_types|"
                         r"code\s*==\s*(ck\.|k\.)|lgamma\(x")
    for path in Path(engines_package.__file__).parent.rglob("*.py"):
        assert not pattern.search(path.read_text()), path
