"""Speed of the exact hierarchical trellis (prints its figures).

1. Dasgupta's cost, N = 16..20 random points: exact MAP + log Z (the target is
   N = 20 in at most 8 s on a 2-core machine).
2. Ginkgo jets, N = 8..12 leaves: exact MAP + log Z against the CPU seconds of
   the public reference implementation measured on a machine like ours
   (measured once with its own code, as recorded below). The data set has up to 10 leaves; jets
   with 11 and 12 leaves are made by splitting the hardest leaves of 10-leaf
   jets into two collinear halves (a valid jet; only the speed matters here).
3. Exact sampling: cost per tree at N = 12 (Ginkgo).

Run: ``python benchmarks/bench_hierarchical.py [--quick]``. Times are the
median of repeated fits after a warm-up (numba compilation is cached on disk
and not counted); CPU time sums all threads.
"""

import sys
import time

import numpy as np
from sklearn.metrics import pairwise_distances

from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.datasets import load_ginkgo_jets
from sklearn_trellis.models import DasguptaEnergy, GinkgoEnergy
from sklearn_trellis.engines import ExactHierarchicalTrellis



#: CPU seconds of the public ClusterTrellis implementation (exact MAP + Z).
REFERENCE_CPU = {8: 0.6, 9: 2.75, 10: 8.2, 11: 42.0, 12: 290.0}


def timed(function, repeat):
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = function()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return result, float(np.median(walls)), float(np.median(cpus))


def bench_dasgupta(sizes):
    print("== Dasgupta's cost: exact MAP + log Z (TrellisHierarchical.fit) ==")
    for n in sizes:
        X = np.random.default_rng(n).normal(size=(n, 5))
        est = TrellisHierarchical(energy="dasgupta", max_exact_size=n)
        est.fit(X[:8])  # warm-up
        _, wall, cpu = timed(lambda: est.fit(X), 1 if n >= 19 else 3)
        print(f"N={n:2d}: wall {wall:7.3f} s   cpu {cpu:7.3f} s   "
              f"log Z = {est.log_partition_function_:.6f}   n_trees = {est.n_trees_:.4g}",
              flush=True)


def load_jets():
    return load_ginkgo_jets().jets


def split_leaf(leaves, index, z=0.4):
    """Replace leaf ``index`` by two collinear pieces ``z p`` and ``(1 - z) p``."""
    p = np.asarray(leaves[index])
    out = [list(x) for i, x in enumerate(leaves) if i != index]
    return out + [list(z * p), list((1 - z) * p)]


def jets_with(n, jets, count):
    """``count`` jets with ``n`` leaves (10-leaf jets with leaves split for n > 10)."""
    if n <= 10:
        return [j for j in jets if len(j["leaves"]) == n][:count]
    out = []
    for jet in (j for j in jets if len(j["leaves"]) == 10):
        leaves = jet["leaves"]
        for k in range(n - 10):
            energies = [x[0] for x in leaves]
            leaves = split_leaf(leaves, int(np.argmax(energies)))
        out.append(dict(jet, leaves=leaves))
        if len(out) == count:
            break
    return out


def ginkgo_engine(jet):
    model = GinkgoEnergy(lam=jet["lam"], lam_root=jet["lam_root"], t_cut=jet["t_cut"],
                         likelihood="ginkgo")
    model.fit(np.array(jet["leaves"]))
    split, params, stats = model.kernel_inputs()
    return ExactHierarchicalTrellis(split, params, stats).fit()


def bench_ginkgo(sizes, n_jets):
    print("\n== Ginkgo jets: exact MAP + log Z + exact tree count (model fit + trellis) ==")
    jets = load_jets()
    ginkgo_engine(jets[0])  # warm-up
    for n in sizes:
        chosen = jets_with(n, jets, n_jets)
        walls, cpus = [], []
        for jet in chosen:
            _, wall, cpu = timed(lambda: ginkgo_engine(jet), 5)
            walls.append(wall)
            cpus.append(cpu)
        wall, cpu = float(np.median(walls)), float(np.median(cpus))
        ref = REFERENCE_CPU.get(n)
        speedup = f"   speed-up vs reference ({ref} CPU-s): {ref / cpu:,.0f}x" if ref else ""
        print(f"N={n:2d} ({len(chosen)} jets): wall {1e3 * wall:8.3f} ms   "
              f"cpu {1e3 * cpu:8.3f} ms{speedup}", flush=True)


def bench_sampling(n=12, n_samples=20000):
    print(f"\n== Exact sampling (Algorithm 3), Ginkgo jet with N={n} ==")
    jet = jets_with(n, load_jets(), 1)[0]
    trellis = ginkgo_engine(jet)
    rng = np.random.RandomState(0)
    trellis.sample_splits(10, rng)  # warm-up
    _, wall, cpu = timed(lambda: trellis.sample_splits(n_samples, rng), 3)
    print(f"{n_samples} trees (split masks): wall {1e6 * wall / n_samples:.2f} us/tree   "
          f"cpu {1e6 * cpu / n_samples:.2f} us/tree")
    _, wall, cpu = timed(lambda: trellis.sample(n_samples, rng), 1)
    print(f"{n_samples} trees as nested tuples: wall {1e6 * wall / n_samples:.2f} us/tree   "
          f"cpu {1e6 * cpu / n_samples:.2f} us/tree")
    print(f"(the trellis itself: log Z = {trellis.log_partition_function:.6f}, "
          f"{trellis.n_trees:,} allowed trees)")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    bench_dasgupta([16, 18] if quick else [16, 18, 19, 20])
    bench_ginkgo([8, 9, 10, 11, 12], 3 if quick else 10)
    bench_sampling()
