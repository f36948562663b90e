"""
fastTIWD: seconds per Gibbs sweep against the number of objects
===============================================================

Adametz & Roth (2011) replace the ``O(n^3)`` translation-invariant
Wishart-Dirichlet sampler (TIWD) by one representative of the inner products
chosen from a single-linkage tree of the distances, so that one Gibbs sweep
costs ``O(n^2)``: each object's row sums per block are ``O(n)``, and each of
its ``K + 1`` candidate blocks ``O(1)``.

We time :class:`~sklearn_trellis.FastTIWD` sweeps on the "normal clusters"
data (3 blocks, d = 300) for growing ``n`` and compare with an ``n^2`` line.
The time of one sweep is the difference between a fit with 22 sweeps and a
fit with 2, divided by 20, so the ``O(n^2)`` normalisation and the set-up
cancel. To stay fast the gallery stops at n = 4,000 and times one fit per
size on a shared 2-core machine: expect some noise. At these sizes the fitted
exponent stays below 2: the ``O(n^2)`` row sums are cheap (one pass over a
row of ``S``) next to the per-object bookkeeping, and dominate only for larger
``n``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from sklearn_trellis import FastTIWD
from sklearn_trellis.datasets import make_wishart_blocks


def fit_seconds(D, n_sweeps):
    start = time.perf_counter()
    FastTIWD(n_sweeps=n_sweeps, burn_in=0, dof=300, random_state=0).fit(D)
    return time.perf_counter() - start


# %%
# Warm up (numba compiles the kernels on first use), then time.
FastTIWD(n_sweeps=2, random_state=0).fit(make_wishart_blocks(50, random_state=0).distances)
sizes = np.array([500, 1000, 2000, 4000])
per_sweep = []
for n in sizes:
    D = make_wishart_blocks(n_samples=int(n), random_state=0).distances
    seconds = (fit_seconds(D, 22) - fit_seconds(D, 2)) / 20
    per_sweep.append(max(seconds, 1e-6))
    print(f"n = {n:5d}: {1e3 * per_sweep[-1]:8.2f} ms per sweep")
per_sweep = np.array(per_sweep)
slope = np.polyfit(np.log(sizes), np.log(per_sweep), 1)[0]
print(f"fitted exponent: time per sweep ~ n^{slope:.2f}")

# %%
# Log-log plot with the ``n^2`` reference through the largest size.
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(sizes, per_sweep, "o-", label="fastTIWD, measured")
ax.loglog(sizes, per_sweep[-1] * (sizes / sizes[-1]) ** 2, "--", color="0.5",
          label="n^2 reference")
ax.set_xlabel("objects n")
ax.set_ylabel("seconds per Gibbs sweep")
ax.set_title(f"fitted exponent {slope:.2f}")
ax.legend()
fig.tight_layout()
plt.show()
