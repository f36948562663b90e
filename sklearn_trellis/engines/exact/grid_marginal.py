"""Exact partition posterior of a conjugate mixture, marginalised over a hyperprior grid."""

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ...models.dp_mixture import MixturePartitionModel, subset_sizes
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
        self.tables_, self.trellises_, self._log_marginals = [], [], []
        log_evidence = np.empty(len(params))
        log_map = np.empty(len(params))
        for g, row in enumerate(params):
            log_marginals = self.likelihood.subset_log_marginals(self.model_._data, row)
            table = self.model_.log_potential_table(row, log_marginals)
            self._log_marginals.append(log_marginals)
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
        base, log_new = [], []
        for g in kept:
            trellis = self.trellises_[g]
            base.append(trellis.log_cluster_marginals()[1:] + log_join
                        - self._log_marginals[g][1:])
            if np.ptp(new_weights) == 0:   # the CRP: a new cluster's weight ignores K
                log_new.append(new_weights[0])
            else:
                with np.errstate(divide="ignore"):
                    log_new.append(logsumexp(np.log(trellis.n_clusters_distribution())
                                             + new_weights))
        return ExactMixturePredictive(
            likelihood=self.likelihood, data=self.model_._data,
            grid_params=self.grid_params[kept], log_grid_weights=self._log_grid_weights[kept],
            log_join_bases=np.array(base), log_new_weights=np.array(log_new),
            log_normaliser=float(np.log(n + self.prior.alpha)), prior=self.prior,
            max_items=self.max_items)

    def log_joints(self, samples):
        """``log p(z, X)`` of each sample, marginalised over the grid."""
        per_point = np.array([self.model_.log_joints(samples, table) for table in self.tables_])
        return logsumexp(per_point + self._log_prior[:, None], axis=0)


@dataclass
class ExactMixturePredictive:
    """``log p(x | X)`` of new rows, summed over the whole exact posterior.

    ``p(x | X) = sum_g p(g | X) [sum_B P(B | X, g) w(|B|) m_g(X_B + x) / m_g(X_B)
    + E[w_new(K) | X, g] m_g(x)] / (n + alpha)``: the Gibbs sampler's predictive of
    one partition (join a cluster or open one) averaged over every partition and
    grid point, which is ``p(X + x) / p(X)``.

    The table ``log_join_bases`` (grid points x ``2**n``: 6 MB at 12 rows on the
    default Gaussian grid of 186 points) is not pickled: it is rebuilt from the
    rows, the prior and the likelihood on first use after unpickling (one exact
    fit of the posterior, the same values bit for bit).
    """

    likelihood: object                  # the fitted ClusterLikelihood
    data: np.ndarray                    # (n, ...) the fitted rows (kernel data)
    grid_params: np.ndarray             # (G, n_params) grid points of positive weight
    log_grid_weights: np.ndarray        # (G,) log p(g | X)
    log_join_bases: np.ndarray          # (G, 2**n - 1) log [P(B | X, g) w(|B|) / m_g(X_B)]
    log_new_weights: np.ndarray         # (G,) log E[w_new(K) | X, g]
    log_normaliser: float               # log(n + alpha)
    prior: object = None                # the PartitionPrior (to rebuild log_join_bases)
    max_items: int = None               # the exact trellis's size limit (likewise)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["log_join_bases"] = None   # rebuilt on demand: _join_bases
        return state

    def _join_bases(self):
        """``log_join_bases``, rebuilt after unpickling by refitting the exact posterior."""
        if self.log_join_bases is None:
            rebuilt = GridMarginalPosterior(self.prior, self.likelihood,
                                            self.max_items).fit(self.data).predictive()
            self.log_join_bases = rebuilt.log_join_bases
        return self.log_join_bases

    def log_density(self, data_new):
        """``log p(x | X)`` of each row of ``data_new`` (kernel data, like ``data``).

        Per row and grid point one pass of the fit's subset kernel over the rows
        ``[x, X]``, the subsets holding ``x`` only: ``log m_g(x + X_B)`` of every
        ``B`` (``B`` empty: the new cluster's ``log m_g(x)``).
        """
        out = np.empty(data_new.shape[0])
        per_point = np.empty(len(self.grid_params))
        bases = self._join_bases()
        for row in range(data_new.shape[0]):
            with_x = self._joined_log_marginals(data_new[row:row + 1])
            for g in range(len(self.grid_params)):
                per_point[g] = self.log_grid_weights[g] + logsumexp(np.append(
                    bases[g] + with_x[g, 1:],
                    self.log_new_weights[g] + with_x[g, 0]))
            out[row] = logsumexp(per_point) - self.log_normaliser
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
        bases = self._join_bases()
        n_subsets = bases.shape[1] + 1
        out = np.empty((data_new.shape[0], n_subsets))
        for row in range(data_new.shape[0]):
            terms = self._joined_log_marginals(data_new[row:row + 1])
            terms[:, 0] += self.log_new_weights
            terms[:, 1:] += bases
            terms += self.log_grid_weights[:, None]
            top = terms.max()
            if not np.isfinite(top):
                out[row] = np.nan
                continue
            weights = np.exp(terms - top).sum(axis=0)
            out[row] = weights / weights.sum()
        return out

    def _joined_log_marginals(self, row):
        """(G, 2**n) ``log m_g(x + X_B)`` of the new row ``x`` (shape (1, ...)) joined to
        every subset ``B`` of the fitted rows (``B`` empty: ``log m_g(x)``)."""
        joined = np.concatenate([row, self.data])
        return np.array([self.likelihood.subset_log_marginals(joined, params,
                                                              with_first=True)[1::2]
                         for params in self.grid_params])


__all__ = ["GridMarginalPosterior", "ExactMixturePredictive"]
