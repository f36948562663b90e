"""Sparse hierarchical trellis seeded by linkage trees, at N = 1,000 and 10,000.

Data: 10-d ``make_blobs`` with 5 centres. Energies: Dasgupta's cost
(similarity ``exp(-d / median d)``) and hierarchical correlation clustering
(the same similarities, centred). Seeds: scipy's single, average, complete and
Ward linkage trees. Prints the time of each stage (distances, linkages,
family, statistics, edges, split potentials, inside pass, tree count,
marginals, 100 samples), peak memory (``ru_maxrss``), the family's size, the
log10 sparsity index and the MAP log-potential against each seed tree's.

Then the refinement ``TrellisHierarchical`` runs by default: all unions of 8
neighbouring clusters of the MAP tree at every level (``tree_windows``), and a
second pass; its MAP gain over the first pass and the best seed is printed.
Last, the estimator end to end (``TrellisHierarchical().fit(X)``: distances,
model, linkages, both passes) with its wall time and peak memory.

Target (issue #7): N = 10,000 in <= 2 minutes and <= 4 GB on 2 cores.

Run: ``python benchmarks/bench_sparse_hierarchical.py [N ...]`` (default 1000 10000).
"""

import resource
import sys
import time

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist, squareform
from sklearn.datasets import make_blobs

from sklearn_trellis.models import DasguptaEnergy, HCCEnergy
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.sparse.family_search import MAX_WINDOW_UNION_ITEMS
from sklearn_trellis.engines.sparse.seeds import tree_windows, windows_within_budget
from sklearn_trellis.engines.sparse.sparse_hierarchical import SparseHierarchicalTrellis

LINKAGES = ("single", "average", "complete", "ward")


def peak_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


class Clock:
    def __init__(self):
        self.times = {}

    def __call__(self, name, function, *args, **kwargs):
        start = time.perf_counter()
        out = function(*args, **kwargs)
        self.times[name] = time.perf_counter() - start
        return out


def run(n_items, seed=0):
    clock = Clock()
    X, _ = make_blobs(n_samples=n_items, n_features=10, centers=5, random_state=seed)
    condensed = clock("distances", pdist, X)
    trees = clock("linkages", lambda: [linkage(X if m == "ward" else condensed, method=m)
                                       [:, :2].astype(np.int64) for m in LINKAGES])
    family = clock("family", ClusterFamily.from_trees, trees, n_items)
    distances = squareform(condensed)
    del condensed
    print(f"\nN={n_items:,}: {family.n_vertices:,} vertices "
          f"(distances {clock.times['distances']:.2f} s, linkages "
          f"{clock.times['linkages']:.2f} s, family {clock.times['family']:.2f} s)")
    for name, energy in (("Dasgupta", DasguptaEnergy()), ("HCC", HCCEnergy())):
        model = clock("model fit", energy.fit, distances)
        inputs = clock("stats", model.family_kernel_inputs, family)
        trellis = SparseHierarchicalTrellis(family, *inputs)
        clock("fit", trellis.fit)
        n_trees = clock("count", lambda: trellis.n_trees)
        clock("marginals", trellis.cluster_marginals)
        clock("samples", trellis.sample_edges, 100, 0)
        clock("P&M", trellis.perturb_and_map, 10, 1.0, 0)
        seeds = trellis.seed_tree_log_potentials()
        t = {**clock.times, **trellis.timings}
        print(f"  {name}: {trellis.n_edges:,} edges, log10 n_trees = "
              f"{np.log10(float(n_trees)) if n_trees < 10 ** 300 else trellis.log10_n_trees:.1f}, "
              f"log10 sparsity = {trellis.log10_sparsity_index:.1f}")
        print("    seconds: " + ", ".join(
            f"{k} {t[k]:.2f}" for k in ("model fit", "stats", "edges", "potentials", "inside",
                                        "count", "marginals", "samples", "P&M")))
        print(f"    log Z = {trellis.log_partition_function:.6g}; MAP log-potential "
              f"{trellis.map_log_potential:.8g} vs seeds " + ", ".join(
                  f"{m} {v:.8g}" for m, v in zip(LINKAGES, seeds)))
        assert trellis.map_log_potential >= max(seeds) - 1e-9 * abs(max(seeds))
        # Refinement (TrellisHierarchical's default): windows of 8 clusters of the MAP tree.
        start = time.perf_counter()
        best = trellis.map_children
        every = tree_windows(best, n_items, 8)
        windows = windows_within_budget(every, MAX_WINDOW_UNION_ITEMS)
        refined_family = ClusterFamily.from_trees(trees + [best], n_items, windows=windows)
        refined_inputs = model.family_kernel_inputs(refined_family)
        refined = SparseHierarchicalTrellis(refined_family, *refined_inputs).fit()
        seconds = time.perf_counter() - start
        print(f"    {len(windows):,} of {len(every):,} windows of 8: "
              f"{refined_family.n_vertices:,} vertices, {refined.n_edges:,} "
              f"edges, log10 sparsity {refined.log10_sparsity_index:.1f}, {seconds:.2f} s "
              f"(edges {refined.timings['edges']:.2f} s); MAP {refined.map_log_potential:.8g} "
              f"(gain {refined.map_log_potential - trellis.map_log_potential:.6g} over the "
              f"first pass, {refined.map_log_potential - max(seeds):.6g} over the best seed)")
        assert refined.map_log_potential >= trellis.map_log_potential - 1e-9 * abs(
            trellis.map_log_potential)
        print(f"    peak memory so far {peak_gib():.2f} GiB")
        del trellis, inputs, refined, refined_inputs, refined_family, model


def run_estimator(n_items, energy, seed=0):
    from sklearn_trellis import TrellisHierarchical
    X, _ = make_blobs(n_samples=n_items, n_features=10, centers=5, random_state=seed)
    start = time.perf_counter()
    est = TrellisHierarchical(n_clusters=5, energy=energy).fit(X)
    print(f"  TrellisHierarchical(energy={energy!r}).fit, N={n_items:,}: "
          f"{time.perf_counter() - start:.1f} s, {est.n_trellis_vertices_:,} vertices, MAP "
          f"{est.map_log_potential_:.8g}, peak memory so far {peak_gib():.2f} GiB")


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    for n in sizes:
        run(n)
    print("\nEstimator end to end")
    for n in sizes:
        for energy in ("dasgupta", "hcc"):
            run_estimator(n, energy)
