"""Correlation clustering (Greenberg et al. 2018, Section 5) as a flat model.

For signed pairwise affinities ``w`` and inverse temperature ``beta``::

    log phi(C) = beta * (sum_{i<j same cluster} w_ij - sum_{i<j different clusters} w_ij)
               = -beta * sum_{i<j} w_ij + sum_{B in C} 2 * beta * sum_{i<j in B} w_ij

so the cluster log-potential is ``e(B) = 2 beta sum_{i<j in B} w_ij`` and the
constant is ``-beta * sum_{i<j} w_ij``.

With ``alpha`` the distribution is multiplied by an Ewens (Chinese restaurant
process) partition prior: each cluster also carries
``log(alpha) + log((|B| - 1)!)``. It is the posterior of the Gaussian pair
model of :mod:`~sklearn_trellis.models.gaussian_pairs` under that prior.
"""

import numpy as np
from scipy.special import gammaln

from .._core.subsets import subset_pair_sums
from .._core.validation import check_log_potential_scale
from ._flat import FlatModel


class CorrelationClusteringModel(FlatModel):
    """Correlation clustering over a symmetric signed affinity matrix.

    Parameters
    ----------
    beta : float, default=1.0
        Inverse temperature.
    alpha : float or None, default=None
        Concentration of an Ewens partition prior (cluster term
        ``log(alpha) + log((|B| - 1)!)``); ``None``: no prior term (uniform
        over partitions).

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

    def __init__(self, beta=1.0, alpha=None):
        self.beta = beta
        self.alpha = alpha

    def _prior_terms(self, sizes):
        """The Ewens prior's cluster terms ``log(alpha) + log((|B| - 1)!)`` (0 without)."""
        sizes = np.asarray(sizes, dtype=np.float64)
        if self.alpha is None:
            return np.zeros_like(sizes)
        return np.log(float(self.alpha)) + gammaln(sizes)

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
        # = 2 beta sum_{i<j}, plus the prior's cluster term
        return float(float(self.beta) * block.sum() + self._prior_terms(idx.size))

    def log_potential_constant(self):
        return float(-float(self.beta) * np.triu(self.affinity_, 1).sum())

    def log_potential_table(self):
        table = subset_pair_sums(self.affinity_, 2.0 * float(self.beta))
        if self.alpha is not None:
            sizes = np.zeros(1, np.int64)
            for _ in range(self.n_items_):   # popcounts by doubling
                sizes = np.concatenate([sizes, sizes + 1])
            table[1:] += self._prior_terms(sizes[1:])
        return table

    def family_log_potentials(self, family):
        """``e(B) = 2 beta W(B)`` of every vertex, from the family's pair sums ``W``."""
        from ._family_stats import family_pair_sums
        if family.n_items != self.n_items_:
            raise ValueError(f"The family is over {family.n_items} items, the model over "
                             f"{self.n_items_}.")
        return (2.0 * float(self.beta) * family_pair_sums(self.affinity_, family)
                + self._prior_terms(family.sizes))

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
            With ``alpha``, the prior's gains are added: ``log |C_k|`` to
            join, ``log(alpha)`` to open a cluster.
        """
        n_clusters = int(labels.max()) + 1
        one_hot = np.zeros((labels.size, n_clusters))
        one_hot[np.arange(labels.size), labels] = 1.0
        within = affinity_to_items @ one_hot
        total = affinity_to_items.sum(axis=1, keepdims=True)
        gains = np.empty((affinity_to_items.shape[0], n_clusters + 1))
        gains[:, :n_clusters] = float(self.beta) * (2.0 * within - total)
        gains[:, n_clusters] = -float(self.beta) * total[:, 0]
        if self.alpha is not None:
            gains[:, :n_clusters] += np.log(one_hot.sum(axis=0))[None, :]
            gains[:, n_clusters] += np.log(float(self.alpha))
        return gains
