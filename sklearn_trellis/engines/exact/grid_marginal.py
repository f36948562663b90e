"""Exact partition posterior of a conjugate mixture, marginalised over a hyperprior grid."""

import numpy as np
from scipy.special import logsumexp

from ...models.dp_mixture import MixturePartitionModel
from .trellis_for_model import trellis_for_model


class GridMarginalPosterior:
    """Exact partition posterior of a mixture, marginalised over a finite hyperprior grid.

    ``p(z | X) = sum_g w_g p(z | X, g)`` with ``w_g`` proportional to
    ``p(g) p(X | g)``: one exact trellis per grid point of
    ``likelihood.hyperparameter_grid()`` (a single point for fixed
    hyperparameters). Every quantity is exact; the reported MAP is the
    partition of the most probable (partition, grid point) pair.

    Parameters
    ----------
    prior : PartitionPrior
    likelihood : ClusterLikelihood
        Fitted and factorising.
    max_items : int
        Size limit handed to the exact trellis.

    Attributes (after ``fit``)
    --------------------------
    log_marginal_likelihood : float
        ``log p(X) = logsumexp_g (log p(g) + log p(X | g))``.
    grid_weights : ndarray of shape (G,)
        Posterior probabilities of the grid points.
    grid_params : ndarray of shape (G, n_params)
    map_labels : ndarray of shape (n,)
    map_grid_index : int
    """

    def __init__(self, prior, likelihood, max_items):
        self.prior = prior
        self.likelihood = likelihood
        self.max_items = max_items

    def fit(self, data):
        grid = self.likelihood.hyperparameter_grid()
        if grid is None:
            params = self.likelihood.kernel_params()[None, :]
            log_prior = np.zeros(1)
        else:
            params, log_prior = grid
        self.model_ = MixturePartitionModel(self.prior, self.likelihood).fit(data)
        constant = self.model_.log_potential_constant()
        self.tables_, self.trellises_ = [], []
        log_evidence = np.empty(len(params))
        log_map = np.empty(len(params))
        for g, row in enumerate(params):
            table = self.model_.log_potential_table(row)
            trellis = trellis_for_model(self.model_, table, max_items=self.max_items)
            self.tables_.append(table)
            self.trellises_.append(trellis)
            log_evidence[g] = trellis.log_partition_function + constant
            log_map[g] = trellis.map_log_potential
        log_joint = log_prior + log_evidence
        self.log_marginal_likelihood = float(logsumexp(log_joint))
        self.grid_weights = np.exp(log_joint - self.log_marginal_likelihood)
        self.grid_params = np.asarray(params)
        self._log_prior = np.asarray(log_prior)
        self.map_grid_index = int(np.argmax(log_prior + log_map))
        self.map_labels = self.trellises_[self.map_grid_index].map_labels
        return self

    def _mixture(self, per_point):
        return sum(w * per_point(t) for w, t in zip(self.grid_weights, self.trellises_) if w > 0)

    def pairwise_marginals(self):
        """Exact ``P(i and j share a cluster | X)``."""
        return self._mixture(lambda t: t.pairwise_marginals())

    def n_clusters_distribution(self):
        """Exact ``P(K = k | X)`` for ``k = 1..n``."""
        return self._mixture(lambda t: t.n_clusters_distribution())

    def sample(self, n_samples, random_state):
        """Exact draws: a grid point from its posterior, then a partition from its trellis.

        Returns the labels ``(n_samples, n)`` and the grid index of each draw.
        """
        points = random_state.choice(self.grid_weights.size, size=n_samples,
                                     p=self.grid_weights)
        out = np.empty((n_samples, self.model_.n_items_), dtype=np.int64)
        for g in np.unique(points):
            rows = np.flatnonzero(points == g)
            out[rows] = self.trellises_[g].sample(rows.size, random_state)
        return out, points

    def log_joints(self, samples):
        """``log p(z, X)`` of each sample, marginalised over the grid."""
        per_point = np.array([self.model_.log_joints(samples, table) for table in self.tables_])
        return logsumexp(per_point + self._log_prior[:, None], axis=0)


__all__ = ["GridMarginalPosterior"]
