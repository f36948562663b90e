"""Trellis engines: exact (full powerset) and sparse cluster trellises."""

from .flat import ExactFlatTrellis

__all__ = ["ExactFlatTrellis"]
