"""
Divisive clustering of iris flowers: DIANA's banner
===================================================

Dissimilarity analysis (DIANA, Kaufman & Rousseeuw 1990; the divisive
algorithm of Murphy's clustering chapter) splits the cluster of largest
diameter in two, starting a splinter group from its most dissimilar object
and moving to it every object closer, on average, to the splinter group than
to the rest. :class:`~sklearn_trellis.DivisiveClustering` reproduces R's
``cluster::diana`` exactly, including the *banner*: one bar per gap between
consecutive objects of the banner order, starting at the height (cluster
diameter) at which the two were separated. Long bars mark objects that stay
together until late. The divisive coefficient summarises the banner (1: a
strong structure).

We use 45 iris flowers (15 per species, a reduced size so the banner can be
labelled) and compare DIANA with the divisive tree whose every split is the
*optimal* bipartition of clusters of up to 20 flowers (``method='exact'``).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import DivisiveClustering
from sklearn_trellis.plotting import BannerDisplay, DendrogramDisplay

iris = load_iris()
rows = np.concatenate([np.flatnonzero(iris.target == k)[:15] for k in range(3)])
X, y = iris.data[rows], iris.target[rows]
names = [f"{'ABC'[t]}{i % 15 + 1}" for i, t in enumerate(y)]

# %%
# DIANA, cut into three clusters.
diana = DivisiveClustering(n_clusters=3, method="diana").fit(X)
print(f"divisive coefficient: {diana.divisive_coefficient_:.3f}")
print(f"ARI of the 3-cluster cut against the species: {adjusted_rand_score(y, diana.labels_):.3f}")

# %%
# The banner (as R's ``bannerplot``) and the same tree as a dendrogram.
fig, axes = plt.subplots(1, 2, figsize=(11, 7))
BannerDisplay.from_estimator(diana, element_labels=names, ax=axes[0], max_labels=45)
axes[0].set_title("DIANA banner", loc="right")
DendrogramDisplay.from_estimator(diana, element_labels=names, ax=axes[1])
axes[1].set_title("the same tree")
axes[1].set_xlabel("height (diameter of the cluster split)")
fig.tight_layout()

# %%
# Exactly optimal splits: every cluster of up to 20 flowers is split by the
# bipartition of least average dissimilarity to one's own group, among all
# ``2^(m-1) - 1``; larger clusters (here the first splits) are split by DIANA,
# as ``approximation_`` says.
exact = DivisiveClustering(n_clusters=3, method="exact", criterion="average").fit(X)
print(exact.approximation_)
print(f"ARI of the 3-cluster cut: {adjusted_rand_score(y, exact.labels_):.3f}")
plt.show()
