"""Summaries of sample sets of partitions and feature allocations.

Cumulative statistics, cumulative occurrence distribution (COD) matrices,
projection entropy and entropy sequences (Fidaner & Cemgil 2013), pairwise
co-occurrence, the number-of-blocks histogram, point estimates minimising a
posterior expected loss (Binder, generalised VI, omARI, NVI, NID and the
pairwise approximations of salso), credible balls (Wade & Ghahramani 2018),
losses/scores between two clusterings, and the calibration of pairwise
co-membership probabilities against labels.

A *sample set* is an int array (T, n) of label vectors (one sampled
partition per row: the elements are the columns), a list of partitions or
feature allocations given as lists of blocks (iterables of element indices
``0..n-1``), or a binary array (T, n_blocks, n).
"""

from ._input import as_sample_set, is_block_list_format  # noqa: F401 (EntropyAgglomeration)
from .calibration import (expected_calibration_error, pairwise_brier_score,
                          pairwise_calibration_curve, pairwise_from_proba, pairwise_log_loss)
from .credible_ball import CredibleBall, credible_ball
from .cumulative import cumulative_occurrence_distribution, cumulative_statistic, projection
from .entropy import entropy_sequence, projection_entropy
from .metrics import (adjusted_rand_loss, binder_loss, normalized_information_distance,
                      normalized_variation_of_information, purity_score, variation_of_information)
from .occurrence import n_clusters_histogram, pairwise_cooccurrence
from .point_estimates import expected_loss, point_estimate

__all__ = [
    "cumulative_statistic",
    "projection",
    "cumulative_occurrence_distribution",
    "projection_entropy",
    "entropy_sequence",
    "pairwise_cooccurrence",
    "n_clusters_histogram",
    "point_estimate",
    "expected_loss",
    "credible_ball",
    "CredibleBall",
    "binder_loss",
    "variation_of_information",
    "normalized_variation_of_information",
    "normalized_information_distance",
    "adjusted_rand_loss",
    "purity_score",
    "pairwise_log_loss",
    "pairwise_brier_score",
    "pairwise_calibration_curve",
    "expected_calibration_error",
    "pairwise_from_proba",
]
