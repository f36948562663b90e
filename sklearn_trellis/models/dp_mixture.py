"""The DP / Pitman-Yor / Dirichlet-multinomial mixture as a flat model (for the exact engines).

With the mixture parameters integrated out, the posterior over partitions is::

    log p(C, X) = log_normaliser(n) + log_count(K) + sum_{B in C} [log_block(|B|) + log m(X_B)]

(see :mod:`sklearn_trellis.models.priors`). For the CRP ``log_count(K) = K log alpha``
folds into the clusters (``e(B) = log alpha + log Gamma(|B|) + log m(X_B)``) and the
plain exact flat trellis applies; for Pitman-Yor and the Dirichlet-multinomial
prior the count-resolved trellis handles ``log_count``
(:func:`sklearn_trellis.engines.exact.trellis_for_model.trellis_for_model` chooses).
"""

import numpy as np

from ._flat import FlatModel
from .priors import CRP


def subset_sizes(n_items):
    """The number of items of every bitmask ``0..2**n_items - 1``."""
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
    ``log_block(|B|) + log m(X_B)`` (plus ``log alpha`` for the CRP);
    :func:`sklearn_trellis.engines.exact.trellis_for_model.trellis_for_model`
    builds the exact engine of this posterior.
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

    def log_potential_table(self, params=None, log_marginals=None):
        """Cluster log-potentials of all subsets; ``params``: the likelihood's kernel parameters,
        ``log_marginals``: their ``subset_log_marginals`` of the data if known."""
        n = self.n_items_
        table = (self.likelihood.subset_log_marginals(self._data, params)
                 if log_marginals is None else log_marginals.copy())
        table[1:] += self.prior.log_block(subset_sizes(n)[1:])
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


__all__ = ["MixturePartitionModel", "subset_sizes"]
