"""Quality and speed of ``DPMixture`` (collapsed Gibbs) with default settings.

Prints, per dataset, the adjusted Rand index and seconds of ``DPMixture()``
and of scikit-learn's ``BayesianGaussianMixture`` (default settings,
``n_components=10``, measured in the same run), next to the targets quoted in
issue #4 (the best of BayesianGaussianMixture, bnpy's variational DP mixture
and the C collapsed-Gibbs package bmcc). Then seconds per Gibbs sweep
(scan only, and scan + the default 10 split-merge proposals) and the time of
the co-clustering matrix of 1,000 samples of 2,000 items.

Run: ``python benchmarks/bench_dp_mixture.py [--quick]`` (``--quick`` skips the
100,000-point dataset).
"""

import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_blobs
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import DPMixture
from sklearn_trellis.models import NormalInverseWishart
from sklearn_trellis.sampling import gibbs
from sklearn_trellis.sampling.coclustering import coclustering_matrix
from sklearn_trellis.sampling.priors import CRP

TARGETS = {"iris": 0.57, "wine (standardized)": 0.50, "breast cancer (standardized)": 0.62,
           "digits (10 PCA dims)": 0.74, "blobs 10,000 x 2": 0.87, "blobs 100,000 x 10": 0.99}


def datasets(quick):
    X, y = load_iris(return_X_y=True)
    yield "iris", X, y
    X, y = load_wine(return_X_y=True)
    yield "wine (standardized)", StandardScaler().fit_transform(X), y
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer (standardized)", StandardScaler().fit_transform(X), y
    X, y = load_digits(return_X_y=True)
    yield "digits (10 PCA dims)", PCA(10, random_state=0).fit_transform(X), y
    X, y = make_blobs(10_000, 2, centers=5, random_state=0)
    yield "blobs 10,000 x 2", X, y
    if not quick:
        X, y = make_blobs(100_000, 10, centers=5, random_state=0)
        yield "blobs 100,000 x 10", X, y


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def quality(quick):
    print(f"{'dataset':30s} {'target':>6s} | {'DPMixture ARI':>13s} {'s':>7s} {'K':>3s} | "
          f"{'BGM ARI':>7s} {'s':>6s}")
    for name, X, y in datasets(quick):
        model, seconds = timed(lambda: DPMixture(random_state=0).fit(X))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            bgm, bgm_seconds = timed(lambda: BayesianGaussianMixture(
                n_components=10, random_state=0).fit(X))
        bgm_ari = adjusted_rand_score(y, bgm.predict(X))
        ari = adjusted_rand_score(y, model.labels_)
        flag = "ok " if ari >= TARGETS[name] else "LOW"
        print(f"{name:30s} {TARGETS[name]:6.2f} | {ari:9.3f} {flag} {seconds:7.2f} "
              f"{model.n_clusters_:3d} | {bgm_ari:7.3f} {bgm_seconds:6.2f}", flush=True)


def seconds_per_sweep(n, d, repeats=5):
    X, y = make_blobs(n, d, centers=5, random_state=0)
    lik = NormalInverseWishart().fit(X)
    data = lik.kernel_data(X)
    state = gibbs.new_state(lik, data, y, 1.0)
    rng = np.random.RandomState(0)
    pp = CRP(1.0).kernel_params()
    gibbs.sweep(state, lik, pp, data, rng, n_split_merge=10)   # compile / warm up
    _, scan = timed(lambda: [gibbs.sweep(state, lik, pp, data, rng) for _ in range(repeats)])
    _, full = timed(lambda: [gibbs.sweep(state, lik, pp, data, rng, n_split_merge=10)
                             for _ in range(repeats)])
    return scan / repeats, full / repeats


def speed(quick):
    targets = {(10_000, 2): 0.1, (10_000, 10): 0.1, (100_000, 10): 1.5}
    for (n, d), target in targets.items():
        if quick and n > 10_000:
            continue
        scan, full = seconds_per_sweep(n, d)
        print(f"seconds per sweep n={n:,} d={d}: scan {scan:.4f} s, scan + 10 split-merge "
              f"{full:.4f} s (target <= {target} s)", flush=True)
    rng = np.random.default_rng(0)
    samples = rng.integers(0, 5, size=(1000, 2000))
    coclustering_matrix(samples[:2, :10])  # compile
    _, seconds = timed(lambda: coclustering_matrix(samples))
    print(f"co-clustering matrix, 1,000 samples x 2,000 items: {seconds:.3f} s (target <= 2 s)")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    quality(quick)
    speed(quick)
