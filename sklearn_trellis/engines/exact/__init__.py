"""Exact trellises over the full powerset: flat partitions and binary hierarchies."""

from .flat import ExactFlatTrellis
from .flat_counts import CountWeightedFlatTrellis
from .hierarchical import ExactHierarchicalTrellis

__all__ = ["ExactFlatTrellis", "CountWeightedFlatTrellis", "ExactHierarchicalTrellis"]
