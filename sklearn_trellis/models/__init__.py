"""Models: cluster log-potentials (flat) and split log-potentials (hierarchical)."""

from ._flat import FlatModel
from .conjugate import BetaBernoulli, DirichletMultinomial, NormalGamma, NormalInverseWishart
from .correlation import CorrelationClusteringModel
from .wishart import WishartBlockLikelihood, WishartBlockModel

__all__ = ["FlatModel", "CorrelationClusteringModel", "NormalInverseWishart", "NormalGamma",
           "BetaBernoulli", "DirichletMultinomial", "WishartBlockModel",
           "WishartBlockLikelihood"]
