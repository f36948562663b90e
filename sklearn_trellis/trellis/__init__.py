"""Trellis engines: exact (full powerset) and sparse cluster trellises."""

from .flat import ExactFlatTrellis

__all__ = ["ExactFlatTrellis", "ExactHierarchicalTrellis"]


def __getattr__(name):
    # The hierarchical engine calls the models' numba split functions, and the
    # models import ``trellis._subsets``: importing it lazily avoids the cycle.
    if name == "ExactHierarchicalTrellis":
        from .hierarchical import ExactHierarchicalTrellis
        return ExactHierarchicalTrellis
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
