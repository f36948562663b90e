"""Drop-in quality of ``TrellisHierarchical``: its clusters against scikit-learn's trees.

With default parameters and the true number of classes, the adjusted Rand
index (ARI) against the truth of ``AgglomerativeClustering`` (Ward, the
default, and average linkage) and ``TrellisHierarchical()`` on iris, wine,
breast cancer and digits, raw and standardised (``StandardScaler``), and on
further labelled sets (blobs of varied spreads, a planted hierarchy, an
outlier set), with each fit's run time, the size of its smallest cluster, the
mean ARI per column over the four reference sets (raw and standardised
separately) and the load average (timings are under the machine's load: the
Ward time of the same row is the anchor).

Kernels are compiled (or loaded from numba's cache) by a warm-up fit first.

Run: ``python benchmarks/bench_drop_in_quality.py [--quick]`` (``--quick``: the
four reference sets only).
"""

import os
import sys
import time

import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.datasets import (load_breast_cancer, load_digits, load_iris, load_wine,
                              make_blobs)
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import TrellisHierarchical

REFERENCE = ("iris", "wine", "breast_cancer", "digits")


def planted_hierarchy(seed=0):
    """Two groups of two clusters (nested), 60 points each, in 5 dimensions."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [0, 4], [12, 0], [12, 4]], dtype=float)
    X = np.concatenate([rng.normal(c, 1.0, (60, 2)) for c in centres])
    X = np.hstack([X, rng.normal(0, 1, (len(X), 3))])
    return X, np.repeat(np.arange(4), 60)


def blobs_with_outliers(seed=0):
    """Three blobs plus three far outliers (the outliers are their own class)."""
    X, y = make_blobs(n_samples=[80, 80, 80], cluster_std=[0.5, 1.0, 1.5],
                      random_state=seed)
    outliers = np.array([[40.0, 40.0], [-40.0, 40.0], [40.0, -40.0]])
    return np.vstack([X, outliers]), np.concatenate([y, [3, 4, 5]])


def datasets(quick):
    sets = {"iris": load_iris(return_X_y=True), "wine": load_wine(return_X_y=True),
            "breast_cancer": load_breast_cancer(return_X_y=True),
            "digits": load_digits(return_X_y=True)}
    if not quick:
        sets["blobs_varied"] = make_blobs(n_samples=[100, 200, 50],
                                          cluster_std=[0.5, 2.5, 1.0], random_state=0)
        sets["blobs_10d"] = make_blobs(n_samples=400, centers=5, n_features=10,
                                       cluster_std=2.0, random_state=1)
        sets["planted_hierarchy"] = planted_hierarchy()
        sets["blobs_outliers"] = blobs_with_outliers()
    return sets


def timed(estimator, X):
    start = time.perf_counter()
    labels = estimator.fit(X).labels_
    return labels, time.perf_counter() - start


def main():
    quick = "--quick" in sys.argv
    TrellisHierarchical(n_clusters=2).fit(np.random.default_rng(0).normal(size=(40, 3)))
    methods = {
        "ward": lambda k: AgglomerativeClustering(n_clusters=k),
        "average": lambda k: AgglomerativeClustering(n_clusters=k, linkage="average"),
        "trellis": lambda k: TrellisHierarchical(n_clusters=k),
    }
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    header = f"{'dataset':<18}{'scaling':<7}{'N':>6}" + "".join(
        f"{name + ' ARI':>13}{'time':>8}{'min':>5}" for name in methods)
    print(header)
    print("-" * len(header))
    means = {(scaled, name): [] for scaled in ("raw", "std") for name in methods}
    for dataset, (X, y) in datasets(quick).items():
        k = len(np.unique(y))
        for scaled in ("raw", "std"):
            data = StandardScaler().fit_transform(X) if scaled == "std" else X
            row = f"{dataset:<18}{scaled:<7}{len(y):>6}"
            for name, make in methods.items():
                labels, seconds = timed(make(k), data)
                ari = adjusted_rand_score(y, labels)
                row += f"{ari:>13.3f}{seconds:>8.2f}{np.bincount(labels).min():>5d}"
                if dataset in REFERENCE:
                    means[scaled, name].append(ari)
            print(row, flush=True)
    print()
    for scaled in ("raw", "std"):
        print(f"mean ARI over {', '.join(REFERENCE)} ({scaled}): " + ", ".join(
            f"{name} {np.mean(means[scaled, name]):.4f}" for name in methods))
    print("mean ARI over both: " + ", ".join(
        f"{name} {np.mean(means['raw', name] + means['std', name]):.4f}" for name in methods))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print("'min' is the size of the smallest cluster; 'time' in seconds (Ward's is "
          "the anchor).")


if __name__ == "__main__":
    main()
