"""InfiniteBiclustering on planted structure against scikit-learn's spectral biclustering, and speed.

Datasets (shuffled rows and columns, seed 0):

- ``make_biclusters`` 300 x 300, 5 biclusters (block values in [10, 100], background 0),
  Gaussian noise sd 5, 30, 60, 100;
- ``make_checkerboard`` 300 x 300, 4 x 3 blocks (values in [10, 100]), noise sd 5, 30,
  60, 100;
- binary 200 x 120 with 4 x 3 planted blocks, block probabilities drawn from
  [0.05, 0.95], and the same with 20% of the entries missing (NaN; the spectral
  methods get them filled with the column means).

``SpectralCoclustering`` and ``SpectralBiclustering`` are given the true numbers
of clusters; ``InfiniteBiclustering`` (defaults: 200 sweeps, learned cell
hyperparameters) is not. Scores: ``consensus_score`` against the generator's
biclusters (for make_biclusters these are the 5 diagonal blocks, while
SpectralBiclustering and InfiniteBiclustering report every row-cluster x
column-cluster block, so the column "cons (blocks)" scores all methods against
the checkerboard of all true blocks instead), and the adjusted Rand index of
the row and of the column labels.

Speed: the time of one sweep (row half-sweep + column half-sweep, 10
split-merge proposals each, hyperparameters redrawn) on a 10,000 x 200 real
matrix (make_checkerboard, 4 x 3 blocks, noise 10), median of 5 sweeps after 3
warm-up sweeps (the first compiles or loads the kernels).

Run: ``python benchmarks/bench_biclustering.py [--quick]``.
"""

import argparse
import time

import numpy as np
from sklearn.cluster import SpectralBiclustering, SpectralCoclustering
from sklearn.datasets import make_biclusters, make_checkerboard
from sklearn.metrics import adjusted_rand_score, consensus_score

from sklearn_trellis import InfiniteBiclustering


def block_biclusters(row_labels, column_labels):
    """Every (row cluster, column cluster) block as a bicluster: (rows, columns) indicators."""
    kr, kc = row_labels.max() + 1, column_labels.max() + 1
    rows = row_labels[None, :] == np.arange(kr)[:, None]
    columns = column_labels[None, :] == np.arange(kc)[:, None]
    return np.repeat(rows, kc, axis=0), np.tile(columns, (kr, 1))


def binary_blocks(shape, n_clusters, rng, missing=0.0):
    rows = rng.randint(n_clusters[0], size=shape[0])
    columns = rng.randint(n_clusters[1], size=shape[1])
    probabilities = rng.uniform(0.05, 0.95, size=n_clusters)
    X = (rng.random_sample(shape) < probabilities[rows][:, columns]).astype(float)
    if missing:
        X[rng.random_sample(shape) < missing] = np.nan
    truth = block_biclusters(rows, columns)
    return X, truth, rows, columns


def datasets(quick):
    noises = [5, 60] if quick else [5, 30, 60, 100]
    for noise in noises:
        X, rows, columns = make_biclusters((300, 300), 5, noise=noise, shuffle=True,
                                           random_state=0)
        yield f"biclusters noise={noise}", X, (rows, columns), rows.argmax(0), columns.argmax(0)
    for noise in noises:
        X, rows, columns = make_checkerboard((300, 300), (4, 3), noise=noise, shuffle=True,
                                             random_state=0)
        row_labels = rows[::3].argmax(0)        # rows_ holds every (row, column) block
        column_labels = columns[:3].argmax(0)
        yield f"checkerboard noise={noise}", X, (rows, columns), row_labels, column_labels
    for missing in ([0.0] if quick else [0.0, 0.2]):
        X, truth, row_labels, column_labels = binary_blocks((200, 120), (4, 3),
                                                            np.random.RandomState(0), missing)
        yield f"binary 4x3 missing={missing:.0%}", X, truth, row_labels, column_labels


def scores(model, X_truth, row_labels, column_labels):
    truth_blocks = block_biclusters(row_labels, column_labels)
    found = (model.rows_, model.columns_)
    return (consensus_score(found, X_truth), consensus_score(found, truth_blocks),
            adjusted_rand_score(row_labels, model.row_labels_),
            adjusted_rand_score(column_labels, model.column_labels_))


def planted_structure(quick):
    print(f"{'dataset':<28}{'method':<22}{'consensus':>10}{'cons (blocks)':>14}"
          f"{'row ARI':>9}{'col ARI':>9}{'K rows x K cols':>16}{'seconds':>9}")
    for name, X, truth, row_labels, column_labels in datasets(quick):
        kr, kc = row_labels.max() + 1, column_labels.max() + 1
        filled = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
        methods = [
            ("SpectralCoclustering", SpectralCoclustering(n_clusters=kr, random_state=0),
             filled + 1e-9),
            ("SpectralBiclustering", SpectralBiclustering(n_clusters=(kr, kc), random_state=0),
             filled + 1e-9),
            ("InfiniteBiclustering", InfiniteBiclustering(
                likelihood="bernoulli" if name.startswith("binary") else "normal",
                n_sweeps=60 if quick else 200, random_state=0), X),
        ]
        for label, model, data in methods:
            start = time.perf_counter()
            model.fit(data)
            seconds = time.perf_counter() - start
            consensus, blocks, row_ari, column_ari = scores(model, truth, row_labels,
                                                            column_labels)
            k_rows = len(np.unique(model.row_labels_))
            k_columns = len(np.unique(model.column_labels_))
            print(f"{name:<28}{label:<22}{consensus:>10.3f}{blocks:>14.3f}{row_ari:>9.3f}"
                  f"{column_ari:>9.3f}{f'{k_rows} x {k_columns}':>16}{seconds:>9.2f}",
                  flush=True)


def sweep_speed():
    from sklearn_trellis.engines.gibbs import bicluster as engine
    from sklearn_trellis.models.cells import NormalCells
    from sklearn_trellis.models.priors import CRP

    X, _, _ = make_checkerboard((10_000, 200), (4, 3), noise=10, shuffle=True, random_state=0)
    data, data_t = np.ascontiguousarray(X), np.ascontiguousarray(X.T)
    cells = NormalCells().fit(X)
    blocks = engine.make_blocks(cells, data, data_t)
    rng = np.random.RandomState(0)
    state = engine.BiclusterState(rng.randint(10, size=X.shape[0]),
                                  rng.randint(10, size=X.shape[1]), cells.kernel_params(),
                                  1.0, 1.0)
    times = []
    for t in range(8):
        start = time.perf_counter()
        engine.bicluster_sweep(state, blocks, data, data_t, CRP(1.0), CRP(1.0), rng,
                               n_split_merge=10)
        times.append(time.perf_counter() - start)
    steady = np.median(times[3:])
    print(f"\none sweep on 10,000 x 200 reals (rows + columns, 10 split-merge proposals each): "
          f"median {steady:.3f} s over 5 sweeps (first sweep {times[0]:.2f} s incl. kernel "
          f"loading); state {state.row_labels.max() + 1} x {state.column_labels.max() + 1} "
          f"clusters; {'OK' if steady <= 1.0 else 'SLOWER THAN'} 1 s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer datasets and sweeps")
    args = parser.parse_args()
    planted_structure(args.quick)
    sweep_speed()


if __name__ == "__main__":
    main()
