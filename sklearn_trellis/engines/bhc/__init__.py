"""Bayesian hierarchical clustering engines (Heller & Ghahramani 2005; Blundell et al. 2010).

- :mod:`.build`: greedy BHC (binary or rose trees) and randomized BHC;
- :mod:`.posterior`: a tree's DP quantities through the sparse flat trellis's
  tree recursion, the exact DP marginal, the family bound and the predictive.
"""

from .build import greedy_tree, randomized_tree
from .posterior import TreePosterior

__all__ = ["greedy_tree", "randomized_tree", "TreePosterior"]
