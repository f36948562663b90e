"""Divisive (top-down) hierarchical clustering: DIANA as R's ``cluster::diana``,
bisection by K-means / K-medoids, and exactly optimal splits of small clusters."""

from ._diana_kernels import r_dissimilarities
from .banner import divisive_coefficient
from .divisive import METHODS, DivisiveTree, diana, divisive_tree
from .exact_split import CRITERIA, best_bipartition, split_criterion
from .seeds import divisive_seed_trees

__all__ = ["DivisiveTree", "diana", "divisive_tree", "METHODS", "CRITERIA",
           "best_bipartition", "split_criterion", "divisive_coefficient",
           "divisive_seed_trees", "r_dissimilarities"]
