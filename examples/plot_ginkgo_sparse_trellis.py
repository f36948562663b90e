"""
Sparse trellis seeded by beam search on 9-leaf Ginkgo jets (Figure 7)
======================================================================

Greenberg et al. (2021, Section 4.2, Figure 7) build a sparse hierarchical
trellis from the union of the nodes of beam-search trees and show that its MAP
climbs from beam search towards the exact MAP as the family grows, while the
family still realises only a small fraction (the *sparsity index*) of the
``(2N - 3)!! = 2,027,025`` trees of 9 leaves.

Here the first 15 jets with 9 leaves (100 with ``python
examples/plot_ginkgo_sparse_trellis.py 100``: about 4 minutes; the gallery
keeps the example short) of ``load_ginkgo_jets()`` are the test
jets. As in the paper, the trellis is pre-built: its seeds are beam-search
trees of the *other* 9-leaf jets, with leaves ranked by momentum norm and laid
on each test jet's leaves of the same ranks. For growing numbers of seeds we
print the mean MAP log-likelihood over the family relative to greedy, with the
family size and sparsity index, next to the exact trellis, beam search (beam
``N (N - 1) / 2``) and greedy (the paper's Table 1 ordering: exact >= beam >=
greedy). A second table seeds each jet with the best distinct trees of its
own final beam (:func:`~sklearn_trellis.engines.sparse.seeds.beam_seed_trees`).

The family MAP and its number of trees come from
:class:`~sklearn_trellis.engines.sparse.sparse_hierarchical.SparseHierarchicalTrellis`.
"""

import os
import sys
import time

import matplotlib.pyplot as plt
import numpy as np

from sklearn_trellis.datasets import load_ginkgo_jets
from sklearn_trellis.models import GinkgoEnergy
from sklearn_trellis.engines import ExactHierarchicalTrellis
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.exact.hierarchical import double_factorial_trees
from sklearn_trellis.engines.map.search import beam_search_tree, greedy_tree
from sklearn_trellis._core.trees import permute_leaves
from sklearn_trellis.engines.sparse.seeds import beam_seed_trees
from sklearn_trellis.engines.sparse.sparse_hierarchical import SparseHierarchicalTrellis

N_JETS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
SEED_COUNTS = (1, 4, 16, 64, 256)


def family_map(family, model):
    """MAP log-likelihood and number of finite-potential trees over a family."""
    try:
        trellis = SparseHierarchicalTrellis.from_model(family, model).fit()
    except ValueError:      # every tree of the family has a forbidden split (t_cut)
        return -np.inf, 0
    return trellis.map_log_potential, trellis.n_trees


def momentum_order(leaves):
    """Leaves by increasing norm of their 3-momentum (the paper's p_T ordering)."""
    return np.argsort(np.linalg.norm(np.asarray(leaves)[:, 1:], axis=1), kind="stable")


nine = load_ginkgo_jets(n_leaves=9).jets
jets, train = nine[:N_JETS], nine[N_JETS:]


def model_of(jet):
    return GinkgoEnergy(lam=jet["lam"], lam_root=jet["lam_root"], t_cut=jet["t_cut"],
                        likelihood="ginkgo").fit(np.array(jet["leaves"]))


# %%
# Pre-built seeds (the paper's setting): the 4 best beam trees of each training
# jet, its leaves renamed by momentum rank, so they can be laid on any 9-leaf jet.
start = time.perf_counter()
ranked_seeds = []
for jet in train:
    trees, _ = beam_seed_trees(model_of(jet), 4)
    rank_of_leaf = np.argsort(momentum_order(jet["leaves"]))
    ranked_seeds += [permute_leaves(tree, rank_of_leaf) for tree in trees]
n_all = double_factorial_trees(9)
TRANSFER_COUNTS = tuple(k for k in (1, 4, 16, 64, 128, 256, 400, len(ranked_seeds))
                        if k <= len(ranked_seeds))


def sweep(seeds, counts, model):
    row = []
    for k in counts:
        family = ClusterFamily.from_trees(seeds[:k], 9)
        value, n_trees = family_map(family, model)
        row += [value, family.n_vertices, n_trees]
    return row


# %%
# For every test jet: the exact trellis, beam search and greedy, and the MAP
# over growing families.
own, transfer, base = [], [], []
for jet in jets:
    model = model_of(jet)
    inputs = model.kernel_inputs()
    exact = ExactHierarchicalTrellis(*inputs).fit()
    base.append([exact.map_log_potential, beam_search_tree(*inputs)[1],
                 greedy_tree(*inputs)[1]])
    seeds, _ = beam_seed_trees(model, max(SEED_COUNTS))
    own.append(sweep(seeds, SEED_COUNTS, model))
    order = momentum_order(jet["leaves"])      # rank -> this jet's leaf
    laid = [permute_leaves(tree, order) for tree in ranked_seeds]
    transfer.append(sweep(laid, TRANSFER_COUNTS, model))
exact, beam, greedy = np.array(base).T
print(f"{len(jets)} test jets with 9 leaves, {len(train)} training jets "
      f"({time.perf_counter() - start:.1f} s)\n")
print("MAP log-likelihood - greedy (mean over test jets)")
print(f"  exact trellis   {np.mean(exact - greedy):6.3f}   (sparsity index 1)")
print(f"  beam search     {np.mean(beam - greedy):6.3f}   (beam N (N - 1) / 2; exact on "
      f"{np.mean(beam >= exact - 1e-9):.0%} of the jets)")
print(f"  greedy          {0.0:6.3f}   (exact on {np.mean(greedy >= exact - 1e-9):.0%})")


# %%
# The tables: mean over the test jets of the family MAP relative to greedy.
def table(title, rows, counts):
    rows = np.array(rows, dtype=float)
    print(f"\n{title}")
    # A family whose trees all have a forbidden split (t_cut) has MAP -inf: the
    # means are over the jets with a finite family MAP, whose share is shown.
    print("  seeds  vertices  sparsity index   finite   family - greedy   exact - family"
          "   at the exact MAP")
    for j, k in enumerate(counts):
        value, vertices, trees = rows[:, 3 * j], rows[:, 3 * j + 1], rows[:, 3 * j + 2]
        ok = np.isfinite(value)
        gain = np.mean(value[ok] - greedy[ok]) if ok.any() else np.nan
        gap = np.mean(exact[ok] - value[ok]) if ok.any() else np.nan
        print(f"  {k:5d}  {vertices.mean():8.1f}  {np.mean(trees / n_all):14.2e}   "
              f"{ok.mean():6.0%}   {gain:15.3f}   {gap:14.3f}"
              f"   {np.mean(value >= exact - 1e-9):16.0%}")


table("BS trellis, pre-built: beam trees of the training jets, leaves by momentum rank "
      "(paper Figure 7)", transfer, TRANSFER_COUNTS)
table("Seeds from the jet's own final beam (best distinct trees)", own, SEED_COUNTS)
print(f"\nTable 1 ordering on average, exact >= beam >= greedy: "
      f"{exact.mean() >= beam.mean() >= greedy.mean()}")

# %%
# Figure 7: the MAP of the pre-built sparse trellis climbs from below greedy to
# near the exact MAP as seeds are added, while the family still realises a
# small fraction of all trees (the sparsity index, horizontal axis).
rows = np.array(transfer, dtype=float)
sparsity = [np.log10(np.mean(rows[:, 3 * j + 2] / n_all)) for j in range(len(TRANSFER_COUNTS))]
gains = []
for j in range(len(TRANSFER_COUNTS)):
    value = rows[:, 3 * j]
    ok = np.isfinite(value)
    gains.append(np.mean(value[ok] - greedy[ok]) if ok.any() else np.nan)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(sparsity, gains, "o-", color="tab:blue", label="sparse trellis (pre-built seeds)")
for k, x, y in zip(TRANSFER_COUNTS, sparsity, gains):
    ax.annotate(str(k), (x, y), textcoords="offset points", xytext=(4, -12), fontsize=8)
ax.axhline(np.mean(exact - greedy), color="tab:green", ls="--", label="exact trellis")
ax.axhline(np.mean(beam - greedy), color="tab:orange", ls=":", label="beam search")
ax.axhline(0.0, color="0.4", ls="-.", label="greedy")
ax.set_xlabel("log10 sparsity index (trees in the family / all trees)")
ax.set_ylabel("MAP log-likelihood - greedy")
ax.set_title(f"{len(jets)} jets with 9 leaves; labels: number of seed trees")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
