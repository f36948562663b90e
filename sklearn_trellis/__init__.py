"""sklearn-trellis: exact and sampled distributions over clusterings and hierarchies."""

from .correlation_clustering import ExactCorrelationClustering
from .dp_mixture import DPMixture

__version__ = "0.1.0.dev0"

__all__ = ["ExactCorrelationClustering", "DPMixture", "__version__"]
