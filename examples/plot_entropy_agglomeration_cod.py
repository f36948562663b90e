"""
Cumulative occurrence distributions of the example sample set E3
================================================================

Fidaner & Cemgil (2013, Figure 4) illustrate cumulative occurrence
distribution (COD) matrices and projection entropies on three partitions of
seven elements (genes, say):

- :math:`Z^{(1)} = \\{\\{1, 3, 6, 7\\}, \\{2\\}, \\{4, 5\\}\\}`
- :math:`Z^{(2)} = \\{\\{1, 3, 6\\}, \\{2, 7\\}, \\{4, 5\\}\\}`
- :math:`Z^{(3)} = \\{\\{1, 2, 3, 6, 7\\}, \\{4, 5\\}\\}`

Adding the elements one at a time in some order, row :math:`i` of the COD
matrix holds, averaged over the sample set, the number of blocks of size at
least :math:`k` of the partitions projected onto the first :math:`i`
elements; each row sums to :math:`i`. The expected entropy of the projection
grows as the added elements fall apart. The order ``1, 3, 6, 7, 2, 4, 5``,
which adds the elements that go together first, keeps the entropies lower
than ``1, 2, 3, ..., 7``, and its COD matrix has its mass in the right
columns: large blocks.

This is the paper's example exactly (no reduction).
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_trellis import EntropyAgglomeration
from sklearn_trellis.plotting import DendrogramDisplay, EntropySequenceDisplay
from sklearn_trellis.summaries import entropy_sequence, projection_entropy

# %%
# The sample set, as lists of blocks. The package numbers elements from 0, so
# element ``e`` of the paper is ``e - 1`` here; the plots show the paper's names.
E3 = [
    [[0, 2, 5, 6], [1], [3, 4]],
    [[0, 2, 5], [1, 6], [3, 4]],
    [[0, 1, 2, 5, 6], [3, 4]],
]
names = [str(e) for e in range(1, 8)]

# %%
# The projection entropies of the paper's three subsets
# ``S1 = {1, 2, 3, 4}``, ``S2 = {1, 3, 6, 7}`` and ``S3 = {1, 2, 3}``.
for label, subset in [("S1", [1, 2, 3, 4]), ("S2", [1, 3, 6, 7]), ("S3", [1, 2, 3])]:
    entropy = projection_entropy(E3, [e - 1 for e in subset])
    print(f"{label} = {subset}: expected projection entropy {entropy:.3f}")

# %%
# Figure 4: the COD matrix and the entropy sequence for both orders.
orders = {"1, 2, 3, 4, 5, 6, 7": [0, 1, 2, 3, 4, 5, 6],
          "1, 3, 6, 7, 2, 4, 5": [0, 2, 5, 6, 1, 3, 4]}
fig, axes = plt.subplots(2, 2, figsize=(9, 7.5))
for row, (title, order) in zip(axes, orders.items()):
    EntropySequenceDisplay.from_samples(E3, order=order, element_labels=names, axes=row)
    row[0].set_title(f"COD, order {title}")
    row[1].set_title(f"entropies, order {title}")
    row[1].set_ylim(-0.05, 1.3)
fig.tight_layout()

for title, order in orders.items():
    print(f"order {title}: entropies {np.round(entropy_sequence(E3, order), 3)}")

# %%
# Entropy agglomeration merges, from singletons, the subsets whose union has
# the least expected projection entropy: {4, 5} and {1, 3, 6} come first, as
# in the paper's Figure 9a.
ea = EntropyAgglomeration().fit(E3)
fig, ax = plt.subplots(figsize=(5, 3.2))
DendrogramDisplay.from_estimator(ea, element_labels=names, ax=ax)
ax.set_title("entropy agglomeration of E3")
fig.tight_layout()
plt.show()
