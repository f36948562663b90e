"""
CrossCat views of the wine data with noise columns
===================================================

The wine data (178 wines from three cultivars, 13 chemical measurements) gets
four extra columns that carry no information: two Gaussian noise columns, a
coin flip and a random four-level category. :class:`~sklearn_trellis.CrossCat`
partitions the columns into *views* and clusters the wines separately in each
view; ten percent of the cells are removed and left missing.

What the views mean: columns in the same view are (with that posterior
probability) dependent, through the row clustering they share; columns in
different views are modelled as independent. On this table the 13
measurements share one view whose row clustering is a refinement of the
cultivars (more, smaller clusters of similar wines), and the two Gaussian
noise columns leave it, each for a view of its own with a single row
cluster: nothing in them is explained by grouping the wines. The coin and the random
category are cheap to keep in any view (their learned prior strength makes
every row cluster predict the overall frequencies), so the sampler is unsure
where they belong; the dependence-probability heatmap, ``P(two columns share
a view)``, shows that uncertainty as intermediate values.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_wine
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import CrossCat
from sklearn_trellis.plotting import DependenceProbabilityDisplay

# %%
# The table: 13 measurements, 4 noise columns, 10% of the cells missing
wine = load_wine(as_frame=True)
rng = np.random.RandomState(0)
n = wine.frame.shape[0]
table = wine.data.copy()
table["noise_a"] = rng.randn(n)
table["noise_b"] = rng.randn(n) * 10 + 3
table["coin"] = rng.randint(2, size=n)
table["colour_card"] = pd.Categorical(rng.choice(["red", "green", "blue", "gold"], size=n))
mask = rng.rand(*table.shape) < 0.1
table = table.mask(mask)

model = CrossCat(n_sweeps=300, n_chains=2, random_state=0).fit(table)
print("column types:", dict(zip(table.columns, model.column_types_)))

# %%
# The views of the most probable sample, and how each view clusters the wines
for v in range(model.n_views_):
    columns = list(table.columns[model.views_ == v])
    rows = model.view_row_labels_[v]
    ari = adjusted_rand_score(wine.target, rows)
    print(f"view {v}: {len(columns)} columns, {rows.max() + 1} row clusters, "
          f"ARI with the cultivars {ari:.2f}\n    {columns}")
print("labels_ (rows of the largest view) vs cultivars: ARI "
      f"{adjusted_rand_score(wine.target, model.labels_):.2f}")
noise = ["noise_a", "noise_b", "coin", "colour_card"]
signal = [c for c in table.columns if c not in noise]
dep = pd.DataFrame(model.dependence_probability_, index=table.columns, columns=table.columns)
print("mean P(noise column shares a view with a measurement): "
      f"{dep.loc[noise, signal].to_numpy().mean():.2f}")

# %%
# Dependence probabilities (columns grouped by the views above)
fig, ax = plt.subplots(figsize=(8, 7))
DependenceProbabilityDisplay.from_estimator(model, ax=ax)
fig.tight_layout()

# %%
# Imputation of the removed cells of two measurements
filled = model.impute(table)
for name in ["flavanoids", "proline"]:
    missing = mask[:, table.columns.get_loc(name)]
    truth = wine.data[name][missing]
    error = np.sqrt(np.mean((filled[name][missing] - truth) ** 2)) / wine.data[name].std()
    baseline = np.sqrt(np.mean((table[name].mean() - truth) ** 2)) / wine.data[name].std()
    print(f"{name}: imputation RMSE {error:.2f} sd (column mean: {baseline:.2f} sd)")
plt.show()
