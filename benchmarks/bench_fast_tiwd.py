"""FastTIWD speed and memory: time per Gibbs sweep for n = 1,000 ... 16,000 and n = 12,290.

Each configuration runs in its own process (so that the peak resident memory
is that of one run): it draws the "normal clusters" data of
:func:`sklearn_trellis.datasets.make_wishart_blocks` with ``n // 32`` blocks
(about 380 at n = 12,290, as the paper's protein data with 379 clusters),
times the tree normalisation (single linkage + conjugate gradients + ``S*``)
and then the Gibbs sweeps of ``FastTIWD`` started from the true partition
(the steady state; one warm-up sweep compiles the kernels), with ``theta``
sampled on its grid every sweep as in a normal fit. "fit extra" is the
fixed cost of one ``fit`` call besides its sweeps (input checks, the dof
estimate, summaries; the normalisation is timed separately). The peak
resident memory includes generating the data (a float64 distance matrix
even for the float32 runs).

Run: ``python benchmarks/bench_fast_tiwd.py [--quick]``. It prints one line per
configuration and the ratios of sweep times per doubling of n (O(n^2) means
about 4).
"""

import argparse
import json
import resource
import subprocess
import sys
import time

SIZES = [1000, 2000, 4000, 8000, 16000]
TARGET_N = 12290


def run_one(n, dtype, n_sweeps):
    import numpy as np

    from sklearn_trellis import FastTIWD
    from sklearn_trellis.datasets import make_wishart_blocks
    from sklearn_trellis.preprocessing.distance_normalization import normalized_inner_products

    data = make_wishart_blocks(n_samples=n, n_blocks=max(3, n // 32), random_state=0,
                               dtype=dtype)
    D = data.distances
    # the normalisation alone (single linkage + conjugate gradients + S*), then freed
    normalized_inner_products(np.ascontiguousarray(D[:8, :8]), "single", dtype=np.dtype(dtype))
    start = time.perf_counter()
    S, info = normalized_inner_products(D, "single", dtype=np.dtype(dtype))
    normalisation = time.perf_counter() - start
    del S
    model = FastTIWD(n_sweeps=1, burn_in=0, init=data.target, dtype=dtype, warm_start=True,
                     random_state=0)
    start = time.perf_counter()
    model.fit(D)  # normalisation + one warm-up sweep (compiles or loads the kernels)
    first = time.perf_counter() - start
    # per sweep = (time of a warm fit with 1 + n_sweeps sweeps - time with 1 sweep) / n_sweeps,
    # which removes the fixed O(n^2) passes of fit (input checks, dof estimate, summaries)
    timings = []
    for sweeps in (1, 1 + n_sweeps):
        model.set_params(n_sweeps=sweeps)
        start = time.perf_counter()
        model.fit(D)
        timings.append(time.perf_counter() - start)
    per_sweep = (timings[1] - timings[0]) / n_sweeps
    overhead = timings[0] - per_sweep
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20  # KiB -> GiB
    return dict(n=n, dtype=dtype, per_sweep=per_sweep, normalisation=normalisation,
                overhead=overhead,
                first_fit=first, cg=info["cg_iterations"], clusters=int(model.n_clusters_),
                true_clusters=int(np.unique(data.target).size), peak_gib=peak,
                matrix_gib=D.nbytes / 2 ** 30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 4,000 only")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(int(args.one[0]), args.one[1], int(args.one[2]))))
        return
    sizes = SIZES[:3] if args.quick else SIZES
    configs = [(n, "float64") for n in sizes] + [(n, "float32") for n in sizes]
    if not args.quick:
        configs += [(TARGET_N, "float64"), (TARGET_N, "float32")]
    print(f"{'n':>6} {'dtype':>8} {'s/sweep':>8} {'normalise s':>11} {'fit extra s':>11} "
          f"{'CG it':>5} "
          f"{'K (true)':>10} {'D GiB':>6} {'peak RSS GiB':>12}", flush=True)
    results = {}
    for n, dtype in configs:
        sweeps = 20 if n <= 2000 else (8 if n <= 4000 else 3)
        out = subprocess.run([sys.executable, __file__, "--one", str(n), dtype, str(sweeps)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        results[(n, dtype)] = r
        print(f"{n:>6} {dtype:>8} {r['per_sweep']:>8.3f} {r['normalisation']:>11.2f} "
              f"{r['overhead']:>11.2f} {r['cg']:>5} {r['clusters']:>5} ({r['true_clusters']:>3}) "
              f"{r['matrix_gib']:>6.2f} {r['peak_gib']:>12.2f}", flush=True)
    for dtype in ("float64", "float32"):
        ratios = [results[(b, dtype)]["per_sweep"] / results[(a, dtype)]["per_sweep"]
                  for a, b in zip(sizes, sizes[1:])]
        print(f"{dtype} sweep-time ratio per doubling of n: "
              + ", ".join(f"{r:.2f}" for r in ratios))
    if not args.quick:
        for dtype in ("float64", "float32"):
            r = results[(TARGET_N, dtype)]
            print(f"n = {TARGET_N} ({dtype}): {r['per_sweep']:.3f} s per sweep "
                  f"(target <= 1 s; the paper reports ~4.3 s on 2011 hardware)")


if __name__ == "__main__":
    main()
