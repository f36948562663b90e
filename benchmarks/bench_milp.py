"""Exact MAP of correlation clustering by MILP: the largest N certified in 60 s (issue 7).

Data: 10-d ``make_blobs`` (5 centres), affinities as ``ExactCorrelationClustering``
computes them by default (``exp(-||x_i - x_j||)`` centred by the mean
off-diagonal similarity, Greenberg et al. 2018), gains ``W = 2 beta w``.
Two regimes: the default ``cluster_std=1`` (separated blobs: the positive pairs
fall apart into the blobs, solved one by one) and ``cluster_std=4``
(overlapping blobs: one large component).

For each regime, N grows until the first N not certified within the time
limit; each row prints N, seconds, LP+MILP rounds, triangle cuts, the relative
gap, the number of components of positive pairs and the largest one. Then the
MILP against the exact trellis at N = 16, 18, 20 (full ``fit``, and the MAP-only
pass ``exact_flat_map``), checking that the MAP values agree.

Run: ``python benchmarks/bench_milp.py [--time-limit 60] [--stds 1 4]``.
The load average is printed: timings on a loaded machine are pessimistic.
"""

import argparse
import os
import time

import numpy as np
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import make_blobs

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.models import CorrelationClusteringModel
from sklearn_trellis.engines import ExactFlatTrellis
from sklearn_trellis.engines.exact.flat import exact_flat_map
from sklearn_trellis.engines.map.milp import correlation_clustering_map_milp

SIZES = [20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1600]


def blob_gains(n, cluster_std, beta=1.0, seed=0):
    """Gains ``2 beta w`` and the fitted model on 10-d blobs, by the estimator's own code path."""
    X, _ = make_blobs(n_samples=n, n_features=10, centers=5, cluster_std=cluster_std,
                      random_state=seed)
    estimator = ExactCorrelationClustering(beta=beta)  # affinity='exp_euclidean', center=True
    estimator._validate_params()
    affinity = estimator._affinity_from_input(X)
    return 2.0 * beta * affinity, affinity


def largest_certified(cluster_std, time_limit):
    print(f"\n10-d blobs, 5 centres, cluster_std={cluster_std}, time limit {time_limit:g} s")
    print(f"{'N':>6} {'seconds':>8} {'rounds':>6} {'cuts':>9} {'gap':>9} "
          f"{'certified':>9} {'components':>10} {'largest':>7}")
    best = None
    for n in SIZES:
        gains, _ = blob_gains(n, cluster_std)
        n_comp, comp = connected_components(gains > 0, directed=False)
        result = correlation_clustering_map_milp(gains, time_limit=time_limit,
                                                 max_items=max(SIZES))
        print(f"{n:>6} {result.seconds:>8.2f} {result.n_rounds:>6} {result.n_constraints:>9} "
              f"{result.gap:>9.2e} {str(result.certified):>9} {n_comp:>10} "
              f"{np.bincount(comp).max():>7}", flush=True)
        if not result.certified:
            break
        best = n
    print(f"largest N certified within {time_limit:g} s: {best}")


def against_trellis(sizes, cluster_std):
    print(f"\nMILP vs exact trellis (cluster_std={cluster_std})")
    print(f"{'N':>4} {'milp s':>8} {'trellis fit s':>13} {'trellis MAP-only s':>18} "
          f"{'same MAP':>8}")
    for n in sizes:
        gains, affinity = blob_gains(n, cluster_std)
        result = correlation_clustering_map_milp(gains)
        table = CorrelationClusteringModel(beta=1.0).fit(affinity).log_potential_table()
        start = time.perf_counter()
        trellis = ExactFlatTrellis(table).fit()
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        value, _ = exact_flat_map(table)
        map_seconds = time.perf_counter() - start
        same = (abs(value - result.objective) <= 1e-9 * max(1.0, abs(value))
                and abs(trellis.map_log_potential - value) <= 1e-12 * max(1.0, abs(value))
                and result.certified)
        print(f"{n:>4} {result.seconds:>8.3f} {fit_seconds:>13.3f} {map_seconds:>18.3f} "
              f"{str(same):>8}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--stds", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--trellis-sizes", type=int, nargs="+", default=[16, 18, 20])
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} on {os.cpu_count()} cores")
    # Compile the numba kernels outside the timings.
    warm_gains, warm_affinity = blob_gains(12, 1.0)
    correlation_clustering_map_milp(warm_gains)
    warm_table = CorrelationClusteringModel().fit(warm_affinity).log_potential_table()
    ExactFlatTrellis(warm_table).fit()
    exact_flat_map(warm_table)
    for std in args.stds:
        largest_certified(std, args.time_limit)
    for std in args.stds:
        against_trellis(args.trellis_sizes, std)
    print(f"\nload average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
