"""sklearn-trellis: exact and sampled distributions over clusterings and hierarchies."""

from .correlation_clustering import ExactCorrelationClustering
from .dp_mixture import DPMixture
from .fast_tiwd import FastTIWD

__version__ = "0.1.0.dev0"

__all__ = ["ExactCorrelationClustering", "DPMixture", "FastTIWD", "__version__"]
