"""Point estimates minimising a posterior expected loss (SALSO-style search, or over the draws).

Losses (names as salso's, case-insensitive, ``.`` read as ``_``), with what
their posterior expected value needs:

- ``'binder'``: Binder's loss with costs ``a`` (split) and ``b`` (join),
  :func:`~sklearn_trellis.summaries.binder_loss`; samples or ``P``;
- ``'vi'``: generalised variation of information (split weight ``a``),
  :func:`~sklearn_trellis.summaries.variation_of_information`; samples;
- ``'omari'``: one minus the adjusted Rand index; samples;
- ``'nvi'``: normalised VI; samples;
- ``'nid'``: normalised information distance; samples;
- ``'omari_approx'``: ``1 - PEAR`` (Fritsch & Ickstadt 2009), salso's
  ``omARI.approx``; samples or ``P``;
- ``'vi_lb'``: Wade & Ghahramani's (2018) lower bound of the expected VI,
  salso's ``VI.lb``; samples or ``P``.

``P`` is the (n, n) matrix of pairwise co-clustering probabilities, e.g. the
exact ``pairwise_marginals_`` of an exact engine. An exact posterior given by its
cluster marginals ``P(B is a cluster)`` (:class:`ClusterMarginals`) has exact
expected Binder and VI losses (see there); the other contingency losses are not
sums over the clusters and need samples. Conventions: all sums over
unordered pairs, natural logarithms, no normalisation by ``n**2`` (salso
divides Binder by ``n**2 / 2`` and uses ``log2``; see :func:`binder_loss` and
:func:`variation_of_information` for the exact correspondence).
"""

import numbers

import numpy as np
from joblib import Parallel, delayed

from .._core.interpreted import call
from .._core.labels import canonical_rows, first_appearance_labels, set_partitions
from .._core.subsets import membership_table
from .._core.validation import check_option, check_random_state, check_scalar_param
from ._input import as_sample_set, check_labels, relabel_rows, sample_major
from ._kernels import cooccurrence_counts, xlogx_table
from ._loss_kernels import (BINDER, BINDER_PSM, N_CONTINGENCY_KINDS, NID, NVI, OMARI, OMARI_APPROX,
                            VI, VI_LB, loss_kernels)
from .metrics import check_costs

#: Loss names and their kernel kind; Binder switches to its pairwise form on ``P``.
LOSSES = {"binder": BINDER, "vi": VI, "omari": OMARI, "nvi": NVI, "nid": NID,
          "omari_approx": OMARI_APPROX, "vi_lb": VI_LB}
#: Losses that are functions of ``P`` alone (computable from a pairwise matrix).
PAIRWISE_LOSSES = {"binder", "omari_approx", "vi_lb"}

# The search ends with an exhaustive check over all Bell(n) partitions when
# n <= _EXHAUSTIVE_MAX_N and Bell(n) * (U * n or n * n) is at most this (U distinct samples).
_EXHAUSTIVE_WORK = 2 * 10 ** 7
_EXHAUSTIVE_MAX_N = 10

# Distinct sampled partitions scored as candidates: at most this many
# contingency (candidates * T * n) or pairwise (candidates * n * n) entries.
_CANDIDATE_WORK = 5 * 10 ** 7

#: Losses whose kernels may run their own Python source on small inputs
#: (:mod:`~sklearn_trellis._core.interpreted`): Binder's and VI's only add, multiply
#: and compare entries of a compiled ``x log x`` table, the same operations in the
#: same order, so the same values bit for bit (the other losses take logarithms).
_INTERPRETABLE_KINDS = (BINDER, VI)

#: Up to this many candidates x distinct samples x elements, Binder's and VI's losses of
#: the candidates run interpreted: about 0.3 s, against about 1 s of CPU to compile.
INTERPRETED_LOSS_WORK = 250_000

#: Up to this many elements x samples x searches (runs), Binder's and VI's search runs
#: interpreted: about 0.3 s at 40 elements, 200 samples and one run (an estimator's
#: labels), against about 2.5 s of CPU to compile.
INTERPRETED_SEARCH_WORK = 10_000

#: Up to this many labels, the samples are renumbered interpreted (integers only).
INTERPRETED_LABEL_ENTRIES = 100_000

#: Up to this many entries, the ``x log x`` table is filled interpreted (about 3 ms,
#: against 0.15 s of CPU to compile): ``k * math.log(k)``, the C library's ``log``
#: that numba's kernel calls too, the same values bit for bit (the tests compare
#: every size up to this one).
INTERPRETED_TABLE_SIZE = 10_000


def loss_name(loss):
    """Canonical loss name: lower case, ``.`` read as ``_`` (salso's ``'VI.lb'`` is ``'vi_lb'``)."""
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, got {type(loss).__name__}.")
    name = loss.lower().replace(".", "_")
    check_option(name, "loss", set(LOSSES))
    return name


def check_loss_parameters(loss, a, b):
    """Validate ``a`` (and ``b`` for Binder)."""
    check_costs(a, b)
    if loss == "vi" and a > 2:
        raise ValueError(f"a must lie in [0, 2] for the generalised VI, got {a!r}.")


#: Why a square float array met the pairwise checks (label samples in floats do).
PAIRWISE_HINT = (" A float (n, n) array is read as a pairwise matrix: pass a sample set of "
                 "n label vectors as an int array (e.g. samples.astype(int)).")


def check_pairwise(pairwise):
    """A pairwise co-clustering probability matrix, checked, as floats in ``[0, 1]``.

    Raises ValueError unless the matrix is finite, within ``[0, 1]`` (up to
    rounding), symmetric and, if 2-D, with a unit diagonal.
    """
    pairwise = np.asarray(pairwise, dtype=np.float64)
    if not np.all(np.isfinite(pairwise)):
        raise ValueError("The pairwise matrix contains NaN or infinite values."
                         + PAIRWISE_HINT)
    if np.any(pairwise < -1e-12) or np.any(pairwise > 1 + 1e-12):
        raise ValueError("Pairwise co-clustering probabilities must lie in [0, 1]."
                         + PAIRWISE_HINT)
    if not np.allclose(pairwise, pairwise.T, atol=1e-10):
        raise ValueError("The pairwise co-clustering matrix must be symmetric."
                         + PAIRWISE_HINT)
    if pairwise.ndim == 2 and not np.allclose(np.diag(pairwise), 1.0, rtol=0, atol=1e-10):
        # a co-clustering matrix has P_ii = 1; anything else is another matrix (a distance?)
        raise ValueError("The pairwise co-clustering matrix must have a unit diagonal "
                         "(an element is always with itself), got diagonal entries in "
                         f"[{np.diag(pairwise).min():.3g}, {np.diag(pairwise).max():.3g}]."
                         + PAIRWISE_HINT)
    pairwise = np.clip(pairwise, 0.0, 1.0)
    np.fill_diagonal(pairwise, 1.0)  # rounding only
    return np.ascontiguousarray(pairwise)


def _canonical_rows(rows):
    return call(canonical_rows, rows, small=rows.size <= INTERPRETED_LABEL_ENTRIES)


def _xlogx_table(size):
    return call(xlogx_table, size, small=size <= INTERPRETED_TABLE_SIZE)


def contingency_losses(candidates, samples, kind, a, b):
    """(C, T) losses of each candidate (int64 labels ``0..K-1``) against each sample
    (canonical int32 ``(T, n)``) for a contingency loss ``kind``.

    The kernel ``cm_losses`` scores each distinct sample once (a loss depends on the
    sample's labels alone: its column is repeated, the same values), interpreted on
    small inputs for Binder and VI (:data:`INTERPRETED_LOSS_WORK`).
    """
    firsts, inverse = _distinct_rows(samples)
    small = (kind in _INTERPRETABLE_KINDS
             and candidates.size * len(firsts) <= INTERPRETED_LOSS_WORK)
    losses = call(loss_kernels(kind).cm_losses, candidates, samples[firsts], kind, float(a),
                  float(b), _xlogx_table(samples.shape[1] + 2), small=small)
    return losses[:, inverse]


def _distinct_rows(rows):
    """``(firsts, inverse)``: the first row of each distinct row, in order of first
    appearance, and the distinct row of each row (``rows[firsts][inverse]`` is ``rows``)."""
    index, firsts = {}, []
    inverse = np.empty(rows.shape[0], np.int64)
    for t, row in enumerate(rows):
        key = row.tobytes()
        distinct = index.get(key)
        if distinct is None:
            distinct = index[key] = len(firsts)
            firsts.append(t)
        inverse[t] = distinct
    return np.array(firsts, np.int64), inverse


#: The losses whose posterior expectation is a sum over the reference's clusters, so
#: exact from :class:`ClusterMarginals` (linear in the contingency sums).
CLUSTER_SUM_LOSSES = {"binder", "vi"}


class ClusterMarginals:
    """A posterior over partitions given by its cluster marginals ``P(B is a cluster)``.

    The expected loss of Binder and VI is exact from them. Per reference
    partition ``pi`` both are linear in sums over its clusters ``S`` of a
    function ``f(|S|)`` and over its clusters and the estimate's ``A`` of
    ``g(|A n S|)`` (``f = g = x log x`` for VI, ``C(x, 2)`` for Binder), so
    ``E[sum_{S in pi} f(|S|)] = sum_S P(S) f(|S|)``. Both vanish on
    singletons (``f(1) = f(0) = 0``), so the expectation is the weighted mean
    of the losses against *pseudo-samples*: for each subset ``S`` of two or
    more items, the partition ``{S}`` plus singletons with weight ``P(S)``,
    and all singletons with weight ``1 - sum_S P(S)`` (possibly negative: the
    weights then sum to 1 and carry the estimate's own terms once). The
    search and the exhaustive check of :func:`point_estimate` run on them.

    Parameters
    ----------
    probabilities : ndarray of shape (2**n,)
        ``P(B is a cluster)`` of every bitmask ``B`` of the ``n`` items (bit
        ``i``: item ``i``); entries of the empty set and of singletons are not read.
    candidates : array-like of shape (C, n), default=None
        Partitions the search also starts from (e.g. the exact MAP), as labels.
    """

    def __init__(self, probabilities, candidates=None):
        probabilities = np.asarray(probabilities, dtype=np.float64)
        size = probabilities.shape[0] if probabilities.ndim == 1 else 0
        if size < 2 or size & (size - 1):
            raise ValueError("Cluster marginals are a vector of 2**n probabilities (one per "
                             f"bitmask of n items); got shape {probabilities.shape}.")
        if not np.all(np.isfinite(probabilities)) or np.any(probabilities < -1e-12) \
                or np.any(probabilities > 1 + 1e-12):
            raise ValueError("Cluster marginals must be probabilities in [0, 1].")
        self.n = size.bit_length() - 1
        self.probabilities = np.clip(probabilities, 0.0, 1.0)
        self.candidates = (np.zeros((0, self.n), np.int64) if candidates is None
                           else np.atleast_2d(np.asarray(candidates, dtype=np.int64)))
        if self.candidates.shape[1] != self.n:
            raise ValueError(f"candidates have {self.candidates.shape[1]} entries for "
                             f"{self.n} items.")

    def pseudo_samples(self):
        """``(samples, weights)``: canonical int32 labels (T, n) and their weights (sum 1)."""
        n = self.n
        members = membership_table(n)
        keep = (members.sum(axis=1) >= 2) & (self.probabilities > 0)
        labels = np.where(members[keep] > 0, n, np.arange(n))
        labels = np.vstack([labels, np.arange(n)])           # the all-singletons partition
        weights = self.probabilities[keep]
        weights = np.append(weights, 1.0 - weights.sum())
        return _canonical_rows(labels.astype(np.int64)).astype(np.int32), weights

    def pairwise(self):
        """``P(i and j share a cluster) = sum_{S ni i, j} P(S)``."""
        members = membership_table(self.n).astype(float)
        out = (members * self.probabilities[:, None]).T @ members
        np.fill_diagonal(out, 1.0)
        return check_pairwise(out)


class Target:
    """What the expected loss is taken over: sampled partitions and/or ``P``.

    A float (n, n) array is read as a pairwise matrix, a :class:`ClusterMarginals`
    as weighted pseudo-samples, anything else as a sample set of partitions. ``P``
    is computed from the samples when a pairwise loss needs it.
    """

    def __init__(self, samples_or_pairwise):
        value = samples_or_pairwise
        self.weights = None   # equal weights (a mean over the samples)
        if isinstance(value, ClusterMarginals):
            self.samples, self.weights = value.pseudo_samples()
            self._pairwise = None
            self._marginals = value
            self.n = value.n
            self.n_sample_blocks = int(self.samples.max()) + 1
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.ndim == 2 \
                and value.shape[0] == value.shape[1]:
            self.samples = None
            self._pairwise = check_pairwise(value)
            self.n = value.shape[0]
        else:
            if isinstance(value, np.ndarray) and value.ndim == 2 and value.dtype.kind in "iu" \
                    and value.size and value.min() >= 0 and value.max() < 4 * value.shape[1] + 64:
                # the common case, fast: non-negative int labels (T, n)
                self.samples = _canonical_rows(
                    np.ascontiguousarray(value, dtype=np.int64)).astype(np.int32)
                self._sample_set = None
            else:
                sample_set = as_sample_set(value)
                labels = sample_set.labels  # raises for feature allocations
                self.samples = _canonical_rows(relabel_rows(labels)[0]).astype(np.int32)
                self._sample_set = sample_set
            self.n_sample_blocks = int(self.samples.max()) + 1
            self._pairwise = None
            self.n = self.samples.shape[1]

    @property
    def pairwise(self):
        if self._pairwise is None and self.weights is not None:
            self._pairwise = self._marginals.pairwise()
        if self._pairwise is None:
            if self._sample_set is None:
                self._sample_set = as_sample_set(self.samples)
            by_sample = sample_major(self._sample_set)
            counts = cooccurrence_counts.for_work(by_sample.size * by_sample.shape[1])(by_sample)
            self._pairwise = check_pairwise(counts / self.samples.shape[0])
        return self._pairwise

    @property
    def samples_t(self):
        """Element-major (n, T) samples, the search's layout."""
        if getattr(self, "_samples_t", None) is None:
            self._samples_t = np.ascontiguousarray(self.samples.T)
        return self._samples_t

    def kind(self, loss):
        if loss == "binder" and self.samples is None:
            return BINDER_PSM
        if self.samples is None and loss not in PAIRWISE_LOSSES:
            raise ValueError(f"loss={loss!r} needs the samples, not a pairwise matrix: its "
                             "expected value is not a function of P(i, j together).")
        if self.weights is not None and loss not in CLUSTER_SUM_LOSSES | PAIRWISE_LOSSES:
            raise ValueError(f"loss={loss!r} needs the samples, not cluster marginals: its "
                             "expected value is not a sum over the clusters.")
        return LOSSES[loss]

    def losses(self, candidates, loss, a=1.0, b=1.0):
        """Expected loss of each row of ``candidates`` (canonical labels ``0..K-1``)."""
        kind = self.kind(loss)
        kernels = loss_kernels(kind)
        candidates = np.ascontiguousarray(candidates, dtype=np.int64)
        if kind < N_CONTINGENCY_KINDS:
            losses = contingency_losses(candidates, self.samples, kind, a, b)
            return losses.mean(axis=1) if self.weights is None else losses @ self.weights
        return kernels.psm_losses(candidates, self.pairwise, kind, float(a), float(b))

    def distinct_samples(self):
        """Distinct sampled partitions (canonical), most frequent first (cluster
        marginals: their candidates)."""
        if self.weights is not None:
            return np.unique(_canonical_rows(self._marginals.candidates), axis=0)
        # rows are canonical: equal bytes, equal partitions
        firsts, inverse = _distinct_rows(self.samples)
        by_count = np.argsort(-np.bincount(inverse), kind="stable")  # ties: first appearance
        return self.samples[firsts[by_count]].astype(np.int64)


def expected_loss(samples_or_pairwise, labels, loss="binder", *, a=1.0, b=1.0):
    """Posterior expected loss of the clustering ``labels``.

    The mean over the samples of the loss between each sample (the reference)
    and ``labels`` (the estimate); for the pairwise losses (``'binder'``,
    ``'omari_approx'``, ``'vi_lb'``) its value from ``P``. Binder:
    ``sum_{i<j} [a P_ij (1 - c_ij) + b (1 - P_ij) c_ij]`` with ``c_ij = 1`` when
    ``labels`` puts ``i`` and ``j`` together.

    Parameters
    ----------
    samples_or_pairwise : sample set, ndarray of shape (n, n) or ClusterMarginals
        As in :func:`point_estimate`.
    labels : array-like of shape (n,)
    loss : str, default='binder'
        One of :data:`LOSSES` (see the module docstring).
    a, b : float, default=1.0
        Binder's costs (``a`` split, ``b`` join); ``a`` of the generalised VI.

    Returns
    -------
    expected_loss : float
    """
    loss = loss_name(loss)
    check_loss_parameters(loss, a, b)
    target = Target(samples_or_pairwise)
    labels = first_appearance_labels(check_labels(labels))
    if labels.size != target.n:
        raise ValueError(f"labels has {labels.size} entries for {target.n} elements.")
    return float(target.losses(labels[None], loss, a, b)[0])


def _bell(n):
    """Number of partitions of ``n`` items (Bell triangle)."""
    row = [1]
    for _ in range(n - 1):
        new = [row[-1]]
        for value in row:
            new.append(new[-1] + value)
        row = new
    return row[-1]


def _distinct_with_weights(target):
    """Distinct sampled partitions (canonical rows) and their frequencies (or weights)."""
    if target.weights is not None:   # the pseudo-samples are distinct
        return target.samples, target.weights
    rows, counts = np.unique(target.samples, axis=0, return_counts=True)
    return np.ascontiguousarray(rows), counts / target.samples.shape[0]


def exhaustive_is_cheap(target, kind):
    """True when :func:`exhaustive_minimum` scores every partition within the work budget."""
    n = target.n
    if n > _EXHAUSTIVE_MAX_N:
        return False
    work = (_distinct_with_weights(target)[0].shape[0] * n if kind < N_CONTINGENCY_KINDS
            else n * n)
    return _bell(n) * work <= _EXHAUSTIVE_WORK


def exhaustive_minimum(target, kind, a, b, max_clusters):
    """``(labels, value)``: the partition of smallest expected loss among all of them
    (at most ``max_clusters`` clusters; the first in lexicographic order among ties)."""
    partitions = set_partitions(target.n, max_clusters)
    kernels = loss_kernels(kind)
    if kind < N_CONTINGENCY_KINDS:  # the distinct samples, weighted by their frequency
        rows, weights = _distinct_with_weights(target)

        def losses(candidates):
            return contingency_losses(candidates, rows, kind, a, b) @ weights
    else:
        rows = np.zeros(0)

        def losses(candidates):
            return kernels.psm_losses(candidates, target.pairwise, kind, float(a), float(b))
    chunk = max(1, (1 << 22) // max(rows.shape[0], target.n))  # tables of 32 MiB at most
    best, best_value = 0, np.inf
    for start in range(0, partitions.shape[0], chunk):
        values = losses(partitions[start:start + chunk])
        k = int(np.argmin(values))
        if values[k] < best_value:
            best, best_value = start + k, float(values[k])
    return partitions[best], best_value


def _one_run(kind, target, start, seed, loss, a, b, max_sweeps, max_clusters,
             max_zealous_updates, small):
    """Sequential allocation + sweetening from ``start``, then zealous updates
    (interpreted if ``small``)."""
    rng = np.random.default_rng(seed)
    n = target.n
    samples_t = target.samples_t if kind < N_CONTINGENCY_KINDS else np.zeros((1, 1), np.int32)
    pairwise = target.pairwise if kind >= N_CONTINGENCY_KINDS else np.zeros((1, 1))
    n_blocks = target.n_sample_blocks if kind < N_CONTINGENCY_KINDS else 1
    weights = (target.weights if kind < N_CONTINGENCY_KINDS and target.weights is not None
               else np.zeros(0))
    greedy_search = loss_kernels(kind).greedy_search
    xl = _xlogx_table(n + 2)

    def search(labels, sweeps):
        order = rng.permutation(n).astype(np.int64)
        labels, value = call(greedy_search, kind, labels, order, pairwise, samples_t, weights,
                             n_blocks, sweeps, max_clusters, float(a), float(b), xl,
                             small=small)
        return first_appearance_labels(labels), value

    labels, value = search(np.asarray(start, np.int64).copy(), max_sweeps)
    # Zealous updates (Dahl et al. 2022): dissolve a whole cluster, reallocate
    # its elements one by one, and keep the result if it is better.
    for _ in range(max_zealous_updates):
        n_clusters = labels.max() + 1
        if n_clusters < 2:
            break
        trial = labels.copy()
        trial[trial == rng.integers(n_clusters)] = -1
        trial, trial_value = search(trial, 0)
        if trial_value < value - 1e-12 * max(1.0, abs(value)):
            labels, value = trial, trial_value
    return labels, value


def point_estimate(samples_or_pairwise, loss="binder", *, a=1.0, b=1.0, method="salso",
                   n_runs=10, max_sweeps=100, max_zealous_updates=10, max_n_clusters=None,
                   n_jobs=None, random_state=None, return_loss=False):
    """Clustering minimising a posterior expected loss (SALSO-style search or over the draws).

    The expected loss is estimated from the sample set (or, for the pairwise
    losses, read from a pairwise co-clustering matrix, e.g. exact
    ``pairwise_marginals_``). Losses: ``'binder'`` (costs ``a`` for splitting
    a pair that belongs together, ``b`` for joining one that does not),
    ``'vi'`` (generalised VI, split weight ``a``), ``'omari'``, ``'nvi'``,
    ``'nid'``, ``'omari_approx'``, ``'vi_lb'``; see the module docstring.
    salso's spellings (``'VI.lb'``, ``'omARI.approx'``, ``'NID'``) are accepted.

    ``method='salso'`` (Dahl, Johnson & Müller 2022): ``n_runs`` sequential
    allocations in random orders, plus one run started from the sampled
    partition of smallest expected loss; each is followed by sweetening sweeps
    (single-element moves while the expected loss strictly decreases) and
    ``max_zealous_updates`` zealous updates (dissolve a random cluster,
    reallocate its elements sequentially, keep the result if better). Runs are independent
    (``n_jobs`` threads); the best result is returned. ``method='draws'``:
    the sampled partition of smallest expected loss (``mcclust``'s ``draws``).

    Guarantee: for ``n <= 10`` items, whenever ``Bell(n) * U * n <= 2e7``
    (losses of the samples; ``U`` distinct sampled partitions) or
    ``Bell(n) * n**2 <= 2e7`` (losses from ``P``), e.g. always for
    ``n <= 7`` with up to 3,000 distinct samples, the search ends with an exhaustive check over all
    ``Bell(n)`` partitions (with at most ``max_n_clusters`` clusters): the
    estimate is then an exact minimiser of the expected loss (up to rounding,
    ties to the search's result). Otherwise it is a local optimum: no
    single-element move improves it, and with samples its expected loss is
    never above that of any sampled partition scored (all distinct samples
    unless ``distinct * T * n > 5e7``). For an *exact* Binder estimate from
    exact pairwise marginals at larger ``n`` see
    :func:`sklearn_trellis.engines.exact.binder_point_estimate`.

    Parameters
    ----------
    samples_or_pairwise : sample set, ndarray of shape (n, n) or ClusterMarginals
        An int array (T, n) of label vectors (elements are the columns) or a
        list of partitions as lists of blocks; or a float (n, n) matrix of
        pairwise co-clustering probabilities (pairwise losses only). A float
        array is always read as a pairwise matrix. Or an exact posterior's
        :class:`ClusterMarginals` (Binder, VI and the pairwise losses, exactly).
    loss : str, default='binder'
    a : float, default=1.0
        Binder: cost of splitting a pair that belongs together. VI: weight of
        splits in the generalised VI, in [0, 2].
    b : float, default=1.0
        Binder: cost of joining a pair that belongs apart.
    method : {'salso', 'draws'}, default='salso'
    n_runs : int, default=10
        Random sequential-allocation runs.
    max_sweeps : int, default=100
        Sweetening sweeps per search at most.
    max_zealous_updates : int, default=10
        Zealous updates per run.
    max_n_clusters : int or None, default=None
        Largest number of clusters of the estimate (sampled partitions with
        more clusters are not used as starting points or candidates).
    n_jobs : int or None, default=None
        Threads for the runs (joblib); the result does not depend on it.
    random_state : int, RandomState instance or None, default=None
    return_loss : bool, default=False
        Also return the estimate's posterior expected loss.

    Returns
    -------
    labels : ndarray of shape (n,)
        Labels ``0..K-1`` in order of first appearance.
    expected_loss : float
        Only when ``return_loss`` is true.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.summaries import point_estimate
    >>> samples = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]])
    >>> point_estimate(samples, loss="binder", random_state=0)
    array([0, 0, 1, 1])
    >>> labels, loss = point_estimate(samples, loss="vi", random_state=0, return_loss=True)
    >>> labels, round(loss, 6)
    (array([0, 0, 1, 1]), 0.274653)
    >>> point_estimate(samples, loss="VI.lb", random_state=0)  # salso's spelling
    array([0, 0, 1, 1])
    """
    loss = loss_name(loss)
    check_loss_parameters(loss, a, b)
    check_option(method, "method", {"salso", "draws"})
    check_scalar_param(n_runs, "n_runs", kind=numbers.Integral, low=0)
    check_scalar_param(max_sweeps, "max_sweeps", kind=numbers.Integral, low=0)
    check_scalar_param(max_zealous_updates, "max_zealous_updates", kind=numbers.Integral, low=0)
    if max_n_clusters is not None:
        check_scalar_param(max_n_clusters, "max_n_clusters", kind=numbers.Integral, low=1)
    if not isinstance(return_loss, (bool, np.bool_)):
        raise TypeError(f"return_loss must be a bool, got {return_loss!r}.")
    rng = check_random_state(random_state)
    target = Target(samples_or_pairwise)
    kind = target.kind(loss)
    n = target.n
    max_clusters = n if max_n_clusters is None else min(int(max_n_clusters), n)
    starts = []
    if target.samples is not None:
        candidates = target.distinct_samples()
        candidates = candidates[candidates.max(axis=1) < max_clusters]
        work = target.samples.shape[0] * n if kind < N_CONTINGENCY_KINDS else n * n
        candidates = candidates[:max(1, _CANDIDATE_WORK // max(work, 1))]
        if candidates.shape[0]:
            scores = target.losses(candidates, loss, a, b)
            best = int(np.argmin(scores))
            starts.append(candidates[best])
            draws_best = (candidates[best], float(scores[best]))
    if method == "draws":
        if target.samples is None or target.weights is not None:
            raise ValueError("method='draws' needs the samples, not a pairwise matrix "
                             "or cluster marginals.")
        if not starts:
            raise ValueError(f"No sampled partition has at most max_n_clusters={max_clusters} "
                             "clusters.")
        labels, value = draws_best
        return (labels, value) if return_loss else labels
    starts += [np.full(n, -1, np.int64)] * n_runs
    if not starts:
        raise ValueError("n_runs=0 needs samples (to start from the best sampled partition).")
    seeds = rng.randint(2 ** 31 - 1, size=len(starts))
    if kind < N_CONTINGENCY_KINDS:  # shared by the threads: build once
        target.samples_t
    else:
        target.pairwise
    loss_kernels(kind)  # and the kernels' namespace
    small = (kind in _INTERPRETABLE_KINDS
             and n * target.samples.shape[0] * len(starts) <= INTERPRETED_SEARCH_WORK)
    runs = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_one_run)(kind, target, start, seed, loss, a, b, max_sweeps, max_clusters,
                          max_zealous_updates, small) for start, seed in zip(starts, seeds))
    values = np.array([value for _, value in runs])
    labels = runs[int(np.argmin(values))][0]
    value = float(values.min())
    if exhaustive_is_cheap(target, kind):
        # Local moves can miss the optimum (e.g. all singletons under 'nvi'): check all.
        best, best_value = exhaustive_minimum(target, kind, a, b, max_clusters)
        if best_value < value - 1e-12 * max(1.0, abs(value)):
            labels, value = best, best_value
    return (labels, value) if return_loss else labels


__all__ = ["point_estimate", "expected_loss", "LOSSES", "PAIRWISE_LOSSES", "Target",
           "loss_name", "contingency_losses", "ClusterMarginals", "CLUSTER_SUM_LOSSES"]
