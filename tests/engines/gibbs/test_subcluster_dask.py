"""The sub-cluster sampler on shards: the same chain on any sharding, in this process and on
Dask workers (a LocalCluster), exactness with two shards, and ``DPMixture`` on dask arrays."""

import sys

import numpy as np
import pytest

from sklearn_trellis.engines.gibbs import subcluster
from sklearn_trellis.engines.gibbs.shards import (LocalExecutor, aligned_bounds, dyadic_nodes,
                                                  import_distributed, reduce_tree)
from sklearn_trellis.models import NormalGamma, NormalInverseWishart
from sklearn_trellis.models.priors import CRP

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from test_subcluster import check_against_exact, small_data  # noqa: E402


@pytest.fixture(scope="module")
def clients():
    """In-process LocalClusters of 1 and 2 workers (one thread each)."""
    opened = {}
    for n_workers in (1, 2):
        cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                           processes=False, dashboard_address=":0")
        opened[n_workers] = distributed.Client(cluster, set_as_default=False)
    yield opened
    for client in opened.values():
        cluster = client.cluster
        client.close()
        cluster.close()


def blobs(n_per=120, d=3, seed=4, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, 1.0, (n_per, d)) for c in (0, 6, 12)]).astype(dtype)


def chain(lik, executor, n_sweeps=4):
    return subcluster.run_chain(lik, CRP(1.0), executor, n_sweeps=n_sweeps, burn_in=0,
                                random_state=5, n_split_merge=4)


def assert_same_chain(a, b):
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.log_joints, b.log_joints)   # bit for bit
    np.testing.assert_array_equal(a.state.suff, b.state.suff)


def test_block_tree_total_does_not_depend_on_the_shards():
    """Node values of any sharding complete into the same total, bit for bit."""
    rng = np.random.default_rng(0)
    leaves = rng.normal(size=13) * 10.0 ** rng.integers(-8, 8, 13)

    def node_value(level, index):
        values = [leaves[b] if b < leaves.size else 0.0
                  for b in range(index << level, (index + 1) << level)]
        while len(values) > 1:
            values = [values[t] + values[t + 1] for t in range(0, len(values), 2)]
        return values[0]

    totals = set()
    for bounds in ([0, 13], [0, 5, 13], [0, 1, 2, 9, 13], list(range(14))):
        parts = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            nodes = dyadic_nodes(a, b)
            parts.append((nodes, np.array([node_value(*node) for node in nodes])))
        totals.add(float(reduce_tree(parts, 13)))
    assert len(totals) == 1
    assert totals.pop() == pytest.approx(leaves.sum(), rel=1e-12)
    assert aligned_bounds([7, 7, 7], 4) == [0, 8, 16, 21]
    assert aligned_bounds([3, 3, 3], 4) == [0, 4, 8, 9]


# float32 rows for the Gaussian (the sub-cluster chain on float32 data in the fast set,
# with test_dp_mixture_on_a_dask_array); float64 for the diagonal Gaussian, whose float32
# kernels (block densities, the float32 screen) test_subcluster checks one by one and
# whose float32 chain would compile for this case alone (about 7 CPU s)
@pytest.mark.parametrize("likelihood, dtype", [(NormalInverseWishart, np.float32),
                                               (NormalGamma, np.float64)])
def test_same_chain_on_any_number_of_local_shards(likelihood, dtype):
    """Shards of 16-row blocks start the block kernels' row tiles at other rows: the same
    chain bit for bit. One shard runs each launch as one kernel call (``Shard.launch``),
    several shards pass by pass (``launch_pass``, as Dask workers): the same chain too."""
    X = blobs(dtype=dtype)
    lik = likelihood().fit(X)
    data = lik.check_sampler_data(X)
    executors = [LocalExecutor(lik, data, n_shards=s, block_rows=16) for s in (1, 3, 7)]
    assert [e.whole_launches for e in executors] == [True, False, False]
    runs = [chain(lik, executor) for executor in executors]
    for other in runs[1:]:
        assert_same_chain(runs[0], other)
    assert runs[0].samples[-1].max() + 1 >= 3


def test_same_chain_locally_and_on_dask_workers(clients):
    """1 and 2 workers, different chunkings (rechunked to block boundaries): the chain of the
    local executor, bit for bit; only statistics travel."""
    from sklearn_trellis.engines.gibbs.shards import DaskExecutor
    X = blobs()
    lik = NormalInverseWishart().fit(X)
    local = chain(lik, LocalExecutor(lik, lik.check_sampler_data(X), block_rows=16))
    for n_workers, chunks in ((1, 360), (2, 37)):
        executor = DaskExecutor(lik, da.from_array(X, chunks=(chunks, 3)),
                                client=clients[n_workers], block_rows=16)
        assert executor.n_shards == len(aligned_bounds(
            da.from_array(X, chunks=(chunks, 3)).chunks[0], 16)) - 1
        assert_same_chain(local, chain(lik, executor))
        # parameters and statistics only: far less than the rows per iteration
        assert executor.bytes_sent / 4 < 40 * X.nbytes


def test_shards_are_spread_over_the_workers_by_rows(clients):
    """Each shard's actor runs on ``executor.workers[s]``; the workers hold equal rows up to
    one shard, whatever worker the scheduler put each chunk on; only the chunks of
    ``moved_shards`` were copied (a shard whose chunk is elsewhere)."""
    from sklearn_trellis.engines.gibbs.shards import DaskExecutor
    X = blobs()
    lik = NormalInverseWishart().fit(X)
    client = clients[2]
    executor = DaskExecutor(lik, da.from_array(X, chunks=(37, 3)), client=client,
                            block_rows=16)
    actors_on = client.who_has(executor._futures)
    for future, worker in zip(executor._futures, executor.workers):
        assert set(actors_on[future.key]) == {worker}
    rows = {w: executor.shard_sizes[np.array(executor.workers) == w].sum()
            for w in client.nthreads()}
    assert len(rows) == 2
    assert abs(rows.popitem()[1] - rows.popitem()[1]) <= executor.shard_sizes.max()
    assert len(executor.moved_shards) < executor.n_shards


def test_shard_kernels_use_the_given_threads():
    """``n_threads`` (a Dask worker's ``nthreads``) caps numba's threads of the calling
    thread, whatever numba's pool (which a worker may have sized before its environment)."""
    import numba
    from sklearn_trellis.engines.gibbs.shards import Shard
    X = blobs(n_per=20)
    lik = NormalInverseWishart().fit(X)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        Shard(lik, lik.check_sampler_data(X), 0, 16, n_threads=1).statistics(
            lik.kernel_params(), 1)
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)


def test_balanced_placement_keeps_chunks_where_they_fit():
    """4 equal shards, 3 on one worker: one moves; unequal threads take rows in proportion;
    a holder is kept while the shard's middle is within its share."""
    from sklearn_trellis.engines.gibbs.shards import balanced_placement
    one_each = {"a": 1, "b": 1}
    assert balanced_placement([10, 10, 10, 11], [["b"], ["a"], ["a"], ["a"]],
                              one_each) == ["b", "a", "a", "b"]
    assert balanced_placement([10] * 4, [["a"]] * 4, one_each) == ["a", "a", "b", "b"]
    assert balanced_placement([10] * 5, [["a"], ["b"]] * 2 + [["a"]],
                              one_each) == ["a", "b", "a", "b", "a"]
    assert balanced_placement([10] * 6, [["b"]] * 6, {"a": 2, "b": 1}) == ["b", "b"] + ["a"] * 4
    assert balanced_placement([10] * 3, [["a"]] * 3, {"a": 1, "b": 1, "c": 1}) == ["a", "b", "c"]


def test_driver_round_trips_per_iteration(clients):
    """The driver batches its messages: the restricted Gibbs step is two maps (the second
    also brings the first proposal's label), a launched proposal ``LAUNCH_ITERATIONS + 3``
    maps (the start finds the second seed, the end brings the next proposal's label), a
    proposal refused before its launch one call; no separate seed lookups."""
    from sklearn_trellis.engines.gibbs.shards import DaskExecutor
    X = blobs()
    lik = NormalInverseWishart().fit(X)
    executor = DaskExecutor(lik, da.from_array(X, chunks=(90, 3)), client=clients[2],
                            block_rows=16)
    state = subcluster.new_state(lik, executor, None, 1.0)
    executor.round_trips.clear()
    rng = np.random.RandomState(0)
    n_proposals = 6
    for _ in range(3):
        subcluster.iterate(state, lik, CRP(1.0).kernel_params(), rng,
                           n_split_merge=n_proposals)
    trips = executor.round_trips
    assert trips["propose"] == trips["settle"] == 3
    assert "row_at_rank" not in trips
    launches = trips["launch_start"]
    assert launches >= 1
    assert trips["launch_pass"] == launches * (subcluster.LAUNCH_ITERATIONS + 1)
    assert (trips["apply_split"] + trips["apply_merge"] + trips["end_launch"]) == launches
    # each proposal's label comes with the previous map unless that proposal was not launched
    assert trips["label_at"] <= 3 * n_proposals - launches
    assert sum(trips.values()) <= 3 * (2 + n_proposals * (subcluster.LAUNCH_ITERATIONS + 3))


def test_two_local_shards_match_the_exact_posterior():
    """Two shards of tiny blocks (2 rows): co-clustering and ``P(K)`` within 0.06 of exact.
    It fails without the merge's ``+ log q`` in its Hastings ratio, and when the driver
    drops the second shard's statistics."""
    X = small_data(7)
    lik = NormalInverseWishart(kappa=0.2, hyperprior="fixed").fit(X)
    executor = LocalExecutor(lik, lik.check_sampler_data(X), n_shards=2, block_rows=2)
    assert executor.n_shards == 2
    check_against_exact(CRP(1.0), X, n_sweeps=3000, tol=0.06, lik=lik, data=executor,
                        n_split_merge=2)


@pytest.mark.slow
def test_two_dask_shards_match_the_exact_posterior(clients):
    from sklearn_trellis.engines.gibbs.shards import DaskExecutor
    X = small_data(6, seed=2)
    lik = NormalGamma(kappa=0.2, hyperprior="fixed").fit(X)
    executor = DaskExecutor(lik, da.from_array(X, chunks=(3, 2)), client=clients[2],
                            block_rows=1)
    assert executor.n_shards == 2
    check_against_exact(CRP(1.0), X, n_sweeps=4000, tol=0.06, lik=lik, data=executor,
                        n_split_merge=2)


def test_dp_mixture_on_a_dask_array(clients):
    from sklearn.metrics import adjusted_rand_score
    from sklearn_trellis import DPMixture
    X = blobs(n_per=100, d=2, dtype=np.float32)
    y = np.repeat([0, 1, 2], 100)
    dX = da.from_array(X, chunks=(128, 2))
    with clients[2].as_current():
        model = DPMixture(method="subcluster", n_sweeps=8, init="kmeans",
                          random_state=0).fit(dX)
        local = DPMixture(method="subcluster", n_sweeps=8, init="kmeans",
                          random_state=0).fit(X)
        assert model.method_ == "subcluster" and model._data is None
        assert adjusted_rand_score(y, model.labels_) > 0.8   # from k-means, 8 iterations
        # the same prior, initialisation and log joints as the NumPy fit (all rows fit
        # the priors below DASK_PRIOR_ROWS); the block sums differ, so chains may not
        assert model.samples_.shape == local.samples_.shape
        proba = model.predict_proba(X[:7])
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        # the predictive from the statistics is the predictive from the rows
        np.testing.assert_allclose(proba, local.predict_proba(X[:7]), atol=0.02)
        lazy = model.predict_proba(da.from_array(X[:7], chunks=(3, 1)))
        np.testing.assert_allclose(lazy.compute(), proba)
        np.testing.assert_array_equal(model.predict(dX[:50]).compute(), model.predict(X[:50]))
        assert model.score(dX[:50]) == pytest.approx(model.score(X[:50]), rel=1e-12)
        assert np.isfinite(model.score(X[:50]))
    # the fitted model holds no live actor: it pickles and predicts without the cluster
    import pickle
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X[:9]), model.predict(X[:9]))


def test_dp_mixture_on_a_dask_array_centres_far_features(clients):
    # Features at 1e10 (spread 1): the dask fit centres them as the NumPy fit does, by
    # an offset read off the prior rows (uncentred, two blobs of 60 scored 0.012 nats off).
    from sklearn_trellis import DPMixture
    X = blobs(n_per=40, d=2)
    with clients[1].as_current():
        scores = []
        for shift in (0.0, 1e10):
            model = DPMixture(method="subcluster", n_sweeps=6, random_state=0).fit(
                da.from_array(X + shift, chunks=(64, 2)))
            scores.append(model.score(X[:20] + shift))
            assert (model._offset is None) == (shift == 0.0)
    assert scores[1] == pytest.approx(scores[0], abs=1e-5)   # X + 1e10 is rounded to 2e-6


def test_joblib_dask_backend_shards_the_rows(clients):
    """Under ``parallel_config(backend="dask")`` a NumPy X is sampled on the workers: the
    chain of the same rows as a dask array (any chunking gives the same chain)."""
    import joblib
    from sklearn_trellis import DPMixture
    X = blobs(n_per=60, d=2)
    with clients[2].as_current():
        with joblib.parallel_config(backend="dask"):
            model = DPMixture(method="subcluster", n_sweeps=4, init="random",
                              random_state=1).fit(X)
        reference = DPMixture(method="subcluster", n_sweeps=4, init="random",
                              random_state=1).fit(da.from_array(X, chunks=(50, 2)))
    assert model._data is None
    np.testing.assert_array_equal(model.samples_, reference.samples_)
    np.testing.assert_array_equal(model.log_joints_, reference.log_joints_)


def test_predictive_from_statistics_equals_the_collapsed_predictive():
    from sklearn_trellis.engines.gibbs import sampler
    X = small_data(30)
    lik = NormalInverseWishart(kappa=0.3, hyperprior="fixed").fit(X)
    labels = np.arange(30) % 3
    state = subcluster.new_state(lik, lik.check_sampler_data(X), labels, 0.7)
    pp = CRP(0.7).kernel_params()
    new = small_data(5, seed=9)
    mine = subcluster.predictive_log_weights(lik, pp, lik.kernel_params(), state.suff,
                                             state.counts, new)
    reference = sampler.predictive_log_weights(lik, pp, lik.kernel_data(X), labels, new)
    np.testing.assert_allclose(mine, reference, rtol=1e-9)


def test_dask_array_needs_the_subcluster_sampler_and_the_extra(monkeypatch):
    from sklearn_trellis import DPMixture
    dX = da.from_array(small_data(20), chunks=(10, 2))
    with pytest.raises(ValueError, match="method='subcluster'"):
        DPMixture(method="gibbs", n_sweeps=2).fit(dX)
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r'pip install "sklearn-trellis\[dask\]"'):
        import_distributed()
    with pytest.raises(ImportError, match=r"sklearn-trellis\[dask\]"):
        DPMixture(method="subcluster", n_sweeps=2).fit(dX)


def test_subsample_start_does_not_depend_on_the_chunks(clients):
    """``init='subsample'`` on a dask array: the subsample gathered, every label drawn on
    the workers, the same labels as in this process for any chunking."""
    X = blobs(n_per=150, d=2)
    lik = NormalInverseWishart().fit(X)
    start = dict(n_rows=120, n_iterations=10, random_state=3)
    local = subcluster.subsample_start(lik, CRP(1.0), lik.check_sampler_data(X), **start)
    with clients[2].as_current():
        for chunks in ((128, 2), (200, 2)):
            np.testing.assert_array_equal(subcluster.subsample_start(
                lik, CRP(1.0), da.from_array(X, chunks=chunks), **start), local)
    assert local.max() + 1 >= 3


def test_one_set_of_actors_for_the_start_and_every_chain(clients, monkeypatch):
    """A dask array's shards are built once: ``subsample_start`` and the chains reuse a
    running executor (``DPMixture`` built 1 + n_chains sets of actors before), and chains
    on reused shards are the chains on fresh ones, bit for bit (each chain's start labels,
    one cluster included, replace what the shards held)."""
    from sklearn_trellis import DPMixture
    from sklearn_trellis.engines.gibbs import shards
    X = blobs(n_per=50, d=2)
    lik = NormalInverseWishart().fit(X)
    dX = da.from_array(X, chunks=(64, 2))
    start = dict(n_rows=60, n_iterations=3, n_search_iterations=0, random_state=3)
    run = dict(n_chains=2, n_sweeps=2, random_state=4, n_split_merge=2)
    built = []

    class Counted(shards.DaskExecutor):
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    with clients[2].as_current():
        labels = subcluster.subsample_start(lik, CRP(1.0), dX, **start)
        fresh = [subcluster.run_chains(lik, CRP(1.0), dX, init_labels=init, **run)
                 for init in (labels, None)]
        executor = subcluster.make_executor(lik, dX)
        np.testing.assert_array_equal(
            subcluster.subsample_start(lik, CRP(1.0), dX, executor=executor, **start), labels)
        reused = [subcluster.run_chains(lik, CRP(1.0), executor, init_labels=init, **run)
                  for init in (labels, None)]
        for chains, again in zip(fresh, reused):
            for a, b in zip(chains, again):
                assert_same_chain(a, b)
        monkeypatch.setattr(shards, "DaskExecutor", Counted)
        DPMixture(method="subcluster", init="subsample", n_chains=2, n_sweeps=2,
                  random_state=0).fit(dX)
    assert len(built) == 1


@pytest.mark.parametrize("n_jobs, threads", [(None, 1), (2, 2)])
def test_dask_kmeans_start_runs_on_the_threads_n_jobs_allows(clients, monkeypatch, n_jobs,
                                                             threads):
    """A dask array's k-means start is fitted (on a sample of the rows) on the threads
    ``n_jobs`` allows, as ``initial_labels('kmeans')`` is (it used every pool of the
    machine: two threads here, whatever n_jobs)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from sklearn_trellis import DPMixture, _gibbs_base
    seen = []

    class Recording(_gibbs_base.KMeans):
        def fit(self, X, y=None, sample_weight=None):
            seen.append({m["num_threads"] for m in threadpool_info()})
            return super().fit(X, y, sample_weight)

    monkeypatch.setattr(_gibbs_base, "KMeans", Recording)
    X = blobs(n_per=40, d=2)
    # two threads in every pool to start from (in-process workers' limits are per process)
    with clients[2].as_current(), threadpool_limits(2):
        model = DPMixture(method="subcluster", n_sweeps=1, init="kmeans", n_jobs=n_jobs,
                          random_state=0).fit(da.from_array(X, chunks=(64, 2)))
    assert seen == [{threads}]
    assert model.labels_.shape == (120,)


def test_dask_kmeans_start_ignores_a_constant_offset(clients):
    """Far features are centred before the k-means start (fitted to the centred prior
    rows, predicted on the lazily centred rows): X + 1e6 gives the same chain of
    partitions as X, its log joints within the rounding of X + 1e6 (about 1e-10)."""
    from sklearn_trellis import DPMixture
    X = blobs(n_per=40, d=2)
    fits = []
    with clients[1].as_current():
        for shift in (0.0, 1e6):
            fits.append(DPMixture(method="subcluster", n_sweeps=4, init="kmeans",
                                  random_state=0).fit(da.from_array(X + shift, chunks=(64, 2))))
    assert fits[0]._offset is None and fits[1]._offset is not None
    np.testing.assert_array_equal(fits[1].samples_, fits[0].samples_)
    np.testing.assert_allclose(fits[1].log_joints_, fits[0].log_joints_, rtol=0, atol=1e-9)


def _watched(X, chunks):
    """``X`` as a dask array that records every chunk read (``reads``)."""
    reads = []

    def read(block):
        reads.append(block.shape)
        return block

    return da.from_array(X, chunks=chunks).map_blocks(read, dtype=X.dtype, meta=X[:0]), reads


@pytest.mark.parametrize("params, memory, advice, lifted", [
    # the kept samples (8 bytes a label: 264 kB) and what this process holds beside them
    (dict(n_sweeps=10, burn_in=0, init="one"), 320_000, r"Raise thin",
     dict(n_sweeps=10, burn_in=0, init="one", thin=10)),
    # the prior rows gathered here (52.8 kB) and their float64 copies (two: k-means start)
    (dict(n_sweeps=2), 150_000, r"Use fewer features", None),
    # no client: said before the rows are read (it came after a pass over them)
    (dict(n_sweeps=2), None, r"needs a dask\.distributed Client", None),
])
def test_dask_fit_refusals_come_before_the_rows_are_read(clients, monkeypatch, params, memory,
                                                         advice, lifted):
    """A dask fit's refusals decided by the parameters, the shape and the memory come before
    any chunk is read (the finiteness pass, the prior rows) and before this process gathers
    anything; following the advice fits. 3,300 rows: no pairwise matrices."""
    from sklearn_trellis import DPMixture
    from sklearn_trellis._core import budget
    if memory is not None:
        monkeypatch.setattr(budget, "available_memory_bytes", lambda: memory)
    else:   # none, whatever another test of this process left as the default client

        def no_client():
            raise ValueError("No clients found")

        monkeypatch.setattr(distributed, "default_client", no_client)
    dX, reads = _watched(blobs(n_per=1100, d=2), (1024, 2))
    with pytest.raises(ValueError, match=advice):
        DPMixture(method="subcluster", random_state=0, **params).fit(dX)
    assert reads == []
    if lifted is not None:
        with clients[1].as_current():
            DPMixture(method="subcluster", random_state=0, **lifted).fit(dX)


def test_dask_fit_without_an_uncollapsed_form_is_refused_before_the_rows_are_read():
    from sklearn_trellis import DPMixture
    from sklearn_trellis.models import WishartBlockLikelihood
    dX, reads = _watched(blobs(n_per=10, d=2), (16, 2))
    with pytest.raises(ValueError, match="uncollapsed form; WishartBlockLikelihood has none"):
        DPMixture(likelihood=WishartBlockLikelihood(), method="subcluster").fit(dX)
    assert reads == []


@pytest.mark.slow
@pytest.mark.parametrize("n_features, init", [(1, "auto"), (20, "kmeans")])
def test_dask_fit_memory_need_is_its_traced_peak(monkeypatch, n_features, init):
    """The need a dask fit states before reading the rows is the peak this process traces
    (the workers in processes of their own). It counted 4 bytes per kept label, where the
    chains' samples are pooled into a copy (8), and left out the prior rows, their copies
    and the start labels held here: stated / traced 0.30 (200,000 x 1 rows) and 0.19
    (200,000 x 20) before."""
    import tracemalloc

    from sklearn_trellis import DPMixture, _dp_mixture, _gibbs_base
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    client = distributed.Client(cluster, set_as_default=False)
    try:
        dX = client.persist(da.random.RandomState(0).normal(size=(200_000, n_features),
                                                            chunks=(100_000, n_features)))
        params = dict(method="subcluster", n_sweeps=20, init=init, random_state=0)
        stated = []
        with client.as_current():
            DPMixture(**{**params, "n_sweeps": 2}).fit(dX[:2000])   # compiled beforehand
            for module in (_gibbs_base, _dp_mixture):
                monkeypatch.setattr(module, "check_memory",
                                    lambda n_bytes, what, way_out=None: stated.append(n_bytes))
            tracemalloc.start()
            try:
                DPMixture(**params).fit(dX)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    finally:
        client.close()
        cluster.close()
    assert 0.85 <= max(stated) / peak <= 1.1, (stated, peak)
