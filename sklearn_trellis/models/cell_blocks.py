"""``CellBlocks``: the cluster likelihood of matrix rows whose columns fall into groups of i.i.d. cells.

An *item* is a row of a matrix ``X`` (``n`` items, ``D`` columns). Each column
``j`` belongs to a group ``column_groups[j]`` in ``0..G-1`` and each group ``g``
has a cell model (:mod:`.cells`) ``cells[group_cells[g]]``. Given a partition of
the items, the cells of cluster ``c`` in the columns of group ``g`` form one
*block* of i.i.d. cells, and

    log_cluster(c) = sum_g log_marginal(params_g, stats of block (c, g)),

NaN cells missing (they contribute nothing). This plugs into the collapsed
Gibbs engine's protocol (:mod:`sklearn_trellis.engines.gibbs`), so its Gibbs
scan, split-merge moves and log joint work unchanged:

- **biclustering** (:class:`~sklearn_trellis.InfiniteBiclustering`): one cell
  model; the row half-sweep samples the row partition with the groups = the
  current column clusters, the column half-sweep samples the column partition
  on ``X.T`` with the groups = the current row clusters;
- **CrossCat** (one view): ``column_groups = arange(D)`` (the default: each
  column its own group) and one cell model per column (``cells`` a list of
  ``D`` fitted cell models, ``group_cells`` defaulting to ``arange(D)``), so
  columns of different types (normal, bernoulli, poisson, categorical) mix in
  one view: each group carries its type code and the kernels switch on it.

Interface
---------
``CellBlocks(cells, column_groups=None, group_cells=None)``

- ``cells``: one fitted cell model or a list of them (:class:`~.cells.NormalCells`, ...).
- ``column_groups``: int array ``(D,)`` with values ``0..G-1``; ``None`` means
  ``arange(D)`` (``D`` is taken from ``X`` in ``fit``).
- ``group_cells``: int array ``(G,)`` indexing ``cells``; ``None`` means all
  groups share ``cells[0]`` when there is one cell model, else ``arange(G)``.

``fit(X)`` checks the shapes and every cell against its group's model and
returns ``self``; ``kernel_params(cell_params=None)`` packs the kernel vector
(``cell_params``: the current parameter vector of each cell model, default
theirs); ``cell_params(params)`` unpacks it; ``resample_params`` draws each
cell model's grid hyperparameters from their exact conditional posterior given
all the blocks that use that model (the mechanism of the conjugate
likelihoods); ``hyperparameter_grid()`` is the product of the cell models'
grids; ``block_statistics(data, labels)`` returns the ``(K, G, S + 1)``
cell statistics of every block of a partition (the last entry of each is the
block's ``log_marginal``), ``partition_log_likelihood(data, labels)`` the sum
of the block marginals.

``log_predictive`` reads the item's statistics that ``prepare`` put in
``work`` (the engine always prepares an item before scoring it), so the
engine's ``predictive_log_weights`` (new rows, no ``prepare``) does not apply.
``work`` also caches the group statistics of the first ``n_cached_items_``
items (the rows of the ``X`` given to ``fit``), so that a Gibbs scan or a
split-merge proposal reads ``G * S`` numbers per item instead of its ``D``
cells; the items' statistics do not depend on the gridded hyperparameters.
"""

import itertools

import numpy as np

from .._core.interpreted import call
from . import _cell_block_kernels as kb
from .cells import CellModel
from .likelihood import ClusterLikelihood, GibbsKernels, zero_global

#: Largest product grid :meth:`CellBlocks.hyperparameter_grid` enumerates.
MAX_PRODUCT_GRID = 10_000
#: Largest cache of the items' group statistics in a state's ``work`` (floats; 128 MB).
MAX_CACHE_ENTRIES = 1 << 24
#: Up to this many entries a block table's marginals are summed by the kernel's Python
#: source (:mod:`~sklearn_trellis._core.interpreted`; a plain sum in the same order).
INTERPRETED_TABLE_ENTRIES = 10_000


_KERNELS = {}


def _kernels_of(cell_types):
    """``(block kernels, GibbsKernels)`` of a table of the cell-type modules ``cell_types``."""
    found = _KERNELS.get(cell_types)
    if found is None:
        k = kb.specialise(cell_types)
        found = _KERNELS[cell_types] = (k, GibbsKernels(
            k.blocks_reset, k.blocks_prepare, k.blocks_add, k.blocks_remove,
            k.blocks_log_predictive, k.blocks_log_cluster, zero_global, k.blocks_refresh))
    return found


class CellBlocks(ClusterLikelihood):
    """Cluster likelihood of matrix rows made of groups of i.i.d. cells (see the module docstring).

    Parameters
    ----------
    cells : cell model or list of cell models
        Fitted :mod:`~sklearn_trellis.models.cells` models.
    column_groups : array-like of shape (n_columns,), default=None
        Group of each column, ``0..G-1``; ``None``: one group per column.
    group_cells : array-like of shape (G,), default=None
        Cell model (index into ``cells``) of each group.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.models.cells import NormalCells
    >>> from sklearn_trellis.models.cell_blocks import CellBlocks
    >>> X = np.array([[0.1, 0.2, 5.0], [0.0, 0.3, 5.2], [2.0, 2.1, np.nan]])
    >>> cells = NormalCells(hyperprior="fixed").fit(X)
    >>> blocks = CellBlocks(cells, column_groups=[0, 0, 1]).fit(X)
    >>> # rows 0 and 1 as one cluster: block (cluster, group 0) holds 4 cells, group 1 two
    >>> value = blocks.log_marginal(X[:2])
    >>> expected = cells.log_marginal(X[:2, :2]) + cells.log_marginal(X[:2, 2])
    >>> bool(np.isclose(value, expected))
    True
    """

    # blocks_refresh recomputes every occupied block from its items; work's item cache
    # fills itself (an item's group statistics), so a new state needs no rebuild
    refresh_rebuilds = True

    def __init__(self, cells, column_groups=None, group_cells=None):
        self.cells = cells
        self.column_groups = column_groups
        self.group_cells = group_cells

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"CellBlocks expects a 2-d array, got shape {X.shape}.")
        cells = list(self.cells) if isinstance(self.cells, (list, tuple)) else [self.cells]
        if not cells:
            raise ValueError("CellBlocks needs at least one cell model.")
        for model in cells:
            if not isinstance(model, CellModel):
                raise TypeError(f"cells must be cell models, got {type(model).__name__}.")
            model._check_fitted()
        d = X.shape[1]
        groups = (np.arange(d) if self.column_groups is None
                  else np.asarray(self.column_groups))
        if groups.shape != (d,) or (d and not np.issubdtype(groups.dtype, np.integer)):
            raise ValueError(f"column_groups must be {d} integer labels, got {groups!r}.")
        groups = groups.astype(np.int64)
        if d and groups.min() < 0:
            raise ValueError("column_groups must be non-negative.")
        n_groups = int(groups.max()) + 1 if d else 0
        if self.group_cells is None:
            group_cells = (np.zeros(n_groups, np.int64) if len(cells) == 1
                           else np.arange(n_groups))
        else:
            group_cells = np.asarray(self.group_cells).astype(np.int64)
        if group_cells.shape != (n_groups,) or (
                n_groups and (group_cells.min() < 0 or group_cells.max() >= len(cells))):
            raise ValueError(f"group_cells must hold {n_groups} indices into the "
                             f"{len(cells)} cell models.")
        for m, model in enumerate(cells):
            columns = np.flatnonzero(group_cells[groups] == m)
            if columns.size:
                model.check_values(X[:, columns])
        self.cells_ = cells
        self.column_groups_ = groups
        self.group_cells_ = group_cells
        self.n_groups_ = n_groups
        self.n_features_in_ = d
        self.n_cached_items_ = X.shape[0]
        self._n_cell_stats = max(model.n_stats for model in cells)
        # per block: cell statistics, one-cell predictive constants, log_marginal
        self._width = 2 * self._n_cell_stats + 1
        self._param_width = 2 + max(model.kernel_params().size for model in cells)
        return self

    def with_groups(self, column_groups):
        """A fitted copy whose columns fall into the groups ``column_groups`` (labels ``0..G-1``).

        The cells are not validated again (they were in ``fit``); every group
        uses ``cells_[0]`` (biclustering: the half-sweeps regroup the columns by
        the current clusters of the other side).
        """
        self._check_fitted()
        if len(self.cells_) != 1:
            raise ValueError("with_groups needs a single cell model.")
        groups = np.ascontiguousarray(column_groups, dtype=np.int64)
        if groups.shape != (self.n_features_in_,):
            raise ValueError(f"column_groups must have {self.n_features_in_} entries.")
        copy = CellBlocks(self.cells, groups, None)
        copy.__dict__.update({key: value for key, value in self.__dict__.items()
                              if key.endswith("_") or key.startswith("_")})
        copy.column_groups = groups
        copy.column_groups_ = groups
        copy.n_groups_ = int(groups.max()) + 1 if groups.size else 0
        copy.group_cells_ = np.zeros(copy.n_groups_, np.int64)
        return copy

    @property
    def _block_kernels(self):
        """The block kernels compiled for the fitted cell types (one type: that type alone)."""
        return _kernels_of(tuple(model.cell_type for model in self.cells_))[0]

    @property
    def kernels(self):
        """The :class:`GibbsKernels` of the fitted cell types."""
        self._check_fitted()
        return _kernels_of(tuple(model.cell_type for model in self.cells_))[1]

    def _check_fitted(self):
        if not hasattr(self, "cells_"):
            raise ValueError("CellBlocks is not fitted: call fit(X) first.")

    @property
    def n_stats(self):
        self._check_fitted()
        return self.n_groups_ * self._width

    def work_size(self, capacity):
        """Item scratch, plus the cache of the items' group statistics (``n_cached_items``)."""
        size = self.n_groups_ * self._n_cell_stats
        cached = min(self.n_cached_items_, MAX_CACHE_ENTRIES // max(size + 1, 1))
        head = size + self._n_cell_stats + 3 + self.n_groups_ * self._width
        return head + cached * (size + 1)

    # -- parameters --------------------------------------------------------------
    def kernel_params(self, cell_params=None):
        """The kernel vector; ``cell_params`` (one vector per cell model) default to theirs."""
        self._check_fitted()
        if cell_params is None:
            cell_params = [model.kernel_params() for model in self.cells_]
        d, n_groups, q = self.n_features_in_, self.n_groups_, self._param_width
        sizes = np.bincount(self.column_groups_, minlength=n_groups)
        blocks = np.zeros((n_groups, q))
        blocks[:, 1] = -1.0
        # one-column groups name their column: their kernels score its cell directly
        single = np.flatnonzero(sizes[self.column_groups_] == 1)
        blocks[self.column_groups_[single], 1] = single
        for g in range(n_groups):
            m = self.group_cells_[g]
            p = np.asarray(cell_params[m], dtype=np.float64)
            blocks[g, 0] = self.cells_[m].code
            blocks[g, 2:2 + p.size] = p
        return np.concatenate([[n_groups, d, self._width, q, self._n_cell_stats],
                               self.column_groups_, blocks.ravel()]).astype(np.float64)

    def cell_params(self, params):
        """The parameter vector of each cell model inside the kernel vector ``params``."""
        self._check_fitted()
        d, q = self.n_features_in_, self._param_width
        blocks = np.asarray(params[5 + d:]).reshape(self.n_groups_, q)
        out = [model.kernel_params() for model in self.cells_]
        for m, model in enumerate(self.cells_):
            used = np.flatnonzero(self.group_cells_ == m)
            if used.size:
                out[m] = blocks[used[0], 2:2 + out[m].size].copy()
        return out

    @property
    def resamples_hyperparameters(self):
        return any(model.resamples_hyperparameters for model in self.cells_)

    def _block_rows(self, stats, active, m):
        """Cell statistics of every block of cell model ``m`` among the ``active`` slots."""
        width, s = self._width, self.cells_[m].n_stats
        groups = np.flatnonzero(self.group_cells_ == m)
        table = stats[np.asarray(active)].reshape(len(active), self.n_groups_, width)
        return table[:, groups, :s].reshape(-1, s)

    def resample_params(self, params, stats, shared, counts, active, random_state):
        """Each cell model's grid hyperparameters drawn given all of its blocks (None: unchanged)."""
        current = self.cell_params(params)
        changed = False
        for m, model in enumerate(self.cells_):
            if not model.resamples_hyperparameters:
                continue
            rows = self._block_rows(stats, active, m)
            new = model.resample_params(current[m], rows, None, None, np.arange(rows.shape[0]),
                                        random_state)
            if new is not None:
                current[m] = new
                changed = True
        return self.kernel_params(current) if changed else None

    def hyperparameter_grid(self):
        """Product of the cell models' grids: ``(params (G, p), log_prior (G,))``, or ``None``."""
        self._check_fitted()
        grids = [model.hyperparameter_grid() for model in self.cells_]
        if all(grid is None for grid in grids):
            return None
        axes = [(grid[0], grid[1]) if grid is not None
                else (model.kernel_params()[None, :], np.zeros(1))
                for model, grid in zip(self.cells_, grids)]
        size = int(np.prod([len(lp) for _, lp in axes]))
        if size > MAX_PRODUCT_GRID:
            raise ValueError(f"the product of the cell models' hyperparameter grids has {size} "
                             f"points (more than {MAX_PRODUCT_GRID}).")
        params, log_prior = [], []
        for combo in itertools.product(*[range(len(lp)) for _, lp in axes]):
            params.append(self.kernel_params([axes[m][0][g] for m, g in enumerate(combo)]))
            log_prior.append(sum(axes[m][1][g] for m, g in enumerate(combo)))
        return np.array(params), np.array(log_prior)

    def describe_params(self, params):
        """Named hyperparameters of kernel vectors (rows): ``name`` or ``name[m]`` per cell model."""
        params = np.atleast_2d(params)
        per_row = [self.cell_params(row) for row in params]
        out = {}
        for m, model in enumerate(self.cells_):
            if not model.resamples_hyperparameters:
                continue
            named = model.describe_params(np.array([row[m] for row in per_row]))
            for name, values in named.items():
                out[name if len(self.cells_) == 1 else f"{name}[{m}]"] = values
        return out

    # -- whole-data helpers ---------------------------------------------------------------
    def log_marginal(self, X, params=None):
        """``log m`` of the rows of ``X`` as one cluster (sum over groups of the block marginals)."""
        data = self.kernel_data(X)
        return self.partition_log_likelihood(data, np.zeros(data.shape[0], np.int64), params)

    def partition_log_likelihood(self, data, labels, params=None):
        """``sum_c log m(X_c)`` of the partition ``labels`` of the rows of ``data`` (all blocks)."""
        params = self.kernel_params() if params is None else np.asarray(params, np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        n_clusters = int(labels.max()) + 1 if labels.size else 0
        table = np.zeros((n_clusters, self.n_groups_ * self._width))
        self._block_kernels.block_table(params, data, labels, n_clusters, table)
        # a plain sum in a fixed order: small tables run its Python source (the same value)
        return float(call(kb.sum_block_log_marginals, params, table,
                          small=table.size <= INTERPRETED_TABLE_ENTRIES))

    def block_statistics(self, data, labels, params=None):
        """Cell statistics of every (cluster, group) block of the partition ``labels``.

        ``(K, G, S + 1)``: the statistics (zero-padded to the longest ``S``), then the
        block's ``log_marginal``.
        """
        params = self.kernel_params() if params is None else np.asarray(params, np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        n_clusters = int(labels.max()) + 1 if labels.size else 0
        out = np.zeros((n_clusters, self.n_groups_ * self._width))
        self._block_kernels.block_table(params, data, labels, n_clusters, out)
        out = out.reshape(n_clusters, self.n_groups_, self._width)
        return np.concatenate([out[..., :self._n_cell_stats], out[..., -1:]], axis=2)

    def new_rows_log_predictive(self, data, labels, data_new, params=None):
        """Log predictive density of each new row in each cluster of ``labels`` and in a new one.

        ``out[m, c] = log p(data_new[m] | the rows of cluster c)``, the cells of
        each group scored jointly (``log m(block + cells) - log m(block)``, as
        the Gibbs scan scores a row); the last column is an empty cluster (the
        prior predictive). NaN cells are missing (they add nothing).

        Parameters
        ----------
        data : ndarray of shape (n, D)
            The rows ``labels`` cluster (float64, NaN = missing).
        labels : ndarray of shape (n,)
            Cluster labels ``0..K-1``.
        data_new : ndarray of shape (m, D)
        params : ndarray, default=None
            Kernel parameters (default ``kernel_params()``).

        Returns
        -------
        log_predictive : ndarray of shape (m, K + 1)
        """
        params = self.kernel_params() if params is None else np.asarray(params, np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        n_clusters = int(labels.max()) + 1 if labels.size else 0
        table = np.zeros((n_clusters + 1, self.n_groups_ * self._width))   # + an empty one
        kernels = self._block_kernels
        kernels.block_table(params, data, labels, n_clusters + 1, table)
        data_new = np.ascontiguousarray(data_new, dtype=np.float64)
        return kernels.new_rows_log_predictive(params, table, data_new,
                                               np.empty((data_new.shape[0], n_clusters + 1)))


__all__ = ["CellBlocks", "MAX_PRODUCT_GRID", "MAX_CACHE_ENTRIES", "INTERPRETED_TABLE_ENTRIES"]
