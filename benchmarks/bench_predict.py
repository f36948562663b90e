"""Time of ``predict_proba`` for 1,000 new items against N = 10,000 fitted items (issue #21).

- ``TrellisHierarchical``: the attachment posterior on its MAP tree (every one of
  the 2N - 1 insertion positions of each new item, then the clusters of the
  cut); target <= 1 s. The fit itself (sparse trellis) is timed for reference.
- ``FastTIWD``: the exact Gibbs conditional of each new item with each kept
  partition held fixed (at most 25 kept samples); target <= 2 s.

Each timing follows a warm-up call on a few items (numba kernels compile or
load from the cache once per process; for ``TrellisHierarchical`` the first
call also prepares the MAP tree's family and the energy's statistics over it,
``O(N^2)`` for pairwise energies, memoised for the fitted model: its time is
printed too). Wall-clock and CPU times (all threads of the process) are
printed with the load average of the machine: on a shared machine the wall
time exceeds the CPU time. Held-out accuracy is printed as the
adjusted Rand index of the predicted clusters against the truth, next to that
of the fitted items.

Run: ``python benchmarks/bench_predict.py [N]`` (default N = 10000).
"""

import os
import sys
import time

import numpy as np
from sklearn.metrics import adjusted_rand_score

N_NEW = 1000


def bench_trellis(n):
    from sklearn.datasets import make_blobs

    from sklearn_trellis import TrellisHierarchical

    X, y = make_blobs(n_samples=n + N_NEW, centers=5, cluster_std=1.0, random_state=0)
    model = TrellisHierarchical(n_clusters=5)
    start = time.perf_counter()
    model.fit(X[:n])
    fit = time.perf_counter() - start
    start = time.perf_counter()
    model.predict_proba(X[n:n + 3])   # compiles or loads the kernels, prepares the MAP tree
    first = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    proba = model.predict_proba(X[n:])
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    predicted = np.argmax(proba, axis=1)
    print(f"TrellisHierarchical  N={n}  fit {fit:7.1f} s   first predict (3 items: kernels, "
          f"tree statistics) {first:5.1f} s")
    print(f"TrellisHierarchical  N={n}  predict_proba({N_NEW}) "
          f"{elapsed:6.3f} s wall, {cpu:6.3f} s CPU  (target 1 s)   ARI fitted "
          f"{adjusted_rand_score(y[:n], model.labels_):.3f}  held-out "
          f"{adjusted_rand_score(y[n:], predicted):.3f}")


def bench_fast_tiwd(n):
    from sklearn_trellis import FastTIWD
    from sklearn_trellis.datasets import make_wishart_blocks

    data = make_wishart_blocks(n_samples=n + N_NEW, n_blocks=10, random_state=0)
    D, y = data.distances, data.target
    model = FastTIWD(n_sweeps=40, burn_in=10, random_state=0)
    start = time.perf_counter()
    model.fit(D[:n, :n])
    fit = time.perf_counter() - start
    D_new = np.ascontiguousarray(D[n:, :n])
    del data, D
    model.predict_proba(D_new[:3])   # warm-up
    start, cpu = time.perf_counter(), time.process_time()
    proba = model.predict_proba(D_new)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    predicted = np.argmax(proba, axis=1)
    n_used = min(25, model.samples_.shape[0])
    print(f"FastTIWD             N={n}  fit {fit:7.1f} s   predict_proba({N_NEW}) "
          f"{elapsed:6.3f} s wall, {cpu:6.3f} s CPU  (target 2 s, {n_used} kept samples)   "
          "ARI fitted "
          f"{adjusted_rand_score(y[:n], model.labels_):.3f}  held-out "
          f"{adjusted_rand_score(y[n:], predicted):.3f}")


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    bench_trellis(size)
    bench_fast_tiwd(size)
    print("load average (1, 5, 15 min):", " ".join(f"{x:.1f}" for x in os.getloadavg()))
