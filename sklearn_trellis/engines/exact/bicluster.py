"""Exact posterior of the biclustering block model by enumeration, for tiny matrices.

Every pair (row partition, column partition) and every grid point ``g`` of the
cell model's hyperprior gets its exact log joint

    log p(r, c, g, X) = log EPPF(r) + log EPPF(c) + log p(g) + sum_{a, b} log m_g(X_ab),

(``n = 6`` rows and ``d = 5`` columns: 203 x 52 pairs). A block's marginal depends
on its row and column sets only, so ``log m_g`` is computed once per pair of
(row subset, column subset) bitmasks and the pair sums are table look-ups.
"""

import numpy as np
from scipy.special import logsumexp

from ..._core.labels import set_partitions
from ...models.cell_loops import one_type

#: Largest number of (row partition, column partition) pairs enumerated.
MAX_EXACT_PAIRS = 200_000


def bell(n):
    """The number of partitions of ``n`` items."""
    row = [1]
    for _ in range(n):
        new = [row[-1]]
        for value in row:
            new.append(new[-1] + value)
        row = new
    return row[0]


def _cluster_masks(partitions):
    """``(P, n)`` bitmask of each partition's clusters (``0`` past the last cluster)."""
    n = partitions.shape[1]
    masks = np.zeros((partitions.shape[0], max(n, 1)), np.int64)
    for i in range(n):
        np.add.at(masks, (np.arange(partitions.shape[0]), partitions[:, i]), 1 << i)
    return masks


class ExactBiclusterPosterior:
    """The exact joint posterior over (row partition, column partition), hyperparameters summed.

    Parameters
    ----------
    cells : fitted cell model
    row_prior, column_prior : PartitionPrior

    Attributes (after ``fit(X)``)
    ---------------------------
    row_partitions, column_partitions : ndarray
        All partitions of the rows / of the columns.
    log_joint : ndarray of shape (P_rows, P_columns)
        ``log p(r, c, X)`` (the hyperparameter grid summed out).
    log_marginal_likelihood : float
        ``log p(X)``.
    grid_params, grid_log_posterior : the grid and ``log p(g | X)``.
    """

    def __init__(self, cells, row_prior, column_prior):
        self.cells = cells
        self.row_prior = row_prior
        self.column_prior = column_prior

    def fit(self, X):
        X = np.asarray(X, dtype=np.float64)
        n, d = X.shape
        pairs = bell(n) * bell(d)
        if pairs > MAX_EXACT_PAIRS:
            raise ValueError(f"exact biclustering enumerates Bell(n_rows) x Bell(n_columns) = "
                             f"{pairs} partition pairs, more than {MAX_EXACT_PAIRS}.")
        grid = self.cells.hyperparameter_grid()
        if grid is None:
            params, log_prior = self.cells.kernel_params()[None, :], np.zeros(1)
        else:
            params, log_prior = grid
        self.grid_params = params
        # log m_g of the cells of every (row subset, column subset); statistics do not
        # depend on the grid point (the Normal shift m0 is shared by the grid)
        kernels, width = one_type(self.cells.cell_type), self.cells.n_stats
        rows = np.zeros(((1 << n) * (1 << d), width))
        for row_mask in range(1, 1 << n):
            chosen = X[[i for i in range(n) if row_mask >> i & 1]]
            for column_mask in range(1, 1 << d):
                cells = chosen[:, [j for j in range(d) if column_mask >> j & 1]]
                rows[(row_mask << d) | column_mask] = kernels.typed_values_stats(
                    params[0], cells.ravel(), width)
        table = kernels.typed_grid_log_marginals(np.ascontiguousarray(params), rows,
                                                 np.empty((len(params), rows.shape[0])))
        table = table.reshape(len(params), 1 << n, 1 << d)
        self.row_partitions, self.column_partitions = set_partitions(n), set_partitions(d)
        row_masks = _cluster_masks(self.row_partitions)
        column_masks = _cluster_masks(self.column_partitions)
        log_lik = np.zeros((len(params), len(row_masks), len(column_masks)))
        for a in range(row_masks.shape[1]):
            for b in range(column_masks.shape[1]):
                log_lik += table[:, row_masks[:, a][:, None], column_masks[:, b][None, :]]
        eppf_rows = np.array([self.row_prior.log_eppf(np.bincount(z))
                              for z in self.row_partitions])
        eppf_columns = np.array([self.column_prior.log_eppf(np.bincount(z))
                                 for z in self.column_partitions])
        full = (log_lik + log_prior[:, None, None] + eppf_rows[None, :, None]
                + eppf_columns[None, None, :])
        self.log_joint = logsumexp(full, axis=0)
        self.log_marginal_likelihood = float(logsumexp(self.log_joint))
        self.grid_log_posterior = (logsumexp(full, axis=(1, 2))
                                   - self.log_marginal_likelihood)
        self._probabilities = np.exp(self.log_joint - self.log_marginal_likelihood)
        return self

    def row_probabilities(self):
        """Posterior probability of each row partition."""
        return self._probabilities.sum(axis=1)

    def column_probabilities(self):
        """Posterior probability of each column partition."""
        return self._probabilities.sum(axis=0)

    @staticmethod
    def _pairwise(partitions, probabilities):
        together = partitions[:, :, None] == partitions[:, None, :]
        return np.einsum("p,pij->ij", probabilities, together)

    def row_pairwise_marginals(self):
        return self._pairwise(self.row_partitions, self.row_probabilities())

    def column_pairwise_marginals(self):
        return self._pairwise(self.column_partitions, self.column_probabilities())

    def map_pair(self):
        """``(row labels, column labels)`` of the most probable pair."""
        a, b = np.unravel_index(np.argmax(self.log_joint), self.log_joint.shape)
        return self.row_partitions[a], self.column_partitions[b]

    def sample(self, n_samples, random_state):
        """``n_samples`` exact draws: ``(row samples, column samples, their log joints)``."""
        flat = self._probabilities.ravel()
        picks = random_state.choice(flat.size, size=n_samples, p=flat / flat.sum())
        a, b = np.unravel_index(picks, self.log_joint.shape)
        return self.row_partitions[a], self.column_partitions[b], self.log_joint[a, b]


__all__ = ["ExactBiclusterPosterior", "bell", "MAX_EXACT_PAIRS"]
