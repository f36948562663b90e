"""Inference engines shared by all estimators.

- :mod:`.exact`: exact flat and hierarchical trellises (full powerset, O(3^N));
- :mod:`.sparse`: the same recursions over a family of clusters (seed trees);
- :mod:`.gibbs`: the collapsed Gibbs sampler over partitions;
- :mod:`.map`: MAP solvers (MILP, Perturb-and-MAP, greedy and beam search);
- :mod:`.planner`: the trellis estimators' strategy (which engine, which family).

Engines take models (:mod:`sklearn_trellis.models`) and never import estimators.
"""

from .exact import CountWeightedFlatTrellis, ExactFlatTrellis, ExactHierarchicalTrellis
from .sparse import SparseFlatTrellis, SparseHierarchicalTrellis

__all__ = ["ExactFlatTrellis", "CountWeightedFlatTrellis", "ExactHierarchicalTrellis",
           "SparseFlatTrellis", "SparseHierarchicalTrellis"]
