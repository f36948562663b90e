"""Quality, evidence bounds and speed of ``BayesianHierarchicalClustering``.

Quality: ARI and purity of greedy BHC (binary and rose trees, labels cut at
``r < 0.5``, so the number of clusters is BHC's own) on iris, wine and breast
cancer (standardized), digits (10 PCA dimensions) and 10-dimensional blobs,
against scikit-learn's ``AgglomerativeClustering(linkage='ward')`` given the
true number of classes and ``DPMixture()`` (default settings), in the same run.

Bounds: on random subsets of 12 rows, the DP-mixture evidence bound of the BHC
tree, the bound over the family (BHC tree + the four scipy linkage trees,
``family='all'``) and the exact DP marginal; "closed" is the share of the
gap between the tree bound and the exact value that the family closes.

Speed: greedy BHC at n = 2,000 x 10 (target <= 10 s; also without the
hyperparameter search), randomized BHC at n = 100,000 x 10 (<= 2 min), rose
trees at n = 1,000 x 10 (<= 30 s).
Kernels are compiled (or loaded from numba's cache) by a warm-up fit first.

Run: ``python benchmarks/bench_bhc.py [--quick]`` (``--quick`` skips the
100,000-point fit and DPMixture).
"""

import os
import sys
import time

import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_blobs
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import BayesianHierarchicalClustering, DPMixture


def purity(y, labels):
    """Share of the items in the majority class of their cluster."""
    total = 0
    for k in np.unique(labels):
        total += np.bincount(y[labels == k]).max()
    return total / y.size


def datasets():
    X, y = load_iris(return_X_y=True)
    yield "iris", X, y
    X, y = load_wine(return_X_y=True)
    yield "wine (standardized)", StandardScaler().fit_transform(X), y
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer (standardized)", StandardScaler().fit_transform(X), y
    X, y = load_digits(return_X_y=True)
    yield "digits (10 PCA dims)", PCA(10, random_state=0).fit_transform(X), y
    X, y = make_blobs(2_000, 10, centers=5, random_state=0)
    yield "blobs 2,000 x 10", X, y


def timed(estimator, X):
    start = time.perf_counter()
    estimator.fit(X)
    return estimator, time.perf_counter() - start


def quality(quick):
    methods = {
        "BHC greedy": lambda k: BayesianHierarchicalClustering(),
        "BHC rose": lambda k: BayesianHierarchicalClustering(tree="rose"),
        "ward (true K)": lambda k: AgglomerativeClustering(n_clusters=k, linkage="ward"),
    }
    if not quick:
        methods["DPMixture"] = lambda k: DPMixture(random_state=0)
    print("Quality: ARI / purity / number of clusters (seconds)")
    header = f"{'dataset':30s}" + "".join(f"{name:>28s}" for name in methods)
    print(header)
    for name, X, y in datasets():
        k = np.unique(y).size
        cells = []
        for make in methods.values():
            model, seconds = timed(make(k), X)
            labels = model.labels_
            cells.append(f"{adjusted_rand_score(y, labels):.3f} / {purity(y, labels):.3f} / "
                         f"{np.unique(labels).size:3d} ({seconds:5.1f})")
        print(f"{name:30s}" + "".join(f"{c:>28s}" for c in cells))


def bounds():
    print("\nEvidence bounds on 12-row subsets (natural log): tree bound <= family bound "
          "<= exact DP")
    print(f"{'subset':24s}{'tree':>12s}{'family':>12s}{'exact':>12s}{'closed':>9s}")
    rng = np.random.RandomState(0)
    for name, X, _ in list(datasets())[:4]:
        for seed in range(2):
            rows = rng.choice(X.shape[0], 12, replace=False)
            model = BayesianHierarchicalClustering(family="all").fit(X[rows])
            tree, family = model.log_evidence_lower_bound_, model.log_evidence_family_bound_
            exact = model.log_marginal_likelihood_dp_
            closed = (family - tree) / (exact - tree) if exact > tree else 1.0
            print(f"{name[:20] + ' #' + str(seed):24s}{tree:12.3f}{family:12.3f}"
                  f"{exact:12.3f}{closed:9.1%}")


def speed(quick):
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"\nSpeed (seconds; load average {load} on {os.cpu_count()} cores)")
    runs = [("greedy, n = 2,000 x 10 (<= 10 s)", 2_000, {}),
            ("greedy, fixed hyperparameters", 2_000, {"hyperparameters": "fixed"}),
            ("rose, n = 1,000 x 10 (<= 30 s)", 1_000, {"tree": "rose"})]
    if not quick:
        runs.append(("randomized, n = 100,000 x 10 (<= 120 s)", 100_000,
                     {"method": "randomized", "random_state": 0}))
    for label, n, params in runs:
        X, y = make_blobs(n, 10, centers=5, random_state=0)
        model, seconds = timed(BayesianHierarchicalClustering(**params), X)
        print(f"{label:45s}{seconds:8.1f}   ARI {adjusted_rand_score(y, model.labels_):.3f}, "
              f"{model.n_clusters_} clusters")


def main():
    quick = "--quick" in sys.argv
    # warm-up: compile or load every kernel from numba's cache
    X, _ = make_blobs(30, 10, random_state=0)
    BayesianHierarchicalClustering().fit(X).predict(X)
    BayesianHierarchicalClustering(tree="rose").fit(X)
    BayesianHierarchicalClustering(method="randomized", subsample_size=10, random_state=0).fit(X)
    quality(quick)
    bounds()
    speed(quick)


if __name__ == "__main__":
    main()
