"""
Placing a new flower in the iris tree
=====================================

:class:`~sklearn_trellis.TrellisHierarchical` fits the exact maximum a
posteriori (MAP) tree of Dasgupta's energy to 15 iris flowers (5 per species).
A new flower can then be inserted into that tree above any of its
``2N - 1 = 29`` nodes; each position is weighted by how much the insertion
changes the tree's log-potential (:meth:`~sklearn_trellis.TrellisHierarchical.attachment_log_proba`), and
:meth:`~sklearn_trellis.TrellisHierarchical.predict_proba` sums the positions inside each cluster of the cut
(``n_clusters=3``). Unlike scikit-learn's ``AgglomerativeClustering``, the
hierarchical model answers for new data with a posterior probability.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import TrellisHierarchical

# %%
# Fifteen flowers, five of each species (A = setosa, B = versicolor, C = virginica)
iris = load_iris()
rows = np.concatenate([np.flatnonzero(iris.target == k)[:5] for k in range(3)])
scaler = StandardScaler().fit(iris.data[rows])
X = scaler.transform(iris.data[rows])
species = iris.target[rows]
names = [f"{'ABC'[s]}{i}" for i, s in enumerate(species)]
model = TrellisHierarchical(n_clusters=3).fit(X)
print("MAP tree:", model.map_tree_)
print("clusters:", model.labels_, " species:", species)

# %%
# Three new flowers, one per species, that the model has not seen
new_rows = np.array([np.flatnonzero(iris.target == k)[10] for k in range(3)])
X_new = scaler.transform(iris.data[new_rows])
log_proba = model.attachment_log_proba(X_new)
proba = model.predict_proba(X_new)
n = X.shape[0]
members = [[i] for i in range(n)] + [None] * (n - 1)
for k, (a, b) in enumerate(model.children_):
    members[n + k] = members[a] + members[b]


def describe(node):
    return "{" + " ".join(names[i] for i in members[node]) + "}"


for c in range(model.n_clusters_):
    print(f"cluster {c}: " + " ".join(names[i] for i in np.flatnonzero(model.labels_ == c)))
for j in range(3):
    best = np.argsort(log_proba[j])[::-1][:3]
    places = ", ".join(f"above {describe(v)} ({np.exp(log_proba[j, v]):.2f})" for v in best)
    print(f"new {'ABC'[j]} flower: P(cluster 0, 1, 2) = {np.round(proba[j], 3)}; "
          f"most probable positions: {places}")

# %%
# The position posterior of the new versicolor flower over the 29 nodes
fig, ax = plt.subplots(figsize=(10, 3.5))
order = np.argsort(log_proba[1])[::-1]
ax.bar(range(order.size), np.exp(log_proba[1, order]),
       color=[f"C{model.labels_[members[v][0]]}" if len(set(model.labels_[members[v]])) == 1
              else "grey" for v in order])
ax.set_xticks(range(order.size), [describe(v) if len(members[v]) < 4 else f"node {v}"
                                  for v in order], rotation=90, fontsize=7)
ax.set_ylabel("P(inserted above node)")
ax.set_title("New versicolor flower: where it joins the MAP tree "
             "(colour: cluster; grey: above the cut)")
fig.tight_layout()
plt.show()
