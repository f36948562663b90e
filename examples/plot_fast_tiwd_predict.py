"""
Held-out proteins of the synthetic fastTIWD benchmark
=====================================================

:class:`~sklearn_trellis.FastTIWD` partitions a matrix of squared distances
(the "normal clusters" benchmark of Adametz & Roth 2011, a stand-in for
protein distance data). Held-out objects are then given by their squared
distances to the fitted ones: :meth:`~sklearn_trellis.FastTIWD.predict_proba`
places each of them by its exact Gibbs conditional with each kept partition
held fixed (columns: the fitted clusters, then "new cluster"), and
:meth:`~sklearn_trellis.FastTIWD.score` is the mean log predictive density of
the held-out rows (usable by ``GridSearchCV`` to tune ``alpha`` or
``theta`` without labels).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import FastTIWD
from sklearn_trellis.datasets import make_wishart_blocks

# %%
# 600 objects in 5 blocks; 450 are fitted, 150 held out
data = make_wishart_blocks(n_samples=600, n_blocks=5, random_state=0)
D, target = data.distances, data.target
rng = np.random.default_rng(0)
order = rng.permutation(D.shape[0])
fitted, held_out = np.sort(order[:450]), np.sort(order[450:])
model = FastTIWD(n_sweeps=100, random_state=0).fit(D[np.ix_(fitted, fitted)])
print(f"fitted:   {model.n_clusters_} clusters, ARI "
      f"{adjusted_rand_score(target[fitted], model.labels_):.3f}")

# %%
# Predict the held-out objects from their distances to the fitted ones
D_new = D[np.ix_(held_out, fitted)]
proba = model.predict_proba(D_new)
predicted = proba.argmax(axis=1)
print(f"held out: ARI {adjusted_rand_score(target[held_out], predicted):.3f}, "
      f"mean max probability {proba.max(axis=1).mean():.3f}, "
      f"P(new cluster) at most {proba[:, -1].max():.2g}")
print(f"mean log predictive density of the held-out rows: {model.score(D_new):.2f}")

# %%
# Posterior probabilities of the held-out objects, sorted by their true block
fig, ax = plt.subplots(figsize=(8, 3.5))
rows = np.argsort(target[held_out], kind="stable")
image = ax.imshow(proba[rows].T, aspect="auto", cmap="viridis", vmin=0, vmax=1,
                  interpolation="nearest")
ax.set_yticks(range(proba.shape[1]),
              [f"cluster {c}" for c in range(model.n_clusters_)] + ["new"])
ax.set_xlabel("held-out objects (sorted by true block)")
fig.colorbar(image, ax=ax, label="predict_proba")
fig.tight_layout()
plt.show()
