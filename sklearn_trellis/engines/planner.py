"""Trellis planners: which engine a trellis estimator's fit runs, and what is not exact.

The strategy of both trellis estimators lives here, so that the estimators
only validate, build their model, plan, run and copy the results:

- :func:`plan_hierarchical` (:class:`~sklearn_trellis.TrellisHierarchical`):
  the exact trellis, the trellis over the connected subsets of a
  connectivity graph, the full trellis for perturb-and-MAP, or a sparse
  trellis over seed trees (linkages, beam search) refined by windows;
- :func:`plan_flat` (:class:`~sklearn_trellis.ExactCorrelationClustering`):
  the exact flat trellis or a sparse one grown over seed trees, then
  optionally the MILP's MAP and perturb-and-MAP marginals.

A plan is chosen from the sizes and options alone and refuses what does not
fit *before* anything is allocated; its ``run`` fits the engines and returns
the fitted quantities with ``notes``, the sentences that become the
estimator's ``approximation_``. The arguments carry the estimators' parameter
names, and so do the refusals' advice (what to change to go on).
"""

from dataclasses import dataclass, field

import numpy as np

from .._core.budget import HARD_MAX_ITEMS, BudgetExceeded, check_exact_budget, check_memory
from .._core.connectivity import connected_subset_masks, window_union_connected
from .._core.family import ClusterFamily
from .._core.pairwise import upper_triangle
from .._core.progress import SILENT
from .._core.trees import children_to_tree, tree_to_children
from .exact.flat import BYTES_PER_SUBSET as FLAT_BYTES_PER_SUBSET
from .exact.flat import ExactFlatTrellis
from .exact.hierarchical import BYTES_PER_SUBSET as HIERARCHICAL_BYTES_PER_SUBSET
from .exact.hierarchical import ExactHierarchicalTrellis
from .map.milp import check_milp_budget, correlation_clustering_map_milp
from .map.perturb_and_map import MilpMapSolver, perturb_and_map
from .sparse.family_search import (beam_trees, constrained_linkage_trees,
                                   family_is_complete, linkage_trees, seed_family)
from .sparse.seeds import LINKAGES
from .sparse.sparse_flat import SparseFlatTrellis
from .sparse.sparse_hierarchical import BYTES_PER_VERTEX, SparseHierarchicalTrellis

#: Up to this N, hierarchical perturb-and-MAP perturbs every split of the full
#: trellis (the powerset family: ``3**N / 2`` splits); beyond, the seed family's.
MAX_POWERSET_PERTURB_ITEMS = 12

#: Splits the refinement windows of the sparse trellis may add (about 100 bytes
#: each); ``window_size`` is lowered for large N to stay within it.
MAX_WINDOW_SPLITS = 20_000_000

#: The engines :func:`plan_hierarchical` chooses among.
HIERARCHICAL_ENGINES = ("exact", "connected", "powerset", "sparse")


def approximation(notes):
    """The ``approximation_`` text of a run's notes (``None`` when all is exact)."""
    return "; ".join(notes) if notes else None


def lowered_window_size(window_size, n_items):
    """``window_size``, lowered for large N so the windows stay within
    ``MAX_WINDOW_SPLITS`` splits (about ``3**w / 2`` per ``w - 1`` items)."""
    size = int(window_size)
    while size > 3 and n_items / (size - 1) * 3 ** size / 2 > MAX_WINDOW_SPLITS:
        size -= 1
    return size


# -- hierarchical ---------------------------------------------------------------------
@dataclass
class HierarchicalFit:
    """What a hierarchical plan's run fitted (the estimator copies it).

    ``map_children`` is the MAP tree in ``children_`` encoding, rows by level;
    ``row_keys`` the trellis vertex of each row (``None`` for the exact
    trellis, whose vertices are bitmasks); ``perturbed_marginals`` the
    perturb-and-MAP frequency of each vertex (``None`` without perturbations).
    """

    trellis: object
    map_tree: object
    map_children: np.ndarray
    row_keys: object
    map_log_potential: float
    log_partition_function: float
    log10_sparsity_index: float
    n_trellis_vertices: int
    map_is_exact: bool
    perturbed_marginals: object = None
    notes: list = field(default_factory=list)

    @property
    def approximation(self):
        return approximation(self.notes)


@dataclass(frozen=True)
class HierarchicalPlan:
    """The engine :func:`plan_hierarchical` chose, and its settings.

    Attributes
    ----------
    engine : {'exact', 'connected', 'powerset', 'sparse'}
        The full trellis; the trellis over every connected subset of the
        connectivity graph (exact under the constraint); the full trellis
        for perturb-and-MAP; or the sparse trellis over seed trees.
    n_items : int
    window_size : int
        Refinement windows of the sparse trellis (already lowered for large N).
    n_beam_trees : int
        Beam-search seed trees asked for (0 with a connectivity graph).
    n_perturbations : int
        Perturbed MAP trees (0: no perturb-and-MAP).
    """

    engine: str
    n_items: int
    window_size: int = 0
    n_beam_trees: int = 0
    n_perturbations: int = 0

    def __post_init__(self):
        if self.engine not in HIERARCHICAL_ENGINES:
            raise ValueError(f"Unknown hierarchical engine {self.engine!r}; one of "
                             f"{HIERARCHICAL_ENGINES}.")

    @property
    def needs_seeds(self):
        """Whether the run needs seed trees (:meth:`seed_trees`)."""
        return self.engine == "sparse"

    def seed_trees(self, seed_linkages, X, distances=None, connectivity=None,
                   metric="euclidean", cache=None, progress=None, work=None):
        """The linkage seed trees of the sparse trellis (``[]`` for the other engines).

        Parameters
        ----------
        seed_linkages : list of str
            Validated linkage names.
        X : ndarray of shape (N, n_features) or (N, N)
            Feature rows (Ward's tree, and every tree under ``connectivity``).
        distances : ndarray of shape (N, N) or (N (N - 1) / 2,), optional
            The distances of the unconstrained trees, square or condensed
            (condensed ones are taken to be ``metric``'s distances of ``X``'s
            rows by :func:`~sklearn_trellis._core.pairwise.condensed_distances`,
            and Ward's tree reuses them when euclidean). ``None`` with a
            euclidean ``metric``: the linkages compute ``X``'s distances into
            ``work`` (``'diana'`` needs them given).
        connectivity : sparse matrix, optional
            The trees are then scikit-learn's connectivity-constrained ones.
        metric : str or callable, default='euclidean'
        cache : callable, optional
            ``joblib.Memory.cache``, to cache the linkages.
        progress : Progress, optional
            Reporter of a fit with ``verbose`` (the unconstrained linkages report
            their progress; not part of the cache key).
        work : ndarray of shape (N, N), optional
            float64 scratch space the linkages may overwrite (not part of the cache key).
        """
        if not self.needs_seeds:
            return []
        cache = cache if cache is not None else (lambda function, ignore=(): function)
        if connectivity is not None:
            return cache(constrained_linkage_trees)(seed_linkages, X, connectivity, metric)[0]
        features = X if metric in ("euclidean", "l2") else None
        if distances is None:     # euclidean rows: the linkages compute their distances
            return cache(linkage_trees, ignore=["progress", "work"])(
                seed_linkages, None, features, progress=progress, work=work)[0]
        condensed = distances.ndim == 1
        return cache(linkage_trees, ignore=["progress", "work"])(
            seed_linkages, distances if condensed else upper_triangle(distances), features,
            progress=progress, work=work, euclidean=condensed and features is not None)[0]

    def run(self, model, beta=1.0, *, seed_trees=(), connectivity=None, random_state=None,
            verbose=0):
        """Fit the planned trellis of a fitted split model.

        Parameters
        ----------
        model : fitted SplitModel
        beta : float, default=1.0
        seed_trees : list of ndarray of shape (N - 1, 2), default=()
            :meth:`seed_trees` (sparse engine only).
        connectivity : sparse matrix, optional
            Every cluster of the trellis is then connected in it.
        random_state : int, RandomState instance or None, default=None
            Seed of the perturbations.
        verbose : int, default=0

        Returns
        -------
        HierarchicalFit
        """
        if self.engine == "exact":
            return self._run_exact(model, float(beta))
        return self._run_family(model, float(beta), list(seed_trees), connectivity,
                                random_state, verbose)

    def _run_exact(self, model, beta):
        split, params, stats = model.kernel_inputs(beta)
        trellis = ExactHierarchicalTrellis(split, params, stats,
                                           separable=model.separable_form(beta),
                                           max_items=HARD_MAX_ITEMS).fit()
        n = self.n_items
        return HierarchicalFit(
            trellis=trellis, map_tree=trellis.map_tree,
            map_children=tree_to_children(trellis.map_tree, n)[0], row_keys=None,
            map_log_potential=trellis.map_log_potential,
            log_partition_function=trellis.log_partition_function,
            log10_sparsity_index=0.0, n_trellis_vertices=(1 << n) - 1, map_is_exact=True)

    def _run_family(self, model, beta, seed_trees, graph, random_state, verbose):
        n = self.n_items

        def build(family, **budget):
            allowed = None if graph is None else window_union_connected(family, graph)
            try:
                return SparseHierarchicalTrellis.from_model(family, model, beta,
                                                            allowed_vertices=allowed,
                                                            verbose=verbose, **budget).fit()
            except BudgetExceeded as error:
                # The engine's caps (max_edges, max_python_edges) are not the estimator's
                # parameters: say what lifts them in its own.
                if error.resource == "python_edges":
                    raise ValueError(
                        f"The sparse trellis's family has {error.reached:,} splits; a "
                        f"Python split function is called once per split, above the limit "
                        f"of {error.limit:,}. To go on: lower window_size, use a built-in "
                        "energy (no Python call per split) or fewer samples.") from None
                raise ValueError(
                    f"The sparse trellis's family has more than {error.limit:,} splits. "
                    "To go on: lower window_size, use fewer seed_linkages or fewer "
                    "samples.") from None
            except ValueError as error:
                if not str(error).startswith("Not enough memory"):
                    raise
                raise ValueError(f"{error} To go on: lower window_size, use fewer "
                                 "seed_linkages or fewer samples.") from None

        full = self.engine in ("powerset", "connected")
        if full:
            family = (ClusterFamily.powerset(n) if self.engine == "powerset"
                      else connected_family(graph, n))
            trellis = build(family)
            notes = []
        else:
            beams = beam_trees(model, self.n_beam_trees, beta)
            found = seed_family(build, seed_trees + beams, n, window_size=self.window_size)
            trellis, family = found.trellis, found.family
            # A family holding every cluster of the exact trellis (small N: the
            # windows cover the whole tree) makes the sparse trellis the exact one.
            full = family_is_complete(family, graph)
            notes = [] if full else [found.note("trees")]
        map_children, _, row_keys = trellis.tree_children(trellis.map_edges,
                                                          return_vertices=True)
        perturbed = None
        if self.n_perturbations:
            _, perturbed = trellis.perturb_and_map(self.n_perturbations, 1.0,
                                                   random_state=random_state)
            notes.append(f"cluster marginals estimated by perturb-and-MAP "
                         f"({self.n_perturbations} Gumbel-perturbed MAP trees over "
                         f"{'the full trellis' if full else 'the sparse trellis'})")
        return HierarchicalFit(
            trellis=trellis, map_tree=children_to_tree(map_children.tolist(), n),
            map_children=map_children, row_keys=row_keys,
            map_log_potential=trellis.map_log_potential,
            log_partition_function=trellis.log_partition_function,
            log10_sparsity_index=float(trellis.log10_sparsity_index),
            n_trellis_vertices=int(family.n_vertices), map_is_exact=full,
            perturbed_marginals=perturbed, notes=notes)


def connected_family(graph, n_items):
    """Every connected subset of ``graph``: the family of the exact constrained trellis.

    Refused before allocating when its trellis would not fit in memory.
    """
    masks = connected_subset_masks(graph, n_items)
    check_memory(BYTES_PER_VERTEX * masks.size + 8 * n_items * masks.size,
                 f"the trellis over the {masks.size:,} connected subsets",
                 way_out="To go on: use method='sparse' or a sparser connectivity graph.")
    bits = np.arange(n_items)
    clusters = [bits[(int(mask) >> bits) & 1 == 1] for mask in masks.tolist()]
    return ClusterFamily.from_clusters(clusters, n_items)


def _exact_way_out(n_items, method, max_exact_size, raise_limit=""):
    """The advice of an exact-trellis refusal: only parameters that lift it."""
    if method == "exact":
        auto = (f", or method='auto' (sparse above max_exact_size={max_exact_size})"
                if max_exact_size < n_items else "")
        return f"To go on: {raise_limit}use fewer items, or method='sparse'{auto}."
    return (f"To go on: lower max_exact_size below {n_items} (the sparse trellis then "
            f"takes over), use method='sparse', or use fewer items.")


def plan_hierarchical(n_items, model, *, method="auto", max_exact_size=16, connectivity=None,
                      window_size=8, n_beam_trees=8, n_perturbations=100):
    """Choose the trellis of a hierarchical fit over ``n_items`` items.

    ``method='exact'`` is the full trellis (over the connected subsets with
    ``connectivity``), refused above ``HARD_MAX_ITEMS`` items or the available
    memory; ``'sparse'`` the sparse trellis; ``'auto'`` the exact one up to
    ``max_exact_size`` items (and the model's ``max_items``, for models whose
    splits are Python calls), sparse beyond; ``'perturb_and_map'`` perturbs
    the full trellis up to ``MAX_POWERSET_PERTURB_ITEMS`` items (and
    ``max_exact_size``), the sparse one beyond. The exact budgets are checked
    here, before anything is allocated.

    Parameters
    ----------
    n_items : int
    model : SplitModel
        The (unfitted) model: its ``max_items``, if any, caps the exact size.
    method : {'auto', 'exact', 'sparse', 'perturb_and_map'}, default='auto'
    max_exact_size : int, default=16
    connectivity : sparse matrix, optional
    window_size : int, default=8
    n_beam_trees : int, default=8
    n_perturbations : int, default=100

    Returns
    -------
    HierarchicalPlan
    """
    n = int(n_items)
    limit = int(max_exact_size)
    if model.python_splits:   # one Python call per split: the model caps the exact size
        limit = min(limit, getattr(model, "max_items", limit))
    graph = connectivity is not None
    exact = "connected" if graph else "exact"
    if method == "exact":
        engine = exact
    elif method == "sparse":
        engine = "sparse"
    elif method == "perturb_and_map":
        small = n <= min(limit, MAX_POWERSET_PERTURB_ITEMS)
        engine = ("connected" if graph else "powerset") if small else "sparse"
    else:
        engine = exact if n <= limit else "sparse"
    # max_exact_size only guides 'auto': an explicit method='exact' runs whenever it fits
    budget_limit = HARD_MAX_ITEMS if method == "exact" else int(max_exact_size)
    way_out = _exact_way_out(n, method, max_exact_size)
    if engine == "exact":
        check_exact_budget(n, HIERARCHICAL_BYTES_PER_SUBSET + 16, max_items=budget_limit,
                           what="exact hierarchical trellis", way_out=way_out)
    elif engine == "connected":
        check_exact_budget(n, 8, max_items=budget_limit,
                           what="enumeration of the connected subsets", way_out=way_out)
    return HierarchicalPlan(
        engine=engine, n_items=n,
        window_size=lowered_window_size(window_size, n) if engine == "sparse" else 0,
        # Beam search ignores the graph: with connectivity, the seeds are the
        # constrained linkage trees only.
        n_beam_trees=0 if graph else int(n_beam_trees),
        n_perturbations=int(n_perturbations) if method == "perturb_and_map" else 0)


# -- flat -----------------------------------------------------------------------------
@dataclass
class FlatFit:
    """What a flat plan's run fitted (the estimator copies it).

    ``map_log_potential`` and ``log_partition_function`` include the model's
    constant; ``pairwise_marginals`` is ``None`` when they are left to be
    computed on first access (sparse trellis); ``map_gap`` is ``None`` when no
    bound is known.
    """

    trellis: object
    labels: np.ndarray
    map_log_potential: float
    log_partition_function: float
    map_is_exact: bool
    map_gap: object
    n_trellis_vertices: int
    pairwise_marginals: object = None
    perturbed_maps: object = None
    notes: list = field(default_factory=list)

    @property
    def approximation(self):
        return approximation(self.notes)


@dataclass(frozen=True)
class FlatPlan:
    """The engines :func:`plan_flat` chose.

    Attributes
    ----------
    exact : bool
        The exact flat trellis (else the sparse one over seed trees).
    n_items, max_exact_size : int
    milp : bool
        Whether the MILP's MAP replaces the trellis's (when better).
    n_perturbations : int
        Perturbed MAP clusterings (0: no perturb-and-MAP).
    """

    exact: bool
    n_items: int
    max_exact_size: int
    milp: bool = False
    n_perturbations: int = 0

    def run(self, model, affinities, *, features=None, seed_linkages=LINKAGES,
            time_limit=60.0, random_state=None, progress=SILENT):
        """Fit the planned engines of a fitted flat correlation model.

        Parameters
        ----------
        model : fitted CorrelationClusteringModel
        affinities : ndarray of shape (N, N)
            The signed affinities ``w`` the model was fitted on (diagonal zero).
        features : ndarray of shape (N, n_features), optional
            Feature rows, for Ward's seed tree.
        seed_linkages : sequence of str, default=LINKAGES
            Validated names of the seed trees of the sparse trellis (Ward's
            only with ``features``).
        time_limit : float, default=60.0
            Seconds of the MILP; with perturb-and-MAP beyond the exact size,
            also of all perturbed MILPs together (at least 1 s each).
        random_state : int, RandomState instance or None, default=None
            Seed of the perturbations.
        progress : Progress, default=SILENT
            Reporter of a fit with ``verbose``: a stage line per engine, throttled
            progress lines within the exact pass, the MILP and the perturbations.

        Returns
        -------
        FlatFit
        """
        n = self.n_items
        constant = model.log_potential_constant()
        beta = float(model.beta)
        notes = []
        if self.exact:
            progress.stage(f"exact flat trellis ({2 ** n - 1:,} subsets, O(3^{n}) pass)")
            trellis = ExactFlatTrellis(model.log_potential_table(),
                                       max_items=self.max_exact_size, progress=progress).fit()
            n_vertices, map_is_exact, gap = (1 << n) - 1, True, 0.0
        else:
            progress.stage(f"sparse flat trellis over seed trees ({', '.join(seed_linkages)})")
            trellis, note = _sparse_flat_trellis(model, affinities, features, seed_linkages)
            # a family holding every subset (small N) holds every partition: exact
            complete = family_is_complete(trellis.family)
            if not complete:
                notes.append(note)
            n_vertices = int(trellis.family.n_vertices)
            map_is_exact, gap = complete, (0.0 if complete else None)
        found = FlatFit(trellis=trellis, labels=np.asarray(trellis.map_labels),
                        map_log_potential=float(trellis.map_log_potential) + constant,
                        log_partition_function=trellis.log_partition_function + constant,
                        map_is_exact=map_is_exact, map_gap=gap, n_trellis_vertices=n_vertices,
                        notes=notes)
        weights = 2.0 * beta * affinities
        if self.milp:
            progress.stage(f"MAP by integer programming (time_limit={time_limit:g} s)")
            exact_map = found.map_is_exact
            note = _milp_map(found, weights, constant, time_limit, progress)
            if not exact_map:
                notes.append(note)
        if self.n_perturbations:
            progress.stage(f"perturb-and-MAP ({self.n_perturbations} perturbed MAPs)")
            notes.append(self._perturbed(found, weights, time_limit, random_state, progress))
        if self.exact and found.pairwise_marginals is None:
            # The exact path's pairwise marginals are cheap: fit computes them.
            found.pairwise_marginals = trellis.pairwise_marginals()
        return found

    def _perturbed(self, found, weights, time_limit, random_state, progress):
        """Pairwise marginals from the MAPs of Gumbel-perturbed affinities."""
        # time_limit is the budget of all perturbations together (each is a MILP).
        per_map = max(1.0, float(time_limit) / self.n_perturbations)
        solver = "trellis" if self.exact else MilpMapSolver(time_limit=per_map)
        result = perturb_and_map(weights, n_samples=self.n_perturbations, map_solver=solver,
                                 random_state=random_state, progress=progress)
        found.pairwise_marginals = result.pairwise_marginals
        found.perturbed_maps = result.samples
        uncertified = ("" if not result.n_uncertified else
                       f", {result.n_uncertified} of them not certified optimal")
        return (f"pairwise_marginals_ estimated by perturb-and-MAP from "
                f"{self.n_perturbations} Gumbel-perturbed MAP clusterings ({result.solver} "
                f"MAPs{uncertified})")


def _sparse_flat_trellis(model, affinities, features, seed_linkages):
    """The sparse flat trellis over the linkage trees of ``max(w) - w``, and its note."""
    dissimilarity = upper_triangle(affinities)
    top = float(dissimilarity.max()) if dissimilarity.size else 0.0
    np.subtract(top, dissimilarity, out=dissimilarity)
    trees, names = linkage_trees(seed_linkages, dissimilarity, features)
    del dissimilarity
    found = seed_family(
        lambda family, **budget: SparseFlatTrellis.from_model(model, family, **budget).fit(),
        trees, affinities.shape[0], names=names)
    return found.trellis, found.note("clusterings")


def _milp_map(found, weights, constant, time_limit, progress):
    """Replace the MAP of ``found`` by the MILP's (certified when it finishes in time)."""
    result = correlation_clustering_map_milp(weights, time_limit=float(time_limit),
                                             initial_labels=found.labels,
                                             progress=progress)
    if result.objective + constant >= found.map_log_potential:
        found.labels = np.asarray(result.labels)
        found.map_log_potential = float(result.objective) + constant
    # The exact trellis already certifies its MAP; the MILP may add a certificate.
    found.map_is_exact = found.map_is_exact or bool(result.certified)
    found.map_gap = 0.0 if found.map_is_exact else float(result.gap)
    if result.certified:
        return "MAP certified optimal by integer programming"
    return (f"MAP by integer programming not certified within time_limit="
            f"{time_limit} s (relative gap {result.gap:.3g})")


def plan_flat(n_items, *, method="auto", max_exact_size=20, n_perturbations=100):
    """Choose the engines of a flat correlation-clustering fit over ``n_items`` items.

    The exact flat trellis up to ``max_exact_size`` items (unless
    ``method='sparse'``), the sparse one beyond; ``method='milp'`` adds the
    MILP's MAP, ``'perturb_and_map'`` perturbed MAPs (MILP ones beyond the
    exact size, after the unperturbed MILP). ``method='exact'`` above
    ``max_exact_size``, or an exact trellis beyond the available memory, is
    refused here, before anything is allocated.

    Parameters
    ----------
    n_items : int
    method : {'auto', 'exact', 'sparse', 'milp', 'perturb_and_map'}, default='auto'
    max_exact_size : int, default=20
    n_perturbations : int, default=100

    Returns
    -------
    FlatPlan
    """
    n = int(n_items)
    exact = n <= max_exact_size and method != "sparse"
    if method == "exact" or exact:
        # Here max_exact_size limits an explicit 'exact' too: raising it may lift the refusal.
        raise_limit = (f"raise max_exact_size to {n} if you can afford it, "
                       if method == "exact" and max_exact_size < n <= HARD_MAX_ITEMS else "")
        check_exact_budget(n, FLAT_BYTES_PER_SUBSET, max_items=max_exact_size,
                           what="exact flat trellis",
                           way_out=_exact_way_out(n, method, max_exact_size, raise_limit))
    milp = method == "milp" or (method == "perturb_and_map" and not exact)
    if milp:  # refused here, not after the trellis: the MILP runs last
        check_milp_budget(n, way_out=(
            f"To go on: use method='auto' (the trellis's MAP, exact up to max_exact_size="
            f"{max_exact_size} items) or method='sparse', or use fewer items."))
    return FlatPlan(exact=exact, n_items=n, max_exact_size=int(max_exact_size),
                    milp=milp,
                    n_perturbations=int(n_perturbations) if method == "perturb_and_map" else 0)
