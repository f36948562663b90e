"""Exact flat cluster trellis: every quantity of a flat model over all subsets.

The engine takes the table of cluster log-potentials ``e(B)`` of any flat model
(``log phi(C) = const + sum_{B in C} e(B)``) and knows nothing else about it.
One ``O(3^N)`` pass computes the log partition function and the MAP value of
every subset (Greenberg et al. 2018, Facts 1 and 3); cluster marginals
(Section 3.3), "together" marginals (superset sums, ``O(N 2^N)``), the
number-of-clusters distribution and exact samples follow from the tables.

Speed and precision: see ``_flat_passes``. In short, each layer of subsets
(those with the same highest item) is one cache-blocked subset convolution,
in linear space when the layer's value range allows it and in log space
otherwise; no potential over- or underflows, any ``beta`` and ``-inf``
entries are exact to rounding, and marginals carry absolute errors below
``1e-12`` (checked against enumeration in the tests).
"""

import numpy as np

from ..._core.budget import HARD_MAX_ITEMS, NS_PER_STEP, check_exact_budget
from ..._core.progress import Progress
from ..._core.subsets import checked_mask, members
from . import _flat_kernels as kernels
from ._flat_passes import map_pass, n_clusters_pass, partition_pass, together_marginals

#: Bytes kept per subset at the peak of ``fit``: cluster log-potentials, log Z,
#: one working table (MAP values, then "together" marginals) and a scratch
#: table of half a subset (linear weights of one layer).
BYTES_PER_SUBSET = 28

#: Default largest N for the exact flat trellis.
DEFAULT_MAX_EXACT_FLAT = 22


def masks_to_labels(cluster_masks, n_items):
    """Label vector (labels in order of first appearance) from cluster masks."""
    labels = np.full(n_items, -1, dtype=np.int64)
    ordered = sorted(cluster_masks, key=lambda m: m & -m)
    for label, mask in enumerate(ordered):
        labels[members(mask)] = label
    return labels


#: Bytes per subset of :func:`exact_flat_map`: cluster log-potentials and MAP values.
MAP_BYTES_PER_SUBSET = 16


def _checked_table(log_potentials):
    """``(table, N)`` of a cluster log-potential table over all ``2**N`` bitmasks."""
    table = np.asarray(log_potentials, dtype=np.float64)
    if table.ndim != 1 or table.size < 2 or table.size & (table.size - 1):
        raise ValueError(
            "log_potentials must be a 1-d table of length 2**N with N >= 1, "
            f"got shape {table.shape}.")
    if np.isnan(table[1:]).any() or np.isposinf(table[1:]).any():
        raise ValueError("log_potentials contains NaN or +inf.")
    return table, table.size.bit_length() - 1


def exact_flat_map(log_potentials, *, max_items=DEFAULT_MAX_EXACT_FLAT):
    """The MAP clustering alone, by the max-product half of the trellis pass.

    About half the time and memory of :meth:`ExactFlatTrellis.fit`, which also
    computes ``log Z`` and the marginals; for repeated MAP problems such as
    Perturb-and-MAP.

    Parameters
    ----------
    log_potentials : ndarray of shape (2**N,)
        Cluster log-potentials ``e(B)`` as for :class:`ExactFlatTrellis`.
    max_items : int, default=DEFAULT_MAX_EXACT_FLAT
        Refuse (before allocating) if ``N`` exceeds this.

    Returns
    -------
    map_log_potential : float
        ``sum of e(B)`` over the clusters of the MAP clustering.
    labels : ndarray of shape (N,)
        The MAP clustering, labels in order of first appearance (the same
        clustering as ``ExactFlatTrellis.map_labels``, ties included).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.exact.flat import exact_flat_map
    >>> e = np.array([0.0, 0.0, 0.0, 1.0])   # items 0 and 1 gain 1 together
    >>> exact_flat_map(e)
    (1.0, array([0, 0]))
    """
    table, n = _checked_table(log_potentials)
    check_exact_budget(n, MAP_BYTES_PER_SUBSET, max_items=max_items,
                       what="exact flat MAP", ns_per_step=NS_PER_STEP / 2)
    table = np.ascontiguousarray(table)
    map_value = np.empty(table.size)
    map_pass(table, map_value, n)
    full = table.size - 1
    if not np.isfinite(map_value[full]):
        raise ValueError("Every clustering has zero potential: the model forbids all "
                         "clusterings.")
    clusters = kernels.map_clusters(table, map_value, full)
    return float(map_value[full]), masks_to_labels(list(clusters), n)


class ExactFlatTrellis:
    """The full cluster trellis of ``N`` items for one flat model.

    Parameters
    ----------
    log_potentials : ndarray of shape (2**N,)
        ``log_potentials[B]`` is the cluster log-potential ``e(B)`` of the
        subset with bitmask ``B``; entry 0 is ignored. ``-inf`` forbids a cluster.
    max_items : int, default=DEFAULT_MAX_EXACT_FLAT
        Refuse (before allocating) if ``N`` exceeds this.
    verbose : int, default=0
        Print progress of the ``O(3^N)`` pass when positive (a line at most
        every 10 s, :class:`~sklearn_trellis._core.progress.Progress`).
    progress : Progress, optional
        Reporter to use instead of one built from ``verbose`` (an estimator
        passes its own, so that all the lines of its fit share one prefix).

    Attributes
    ----------
    n_items : int
    log_partition_function : float
        ``log Z`` of all items (without the model's additive constant).
    map_log_potential : float
        ``sum of e(B)`` over the clusters of the MAP clustering.
    map_labels : ndarray of shape (N,)
        The MAP clustering, labels in order of first appearance.
    log_z : ndarray of shape (2**N,)
        ``log Z`` of every subset.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines import ExactFlatTrellis
    >>> e = np.zeros(2 ** 3)          # every clustering equally likely
    >>> trellis = ExactFlatTrellis(e).fit()
    >>> round(float(np.exp(trellis.log_partition_function)))   # Bell(3)
    5
    """

    def __init__(self, log_potentials, *, max_items=DEFAULT_MAX_EXACT_FLAT, verbose=0,
                 progress=None):
        table, self.n_items = _checked_table(log_potentials)
        check_exact_budget(self.n_items, BYTES_PER_SUBSET, max_items=max_items,
                           what="exact flat trellis")
        self.log_potentials = np.ascontiguousarray(table)
        self.verbose = verbose
        self.progress = progress
        # Tests set this to False to force every layer into log space.
        self._linear = True

    @property
    def full(self):
        """Bitmask of all items."""
        return (1 << self.n_items) - 1

    def fit(self, *, map_clustering=True, marginals=True):
        """Run the ``O(3^N)`` pass, the MAP back-track and the marginal tables.

        Parameters
        ----------
        map_clustering : bool, default=True
            Compute the MAP (``map_log_potential``, ``map_labels``). Without
            it the pass does only the ``log Z`` convolutions (about half the
            work of a layer in linear space): for callers that need ``log Z``
            and marginals alone, such as empirical Bayes.
        marginals : bool, default=True
            Compute the "together" marginals table (``O(N 2**N)``), which
            :meth:`together_marginal` and :meth:`pairwise_marginals` read,
            now; without it, on the first of them called (for callers that
            need ``log Z`` alone from most fits).

        Returns
        -------
        self : ExactFlatTrellis
        """
        n = self.n_items
        size = 1 << n
        self.log_z = np.empty(size)
        work = np.empty(size)
        scratch = np.empty(size >> 1)
        self._linear_layers = partition_pass(self.log_potentials, self.log_z, work,
                                             scratch, n, self._linear, self._progress(),
                                             with_map=map_clustering)
        del scratch
        self.log_partition_function = float(self.log_z[self.full])
        if not np.isfinite(self.log_partition_function):
            raise ValueError("Every clustering has zero potential (log Z = -inf): "
                             "the model forbids all clusterings.")
        if map_clustering:
            self.map_log_potential = float(work[self.full])
            clusters = kernels.map_clusters(self.log_potentials, work, self.full)
            self.map_labels = masks_to_labels(list(clusters), n)
        self._together = None
        if marginals:
            # The MAP table is no longer needed: reuse it for the marginals.
            self._together = together_marginals(self.log_potentials, self.log_z,
                                                self.full, n, work)
        return self

    def _progress(self):
        """The pass's callback ``f(highest item done)``: throttled progress lines."""
        progress = (self.progress if self.progress is not None
                    else Progress(type(self).__name__, self.verbose))
        if not progress.verbose:
            return None
        n = self.n_items

        def report(highest):
            if progress.due():
                done = (3.0 ** (highest + 1) - 1) / (3.0 ** n - 1)
                progress.update(highest + 1, n, f"items ({100 * done:.1f}% of the work)")
        return report

    # -- marginals ---------------------------------------------------------
    def _mask(self, indices):
        return checked_mask(indices, self.n_items)

    def cluster_marginal(self, indices):
        """Probability that exactly these items form one cluster."""
        mask = self._mask(indices)
        value = (self.log_potentials[mask] + self.log_z[self.full ^ mask]
                 - self.log_partition_function)
        return float(np.exp(value))

    def log_cluster_marginals(self):
        """``log P(B is a cluster)`` for every bitmask ``B`` (entry 0 is ``-inf``)."""
        masks = np.arange(1 << self.n_items)
        out = (self.log_potentials + self.log_z[self.full ^ masks]
               - self.log_partition_function)
        out[0] = -np.inf
        return out

    def _together_table(self):
        """The "together" marginals table, computed on first use after
        ``fit(marginals=False)``."""
        if self._together is None:
            self._together = together_marginals(self.log_potentials, self.log_z, self.full,
                                                self.n_items, np.empty(1 << self.n_items))
        return self._together

    def together_marginal(self, indices):
        """Probability that all these items share a cluster."""
        return float(min(1.0, self._together_table()[self._mask(indices)]))

    def pairwise_marginals(self):
        """``P(i and j in the same cluster)`` for all pairs; ones on the diagonal."""
        n = self.n_items
        out = np.ones((n, n))
        together = self._together_table()
        for i in range(n):
            for j in range(i + 1, n):
                out[i, j] = out[j, i] = together[(1 << i) | (1 << j)]
        np.clip(out, 0.0, 1.0, out=out)
        return out

    def n_clusters_distribution(self):
        """``P(K = k)`` for ``k = 1..N``, as an array of length ``N``.

        Costs one more ``O(3^N)`` pass (one blocked convolution per ``k`` for
        the layers in linear space, a vector over ``k`` per term otherwise) and
        about ``(N + 1) * 4.5 + 16`` more bytes per subset while it runs.
        """
        if self.n_items == 1:
            return np.ones(1)
        check_exact_budget(self.n_items, BYTES_PER_SUBSET + (self.n_items + 1) * 4.5 + 16,
                           max_items=HARD_MAX_ITEMS, what="number-of-clusters pass")
        out, self._n_clusters_linear_layers = n_clusters_pass(
            self.log_potentials, self.log_z, self.n_items, self._linear)
        out = np.clip(out[1:], 0.0, None)
        return out / out.sum()

    def sample(self, n_samples, random_state):
        """Exact posterior draws: int array ``(n_samples, N)`` of labels."""
        uniforms = random_state.random_sample((n_samples, self.n_items))
        return kernels.sample_partitions(self.log_potentials, self.log_z, self.full,
                                         self.n_items, uniforms)
