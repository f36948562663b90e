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
resident memory (``ru_maxrss``) is its own; numba compilation is cached on
disk by a warm-up fit on small data first. Prints one line per fit, or the
refusal (memory is checked before allocation) if a fit cannot run.

Run: ``PYTHONPATH=. python benchmarks/bench_drop_in_scale.py [--skip-20k] [--skip-100k]``.

Output (2026-11-24, 2 cores; no other process at the start, load average
2.5 from earlier runs, another benchmark started in the last ~30 s)::

    sklearn  N=10,000: ok, 4.61 s, peak 0.97 GiB
    trellis  N=10,000: ok, 17.17 s, peak 2.52 GiB -- MAP log-potential -1.18386e+11,
        best seed tree -1.18396e+11 (MAP >= every seed: True); 280,151 clusters
    N=10,000: time ratio 3.7x (target <= 5x), peak 2.52 GiB (target <= 3 GB)
    sklearn  N=100,000, 10-NN graph: ok, 65.92 s, peak 0.74 GiB
    trellis  N=100,000, 10-NN graph: ok, 99.99 s, peak 1.44 GiB -- MAP log-potential
        -5.02649e+08, best seed tree -5.05682e+08 (MAP >= every seed: True);
        1,503,288 clusters
    N=100,000 with a 10-NN graph: 100.0 s (target <= 120 s), peak 1.44 GiB (target <= 4 GB)

Earlier runs the same day: 4.5x and 4.9x at N = 10,000, 111 s and 123 s at
N = 100,000 with another process on the second core (before the last change,
edge discovery bounded by window roots). Where the time goes: N = 10,000, the
four seed linkages (compiled nearest-neighbour chain, ~6 s), the distances
and similarities (~4 s), edge discovery (~2.5 s); N = 100,000, edge discovery
of the two trellis passes, the constrained average and complete linkages, the
family and its pair sums. Before this work: 6.0x (26.45 s) at N = 10,000 and
no N = 100,000 fit in reasonable time.
"""

import multiprocessing as mp
import os
import resource
import sys
import time

import numpy as np


def data(n, seed=0):
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(n_samples=n, n_features=10, centers=20, random_state=seed)
    return X


def _fit(kind, n, neighbours, queue):
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.neighbors import kneighbors_graph

    from sklearn_trellis import TrellisHierarchical
    X = data(n)
    graph = kneighbors_graph(X, neighbours, include_self=False) if neighbours else None
    if kind == "trellis":
        TrellisHierarchical(n_clusters=10, connectivity=None if graph is None else
                            kneighbors_graph(data(300), min(neighbours, 10),
                                             include_self=False)).fit(data(300))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        if kind == "sklearn":
            model = AgglomerativeClustering(n_clusters=10, connectivity=graph).fit(X)
            extra = ""
        else:
            model = TrellisHierarchical(n_clusters=10, connectivity=graph).fit(X)
            seeds = model._trellis.seed_tree_log_potentials()
            extra = (f"MAP log-potential {model.map_log_potential_:.6g}, best seed tree "
                     f"{max(seeds):.6g} (MAP >= every seed: "
                     f"{model.map_log_potential_ >= max(seeds) - 1e-9 * abs(max(seeds))}); "
                     f"{model.n_trellis_vertices_:,} clusters")
        status = "ok"
    except (ValueError, MemoryError) as error:
        extra, status = str(error), "refused"
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    queue.put((status, wall, peak, base * 1024, extra))


def run(kind, n, neighbours=0):
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_fit, args=(kind, n, neighbours, queue))
    process.start()
    result = queue.get()
    process.join()
    status, wall, peak, base, extra = result
    graph = f", {neighbours}-NN graph" if neighbours else ""
    print(f"{kind:8s} N={n:,}{graph}: {status}, {wall:.2f} s, peak {peak / 2 ** 30:.2f} GiB"
          + (f" -- {extra}" if extra else ""), flush=True)
    return wall, peak


def load():
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main():
    print(load(), flush=True)
    t_sk, _ = run("sklearn", 10_000)
    t_ours, _ = run("trellis", 10_000)
    print(f"N=10,000: time ratio {t_ours / t_sk:.2f}x (target <= 2x); {load()}", flush=True)
    if "--skip-20k" not in sys.argv:
        _, peak_sk = run("sklearn", 20_000)
        _, peak_ours = run("trellis", 20_000)
        print(f"N=20,000: peak memory ratio {peak_ours / peak_sk:.2f}x (target <= 1.5x); "
              f"{load()}", flush=True)
    if "--skip-100k" not in sys.argv:
        t_sk, _ = run("sklearn", 100_000, 10)
        wall, peak = run("trellis", 100_000, 10)
        print(f"N=100,000 with a 10-NN graph: {wall:.1f} s (target <= 60 s), "
              f"{wall / t_sk:.2f}x AgglomerativeClustering, peak {peak / 2 ** 30:.2f} GiB; "
              f"{load()}", flush=True)


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
