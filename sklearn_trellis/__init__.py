"""sklearn-trellis: exact and sampled distributions over clusterings and hierarchies."""

from .correlation_clustering import ExactCorrelationClustering

__version__ = "0.1.0.dev0"

__all__ = ["ExactCorrelationClustering", "__version__"]
