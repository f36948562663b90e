"""TrellisHierarchical at scale, against AgglomerativeClustering in the same run (issues 13, 29).

Both at default parameters (``n_clusters=10``), on blobs in 10-d:

1. N = 10,000, no connectivity: wall time (target: at most 2x
   ``AgglomerativeClustering``'s);
2. N = 20,000, no connectivity: peak memory (target: at most 1.5x
   ``AgglomerativeClustering``'s);
3. N = 100,000 with a 10-nearest-neighbour connectivity graph: wall time
   (target: at most 60 s; the MAP log-potential at least every seed tree's).

The machine may be shared: the load average is printed with the figures, and
the ratios (both estimators measured in the same run) are what to compare.

Each fit runs in a fresh process (``multiprocessing`` spawn), so its peak
resident memory (``ru_maxrss``) is its own; the line gives its wall-clock and
CPU time (``getrusage``: user + system of all its threads; under load the CPU
ratio is the one to compare). numba compilation is done (or loaded from the
disk cache) by two warm-up fits on small data first, the second with
``sklearn_trellis._core.parallel.PARALLEL_MIN_WORK`` at zero so that the
parallel twins of the kernels, which a large fit runs and a small one does
not, are compiled too, and each warm-up fit scores its seed trees as the
report does. The clock covers the fit only (not the seed trees' log-potentials
the line reports); the trellis line counts the numba compilations after the
warm-up and names any it missed (0 expected).
Prints one line per fit, or the refusal (memory is checked before
allocation) if a fit cannot run.

Run: ``PYTHONPATH=. python benchmarks/bench_drop_in_scale.py [--skip-20k] [--skip-100k]``
(``--help`` describes the options).

Output (2026-11-27, quiet machine, ``--skip-20k``), after the constrained
average/complete linkage re-pushes only the edges whose distance changes (the
N = 100,000 fit took 147.4 s before)::

    sklearn  N=10,000: ok, wall 8.84 s, CPU 8.81 s, peak 0.97 GiB
    trellis  N=10,000: ok, wall 13.31 s, CPU 14.84 s, peak 1.36 GiB -- MAP log-potential -3.08414e+08, ...
    N=10,000: time ratio 1.51x wall, 1.68x CPU (target <= 2x); load average 0.91, 1.21, 4.51
    sklearn  N=100,000, 10-NN graph: ok, wall 107.23 s, CPU 137.48 s, peak 0.75 GiB
    trellis  N=100,000, 10-NN graph: ok, wall 90.71 s, CPU 90.70 s, peak 1.47 GiB -- MAP log-potential -6.28463e+08, ...
    N=100,000 with a 10-NN graph: 90.7 s wall, 90.7 s CPU (target <= 60 s), 0.85x AgglomerativeClustering's wall time, 0.66x its CPU time, peak 1.47 GiB

Output (2026-11-26, 2 cores shared with seven other jobs: wall times and
time ratios are not meaningful at these loads; peak memory is). Before issue
29's memory work (distances as an (N, N) matrix by scikit-learn's dot-product
expansion, its condensed copy for the seeds, a second pdist for Ward, a fresh
(N, N) similarity matrix)::

    load average 0.46, 0.65, 0.88
    sklearn  N=10,000: ok, 7.63 s, peak 0.97 GiB
    trellis  N=10,000: ok, 137.13 s, peak 2.68 GiB -- MAP log-potential -1.18386e+11, ...
    N=10,000: time ratio 17.98x (target <= 2x); load average 5.38, 3.28, 1.91
    sklearn  N=20,000: ok, 347.17 s, peak 3.20 GiB
    trellis  N=20,000: ok, 1145.27 s, peak 9.23 GiB -- MAP log-potential -9.46409e+11, ...
    N=20,000: peak memory ratio 2.88x (target <= 1.5x); load average 13.18, 12.97, 10.48

Then (condensed exact distances shared by the four seeds, the energy's
(N, N) matrix lent to the linkages and turned into similarities in place)::

    load average 17.21, 15.28, 13.43
    sklearn  N=10,000: ok, 115.00 s, peak 0.97 GiB
    trellis  N=10,000: ok, 229.29 s, peak 1.59 GiB -- MAP log-potential -1.18386e+11, ...
    N=10,000: time ratio 1.99x (target <= 2x); load average 20.05, 18.19, 15.42
    sklearn  N=20,000: ok, 667.64 s, peak 3.20 GiB
    trellis  N=20,000: ok, 725.90 s, peak 5.11 GiB -- MAP log-potential -9.46409e+11, ...
    N=20,000: peak memory ratio 1.59x (target <= 1.5x); load average 14.55, 18.14, 19.11

On a quiet machine (2026-11-24) N = 10,000 took 17.2 s against 4.6 s (3.7x)
and N = 100,000 with a 10-NN graph 100 s against 66 s.

Now (one (N, N) array for everything: the euclidean seed linkages refill it
with ``pdist``'s exact distances before each nearest-neighbour chain instead of
copying a condensed vector, then it holds the energy's similarities; no
condensed copy and no (N, N) boolean temporary), at load 14 to 21; the MAP
trees are unchanged (the distances are ``pdist``'s, bit for bit; the default
energy's local scales changed since the runs above, hence other
log-potentials)::

    load average 13.98, 13.53, 9.83
    sklearn  N=10,000: ok, wall 142.40 s, CPU 13.69 s, peak 0.97 GiB
    trellis  N=10,000: ok, wall 230.85 s, CPU 22.60 s, peak 1.28 GiB -- MAP log-potential
        -3.08414e+08, best seed tree -3.08779e+08 (MAP >= every seed: True); 226,928
        clusters; numba compilations during the measured fit: 3 (warm-up missed them: ...)
    N=10,000: time ratio 1.62x wall, 1.65x CPU (target <= 2x); load average 19.05, 17.72, 13.53
    sklearn  N=20,000: ok, wall 560.07 s, CPU 64.46 s, peak 3.20 GiB
    trellis  N=20,000: ok, wall 692.31 s, CPU 90.92 s, peak 3.71 GiB -- MAP log-potential
        -1.86212e+09, best seed tree -1.87824e+09 (MAP >= every seed: True); 456,973
        clusters; numba compilations during the measured fit: 0
    N=20,000: peak memory ratio 1.16x (target <= 1.5x); load average 19.86, 21.38, 20.35

(The 3 compilations of that N = 10,000 fit came from source files edited
while the run went on, which invalidates their numba cache.) The time target
is to be judged on a quiet machine: the three compiled nearest-neighbour
chains of the seeds cost about as much as scikit-learn's whole Ward tree.

Issue 29, third round. A quiet run (load ~1) had counted one compilation in
the N = 10,000 fit: the report's ``seed_tree_log_potentials`` compiled
``edges_of_children``, which no warm-up fit ran (2.03x CPU, 1.88x wall). The
warm-up now scores its seed trees too and the clock stops before the report.
Edge discovery reads one record per tree node (2.6x less CPU), the distance
fills run in SIMD lanes and the distances are scaled back by a product
instead of ``ldexp``; the MAP tree, its log-potential and every seed tree are
unchanged. At load 10 to 12 (CPU ratio the one to read)::

    load average 10.32, 11.44, 12.83
    sklearn  N=10,000: ok, wall 35.76 s, CPU 7.48 s, peak 0.97 GiB
    trellis  N=10,000: ok, wall 25.95 s, CPU 12.11 s, peak 1.23 GiB -- MAP log-potential
        -3.08414e+08, best seed tree -3.08779e+08 (MAP >= every seed: True); 226,928
        clusters; numba compilations after the warm-up: 0
    N=10,000: time ratio 0.73x wall, 1.62x CPU (target <= 2x); load average 12.36, 11.90, 12.86

Issue 29, fourth round: the N = 100,000 fit ran on one core (91.0 s wall,
90.9 CPU s, quiet). Its profile (CPU s): edge discovery ~50, the completion
of the 20-component graph ~10 (k-d tree queries), Ward ~8, the graph pair
sums ~5, 35k window insertions ~3. Edge discovery and the pair sums' cuts now
run on numba's threads (vertices in chunks, per-thread stamps and buffers,
rows gathered in vertex order: the same edges and tree for any number of
threads), the completion skips the queries of points that a bounding box or
the triangle inequality rules out (10.3 -> 5.6 CPU s; its remaining queries
use the same threads) and the windows are inserted in one compiled call. The
MAP tree and log-potential are unchanged. Two full runs on a quiet machine
(load about 1), back to back, show how much the same fit varies here::

    sklearn  N=10,000: ok, wall 9.71 s, CPU 9.69 s, peak 0.97 GiB
    trellis  N=10,000: ok, wall 13.78 s, CPU 15.67 s, peak 1.44 GiB -- ...
    N=10,000: time ratio 1.42x wall, 1.62x CPU (target <= 2x); load average 1.04, 1.63, 3.41
    N=20,000: peak memory ratio 1.19x (target <= 1.5x); load average 1.11, 1.42, 3.08
    N=100,000 with a 10-NN graph: 82.7 s wall, 89.5 s CPU (target <= 60 s), 0.64x
        AgglomerativeClustering's wall time, 0.56x its CPU time, peak 1.85 GiB

    N=10,000: time ratio 1.62x wall, 1.83x CPU (target <= 2x); load average 0.45, 0.55, 1.81
    N=100,000 with a 10-NN graph: 71.0 s wall, 77.1 s CPU (target <= 60 s), 0.62x
        AgglomerativeClustering's wall time, 0.53x its CPU time, peak 1.73 GiB

The MAP log-potentials are unchanged (-3.08414e+08 and -6.28463e+08). The
N = 100,000 fit alone, run in a helper's session at load about 2, took 53.8 s
wall and 58.4 CPU s: the same fit varies from 54 to 83 s on this machine.

Issue 29, fifth round (2026-11-27; the N = 100,000 case alone, old and new
code back to back in fresh processes, the load average printed before each).
Ward's constrained tree now runs on a second thread while the other seed
trees are built, and edge discovery leaves its rows in the buffers they were
written to (no per-group compact copy, no final concatenation) until the CSR
arrays take them: peak memory -0.21 GiB; the MAP tree, its log-potential and
``log_partition_function_`` are bit for bit unchanged. With another job on
the second core the thread gains nothing (the seed trees alone: 7.8-8.8 s
before, 4.95 s after with a free core, 9.65 s without one)::

    old, load average 3.49: wall 35.00 s, CPU 34.40 s, peak 1.74 GiB
    new, load average 4.20: wall 38.27 s, CPU 35.19 s, peak 1.51 GiB
    old, load average 3.85: wall 36.78 s, CPU 35.99 s, peak 1.72 GiB

(The same fits took 453 s and 251 s wall, 55.7 and 50.8 CPU s, at load 15
to 18: CPU time inflates under load too.)

Issue 29, sixth round (2026-11-27; N = 10,000, old and new code back to back
in fresh processes, load 10 to 18: the ratios' anchor varies 8.6-24 s wall
here, so read the trellis fit's CPU seconds). The local scales of Dasgupta's
energy are a compiled k-th smallest per row on numba's threads (numpy's
partition: 1.05 -> 0.08 CPU s); its check and similarities run on two
threads; the seed chains scan only the live clusters (0.92/1.22/0.97 ->
0.63/0.84/0.81 CPU s, average/complete/Ward); each vertex's pair sum (the
trellis's statistics) runs on numba's threads; up to N = 11,585 a second
(N, N) array lets two chains run at once (``_nn_chain.SECOND_CHAIN_BYTES``;
each chain's CPU time is unchanged when two run together, 0.90 against 0.88
s, but the second array's first touch costs about a CPU second and 0.5 GiB).
Every output is bitwise unchanged (2k, 10k, and 30k with a 10-NN graph).
Trellis fit CPU seconds, three runs each (the middle ones at ``nice -15``)::

    old (main):                         10.48, 11.29, 10.75   peak 1.25-1.37 GiB
    new:                                11.60, 10.21,  9.00   peak 1.78-1.95 GiB
    new, one lane (SECOND_CHAIN_BYTES=0): 9.36,  9.12,  8.98   peak 1.25-1.42 GiB

    sklearn  N=20,000: ok, wall 228.55 s, CPU 23.15 s, peak 3.21 GiB
    trellis  N=20,000: ok, wall 331.98 s, CPU 38.12 s, peak 3.76 GiB -- MAP log-potential
        -1.86212e+09, ...; numba compilations after the warm-up: 0
    N=20,000: peak memory ratio 1.17x (target <= 1.5x); load average 15.22, 14.83, 13.76

The wall-clock gain of the two lanes (about 0.7 s expected on a quiet
machine) is not measurable at these loads.

Measured quiet (load about 1.1-1.3, the merged code, ``--skip-20k --skip-100k``).
The first run counted 6 compilations inside the measured fit (6.25 s wall):
the kernels that small inputs now run interpreted (``_core.interpreted``)
were no longer compiled by the 300-point warm-up, whose large-paths fit now
also sets ``INTERPRETED_BUDGET_SECONDS`` to 0. Then, two lanes (the default),
and one lane (``SECOND_CHAIN_BYTES = 0``, a separate run)::

    sklearn  N=10,000: ok, wall 3.35 s, CPU 3.35 s, peak 0.97 GiB
    trellis  N=10,000: ok, wall 5.31 s, CPU 8.72 s, peak 1.80 GiB -- ...; numba
        compilations after the warm-up: 0
    N=10,000: time ratio 1.58x wall, 2.60x CPU (target <= 2x)
    one lane: trellis wall 6.54 s, CPU 8.65 s, peak 1.28 GiB (2.68x that run's sklearn)

The two lanes save 1.2 s of wall time for 0.5 GiB at N = 10,000; at N =
20,000 they are off (one (N, N) array is 3 GiB).
"""

import argparse
import multiprocessing as mp
import os
import resource
import time

import numpy as np


def data(n, seed=0):
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(n_samples=n, n_features=10, centers=20, random_state=seed)
    return X


class _CompileCount:
    """Names numba's compilations (``numba:compile`` events; cache loads are not)."""

    def __init__(self):
        from numba.core import event

        class Listener(event.Listener):
            def on_start(listener, ev):
                self.names.append(ev.data["dispatcher"].py_func.__qualname__)

            def on_end(listener, ev):
                pass

        self.names = []
        self.listener = Listener()


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _warm_up(neighbours):
    """Compile (or load from numba's disk cache) everything the measured fit runs.

    Parallel kernels have a serial twin for small inputs
    (``sklearn_trellis._core.parallel``): a small warm-up fit alone compiles
    the serial twins only, and the large fit would compile the parallel ones
    inside its measured time. A second small fit with the size thresholds at
    zero compiles the parallel twins too, and the kernels that small inputs
    skip (scipy's seed linkages up to ``SCIPY_LINKAGE_ITEMS`` items, numpy's
    matrix checks up to ``SMALL_CHECK_ENTRIES`` entries, the integer kernels that
    small inputs run interpreted: ``INTERPRETED_BUDGET_SECONDS`` at zero). Each warm-up fit also scores its seed
    trees, as :func:`_fit` does after the measured fit.
    """
    from sklearn.neighbors import kneighbors_graph

    import sklearn_trellis._core.interpreted as interpreted
    import sklearn_trellis._core.pairwise as pairwise
    import sklearn_trellis._core.parallel as parallel
    import sklearn_trellis.engines.sparse._nn_chain as nn_chain
    from sklearn_trellis import TrellisHierarchical
    small = data(300)
    graph = kneighbors_graph(small, neighbours, include_self=False) if neighbours else None
    # (module, constant): the second fit takes the large inputs' paths everywhere
    small_paths = [(parallel, "PARALLEL_MIN_WORK"), (nn_chain, "SCIPY_LINKAGE_ITEMS"),
                   (pairwise, "SMALL_CHECK_ENTRIES"), (interpreted, "INTERPRETED_BUDGET_SECONDS")]
    saved = [getattr(module, name) for module, name in small_paths]
    try:
        for large_paths in (False, True):
            for (module, name), value in zip(small_paths, saved):
                setattr(module, name, 0 if large_paths else value)
            model = TrellisHierarchical(n_clusters=10, connectivity=graph).fit(small)
            model._trellis.seed_tree_log_potentials()     # as the report does after the fit
    finally:
        for (module, name), value in zip(small_paths, saved):
            setattr(module, name, value)


def _fit(kind, n, neighbours, queue):
    from numba.core import event
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.neighbors import kneighbors_graph

    from sklearn_trellis import TrellisHierarchical
    X = data(n)
    graph = kneighbors_graph(X, neighbours, include_self=False) if neighbours else None
    if kind == "trellis":
        _warm_up(neighbours)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    compiles = _CompileCount()
    cpu, start = _cpu_seconds(), time.perf_counter()
    try:
        with event.install_listener("numba:compile", compiles.listener):
            if kind == "sklearn":
                model = AgglomerativeClustering(n_clusters=10, connectivity=graph).fit(X)
            else:
                model = TrellisHierarchical(n_clusters=10, connectivity=graph).fit(X)
        status = "ok"
    except (ValueError, MemoryError) as error:
        model, extra, status = None, str(error), "refused"
    wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    if model is not None:
        extra = ""
        if kind == "trellis":        # the report's own work, after the clock stops
            with event.install_listener("numba:compile", compiles.listener):
                seeds = model._trellis.seed_tree_log_potentials()
            extra = (f"MAP log-potential {model.map_log_potential_:.6g}, best seed "
                     f"tree {max(seeds):.6g} (MAP >= every seed: "
                     f"{model.map_log_potential_ >= max(seeds) - 1e-9 * abs(max(seeds))}"
                     f"); {model.n_trellis_vertices_:,} clusters")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if kind == "trellis":
        extra += (f"; numba compilations after the warm-up: {len(compiles.names)}"
                  + (f" (warm-up missed {', '.join(sorted(set(compiles.names)))})"
                     if compiles.names else ""))
    queue.put((status, wall, cpu, peak, base * 1024, extra))


def run(kind, n, neighbours=0):
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_fit, args=(kind, n, neighbours, queue))
    process.start()
    result = queue.get()
    process.join()
    status, wall, cpu, peak, base, extra = result
    graph = f", {neighbours}-NN graph" if neighbours else ""
    print(f"{kind:8s} N={n:,}{graph}: {status}, wall {wall:.2f} s, CPU {cpu:.2f} s, "
          f"peak {peak / 2 ** 30:.2f} GiB" + (f" -- {extra}" if extra else ""), flush=True)
    return wall, cpu, peak


def load():
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def parse_args():
    parser = argparse.ArgumentParser(
        description="TrellisHierarchical against AgglomerativeClustering at N = 10,000, "
                    "20,000 and 100,000 (10-NN graph), each fit in a fresh process.")
    parser.add_argument("--skip-20k", action="store_true", help="skip the N = 20,000 memory case")
    parser.add_argument("--skip-100k", action="store_true",
                        help="skip the N = 100,000 case with the 10-NN graph")
    return parser.parse_args()


def main():
    args = parse_args()
    print(load(), flush=True)
    wall_sk, cpu_sk, _ = run("sklearn", 10_000)
    wall_ours, cpu_ours, _ = run("trellis", 10_000)
    print(f"N=10,000: time ratio {wall_ours / wall_sk:.2f}x wall, {cpu_ours / cpu_sk:.2f}x CPU "
          f"(target <= 2x); {load()}", flush=True)
    if not args.skip_20k:
        _, _, peak_sk = run("sklearn", 20_000)
        _, _, peak_ours = run("trellis", 20_000)
        print(f"N=20,000: peak memory ratio {peak_ours / peak_sk:.2f}x (target <= 1.5x); "
              f"{load()}", flush=True)
    if not args.skip_100k:
        wall_sk, cpu_sk, _ = run("sklearn", 100_000, 10)
        wall, cpu, peak = run("trellis", 100_000, 10)
        print(f"N=100,000 with a 10-NN graph: {wall:.1f} s wall, {cpu:.1f} s CPU (target <= "
              f"60 s), {wall / wall_sk:.2f}x AgglomerativeClustering's wall time, "
              f"{cpu / cpu_sk:.2f}x its CPU time, peak {peak / 2 ** 30:.2f} GiB; {load()}",
              flush=True)


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
