import collections
import os
import sys
import time
import warnings

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


#: CPU seconds each test may spend running kernels interpreted (the library's
#: per-process budget is 1 s): a test's first small calls still run interpreted, and
#: the interpreter's slow loops give way to the compiled kernels (which the suite
#: compiles or loads anyway) after this much. With 1 s per test, interpretation took
#: 102 of the 277 CPU s of tests/ on a warm cache.
TEST_INTERPRETED_BUDGET_SECONDS = 0.1


@pytest.fixture(autouse=True)
def fresh_interpreter_budget(request, monkeypatch):
    """Every test starts with a fresh budget of interpreted kernels
    (:mod:`sklearn_trellis._core.interpreted`), ``TEST_INTERPRETED_BUDGET_SECONDS``:
    whether a small input runs compiled or interpreted then depends on the test alone,
    not on the tests before it. A test of the interpreted twins (``interpret`` in its
    id or an ``interpreted`` argument) keeps the library's whole budget: its interpreted
    runs must not turn compiled half-way."""
    from sklearn_trellis._core import interpreted
    monkeypatch.setattr(interpreted, "_spent", 0.0)
    if "interpret" not in request.node.nodeid and "interpreted" not in request.fixturenames:
        monkeypatch.setattr(interpreted, "INTERPRETED_BUDGET_SECONDS",
                            TEST_INTERPRETED_BUDGET_SECONDS)


# -- which worker runs what (pytest-xdist, --dist loadgroup) -------------------------
# Each test file is one unit of work (as --dist loadfile), except scikit-learn's estimator
# checks: one file of about 900 checks, the longest unit by far. They are split by
# estimator, and each estimator's checks run on one worker with the test files that
# compile the same kernels (a kernel compiled by both workers costs its compilation twice).
ESTIMATOR_FILES = {
    "ExactCorrelationClustering": ("tests/estimators/test_correlation_clustering.py",),
    "TrellisHierarchical": ("tests/estimators/test_trellis_hierarchical.py",),
    "DPMixture": ("tests/estimators/test_dp_mixture.py",),
    "EntropyAgglomeration": ("tests/estimators/test_entropy_agglomeration.py",),
    "FastTIWD": ("tests/estimators/test_fast_tiwd.py",),
    "DivisiveClustering": ("tests/estimators/test_divisive_clustering.py",
                           "tests/engines/divisive/"),
    "InfiniteBiclustering": ("tests/estimators/test_infinite_biclustering.py",),
    "BayesianHierarchicalClustering": (
        "tests/estimators/test_bayesian_hierarchical_clustering.py", "tests/engines/bhc/"),
    "CrossCat": ("tests/estimators/test_crosscat.py",),
}


def _work_unit(path, item):
    for estimator, prefixes in ESTIMATOR_FILES.items():
        if path.startswith(prefixes):
            return estimator
    if path.endswith("test_estimator_checks.py") and hasattr(item, "callspec"):
        return type(item.callspec.params["estimator"]).__name__
    return path


# A wrapper: the marks exist before xdist's worker reads them (in its own
# pytest_collection_modifyitems, which appends the group to each node id), and afterwards
# the ids show whether it did: on pytest 9.2 it cannot (pytest-dev/pytest-xdist#1386), the
# groups are silently ignored and every file is split across the workers, each compiling
# its kernels (about 60 CPU s more per cold run). pyproject.toml caps pytest below 9.2.
@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    # on an xdist worker, option.dist is "no" and option.loadgroup says what the run uses
    loadgroup = getattr(config.option, "loadgroup", False)
    if loadgroup:
        root = str(config.rootpath)
        for item in items:
            path = os.path.relpath(str(item.path), root).replace(os.sep, "/")
            item.add_marker(pytest.mark.xdist_group(_work_unit(path, item)))
    result = yield
    if loadgroup and items and "@" not in items[0].nodeid:
        warnings.warn("pytest-xdist did not group the tests (--dist loadgroup ignored, "
                      f"pytest {pytest.__version__}; pytest-dev/pytest-xdist#1386): test "
                      "files are split across the workers, each compiling their kernels.",
                      stacklevel=1)
    return result


# -- where a cold run's time goes ---------------------------------------------------
# Most of a run from an empty NUMBA_CACHE_DIR is numba compilation, charged here to the
# test file whose test (or collection) triggered it.
# SKLEARN_TRELLIS_COMPILE_LOG=DIR: every process (each xdist worker, or the single
#   process with -n 0) appends one JSON line per compilation to DIR/<worker>.jsonl:
#   function, signature, test file and test, own CPU seconds of the process (nested
#   compilations excluded; CPU rather than wall time, which a loaded machine inflates),
#   and one line per test: its CPU seconds (compilation included) and wall clock times.
# SKLEARN_TRELLIS_COMPILE_REPORT=N: after the run, sums the logs (in a temporary DIR
#   unless SKLEARN_TRELLIS_COMPILE_LOG names one): total seconds, the N test files and
#   kernels that cost most, kernels compiled by several workers, kernels compiled for
#   several signatures; the tests and files whose execution (CPU less compilation) costs
#   most; each worker's busy CPU and when its last test ended (the idle tail).
COMPILE_REPORT = int(os.environ.get("SKLEARN_TRELLIS_COMPILE_REPORT", "0") or 0)
COMPILE_LOG_ENV = "SKLEARN_TRELLIS_COMPILE_LOG"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
_compile = {"where": "<import>", "test": "", "stack": []}


def pytest_configure(config):
    # Before xdist starts its workers, so that they inherit the directory.
    if COMPILE_REPORT and not os.environ.get(COMPILE_LOG_ENV) and _WORKER == "main":
        import tempfile
        os.environ[COMPILE_LOG_ENV] = tempfile.mkdtemp(prefix="trellis_compile_")
    if os.environ.get(COMPILE_LOG_ENV):
        _start_compile_log(os.environ[COMPILE_LOG_ENV])


def _start_compile_log(directory):
    import json

    from numba.core import event

    os.makedirs(directory, exist_ok=True)
    log = open(os.path.join(directory, f"{_WORKER}.jsonl"), "a", buffering=1)

    class _CompileLogger(event.Listener):
        def on_start(self, ev):
            # [start, CPU seconds spent in nested compilations]
            _compile["stack"].append([time.process_time(), 0.0])

        def on_end(self, ev):
            started, nested = _compile["stack"].pop()
            spent = time.process_time() - started
            if _compile["stack"]:
                _compile["stack"][-1][1] += spent
            function = ev.data["dispatcher"].py_func
            log.write(json.dumps({
                "worker": _WORKER, "where": _compile["where"], "test": _compile["test"],
                "function": f"{function.__module__}.{function.__qualname__}",
                "signature": str(ev.data["args"]), "seconds": spent - nested,
                "depth": len(_compile["stack"])}) + "\n")

    event.register("numba:compile", _CompileLogger())
    _compile["log"] = log


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # here, unlike the report hooks, only in the process that runs the test
    cpu, wall = time.process_time(), time.time()
    yield
    if "log" in _compile:
        import json
        _compile["log"].write(json.dumps({
            "worker": _WORKER, "test_run": item.nodeid, "cpu": time.process_time() - cpu,
            "start": wall, "end": time.time()}) + "\n")


def pytest_collectstart(collector):
    _compile["where"] = os.path.relpath(str(getattr(collector, "path", "") or "."))
    _compile["test"] = ""


def pytest_runtest_setup(item):
    _compile["where"] = os.path.relpath(str(item.path))
    _compile["test"] = item.nodeid


def pytest_terminal_summary(terminalreporter):
    if not COMPILE_REPORT or _WORKER != "main":
        return
    import glob
    import json

    records = []
    for path in glob.glob(os.path.join(os.environ[COMPILE_LOG_ENV], "*.jsonl")):
        with open(path) as lines:
            records += [json.loads(line) for line in lines]
    runs = [r for r in records if "test_run" in r]
    records = [r for r in records if "test_run" not in r]
    write = terminalreporter.write_line
    by_file, by_test, by_kernel = (collections.Counter() for _ in range(3))
    workers, signatures = collections.defaultdict(set), collections.defaultdict(set)
    for r in records:
        by_file[r["where"]] += r["seconds"]
        by_test[r.get("test") or r["where"]] += r["seconds"]
        by_kernel[r["function"], r["signature"]] += r["seconds"]
        workers[r["function"], r["signature"]].add(r["worker"])
        signatures[r["function"]].add(r["signature"])
    twice = {k: s for k, s in by_kernel.items() if len(workers[k]) > 1}
    terminalreporter.section(
        f"numba compilation: {sum(by_file.values()):.0f} CPU s in {len(records)} compilations "
        f"({len(by_kernel)} distinct); compiled by several workers: {len(twice)} "
        f"kernels, {sum(twice.values()):.0f} s (log: {os.environ[COMPILE_LOG_ENV]})")
    write("test files:")
    for where, spent in by_file.most_common(COMPILE_REPORT):
        write(f"{spent:8.1f} s  {where}")
    write("tests (or test files, for collection):")
    for test, spent in by_test.most_common(COMPILE_REPORT):
        write(f"{spent:8.1f} s  {test}")
    write("kernels (function, signature):")
    for (function, signature), spent in by_kernel.most_common(COMPILE_REPORT):
        write(f"{spent:8.1f} s  x{len(workers[function, signature])}  {function} {signature}")
    write("functions compiled for several signatures:")
    several = sorted(((sum(by_kernel[f, s] for s in sigs), f, len(sigs))
                      for f, sigs in signatures.items() if len(sigs) > 1), reverse=True)
    for spent, function, count in several[:COMPILE_REPORT]:
        write(f"{spent:8.1f} s  {count:3d} signatures  {function}")
    _write_execution(terminalreporter, runs, by_test)


def _write_execution(terminalreporter, runs, compiled_in_test):
    """Execution CPU (a test's CPU less the compilation it triggered) per test and file,
    and each worker's load: what marking tests slow or shrinking them can still save."""
    write = terminalreporter.write_line
    execution, by_file = {}, collections.Counter()
    for r in runs:
        execution[r["test_run"]] = r["cpu"] - compiled_in_test.get(r["test_run"], 0.0)
        by_file[r["test_run"].split("::")[0]] += execution[r["test_run"]]
    terminalreporter.section(
        f"test execution: {sum(execution.values()):.0f} CPU s in {len(runs)} tests "
        f"(their CPU less the compilation they triggered)")
    start = min((r["start"] for r in runs), default=0.0)
    for worker in sorted({r["worker"] for r in runs}):
        mine = [r for r in runs if r["worker"] == worker]
        write(f"{worker}: {len(mine)} tests, {sum(r['cpu'] for r in mine):.0f} CPU s, last test "
              f"ended {max(r['end'] for r in mine) - start:.0f} s after the first began")
    write("test files:")
    for where, spent in by_file.most_common(COMPILE_REPORT):
        write(f"{spent:8.1f} s  {where}")
    write("tests:")
    for test, spent in sorted(execution.items(), key=lambda item: -item[1])[:COMPILE_REPORT]:
        write(f"{spent:8.1f} s  {test}")
