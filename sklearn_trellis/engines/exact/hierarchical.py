"""Exact hierarchical cluster trellis: every quantity of a split model over all subsets.

The engine takes what a fitted split model exposes for its kernels
(``split``, ``params``, ``stats``; see ``models._split``) and knows nothing else
about it: its kernels are compiled for the model's numba split function
(``_hier_kernels.specialise``). One ``O(3^N)`` pass computes the log
partition function and the MAP value of every subset (Greenberg et al. 2021,
Propositions 1 and 2); the MAP tree is back-tracked in ``O(2^N)``; a second
``O(3^N)`` pass (on demand) gives every cluster marginal (Appendix A.4); exact
samples cost ``O(2^N)`` each (Algorithm 3); the number of allowed trees is
counted exactly.

Precision: all recursions are in log space (terms shifted by their maximum);
``log Z`` carries a relative error of about ``1e-15 * N`` and marginals an
absolute error below ``1e-12 + N * eps * max |log phi|`` (checked against
enumeration of all trees in the tests); leaves and the root have marginal
exactly 1. ``log Z`` or a MAP value beyond ``MAX_LOG_POTENTIAL``, or an
overflowing ``beta * psi``, is refused (``_split_potential.refuse_overflow``).
"""

import time

import numpy as np

from ..._core.budget import check_exact_budget
from ..._core.subsets import checked_mask, masks_by_popcount
from ..._core.trees import tree_from_splits, tree_masks
from .._split_potential import refuse_overflow
from . import _hier_kernels as kernels

#: Bytes kept per subset besides the model's statistics: log Z, MAP values,
#: the size-ordered subset list and (on demand) the outside table.
BYTES_PER_SUBSET = 32

#: Default largest N for the exact hierarchical trellis.
DEFAULT_MAX_EXACT_HIERARCHICAL = 22

#: Below this N one thread does the whole pass (no parallel start-up cost).
SERIAL_BELOW = 14


def double_factorial_trees(n_items):
    """``(2N - 3)!!``: the number of binary trees over ``N`` labelled items (exact int)."""
    count = 1
    for k in range(3, 2 * n_items - 2, 2):
        count *= k
    return count


def _primes_below_2_31(count):
    """The ``count`` largest primes below ``2**31`` (trial division)."""
    out = []
    candidate = 2 ** 31 - 1
    while len(out) < count:
        if all(candidate % d for d in range(3, int(candidate ** 0.5) + 1, 2)):
            out.append(candidate)
        candidate -= 2
    return out


def _crt(residues, primes):
    """The integer in ``[0, prod(primes))`` with the given residues."""
    value, modulus = 0, 1
    for r, p in zip(residues, primes):
        # value + modulus * k = r (mod p)
        k = ((int(r) - value) * pow(modulus, -1, p)) % p
        value += modulus * k
        modulus *= p
    return value


class ExactHierarchicalTrellis:
    """The full hierarchical cluster trellis of ``N`` items for one split model.

    Parameters
    ----------
    split : numba dispatcher
        The model's numba split function (``SplitKernelInputs.split``),
        ``(params, stats, full, parent, left, right) -> psi``.
    params : ndarray of float64
        Its parameters; ``params[0]`` is the inverse temperature.
    stats : ndarray of shape (k, 2**N)
        Its per-subset statistics; ``N`` is read from the width.
    separable : tuple (u, a, c) or None, default=None
        The model's ``separable_form``, if it has one: ``psi(L, R) = c[S] +
        a[|S|] * (u[L] + u[R])``. The main pass then reads two tables per
        split instead of evaluating ``psi`` (used from ``SERIAL_BELOW`` items on).
    max_items : int, default=DEFAULT_MAX_EXACT_HIERARCHICAL
        Refuse (before allocating) if ``N`` exceeds this.
    layered : bool or None, default=None
        Run the main pass one subset size at a time, in parallel (and with the
        separable form if given). ``None``: from ``SERIAL_BELOW`` items on;
        below, one thread visits the subsets in increasing order.
    verbose : int, default=0
        Print progress of the ``O(3^N)`` pass when positive.

    Attributes
    ----------
    n_items : int
    log_partition_function : float
        ``log Z`` over all binary trees of the items.
    map_log_potential : float
        ``log phi`` of the MAP tree.
    map_tree : nested tuples
        The MAP tree; each internal node is ``(left, right)`` with the left child
        holding the lowest item; leaves are item indices.
    n_trees : int
        Number of trees with finite potential (exact; ``(2N-3)!!`` when no
        split is forbidden).
    log_z : ndarray of shape (2**N,)
        ``log Z`` of every subset.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models import DasguptaEnergy
    >>> from sklearn_trellis.engines import ExactHierarchicalTrellis
    >>> w = np.array([[0., 1., 0.], [1., 0., 0.], [0., 0., 0.]])
    >>> split, params, stats = DasguptaEnergy(similarity="precomputed").fit(w).kernel_inputs()
    >>> trellis = ExactHierarchicalTrellis(split, params, stats).fit()
    >>> trellis.map_tree, trellis.map_log_potential, trellis.n_trees
    (((0, 1), 2), -2.0, 3)
    """

    def __init__(self, split, params, stats, *, separable=None,
                 max_items=DEFAULT_MAX_EXACT_HIERARCHICAL, layered=None, verbose=0):
        stats = np.ascontiguousarray(stats, dtype=np.float64)
        size = stats.shape[1] if stats.ndim == 2 else 0
        if stats.ndim != 2 or size < 2 or size & (size - 1):
            raise ValueError("stats must have shape (k, 2**N) with N >= 1, "
                             f"got {stats.shape}.")
        self.n_items = size.bit_length() - 1
        check_exact_budget(self.n_items, BYTES_PER_SUBSET + 8 * stats.shape[0],
                           max_items=max_items, what="exact hierarchical trellis")
        self.split = split
        self._kernels = kernels.specialise(split)
        self.params = np.ascontiguousarray(params, dtype=np.float64)
        self.stats = stats
        self.verbose = verbose
        self.layered = layered
        self._log_out = None
        self.separable = separable
        if separable is not None:
            u, a, c = (np.ascontiguousarray(v, dtype=np.float64) for v in separable)
            if u.shape != (size,) or c.shape != (size,) or a.shape != (self.n_items + 1,):
                raise ValueError("separable must be (u, a, c) with u, c of length 2**N "
                                 "and a of length N + 1.")
            if not (np.isfinite(u).all() and np.isfinite(a).all() and np.isfinite(c).all()):
                if not np.isfinite(self.params[0]) or self.params[0] == 1.0:
                    raise ValueError("A separable split log-potential must be finite.")
                # beta times a finite energy overflowed: the split function's
                # pass tells overflow apart from an invalid energy (fit).
                self.separable = None
            else:
                self.separable = (u, a, c)

    @property
    def full(self):
        """Bitmask of all items."""
        return (1 << self.n_items) - 1

    def _args(self):
        return self.params, self.stats, self.full

    # -- the O(3^N) pass -----------------------------------------------------
    def fit(self):
        """Run the ``O(3^N)`` pass, back-track the MAP tree and count the trees."""
        n = self.n_items
        n_forbidden, n_invalid, counts = self._inside_pass()
        refuse_overflow([self.log_z[self.full], self._map_value[self.full]], n_invalid,
                        self.params[0], self._at_unit_beta)
        if n_invalid:
            raise ValueError(f"The split log-potential is NaN or +inf for {n_invalid} "
                             "splits; it must be finite or -inf (forbidden).")
        self.log_partition_function = float(self.log_z[self.full])
        if not self.log_partition_function > -np.inf:
            raise ValueError("Every binary tree has zero potential (log Z = -inf): "
                             "the model forbids all hierarchies of these items.")
        self.map_log_potential = float(self._map_value[self.full])
        parents, lefts = self._kernels.map_splits(*self._args(), n, self._map_value)
        self.map_splits = list(zip(parents.tolist(), lefts.tolist()))
        self.map_tree = tree_from_splits(parents, lefts, self.full)
        self.n_forbidden_splits = int(n_forbidden)
        if n_forbidden == 0:
            self.n_trees = double_factorial_trees(n)
        elif counts is not None and n <= 18:
            self.n_trees = int(counts[self.full])
        else:
            self.n_trees = self._count_allowed_trees()
        return self

    def _inside_pass(self):
        """Fill ``log_z`` and the MAP values; (#forbidden, #invalid, counts or None)."""
        n = self.n_items
        size = 1 << n
        self.log_z = np.zeros(size)
        self._map_value = np.zeros(size)
        start = time.perf_counter()
        layered = n >= SERIAL_BELOW if self.layered is None else bool(self.layered)
        counts = None
        if not layered:
            counts = np.zeros(size, np.int64)
            n_forbidden, n_invalid = self._kernels.partition_serial(
                *self._args(), self.log_z, self._map_value, counts)
        else:
            self._masks, self._offsets = masks_by_popcount(n)
            n_forbidden, n_invalid = self._layered_pass(start)
        return n_forbidden, n_invalid, counts

    def _at_unit_beta(self):
        """``((log Z, MAP), #invalid)`` of the same pass at ``beta = 1`` (overflow diagnosis)."""
        params = self.params.copy()
        params[0] = 1.0
        unit = ExactHierarchicalTrellis(self.split, params, self.stats, layered=self.layered,
                                        max_items=self.n_items)
        _, n_invalid, _ = unit._inside_pass()
        return (unit.log_z[self.full], unit._map_value[self.full]), n_invalid

    def _layered_pass(self, start):
        """The main pass one size at a time, each size in parallel."""
        n = self.n_items
        n_forbidden = n_invalid = 0
        if self.separable is not None:
            u, a, c = self.separable
            gh = np.empty((1 << n, 2))
        for k in range(2, n + 1):
            lo, hi = self._offsets[k], self._offsets[k + 1]
            if self.separable is not None:
                kernels.separable_tables(self.log_z, self._map_value, u, a[k], 1 << n, gh)
                kernels.separable_layer(self._masks, lo, hi, gh, c, self.log_z,
                                        self._map_value)
            else:
                flags = np.zeros((256, 2), np.int64)
                kernel = self._kernels.partition_layer.for_work((hi - lo) << (k - 1))
                kernel(*self._args(), self._masks, lo, hi, self.log_z, self._map_value, flags)
                n_forbidden += int(flags[:, 0].sum())
                n_invalid += int(flags[:, 1].sum())
            if self.verbose:
                print(f"[ExactHierarchicalTrellis] subsets of size {k} done "
                      f"({time.perf_counter() - start:.1f} s)", flush=True)
        return n_forbidden, n_invalid

    def _count_allowed_trees(self, use_primes=False):
        """Exact count of finite-potential trees: int64 when ``(2N-3)!! < 2**62``,
        else the recursion modulo primes below ``2**31`` + Chinese remaindering."""
        n = self.n_items
        bound = double_factorial_trees(n)
        if bound < 2 ** 62 and not use_primes:
            primes = [2 ** 62]  # never reached: plain int64 arithmetic is exact
        else:
            n_primes = 1
            while (2 ** 31 - 200) ** n_primes <= bound:
                n_primes += 1
            primes = _primes_below_2_31(n_primes)
        counts = np.zeros((len(primes), 1 << n), np.int64)
        for i in range(n):
            counts[:, 1 << i] = 1
        if not hasattr(self, "_masks"):
            self._masks, self._offsets = masks_by_popcount(n)
        prime_array = np.array(primes, np.int64)
        for k in range(2, n + 1):
            lo, hi = self._offsets[k], self._offsets[k + 1]
            kernel = self._kernels.count_layer.for_work(((hi - lo) << (k - 1)) * len(primes))
            kernel(*self._args(), self._masks, lo, hi, counts, prime_array)
        return _crt(counts[:, self.full], primes)

    # -- single trees ----------------------------------------------------------
    def split_log_potential(self, parent, left):
        """``beta * psi`` of one split given as bitmasks (``left`` holds the lowest item)."""
        return float(self._kernels.evaluate_split(*self._args(), int(parent), int(left)))

    def log_potential(self, tree):
        """``log phi`` of a tree given as nested tuples over all items."""
        mask, splits = tree_masks(tree)
        if mask != self.full:
            raise ValueError("The tree must contain every item exactly once.")
        total = 0.0
        for parent, left in splits:
            total += self.split_log_potential(parent, left)
        return float(total)

    # -- marginals ---------------------------------------------------------------
    def _outside(self):
        """``log out(X)`` for every subset (one more ``O(3^N)`` pass, cached)."""
        if self._log_out is None:
            n = self.n_items
            if not hasattr(self, "_masks"):
                self._masks, self._offsets = masks_by_popcount(n)
            log_out = np.full(1 << n, -np.inf)
            log_out[self.full] = 0.0
            for k in range(n - 1, 0, -1):
                lo, hi = self._offsets[k], self._offsets[k + 1]
                kernel = self._kernels.outside_layer.for_work((hi - lo) << (n - k))
                kernel(*self._args(), self._masks, lo, hi, self.log_z, log_out)
            self._log_out = log_out
        return self._log_out

    def cluster_marginals(self):
        """``P(X is a node of H)`` for every bitmask ``X`` (entry 0 is 0)."""
        log_p = self.log_z + self._outside() - self.log_partition_function
        out = np.exp(np.minimum(log_p, 0.0))
        out[0] = 0.0
        # Every tree has every leaf and the root as nodes: exactly 1, not the
        # rounding of log Z(X) + log out(X) - log Z at large |log phi|.
        out[1 << np.arange(self.n_items)] = 1.0
        out[self.full] = 1.0
        return out

    def expected_split_value(self, stat_params):
        """``E[sum_{splits of H} g(L, R)]`` over the distribution of trees.

        ``g`` is the model's split function evaluated at ``stat_params``
        instead of ``params`` (``stat_params[0]`` multiplies it, as ``beta``
        does), each split weighted by its exact posterior probability (the
        split marginals ``out(S) phi(L, R) Z(L) Z(R) / Z``): with ``g`` the
        derivative of ``log phi`` in a parameter, this is the derivative of
        ``log Z`` (one more ``O(3^N)`` pass after the outside pass).

        Parameters
        ----------
        stat_params : ndarray of float64
            Parameters of the split function for ``g``.

        Returns
        -------
        float
        """
        stat_params = np.ascontiguousarray(stat_params, dtype=np.float64)
        return float(self._kernels.expected_split_value(
            *self._args(), stat_params, self.log_z, self._outside(),
            self.log_partition_function))

    def cluster_marginal(self, indices):
        """Probability that exactly these items form a node (cluster) of the tree."""
        mask = checked_mask(indices, self.n_items)
        if mask & (mask - 1) == 0 or mask == self.full:   # a leaf or the root
            return 1.0
        value = self.log_z[mask] + self._outside()[mask] - self.log_partition_function
        return float(min(1.0, np.exp(value)))

    def subtree_marginal(self, subtree):
        """Probability that the tree contains this sub-hierarchy (nested tuples)."""
        mask, splits = tree_masks(subtree)
        if not splits:   # a single leaf: in every tree
            checked_mask([subtree], self.n_items)
            return 1.0
        log_phi = sum(self.split_log_potential(p, l) for p, l in splits)
        value = log_phi + self._outside()[mask] - self.log_partition_function
        return float(min(1.0, np.exp(value)))

    # -- sampling ----------------------------------------------------------------
    def sample_splits(self, n_samples, random_state):
        """Exact draws as ``(parents, lefts)`` mask arrays of shape (n_samples, N - 1)."""
        uniforms = random_state.random_sample((n_samples, max(self.n_items - 1, 0)))
        kernel = self._kernels.sample_splits.for_work(n_samples << self.n_items)
        return kernel(*self._args(), self.n_items, self.log_z, uniforms)

    def sample(self, n_samples, random_state):
        """Exact posterior draws as a list of nested-tuple trees."""
        parents, lefts = self.sample_splits(n_samples, random_state)
        return [tree_from_splits(p, l, self.full) for p, l in zip(parents, lefts)]


__all__ = ["ExactHierarchicalTrellis", "double_factorial_trees"]
