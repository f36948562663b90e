"""Correlation clustering (Greenberg et al. 2018, Section 5) as a flat model.

For signed pairwise affinities ``w`` and inverse temperature ``beta``::

    log phi(C) = beta * (sum_{i<j same cluster} w_ij - sum_{i<j different clusters} w_ij)
               = -beta * sum_{i<j} w_ij + sum_{B in C} 2 * beta * sum_{i<j in B} w_ij

so the cluster log-potential is ``e(B) = 2 beta sum_{i<j in B} w_ij`` and the
constant is ``-beta * sum_{i<j} w_ij``.
"""

import numpy as np

from .._core.subsets import subset_pair_sums
from .._core.validation import check_log_potential_scale
from ._flat import FlatModel


class CorrelationClusteringModel(FlatModel):
    """Correlation clustering over a symmetric signed affinity matrix.

    Parameters
    ----------
    beta : float, default=1.0
        Inverse temperature.

    Attributes
    ----------
    affinity_ : ndarray of shape (N, N)
        The symmetric signed affinities ``w_ij`` passed to :meth:`fit`, with a
        zero diagonal.
    n_items_ : int
        Number of items N.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import CorrelationClusteringModel
    >>> w = np.array([[0., 1., -1.], [1., 0., -1.], [-1., -1., 0.]])
    >>> model = CorrelationClusteringModel(beta=1.0).fit(w)
    >>> model.log_potential([0, 0, 1])   # 1 - (-1) - (-1)
    3.0
    """

    def __init__(self, beta=1.0):
        self.beta = beta

    def fit(self, affinity, y=None):
        """Bind the model to an (N, N) symmetric affinity matrix (checked by the caller)."""
        w = np.array(affinity, dtype=np.float64)
        np.fill_diagonal(w, 0.0)
        # |e(B)| <= beta * sum_ij |w_ij|: refuse what would overflow (not +inf or NaN later)
        check_log_potential_scale(w, float(self.beta),
                                  what="The scaled potentials beta * w")
        self.affinity_ = w
        self.n_items_ = w.shape[0]
        return self

    def cluster_log_potential(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        block = self.affinity_[np.ix_(idx, idx)]
        return float(float(self.beta) * block.sum())  # = 2 beta sum_{i<j}

    def log_potential_constant(self):
        return float(-float(self.beta) * np.triu(self.affinity_, 1).sum())

    def log_potential_table(self):
        return subset_pair_sums(self.affinity_, 2.0 * float(self.beta))

    def family_log_potentials(self, family):
        """``e(B) = 2 beta W(B)`` of every vertex, from the family's pair sums ``W``."""
        from ._family_stats import family_pair_sums
        if family.n_items != self.n_items_:
            raise ValueError(f"The family is over {family.n_items} items, the model over "
                             f"{self.n_items_}.")
        return 2.0 * float(self.beta) * family_pair_sums(self.affinity_, family)

    def assignment_gains(self, affinity_to_items, labels):
        """Log-potential gain of adding new items to each existing cluster.

        Parameters
        ----------
        affinity_to_items : ndarray of shape (n_new, N)
            Affinities of each new item to the N modelled items.
        labels : ndarray of shape (N,)
            A clustering of the modelled items, labels ``0..K-1``.

        Returns
        -------
        gains : ndarray of shape (n_new, K + 1)
            Column ``k < K``: change of ``log phi`` when the new item joins
            cluster ``k``, ``beta * (2 sum_{j in C_k} w_xj - sum_j w_xj)``; the
            last column: joining as a new singleton, ``-beta * sum_j w_xj``.
        """
        n_clusters = int(labels.max()) + 1
        one_hot = np.zeros((labels.size, n_clusters))
        one_hot[np.arange(labels.size), labels] = 1.0
        within = affinity_to_items @ one_hot
        total = affinity_to_items.sum(axis=1, keepdims=True)
        gains = np.empty((affinity_to_items.shape[0], n_clusters + 1))
        gains[:, :n_clusters] = float(self.beta) * (2.0 * within - total)
        gains[:, n_clusters] = -float(self.beta) * total[:, 0]
        return gains
