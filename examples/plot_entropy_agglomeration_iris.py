"""
Summarising a posterior over clusterings of iris flowers
=========================================================

Fidaner & Cemgil (2013, Figure 9c) summarise posterior samples of a
Dirichlet-process mixture of the iris data with three panels: the histogram of
the number of blocks, the pairwise occurrences ordered by the entropy
agglomeration (EA) dendrogram, and the dendrogram itself.

As in the paper, the samples come from a Dirichlet-process Gaussian mixture
(:class:`~sklearn_trellis.DPMixture`, collapsed Gibbs); to keep the figure
legible and the example fast, we use 30 flowers (10 per species) instead of
150, and 2 chains of 400 sweeps. Any sampler that returns an int array
``(T, n)`` of label vectors can be plugged into
``draw_posterior_samples`` instead, for example the *exact* posterior draws
of :meth:`~sklearn_trellis.ExactCorrelationClustering.sample`. We also
compute the Binder and VI point estimates and score them against the species.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import DPMixture, EntropyAgglomeration
from sklearn_trellis.plotting import (CoClusteringDisplay, DendrogramDisplay,
                                      NClustersHistogramDisplay)
from sklearn_trellis.summaries import point_estimate, purity_score, variation_of_information

# %%
# Thirty flowers, ten of each species (A = setosa, B = versicolor, C = virginica)
iris = load_iris()
rows = np.concatenate([np.flatnonzero(iris.target == k)[:10] for k in range(3)])
X = StandardScaler().fit_transform(iris.data[rows])
species = iris.target[rows]
names = [f"{'ABC'[s]}{i % 10}" for i, s in enumerate(species)]


def draw_posterior_samples(X, n_sweeps=400, random_state=0):
    """Posterior clusterings of the rows of X, one label vector per row.

    Two chains of ``n_sweeps``, the first half of each discarded as burn-in.
    Swap in any sampler returning an (n_samples, len(X)) int array, e.g.
    ``ExactCorrelationClustering(beta=1.5).fit(X).sample(1000)``.
    """
    model = DPMixture(n_sweeps=n_sweeps, n_chains=2, random_state=random_state).fit(X)
    return model.samples_


samples = draw_posterior_samples(X)
print(f"{samples.shape[0]} posterior clusterings of {samples.shape[1]} flowers")

# %%
# Entropy agglomeration and the three panels of Figure 9
ea = EntropyAgglomeration(n_clusters=3).fit(samples)
fig, axes = plt.subplots(1, 3, figsize=(14, 4.5), gridspec_kw={"width_ratios": [1, 1.3, 1.2]})
NClustersHistogramDisplay.from_estimator(ea, ax=axes[0])
CoClusteringDisplay.from_estimator(ea, element_labels=names, ax=axes[1])
DendrogramDisplay.from_estimator(ea, element_labels=names, ax=axes[2])
axes[0].set_title("number of blocks")
axes[2].set_title("entropy agglomeration")
fig.tight_layout()

# %%
# Point estimates minimising the posterior expected loss
for loss in ("binder", "vi"):
    labels, expected = point_estimate(samples, loss=loss, random_state=0, return_loss=True)
    print(f"{loss:>6}: {labels.max() + 1} clusters, expected loss {expected:.3f}, "
          f"purity {purity_score(species, labels):.2f}, "
          f"ARI {adjusted_rand_score(species, labels):.2f}, "
          f"VI to species {variation_of_information(species, labels):.3f}")
print("EA cut into 3 clusters:", ea.labels_)
plt.show()
