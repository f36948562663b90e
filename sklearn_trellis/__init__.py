"""sklearn-trellis: exact and sampled distributions over clusterings and hierarchies."""

from . import metrics, summaries
from ._bayesian_hierarchical_clustering import BayesianHierarchicalClustering
from ._correlation_clustering import ExactCorrelationClustering
from ._crosscat import CrossCat
from ._divisive_clustering import DivisiveClustering
from ._dp_mixture import DPMixture
from ._entropy_agglomeration import EntropyAgglomeration
from ._fast_tiwd import FastTIWD
from ._infinite_biclustering import InfiniteBiclustering
from ._trellis_hierarchical import TrellisHierarchical

__version__ = "0.1.0.dev0"

__all__ = ["ExactCorrelationClustering", "TrellisHierarchical", "DPMixture", "FastTIWD",
           "EntropyAgglomeration", "DivisiveClustering", "InfiniteBiclustering",
           "BayesianHierarchicalClustering", "CrossCat", "metrics", "summaries", "__version__"]
