"""Credible balls of a clustering posterior (Wade & Ghahramani 2018, Section 4).

The ``level`` credible ball around the estimate ``c*`` is the smallest ball
``B(c*, eps) = {c : d(c*, c) <= eps}`` holding at least ``level`` posterior
mass, estimated from the samples: ``eps`` is the smallest sampled distance
with ``#{t : d(c*, c_t) <= eps} >= level * T``. It is summarised by
partitions *in the ball* (sampled partitions within ``eps``):

- *upper vertical bound*: those with the fewest clusters, farthest from ``c*``;
- *lower vertical bound*: those with the most clusters, farthest from ``c*``;
- *horizontal bound*: those farthest from ``c*``.

Ties (distances equal up to a relative ``1e-10``, rounding) are all kept (as
``mcclust.ext::credibleball``), one row per distinct partition, labels in
order of first appearance.
"""

from dataclasses import dataclass

import numpy as np

from .._core.labels import first_appearance_labels
from .._core.validation import check_scalar_param
from ._input import check_labels
from .point_estimates import Target, check_loss_parameters, contingency_losses, loss_name

#: Distances usable for the ball (metrics or losses computed from the samples).
BALL_LOSSES = {"vi", "binder", "omari", "nvi", "nid"}


@dataclass(frozen=True)
class CredibleBall:
    """A credible ball and its bounds (see :func:`credible_ball`).

    Attributes
    ----------
    estimate : ndarray of shape (n,)
    loss : str
    level : float
    radius : float
        ``eps``, the ball's radius.
    distances : ndarray of shape (T,)
        Distance from the estimate to each sample.
    upper_vertical, lower_vertical, horizontal : ndarray of shape (m, n)
        The bounds' partitions (all ties).
    upper_vertical_distance, lower_vertical_distance, horizontal_distance : float
    """

    estimate: np.ndarray
    loss: str
    level: float
    radius: float
    distances: np.ndarray
    upper_vertical: np.ndarray
    upper_vertical_distance: float
    lower_vertical: np.ndarray
    lower_vertical_distance: float
    horizontal: np.ndarray
    horizontal_distance: float

    @property
    def n_clusters_range(self):
        """``(fewest, most)`` clusters among the partitions in the ball."""
        return (int(self.upper_vertical[0].max()) + 1, int(self.lower_vertical[0].max()) + 1)


#: Distances equal up to this relative rounding error are ties.
_TIE = 1e-10


def _farthest(rows, distances):
    top = distances.max()
    keep = distances >= top - _TIE * max(1.0, top)
    return np.unique(rows[keep], axis=0), float(top)


def credible_ball(samples, estimate, loss="vi", level=0.95, *, a=1.0, b=1.0):
    """Wade & Ghahramani's credible ball around a point estimate, with its bounds.

    Parameters
    ----------
    samples : sample set
        Sampled partitions: an int array (T, n) of label vectors or a list of
        partitions as lists of blocks.
    estimate : array-like of shape (n,)
        The centre, usually a point estimate.
    loss : {'vi', 'binder', 'omari', 'nvi', 'nid'}, default='vi'
        The distance (salso spellings accepted). Wade & Ghahramani use the VI
        and Binder's loss (``a``, ``b`` as in :func:`binder_loss`, ``a`` as in
        :func:`variation_of_information`; each sample is the reference and the
        estimate the estimate, as in :func:`expected_loss`).
    level : float in (0, 1], default=0.95
        Posterior mass of the ball.

    Returns
    -------
    ball : CredibleBall

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.summaries import credible_ball
    >>> samples = np.array([[0, 0, 1, 1]] * 8 + [[0, 0, 0, 0], [0, 1, 2, 3]])
    >>> ball = credible_ball(samples, [0, 0, 1, 1], level=0.9)
    >>> ball.upper_vertical.tolist(), ball.lower_vertical.tolist()
    ([[0, 0, 0, 0]], [[0, 1, 2, 3]])
    >>> ball.horizontal.tolist()
    [[0, 0, 0, 0], [0, 1, 2, 3]]
    """
    loss = loss_name(loss)
    if loss not in BALL_LOSSES:
        raise ValueError(f"loss must be one of {sorted(BALL_LOSSES)} for a credible ball, "
                         f"got {loss!r}.")
    check_loss_parameters(loss, a, b)
    check_scalar_param(level, "level", kind=(int, float), low=0.0, high=1.0,
                       include_low=False)
    target = Target(samples)
    if target.samples is None:
        raise ValueError("A credible ball needs sampled partitions, not a pairwise matrix.")
    estimate = first_appearance_labels(check_labels(estimate, "estimate"))
    if estimate.size != target.n:
        raise ValueError(f"estimate has {estimate.size} entries for {target.n} elements.")
    # each sample is the reference, as in expected_loss: distances[t] = L(c_t, estimate)
    kind = target.kind(loss)
    distances = contingency_losses(estimate[None], target.samples, kind, a, b)[0]
    n_samples = distances.size
    needed = int(np.ceil(level * n_samples - 1e-9))
    radius = float(np.sort(distances)[max(needed, 1) - 1])
    inside = distances <= radius + _TIE * max(1.0, radius)
    rows, ball_distances = target.samples[inside].astype(np.int64), distances[inside]
    n_clusters = rows.max(axis=1) + 1
    fewest = n_clusters == n_clusters.min()
    most = n_clusters == n_clusters.max()
    upper, upper_distance = _farthest(rows[fewest], ball_distances[fewest])
    lower, lower_distance = _farthest(rows[most], ball_distances[most])
    horizontal, horizontal_distance = _farthest(rows, ball_distances)
    return CredibleBall(estimate, loss, float(level), radius, distances, upper, upper_distance,
                        lower, lower_distance, horizontal, horizontal_distance)


__all__ = ["credible_ball", "CredibleBall", "BALL_LOSSES"]
