"""Exact trellises over the full powerset: flat partitions and binary hierarchies."""

from .binder import binder_point_estimate, vi_point_estimate
from .flat import ExactFlatTrellis
from .flat_counts import CountWeightedFlatTrellis
from .hierarchical import ExactHierarchicalTrellis

__all__ = ["binder_point_estimate", "vi_point_estimate", "ExactFlatTrellis",
           "CountWeightedFlatTrellis", "ExactHierarchicalTrellis"]
