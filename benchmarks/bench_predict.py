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

``--dp-exact`` instead: ``DPMixture(method='exact')`` at 12 rows, CPU ms per new row of
``score_samples`` and ``predict_proba`` (the posterior predictive of every (grid point,
subset) tabulated once, then one evaluation per term) against the previous algorithm
(the subset kernel over ``[x, X]`` per row and grid point,
``ExactMixturePredictive.reference_log_terms``) in the same process, per likelihood.
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


# -- DPMixture(method='exact'): CPU per new row, tabulated predictive vs the previous pass ----

DP_EXACT_CASES = {   # name -> (DPMixture likelihood, data kind, n_features)
    "gaussian (NIW, learned grid)": ("gaussian", "gaussian", 2),
    "gaussian (NIW, fixed prior)": ("niw-fixed", "gaussian", 2),
    "gaussian 5-d (NIW, learned grid)": ("gaussian", "gaussian", 5),
    "diagonal (Normal-Gamma, fixed)": ("diagonal", "gaussian", 2),
    "diagonal (Normal-Gamma, grid)": ("ng-grid", "gaussian", 2),
    "bernoulli (Beta-Bernoulli)": ("bernoulli", "binary", 6),
    "multinomial (Dirichlet-mult.)": ("multinomial", "counts", 6),
}


def _dp_exact_data(kind, n, d, rng):
    if kind == "binary":
        return (rng.random_sample((n, d)) < 0.4).astype(float)
    if kind == "counts":
        return rng.poisson(2.0, size=(n, d)).astype(float)
    X = rng.normal(size=(n, d))
    X[: n // 2] += 2.5
    return X


def bench_dp_exact(n=12, n_new=200, n_old=6):
    """CPU ms per new row of an exact DPMixture fit (``n`` rows): ``score_samples`` and
    ``predict_proba`` (tabulated predictive, after a first call that tabulates) against
    the previous algorithm (one pass of the subset kernel over ``[x, X]`` per row and
    grid point, ``ExactMixturePredictive.reference_log_terms``), in the same process."""
    from scipy.special import logsumexp

    from sklearn_trellis import DPMixture
    from sklearn_trellis.models import NormalGamma, NormalInverseWishart

    named = {"niw-fixed": NormalInverseWishart(hyperprior="fixed"),
             "ng-grid": NormalGamma(hyperprior="grid")}
    for name, (likelihood, kind, d) in DP_EXACT_CASES.items():
        rng = np.random.RandomState(0)
        X = _dp_exact_data(kind, n, d, rng)
        new = _dp_exact_data(kind, n_new, d, rng)
        model = DPMixture(named.get(likelihood, likelihood), method="exact", n_sweeps=5,
                          random_state=0).fit(X)
        exact = model._exact_predictive
        data_new = model._new_rows(new)
        cpu = time.process_time()
        model.score_samples(new[:1])   # tabulates the statistics (kernels: from the cache)
        first = time.process_time() - cpu
        cpu = time.process_time()
        scores = model.score_samples(new)
        per_row = (time.process_time() - cpu) / n_new
        cpu = time.process_time()
        model.predict_proba(new)
        per_row_proba = (time.process_time() - cpu) / n_new
        exact.reference_log_terms(data_new[:1])   # its own table of log m(X_B), once
        cpu = time.process_time()
        old = [logsumexp(exact.reference_log_terms(data_new[r:r + 1]))
               - exact.log_normaliser for r in range(n_old)]
        per_row_old = (time.process_time() - cpu) / n_old
        error = np.max(np.abs(np.array(old) - scores[:n_old]))
        print(f"DPMixture exact n={n} {name:34s} G={len(exact.grid_params):3d}  CPU ms/row: "
              f"previous {1e3 * per_row_old:8.2f}  score_samples {1e3 * per_row:7.3f} "
              f"({per_row_old / per_row:5.1f}x)  predict_proba {1e3 * per_row_proba:7.3f} "
              f"({per_row_old / per_row_proba:5.1f}x)  tabulation {1e3 * first:6.1f} ms  "
              f"max |log p| difference {error:.1e}")


if __name__ == "__main__":
    if "--dp-exact" in sys.argv:
        bench_dp_exact()
    else:
        size = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
        bench_trellis(size)
        bench_fast_tiwd(size)
    print("load average (1, 5, 15 min):", " ".join(f"{x:.1f}" for x in os.getloadavg()))
