"""The one-line notice of a fit that compiles numba kernels (``_core.compilation``)."""

import numpy as np
import pytest
from numba import njit

from sklearn_trellis._core import compilation
from sklearn_trellis._core.compilation import announces_compilation


class _Compiles:
    """A stand-in estimator whose ``fit`` compiles a fresh (uncached) numba function."""

    def __init__(self, signature):
        self.signature = signature

    @announces_compilation
    def fit(self, x):
        @njit
        def total(values):
            acc = 0.0
            for v in values:
                acc += v
            return acc
        # Each call compiles a new dispatcher: a fit that always compiles.
        self.total_ = total(np.asarray(x, dtype=self.signature))
        return self


class _Nested:
    @announces_compilation
    def fit(self, x):
        _Compiles(np.float64).fit(x)
        return self


@pytest.fixture
def fresh_notices(monkeypatch):
    monkeypatch.setattr(compilation, "_announced", set())
    monkeypatch.setattr(compilation, "NOTICE_AFTER_SECONDS", 0.0)


def test_notice_once_per_estimator_class_and_process(fresh_notices, capsys):
    assert _Compiles(np.float64).fit([1.0, 2.0]).total_ == 3.0
    first = capsys.readouterr()
    assert first.out == ""
    assert first.err.count("\n") == 1
    assert first.err.startswith("sklearn_trellis: compiling _Compiles's numba kernels")
    _Compiles(np.float32).fit([1.0, 2.0])  # compiles again: already announced
    assert capsys.readouterr().err == ""


def test_no_notice_below_the_threshold_nor_without_compilation(monkeypatch, capsys):
    monkeypatch.setattr(compilation, "_announced", set())
    monkeypatch.setattr(compilation, "NOTICE_AFTER_SECONDS", 3600.0)
    _Compiles(np.float64).fit([1.0])
    assert capsys.readouterr().err == ""

    @njit
    def twice(x):
        return 2 * x

    twice(1.0)  # compiled before the fit: the fit below compiles nothing

    class Warm:
        @announces_compilation
        def fit(self):
            return twice(1.0)

    monkeypatch.setattr(compilation, "NOTICE_AFTER_SECONDS", 0.0)
    assert Warm().fit() == 2.0
    assert capsys.readouterr().err == ""
    assert "Warm" not in compilation._announced


def test_a_nested_fit_is_covered_by_the_outer_notice(fresh_notices, capsys):
    _Nested().fit([1.0])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "_Nested's" in err
    assert "_Compiles" not in compilation._announced


def test_every_estimator_announces():
    import sklearn_trellis

    estimators = [getattr(sklearn_trellis, name) for name in sklearn_trellis.__all__]
    estimators = [e for e in estimators if isinstance(e, type)]
    assert len(estimators) == 9
    for estimator in estimators:
        assert getattr(estimator.fit, "announces_compilation", False), estimator.__name__
