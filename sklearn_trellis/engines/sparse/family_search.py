"""Which clusters a sparse trellis runs over: the seed-family search of both trellis estimators.

A sparse trellis is exact over the clusterings (flat) or trees (hierarchical)
made of the clusters of its family; the family is the union of the nodes of
*seed trees* (:mod:`~sklearn_trellis.engines.sparse.seeds`). This module holds
the search that picks the family, run by both trellis planners
(:mod:`~sklearn_trellis.engines.planner`):

- :func:`linkage_trees` / :func:`beam_trees`: the seed trees;
- :func:`seed_family`: the union of all seeds, or a union grown tree by tree
  (best ``Z`` first) while the engine stays within its budget (the engine
  raises :class:`~sklearn_trellis._core.budget.BudgetExceeded`), then
  optionally refined around the best tree found (windows);
- :meth:`SeedFamily.note`: the ``approximation_`` text describing the result;
- :func:`family_is_complete`: whether the family holds every cluster of the
  exact trellis (then the sparse trellis *is* the exact one).
"""

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.spatial.distance import squareform

from ..._core.budget import BudgetExceeded
from ..._core.connectivity import connected_subset_masks
from ..._core.family import ClusterFamily
from ..._core.parallel import run_beside
from ..divisive import divisive_seed_trees
from ._constrained_linkage import constrained_tree, edge_distances
from .seeds import beam_seed_trees, linkage_seed_trees, tree_windows, windows_within_budget

#: Cap on the remainder states of a sparse flat trellis over a union of seed
#: trees (about 200 bytes each at N = 1,000; ~5 s to reach).
MAX_SPARSE_STATES = 100_000

#: Above this N seed trees are not combined (their unions need millions of states).
MAX_UNION_ITEMS = 1_000

#: Beam-search seed trees need the model's ``2**N`` statistics: only up to this N.
MAX_BEAM_SEED_ITEMS = 20

#: With a connectivity graph, a family's completeness is checked up to this N
#: (it enumerates the ``2**N`` subsets); beyond, it is reported incomplete.
MAX_COMPLETENESS_CHECK_ITEMS = 20

#: Item entries the refinement windows may add (about 16 bytes each: the
#: unions' members and discovery's per-item lists); larger windows are skipped.
MAX_WINDOW_UNION_ITEMS = 120_000_000


def constrained_linkage_trees(names, X, connectivity, metric="euclidean"):
    """Seed trees of the linkages ``names`` under a connectivity graph (scikit-learn's).

    Every node of these trees is connected in the graph (scikit-learn merges
    only clusters joined by an edge), so they seed a family of connected
    clusters. They are scikit-learn's ``ward_tree`` / ``linkage_tree`` trees,
    computed by the compiled kernels of ``_constrained_linkage`` (same trees,
    tested). Memory is ``O(edges)``: no ``N x N`` matrix. Ward's tree is built
    on a second thread while the others are (``_core.parallel.run_beside``).

    Parameters
    ----------
    names : list of str
        Linkage names (``check_linkages``); ``'diana'`` has no constrained form.
    X : ndarray of shape (N, n_features) or (N, N)
        Feature rows, or distances if ``metric='precomputed'`` (Ward is then skipped).
    connectivity : sparse matrix of shape (N, N)
        A connected graph (see ``_core.connectivity.check_connectivity``).
    metric : str or callable, default='euclidean'

    Returns
    -------
    trees, built : as :func:`linkage_trees`
    """
    if "diana" in names:
        raise ValueError("The 'diana' seed tree has no connectivity-constrained form; "
                         "choose linkage seeds with a connectivity graph.")
    # The kernels want the symmetric graph with sorted rows and no diagonal.
    graph = sparse.csr_matrix(connectivity)
    graph = ((graph + graph.T) != 0).astype(np.float64).tocsr()
    graph.setdiag(0)
    graph.eliminate_zeros()
    graph.sort_indices()
    built = [name for name in names
             if name != "ward" or metric in ("euclidean", "l2")]
    others = [name for name in built if name != "ward"]

    def other_trees():
        distances = edge_distances(X, graph, metric) if others else None
        return [constrained_tree(name, X, graph, metric, distances=distances)
                for name in others]

    if "ward" not in built:
        return other_trees(), built
    # Ward's tree (the longest, its own kernel without the GIL) on a second core
    # while the others are built: each tree is what it would be alone.
    ward, trees = run_beside(lambda: constrained_tree("ward", X, graph, metric), other_trees)
    trees = iter(trees)
    return [ward if name == "ward" else next(trees) for name in built], built


def linkage_trees(names, dissimilarities, X=None, progress=None, work=None, euclidean=False):
    """Seed trees of the linkages ``names``, and the names of the trees built.

    Parameters
    ----------
    names : list of str
        Linkage names (``check_linkages``); ``'diana'`` is the divisive tree.
    dissimilarities : ndarray or None
        Condensed dissimilarities of the items (every tree but Ward's); ``None``:
        the euclidean distances of ``X``'s rows, computed into ``work`` by
        :func:`linkage_seed_trees` (no condensed copy).
    X : ndarray of shape (N, n_features), optional
        Feature rows for Ward's linkage (euclidean); without them Ward is skipped.
    progress : Progress, optional
        Reporter of a fit with ``verbose`` (stage and progress lines of the linkages).
    work : ndarray of shape (N, N), optional
        float64 scratch space of the linkages (``linkage_seed_trees``).
    euclidean : bool, default=False
        The dissimilarities are the euclidean distances of ``X``'s rows
        (scipy's ``pdist``): Ward's tree is built from them, not from ``X``
        again (the same tree, without a second distance computation).

    Returns
    -------
    trees : list of ndarray of shape (N - 1, 2)
        ``children_`` arrays, Ward last.
    built : list of str
        The linkage of each tree, in the same order.
    """
    others = [name for name in names if name not in ("ward", "diana")]
    if dissimilarities is None:     # euclidean rows only: one square array, no condensed one
        if "diana" in names:
            raise ValueError("The 'diana' seed tree needs the dissimilarities.")
        built = others + (["ward"] if "ward" in names else [])
        return linkage_seed_trees(X, linkage=built, progress=progress, work=work), built
    trees = (linkage_seed_trees(distances=dissimilarities, linkage=others, progress=progress,
                                work=work) if others else [])
    if "diana" in names:  # the divisive tree of the same dissimilarities
        trees += divisive_seed_trees(distances=squareform(dissimilarities), method="diana")
        others.append("diana")
    if "ward" in names and X is not None:
        trees += (linkage_seed_trees(distances=dissimilarities, linkage="ward",
                                     progress=progress, work=work) if euclidean
                  else linkage_seed_trees(X, linkage="ward", progress=progress, work=work))
        others.append("ward")
    return trees, others


def beam_trees(model, n_trees, beta=1.0):
    """Up to ``n_trees`` beam-search seed trees on a fitted split model's own energy.

    Empty beyond ``MAX_BEAM_SEED_ITEMS`` items (the search tabulates the
    model over all ``2**N`` subsets) and for callable energies (one Python
    call per split).
    """
    if not n_trees or model.python_splits or model.n_items_ > MAX_BEAM_SEED_ITEMS:
        return []
    return beam_seed_trees(model, int(n_trees), beta=float(beta))[0]


@dataclass
class SeedFamily:
    """A fitted sparse trellis and how its family was chosen.

    Attributes
    ----------
    trellis : fitted SparseFlatTrellis or SparseHierarchicalTrellis
    family : ClusterFamily
        The trellis's family.
    description : str
        Which clusters the family holds, e.g. ``'the clusters of 4 seed trees'``.
    """

    trellis: object
    family: ClusterFamily
    description: str

    def note(self, realised="clusterings"):
        """The ``approximation_`` text: what the trellis is exact over.

        ``realised`` is ``'clusterings'`` (flat trellises) or ``'trees'``
        (hierarchical ones, whose share of all trees is quoted).
        """
        if self.family.n_items == 1:
            return f"one item: the only {realised[:-1]}"
        size = f"{self.family.n_vertices:,} clusters"
        if realised == "trees":
            size += f", 10^{float(self.trellis.log10_sparsity_index):.1f} of all trees"
            over = "the trees it realises"
        else:
            over = "the clusterings made of these clusters"
        return (f"sparse trellis over {self.description} ({size}): log Z, MAP, marginals "
                f"and samples are exact over {over}; log Z is a lower bound and the MAP "
                "may not be the global one")


def family_is_complete(family, graph=None):
    """Whether ``family`` holds every cluster of the exact hierarchical trellis.

    The exact trellis runs over every non-empty subset (every connected one
    under ``graph``); a sparse trellis over a family holding them all realises
    every tree the exact one does, with the same split potentials: its
    ``log Z``, MAP, marginals and samples are then the exact ones (small N,
    where the windows cover the whole tree). With ``graph``, the check
    enumerates the ``2**N`` subsets: above ``MAX_COMPLETENESS_CHECK_ITEMS``
    items the family is reported incomplete (it can only be under-reported).

    Parameters
    ----------
    family : ClusterFamily
    graph : sparse matrix of shape (N, N), optional
        The connectivity graph the trellis is constrained by.

    Returns
    -------
    bool
    """
    n = int(family.n_items)
    if graph is None:   # the family is deduplicated: a count decides
        return int(family.n_vertices) == (1 << n) - 1
    if n > MAX_COMPLETENESS_CHECK_ITEMS:
        return False
    connected = connected_subset_masks(graph, n)
    if family.n_vertices < connected.size:
        return False
    return set(connected.tolist()) <= set(family.masks())


def seed_family(build, trees, n_items, *, names=None, window_size=0):
    """Fit a sparse trellis over the clusters of seed trees.

    Parameters
    ----------
    build : callable
        ``build(family, **budget) -> fitted sparse trellis``; ``budget`` is
        ``max_states`` when unions are grown, and the trellis raises
        :class:`~sklearn_trellis._core.budget.BudgetExceeded` above it.
    trees : list of ndarray of shape (N - 1, 2)
        The seed trees (``children_`` arrays).
    n_items : int
    names : list of str, optional
        One name per tree. Given, the union is *grown*: each tree alone gives
        a trellis (a tree's family costs ``O(N)``); starting from the one of
        largest ``Z``, the others join, in order of their ``Z``, as long as
        the trellis over the union needs at most ``MAX_SPARSE_STATES``
        remainder states (not at all above ``MAX_UNION_ITEMS`` items: unions
        of linkage trees then need millions of states). Not given, the family
        is the union of all the trees.
    window_size : int, default=0
        From 3 on (hierarchical trellises only), the family then gains every
        union of ``window_size`` neighbouring clusters of the best tree found
        (:func:`~sklearn_trellis.engines.sparse.seeds.tree_windows`, within
        ``MAX_WINDOW_UNION_ITEMS``), and the trellis is fitted again: its MAP
        is optimal over all re-arrangements of each window.

    Returns
    -------
    SeedFamily
    """
    n = int(n_items)
    if n == 1:
        family = ClusterFamily.from_trees([], 1)
        return SeedFamily(build(family), family, "the only cluster")
    if not trees:
        raise ValueError("No seed tree to build a sparse trellis from: Ward's linkage needs "
                         "feature rows (not a precomputed matrix); choose another linkage.")
    if names is None:
        family = ClusterFamily.from_trees(trees, n)
        found = SeedFamily(build(family), family, f"the clusters of {len(trees)} seed trees")
    else:
        found = _grown_union(build, trees, n, names)
    if window_size >= 3:
        found = _refined(build, trees, n, found, int(window_size))
    return found


def _grown_union(build, trees, n, names):
    """Seed trees joined best ``Z`` first while the union stays within the state budget."""
    singles = [build(ClusterFamily.from_trees([tree], n)) for tree in trees]
    ranking = np.argsort([-t.log_partition_function for t in singles], kind="stable")
    chosen = [int(ranking[0])]
    trellis = singles[chosen[0]]
    skipped = []
    for index in ranking[1:] if n <= MAX_UNION_ITEMS else []:
        family = ClusterFamily.from_trees([trees[i] for i in chosen + [int(index)]], n)
        try:
            trellis = build(family, max_states=MAX_SPARSE_STATES)
        except BudgetExceeded:
            skipped.append(names[index])
            continue
        chosen.append(int(index))
    used = [names[i] for i in chosen]
    described = (f"the clusters of the {', '.join(used)} linkage tree"
                 f"{'s' if len(used) > 1 else ''}")
    if len(used) < len(names):
        reason = (f"needed more than {MAX_SPARSE_STATES:,} states" if skipped
                  else f"are not combined above {MAX_UNION_ITEMS:,} items")
        left = [name for name in names if name not in used]
        described += (f" (unions with the {', '.join(left)} tree"
                      f"{'s' if len(left) > 1 else ''} {reason})")
    return SeedFamily(trellis, trellis.family, described)


def _refined(build, trees, n, found, window_size):
    """Re-optimise the best tree exactly, ``window_size`` clusters at a time."""
    best = found.trellis.map_children
    every = tree_windows(best, n, window_size)
    windows = windows_within_budget(every, MAX_WINDOW_UNION_ITEMS)
    family = ClusterFamily.from_trees(trees + [best], n, windows=windows)
    described = (f"{found.description} and all unions of {window_size} neighbouring "
                 "clusters of their best tree")
    if len(windows) < len(every):
        described += (f" in {len(windows):,} of its {len(every):,} windows (the largest "
                      "ones exceed the memory budget)")
    return SeedFamily(build(family), family, described)


__all__ = ["MAX_SPARSE_STATES", "MAX_UNION_ITEMS", "MAX_BEAM_SEED_ITEMS",
           "MAX_COMPLETENESS_CHECK_ITEMS", "MAX_WINDOW_UNION_ITEMS", "SeedFamily", "beam_trees",
           "constrained_linkage_trees", "family_is_complete", "linkage_trees",
           "seed_family"]
