"""Exact CrossCat posterior on tiny tables by enumeration.

The joint of Murphy Eqs. 38-41 with fixed concentrations and each column's
cell hyperparameters summed over its grid:

    p(c, r, X) = CRP(c; alpha_views) prod_v [ CRP(r_v; alpha_rows)
                  prod_{j: c_j = v} sum_g prior_j(g) prod_k m_j(X_{k j} | g) ]

The sum over the row partitions of a view depends only on the view's column
set ``S``, so ``Z_S = sum_r CRP(r) prod_{j in S} L_j(r)`` is tabulated for all
``2**d`` column subsets from the ``Bell(n)`` row partitions, and the column
partitions (``Bell(d)``) are enumerated on top.

A new row's predictive density sums the same way: given the view partition its
views are independent, given a view's row partition its columns' grid points
are, so ``p(x | X)`` needs one table per column subset and row partition
(:meth:`ExactCrossCat.log_predictive`). The same enumeration, each state
weighted by the row's observed cells, gives the exact predictive of its missing
cells (:meth:`ExactCrossCat.impute`) and exact draws of them
(:meth:`ExactCrossCat.simulate`).
"""

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..._core.labels import set_partitions
from ..._core.subsets import membership_table
from ...models.cell_loops import (column_log_score, column_stats, grid_log_marginals,
                                  predictive_draws, predictive_means, rows_log_predictive,
                                  value_log_predictive)
from ...models.priors import CRP
from ..gibbs.crosscat import CrossCatSample
from .bicluster import cluster_masks

#: Largest table exact mode enumerates (Bell(8) = 4140 row partitions, Bell(6) = 203 views).
MAX_EXACT_ROWS = 8
MAX_EXACT_COLUMNS = 6

#: A grid sum below this (the smallest normal float times ~1e28) is redone in logs.
_SMALLEST_SUM = 1e-280


def _crp_log_eppf(partitions, alpha):
    prior = CRP(alpha)
    return np.array([prior.log_eppf(np.bincount(p)) for p in partitions])


def _log_total(terms):
    """``log sum exp(terms)`` of all entries (-inf when every term is)."""
    top = terms.max()
    if not np.isfinite(top):
        return float(top)
    return float(top + np.log(np.exp(terms - top).sum()))


@dataclass
class _PredictiveTables:
    places: np.ndarray           # (Bell(n), n + 1) row subset of each place (a new cluster: 0)
    log_place: np.ndarray        # (Bell(n), n + 1) CRP log weight of each place
    subset_log_post: np.ndarray  # (2**d, Bell(n)) log p(r | X_S)
    view_masks: np.ndarray       # (Bell(d), d) the column subset of each view (0 past the last)
    view_log_post: np.ndarray    # (Bell(d),) log p(c | X)
    columns: list                # per column: ExactCrossCat._column_tables


@dataclass
class _RowPosterior:
    """One new row ``x`` against the enumeration."""

    place_log_joint: np.ndarray      # (2**d, Bell(n), n + 1) log p(r, place, x_S | X_S)
    log_view: np.ndarray             # (2**d,) log p(x_S | X_S)
    partition_log_joint: np.ndarray  # (Bell(d),) log p(c, x | X)

    def partition_probabilities(self):
        """``p(c | x, X)`` of every column partition."""
        return np.exp(self.partition_log_joint - logsumexp(self.partition_log_joint))

    def place_probabilities(self, mask):
        """``p(r, place | x_S, X_S)`` in the view of the columns ``mask``."""
        return np.exp(self.place_log_joint[mask] - self.log_view[mask])


@dataclass
class ExactCrossCat:
    """Exact posterior summaries; :meth:`sample` draws exact samples."""

    log_marginal_likelihood: float
    dependence_probability: np.ndarray   # (d, d)
    row_similarity: np.ndarray           # (d, n, n): co-clustering in the view of column j
    view_partitions: np.ndarray          # (Bell(d), d)
    view_log_posterior: np.ndarray       # (Bell(d),)
    row_partitions: np.ndarray           # (Bell(n), n)
    subset_row_log_posterior: np.ndarray  # (2**d, Bell(n)) unnormalised
    grid_log_scores: list                # per column: (Bell(n), G)
    grids: list
    alpha_views: float
    alpha_rows: float
    data: np.ndarray                     # (n, d) the encoded table
    codes: np.ndarray                    # (d,) cell type code of each column
    n_stats: np.ndarray                  # (d,) statistics per block of each column

    def sample(self, n_samples, rng):
        """Exact draws as :class:`CrossCatSample` (views, rows, grid point per column)."""
        out = []
        p_views = np.exp(self.view_log_posterior - logsumexp(self.view_log_posterior))
        crp_rows = _crp_log_eppf(self.row_partitions, self.alpha_rows)
        for _ in range(n_samples):
            views = self.view_partitions[rng.choice(p_views.size, p=p_views)]
            rows, params = [], [None] * views.size
            log_joint = CRP(self.alpha_views).log_eppf(np.bincount(views))
            for v in range(views.max() + 1):
                mask = int(sum(1 << int(j) for j in np.flatnonzero(views == v)))
                logits = self.subset_row_log_posterior[mask]
                r = rng.choice(logits.size, p=np.exp(logits - logsumexp(logits)))
                rows.append(self.row_partitions[r])
                log_joint += crp_rows[r]
                for j in np.flatnonzero(views == v):
                    scores = self.grid_log_scores[j][r]
                    g = rng.choice(scores.size, p=np.exp(scores - logsumexp(scores)))
                    params[j] = self.grids[j][0][g].copy()
                    log_joint += scores[g] - self.grids[j][1][g]
            out.append(CrossCatSample(
                views=views.astype(np.int32), rows=np.array(rows, dtype=np.int32),
                alphas=np.full(len(rows), self.alpha_rows), alpha_views=self.alpha_views,
                column_params=params, log_joint=float(log_joint)))
        return out

    def log_predictive(self, data_new):
        """``log p(x | X)`` of each row ``x`` of ``data_new``, the exact sum over the posterior.

        Each row is a new row of the fitted table, scored alone. In every view of
        a column partition it joins cluster ``k`` of the view's row partition
        with the CRP's weight ``n_k / (n + alpha_rows)`` (a new cluster:
        ``alpha_rows / (n + alpha_rows)``), and each of the view's columns
        scores its cell by ``m_g(X_k + x) / m_g(X_k)`` (a new cluster:
        ``m_g(x)``) averaged over the column's grid posterior given the row
        partition. Summed over every column partition, row partition and grid
        point with its posterior probability, this is ``p(X + x) / p(X)``. NaN
        cells are missing (they add nothing).

        Parameters
        ----------
        data_new : ndarray of shape (m, n_columns), encoded like the table

        Returns
        -------
        log_density : ndarray of shape (m,)
        """
        data_new = np.asarray(data_new, dtype=np.float64)
        tables = self._predictive_tables()
        out = np.empty(data_new.shape[0])
        for m, x in enumerate(data_new):
            out[m] = _log_total(self._row_posterior(x, tables).partition_log_joint)
        return out

    def impute(self, data_new, values):
        """The exact predictive of each missing cell given the row's observed cells.

        ``p(x_miss | x_obs, X) = sum_s p(s | X) p(x_obs | s) p(x_miss | x_obs, s) /
        sum_s p(s | X) p(x_obs | s)`` over every state ``s`` (column partition,
        row partition of each view, the new row's cluster in each view, grid
        points): the enumeration of :meth:`log_predictive` weights each state
        by the row's observed cells, and a missing cell of column ``j`` is
        predicted by its block's posterior predictive averaged over the grid
        posterior of ``j`` (the observed cells do not touch it).

        Parameters
        ----------
        data_new : ndarray of shape (m, n_columns), encoded like the table; NaN = missing
        values : dict
            Column -> the values (1-d float64) whose probabilities are wanted;
            the other columns get their predictive means.

        Returns
        -------
        means : ndarray of shape (m, n_columns)
            Predictive mean of each missing cell of a column not in ``values``
            (NaN elsewhere).
        proba : dict
            Column ``j`` of ``values`` -> ndarray (m, len(values[j])): the
            predictive probabilities of a missing cell (rows whose cell is
            observed: NaN).
        log_observed : ndarray of shape (m,)
            ``log p(x_obs | X)`` of each row with a missing cell (NaN for the
            others); where it is not finite, nothing is conditioned (NaN).
        """
        data_new = np.asarray(data_new, dtype=np.float64)
        m, d = data_new.shape
        tables = self._predictive_tables()
        expected = [self._column_place_expectations(j, values.get(j), tables)
                    for j in range(d)]
        column_masks = np.take_along_axis(tables.view_masks, self.view_partitions, axis=1)
        means = np.full((m, d), np.nan)
        proba = {j: np.full((m, v.size), np.nan) for j, v in values.items()}
        log_observed = np.full(m, np.nan)
        for i, x in enumerate(data_new):
            missing = np.flatnonzero(np.isnan(x))
            if missing.size == 0:
                continue
            post = self._row_posterior(x, tables)
            log_observed[i] = _log_total(post.partition_log_joint)
            if not np.isfinite(log_observed[i]):
                continue
            partition_post = post.partition_probabilities()
            place_probabilities = {}
            for j in missing:
                # p(r, place | x_obs, X) in the view of j: p(view of j = S | x_obs, X)
                # times p(r, place | x_S, X_S), summed over the column subsets S
                in_view = np.bincount(column_masks[:, j], weights=partition_post,
                                      minlength=1 << d)
                joint = np.zeros(tables.places.shape)
                for mask in np.flatnonzero(in_view > 0):
                    if mask not in place_probabilities:
                        place_probabilities[mask] = post.place_probabilities(mask)
                    joint += in_view[mask] * place_probabilities[mask]
                total = np.tensordot(joint, expected[j], axes=2)
                if j in proba:
                    proba[j][i] = total
                else:
                    means[i, j] = total[0]
        return means, proba, log_observed

    def simulate(self, condition, n_rows, rng):
        """``n_rows`` exact draws of the missing cells of ``condition`` given its observed ones.

        Each row draws its state from ``p(s | X, x_given)``: a column
        partition, then in each view holding a missing column the (row
        partition, cluster of the new row), then each missing column's grid
        point given that row partition, and its cell from the block's
        posterior predictive at that grid point.

        Parameters
        ----------
        condition : ndarray of shape (n_columns,), encoded; NaN = to draw
        n_rows : int
        rng : numpy.random.RandomState

        Returns
        -------
        rows : ndarray of shape (n_rows, n_columns), encoded
        """
        condition = np.asarray(condition, dtype=np.float64)
        tables = self._predictive_tables()
        post = self._row_posterior(condition, tables)
        partitions = rng.choice(post.partition_log_joint.size, size=n_rows,
                                p=post.partition_probabilities())
        out = np.repeat(condition[None, :], n_rows, axis=0)
        missing = np.isnan(condition)
        n_places = tables.places.shape[1]
        drawn_masks = tables.view_masks[partitions]
        for mask in np.unique(drawn_masks):
            columns = [j for j in np.flatnonzero(missing) if mask >> j & 1]
            if not columns:
                continue
            rows_here = np.flatnonzero((drawn_masks == mask).any(axis=1))
            place = post.place_probabilities(mask).ravel()
            r, a = np.divmod(rng.choice(place.size, size=rows_here.size, p=place / place.sum()),
                             n_places)
            for j in columns:
                stats, _, grid_log_post = tables.columns[j]
                cumulative = np.cumsum(np.exp(grid_log_post[r]), axis=1)
                points = np.minimum((rng.random_sample(r.size)[:, None]
                                     * cumulative[:, -1:] >= cumulative).sum(axis=1),
                                    cumulative.shape[1] - 1)
                for g in np.unique(points):
                    here = points == g
                    draws = np.empty(int(here.sum()))
                    predictive_draws(int(self.codes[j]), self.grids[j][0][g], stats[g],
                                     tables.places[r[here], a[here]],
                                     rng.randint(np.iinfo(np.int32).max), draws)
                    out[rows_here[here], j] = draws
        return out

    def _predictive_tables(self):
        """What every new row's predictive shares: the places of a new row in each row
        partition and their CRP weights, the posteriors of the row partitions given
        each column subset and of the column partitions, and the column tables."""
        n, d = self.data.shape
        rows = self.row_partitions
        # each place of every row partition: its clusters (0 past the last), then a new one
        places = np.concatenate([cluster_masks(rows), np.zeros((len(rows), 1), np.int64)], 1)
        sizes = (rows[:, :, None] == np.arange(n)[None, None, :]).sum(axis=1)
        weights = CRP(self.alpha_rows).log_predictive_weights(sizes.ravel())
        log_place = (np.concatenate([weights[:-1].reshape(sizes.shape),
                                     np.full((len(rows), 1), weights[-1])], 1)
                     - np.log(n + self.alpha_rows))
        subset_log_z = logsumexp(self.subset_row_log_posterior, axis=1)
        return _PredictiveTables(
            places=places, log_place=log_place,
            subset_log_post=self.subset_row_log_posterior - subset_log_z[:, None],
            view_masks=cluster_masks(self.view_partitions),
            view_log_post=self.view_log_posterior - self.log_marginal_likelihood,
            columns=[self._column_tables(j) for j in range(d)])

    def _row_posterior(self, x, tables):
        """The enumeration of one new row ``x``: :class:`_RowPosterior`."""
        d = self.data.shape[1]
        places = tables.places
        per_column = [self._column_place_log_predictive(j, x[j], places, *tables.columns[j])
                      for j in range(d)]
        # log p(x_S, r, place | X_S) of every column subset S, the view of those columns,
        # and its sum over the view's row partitions and the new row's places
        log_view = np.zeros(1 << d)
        placed = np.zeros((1 << d,) + places.shape)
        place_log_joint = np.zeros((1 << d,) + places.shape)
        for mask in range(1, 1 << d):
            low = (mask & -mask).bit_length() - 1
            placed[mask] = placed[mask & (mask - 1)] + per_column[low]
            place_log_joint[mask] = (tables.subset_log_post[mask][:, None] + tables.log_place
                                     + placed[mask])
            log_view[mask] = _log_total(place_log_joint[mask])
        return _RowPosterior(place_log_joint, log_view,
                             tables.view_log_post + log_view[tables.view_masks].sum(axis=1))

    def _column_tables(self, j):
        """Column ``j``'s statistics ``(G, 2**n, n_stats)`` and log marginals ``(G, 2**n)``
        of every row subset at every grid point, and ``log p(g | r, X_j)`` ``(Bell(n), G)``."""
        n = self.data.shape[0]
        grid, code = self.grids[j][0], int(self.codes[j])
        single = np.zeros((grid.shape[0], n, int(self.n_stats[j])))
        for g in range(grid.shape[0]):
            column_stats(code, grid[g], np.ascontiguousarray(self.data[:, j]),
                         np.arange(n), single[g])
        members = membership_table(n).astype(float)
        stats = np.ascontiguousarray(np.einsum("si,giw->gsw", members, single))
        log_m = grid_log_marginals(code, grid, stats, np.empty(stats.shape[:2]))
        scores = self.grid_log_scores[j]
        return stats, log_m, scores - logsumexp(scores, axis=1, keepdims=True)

    def _column_place_expectations(self, j, values, tables):
        """``(Bell(n), n + 1, k)``: a new cell of column ``j`` in every place of every row
        partition, the grid point summed over its posterior: the probabilities of
        ``values`` (``k`` of them), or (``values`` None) its mean (``k = 1``)."""
        grid, code = self.grids[j][0], int(self.codes[j])
        stats, _, grid_log_post = tables.columns[j]
        if values is None:
            per_point = np.empty(stats.shape[:2])
            for g in range(grid.shape[0]):
                predictive_means(code, grid[g], stats[g], per_point[g])
            per_point = per_point[:, :, None]
        else:
            per_point = np.empty(stats.shape[:2] + (values.size,))
            for g in range(grid.shape[0]):
                value_log_predictive(code, grid[g], stats[g], values, per_point[g])
            per_point = np.exp(per_point)
        return np.einsum("rg,grak->rak", np.exp(grid_log_post), per_point[:, tables.places])

    def _column_place_log_predictive(self, j, value, places, stats, log_m, grid_log_post):
        """``(Bell(n), n + 1)``: ``log p(x_j | r, place, X_j)`` of the new cell ``value`` in
        every place of every row partition, the grid point summed over its posterior."""
        grid, code = self.grids[j][0], int(self.codes[j])
        cell = np.zeros((grid.shape[0], 1, stats.shape[2]))
        for g in range(grid.shape[0]):
            column_stats(code, grid[g], np.array([value]), np.zeros(1, np.int64), cell[g])
        joined = np.ascontiguousarray(stats + cell)
        # log m_g(X_s + x) - log m_g(X_s); the empty subset: log m_g(x)
        gain = grid_log_marginals(code, grid, joined, np.empty(log_m.shape)) - log_m
        overflowed = np.isnan(gain)
        if overflowed.any():
            # a far cell's statistics overflow (its square): its one-cell predictive
            # computes the ratio without them
            for g in np.flatnonzero(overflowed.any(axis=1)):
                ratio = np.zeros((1, gain.shape[1]))
                rows_log_predictive(code, grid[g], stats[g], np.array([value]), ratio)
                gain[g, overflowed[g]] = ratio[0, overflowed[g]]
        # the sum over the grid of positive terms, as a product of probabilities and
        # gains scaled to at most 1 (one matrix product, not an exp per term)
        top = gain.max(axis=0)
        top[~np.isfinite(top)] = 0.0
        sums = np.take_along_axis(np.exp(grid_log_post) @ np.exp(gain - top), places, axis=1)
        with np.errstate(divide="ignore"):
            out = np.log(sums) + top[places]
        # where the scaled sum lost its digits (below the normal floats), sum the logs
        lost = sums < _SMALLEST_SUM
        if lost.any():
            r, a = np.nonzero(lost)
            out[r, a] = logsumexp(grid_log_post[r] + gain[:, places[r, a]].T, axis=1)
        return out


def exact_crosscat(model):
    """Enumerate the posterior of ``model`` (a :class:`~..gibbs.crosscat.CrossCatModel`).

    Concentrations must be fixed (no hyperprior).
    """
    if model.alpha_views.hyperprior is not None or model.alpha_rows.hyperprior is not None:
        raise ValueError("Exact CrossCat needs fixed concentrations (alpha_prior=None): it "
                         "sums over partitions, not over concentrations.")
    data = model.data
    n, d = data.shape
    if n > MAX_EXACT_ROWS or d > MAX_EXACT_COLUMNS:
        raise ValueError(f"Exact CrossCat enumerates Bell(n_rows) x Bell(n_columns) structures; "
                         f"it accepts at most {MAX_EXACT_ROWS} rows and {MAX_EXACT_COLUMNS} "
                         f"columns, got {n} x {d}. Use method='gibbs'.")
    rows = set_partitions(n)
    crp_rows = _crp_log_eppf(rows, model.alpha_rows.value)
    grids = [model.grid(j) for j in range(d)]
    column_scores = np.empty((d, rows.shape[0]))
    grid_scores = []
    for j in range(d):
        grid, log_prior = grids[j]
        t = model.code(j)
        scores = np.empty((rows.shape[0], grid.shape[0]))
        stats = np.zeros((n, model.cells[j].n_stats))
        x = np.ascontiguousarray(data[:, j])
        for r, labels in enumerate(rows):
            for g in range(grid.shape[0]):
                column_stats(t, grid[g], x, labels, stats)
                scores[r, g] = log_prior[g] + column_log_score(t, grid[g], stats)
        grid_scores.append(scores)
        column_scores[j] = logsumexp(scores, axis=1)
    subset = np.zeros((1 << d, rows.shape[0]))
    for mask in range(1, 1 << d):
        members = [j for j in range(d) if mask >> j & 1]
        subset[mask] = crp_rows + column_scores[members].sum(axis=0)
    log_z = logsumexp(subset, axis=1)
    views = set_partitions(d)
    view_log = _crp_log_eppf(views, model.alpha_views.value)
    masks = np.zeros((views.shape[0], d), np.int64)
    for p, labels in enumerate(views):
        for v in range(labels.max() + 1):
            mask = int(sum(1 << int(j) for j in np.flatnonzero(labels == v)))
            view_log[p] += log_z[mask]
            masks[p, labels == v] = mask
    log_marginal = float(logsumexp(view_log))
    weights = np.exp(view_log - log_marginal)
    same_view = views[:, :, None] == views[:, None, :]
    dependence = np.tensordot(weights, same_view.astype(float), axes=1)
    co = (rows[:, :, None] == rows[:, None, :]).astype(float)
    similarity = np.zeros((d, n, n))
    cache = {}
    for p in range(views.shape[0]):
        for j in range(d):
            mask = int(masks[p, j])
            if mask not in cache:
                post = np.exp(subset[mask] - log_z[mask])
                cache[mask] = np.tensordot(post, co, axes=1)
            similarity[j] += weights[p] * cache[mask]
    return ExactCrossCat(
        log_marginal_likelihood=log_marginal, dependence_probability=dependence,
        row_similarity=similarity, view_partitions=views, view_log_posterior=view_log,
        row_partitions=rows, subset_row_log_posterior=subset, grid_log_scores=grid_scores,
        grids=grids, alpha_views=model.alpha_views.value,
        alpha_rows=model.alpha_rows.value, data=data, codes=model.codes,
        n_stats=np.array([cell.n_stats for cell in model.cells], np.int64))


__all__ = ["exact_crosscat", "ExactCrossCat", "MAX_EXACT_ROWS",
           "MAX_EXACT_COLUMNS"]
