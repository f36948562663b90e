"""Benchmark of the sample-set summaries at n = 1,000 elements x T = 1,000 samples.

Target (issue #5): entropy agglomeration in at most 10 s on the project machine.
Also times point_estimate (Binder and VI) and pairwise_cooccurrence at that size.
The samples are noisy copies of a 10-cluster partition (each label redrawn
among 15 with probability 0.2), a diffuse posterior with about 15 blocks per
sample. Numba compilation is excluded (a warm-up run on a small set first).

    python benchmarks/bench_summaries.py [--n 1000] [--samples 1000]
"""

import argparse
import os
import time

import numpy as np

from sklearn_trellis import EntropyAgglomeration
from sklearn_trellis.summaries import (entropy_sequence, pairwise_cooccurrence,
                                       point_estimate)


def synthetic_samples(n, n_samples, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 10, n)
    noisy = rng.random((n_samples, n)) < 0.2
    return np.where(noisy, rng.integers(0, 15, (n_samples, n)), base)


def timed(label, function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    elapsed = time.perf_counter() - start
    print(f"{label:<48s} {elapsed:8.2f} s")
    return result, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()

    warm = synthetic_samples(30, 20, seed=1)
    EntropyAgglomeration().fit(warm)
    point_estimate(warm, "binder", n_runs=1, random_state=0)
    point_estimate(warm, "vi", n_runs=1, random_state=0)
    entropy_sequence(warm)

    samples = synthetic_samples(args.n, args.samples)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"n = {args.n} elements, T = {args.samples} samples, "
          f"{np.mean([np.unique(r).size for r in samples]):.1f} blocks per sample on average; "
          f"{os.cpu_count()} cores, load average {load:.1f}")
    ea, t_ea = timed("EntropyAgglomeration().fit", EntropyAgglomeration().fit, samples)
    timed("pairwise_cooccurrence", pairwise_cooccurrence, samples)
    timed("entropy_sequence (all n prefixes)", entropy_sequence, samples)
    (labels_b, loss_b), _ = timed("point_estimate(loss='binder', n_runs=10)", point_estimate,
                                  samples, "binder", random_state=0, return_loss=True)
    (labels_v, loss_v), _ = timed("point_estimate(loss='vi', n_runs=10)", point_estimate,
                                  samples, "vi", random_state=0, return_loss=True)
    print(f"EA target <= 10 s: {'met' if t_ea <= 10 else 'NOT met'} ({t_ea:.2f} s)")
    print(f"Binder estimate: {labels_b.max() + 1} clusters, expected loss {loss_b:.1f}; "
          f"VI estimate: {labels_v.max() + 1} clusters, expected VI {loss_v:.4f}")
    print(f"EA root entropy {ea.distances_[-1]:.4f}, monotone: "
          f"{bool(np.all(np.diff(ea.distances_) >= 0))}")


if __name__ == "__main__":
    main()
