"""sklearn-trellis: exact and sampled distributions over clusterings and hierarchies."""

from . import summaries
from .correlation_clustering import ExactCorrelationClustering
from .dp_mixture import DPMixture
from .dp_mixture import DPMixture
from .entropy_agglomeration import EntropyAgglomeration
from .fast_tiwd import FastTIWD
from .hierarchical import TrellisHierarchical

__version__ = "0.1.0.dev0"

__all__ = ["ExactCorrelationClustering", "TrellisHierarchical", "DPMixture", "FastTIWD",
           "EntropyAgglomeration", "summaries", "__version__"]
