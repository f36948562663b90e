"""Models: cluster log-potentials (flat) and split log-potentials (hierarchical)."""

from ._flat import FlatModel
from ._split import SplitModel
from .callable_energy import CallableEnergy
from .conjugate import BetaBernoulli, DirichletMultinomial, NormalGamma, NormalInverseWishart
from .correlation import CorrelationClusteringModel
from .dasgupta import DasguptaEnergy
from .ginkgo import GinkgoEnergy
from .hcc import HCCEnergy
from .wishart import WishartBlockLikelihood, WishartBlockModel

__all__ = ["FlatModel", "CorrelationClusteringModel", "SplitModel", "DasguptaEnergy",
           "HCCEnergy", "GinkgoEnergy", "CallableEnergy", "NormalInverseWishart", "NormalGamma",
           "BetaBernoulli", "DirichletMultinomial",
           "WishartBlockModel", "WishartBlockLikelihood"]
