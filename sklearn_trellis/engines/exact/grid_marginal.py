"""Exact partition posterior of a conjugate mixture, marginalised over a hyperprior grid."""

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ...models.dp_mixture import MixturePartitionModel, subset_sizes
from ._predictive_kernels import SHIFT_FLOOR, predictive_kernels
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
            log_marginals = self.likelihood.subset_log_marginals(self.model_._data, row)
            table = self.model_.log_potential_table(row, log_marginals)
            trellis = trellis_for_model(self.model_, table, max_items=self.max_items)
            self.tables_.append(table)
            self.trellises_.append(trellis)
            log_evidence[g] = trellis.log_partition_function + constant
            log_map[g] = trellis.map_log_potential
        log_joint = log_prior + log_evidence
        self.log_marginal_likelihood = float(logsumexp(log_joint))
        self.grid_weights = np.exp(log_joint - self.log_marginal_likelihood)
        self._log_grid_weights = log_joint - self.log_marginal_likelihood
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

    def cluster_marginals(self):
        """Exact ``P(B is a cluster | X)`` of every bitmask ``B`` (entry 0 is 0)."""
        return self._mixture(lambda t: np.exp(t.log_cluster_marginals()))

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

    def predictive(self):
        """The exact posterior predictive of a new row: :class:`ExactMixturePredictive`.

        By linearity over the posterior, the CRP-style weights of a new row
        (join a cluster ``B``: ``w(|B|) / (n + alpha)``; open one:
        ``w_new(K) / (n + alpha)``) need only ``P(B is a cluster | X, g)`` of
        every subset and ``E[w_new(K) | X, g]`` per grid point.
        """
        n = self.model_.n_items_
        sizes = subset_sizes(n)[1:]
        new_weights = np.array([self.prior.log_predictive_weights(np.ones(k))[-1]
                                for k in range(1, n + 1)])
        log_join = self.prior.log_predictive_weights(sizes)[:-1]
        kept = np.flatnonzero(self.grid_weights > 0)
        weights, log_new = [], []
        for g in kept:
            trellis = self.trellises_[g]
            weights.append(trellis.log_cluster_marginals()[1:] + log_join)
            if np.ptp(new_weights) == 0:   # the CRP: a new cluster's weight ignores K
                log_new.append(new_weights[0])
            else:
                with np.errstate(divide="ignore"):
                    log_new.append(logsumexp(np.log(trellis.n_clusters_distribution())
                                             + new_weights))
        return ExactMixturePredictive(
            likelihood=self.likelihood, data=self.model_._data,
            grid_params=self.grid_params[kept], log_grid_weights=self._log_grid_weights[kept],
            log_join_weights=np.array(weights), log_new_weights=np.array(log_new),
            log_normaliser=float(np.log(n + self.prior.alpha)), prior=self.prior,
            max_items=self.max_items)

    def log_joints(self, samples):
        """``log p(z, X)`` of each sample, marginalised over the grid."""
        per_point = np.array([self.model_.log_joints(samples, table) for table in self.tables_])
        return logsumexp(per_point + self._log_prior[:, None], axis=0)


#: Bytes of the per-(grid point, subset) tables of the exact predictive kept between
#: calls (``G 2**n (predictive_size + 1)`` float64: 55 MB at 12 rows in 2 dimensions on
#: the default grid of 186 points, 197 MB in 5). Above it, each call tabulates the grid
#: in chunks of this size (at least one grid point) and keeps nothing.
PREDICTIVE_TABLE_BYTES = 256 * 2**20


@dataclass
class ExactMixturePredictive:
    """``log p(x | X)`` of new rows, summed over the whole exact posterior.

    ``p(x | X) = sum_g p(g | X) [sum_B P(B | X, g) w(|B|) m_g(X_B + x) / m_g(X_B)
    + E[w_new(K) | X, g] m_g(x)] / (n + alpha)``: the Gibbs sampler's predictive of
    one partition (join a cluster or open one) averaged over every partition and
    grid point, which is ``p(X + x) / p(X)``.

    ``m_g(X_B + x) / m_g(X_B)`` is the likelihood's posterior predictive given
    ``X_B`` (its ``log_predictive``, as in the Gibbs sampler): the predictive of
    every ``X_B`` at every grid point is tabulated on first use (the likelihood's
    ``TabulatedPredictive``, else its statistics rows; ``PREDICTIVE_TABLE_BYTES`` at
    most are kept), then each new row costs one predictive evaluation per (grid
    point, subset). :meth:`reference_log_terms` is the previous algorithm.

    The tables (``log_join_weights``, grid points x ``2**n``: 6 MB at 12 rows on
    the default Gaussian grid of 186 points; the predictive's) are not pickled:
    ``log_join_weights`` is rebuilt from the rows, the prior and the likelihood on
    first use after unpickling (one exact fit of the posterior, the same values
    bit for bit).
    """

    likelihood: object                  # the fitted ClusterLikelihood
    data: np.ndarray                    # (n, ...) the fitted rows (kernel data)
    grid_params: np.ndarray             # (G, n_params) grid points of positive weight
    log_grid_weights: np.ndarray        # (G,) log p(g | X)
    log_join_weights: np.ndarray        # (G, 2**n - 1) log [P(B | X, g) w(|B|)]
    log_new_weights: np.ndarray         # (G,) log E[w_new(K) | X, g]
    log_normaliser: float               # log(n + alpha)
    prior: object = None                # the PartitionPrior (to rebuild log_join_weights)
    max_items: int = None               # the exact trellis's size limit (likewise)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["log_join_weights"] = None   # rebuilt on demand: _join_weights
        state.pop("_tables", None)          # likewise: _grid_tables
        state.pop("_reference_log_marginals", None)
        return state

    def _join_weights(self):
        """``log_join_weights``, rebuilt after unpickling by refitting the exact posterior."""
        if self.log_join_weights is None:
            rebuilt = GridMarginalPosterior(self.prior, self.likelihood,
                                            self.max_items).fit(self.data).predictive()
            self.log_join_weights = rebuilt.log_join_weights
        return self.log_join_weights

    def log_density(self, data_new):
        """``log p(x | X)`` of each row of ``data_new`` (kernel data, like ``data``).

        One posterior predictive evaluation per (grid point, subset ``B``, row),
        ``B`` empty giving the new cluster's ``log m_g(x)``; the terms are summed in
        linear space under a running shift per row (relative rounding error below
        ``(2**n + 4) eps`` for any grid, each term's own error apart). A row's value
        does not depend on the others. A row without a finite term (so far from the
        fitted rows at their scale that the predictive's standardised distance
        overflows, while the marginals ``m_g`` still hold) is summed from
        :meth:`reference_log_terms`, as :meth:`assignment_probabilities` does.
        """
        n_rows = data_new.shape[0]
        shift = np.full(n_rows, SHIFT_FLOOR)
        total, compensation = np.zeros(n_rows), np.zeros(n_rows)
        self._accumulate(data_new, shift, total, compensation, np.zeros(n_rows),
                         np.zeros((1, 1)), False)
        with np.errstate(divide="ignore"):   # no finite term: log(0) + SHIFT_FLOOR = -inf
            out = np.log(total + compensation) + shift - self.log_normaliser
        for row in np.flatnonzero(~np.isfinite(out)):
            with np.errstate(divide="ignore", invalid="ignore"):
                out[row] = (logsumexp(self.reference_log_terms(data_new[row:row + 1]))
                            - self.log_normaliser)
        return out

    def assignment_probabilities(self, data_new):
        """``P(x's cluster is B + {x} | X, x)`` of every bitmask ``B`` of the fitted rows.

        The posterior of the ``n + 1`` rows ``[X, x]`` over the new row's cluster:
        each term of :meth:`log_density`'s sum (grid point ``g``, subset ``B``)
        divided by ``p(x | X)``, summed over the grid. Column 0 (``B`` empty) is
        the probability that ``x`` opens a cluster of its own.

        Returns
        -------
        probs : ndarray of shape (n_new, 2**n)
            Rows sum to 1; a row of NaN where float64 holds no density of ``x``.
        """
        n_rows = data_new.shape[0]
        shift = np.full(n_rows, SHIFT_FLOOR)
        out = np.zeros((n_rows, 1 << self.data.shape[0]))
        self._accumulate(data_new, shift, np.zeros(1), np.zeros(1), np.zeros(1), out, True)
        sums = out.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out /= sums[:, None]
        for row in np.flatnonzero(~(sums > 0)):   # no term survived float64, or a NaN term
            terms = self.reference_log_terms(data_new[row:row + 1])
            top = terms.max()
            if not np.isfinite(top):
                out[row] = np.nan
                continue
            weights = np.exp(terms - top).sum(axis=0)
            out[row] = weights / weights.sum()
        return out

    def _accumulate(self, data_new, shift, total, compensation, partial, per_subset,
                    by_subset):
        """Run the kernel over the grid, a chunk of tabulated grid points at a time."""
        kernels = self._kernels()
        work = np.zeros(max(1, self.likelihood.work_size(self.data.shape[0] + 1)))
        for start, stop, tables, log_weights in self._grid_tables():
            kernels.accumulate_predictive(
                self.grid_params[start:stop], tables, log_weights, data_new, work, shift,
                total, compensation, partial, per_subset, by_subset)

    def _kernels(self):
        return predictive_kernels(self.likelihood)

    def _grid_tables(self):
        """Yield ``(start, stop, tables, log_weights)`` for chunks of grid points.

        ``tables[g - start, B]``: the tabulated predictive of ``X_B`` (``lik_table_row``);
        ``log_weights[g - start, B]``: ``log p(g | X)`` plus ``log w(|B|) P(B | X, g)``
        (``B`` empty: the new cluster's weight). The whole grid is kept when it takes
        at most ``PREDICTIVE_TABLE_BYTES``; otherwise chunks of that size (at least
        one grid point) are tabulated for the call and dropped.
        """
        tables = getattr(self, "_tables", None)
        if tables is not None:
            yield tables
            return
        n_grid, n_subsets = len(self.grid_params), 1 << self.data.shape[0]
        per_point = n_subsets * (self.likelihood.predictive_size + 1) * 8
        chunk = max(1, PREDICTIVE_TABLE_BYTES // per_point)
        for start in range(0, n_grid, chunk):
            stop = min(n_grid, start + chunk)
            tables = (start, stop, *self._tabulate(start, stop))
            if stop - start == n_grid:
                self._tables = tables
            yield tables

    def _tabulate(self, start, stop):
        """The tabulated predictive and log weights of grid points ``start..stop - 1``."""
        kernels = self._kernels()
        n_subsets = 1 << self.data.shape[0]
        tables = np.empty((stop - start, n_subsets, self.likelihood.predictive_size))
        stats = np.empty((n_subsets, self.likelihood.n_stats))   # one grid point's scratch
        work = np.zeros(max(1, self.likelihood.work_size(self.data.shape[0] + 1)))
        for offset, params in enumerate(self.grid_params[start:stop]):
            kernels.tabulate_subsets(np.ascontiguousarray(params, dtype=np.float64),
                                     self.data, work, stats, tables[offset])
        log_weights = np.empty((stop - start, n_subsets))
        log_weights[:, 0] = self.log_new_weights[start:stop]
        log_weights[:, 1:] = self._join_weights()[start:stop]
        log_weights += self.log_grid_weights[start:stop, None]
        return tables, log_weights

    # -- the previous algorithm: the reference of tests and benchmarks -----------------
    def reference_log_terms(self, row):
        """(G, 2**n) terms of :meth:`log_density`'s sum for one new row (shape (1, ...)),
        by the subset kernel: ``log m_g(x + X_B) - log m_g(X_B)`` from one pass over
        ``[x, X]`` per grid point (``O(G 2**n)`` marginals per row; the algorithm
        before the tabulated statistics, kept as their independent check)."""
        if getattr(self, "_reference_log_marginals", None) is None:
            self._reference_log_marginals = np.array([
                self.likelihood.subset_log_marginals(self.data, params)
                for params in self.grid_params])
        joined = np.concatenate([row, self.data])
        terms = np.array([self.likelihood.subset_log_marginals(joined, params,
                                                               with_first=True)[1::2]
                          for params in self.grid_params])
        terms -= self._reference_log_marginals
        terms[:, 0] += self.log_new_weights
        terms[:, 1:] += self._join_weights()
        return terms + self.log_grid_weights[:, None]


__all__ = ["GridMarginalPosterior", "ExactMixturePredictive"]
