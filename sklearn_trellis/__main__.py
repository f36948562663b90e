"""Demo: ``python -m sklearn_trellis``.

Exact correlation clustering of 12 tumours (a stratified subset of the breast
cancer data that scikit-learn ships): the log partition function over all
Bell(12) = 4,213,597 clusterings, the MAP clustering, and the pairs of tumours
whose co-clustering is most and least certain.
"""

import argparse
import time

import numpy as np
from numba.core import event

from . import ExactCorrelationClustering
from .datasets import load_tumour_subset


def timed(func, *args, **kwargs):
    """Run ``func``; return its result, the seconds it took and the numba compilations in it.

    Only real compilations count (numba's ``numba:compile`` events); loading
    machine code from numba's on-disk cache is not one.
    """
    with event.install_recorder("numba:compile") as recorder:
        start = time.perf_counter()
        result = func(*args, **kwargs)
        elapsed = time.perf_counter() - start
    n_compiled = sum(1 for _, ev in recorder.buffer if ev.is_start)
    return result, elapsed, n_compiled


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sklearn_trellis", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beta", type=float, default=3.0, help="inverse temperature (default 3)")
    parser.add_argument("--per-class", type=int, default=6,
                        help="tumours per class (default 6, i.e. N=12)")
    args = parser.parse_args(argv)

    try:  # out-of-range options get argparse's short usage error, not a traceback
        data = load_tumour_subset(n_per_class=args.per_class)
        if args.per_class < 1:
            raise ValueError(f"--per-class must be >= 1, got {args.per_class}.")
        model, elapsed, n_compiled = timed(
            ExactCorrelationClustering(beta=args.beta, random_state=0).fit, data.data)
    except ValueError as error:
        parser.error(str(error))
    names = [f"{'MB'[t]}{i}" for t, i in zip(data.target, data.ids)]
    n = len(names)
    approximation = model.approximation_   # None when every clustering was summed over
    kind = "approximate" if approximation else "exact"

    print(f"{kind.capitalize()} correlation clustering of {n} tumours "
          f"(M = malignant, B = benign; row number in the breast cancer data)")
    print(f"beta = {args.beta}, affinity exp(-||x_i - x_j||) minus its mean\n")
    if approximation:
        print(f"too many items for exact inference: {approximation}\n")
    print(f"log partition function  log Z = {model.log_partition_function_:.6f}")
    print(f"MAP clustering, log phi = {model.map_log_potential_:.6f}, "
          f"P(MAP) = {np.exp(model.map_log_potential_ - model.log_partition_function_):.4g}")
    for k in range(model.n_clusters_):
        members = [names[i] for i in np.flatnonzero(model.labels_ == k)]
        print(f"  cluster {k}: {' '.join(members)}")
    k_dist = model.n_clusters_distribution_
    top = np.argsort(k_dist)[::-1][:3]
    print("number of clusters: " + ", ".join(f"P(K={k + 1}) = {k_dist[k]:.3f}" for k in top))

    iu, ju = np.triu_indices(n, 1)
    p = model.pairwise_marginals_[iu, ju]
    uncertainty = np.minimum(p, 1 - p)
    order = np.argsort(uncertainty)
    print("\nmost certain pairs (P same cluster):")
    for idx in order[:5]:
        print(f"  {names[iu[idx]]:>5} {names[ju[idx]]:>5}  {p[idx]:.4f}")
    print("least certain pairs:")
    for idx in order[::-1][:5]:
        print(f"  {names[iu[idx]]:>5} {names[ju[idx]]:>5}  {p[idx]:.4f}")
    compilation = (f" (including numba's compilation of {n_compiled} functions, "
                   f"cached on disk for the next runs)" if n_compiled else "")
    print(f"\n{kind} inference over all {n} items took {elapsed:.2f} s{compilation}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
