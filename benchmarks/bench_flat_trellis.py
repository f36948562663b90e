"""Speed and memory of the exact flat trellis (issue 2).

Prints, for each N: seconds of ``fit()`` + ``pairwise_marginals()`` (log Z, MAP,
all marginals), nanoseconds per ``3**N`` step, seconds of
``n_clusters_distribution()``, and the peak memory per subset; then the
speed-up of 2 threads over 1, the cost of the log-space fallback (a large
``beta``), and the time of the first call in a fresh process with the numba
cache warm (and whether anything was recompiled).

Run: ``python benchmarks/bench_flat_trellis.py [--sizes 16 18 20 22]``.
The machine's load average is printed: figures are only comparable on an idle
machine.
"""

import argparse
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numba
import numpy as np

from sklearn_trellis.models.correlation import CorrelationClusteringModel
from sklearn_trellis.engines import ExactFlatTrellis
from sklearn_trellis.engines.exact.flat import BYTES_PER_SUBSET


def correlation_table(n_items, beta=1.0, seed=0):
    """Cluster log-potentials of correlation clustering on random affinities in [-1, 1]."""
    rng = np.random.default_rng(seed)
    affinity = rng.uniform(-1.0, 1.0, (n_items, n_items))
    affinity = (affinity + affinity.T) / 2
    np.fill_diagonal(affinity, 0.0)
    return CorrelationClusteringModel(beta=beta).fit(affinity).log_potential_table()


def time_fit(table, repeats=1):
    """Best wall and CPU seconds (all threads) of fit + pairwise marginals, and the trellis."""
    best, best_cpu = np.inf, np.inf
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        trellis = ExactFlatTrellis(table).fit()
        trellis.pairwise_marginals()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu, trellis


def peak_bytes(table):
    """Peak bytes numpy allocates during fit (the table included) and then during
    ``n_clusters_distribution`` (on top of the fitted trellis), by tracemalloc."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    copy = table.copy()  # counted: the trellis keeps its table
    trellis = ExactFlatTrellis(copy).fit()
    trellis.pairwise_marginals()
    _, fit_peak = tracemalloc.get_traced_memory()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    trellis.n_clusters_distribution()
    _, k_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return fit_peak, k_peak - held


FRESH_PROCESS = textwrap.dedent("""
    import time
    start = time.perf_counter()
    import numpy as np
    from sklearn_trellis.engines import ExactFlatTrellis
    from sklearn_trellis.engines.exact import _flat_kernels, _flat_block_kernels
    from sklearn_trellis._core import subsets as _subsets
    imported = time.perf_counter()
    table = np.random.default_rng(0).standard_normal(1 << 12)
    trellis = ExactFlatTrellis(table).fit()
    trellis.pairwise_marginals()
    trellis.n_clusters_distribution()
    trellis.sample(3, np.random.RandomState(0))
    done = time.perf_counter()
    misses = 0
    for module in (_flat_kernels, _flat_block_kernels, _subsets):
        for name in dir(module):
            kernel = getattr(module, name)
            if hasattr(kernel, "stats") and hasattr(kernel.stats, "cache_misses"):
                misses += sum(kernel.stats.cache_misses.values())
    print(f"{imported - start:.3f} {done - imported:.3f} {misses}")
""")


def fresh_process():
    """Seconds of import and of a first N=12 fit in a new process, and cache misses."""
    out = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True,
                         text=True, check=True, env=os.environ.copy())
    imported, first, misses = out.stdout.split()
    return float(imported), float(first), int(misses)


@numba.njit(parallel=True)
def _touch_threads(values):
    total = 0.0
    for i in numba.prange(values.size):
        total += values[i]
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 18, 20, 22])
    parser.add_argument("--speedup-size", type=int, default=20)
    parser.add_argument("--fallback-size", type=int, default=18)
    args = parser.parse_args()

    print(f"numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads, "
          f"threading layer after warm-up below; load average {os.getloadavg()}")
    fresh_process()  # make sure the cache is populated
    warm = ExactFlatTrellis(correlation_table(12)).fit()
    warm.n_clusters_distribution()
    # At N=12 every pass runs serially, so no parallel region has started the
    # threading layer yet (numba >= 0.68 then raises): start it explicitly.
    _touch_threads(np.zeros(64))
    print(f"threading layer: {numba.threading_layer()}")

    print("\nN   fit+pairwise(s)  ns/3^N-step  cpu(s)  cpu-ns/3^N-step  n_clusters(s)  "
          "peak bytes/subset: fit + n_clusters  linear layers")
    for n in args.sizes:
        table = correlation_table(n)
        seconds, cpu, trellis = time_fit(table, repeats=2 if n <= 18 else 1)
        start = time.perf_counter()
        trellis.n_clusters_distribution()
        k_seconds = time.perf_counter() - start
        del trellis
        fit_peak, k_peak = peak_bytes(table)
        layers = ExactFlatTrellis(table).fit()._linear_layers if n <= 18 else None
        print(f"{n:<3} {seconds:15.3f}  {seconds / 3.0 ** n * 1e9:11.3f}  {cpu:6.2f}  "
              f"{cpu / 3.0 ** n * 1e9:15.3f}  {k_seconds:13.3f}"
              f"  {fit_peak / 2 ** n:9.1f} + {k_peak / 2 ** n:5.1f}    "
              f"{'' if layers is None else f'{layers.sum()}/{layers.size}'}", flush=True)
    print(f"(declared BYTES_PER_SUBSET = {BYTES_PER_SUBSET}: log-potentials, log Z, "
          "MAP/marginal table, half-size scratch; n_clusters_distribution needs about "
          "(N + 1) * 4.5 + 16 more bytes per subset while it runs)")

    n = args.speedup_size
    table = correlation_table(n)
    timings = {}
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        timings[threads], _, _ = time_fit(table)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    print(f"\nN={n}: 1 thread {timings[1]:.3f} s ({timings[1] / 3.0 ** n * 1e9:.3f} ns "
          f"per 3^N step), {numba.config.NUMBA_NUM_THREADS} threads "
          f"{timings[numba.config.NUMBA_NUM_THREADS]:.3f} s: speed-up "
          f"{timings[1] / timings[numba.config.NUMBA_NUM_THREADS]:.2f}x")

    n = args.fallback_size
    table = correlation_table(n, beta=100.0)
    seconds, _, trellis = time_fit(table)
    print(f"\nlog-space fallback, N={n}, beta=100: {seconds:.3f} s "
          f"({seconds / 3.0 ** n * 1e9:.3f} ns per 3^N step), "
          f"{int(trellis._linear_layers.sum())}/{n} layers linear")

    imported, first, misses = fresh_process()
    print(f"\nfresh process, cache warm: import {imported:.3f} s, first N=12 fit + "
          f"pairwise + n_clusters + sample {first:.3f} s, numba cache misses "
          f"(recompilations) = {misses}")
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
