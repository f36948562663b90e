"""
Are the pairwise probabilities calibrated? A reliability diagram
================================================================

:class:`~sklearn_trellis.ExactCorrelationClustering` reports, for every pair
of items, the exact probability that they share a cluster. Whether those
numbers can be trusted depends on ``beta``, the temperature: too large and
every probability is 0 or 1, too small and they all drift towards the
prior's. The MAP clustering does not move with ``beta``, so a label score
(ARI) cannot tell.

A *reliability diagram* can: bin the pairs by predicted probability and plot,
per bin, the fraction that truly share a label. Calibrated probabilities lie
on the diagonal; the expected calibration error (ECE) is the mean distance
to it. Here, on 16 points drawn from three blobs, at a fixed ``beta=1`` (the
default before issue 28) and with the default ``beta='auto'`` (empirical
Bayes: the ``beta`` that maximises the exact evidence of the Gaussian pair
model), next to scikit-learn's
``BayesianGaussianMixture.predict_proba`` turned into co-membership
probabilities (``sum_k p_ik p_jk``).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.mixture import BayesianGaussianMixture

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.metrics import (expected_calibration_error, pairwise_calibration_curve,
                                     pairwise_from_proba)

rng = np.random.default_rng(0)
centres = np.array([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]])
y = np.repeat([0, 1, 2], [6, 5, 5])
X = centres[y] + rng.normal(0.0, 0.7, (y.size, 2))

fixed = ExactCorrelationClustering(beta=1.0).fit(X)
auto = ExactCorrelationClustering().fit(X)                 # beta='auto', the default
print(f"beta='auto' learned beta_ = {auto.beta_:.3g} (offset {auto.affinity_offset_:.3g})")
mixture = BayesianGaussianMixture(n_components=10, random_state=0).fit(X)

curves = {
    "ECC, fixed beta=1": fixed.pairwise_marginals_,
    f"ECC, beta='auto' ({auto.beta_:.3g}, default)": auto.pairwise_marginals_,
    "BayesianGaussianMixture": pairwise_from_proba(mixture.predict_proba(X)),
}

# %%
# The diagram: one point per non-empty bin of 10, its size the number of pairs.
fig, ax = plt.subplots(figsize=(5.5, 5))
ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", label="perfectly calibrated")
for (name, pairwise), marker in zip(curves.items(), "osD"):
    prob_true, prob_pred, counts = pairwise_calibration_curve(y, pairwise, n_bins=10)
    ece = expected_calibration_error(y, pairwise)
    ax.plot(prob_pred, prob_true, marker=marker, label=f"{name}: ECE {ece:.3f}")
    print(f"{name:<32} ECE {ece:.3f}")
ax.set_xlabel("predicted probability that a pair shares a cluster")
ax.set_ylabel("fraction of pairs with the same label")
ax.set_title("Reliability of pairwise co-membership")
ax.legend(loc="upper left", fontsize="small")
plt.tight_layout()
plt.show()

# %%
# The same choice with labels: :func:`~sklearn_trellis.metrics.make_pairwise_scorer`
# lets ``GridSearchCV`` pick ``beta`` by the pairwise log loss on labelled
# folds, and without labels the estimator's own ``score`` (the held-out
# predictive density of the Gaussian pair model) is the default scoring.
