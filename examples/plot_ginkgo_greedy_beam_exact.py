"""
Greedy, beam search and the exact trellis MAP on 1,000 Ginkgo jets
===================================================================

Reproduces the comparison of Greenberg et al. (2021, Section 4.2, Table 1) on
the 1,000 jets of ``load_ginkgo_jets()`` (5 to 10 leaves each): for every jet,
the log-likelihood of the tree found by greedy agglomeration, by beam search
(beam ``N (N - 1) / 2``) and the exact MAP of the hierarchical trellis. The
paper reports exact - beam = 0.4 +- 0.5 and exact - greedy = 1.5 +- 1.1.
Here greedy's gap is close to the paper's (about 1.1 +- 1.4), but our beam
search is nearly exact (gap about 0.02): it keeps the ``N (N - 1) / 2`` best
partial trees through every merge, while the paper's implementation looks
only one step ahead. All 1,000 jets run (about 20 s).

The exact trellis also gives what the approximate searches cannot: the
partition function of every jet, so the posterior probability of each tree.
"""

import os
import time

import matplotlib.pyplot as plt
import numpy as np

from sklearn_trellis.datasets import load_ginkgo_jets
from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.models import GinkgoEnergy

jets = load_ginkgo_jets().jets

# %%
# Greedy, beam search and the exact trellis on every jet (about 20 s).

rows = []
start = time.perf_counter()
for jet in jets:
    energy = GinkgoEnergy(lam=jet["lam"], lam_root=jet["lam_root"], t_cut=jet["t_cut"],
                          likelihood="ginkgo")
    model = TrellisHierarchical(energy=energy).fit(np.array(jet["leaves"]))
    _, greedy = model.greedy_tree()
    _, beam = model.beam_search_tree()
    rows.append((len(jet["leaves"]), model.map_log_potential_, beam, greedy,
                 jet["truth_logLH"], model.log_partition_function_))
elapsed = time.perf_counter() - start
rows = np.array(rows)
n_leaves, exact, beam, greedy, truth, log_z = rows.T

print(f"{len(jets)} jets with {int(n_leaves.min())}-{int(n_leaves.max())} leaves, "
      f"greedy + beam search + exact trellis in {elapsed:.1f} s\n")
# %%
# Table 1 of the paper: differences of the MAP log-likelihoods.
print("log-likelihood difference     mean +- std   (paper, Table 1)")
for name, diff, paper in [("exact - beam search", exact - beam, "0.4 +- 0.5"),
                          ("exact - greedy", exact - greedy, "1.5 +- 1.1"),
                          ("beam search - greedy", beam - greedy, "1.1 +- 1.1")]:
    print(f"{name:25s} {diff.mean():6.2f} +- {diff.std():4.2f}   ({paper})")
print(f"\nexact MAP strictly better than beam search on {np.mean(exact > beam + 1e-9):.0%} "
      f"of the jets, than greedy on {np.mean(exact > greedy + 1e-9):.0%}")
print(f"exact MAP - generating tree: {np.mean(exact - truth):.2f} +- {np.std(exact - truth):.2f}")
print(f"posterior probability of the MAP tree: median {np.median(np.exp(exact - log_z)):.3f}")
# %%
# The gap grows with the number of leaves: greedy errs more often on larger
# jets, while beam search with a beam of ``N (N - 1) / 2`` is nearly exact here.
print("by number of leaves:  N  jets  exact-beam  exact-greedy")
for n in range(int(n_leaves.min()), int(n_leaves.max()) + 1):
    sel = n_leaves == n
    print(f"                     {n:2d} {sel.sum():5d}  {np.mean(exact[sel] - beam[sel]):10.2f}"
          f"  {np.mean(exact[sel] - greedy[sel]):12.2f}")

# %%
# The distributions of the two gaps, and the mean gap per jet size.
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
bins = np.linspace(0, max(1e-9, float(np.max(exact - greedy))), 30)
axes[0].hist(exact - greedy, bins=bins, color="0.6", label="exact - greedy")
axes[0].hist(exact - beam, bins=bins, color="tab:blue", alpha=0.8, label="exact - beam search")
axes[0].set_xlabel("MAP log-likelihood difference")
axes[0].set_ylabel("jets")
axes[0].set_yscale("log")
axes[0].legend()
sizes = np.arange(int(n_leaves.min()), int(n_leaves.max()) + 1)
axes[1].plot(sizes, [np.mean(exact[n_leaves == n] - greedy[n_leaves == n]) for n in sizes],
             "o-", color="0.4", label="exact - greedy")
axes[1].plot(sizes, [np.mean(exact[n_leaves == n] - beam[n_leaves == n]) for n in sizes],
             "s-", color="tab:blue", label="exact - beam search")
axes[1].set_xlabel("leaves in the jet")
axes[1].set_ylabel("mean difference")
axes[1].legend()
fig.tight_layout()
plt.show()
