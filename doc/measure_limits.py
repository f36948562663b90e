"""Measure the run times the user guide quotes (``python doc/measure_limits.py``).

Each line prints the wall time of one ``fit`` on this machine; the first call of
every estimator compiles its numba kernels, so a warm-up fit runs first. The
figures in the guide were measured on a shared 2-core machine: expect them to
vary by a factor of about two with the load.
"""

import sys
import time

import numpy as np

from sklearn_trellis import (DivisiveClustering, DPMixture, EntropyAgglomeration,
                             ExactCorrelationClustering, FastTIWD, TrellisHierarchical)
from sklearn_trellis.datasets import make_wishart_blocks


def timed(label, make, X):
    start = time.perf_counter()
    make().fit(X)
    print(f"{label:<58s} {time.perf_counter() - start:8.2f} s", flush=True)


def main(quick=False):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 4))
    ExactCorrelationClustering().fit(X[:8])             # compile
    for n in (12, 14, 16, 18) if quick else (12, 14, 16, 18, 20):
        timed(f"ExactCorrelationClustering exact, N = {n}",
              lambda: ExactCorrelationClustering(), X[:n])
    for n in (200, 1000):
        timed(f"ExactCorrelationClustering sparse trellis, N = {n}",
              lambda: ExactCorrelationClustering(), X[:n])
    timed("ExactCorrelationClustering method='milp', N = 40",
          lambda: ExactCorrelationClustering(method="milp"), X[:40])
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
    main(quick="--quick" in sys.argv)
