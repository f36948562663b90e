"""Measure the run times the user guide quotes (``python doc/measure_limits.py``).

Each line prints the wall time of ``fit`` on this machine, the faster of two
runs (the first run of a size may compile numba kernels specialised for it),
and the CPU time of that run (all threads). The figures in the guide were
measured on a 2-core machine shared with other jobs: expect them to vary by a
factor of about two with the load.
"""

import sys
import time

import numpy as np

from sklearn_trellis import (BayesianHierarchicalClustering, CrossCat, DivisiveClustering,
                             DPMixture, EntropyAgglomeration, ExactCorrelationClustering,
                             FastTIWD, InfiniteBiclustering, TrellisHierarchical)
from sklearn_trellis._core.budget import BudgetExceeded
from sklearn_trellis.datasets import make_wishart_blocks


def timed(label, make, X, repeat=2):
    best = (np.inf, np.inf)
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        make().fit(X)
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    print(f"{label:<58s} {best[0]:8.2f} s wall {best[1]:8.2f} s CPU", flush=True)


def checkerboard(n_rows, n_columns, rng):
    """A 3 x 3 planted checkerboard of block means with unit noise."""
    means = rng.normal(scale=3.0, size=(3, 3))
    rows, columns = np.arange(n_rows) % 3, np.arange(n_columns) % 3
    return means[rows][:, columns] + rng.standard_normal((n_rows, n_columns))


def two_view_table(n, rng):
    """Four real columns in two views that cluster the rows differently."""
    a, b = rng.integers(2, size=n), rng.integers(2, size=n)
    return np.column_stack([a * 6 + rng.standard_normal(n), a * 6 + rng.standard_normal(n),
                            b * 6 + rng.standard_normal(n), b * 6 + rng.standard_normal(n)])


def views_table(n, n_views, columns_per_view, rng):
    """``n_views`` groups of real columns, each clustering the rows its own way."""
    blocks = []
    for _ in range(n_views):
        labels = rng.integers(3, size=n)
        blocks += [labels * 5 + rng.standard_normal(n) for _ in range(columns_per_view)]
    return np.column_stack(blocks)


def main_new(quick=False):
    """BayesianHierarchicalClustering, InfiniteBiclustering and CrossCat."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 4))
    BayesianHierarchicalClustering().fit(X[:8])        # compile
    timed("BayesianHierarchicalClustering, N = 12 (+ exact DP evidence)",
          lambda: BayesianHierarchicalClustering(), X[:12])
    for n in (200, 1000) if quick else (200, 1000, 2000):
        timed(f"BayesianHierarchicalClustering greedy, N = {n}",
              lambda: BayesianHierarchicalClustering(), X[:n])
    for n in (50, 100, 200):
        try:
            timed(f"BayesianHierarchicalClustering greedy + family='all', N = {n}",
                  lambda: BayesianHierarchicalClustering(family="all"), X[:n])
        except BudgetExceeded as error:     # the family's sparse trellis is too large
            print(f"BayesianHierarchicalClustering family='all', N = {n}: "
                  f"{type(error).__name__}", flush=True)
    timed("BayesianHierarchicalClustering randomized, N = 4000",
          lambda: BayesianHierarchicalClustering(method="randomized", random_state=0), X)
    InfiniteBiclustering(n_sweeps=2).fit(checkerboard(10, 8, rng))
    timed("InfiniteBiclustering exact, 6 x 5 (auto)",
          lambda: InfiniteBiclustering(), checkerboard(6, 5, rng))
    for shape in ((100, 60), (300, 200)) if quick else ((100, 60), (300, 200), (1000, 500)):
        timed(f"InfiniteBiclustering Gibbs, {shape[0]} x {shape[1]}, 100 sweeps",
              lambda: InfiniteBiclustering(n_sweeps=100, random_state=0),
              checkerboard(*shape, rng))
    CrossCat(n_sweeps=2).fit(two_view_table(20, rng))
    timed("CrossCat exact, 8 x 4 (auto)", lambda: CrossCat(alpha_prior=None),
          two_view_table(8, rng))
    timed("CrossCat exact, 8 x 6", lambda: CrossCat(alpha_prior=None), views_table(8, 2, 3, rng))
    for n in (100, 500):
        timed(f"CrossCat Gibbs, {n} x 4, 100 sweeps",
              lambda: CrossCat(n_sweeps=100, random_state=0), two_view_table(n, rng))
    for n, d in ((500, 20),) if quick else ((500, 20), (2000, 20), (500, 60)):
        timed(f"CrossCat Gibbs, {n} x {d} (4 planted views), 100 sweeps",
              lambda: CrossCat(n_sweeps=100, random_state=0),
              views_table(n, 4, d // 4, rng))


def main(quick=False):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 4))
    ExactCorrelationClustering().fit(X[:8])             # compile
    # One trellis fit at a fixed beta; the default beta='auto' first runs some 25 fits
    # with their pairwise marginals (empirical Bayes): its own rows below.
    for n in (12, 14, 16, 18) if quick else (12, 14, 16, 18, 20):
        timed(f"ExactCorrelationClustering exact, N = {n}",
              lambda: ExactCorrelationClustering(beta=1.0), X[:n])
    for n in (200, 1000):
        timed(f"ExactCorrelationClustering sparse trellis, N = {n}",
              lambda: ExactCorrelationClustering(beta=1.0), X[:n])
    timed("ExactCorrelationClustering method='milp', N = 40",
          lambda: ExactCorrelationClustering(beta=1.0, method="milp"), X[:40])
    for n in (12, 16, 18) if quick else (12, 16, 18, 20, 200):
        timed(f"ExactCorrelationClustering default beta='auto', N = {n}",
              lambda: ExactCorrelationClustering(), X[:n], repeat=1)
    TrellisHierarchical().fit(X[:6])
    for n in (10, 12, 14) if quick else (10, 12, 14, 16):
        timed(f"TrellisHierarchical exact (dasgupta), N = {n}",
              lambda: TrellisHierarchical(), X[:n])
    for n in (200, 1000) if quick else (200, 1000, 2000):
        timed(f"TrellisHierarchical sparse trellis, N = {n}",
              lambda: TrellisHierarchical(), X[:n])
    DPMixture(n_sweeps=2).fit(X[:20])
    for n in (300, 1000):
        timed(f"DPMixture Gibbs, N = {n}, 100 sweeps",
              lambda: DPMixture(n_sweeps=100, random_state=0), X[:n])
    timed("DPMixture exact, N = 12", lambda: DPMixture(method="exact"), X[:12])
    for n in (200, 500, 1000):
        data = make_wishart_blocks(n_samples=n, n_blocks=3, random_state=0)
        D = data.distances if hasattr(data, "distances") else data[0]
        timed(f"FastTIWD Gibbs, n = {n}, 50 sweeps",
              lambda: FastTIWD(n_sweeps=50, random_state=0), D)
    for n in (500, 2000):
        timed(f"DivisiveClustering diana, N = {n}", lambda: DivisiveClustering(), X[:n])
    timed("DivisiveClustering exact splits (<= 20 items), N = 200",
          lambda: DivisiveClustering(method="exact"), X[:200])
    samples = rng.integers(0, 4, size=(1000, 150))
    timed("EntropyAgglomeration, 1000 samples of 150 elements",
          lambda: EntropyAgglomeration(), samples)


if __name__ == "__main__":
    if "--new" in sys.argv:
        main_new(quick="--quick" in sys.argv)
    else:
        main(quick="--quick" in sys.argv)
