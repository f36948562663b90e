"""First fit of every estimator in a fresh environment (empty numba cache).

For each of the package's nine estimators, a fresh Python process with its own
empty ``NUMBA_CACHE_DIR`` (a new temporary directory) imports
``sklearn_trellis`` and fits the estimator twice, with default parameters, on
a small problem:

- ``X``: 40 x 4, three Gaussian blobs (``make_blobs(n_samples=40,
  n_features=4, centers=3, random_state=0)``);
- ``FastTIWD``: the 40 x 40 squared Euclidean distances of ``X`` (its default
  ``metric='precomputed'``);
- ``EntropyAgglomeration``: 50 sampled clusterings of the 40 points (the true
  labels with 10% of them redrawn at random, per sample);
- ``ExactCorrelationClustering@12``: the first 12 rows, which the exact
  trellis enumerates (40 items run on the sparse one): the case of the demo,
  ``python -m sklearn_trellis``, and of a user with a dozen samples.

The table gives the import time, the first fit (seconds, wall clock and
the process's CPU time, less sensitive to the machine's load) and the second
fit (wall clock), and the numba compilations of the first fit: how many functions
numba compiled (its ``numba:compile`` events; loading a cached function is not
one) and the seconds spent in them (outermost compilations only; nested ones
are inside their caller's time). The second fit of a fresh estimator compiles
nothing: it measures the fit itself. The load average of the machine is
printed before and after, as other jobs slow compilation down.

Run: ``python benchmarks/bench_cold_start.py [--estimators NAME ...] [--top K]
[--code REPOSITORY ...]`` (``--code /work/main .`` runs each estimator on the
package of each repository in turn: old and new code in the same run)
(``--top K`` also lists, per estimator, the K package functions that caused the
most compilation: their own and that of numba's library code they call, such
as sorting; ``--warm`` keeps one cache directory across the estimators and runs
every estimator twice, the second time from the cache the first run wrote,
to show what a user's second session costs).

Measured on the reference machine (2 cores shared with other jobs, load 13 to
20, so the wall-clock seconds are mostly waiting; the CPU seconds and the
number of compilations are the comparable figures). Numba compilations of
the first fit, before and after the compile-time changes of issue 29 (serial
twins of parallel kernels for small inputs, no slice copies or numba sorts in
the kernels of a small fit): ExactCorrelationClustering 121 -> 73,
TrellisHierarchical 139 -> 133, DPMixture 138 -> 137, EntropyAgglomeration
98 -> 57 (CPU 23.4 s -> 19.1 s), DivisiveClustering 24 -> 22,
InfiniteBiclustering 172 -> 171, BayesianHierarchicalClustering 94 -> 57,
FastTIWD 68 -> 68, CrossCat 199 -> 199. First-fit CPU seconds after: 31, 52,
40, 19, 6, 60, 23, 20, 116 respectively (DPMixture's before the greedy loss
search lost its slice copy): far
from the 5 s goal, which needs fewer, larger kernels (numba compiles every
``njit`` function a fit reaches separately, ~0.3 s each at least).

On a quiet machine (2026-11-26, load 1.3, after issue 29's second round; the
first fit's wall and CPU seconds, its compilations)::

    estimator                        import first fit     (cpu)   2nd fit compiled compile s
    ExactCorrelationClustering         4.04     24.21     24.09     0.026       66     23.28
    TrellisHierarchical                3.95     36.58     36.54     0.009      128     35.65
    DPMixture                          3.14     28.37     28.48     0.443       97     27.40
    FastTIWD                           3.24     18.36     18.47     0.126       71     17.72
    EntropyAgglomeration               3.61     16.55     16.55     0.003       57     15.94
    DivisiveClustering                 3.79      6.55      6.55     0.002       25      5.92
    InfiniteBiclustering               3.55     44.68     44.79     0.442      118     43.59
    BayesianHierarchicalClustering     3.52     17.11     17.11     0.084       59     16.49
    CrossCat                           4.06     88.59     88.54     0.074      164     87.85

After the third round (2026-11-26 evening, load 1.0; fewer library calls and
literal-argument twins, inlined helpers)::

    estimator                        import first fit     (cpu)   2nd fit compiled compile s
    ExactCorrelationClustering         3.89     19.87     19.87     0.016       67     19.02
    TrellisHierarchical                2.52     26.07     26.07     0.012       85     25.46
    DPMixture                          3.77     26.89     26.99     0.319       81     25.87
    FastTIWD                           3.16     10.25     10.36     0.072       60      9.71
    EntropyAgglomeration               2.63      9.22      9.22     0.002       51      8.76
    DivisiveClustering                 2.53      4.20      4.20     0.002       25      3.82
    InfiniteBiclustering               2.59     34.79     34.89     0.440      102     33.94
    BayesianHierarchicalClustering     3.79     14.98     14.98     0.087       56     14.29
    CrossCat                           3.89     77.13     77.11     0.037      150     76.42

CrossCat, after its kernels stopped compiling what a fit does not run (the
parallel loops below ``PARALLEL_CELLS`` cells and the collapsed scan of a slice
fit are pruned by numba on a ``None`` argument) and the cell types' kernels
outside the cell loops were inlined into their dispatchers: 201 -> 172
compilations, first-fit CPU 148 s -> 109 s (load 18-21); with ``grown``
copying by loops instead of slice assignments (alone: 9 compilations instead
of 53), 164 and 99 s. InfiniteBiclustering (the inlined cell kernels): 167 -> 155,
CPU 67 s -> 64 s; the cell blocks' ``_prepare`` copying by loops compiles 10
functions instead of 47 (alone: 3.0 s CPU instead of 8.9 s). The slice copies
left in CrossCat's ``split_merge_rows`` now carry numba's slice machinery there.

Literal arguments (2026-11-27): numba compiles a callee once per distinct
literal value passed to it from compiled code (``f(x, 0)`` and ``f(x, 1)``
are two compilations, and a counter started at ``0`` and passed on compiles
its callee once for ``Literal[int](0)`` and once for ``int64``). With typed
values (``np.int64(0)``, ``np.bool_(True)``) at those call sites, each kernel
compiles once: ``family._insert`` 6 -> 1, the point-estimate search's
``_costs``/``_update``/``_choose``/``cm_loss`` 2 -> 1 each, ``_splits_of``
and the split-merge's ``_allocate`` 2 -> 1. Same run, base then after (load
14 to 18; first-fit CPU seconds, compilations): DPMixture 39.8 s / 81 ->
36.4 s / 75, TrellisHierarchical 40.5 s / 85 -> 33.5 s / 79,
ExactCorrelationClustering 28.9 s / 67 -> 26.6 s / 66 (load 12 to 16). Per kernel,
numba's front end (type inference and lowering) takes most of a compilation
and LLVM (time under its lock) a quarter to a third; the largest remaining
kernels of a default small fit are the point-estimate search (about 14 s CPU
of DPMixture's first fit, ``point_estimate='vi'``), the Gibbs
``split_merge``/``gibbs_scan`` and ECC's ``enumerate_states``.
One version per kernel (2026-11-27, later): over fixed-seed fits of all nine
estimators (small and mid-size, several options), package kernels compiled for
more than one signature went from 15 (20 extra versions: ``log_marginal_at`` x3,
the cell types' ``accumulate`` x3, ``n_clusters_range`` for a column slice and a
fresh array, the likelihood kernels for a literal slot ``0``) to none, with
bitwise-equal outputs. Numba also compiles its own library code (``np.empty``,
``max``...) once per compiler-flag set of the calling kernel, so helpers called
only from compiled code are no longer ``nogil``. Same run, base then after (load
8.6 to 5.7; first-fit CPU seconds, compilations): BayesianHierarchicalClustering
17.1 s / 45 -> 12.0 s / 40, ExactCorrelationClustering 23.0 s / 66 -> 19.1 s / 66
(its default fit reaches none of these kernels: the difference is load).
A read-only input (scikit-learn's ``readonly_memmap`` checks) recompiles nothing
in DPMixture's and TrellisHierarchical's fit and predict and one function in
ExactCorrelationClustering's (same process, after a writeable fit).
What a small fit compiles at all (2026-11-27, eighth round): up to 1,000 items
the seed linkages are scipy's own (the same matrices: no nearest-neighbour
chains, MST or ``label`` to compile), the finiteness/symmetry checks up to 10^6
entries are numpy's, the sparse flat trellis runs its outside pass on the first
query (the seed search's trial trellises never need it), fastTIWD's single
linkage runs its kernels' ``py_func`` up to 100 items, and float allocations
say ``np.float64`` in the trellis, BHC and fastTIWD kernels (numba compiles
``np.empty(n)``, ``np.zeros(n)`` and ``np.empty(n, np.float64)`` separately).
Main then this branch, alternating per estimator, same run (load 18 to 22;
first-fit CPU seconds, compilations): TrellisHierarchical 13.8 s / 83 ->
12.3 s / 63, ExactCorrelationClustering 11.3 s / 66 -> 9.0 s / 54, FastTIWD
8.9 s / 65 -> 7.7 s / 44, BayesianHierarchicalClustering 8.4 s / 40 ->
8.1 s / 35. The rest is the kernels a small sparse fit does run (ECC's
``enumerate_states`` alone: 4.8 to 5.1 s CPU to compile at load 17).

Per family of losses and without slice copies (2026-11-27, eighth round): the
point-estimate search is compiled per family of losses (Binder and VI, the other
contingency losses, the pairwise ones: its kernels branch on a bound constant that
numba prunes), and CrossCat's row and column kernels copy blocks by loops (an
array-to-array slice assignment compiled numba's shape-mismatch message: 37
functions). Process CPU seconds are what compilation costs: numba's own
library functions (``np.zeros``/``np.empty`` per dtype and shape, ``min``,
random draws) take 0.02-0.07 s each, 1.5 s over DPMixture's 38; the package's
top-level kernels (``split_merge``, the search, CrossCat's ``sweep``) take most.
Same runs, main then this change back to back (load 17 to 21; first-fit CPU
seconds, compilations; the search compiled per loss then): DPMixture 13.66 / 74 ->
12.91 / 72, 13.56 -> 12.37, 14.50 -> 13.29; CrossCat 30.86 / 144 -> 26.49 / 107.
Per family, quieter (load 3.6 to 5.5): DPMixture 13.27 / 74 -> 11.49 / 72 (wall
20.4 -> 17.5 s), CrossCat 27.68 / 144 -> 22.99 / 107 (wall 54.6 -> 27.3 s).

Interpreted structure kernels (2026-11-27, tenth round): on small inputs the
sparse trellises' integer kernels run their own Python source
(:mod:`sklearn_trellis._core.interpreted`, bitwise the same values; each call
site bounds the work, and a process stops interpreting after 1 s of it): the
state enumeration (up to 48 items), the family builder and ``leaf_order``,
hierarchical edge discovery, the pair sums and the MAP read-off; a family's
remainder states are memoised. Base then this branch, alternating, twice
(load 10.5 to 16.2; first-fit CPU seconds, compilations):
ExactCorrelationClustering 9.31 / 54 -> 1.54 / 11 and 9.76 -> 1.56,
TrellisHierarchical 12.66 / 64 -> 3.62 / 24 and 12.76 -> 3.63 (wall seconds
63.8 -> 9.3 and 127.7 -> 22.4 at that load). The second fit of a process pays the interpreter instead: warm, 9 ms ->
90 ms (ECC) and 6 ms -> 99 ms (TrellisHierarchical) CPU for the first dozen fits,
then the compiled kernels as before.

Fewer compilation roots (2026-11-27, tenth round): numba optimises and emits
machine code for a kernel together with every callee linked into it (each
compiled function's module links its callees' and runs the full LLVM pipeline
again), so a kernel that only sequences others costs about as much as all of
them: CrossCat's compiled sweep took 3 s of CPU of a small first fit, nearly all
of it lowering. The sweep is now a Python sequence of the move kernels on one
seed of numba's generator (the same draws: outputs bitwise unchanged, 0.01 ms
more per sweep on 40 x 4), and the one-line wrappers of InfiniteBiclustering's
block kernels are inlined. Main then this change (load 12.6 to 15.7; first-fit
CPU seconds, compilations): CrossCat 27.87 / 107 -> 25.19 / 107,
InfiniteBiclustering 18.33 / 90 -> 17.30 / 84. What is left is the move kernels
themselves and the cell types a table does not have: with the dispatch cut to
the normal type alone (an upper bound for a numeric table; load 10), CrossCat
26.25 / 107 -> 22.21 / 94 and InfiniteBiclustering 16.66 / 90 -> 15.51 / 84.

Interpreted point-estimate search (2026-11-27, eleventh round): the default
``point_estimate='vi'`` labels compiled ten package functions, one signature each
(the same for InfiniteBiclustering's rows and columns): the samples' renumbering
(``canonical_rows``, ``compact_labels``), the candidates' losses (``cm_losses``,
``cm_loss``, ``xlogx_table``) and the search (``greedy_search``, ``_update``,
``_costs``, ``_choose``, ``_loss_value``); about 3 s of CPU, most of it the search's
own loops (inlining its helpers into it: no change; pruning Binder's branches
from VI's kernels: about 3 %). Binder's and VI's kernels only add, multiply and compare entries of
the ``x log x`` table, now computed compiled by the caller: on small inputs they
run their own Python source (bitwise the same labels and losses; each distinct
sample scored once), and a small fit compiles ``xlogx_table`` alone. The
interpreted search takes about 0.4 s CPU for DPMixture's 200 samples of 40 items,
so a process's third such fit compiles it (the interpreter's budget). Main then
this change, back to back (load 10.1 to 6.6; first-fit CPU seconds,
compilations): DPMixture 13.51 / 71 -> 9.44 / 43, InfiniteBiclustering
16.61 / 83 -> 12.53 / 55.

Eleventh round, all changes merged (2026-11-27, quiet, load 0.9 to 1.0; before:
the same machine that morning, load about 0.3)::

    estimator                        import first fit     (cpu)   2nd fit compiled compile s
    ExactCorrelationClustering         1.55      1.16      1.16     0.087        8      0.83
    ExactCorrelationClustering@12      1.54      1.85      1.85     0.004       16      1.58
    TrellisHierarchical                1.52      2.91      2.91     0.095       26      2.55
    DPMixture                          1.55      6.92      6.93     0.506       35      6.04
    FastTIWD                           1.60      6.34      6.34     0.113       32      5.95
    EntropyAgglomeration               1.57      0.62      0.62     0.069        6      0.32
    DivisiveClustering                 1.56      1.70      1.70     0.001       12      1.45
    InfiniteBiclustering               1.57      7.59      7.60     0.423       41      6.86
    BayesianHierarchicalClustering     1.51      4.03      4.03     0.031       13      3.73
    CrossCat                           1.55     22.84     22.84     0.046      113     22.42

Before (first-fit CPU s / compilations): DPMixture 11.28 / 71, FastTIWD 7.80 / 37,
InfiniteBiclustering 14.94 / 83, BayesianHierarchicalClustering 7.07 / 33, CrossCat
23.99 / 113; ExactCorrelationClustering@12 7.17 / 21 (main's code, load 10). What
changed: the exact flat trellis runs layers below 12 bits with its one-loop kernels
(the blocked, unrolled ones are for larger layers); BHC's three greedy phases are one
kernel, its workspaces come from NumPy, the tree shape is a compile-time constant and
kernels only called by kernels compile without Python entry points
(``_core.compilation.CALLEE_ONLY``); the split-merge kernel's restore-everything path
is bound per model, and small states are built and scored by the kernels' Python
source around the compiled likelihood kernels; the point-estimate search runs
interpreted on small inputs; InfiniteBiclustering compiles only the data's cell type.
DPMixture's second fit (0.5 s) is the interpreted search.

The Gibbs engine's call sites and wrappers (2026-11-28): LLVM does not inline the
likelihood kernels into ``split_merge`` (its optimised module keeps 6 calls of
``niw_log_cluster``, 4 of ``niw_remove``, 4 of ``niw_add``), but every kernel a root
calls is optimised and emitted again inside that root's module: ``split_merge``'s
9,062 lines of IR are 3,146 of its own and the bodies of its callees. So one path for
split and merge (one call site per likelihood function) changed it to 8,778 lines and
``gibbs_scan`` with one predictive site 5,761 -> 5,748, no measurable CPU; helpers that
collect the call sites cost more than they save (outputs were bitwise equal; not
kept). What helps is fewer entry points: ``_allocate``, ``_copy_state`` and
``sample_log_weights`` compile without Python wrappers (``CALLEE_ONLY``; ``_allocate``'s
module 2,884 -> 2,228 lines), and the NIW and Normal-Gamma ``refresh`` (reset and add
every item) runs its Python source around the compiled ``reset``/``add`` on small
states (0.03 ms a sweep at 40 items). Main then this change, same runs (load 3.8 to
1.5, then 1.1 to 1.6; first-fit CPU seconds, compilations): DPMixture 6.68 / 35 ->
6.29 / 33 and 6.50 -> 6.14, FastTIWD 6.24 / 32 -> 6.06 / 31 and 6.41 -> 5.84,
InfiniteBiclustering 8.03 / 41 -> 7.76 / 41 and 7.80 -> 8.07 (noise), CrossCat
24.48 / 115 -> 24.29 / 116 (numba's ``random()`` once more for ``sample_log_weights``'
flags). What is left is the engine's two roots themselves: ``split_merge`` 1.9 s and
``gibbs_scan`` 0.8 s of DPMixture's 5.3 s of compilation.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ESTIMATORS = ("ExactCorrelationClustering", "ExactCorrelationClustering@12",
              "TrellisHierarchical", "DPMixture", "FastTIWD",
              "EntropyAgglomeration", "DivisiveClustering", "InfiniteBiclustering",
              "BayesianHierarchicalClustering", "CrossCat")

_CHILD = r"""
import json, sys, time
start = time.perf_counter()
from numba.core import event
import numpy as np
import sklearn_trellis
from sklearn.base import clone
from sklearn.datasets import make_blobs
import_seconds = time.perf_counter() - start

name, top = sys.argv[1], int(sys.argv[2])
X, y = make_blobs(n_samples=40, n_features=4, centers=3, random_state=0)
name, _, n_rows = name.partition("@")  # "Estimator@12": its first fit on the first 12 rows
if n_rows:
    X, y = X[:int(n_rows)], y[:int(n_rows)]
if name == "FastTIWD":
    X = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
elif name == "EntropyAgglomeration":
    rng = np.random.default_rng(0)
    samples = np.tile(y, (50, 1))
    redraw = rng.random(samples.shape) < 0.1
    samples[redraw] = rng.integers(0, 3, redraw.sum())
    X = samples
estimator = getattr(sklearn_trellis, name)()

def fit_recorded(model):
    with event.install_recorder("numba:compile") as recorder:
        t0, c0 = time.perf_counter(), time.process_time()
        model.fit(X)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    # The package's functions, each with the seconds of compilation it caused
    # itself: its own and that of numba's library code it pulled in (sorting,
    # error messages, ...), not that of the package functions it calls.
    opened, compile_seconds, n_compiled, own = [], 0.0, 0, {}
    for stamp, ev in recorder.buffer:
        dispatcher = ev.data["dispatcher"]
        name = dispatcher.py_func.__module__ + "." + dispatcher.py_func.__qualname__
        ours = name.startswith("sklearn_trellis")
        if ev.is_start:
            n_compiled += 1
            opened.append([stamp, name, ours, 0.0])
            continue
        began, name, ours, nested = opened.pop()
        if not opened:
            compile_seconds += stamp - began
        if ours or not opened:
            own[name] = own.get(name, 0.0) + stamp - began - nested
            if opened:
                opened[-1][3] += stamp - began
        else:
            # numba's own code: charged to the package function that pulled it in
            owner = next((frame for frame in reversed(opened) if frame[2]), opened[0])
            for frame in opened[opened.index(owner) + 1:]:
                frame[3] -= stamp - began
    slowest = sorted(((s, n) for n, s in own.items()), reverse=True)[:top]
    return seconds, cpu, n_compiled, compile_seconds, slowest

first, cpu, n_compiled, compile_seconds, slowest = fit_recorded(clone(estimator))
second, _, n_compiled_2, _, _ = fit_recorded(clone(estimator))
print(json.dumps(dict(import_seconds=import_seconds, first=first, first_cpu=cpu, second=second,
                      n_compiled=n_compiled, compile_seconds=compile_seconds,
                      n_compiled_second=n_compiled_2, slowest=slowest)))
"""


def run_child(name, cache_dir, top, root=None):
    """Run the child in a fresh process; ``root``: the repository whose package it imports
    (default: this file's)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    # cwd=root: ``python -c`` puts the working directory first on sys.path, ahead of
    # PYTHONPATH, so run from elsewhere the child would import that directory's package
    out = subprocess.run([sys.executable, "-c", _CHILD, name, str(top)], env=env, cwd=root,
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{name} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def print_row(name, r, width=31):
    print(f"{name:<{width}} {r['import_seconds']:>7.2f} {r['first']:>9.2f} {r['first_cpu']:>9.2f} "
          f"{r['second']:>9.3f} "
          f"{r['n_compiled']:>8d} {r['compile_seconds']:>9.2f}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimators", nargs="*", default=ESTIMATORS, choices=ESTIMATORS)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--code", nargs="*", default=[None], metavar="REPOSITORY",
                        help="repositories whose package the fits import, each estimator "
                             "run once per repository in turn (old and new code in the same "
                             "run); default: this file's")
    args = parser.parse_args(argv)

    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    width = 31 if args.code == [None] else 45
    print(f"{'estimator':<{width}} {'import':>7} {'first fit':>9} {'(cpu)':>9} {'2nd fit':>9} "
          f"{'compiled':>8} {'compile s':>9}")
    start = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as shared:
        for name in args.estimators:
            for root in args.code:
                label = (name if root is None
                         else f"{name} [{os.path.basename(os.path.abspath(root))}]")
                with tempfile.TemporaryDirectory() as own:
                    cache_dir = shared if args.warm else own
                    results[label] = r = run_child(name, cache_dir, args.top, root)
                    print_row(label, r, width)
                    if args.warm:
                        print_row("  (next session)", run_child(name, cache_dir, args.top, root),
                                  width)
    worst = max(results, key=lambda n: results[n]["first"])
    print(f"slowest first fit: {worst} {results[worst]['first']:.2f} s; "
          f"total {time.perf_counter() - start:.0f} s")
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.top:
        for name, r in results.items():
            print(f"\n{name}: compile seconds caused by each package function (its own "
                  f"compilation and the numba library code it pulled in)")
            for seconds, function in r["slowest"]:
                print(f"  {seconds:7.2f}  {function}")


if __name__ == "__main__":
    main()
