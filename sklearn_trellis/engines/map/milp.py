"""Exact MAP of correlation clustering by integer programming (lazy triangle cuts).

The MAP clustering of a flat pairwise model -- correlation clustering, whose
cluster log-potential is ``e(B) = 2 beta sum_{i<j in B} w_ij`` -- maximises
``sum_{i<j same cluster} W_ij`` for the gains ``W = 2 beta w``. As an integer
program (Grötschel & Wakabayashi 1989) with a binary ``x_ij`` ("same cluster")
for every pair::

    maximise   sum_{i<j} W_ij x_ij
    subject to x_ab + x_bc - x_ac <= 1     for every centre b and legs a, c
               x_ij in {0, 1}.

The ``3 C(N, 3)`` triangle inequalities are far too many to write down, and few
of them bind. They are added lazily:

1. *LP phase* (cutting planes): solve the linear relaxation with the current
   cuts, add the most violated triangle inequalities, repeat until none is
   violated. This is cheap and usually yields almost every cut that matters
   (often the relaxation is already integral).
2. *MILP phase*: solve the integer program (``scipy.optimize.milp``, HiGHS)
   with the current cuts, add every triangle its integer solution violates,
   repeat until none is. Rounds run in time slices that double (2 s, 4 s,
   ...): an early incumbent that violates triangles gives cuts at once.

``scipy.optimize.milp`` takes no warm start or lazy-constraint callback, so
each round re-solves from scratch; adding every violated cut per round (not a
few of the most violated) needs the fewest rounds and was fastest in
``benchmarks/bench_milp.py``. The MAP never joins two connected components of
the graph of positive weights, so each component is a separate problem.

Every problem solved is a relaxation of the full one (fewer constraints), so
HiGHS' dual bound of any round is a valid upper bound on the MAP value.

Only inequalities with a *positive leg* (``W_ab > 0`` or ``W_bc > 0``) are ever
needed (cf. Miyauchi & Sukegawa 2015). Let ``x`` be integral and satisfy them,
and take the clusters to be the connected components of the pairs with
``x_ij = 1`` and ``W_ij > 0``. Along a path ``a - b - c - ...`` of such pairs
the inequalities with the positive leg ``b c`` force ``x_ac = 1``, then
``x_ad = 1`` and so on, so every pair inside a component already has
``x = 1``: the components only drop pairs with ``W <= 0`` and their objective is
at least ``W . x``. Hence an optimal ``x`` of the reduced problem repairs into an
optimal clustering, and the final labels are always these components.
"""

import numbers
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import LinearConstraint, milp
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

from ..._core import budget as memory_budget
from ..._core.budget import format_bytes
from ..._core.labels import first_appearance_labels
from ..._core.progress import Progress
from ..._core.validation import check_scalar_param
from . import _milp_kernels as kernels

#: Default largest N accepted (``N(N-1)/2`` binary variables).
DEFAULT_MAX_MILP_ITEMS = 1000

#: Largest N accepted at all: cut keys are ``int64`` numbers below ``n_pairs**3``.
HARD_MAX_MILP_ITEMS = 2000

#: Default cap on the number of triangle cuts; the loop stops (uncertified) there.
DEFAULT_MAX_CONSTRAINTS = 1_000_000

#: Estimated peak bytes per variable and per triangle cut of one component
#: (scipy's sparse matrices, HiGHS' copies, presolve and search data):
#: measured 1.9 kB per cut as peak RSS at N=1280 on blobs (components of 256
#: items, 573k cuts each, 1.34 GB in all); rounded up.
BYTES_PER_VARIABLE = 200
BYTES_PER_CONSTRAINT = 2000

#: Integrality and feasibility tolerance when reading HiGHS' solutions.
_TOL = 1e-6


@dataclass
class MilpMapResult:
    """Outcome of :func:`correlation_clustering_map_milp`.

    Attributes
    ----------
    labels : ndarray of shape (N,)
        The best clustering found, labels ``0..K-1`` in order of first appearance.
    objective : float
        ``sum_{i<j same cluster} weights_ij`` of ``labels``.
    upper_bound : float
        A proven upper bound on the MAP objective (the solvers' dual bound on a
        relaxation of the problem, or the sum of the positive weights).
    gap : float
        ``(upper_bound - objective) / max(|objective|, tiny)``, HiGHS'
        relative gap (``0`` when both are zero, ``inf`` if only the objective is).
    certified : bool
        ``True`` only when the labels are proven optimal: the last integer
        program was solved to optimality (within ``mip_rel_gap``) and its
        solution violates no triangle inequality.
    status : str
        ``'optimal'`` (every component solved), else why a component was not:
        ``'time_limit'``, ``'constraint_limit'`` or ``'solver_error'`` (HiGHS
        failed on an LP; the best clustering found is still returned).
    n_constraints : int
        Number of triangle cuts in the last problem.
    n_rounds : int
        Number of LP and MILP solves.
    seconds : float
        Wall-clock time.
    """

    labels: np.ndarray
    objective: float
    upper_bound: float
    gap: float
    certified: bool
    status: str
    n_constraints: int
    n_rounds: int
    seconds: float


def clustering_objective(weights, labels):
    """``sum_{i<j same cluster} weights_ij`` of a clustering.

    Parameters
    ----------
    weights : ndarray of shape (N, N)
        Symmetric pairwise gains (the diagonal is ignored).
    labels : array-like of shape (N,)

    Returns
    -------
    objective : float

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.map.milp import clustering_objective
    >>> w = np.array([[0., 2., -1.], [2., 0., 3.], [-1., 3., 0.]])
    >>> clustering_objective(w, [0, 0, 1])
    2.0
    """
    labels = np.asarray(labels)
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    return float(np.sum(weights, where=same) / 2.0)


def _components(n, rows, cols):
    graph = csr_array((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def _check_weights(weights):
    w = np.asarray(weights)
    if w.dtype == object or not (np.issubdtype(w.dtype, np.number) or w.dtype == bool):
        raise TypeError(f"weights must be a numeric (N, N) array, got dtype {w.dtype}.")
    w = np.array(w, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 1:
        raise ValueError(f"weights must be a square (N, N) matrix with N >= 1, got shape {w.shape}.")
    np.fill_diagonal(w, 0.0)
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite (no NaN or inf).")
    scale = max(1.0, float(np.abs(w).max()))
    asym = float(np.abs(w - w.T).max())
    if asym > 1e-10 * scale:
        raise ValueError(f"weights must be symmetric; the largest |W - W.T| entry is {asym:.3g}.")
    return (w + w.T) / 2.0


def milp_memory_bytes(n_items, max_constraints=DEFAULT_MAX_CONSTRAINTS):
    """Estimated peak memory of :func:`correlation_clustering_map_milp` (bytes).

    The cut pool holds at most ``max_constraints`` triangle cuts, and never more
    than there are: three per triple of items.
    """
    n_pairs = n_items * (n_items - 1) // 2
    return (6 * 8 * n_items * n_items + BYTES_PER_VARIABLE * n_pairs
            + BYTES_PER_CONSTRAINT * _max_cuts(n_items, max_constraints))


def _max_cuts(n_items, max_constraints):
    """Triangle cuts the pool can hold: ``max_constraints``, or the three per triple there are."""
    return min(max_constraints, 3 * (n_items * (n_items - 1) * (n_items - 2) // 6))


def check_milp_budget(n, max_items=DEFAULT_MAX_MILP_ITEMS,
                      max_constraints=DEFAULT_MAX_CONSTRAINTS, way_out=None):
    """Refuse a MILP over ``n`` items above ``max_items`` or the available memory.

    ``way_out`` is the caller's advice (in its own parameters); by default this
    function's: ``max_items``, ``max_constraints``, fewer items.
    """
    n_pairs = n * (n - 1) // 2
    need = milp_memory_bytes(n, max_constraints)
    what = (f"the MILP over N={n} items ({n_pairs} pair variables and up to "
            f"{_max_cuts(n, max_constraints)} triangle cuts)")
    if n > min(max_items, HARD_MAX_MILP_ITEMS):
        raise ValueError(f"N={n} is above max_items={min(max_items, HARD_MAX_MILP_ITEMS)} "
                         f"(at most {HARD_MAX_MILP_ITEMS}): {what} needs about "
                         f"{format_bytes(need)} of memory. "
                         + (way_out or ("Raise max_items if you can afford it."
                                        if n <= HARD_MAX_MILP_ITEMS else "Use fewer items.")))
    memory_budget.check_memory(need, what,
                               way_out=way_out or "Lower max_constraints or use fewer items.")


class _CutPool:
    """The triangle cuts found so far: rows ``x_a + x_b - x_c <= 1`` of pair indices."""

    def __init__(self, n_pairs):
        self.n_pairs = n_pairs
        self.parts = []
        self.keys = np.empty(0, np.int64)

    @property
    def n(self):
        return self.keys.size

    def add(self, legs_a, legs_b, base):
        """Add the new cuts among these; return how many were new."""
        lo, hi = np.minimum(legs_a, legs_b), np.maximum(legs_a, legs_b)
        # n_pairs**3 < 2**63 for N <= HARD_MAX_MILP_ITEMS.
        keys = (lo * self.n_pairs + hi) * self.n_pairs + base
        keys, first = np.unique(keys, return_index=True)
        new = ~np.isin(keys, self.keys, assume_unique=True)
        if not new.any():
            return 0
        first = first[new]
        self.parts.append(np.stack([lo[first], hi[first], base[first]], axis=1))
        self.keys = np.union1d(self.keys, keys[new])
        return int(new.sum())

    def constraint(self):
        if self.n == 0:
            return None
        cuts = np.concatenate(self.parts)
        self.parts = [cuts]
        rows = np.repeat(np.arange(cuts.shape[0]), 3)
        vals = np.tile([1.0, 1.0, -1.0], cuts.shape[0])
        matrix = csr_array((vals, (rows, cuts.ravel())), shape=(cuts.shape[0], self.n_pairs))
        return LinearConstraint(matrix, -np.inf, 1.0)


def _most_violated(found, limit):
    """The ``limit`` most violated of the cuts found (all if fewer)."""
    legs_a, legs_b, base, violation, _ = found
    if violation.size <= limit:
        return legs_a, legs_b, base
    keep = np.argpartition(-violation, limit - 1)[:limit]
    return legs_a[keep], legs_b[keep], base[keep]


#: MILP rounds get a time slice that doubles whenever one ends without new cuts:
#: an early incumbent that violates triangles yields cuts cheaply instead of
#: after a full branch-and-bound on a problem that lacks them.
MILP_FIRST_SLICE = 2.0
MILP_SLICE_GROWTH = 2.0

#: Cuts added per round at most (adding every violated cut is fastest in the
#: benchmark -- each round re-solves from scratch -- but bounds the memory).
MAX_CUTS_PER_ROUND = 1_000_000


@dataclass
class _Part:
    """The outcome on one connected component of the positive pairs."""

    labels: np.ndarray
    objective: float
    upper_bound: float
    certified: bool
    status: str
    n_constraints: int = 0
    n_rounds: int = 0


def _solve_connected(w, fallback, deadline, mip_rel_gap, max_constraints, log):
    """Lazy-cut LP then MILP rounds on one component (``w`` its sub-matrix)."""
    n = w.shape[0]
    iu, ju = np.triu_indices(n, 1)
    n_pairs = iu.size
    positive = w > 0
    gains = w[iu, ju]
    upper_bound = float(gains[gains > 0].sum())  # everything positive together
    best_labels = kernels.greedy_clustering(w)
    best = clustering_objective(w, best_labels)
    if fallback is not None and clustering_objective(w, fallback) > best:
        best_labels, best = fallback, clustering_objective(w, fallback)
    log(f"component of {n} items: greedy/initial objective {best:.6g}, "
        f"trivial bound {upper_bound:.6g}")

    # HiGHS tolerances are absolute: scale the gains to max |W| = 1.
    scale = float(np.abs(gains).max())
    cost = -gains / scale
    all_integral = np.ones(n_pairs)
    pool = _CutPool(n_pairs)
    n_rounds = 0
    status = "optimal"
    certified = False
    x_matrix = np.zeros((n, n))

    def solve(integral, budget=np.inf):
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return None
        options = {"time_limit": min(remaining, budget), "disp": log.verbose > 1}
        if integral:
            options["mip_rel_gap"] = float(mip_rel_gap)
        return milp(cost, integrality=all_integral if integral else None,
                    bounds=(0.0, 1.0), constraints=pool.constraint(), options=options)

    def separate(x):
        x_matrix[iu, ju] = x
        x_matrix[ju, iu] = x
        limit = max(1, min(MAX_CUTS_PER_ROUND, max_constraints - pool.n))
        return kernels.violated_triangles(x_matrix, positive, _TOL, limit)

    def repaired(x):
        together = (x > 0.5) & positive[iu, ju]
        labels = _components(n, iu[together], ju[together])
        return labels, clustering_objective(w, labels)

    def meets_bound():
        # The best clustering reaches the proven bound (to rounding): optimal.
        return best >= upper_bound - 1e-9 * max(1.0, abs(upper_bound))

    # 1. LP phase: cutting planes on the linear relaxation. Each round
    #    re-solves from scratch (scipy's milp has no warm start), so every
    #    violated cut is added at once: fewest rounds, fastest in the benchmark.
    while not meets_bound():
        res = solve(integral=False)
        n_rounds += 1
        if res is None or res.status != 0:
            status = "time_limit" if res is None or res.status == 1 else "solver_error"
            if status == "solver_error":
                log(f"HiGHS failed on the LP: {res.message}")
            break
        upper_bound = min(upper_bound, -res.fun * scale)
        found = separate(res.x)
        log(f"LP round {n_rounds}: bound {-res.fun * scale:.6g}, "
            f"{found[4]} violated, {pool.n} cuts")
        if found[4] == 0:
            if np.all(np.minimum(res.x, 1.0 - res.x) < _TOL):
                # An integral relaxation satisfying every needed cut is optimal.
                labels, value = repaired(res.x)
                if value > best:
                    best_labels, best = labels, value
                log("LP relaxation is integral")
            break
        if pool.add(*_most_violated(found, max_constraints - pool.n)) == 0 \
                or pool.n >= max_constraints:
            break  # numerically stuck or out of room: leave the rest to the MILP

    # 2. MILP phase: integer solutions, cuts for every triangle they violate.
    slice_seconds = MILP_FIRST_SLICE
    while status == "optimal" and not meets_bound():
        res = solve(integral=True, budget=slice_seconds)
        n_rounds += 1
        if res is None:
            status = "time_limit"
            break
        sliced = res.status == 1 and time.perf_counter() < deadline
        slice_seconds *= MILP_SLICE_GROWTH
        if res.mip_dual_bound is not None and np.isfinite(res.mip_dual_bound):
            upper_bound = min(upper_bound, -res.mip_dual_bound * scale)
        if res.x is None:
            if sliced:
                continue
            status = "time_limit" if res.status == 1 else "solver_error"
            break
        x = np.round(res.x)
        found = separate(x)
        labels, value = repaired(x)
        if found[4]:  # the repair of an infeasible x may merge too much: polish it
            labels = kernels.local_moves(w, labels)
            value = clustering_objective(w, labels)
        if value > best:
            best_labels, best = labels, value
        log(f"MILP round {n_rounds}: status {res.status}, objective {-res.fun * scale:.6g}, "
            f"bound {upper_bound:.6g}, {found[4]} violated, {pool.n} cuts")
        if found[4] == 0:
            if sliced:  # feasible but not proven optimal in this slice: a longer one
                continue
            # Optimal for the relaxation and repaired without loss: optimal.
            certified = res.status == 0
            if not certified:
                status = "time_limit"
            break
        if pool.n >= max_constraints:
            status = "constraint_limit"
            break
        pool.add(*found[:3])
    certified = certified or (status == "optimal" and meets_bound())
    return _Part(best_labels, best, upper_bound, certified, status, pool.n, n_rounds)


class _Log:
    """The MILP's lines on a :class:`Progress`: the first always, then at most every 10 s."""

    def __init__(self, progress):
        self.progress = progress
        self.verbose = progress.verbose

    def __call__(self, message, always=False):
        if always or self.progress.due():
            self.progress.note(f"MILP: {message}")


def correlation_clustering_map_milp(weights, *, time_limit=60.0, mip_rel_gap=0.0,
                                    initial_labels=None, max_items=DEFAULT_MAX_MILP_ITEMS,
                                    max_constraints=DEFAULT_MAX_CONSTRAINTS, verbose=0,
                                    progress=None):
    """Exact MAP clustering of pairwise gains by integer programming with lazy cuts.

    Finds the clustering that maximises ``sum_{i<j same cluster} weights_ij``
    (see the module docstring for the formulation and the proof that the
    reduced cut family suffices). The MAP never joins two connected
    components of the graph of positive weights (splitting them only drops
    pairs with ``weights <= 0``), so each component is solved on its own.

    For ``CorrelationClusteringModel(beta)`` fitted on affinities ``w``, pass
    ``weights = 2 * beta * w``: the objective is then the sum of the cluster
    log-potentials ``e(B)`` of the MAP clustering
    (``ExactFlatTrellis.map_log_potential``), and adding
    ``model.log_potential_constant()`` gives its ``log phi``.

    Parameters
    ----------
    weights : array-like of shape (N, N)
        Symmetric pairwise gains of putting ``i`` and ``j`` in one cluster
        (any sign; the diagonal is ignored).
    time_limit : float, default=60.0
        Wall-clock budget in seconds for all rounds together. When it runs out
        the best clustering found is returned with ``certified=False``.
    mip_rel_gap : float, default=0.0
        Relative optimality gap at which HiGHS may stop; ``0`` proves optimality
        (up to HiGHS' absolute gap ``1e-6`` on the gains scaled to max 1).
    initial_labels : array-like of shape (N,), optional
        A clustering to fall back on (kept where nothing better is found in
        time). A greedy clustering is always computed as well.
    max_items : int, default=1000
        Refuse larger N (before allocating anything of size ``N^2``).
    max_constraints : int, default=1,000,000
        Stop (uncertified, ``status='constraint_limit'``) rather than add more
        triangle cuts to a component; also sets the memory estimate checked
        before starting (at most the ``3 * C(N, 3)`` cuts there are).
    verbose : int, default=0
        When positive, print the components found and then a round's line at
        most every 10 s (:class:`~sklearn_trellis._core.progress.Progress`);
        HiGHS' log too when > 1.
    progress : Progress, optional
        Reporter to use instead of one built from ``verbose`` (an estimator
        passes its own, so that all the lines of its fit share one prefix).

    Returns
    -------
    result : MilpMapResult
        ``labels``, ``objective``, ``upper_bound``, ``gap``, ``certified``,
        ``status``, ``n_constraints``, ``n_rounds``, ``seconds`` (the counts
        are summed over components).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines.map.milp import correlation_clustering_map_milp
    >>> w = np.array([[0., 2., -1., -1.], [2., 0., -1., 1.],
    ...               [-1., -1., 0., 3.], [-1., 1., 3., 0.]])
    >>> result = correlation_clustering_map_milp(w)
    >>> result.labels, result.objective, result.certified
    (array([0, 0, 1, 1]), 5.0, True)
    """
    start = time.perf_counter()
    check_scalar_param(time_limit, "time_limit", low=0.0, include_low=False)
    check_scalar_param(mip_rel_gap, "mip_rel_gap", low=0.0, high=0.999)
    check_scalar_param(max_items, "max_items", kind=numbers.Integral, low=1)
    check_scalar_param(max_constraints, "max_constraints", kind=numbers.Integral, low=1)
    shape = np.shape(weights)
    if len(shape) == 2 and shape[0] == shape[1]:
        check_milp_budget(shape[0], max_items, max_constraints)  # before any N x N copy
    w = _check_weights(weights)
    n = w.shape[0]
    if initial_labels is not None:
        initial_labels = np.asarray(initial_labels)
        if initial_labels.shape != (n,):
            raise ValueError(f"initial_labels must have shape ({n},), got {initial_labels.shape}.")
    log = _Log(progress if progress is not None else Progress("milp", verbose))
    deadline = start + float(time_limit)

    iu, ju = np.triu_indices(n, 1)
    pos = w[iu, ju] > 0
    component = _components(n, iu[pos], ju[pos])
    members = [np.flatnonzero(component == c) for c in range(component.max() + 1)]
    members.sort(key=len)  # small ones first: a time-out leaves the fewest uncertified
    log(f"{len(members)} components of positive pairs, largest {members[-1].size} items",
        always=True)
    labels = np.empty(n, np.int64)
    next_label = 0
    parts = []
    for idx in members:
        if idx.size == 1:
            part = _Part(np.zeros(1, np.int64), 0.0, 0.0, True, "optimal")
        else:
            sub = w[np.ix_(idx, idx)]
            fallback = None if initial_labels is None else initial_labels[idx]
            part = _solve_connected(sub, fallback, deadline, mip_rel_gap, max_constraints, log)
        labels[idx] = next_label + first_appearance_labels(part.labels)
        next_label = labels[idx].max() + 1
        parts.append(part)

    objective = clustering_objective(w, labels)
    # Any valid bound is >= an achieved objective; below it is solver rounding.
    upper_bound = max(float(sum(p.upper_bound for p in parts)), objective)
    certified = all(p.certified for p in parts)
    statuses = {p.status for p in parts} - {"optimal"}
    status = "optimal" if not statuses else sorted(statuses)[-1]
    if upper_bound == objective or certified:
        gap = 0.0 if upper_bound == objective else (upper_bound - objective) / abs(objective)
    else:
        gap = (upper_bound - objective) / abs(objective) if objective != 0 else np.inf
    return MilpMapResult(labels=first_appearance_labels(labels), objective=objective,
                         upper_bound=upper_bound, gap=float(gap), certified=certified,
                         status=status, n_constraints=sum(p.n_constraints for p in parts),
                         n_rounds=sum(p.n_rounds for p in parts),
                         seconds=time.perf_counter() - start)


__all__ = ["MilpMapResult", "correlation_clustering_map_milp", "clustering_objective",
           "milp_memory_bytes", "check_milp_budget"]
