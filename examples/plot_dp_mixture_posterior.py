"""
Posterior uncertainty of a Dirichlet-process mixture
====================================================

The Dirichlet-process mixture of Murphy's clustering chapter (Section 25.2):
``pi ~ GEM(alpha)``, ``z_i ~ pi``, ``theta_k ~ H``, ``x_i ~ F(theta_{z_i})``,
fitted by the collapsed Gibbs sampler of its Eqs. 18-21 (plus split-merge
moves). :class:`~sklearn_trellis.DPMixture` does not fix the number of
clusters: besides a point estimate (``labels_``) it reports how sure the
posterior is, with the co-clustering probability of every pair and the
distribution of the number of clusters. For a handful of points the same
posterior is computed exactly by the cluster trellis, and the sampler's
frequencies match it.

Sizes are reduced for the gallery: 300 points, 2 chains of 200 sweeps.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_blobs

from sklearn_trellis import DPMixture
from sklearn_trellis.plotting import NClustersHistogramDisplay

X, y = make_blobs(300, 2, centers=3, cluster_std=1.2, random_state=2)
model = DPMixture(n_sweeps=200, n_chains=2, random_state=0).fit(X)
print("clusters of the point estimate:", model.n_clusters_)
print("P(K = k), k = 1..7:", np.round(model.n_clusters_distribution_[:7], 3))
# How uncertain each point's company is: the mean over the other points of
# P(together) * P(apart), 0 when every pair is decided.
P = model.pairwise_marginals_
uncertainty = (P * (1 - P)).mean(axis=1)
uncertain = np.argsort(uncertainty)[::-1][:5]
print("points with the least certain cluster membership:", uncertain,
      np.round(uncertainty[uncertain], 3))

# %%
# The point estimate (VI loss), the co-clustering probabilities ordered by it,
# and the posterior of the number of clusters. The Gaussian mixture models
# density, so a few extra small clusters pick up the tails.
order = np.argsort(model.labels_, kind="stable")
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
axes[0].scatter(X[:, 0], X[:, 1], c=model.labels_, s=10, cmap="tab10")
axes[0].scatter(X[uncertain, 0], X[uncertain, 1], s=80, facecolors="none", edgecolors="k",
                label="least certain")
axes[0].legend(loc="best")
axes[0].set_title("point estimate (VI)")
image = axes[1].imshow(model.pairwise_marginals_[np.ix_(order, order)], cmap="Greys",
                       vmin=0, vmax=1)
fig.colorbar(image, ax=axes[1])
axes[1].set_title("P(i and j in the same cluster)")
NClustersHistogramDisplay.from_estimator(model, ax=axes[2])
axes[2].set_title("posterior of the number of clusters")
fig.tight_layout()

# %%
# Exact posterior for 9 points versus the sampler.
small = X[:9]
exact = DPMixture(method="exact").fit(small)
sampled = DPMixture(method="gibbs", n_sweeps=4000, random_state=0).fit(small)
print("log p(X) of the 9 points, exactly:", round(exact.log_marginal_likelihood_, 4))
gap = np.abs(exact.pairwise_marginals_ - sampled.pairwise_marginals_).max()
print("largest |exact - sampled| co-clustering probability:", round(float(gap), 3))

iu = np.triu_indices(9, 1)
fig, ax = plt.subplots(figsize=(4.5, 4.2))
ax.scatter(exact.pairwise_marginals_[iu], sampled.pairwise_marginals_[iu], s=14)
ax.plot([0, 1], [0, 1], color="0.5", lw=1)
ax.set_xlabel("exact P(i ~ j) (trellis)")
ax.set_ylabel("Gibbs frequency (4,000 sweeps)")
ax.set_title("9 points: sampler vs exact")
fig.tight_layout()
plt.show()
