"""
Posterior uncertainty of a Dirichlet-process mixture
====================================================

``DPMixture`` samples partitions from the posterior of a Dirichlet-process
Gaussian mixture with the collapsed Gibbs engine. Besides a point estimate
(``labels_``), it reports how sure the posterior is: co-clustering
probabilities of every pair and the distribution of the number of clusters.
For a handful of points the same posterior is computed exactly by the cluster
trellis, and the sampler's frequencies match it.
"""

import numpy as np
from sklearn.datasets import make_blobs

from sklearn_trellis import DPMixture

X, y = make_blobs(300, 2, centers=3, cluster_std=1.2, random_state=2)
model = DPMixture(n_sweeps=200, n_chains=2, random_state=0).fit(X)
print("clusters of the best sample:", model.n_clusters_)
k = np.arange(1, 8)
print("P(K = k), k = 1..7:", np.round(model.n_clusters_distribution_[:7], 3))
uncertain = np.argsort(np.abs(model.pairwise_marginals_ - 0.5).min(axis=1))[:5]
print("points with the least certain cluster membership:", uncertain)

# Exact posterior for 9 points versus the sampler
small = X[:9]
exact = DPMixture(method="exact").fit(small)
sampled = DPMixture(method="gibbs", n_sweeps=4000, random_state=0).fit(small)
print("log p(X) of the 9 points, exactly:", round(exact.log_marginal_likelihood_, 4))
print("largest |exact - sampled| co-clustering probability:",
      round(float(np.abs(exact.pairwise_marginals_ - sampled.pairwise_marginals_).max()), 3))
