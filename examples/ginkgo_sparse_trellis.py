"""
Sparse trellis seeded by beam search on 9-leaf Ginkgo jets (Figure 7)
======================================================================

Greenberg et al. (2021, Section 4.2, Figure 7) build a sparse hierarchical
trellis from the union of the nodes of beam-search trees and show that its MAP
climbs from beam search towards the exact MAP as the family grows, while the
family still realises only a small fraction (the *sparsity index*) of the
``(2N - 3)!! = 2,027,025`` trees of 9 leaves.

Here, for the first 100 jets with 9 leaves of ``ginkgo510_jets.json``, the
seeds are the best distinct trees of the final beam of a beam search on the
jet's own likelihood (:func:`~sklearn_trellis.trellis.seeds.beam_seed_trees`),
and for growing numbers of seeds we print the mean MAP log-likelihood over the
family relative to greedy, with the family size and sparsity index, next to
the exact trellis, beam search (beam ``N (N - 1) / 2``) and greedy (the
paper's Table 1 ordering: exact >= beam >= greedy).

The family MAP is computed by a small pure-Python dynamic programme over the
family's bitmasks (``family_hierarchy_map`` below), a stand-in oracle.
TODO(lead): switch it to ``SparseHierarchicalTrellis`` once that engine is merged.
"""

import json
import os
import sys
import time

import numpy as np

from sklearn_trellis.models import GinkgoEnergy
from sklearn_trellis.trellis import ExactHierarchicalTrellis
from sklearn_trellis.trellis.family import ClusterFamily
from sklearn_trellis.trellis.hierarchical import double_factorial_trees
from sklearn_trellis.trellis.search import beam_search_tree, greedy_tree
from sklearn_trellis.trellis.seeds import beam_seed_trees

N_JETS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
SEED_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def find_data(name):
    """``shared/data/<name>`` of the project workspace: look upwards from here."""
    folder = os.path.dirname(os.path.abspath(__file__))
    while True:
        candidate = os.path.join(folder, "shared", "data", name)
        if os.path.exists(candidate) or os.path.dirname(folder) == folder:
            return candidate
        folder = os.path.dirname(folder)


def family_hierarchy_map(masks, split_value):
    """MAP value and number of finite-potential trees over a family of bitmasks.

    Stand-in oracle (pure Python, small N only): every node of a tree must be
    a family member. TODO(lead): replace by the sparse hierarchical engine.
    """
    family = set(masks)
    best, count = {}, {}
    for mask in sorted(family, key=lambda m: bin(m).count("1")):
        if mask & (mask - 1) == 0:
            best[mask], count[mask] = 0.0, 1
            continue
        low = mask & -mask
        rest = mask ^ low
        value, total = -np.inf, 0
        sub = rest
        while True:
            left, right = sub | low, rest ^ sub
            if right and left in best and right in best:
                split = split_value(mask, left)
                if split > -np.inf:
                    total += count[left] * count[right]
                    value = max(value, split + best[left] + best[right])
            if sub == 0:
                break
            sub = (sub - 1) & rest
        best[mask], count[mask] = value, total
    return best[max(family)], count[max(family)]


with open(find_data("ginkgo510_jets.json")) as handle:
    jets = [jet for jet in json.load(handle)["jets"] if jet["N"] == 9][:N_JETS]

n_all = double_factorial_trees(9)
rows = []           # per jet: exact, beam, greedy, then (map, vertices, trees) per count
start = time.perf_counter()
for jet in jets:
    model = GinkgoEnergy(lam=jet["lam"], lam_root=jet["lam_root"],
                         t_cut=jet["t_cut"]).fit(np.array(jet["leaves"]))
    inputs = model.kernel_inputs()
    exact = ExactHierarchicalTrellis(*inputs).fit()
    row = [exact.map_log_potential, beam_search_tree(*inputs)[1], greedy_tree(*inputs)[1]]
    seeds, _ = beam_seed_trees(model, max(SEED_COUNTS))
    for k in SEED_COUNTS:
        family = ClusterFamily.from_trees(seeds[:k], 9)
        value, n_trees = family_hierarchy_map(family.masks(), exact.split_log_potential)
        row += [value, family.n_vertices, n_trees]
    rows.append(row)
rows = np.array(rows, dtype=float)
exact, beam, greedy = rows[:, 0], rows[:, 1], rows[:, 2]
print(f"{len(jets)} jets with 9 leaves ({time.perf_counter() - start:.1f} s)\n")
print("MAP log-likelihood - greedy (mean over jets)")
print(f"  exact trellis          {np.mean(exact - greedy):6.3f}   sparsity 1")
print(f"  beam search            {np.mean(beam - greedy):6.3f}")
print(f"  greedy                 {0.0:6.3f}\n")
print("  seeds  vertices  sparsity index   family MAP - greedy   exact - family MAP"
      "   jets at the exact MAP")
for j, k in enumerate(SEED_COUNTS):
    value, vertices, trees = rows[:, 3 + 3 * j], rows[:, 4 + 3 * j], rows[:, 5 + 3 * j]
    print(f"  {k:5d}  {vertices.mean():8.1f}  {np.mean(trees / n_all):14.2e}   "
          f"{np.mean(value - greedy):19.3f}   {np.mean(exact - value):18.3f}"
          f"   {np.mean(value >= exact - 1e-9):20.0%}")
print(f"\nexact >= beam >= greedy on average: {exact.mean() >= beam.mean() >= greedy.mean()}")
