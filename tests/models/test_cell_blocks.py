"""CellBlocks: the block likelihood against sums of cell marginals, the Gibbs protocol's
identities (predictive = difference of cluster marginals, add/remove, refresh), mixed
cell types, the grid hyperprior and the exact subset table."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from oracles import set_partitions
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.models.cell_blocks import CellBlocks
from sklearn_trellis.models.cells import (BernoulliCells, CategoricalCells, NormalCells,
                                          PoissonCells)
from sklearn_trellis.models.priors import CRP


def mixed_matrix(rng, n=7):
    X = np.column_stack([rng.normal(size=n), rng.randint(2, size=n), rng.poisson(2.0, size=n),
                         rng.randint(3, size=n), rng.normal(5.0, 2.0, size=n)]).astype(float)
    X[1, 0] = np.nan
    X[4, 3] = np.nan
    return X


def mixed_blocks(X):
    cells = [NormalCells(hyperprior="fixed").fit(X[:, 0]), BernoulliCells().fit(X[:, 1]),
             PoissonCells().fit(X[:, 2]), CategoricalCells().fit(X[:, 3]),
             NormalCells().fit(X[:, 4])]
    return cells, CellBlocks(cells).fit(X)


def test_log_marginal_is_the_sum_of_block_marginals():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(5, 6))
    X[2, 3] = np.nan
    cells = NormalCells(hyperprior="fixed").fit(X)
    groups = np.array([0, 1, 0, 2, 1, 0])
    blocks = CellBlocks(cells, column_groups=groups).fit(X)
    expected = sum(cells.log_marginal(X[:, groups == g]) for g in range(3))
    assert blocks.log_marginal(X) == pytest.approx(expected)


def test_mixed_cell_types_one_group_per_column():
    X = mixed_matrix(np.random.RandomState(1))
    cells, blocks = mixed_blocks(X)
    assert blocks.n_groups_ == 5
    expected = sum(model.log_marginal(X[:, j]) for j, model in enumerate(cells))
    assert blocks.log_marginal(X) == pytest.approx(expected)


def protocol_state(blocks, data, labels):
    state = gibbs.new_state(blocks, data, labels, 1.0)
    return state


@pytest.mark.parametrize("kind", ["normal", "mixed"])
def test_predictive_is_a_difference_of_cluster_marginals(kind):
    rng = np.random.RandomState(2)
    if kind == "normal":
        X = rng.normal(size=(6, 5))
        X[0, 1] = np.nan
        blocks = CellBlocks(NormalCells().fit(X), column_groups=[0, 1, 1, 0, 2]).fit(X)
    else:
        X = mixed_matrix(rng, 6)
        blocks = mixed_blocks(X)[1]
    data = blocks.kernel_data(X)
    fns = blocks.kernels
    params = blocks.kernel_params()
    labels = np.array([0, 0, 1, 1, 1, 0])
    state = protocol_state(blocks, data, labels)
    shared, work = state.shared, state.work
    for i in range(6):
        c = state.labels[i]
        before = fns.log_cluster(params, state.stats, shared, c)
        fns.prepare(params, data, state.labels, state.stats, shared, work, i)
        fns.remove(params, data, state.stats, shared, work, c, i)
        without = fns.log_cluster(params, state.stats, shared, c)
        predictive = fns.log_predictive(params, data, state.stats, shared, work, c, i)
        assert predictive == pytest.approx(before - without, abs=1e-9)
        fns.add(params, data, state.stats, shared, work, c, i)
        assert fns.log_cluster(params, state.stats, shared, c) == pytest.approx(before)
    # the statistics after the round trips equal a fresh build and a refresh
    fresh = protocol_state(blocks, data, labels)
    active = state.active[:state.meta[0]]
    assert np.allclose(state.stats[active], fresh.stats[active])
    fns.refresh(params, data, state.labels, state.stats, shared, state.active, state.meta[0])
    assert np.allclose(state.stats[active], fresh.stats[active])
    # the log joint is the CRP EPPF plus the sum of the cluster marginals
    total = sum(blocks.log_marginal(X[labels == c]) for c in (0, 1))
    eppf = CRP(1.0).log_eppf([3, 3])
    assert gibbs.log_joint(state, blocks, CRP(1.0).kernel_params()) == pytest.approx(
        eppf + total)


def test_subset_table_matches_brute_force():
    X = mixed_matrix(np.random.RandomState(3), 5)
    blocks = mixed_blocks(X)[1]
    table = blocks.subset_log_marginals(blocks.kernel_data(X))
    for r in range(1, 6):
        for subset in itertools.combinations(range(5), r):
            mask = sum(1 << i for i in subset)
            assert table[mask] == pytest.approx(blocks.log_marginal(X[list(subset)]))


def test_block_statistics_and_resample_params():
    rng = np.random.RandomState(4)
    X = np.vstack([rng.normal(0, 1, (10, 6)), rng.normal(4, 1, (10, 6))])
    cells = NormalCells().fit(X)
    blocks = CellBlocks(cells, column_groups=[0, 0, 0, 1, 1, 1]).fit(X)
    data = blocks.kernel_data(X)
    labels = np.repeat([0, 1], 10)
    table = blocks.block_statistics(data, labels)
    assert table.shape == (2, 2, 4)
    assert table[:, :, 0].tolist() == [[30, 30], [30, 30]]
    state = gibbs.new_state(blocks, data, labels, 1.0)
    active = state.active[:state.meta[0]]
    rows = blocks._block_rows(state.stats, active, 0)
    assert np.allclose(np.sort(rows[:, 1]), np.sort(table[:, :, 1].ravel()))
    grid_params, log_prior = cells.hyperparameter_grid()
    expected = cells._grid_log_likelihoods(None, rows)
    new = blocks.resample_params(state.params, state.stats, state.shared, state.counts, active,
                                 np.random.RandomState(0))
    drawn = blocks.cell_params(new)[0]
    g = int(np.flatnonzero(np.all(np.isclose(grid_params, drawn), axis=1))[0])
    assert expected[g] > expected.max() - 15   # a plausible grid point was drawn
    # the rate in the data's units: the kernels' b0 is in units of unit**2
    assert blocks.describe_params(new)["rate"][0] == pytest.approx(drawn[3] * cells.unit_ ** 2)


def test_hyperparameter_grid_is_the_product_of_the_cell_grids():
    X = mixed_matrix(np.random.RandomState(5), 6)
    cells = [NormalCells(hyperprior="fixed").fit(X[:, 0]), BernoulliCells().fit(X[:, 1])]
    blocks = CellBlocks(cells).fit(X[:, :2])
    params, log_prior = blocks.hyperparameter_grid()
    assert params.shape[0] == cells[1].grid_scale_.size
    assert np.isclose(np.exp(log_prior).sum(), 1.0)
    assert np.allclose([blocks.cell_params(p)[1] for p in params],
                       cells[1].hyperparameter_grid()[0])
    fixed = CellBlocks(NormalCells(hyperprior="fixed").fit(X[:, 0])).fit(X[:, :1])
    assert fixed.hyperparameter_grid() is None


def test_one_column_groups_score_from_cached_constants():
    """Mixed one-column groups (the CrossCat view) next to a two-column group: after a long
    random walk of moves between clusters, every predictive is the difference of the
    cluster marginals computed from scratch, and log_cluster is the cluster's marginal."""
    rng = np.random.RandomState(8)
    X = mixed_matrix(rng, 40)
    X[rng.rand(*X.shape) < 0.1] = np.nan
    cells = mixed_blocks(X)[0]
    X = np.column_stack([X, rng.normal(5.0, 2.0, 40)])
    cells.append(NormalCells().fit(X[:, 5]))
    blocks = CellBlocks(cells, column_groups=[0, 1, 2, 3, 4, 4], group_cells=[0, 1, 2, 3, 4]
                        ).fit(X)
    data = blocks.kernel_data(X)
    fns = blocks.kernels
    for point in range(3):
        current = [model.hyperparameter_grid() for model in cells]
        params = blocks.kernel_params([model.kernel_params() if grid is None
                                       else grid[0][point * (len(grid[0]) - 1) // 2]
                                       for model, grid in zip(cells, current)])
        labels = rng.randint(4, size=40)
        state = gibbs.new_state(blocks, data, labels, 1.0, params=params)
        gibbs.set_params(state, blocks, data, params)
        for step in range(300):
            i = rng.randint(40)
            c = state.labels[i]
            fns.prepare(params, data, state.labels, state.stats, state.shared, state.work, i)
            fns.remove(params, data, state.stats, state.shared, state.work, c, i)
            state.labels[i] = -1
            target = state.active[rng.randint(state.meta[0])]
            members = np.flatnonzero(state.labels == target)
            without = blocks.partition_log_likelihood(data[members], np.zeros(members.size,
                                                                              np.int64), params)
            with_i = blocks.partition_log_likelihood(data[np.append(members, i)],
                                                     np.zeros(members.size + 1, np.int64),
                                                     params)
            got = fns.log_predictive(params, data, state.stats, state.shared, state.work,
                                     target, i)
            assert got == pytest.approx(with_i - without, rel=1e-12, abs=1e-12 * abs(without))
            assert fns.log_cluster(params, state.stats, state.shared, target) == pytest.approx(
                without, rel=1e-12, abs=1e-12)
            fns.add(params, data, state.stats, state.shared, state.work, target, i)
            state.labels[i] = target


@pytest.mark.parametrize("n_split_merge", [0, 3])
def test_gibbs_engine_on_cell_blocks_matches_brute_force(n_split_merge):
    rng = np.random.RandomState(1)
    X = np.vstack([rng.binomial(1, 0.8, (3, 5)), rng.binomial(1, 0.2, (3, 5))]).astype(float)
    X[0, 0] = np.nan
    blocks = CellBlocks(BernoulliCells(strength=2.0).fit(X), column_groups=[0, 0, 1, 1, 1]).fit(X)
    partitions = set_partitions(6)
    log_p = np.array([CRP(1.0).log_eppf(np.bincount(z))
                      + sum(blocks.log_marginal(X[z == c]) for c in range(z.max() + 1))
                      for z in partitions])
    weights = np.exp(log_p - logsumexp(log_p))
    exact = np.einsum("p,pij->ij", weights, partitions[:, :, None] == partitions[:, None, :])
    result = gibbs.run_chain(blocks, CRP(1.0), blocks.kernel_data(X), n_sweeps=4000,
                             burn_in=100, n_split_merge=n_split_merge, random_state=0)
    samples = result.samples
    frequencies = (samples[:, :, None] == samples[:, None, :]).mean(axis=0)
    assert np.abs(frequencies - exact).max() < 0.04


@pytest.mark.parametrize("kwargs, X, error, match", [
    (dict(column_groups=[0, 1]), np.zeros((2, 3)), ValueError, "column_groups"),
    (dict(column_groups=[0, 1, 1], group_cells=[0, 1]), np.zeros((2, 3)), ValueError,
     "group_cells"),
    (dict(), np.zeros(3), ValueError, "2-d"),
    (dict(column_groups=[0, 0, 0]), np.full((2, 3), 2.0), ValueError, "binary"),
])
def test_bad_input_raises(kwargs, X, error, match):
    cells = BernoulliCells().fit([0, 1])
    with pytest.raises(error, match=match):
        CellBlocks(cells, **kwargs).fit(X)


def test_cells_must_be_fitted_cell_models():
    with pytest.raises(ValueError, match="not fitted"):
        CellBlocks(NormalCells()).fit(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="cell models"):
        CellBlocks("normal").fit(np.zeros((2, 2)))


@pytest.mark.parametrize("groups", [None, [0, 1, 0, 2, 1]])
def test_new_state_without_rebuild_equals_the_item_by_item_build(groups):
    """CellBlocks' new Gibbs state (every slot reset, one refresh: ``refresh_rebuilds``) is
    the state the engine's item-by-item ``rebuild`` builds, bit for bit; a scan continues
    alike from both (on the one-type table: the mixed table's Gibbs moves would compile
    for this case alone, about 5 CPU s, and no estimator samples a mixed CellBlocks; its
    kernels' protocol is test_predictive_is_a_difference_of_cluster_marginals[mixed])."""
    rng = np.random.RandomState(3)
    X = mixed_matrix(rng, n=9)
    cells, blocks = mixed_blocks(X)
    if groups is not None:
        cells = NormalCells().fit(X)
        blocks = CellBlocks(cells, column_groups=groups).fit(X)
    data = blocks.kernel_data(X)
    labels = np.array([2, 0, 2, 1, 0, 0, 3, 1, 2])
    assert blocks.refresh_rebuilds
    built = gibbs.new_state(blocks, data, labels, 1.0)
    rebuilt = gibbs.new_state(blocks, data, labels, 1.0)
    rebuilt.stats[:] = 7.0
    gibbs._engine(blocks).rebuild(
        rebuilt.params, data, labels, rebuilt.labels, rebuilt.counts, rebuilt.active,
        rebuilt.where, rebuilt.free, rebuilt.meta, rebuilt.stats, rebuilt.shared, rebuilt.work)
    gibbs.refresh(rebuilt, blocks, data)
    for name in ("labels", "counts", "active", "where", "free", "meta", "stats", "shared"):
        np.testing.assert_array_equal(getattr(built, name), getattr(rebuilt, name))
    if groups is None:
        return
    prior = CRP(1.0).kernel_params()
    for state in (built, rebuilt):
        gibbs.sweep(state, blocks, prior, data, np.random.RandomState(0), n_split_merge=3)
    np.testing.assert_array_equal(built.labels, rebuilt.labels)
    np.testing.assert_array_equal(built.stats, rebuilt.stats)


def test_one_type_kernels_equal_the_type_code_dispatch():
    """A table of one cell type compiles that type's functions alone; its kernels give the
    values of the dispatch over every type (the kernels of a mixed table), bit for bit."""
    from sklearn_trellis.models import _cell_block_kernels as kb
    from sklearn_trellis.models.cell_types import bernoulli, normal

    rng = np.random.RandomState(1)
    X = rng.normal(size=(8, 5))
    X[2, 1] = np.nan
    cells = NormalCells().fit(X)
    blocks = CellBlocks(cells, column_groups=[0, 1, 0, 2, 1]).fit(X)
    data = blocks.kernel_data(X)
    params = blocks.kernel_params()
    labels = np.array([0, 1, 0, 2, 1, 1, 0, 2])
    one, dispatch = kb.specialise([normal]), kb.specialise([normal, bernoulli])
    assert one is not dispatch and blocks._block_kernels is one
    tables = [np.zeros((3, blocks.n_stats)) for _ in range(2)]
    for kernels, table in zip((one, dispatch), tables):
        kernels.block_table(params, data, labels, 3, table)
    np.testing.assert_array_equal(tables[0], tables[1])
    # the grid update of the cell model: that type's log marginal, the dispatch's values
    rows = tables[0].reshape(3, blocks.n_groups_, -1)[:, :, :cells.n_stats]
    rows = np.ascontiguousarray(rows.reshape(-1, cells.n_stats))
    expected = []
    for g in range(cells.grid_scale_.size):
        total = 0.0
        for row in rows:
            total += cells.kernels.log_marginal(cells._grid_params(g), row)
        expected.append(total)
    np.testing.assert_array_equal(cells._grid_log_likelihoods(None, rows), expected)
