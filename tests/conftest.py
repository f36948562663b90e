import collections
import os
import sys
import time

import pytest

# The oracles (oracles.py) and scikit-learn recipes live at the top of tests/.
sys.path.insert(0, os.path.dirname(__file__))


class TickingClock:
    """A fake clock for :class:`~sklearn_trellis._core.progress.Progress`: every reading
    advances it by ``step`` seconds, so a fit's throttled lines appear at once."""

    def __init__(self, step):
        self.step = step
        self.now = 0.0

    def __call__(self):
        self.now += self.step
        return self.now


@pytest.fixture
def ticking_progress(monkeypatch):
    """``make(step)``: every ``Progress`` made afterwards reads a ``TickingClock(step)``."""
    from sklearn_trellis._core.progress import Progress

    init = Progress.__init__

    def make(step):
        def patched(self, name, verbose, **kwargs):
            kwargs["clock"] = TickingClock(step)
            init(self, name, verbose, **kwargs)
        monkeypatch.setattr(Progress, "__init__", patched)
    return make


# -- where a cold run's time goes ---------------------------------------------------
# SKLEARN_TRELLIS_COMPILE_REPORT=N prints, after the run, the N test files whose tests
# (or collection) triggered the most numba compilation: most of a run from an empty
# NUMBA_CACHE_DIR is compilation, charged to the first test that needs each kernel.
COMPILE_REPORT = int(os.environ.get("SKLEARN_TRELLIS_COMPILE_REPORT", "0") or 0)
_compile = {"where": "<import>", "depth": 0, "started": 0.0,
            "seconds": collections.Counter(), "count": collections.Counter()}


if COMPILE_REPORT:
    from numba.core import event

    class _CompileTimer(event.Listener):
        def on_start(self, ev):
            if _compile["depth"] == 0:
                _compile["started"] = time.perf_counter()
            _compile["depth"] += 1

        def on_end(self, ev):
            _compile["depth"] -= 1
            _compile["count"][_compile["where"]] += 1
            if _compile["depth"] == 0:
                _compile["seconds"][_compile["where"]] += time.perf_counter() - _compile["started"]

    event.register("numba:compile", _CompileTimer())

    def pytest_collectstart(collector):
        _compile["where"] = str(getattr(collector, "path", "") or "<collection>")

    def pytest_runtest_setup(item):
        _compile["where"] = str(item.path)

    def pytest_terminal_summary(terminalreporter):
        seconds, counts = _compile["seconds"], _compile["count"]
        root = str(terminalreporter.config.rootpath) + os.sep
        terminalreporter.section(f"numba compilation: {sum(seconds.values()):.0f} s in "
                                 f"{sum(counts.values())} compilations")
        for where, spent in seconds.most_common(COMPILE_REPORT):
            terminalreporter.write_line(f"{spent:8.1f} s {counts[where]:5d}  "
                                        f"{where.replace(root, '')}")
