"""
How sure is each node of a dendrogram? Exact node probabilities
================================================================

A dendrogram draws one tree; nothing in it says which of its clusters the
data support. R's ``pvclust`` estimates a support for every node by
bootstrap resampling. :class:`~sklearn_trellis.TrellisHierarchical` gives
the exact answer under its model: the posterior probability, over *all*
binary trees of the samples, that a cluster is a node of the tree.

Here on 12 tumours of the breast cancer data that scikit-learn ships (6
malignant, 6 benign, standardised): ``node_marginals_`` annotates each node
of the MAP tree, and :meth:`~sklearn_trellis.TrellisHierarchical.cluster_marginal`
scores each node of the Ward tree that ``AgglomerativeClustering`` builds on
the same data. Both trellises are exact here (12 samples: ``3^12`` subset
pairs), so the numbers are probabilities, not estimates.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.datasets import load_tumour_subset
from sklearn_trellis.plotting import DendrogramDisplay

data = load_tumour_subset(n_per_class=6, random_state=0)
X = StandardScaler().fit_transform(data.data)
names = [f"{i}{'MB'[t]}" for i, t in enumerate(data.target)]

model = TrellisHierarchical(n_clusters=2, compute_full_tree=True).fit(X)
print(f"exact: {model.approximation_ is None}; {model.n_trees_:.4g} trees")

# %%
# The Ward tree's nodes, scored by the same posterior: a node that the greedy
# linkage makes early and confidently can still be improbable under a model
# that weighs every tree.
ward = AgglomerativeClustering(n_clusters=2, compute_full_tree=True,
                               compute_distances=True).fit(X)
n = X.shape[0]
members = [[i] for i in range(n)]
for a, b in ward.children_:
    members.append(members[a] + members[b])
ward_probabilities = np.array([model.cluster_marginal(m) for m in members[n:]])
for cluster, p in zip(members[n:], ward_probabilities):
    print(f"Ward node {sorted(cluster)}: posterior probability {p:.3f}")
sizes = np.array([len(m) for m in members[n:]], dtype=float)
ward_linkage = np.column_stack([ward.children_, ward.distances_, sizes])

# %%
# Both trees, each node labelled with its posterior probability. The Ward
# tree is drawn at its Ward distances. ``TrellisHierarchical`` measures its
# MAP tree's merges with the same ``linkage`` as scikit-learn, but a MAP tree
# is not greedy: a merge can be closer than one below it, and is then lifted
# to that height (``distances_`` stay monotone, as scikit-learn cuts them), so
# several merges can share one height and look like a multi-way split.
# ``heights="rank"`` draws the merges in their order instead, each at a level
# of its own.
fig, (ax_map, ax_ward) = plt.subplots(1, 2, figsize=(11, 4.5))
DendrogramDisplay.from_estimator(model, element_labels=names, node_probabilities=True,
                                 heights="rank", ax=ax_map)
ax_map.set_title("MAP tree, node_marginals_")
DendrogramDisplay(ward_linkage, names, height_label="ward linkage distance",
                  node_probabilities=ward_probabilities).plot(ax=ax_ward)
ax_ward.set_title("Ward tree, posterior probability of its nodes")
fig.tight_layout()
plt.show()
