"""Models: cluster log-potentials (flat), split energies (hierarchical), conjugate
likelihoods and partition priors.

``ENERGIES`` and ``LIKELIHOODS`` are the registries of the models selectable by
name in the estimators (``energy="dasgupta"``, ``likelihood="gaussian"``): a new
model is one module here plus one line in its registry.
"""

from ._flat import FlatModel
from ._split import SplitKernelInputs, SplitModel
from .callable_energy import CallableEnergy
from .conjugate import (LIKELIHOODS, BetaBernoulli, DirichletMultinomial, NormalGamma,
                        NormalInverseWishart)
from .correlation import CorrelationClusteringModel
from .dasgupta import DasguptaEnergy
from .ginkgo import GinkgoEnergy
from .hcc import HCCEnergy
from .wishart import WishartBlockLikelihood, WishartBlockModel

#: Split energies selectable by name (``TrellisHierarchical(energy=...)``).
ENERGIES = {
    "dasgupta": DasguptaEnergy,
    "hcc": HCCEnergy,
    "ginkgo": GinkgoEnergy,
}

__all__ = ["FlatModel", "CorrelationClusteringModel", "SplitModel", "SplitKernelInputs",
           "DasguptaEnergy",
           "HCCEnergy", "GinkgoEnergy", "CallableEnergy", "NormalInverseWishart", "NormalGamma",
           "BetaBernoulli", "DirichletMultinomial",
           "WishartBlockModel", "WishartBlockLikelihood", "ENERGIES", "LIKELIHOODS"]
