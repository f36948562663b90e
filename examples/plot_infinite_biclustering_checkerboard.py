"""
Infinite biclustering of a planted checkerboard
===============================================

A data matrix whose rows fall in 4 groups and whose columns fall in 3 groups,
each (row group, column group) block with its own mean: a checkerboard.
:class:`~sklearn_trellis.InfiniteBiclustering` puts Chinese-restaurant-process
priors on both partitions and samples them by collapsed Gibbs sampling, so it
is **not told** the numbers of clusters; scikit-learn's
:class:`~sklearn.cluster.SpectralBiclustering` is given them
(``n_clusters=(4, 3)``).

Reduced sizes so that the example runs in seconds: a 120 x 60 matrix and 60
Gibbs sweeps (half burn-in).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import SpectralBiclustering
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import InfiniteBiclustering

# %%
# The planted checkerboard, rows and columns shuffled
rng = np.random.RandomState(0)
n_rows, n_columns = 120, 60
true_rows = rng.randint(4, size=n_rows)
true_columns = rng.randint(3, size=n_columns)
means = rng.normal(scale=1.5, size=(4, 3))
X = means[true_rows][:, true_columns] + rng.normal(size=(n_rows, n_columns))

# %%
# Fit both
ibc = InfiniteBiclustering(n_sweeps=60, random_state=0).fit(X)
spectral = SpectralBiclustering(n_clusters=(4, 3), random_state=0).fit(X)
scores = {}
for name, model in [("InfiniteBiclustering (numbers inferred)", ibc),
                    ("SpectralBiclustering (told 4 x 3)", spectral)]:
    scores[name] = (adjusted_rand_score(true_rows, model.row_labels_),
                    adjusted_rand_score(true_columns, model.column_labels_))
    print(f"{name:40s} ARI rows {scores[name][0]:.2f}  columns {scores[name][1]:.2f}")
print(f"inferred: {ibc.n_row_clusters_} row clusters x {ibc.n_column_clusters_} "
      f"column clusters (method_={ibc.method_!r})")

# %%
# The posterior over the numbers of clusters: the kept Gibbs samples
def counts(samples):
    """How many kept samples have each number of clusters."""
    sizes, times = np.unique([len(np.unique(s)) for s in samples], return_counts=True)
    return {int(k): int(t) for k, t in zip(sizes, times)}


print("row clusters in the samples (number: count):", counts(ibc.row_samples_))
print("column clusters in the samples (number: count):", counts(ibc.column_samples_))

# %%
# The matrix as given, and reordered by each method's row and column labels
def reordered(labels_rows, labels_columns):
    return X[np.argsort(labels_rows, kind="stable")][:, np.argsort(labels_columns,
                                                                  kind="stable")]


fig, axes = plt.subplots(1, 3, figsize=(12, 4.6))
panels = [("shuffled data", X),
          ("InfiniteBiclustering\n(not told the numbers)",
           reordered(ibc.row_labels_, ibc.column_labels_)),
          ("SpectralBiclustering\n(given n_clusters=(4, 3))",
           reordered(spectral.row_labels_, spectral.column_labels_))]
for ax, (title, matrix) in zip(axes, panels):
    ax.imshow(matrix, aspect="auto", cmap="RdBu_r", interpolation="nearest")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("columns")
axes[0].set_ylabel("rows")
for ax, name in zip(axes[1:], scores):
    ax.text(0.02, -0.16, f"ARI rows {scores[name][0]:.2f}, columns {scores[name][1]:.2f}",
            transform=ax.transAxes, fontsize=9, va="top")
fig.tight_layout()

# %%
# Posterior co-clustering of the rows, in the order of the true groups: the
# blocks show how sure the sampler is that two rows share a cluster.
order = np.argsort(true_rows, kind="stable")
fig, ax = plt.subplots(figsize=(4.6, 4))
image = ax.imshow(ibc.row_pairwise_marginals_[order][:, order], vmin=0, vmax=1,
                  cmap="viridis", interpolation="nearest")
fig.colorbar(image, ax=ax, label="P(two rows share a cluster)")
ax.set_title("row co-clustering, rows by true group", fontsize=10)
fig.tight_layout()
plt.show()
