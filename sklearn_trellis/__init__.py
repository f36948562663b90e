"""sklearn-trellis: exact and sampled distributions over clusterings and hierarchies."""

from . import summaries
from .correlation_clustering import ExactCorrelationClustering
from .entropy_agglomeration import EntropyAgglomeration

__version__ = "0.1.0.dev0"

__all__ = ["ExactCorrelationClustering", "EntropyAgglomeration", "summaries", "__version__"]
