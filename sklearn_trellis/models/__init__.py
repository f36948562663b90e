"""Models: cluster log-potentials (flat) and split log-potentials (hierarchical)."""

from ._flat import FlatModel
from .correlation import CorrelationClusteringModel
from .wishart import WishartBlockModel

__all__ = ["FlatModel", "CorrelationClusteringModel", "WishartBlockModel"]
