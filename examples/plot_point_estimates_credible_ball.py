"""
Point estimates and a credible ball for a DP mixture of the wine data
=====================================================================

``DPMixture`` samples partitions of the 178 wines (13 standardised chemical
measurements) from a Dirichlet-process Gaussian mixture posterior. One
partition has to be reported; which one depends on the loss (Dahl, Johnson &
Müller 2022): Binder's loss counts pairs, the variation of information (VI)
compares entropies, and omARI, NVI and NID normalise differently. Each
estimate below minimises its posterior expected loss by a SALSO-style search
(:func:`sklearn_trellis.summaries.point_estimate`), and we print how each
estimate scores under every loss: the losses disagree.

The uncertainty around the VI estimate is summarised by Wade & Ghahramani's
(2018) 95% credible ball: the smallest VI ball around the estimate holding
95% of the posterior mass, with its vertical bounds (the partitions in the
ball with the fewest and the most clusters) and its horizontal bound (the
partitions in the ball farthest from the estimate).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import DPMixture
from sklearn_trellis.plotting import CredibleBallDisplay
from sklearn_trellis.summaries import credible_ball, expected_loss, point_estimate

X, y = load_wine(return_X_y=True)
# a few principal components keep the Gaussian mixture well conditioned and fast
X = PCA(4, random_state=0).fit_transform(StandardScaler().fit_transform(X))
model = DPMixture(n_sweeps=300, random_state=0).fit(X)
samples = model.samples_
print(f"{samples.shape[0]} posterior samples; clusters per sample: "
      f"{np.bincount(samples.max(axis=1) + 1)[1:]} (k = 1, 2, ...)")

losses = ["binder", "vi", "omari", "nvi", "nid", "vi_lb"]
estimates = {loss: point_estimate(samples, loss, random_state=0, n_jobs=2)
             for loss in losses}
header = "estimate for  K  ARI(true) " + " ".join(f"{loss:>9s}" for loss in losses)
print("\nposterior expected loss of each estimate (rows) under each loss (columns)")
print(header)
for name, labels in estimates.items():
    row = " ".join(f"{expected_loss(samples, labels, loss):9.4g}" for loss in losses)
    print(f"{name:>12s} {labels.max() + 1:2d} {adjusted_rand_score(y, labels):10.3f} {row}")

ball = credible_ball(samples, estimates["vi"], loss="vi", level=0.95)
print(f"\n95% VI credible ball around the VI estimate: radius {ball.radius:.3f}")
print(f"  clusters in the ball: {ball.n_clusters_range[0]} to {ball.n_clusters_range[1]}")
print(f"  upper vertical bound: {ball.upper_vertical.shape[0]} partition(s) at VI "
      f"{ball.upper_vertical_distance:.3f}")
print(f"  lower vertical bound: {ball.lower_vertical.shape[0]} partition(s) at VI "
      f"{ball.lower_vertical_distance:.3f}")
print(f"  horizontal bound:     {ball.horizontal.shape[0]} partition(s) at VI "
      f"{ball.horizontal_distance:.3f}")

CredibleBallDisplay(ball).plot()
plt.show()
