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


def cluster_masks(partitions):
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
                             f"{pairs} partition pairs, more than {MAX_EXACT_PAIRS}. Use "
                             "method='gibbs', or fewer rows or columns.")
        grid = self.cells.hyperparameter_grid()
        if grid is None:
            params, log_prior = self.cells.kernel_params()[None, :], np.zeros(1)
        else:
            params, log_prior = grid
        self.grid_params = params
        self._grid_log_prior = log_prior
        self._X = X
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
        self._subset_stats = rows
        self._subset_log_marginals = self._grid_log_marginals(rows)
        self.row_partitions, self.column_partitions = set_partitions(n), set_partitions(d)
        self._row_masks = cluster_masks(self.row_partitions)
        self._column_masks = cluster_masks(self.column_partitions)
        self._eppf_rows = np.array([self.row_prior.log_eppf(np.bincount(z))
                                    for z in self.row_partitions])
        self._eppf_columns = np.array([self.column_prior.log_eppf(np.bincount(z))
                                       for z in self.column_partitions])
        full = self._grid_log_joint()
        self.log_joint = logsumexp(full, axis=0)
        self.log_marginal_likelihood = float(logsumexp(self.log_joint))
        self.grid_log_posterior = (logsumexp(full, axis=(1, 2))
                                   - self.log_marginal_likelihood)
        self._probabilities = np.exp(self.log_joint - self.log_marginal_likelihood)
        return self

    def _grid_log_marginals(self, stats):
        """``(G, 2^n, 2^d)``: ``log m_g`` of the statistics of every (row subset, column
        subset) at every grid point (0 for an empty block)."""
        n, d = self._X.shape
        params = np.ascontiguousarray(self.grid_params)
        table = one_type(self.cells.cell_type).typed_grid_log_marginals(
            params, stats, np.empty((len(params), stats.shape[0])))
        return table.reshape(len(params), 1 << n, 1 << d)

    def _grid_log_joint(self):
        """``(G, P_rows, P_columns)``: ``log p(r, c, g, X)`` of every pair at every grid point."""
        log_lik = self._sum_over_blocks(self._subset_log_marginals)
        return (log_lik + self._grid_log_prior[:, None, None]
                + self._eppf_rows[None, :, None] + self._eppf_columns[None, None, :])

    def log_predictive(self, X_new):
        """``log p(x | X)`` of each row ``x`` of ``X_new``, the exact sum over the posterior.

        Each row is a new row of the fitted matrix, scored alone: it joins row
        cluster ``k`` with the prior's predictive weight (CRP: ``n_k / (n + alpha)``,
        a new cluster ``alpha / (n + alpha)``) and its cells in column cluster ``l``
        are scored jointly by ``m_g(X_kl + x_l) / m_g(X_kl)`` (a new cluster:
        ``m_g(x_l)``). Summed over every (row partition, column partition, grid
        point) with its posterior probability, this is ``p(X + x) / p(X)``. NaN
        cells are missing (they add nothing).

        Parameters
        ----------
        X_new : ndarray of shape (m, n_columns)

        Returns
        -------
        log_density : ndarray of shape (m,)
        """
        X_new = np.asarray(X_new, dtype=np.float64)
        n, d = self._X.shape
        log_post = self._grid_log_joint() - self.log_marginal_likelihood
        # log prior weight of joining cluster a of each row partition (-inf: no cluster a)
        sizes = (self.row_partitions[:, :, None] == np.arange(n)[None, None, :]).sum(axis=1)
        weights = self.row_prior.log_predictive_weights(sizes.ravel())
        log_join = weights[:-1].reshape(sizes.shape) - np.log(n + self.row_prior.alpha)
        log_new = weights[-1] - np.log(n + self.row_prior.alpha)
        kernels, width = one_type(self.cells.cell_type), self.cells.n_stats
        out = np.empty(X_new.shape[0])
        for m, x in enumerate(X_new):
            new_stats = np.zeros((1 << d, width))
            for column_mask in range(1, 1 << d):
                new_stats[column_mask] = kernels.typed_values_stats(
                    self.grid_params[0], x[[j for j in range(d) if column_mask >> j & 1]], width)
            joined = (self._subset_stats.reshape(1 << n, 1 << d, width)
                      + new_stats[None]).reshape(-1, width)
            # log m_g(X_RC + x_C) - log m_g(X_RC); row subset 0: log m_g(x_C)
            gain = self._grid_log_marginals(joined) - self._subset_log_marginals
            out[m] = logsumexp([logsumexp(log_post[g] + self._row_log_predictive(
                gain[g], log_join, log_new)) for g in range(len(gain))])
        return out

    def _by_row_subset(self, table):
        """``(..., 2^n, P_columns)``: ``table`` (``(..., 2^n, 2^d)``, per row subset and column
        subset) summed over the clusters of each column partition."""
        out = np.zeros(table.shape[:-1] + (len(self._column_masks),))
        for b in range(self._column_masks.shape[1]):
            out += table[..., self._column_masks[:, b]]
        return out

    def _sum_over_blocks(self, table):
        """``(G, P_rows, P_columns)``: ``table`` (``(G, 2^n, 2^d)``) summed over the blocks of
        every pair (columns first, then rows: ``n + d`` gathers, not ``n d``)."""
        by_subset = self._by_row_subset(table)
        out = np.zeros((table.shape[0], len(self._row_masks), by_subset.shape[2]))
        for a in range(self._row_masks.shape[1]):
            out += by_subset[:, self._row_masks[:, a], :]
        return out

    def _row_log_predictive(self, gain, log_join, log_new):
        """``(P_rows, P_columns)``: ``log p(x | r, c, g, X)`` of every pair at one grid point."""
        row_masks = self._row_masks
        by_subset = self._by_row_subset(gain)       # (2^n, P_columns)
        terms = np.empty((row_masks.shape[1] + 1, len(row_masks), by_subset.shape[1]))
        for a in range(row_masks.shape[1]):
            terms[a] = log_join[:, a, None] + by_subset[row_masks[:, a]]
        terms[-1] = log_new + by_subset[0][None, :]
        top = terms.max(axis=0)    # finite: the new cluster's term is (a missing one: -inf)
        return top + np.log(np.exp(terms - top).sum(axis=0))

    def row_probabilities(self):
        """Posterior probability of each row partition."""
        return self._probabilities.sum(axis=1)

    def column_probabilities(self):
        """Posterior probability of each column partition."""
        return self._probabilities.sum(axis=0)

    @staticmethod
    def _cluster_marginals(partitions, probabilities):
        """``P(B is a cluster)`` of every bitmask ``B`` (entry 0 is 0)."""
        masks = cluster_masks(partitions)
        out = np.zeros(1 << partitions.shape[1])
        np.add.at(out, masks, np.repeat(probabilities[:, None], masks.shape[1], axis=1))
        out[0] = 0.0     # the padding of partitions with fewer clusters
        return out

    def row_cluster_marginals(self):
        return self._cluster_marginals(self.row_partitions, self.row_probabilities())

    def column_cluster_marginals(self):
        return self._cluster_marginals(self.column_partitions, self.column_probabilities())

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


__all__ = ["ExactBiclusterPosterior", "bell", "cluster_masks", "MAX_EXACT_PAIRS"]
