"""Trellis engines: exact (full powerset) and sparse cluster trellises."""

from .flat import ExactFlatTrellis

__all__ = ["ExactFlatTrellis", "ExactHierarchicalTrellis", "SparseHierarchicalTrellis"]


def __getattr__(name):
    # The hierarchical engine calls the models' numba split functions, and the
    # models import ``trellis._subsets``: importing it lazily avoids the cycle.
    if name == "ExactHierarchicalTrellis":
        from .hierarchical import ExactHierarchicalTrellis
        return ExactHierarchicalTrellis
    if name == "SparseHierarchicalTrellis":
        from .sparse_hierarchical import SparseHierarchicalTrellis
        return SparseHierarchicalTrellis
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
