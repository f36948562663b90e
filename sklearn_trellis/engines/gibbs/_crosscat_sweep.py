"""CrossCat's sweep: the move kernels in order on one seed of numba's generator.

Steps 1-3 of a sweep (:mod:`.crosscat`) on the flat state (layout in
:mod:`._crosscat_kernels`): the generator is seeded once and every kernel goes on
drawing from it (seed ``-1``), so the sweep is one random stream whatever calls the
kernels. Returns ``(stats, counts)`` (grown when a move opened more clusters than
they held).

The sequence is plain Python, not a compiled kernel: numba compiles a kernel by
optimising and emitting machine code for everything it calls again (each callee's
code is linked into the caller's module), so a compiled sweep cost a first fit as
much compilation as its largest move (about 3 s of CPU on a small table) to save
a few kernel dispatches per sweep.

The move kernels are templates (:mod:`sklearn_trellis._core.specialise`) compiled per set
of cell types (:func:`kernels_for`): a table of normal columns compiles the normal cell
model's code alone (the ``table_*`` dispatch of :mod:`sklearn_trellis.models.cell_kernels`,
the other types pruned), any other table the code of every type.
"""

import numpy as np

from ..._core.random_draws import permutation
from ..._core.specialise import specialise, templates_of
from ...models import cell_kernels
from . import _crosscat_columns, _crosscat_kernels, _crosscat_rows, _crosscat_views
from ._crosscat_kernels import draw_below, reseed


def _gather_templates(modules):
    """One namespace of the templates of ``modules`` (each compiled once per type set, every
    template calling the others' copies of the same set)."""
    namespace = {"__name__": __name__}
    for module in modules:
        for name in templates_of(vars(module)):
            found = namespace.setdefault(name, getattr(module, name))
            assert found is getattr(module, name), f"two templates named {name}"
    return namespace


_TEMPLATES = _gather_templates([cell_kernels, _crosscat_kernels, _crosscat_rows,
                                _crosscat_columns, _crosscat_views])


def kernels_for(codes):
    """CrossCat's move kernels for a table of the cell type ``codes`` (one per column):
    a namespace by template name (memoised, and cached on disk per type set).

    Two type sets are compiled (:func:`~sklearn_trellis.models.cell_kernels.compiled_type_set`):
    a numeric table gets the kernels of its one type, any other table those of every
    type, so that tables of different mixes share one compilation.
    """
    types = cell_kernels.compiled_type_set(np.unique(codes))
    return specialise(_TEMPLATES, cell_kernels.type_set_bindings(types))

#: ``row_sampler`` codes. The slice move's is ``None`` (the kernels' own ``None``
#: arguments let numba prune what a default fit does not run).
SLICE, COLLAPSED = None, 1

#: A table of at most this many cells makes its view split-merge proposals every sweep, a
#: larger one with probability ``VIEW_MOVE_CELLS / cells`` (a proposal allocates every
#: row on the columns of the views it touches, three times: 3 to 5 times the rest of a
#: sweep; applying an invariant move at random leaves the posterior invariant).
VIEW_MOVE_CELLS = 50_000


def sweep(kernels, row_sampler, n_row_split_merge, n_column_split_merge, parallel_cells, rows,
          columns, constants, codes, params, grids, grid_log_prior, grid_sizes, view_of, n_columns,
          labels, counts, n_clusters, alphas, stats, alpha_views, n_aux, rows_alpha,
          rows_shape, rows_rate, seed):
    """With ``kernels`` (:func:`kernels_for` the table's ``codes``): rows of every view
    (slice move or collapsed scan), ``n_row_split_merge`` row split-merge proposals (each
    in a uniformly drawn view), every column by Algorithm 8, ``n_column_split_merge``
    column split-merge proposals and as many view split-merge proposals
    (:mod:`._crosscat_views`; on tables of more than :data:`VIEW_MOVE_CELLS` cells, in a
    random share of the sweeps), then the columns' grid hyperparameters.

    ``parallel_cells``: a view of at least this many cells scores its rows on
    numba's threads, and a table of at least this many cells its columns'
    scores; ``None``: nothing runs on threads and numba compiles no parallel loop
    (a first fit of a small table does not pay for them).
    """
    reseed(seed)
    k = kernels
    no_seed, one = -1, 1
    for v in range(n_columns.size):
        if n_columns[v] == 0:
            continue
        if row_sampler is None:   # SLICE
            stats, counts = k.slice_rows(v, columns, constants, codes, params, view_of,
                                         labels, counts, n_clusters, alphas, stats,
                                         parallel_cells, no_seed)
        else:
            stats, counts = k.scan_rows(v, rows, constants, codes, params, view_of, labels,
                                        counts, n_clusters, alphas, stats, no_seed)
    # row split-merge proposals, each in a view drawn uniformly (a proposal reads the rows
    # of two clusters over the view's columns: one in every view would cost more than the
    # rest of the sweep on tall tables)
    occupied = np.empty(n_columns.size, np.int64)  # the views with columns, in order
    n_occupied = 0
    for v in range(n_columns.size):
        if n_columns[v] > 0:
            occupied[n_occupied] = v
            n_occupied += 1
    for _ in range(n_row_split_merge):
        v = occupied[draw_below(n_occupied)]
        stats, counts = k.split_merge_rows(v, one, rows, constants, codes, params, view_of,
                                           labels, counts, n_clusters, alphas, stats, no_seed)
    d = codes.size
    stats, counts = k.column_gibbs(permutation(d), columns, constants, codes,
                                   params, view_of, n_columns, labels, counts, n_clusters,
                                   alphas, stats, alpha_views, n_aux, rows_alpha, rows_shape,
                                   rows_rate, parallel_cells, no_seed)
    if n_column_split_merge > 0:
        chosen = permutation(d)[:n_column_split_merge]
        stats, counts = k.column_split_merge(chosen, columns, constants, codes, params,
                                             view_of, n_columns, labels, counts, n_clusters,
                                             alphas, stats, alpha_views, rows_alpha, rows_shape,
                                             rows_rate, no_seed)
        # numba's generator, not NumPy's: the sweep's one random stream
        if columns.size <= VIEW_MOVE_CELLS or draw_below(columns.size) < VIEW_MOVE_CELLS:
            stats, counts = k.view_split_merge(n_column_split_merge, columns, constants, codes,
                                               params, view_of, n_columns, labels, counts,
                                               n_clusters, alphas, stats, alpha_views,
                                               rows_alpha, rows_shape, rows_rate, no_seed)
    k.resample_params(codes, grids, grid_log_prior, grid_sizes, params, view_of, n_clusters,
                      stats, no_seed)
    return stats, counts
