"""Benchmark of point estimates and credible balls at n = 5,000 elements x T = 1,000 samples.

Target (issue #19): the Binder and the VI estimate each in at most 10 s on 2
cores, and the credible ball in at most 10 s. The samples are noisy copies of
an 8-cluster partition (each label redrawn among 10 with probability 0.05).
Numba compilation is excluded (a warm-up run on a small set first).
R's salso is not used as an anchor: R itself (r-base-core) is available, but
salso and mcclust(.ext) are not (no CRAN access, and Debian ships no
r-cran-salso / r-cran-mcclust package).

    python benchmarks/bench_point_estimates.py [--n 5000] [--samples 1000] [--n-jobs 2]
"""

import argparse
import time

import numpy as np

from sklearn_trellis._core import interpreted
from sklearn_trellis.summaries import credible_ball, point_estimate


def synthetic_samples(n, n_samples, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 8, n)
    noisy = rng.random((n_samples, n)) < 0.05
    return np.where(noisy, rng.integers(0, 10, (n_samples, n)), base)


def timed(label, function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    elapsed = time.perf_counter() - start
    print(f"{label:<56s} {elapsed:8.2f} s")
    return result, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    samples = synthetic_samples(args.n, args.samples)
    warm = synthetic_samples(40, 20, seed=1)
    interpreted.INTERPRETED_BUDGET_SECONDS = 0.0   # the warm-up compiles (no interpreted runs)
    for loss in ("binder", "vi"):
        point_estimate(warm, loss, n_runs=1, random_state=0)
    credible_ball(warm, warm[0])
    print(f"n = {args.n} elements, T = {args.samples} samples, n_jobs = {args.n_jobs}")
    results = {}
    for loss in ("binder", "vi"):
        (labels, value), seconds = timed(
            f"point_estimate(loss={loss!r}) [defaults]", point_estimate, samples, loss,
            n_jobs=args.n_jobs, random_state=0, return_loss=True)
        results[loss] = labels
        print(f"    {labels.max() + 1} clusters, expected loss {value:.6g}")
    ball, _ = timed("credible_ball(loss='vi', level=0.95)", credible_ball, samples,
                    results["vi"])
    print(f"    radius {ball.radius:.4g}; clusters in the ball {ball.n_clusters_range}; "
          f"horizontal bound at {ball.horizontal_distance:.4g}")


if __name__ == "__main__":
    main()
