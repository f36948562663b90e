"""Sparse flat trellis: time of each step on 10-d blobs with correlation clustering.

Tree family (one average-linkage tree) at N = 1,000 and 10,000; union of the
four linkage trees (remainder-state engine): states and time at N = 100, 1,000.
Run: ``PYTHONPATH=. python benchmarks/bench_sparse_flat.py``.

Measured 2026-11-21 on the 2-core machine under a load of about 7:
tree family fit < 2 ms at N = 10,000 (pairwise matrix 2.6 s, 100 samples
0.07 s, number-of-clusters distribution 2.3 s; the scipy average linkage
tree takes 8 s and the affinity matrix 10-20 s); union of the four linkage
trees: 146 states at N = 100, 141,834 states / 619,858 transitions / 7.8 s at
N = 1,000, more than 5,000,000 states at N = 2,000 (refused).
"""

import resource
import sys
import time

import numpy as np
from sklearn.datasets import make_blobs

from sklearn_trellis.models import CorrelationClusteringModel
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees
from sklearn_trellis.engines.sparse.sparse_flat import SparseFlatTrellis


def affinity(X):
    sq = (X ** 2).sum(1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None] - 2 * X @ X.T, 0))
    w = np.exp(-d / np.median(d))
    w -= w.mean()
    return w


def timed(label, fn):
    start = time.perf_counter()
    out = fn()
    print(f"  {label:38s} {time.perf_counter() - start:8.3f} s", flush=True)
    return out


def run(n, linkage, max_states=2_000_000):
    print(f"N={n}, linkage={linkage}", flush=True)
    X, _ = make_blobs(n_samples=n, n_features=10, centers=10, random_state=0)
    w = timed("affinity", lambda: affinity(X))
    model = CorrelationClusteringModel(beta=1.0).fit(w)
    trees = timed("linkage trees", lambda: linkage_seed_trees(X, linkage=linkage))
    family = timed("family", lambda: ClusterFamily.from_trees(trees, n))
    e = timed("family log-potentials", lambda: model.family_log_potentials(family))
    trellis = SparseFlatTrellis(family, e, max_states=max_states)
    try:
        timed(f"fit ({trellis.method_})", trellis.fit)
    except ValueError as err:
        print("  refused:", err)
        return
    print(f"  vertices {family.n_vertices}, states {trellis.n_states_}, "
          f"transitions {trellis.n_transitions_}, log Z {trellis.log_partition_function:.2f}, "
          f"MAP {trellis.map_log_potential:.2f} ({trellis.map_labels.max() + 1} clusters)")
    timed("pairwise rows (10 items)", lambda: trellis.pairwise_marginals(rows=np.arange(10)))
    if 8 * n * n <= 2 ** 30:
        timed("pairwise matrix", trellis.pairwise_marginals)
    timed("100 samples", lambda: trellis.sample(100, random_state=0))
    timed("n_clusters distribution", trellis.n_clusters_distribution)
    print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB",
          flush=True)


if __name__ == "__main__":
    run(200, "average")   # compile
    for n, linkage in [(1000, "average"), (10000, "average"), (100, "all"), (1000, "all")]:
        if len(sys.argv) > 1 and str(n) not in sys.argv[1:]:
            continue
        run(n, linkage)
