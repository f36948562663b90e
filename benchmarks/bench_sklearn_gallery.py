"""scikit-learn's eight gallery examples that use AgglomerativeClustering, class swapped.

Issue 13: users swap ``AgglomerativeClustering`` for ``TrellisHierarchical``
and expect their code to keep working. Each function below replays the
clustering calls of one example of scikit-learn's gallery
(``examples/cluster/<name>.py``; the calls, parameters and plots are the
examples', the data are reduced with ``--scale`` so the script runs in
minutes) with the class given, headless (matplotlib's Agg backend), and the
script prints, for each example, whether it ran with the class swapped, the
time of scikit-learn's class and of ours, and the agreement (adjusted Rand
index) of the two flat clusterings.

The examples (scikit-learn, BSD-3-Clause, by the scikit-learn developers) are
not copied here; their calls are rewritten in a few lines each.

Usage: ``python benchmarks/bench_sklearn_gallery.py [--scale 0.3]``
(``--scale 1`` uses the examples' own sizes).
"""

import argparse
import time
import traceback

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.cluster.hierarchy import dendrogram  # noqa: E402
from sklearn import datasets  # noqa: E402
from sklearn.cluster import AgglomerativeClustering  # noqa: E402
from sklearn.feature_extraction.image import grid_to_graph  # noqa: E402
from sklearn.manifold import SpectralEmbedding  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402
from sklearn.neighbors import kneighbors_graph  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_trellis import TrellisHierarchical  # noqa: E402


def size(n, scale):
    return max(20, int(round(n * scale)))


def agglomerative_dendrogram(cls, scale):
    """plot_agglomerative_dendrogram.py: iris, full tree, dendrogram of 3 levels."""
    X = datasets.load_iris().data
    model = cls(distance_threshold=0, n_clusters=None).fit(X)
    counts = np.zeros(model.children_.shape[0])
    n = len(model.labels_)
    for i, merge in enumerate(model.children_):
        counts[i] = sum(1 if c < n else counts[c - n] for c in merge)
    Z = np.column_stack([model.children_, model.distances_, counts]).astype(float)
    dendrogram(Z, truncate_mode="level", p=3)
    plt.close("all")
    return [model.labels_]


def agglomerative_clustering(cls, scale):
    """plot_agglomerative_clustering.py: noisy spiral, 4 linkages, with/without 30-NN graph."""
    rng = np.random.RandomState(0)
    n = size(1500, scale)
    t = 1.5 * np.pi * (1 + 3 * rng.rand(1, n))
    X = np.concatenate((t * np.cos(t), t * np.sin(t)))
    X = (X + 0.7 * rng.randn(2, n)).T
    graph = kneighbors_graph(X, 30, include_self=False)
    out = []
    for connectivity in (None, graph):
        for n_clusters in (30, 3):
            for linkage in ("average", "complete", "ward", "single"):
                model = cls(linkage=linkage, connectivity=connectivity,
                            n_clusters=n_clusters).fit(X)
                plt.scatter(X[:, 0], X[:, 1], c=model.labels_)
                out.append(model.labels_)
    plt.close("all")
    return out


def agglomerative_clustering_metrics(cls, scale):
    """plot_agglomerative_clustering_metrics.py: waveforms, average linkage, 3 metrics."""
    rng = np.random.RandomState(0)
    n_features = 2000
    t = np.pi * np.linspace(0, 1, n_features)
    X = []
    per_class = size(30, scale)
    for phi, a in [(0.5, 0.15), (0.5, 0.6), (0.3, 0.2)]:
        for _ in range(per_class):
            noise = 1 - 2 * rng.rand(n_features)
            noise[np.abs(noise) < 0.997] = 0
            X.append(12 * ((a + 0.04 * rng.normal())
                           * np.sign(np.cos(6 * (t + phi + 0.01 * rng.normal()))) + noise))
    X = np.array(X)
    out = []
    for metric in ("cosine", "euclidean", "cityblock"):
        model = cls(n_clusters=3, linkage="average", metric=metric).fit(X)
        for label in range(3):
            plt.plot(X[model.labels_ == label].T, alpha=0.5)
        out.append(model.labels_)
    plt.close("all")
    return out


def ward_structured_vs_unstructured(cls, scale):
    """plot_ward_structured_vs_unstructured.py: swiss roll, Ward, with/without 10-NN graph."""
    X, _ = datasets.make_swiss_roll(size(1500, scale), noise=0.05, random_state=0)
    X[:, 1] *= 0.5
    out = [cls(n_clusters=6, linkage="ward").fit(X).labels_]
    graph = kneighbors_graph(X, n_neighbors=10, include_self=False)
    out.append(cls(n_clusters=6, connectivity=graph, linkage="ward").fit(X).labels_)
    return out


def coin_ward_segmentation(cls, scale):
    """plot_coin_ward_segmentation.py: coins image, Ward on the pixel grid, 27 regions."""
    from scipy.ndimage import gaussian_filter, zoom
    try:
        from skimage.data import coins
        image = coins().astype(float)
    except ImportError:      # skimage absent: a synthetic image of 24 discs, same shape
        yy, xx = np.mgrid[:303, :384]
        image = np.zeros((303, 384))
        for cy in np.linspace(40, 260, 4):
            for cx in np.linspace(40, 340, 6):
                image[(yy - cy) ** 2 + (xx - cx) ** 2 < 25 ** 2] = 200.0
    small = zoom(gaussian_filter(image, sigma=2), 0.2 * np.sqrt(scale), order=1)
    X = np.reshape(small, (-1, 1))
    connectivity = grid_to_graph(*small.shape)
    model = cls(n_clusters=27, linkage="ward", connectivity=connectivity).fit(X)
    label = np.reshape(model.labels_, small.shape)
    plt.imshow(small, cmap=plt.cm.gray)
    for region in range(27):
        plt.contour(label == region)
    plt.close("all")
    return [model.labels_]


def digits_linkage(cls, scale):
    """plot_digits_linkage.py: digits in a 2-d spectral embedding, 4 linkages, 10 clusters."""
    X, _ = datasets.load_digits(return_X_y=True)
    X = X[:size(len(X), scale)]
    X_red = SpectralEmbedding(n_components=2, random_state=0).fit_transform(X)
    return [cls(linkage=linkage, n_clusters=10).fit(X_red).labels_
            for linkage in ("ward", "average", "complete", "single")]


def _toy_datasets(n):
    return [
        datasets.make_circles(n_samples=n, factor=0.5, noise=0.05, random_state=170)[0],
        datasets.make_moons(n_samples=n, noise=0.05, random_state=170)[0],
        datasets.make_blobs(n_samples=n, random_state=170)[0],
        datasets.make_blobs(n_samples=n, random_state=170)[0] @ [[0.6, -0.6], [-0.4, 0.8]],
        datasets.make_blobs(n_samples=n, cluster_std=[1.0, 2.5, 0.5], random_state=170)[0],
        np.random.RandomState(170).rand(n, 2),
    ]


def cluster_comparison(cls, scale):
    """plot_cluster_comparison.py: Ward and average (cityblock) with a symmetric k-NN graph."""
    out = []
    for X in _toy_datasets(size(500, scale)):
        X = StandardScaler().fit_transform(X)
        graph = kneighbors_graph(X, n_neighbors=3, include_self=False)
        graph = 0.5 * (graph + graph.T)
        out.append(cls(n_clusters=3, linkage="ward", connectivity=graph).fit(X).labels_)
        out.append(cls(linkage="average", metric="cityblock", n_clusters=3,
                       connectivity=graph).fit(X).labels_)
    return out


def linkage_comparison(cls, scale):
    """plot_linkage_comparison.py: 4 linkages on the toy data sets, no graph."""
    out = []
    for X in _toy_datasets(size(1500, scale)):
        X = StandardScaler().fit_transform(X)
        for linkage in ("single", "average", "complete", "ward"):
            out.append(cls(n_clusters=3, linkage=linkage).fit(X).labels_)
    return out


EXAMPLES = [agglomerative_dendrogram, agglomerative_clustering,
            agglomerative_clustering_metrics, ward_structured_vs_unstructured,
            coin_ward_segmentation, digits_linkage, cluster_comparison, linkage_comparison]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.3,
                        help="fraction of each example's number of samples (default 0.3)")
    args = parser.parse_args()
    print(f"{'example':36s} {'status':8s} {'sklearn':>9s} {'trellis':>9s} {'mean ARI':>9s}")
    for example in EXAMPLES:
        start = time.perf_counter()
        theirs = example(AgglomerativeClustering, args.scale)
        t_sklearn = time.perf_counter() - start
        start = time.perf_counter()
        try:
            ours = example(TrellisHierarchical, args.scale)
            status = "ok"
        except Exception:  # report and go on: the status column is the result
            traceback.print_exc()
            ours, status = None, "FAILED"
        t_ours = time.perf_counter() - start
        ari = (np.mean([adjusted_rand_score(a, b) for a, b in zip(theirs, ours)])
               if ours is not None else float("nan"))
        print(f"{example.__name__:36s} {status:8s} {t_sklearn:8.2f}s {t_ours:8.2f}s "
              f"{ari:9.2f}", flush=True)


if __name__ == "__main__":
    main()
