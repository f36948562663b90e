"""Sparse trellises: the exact recursions over a chosen family of clusters (seed trees)."""

from .sparse_flat import SparseFlatTrellis
from .sparse_hierarchical import SparseHierarchicalTrellis

__all__ = ["SparseFlatTrellis", "SparseHierarchicalTrellis"]
