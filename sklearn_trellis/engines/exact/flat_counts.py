"""Exact flat trellis for models with a factor depending on the number of clusters.

``log phi(C) = log_count[K] + sum_{B in C} e(B)``: the cluster log-potentials
``e`` factorise, the weights ``log_count`` of the number of clusters ``K`` do
not (Pitman-Yor: ``sum_{j<K} log(alpha + j d)``; Dirichlet-multinomial with
``k`` components: ``log k!/(k-K)!``). A count-resolved pass computes
``log Z_K`` (the partition function restricted to ``K`` clusters) for every
subset in ``O(N 3^N)`` time and ``O(N 2^N)`` memory; every exact quantity of
:class:`~sklearn_trellis.engines.ExactFlatTrellis` follows (``log Z``, MAP,
cluster / together / pairwise marginals, ``P(K)``, exact samples).
"""

import numpy as np

from ..._core.budget import check_exact_budget
from ..._core.subsets import superset_sums_inplace
from . import _flat_count_kernels as kernels
from .flat import ExactFlatTrellis, masks_to_labels

#: Default largest N (the tables hold ``2 (N + 1)`` doubles per subset).
DEFAULT_MAX_EXACT_COUNT = 18


class CountWeightedFlatTrellis:
    """Exact flat trellis of ``log phi(C) = log_count[K] + sum_B e(B)``.

    Parameters
    ----------
    log_potentials : ndarray of shape (2**N,)
        Cluster log-potentials ``e(B)`` by bitmask (entry 0 ignored).
    log_count : ndarray of shape (N + 1,)
        ``log_count[K]`` for ``K = 0..N`` (entry 0 ignored; ``-inf`` forbids ``K``).
    max_items : int, default=DEFAULT_MAX_EXACT_COUNT

    Attributes
    ----------
    log_partition_function, map_log_potential, map_labels
        As for :class:`ExactFlatTrellis`.
    log_z_by_n_clusters : ndarray of shape (N + 1,)
        ``log Z_K`` of all items without the count weights.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.exact.flat_counts import CountWeightedFlatTrellis
    >>> t = CountWeightedFlatTrellis(np.zeros(8), np.zeros(4)).fit()
    >>> np.round(np.exp(t.log_z_by_n_clusters[1:]))    # Stirling numbers S(3, K)
    array([1., 3., 1.])
    """

    def __init__(self, log_potentials, log_count, *, max_items=DEFAULT_MAX_EXACT_COUNT):
        table = np.asarray(log_potentials, dtype=np.float64)
        if table.ndim != 1 or table.size < 2 or table.size & (table.size - 1):
            raise ValueError("log_potentials must be a 1-d table of length 2**N with N >= 1, "
                             f"got shape {table.shape}.")
        if np.isnan(table[1:]).any() or np.isposinf(table[1:]).any():
            raise ValueError("log_potentials contains NaN or +inf.")
        self.n_items = table.size.bit_length() - 1
        counts = np.asarray(log_count, dtype=np.float64)
        if counts.shape != (self.n_items + 1,):
            raise ValueError(f"log_count must have N + 1 = {self.n_items + 1} entries, "
                             f"got shape {counts.shape}.")
        if np.isnan(counts).any() or np.isposinf(counts).any():
            raise ValueError("log_count contains NaN or +inf.")
        check_exact_budget(self.n_items, 16 * (self.n_items + 1) + 8, max_items=max_items,
                           what="count-resolved exact flat trellis")
        self.log_potentials = np.ascontiguousarray(table)
        self.log_count = np.ascontiguousarray(counts)

    @property
    def full(self):
        return (1 << self.n_items) - 1

    def fit(self):
        n = self.n_items
        size = 1 << n
        self._log_zk = np.full((size, n + 1), -np.inf)
        self._map_k = np.full((size, n + 1), -np.inf)
        self._log_zk[0, 0] = 0.0
        self._map_k[0, 0] = 0.0
        for lowest in range(n - 1, -1, -1):
            # sum over the layer's subsets S of (subsets of S) x (cluster counts): 3^free (N + 1)
            layer = kernels.count_layer.for_work(3 ** (n - 1 - lowest) * (n + 1))
            layer(self.log_potentials, self._log_zk, self._map_k, lowest, n)
        self.log_z_by_n_clusters = self._log_zk[self.full].copy()
        weighted = self.log_count + self.log_z_by_n_clusters
        weighted[0] = -np.inf
        finite = weighted[np.isfinite(weighted)]
        if finite.size == 0:
            raise ValueError("Every clustering has zero potential (log Z = -inf).")
        top = finite.max()
        self.log_partition_function = float(top + np.log(np.sum(np.exp(finite - top))))
        self._k_probs = np.exp(weighted - self.log_partition_function)
        best = self.log_count + self._map_k[self.full]
        best[0] = -np.inf
        k_best = int(np.argmax(best))
        self.map_log_potential = float(best[k_best])
        self.map_labels = masks_to_labels(
            list(kernels.count_map_clusters(self.log_potentials, self._map_k, self.full, k_best)),
            n)
        marginals = np.empty(size)
        cluster_marginals = kernels.count_cluster_marginals.for_work(size * (n + 1))
        cluster_marginals(self.log_potentials, self._log_zk, self.log_count,
                          self.log_partition_function, self.full, marginals)
        self._cluster = marginals.copy()
        self._together = superset_sums_inplace(marginals, n)
        return self

    # Marginal queries read the same tables as the plain engine's.
    _mask = ExactFlatTrellis._mask
    _together_table = ExactFlatTrellis._together_table   # ``fit`` always fills the table
    together_marginal = ExactFlatTrellis.together_marginal
    pairwise_marginals = ExactFlatTrellis.pairwise_marginals

    def cluster_marginal(self, indices):
        """Probability that exactly these items form one cluster."""
        return float(self._cluster[self._mask(indices)])

    def log_cluster_marginals(self):
        """``log P(B is a cluster)`` for every bitmask ``B`` (entry 0 is ``-inf``)."""
        with np.errstate(divide="ignore"):
            out = np.log(np.clip(self._cluster, 0.0, None))
        out[0] = -np.inf
        return out

    def n_clusters_distribution(self):
        """``P(K = k)`` for ``k = 1..N``."""
        probs = np.clip(self._k_probs[1:], 0.0, None)
        return probs / probs.sum()

    def sample(self, n_samples, random_state):
        """Exact draws: int array ``(n_samples, N)``, labels in order of first appearance."""
        probs = self.n_clusters_distribution()
        ks = random_state.choice(np.arange(1, self.n_items + 1), size=n_samples, p=probs)
        uniforms = random_state.random_sample((n_samples, self.n_items))
        # each draw walks at most N clusters, each chosen among the subsets of what is left
        draws = kernels.count_sample_partitions.for_work(n_samples * (1 << self.n_items))
        return draws(self.log_potentials, self._log_zk, self.full, self.n_items,
                     ks.astype(np.int64), uniforms)


__all__ = ["CountWeightedFlatTrellis"]
