"""The DP / Pitman-Yor / Dirichlet-multinomial mixture as a flat model (for the exact engines).

With the mixture parameters integrated out, the posterior over partitions is

    log p(C, X) = log_normaliser(n) + log_count(K) + sum_{B in C} [log_block(|B|) + log m(X_B)]

(see :mod:`sklearn_trellis.models.priors`). For the CRP ``log_count(K) = K log alpha``
folds into the clusters (``e(B) = log alpha + log Gamma(|B|) + log m(X_B)``) and the
plain exact flat trellis applies; for Pitman-Yor and the Dirichlet-multinomial
prior the count-resolved trellis handles ``log_count``.
"""

import numpy as np
from scipy.special import logsumexp

from ..engines.gibbs.sampler import subset_log_marginals
from .priors import CRP
from ..engines.exact.flat import ExactFlatTrellis
from ..engines.exact.flat_counts import CountWeightedFlatTrellis
from ._flat import FlatModel


def _subset_sizes(n_items):
    sizes = np.zeros(1 << n_items, dtype=np.float64)
    for bit in range(n_items):
        sizes[1 << bit:1 << (bit + 1)] = sizes[:1 << bit] + 1
    return sizes


class MixturePartitionModel(FlatModel):
    """Partition posterior of a conjugate mixture, for exact inference.

    Parameters
    ----------
    prior : PartitionPrior
    likelihood : ClusterLikelihood
        Fitted, factorising (``log_global = 0``).

    ``fit(X)`` binds the data; :meth:`log_potential_table` is
    ``log_block(|B|) + log m(X_B)`` (plus ``log alpha`` for the CRP) and
    :meth:`exact_trellis` returns the fitted exact engine.
    """

    def __init__(self, prior=None, likelihood=None):
        self.prior = prior
        self.likelihood = likelihood

    def fit(self, X):
        self._data = self.likelihood.check_data(X)
        self.n_items_ = self._data.shape[0]
        return self

    @property
    def folds_count(self):
        """True when ``log_count(K)`` is linear in ``K`` (the CRP) and folds into ``e``."""
        return type(self.prior) is CRP

    def log_potential_table(self, params=None):
        """Cluster log-potentials of all subsets; ``params``: the likelihood's kernel parameters."""
        n = self.n_items_
        table = subset_log_marginals(self.likelihood, self._data, params)
        table[1:] += self.prior.log_block(_subset_sizes(n)[1:])
        if self.folds_count:
            table[1:] += np.log(self.prior.alpha)
        table[0] = 0.0
        return table

    def cluster_log_potential(self, indices):
        idx = np.asarray(indices)
        value = self.likelihood.log_marginal(self._data[idx]) + float(
            self.prior.log_block(np.array([idx.size]))[0])
        return value + (np.log(self.prior.alpha) if self.folds_count else 0.0)

    def log_potential_constant(self):
        return self.prior.log_normaliser(self.n_items_)

    def log_count_table(self):
        return self.prior.log_count_table(self.n_items_)

    def log_potential(self, labels):
        labels = np.asarray(labels)
        value = super().log_potential(labels)
        if not self.folds_count:
            value += self.prior.log_count(np.unique(labels).size)
        return value

    def log_joints(self, samples, table):
        """``log p(C, X)`` of each row of ``samples`` (labels ``0..K-1``) from the table."""
        samples = np.asarray(samples, dtype=np.int64)
        n_rows, n = samples.shape
        width = int(samples.max()) + 1
        masks = np.zeros((n_rows, width), dtype=np.int64)
        rows = np.repeat(np.arange(n_rows), n)
        np.add.at(masks, (rows, samples.ravel()), np.tile(1 << np.arange(n), n_rows))
        values = np.where(masks > 0, table[masks], 0.0).sum(axis=1)
        if not self.folds_count:
            values += self.log_count_table()[samples.max(axis=1) + 1]
        return values + self.log_potential_constant()

    def exact_trellis(self, max_items, table=None):
        """The fitted exact engine of this posterior."""
        if table is None:
            table = self.log_potential_table()
        if self.folds_count:
            return ExactFlatTrellis(table, max_items=max_items).fit()
        return CountWeightedFlatTrellis(table, self.log_count_table(), max_items=max_items).fit()


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
            trellis = self.model_.exact_trellis(self.max_items, table)
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


__all__ = ["MixturePartitionModel", "GridMarginalPosterior"]
