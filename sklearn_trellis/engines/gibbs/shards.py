"""Shard executors of the sub-cluster sampler: the rows in one process, or on Dask workers.

The sampler's driver (:mod:`.subcluster`) holds the parameters (weights, cluster
parameters, sufficient statistics, per-shard cluster sizes); the rows, their labels and
the launches' sub-cluster sides live in :class:`Shard` objects, each owning a contiguous
range of rows that starts on a block boundary (see :mod:`._shard_kernels`). The driver
runs one iteration as a few *shard maps*: every shard runs the same method on its rows and
returns statistics only (per-cluster counts and the block-tree nodes of the sufficient
statistics), which :func:`reduce_tree` completes into totals that do not depend on the
sharding. Two executors run the maps:

- :class:`LocalExecutor`: the shards are objects of this process (one by default); the
  parallelism is numba's threads over blocks of rows.
- :class:`DaskExecutor`: each shard is a Dask actor (``dask.distributed``) made from its
  chunk of a ``dask.array``, the actors spread over the workers by rows (the worker
  holding a chunk keeps it while it has less than its share): rows, labels and sides
  never leave it; per iteration only parameters go to the workers and statistics come
  back (Dinari et al. 2019's design: a master holding the parameters, workers holding
  the data). No scheduler of our own: the actors and futures are Dask's.

Random numbers of the row passes are counter based (``row_uniform(key, global row)``): a
shard shifts the pass key by its first row (:func:`shifted_key`), so that its local rows
draw the numbers of their global indices. With the block-tree sums, the chain is the same
bit for bit on any number of shards, workers and threads.
"""

import collections
import functools
import pickle
import time

import numba
import numpy as np

from . import _shard_kernels as shard_kernels, _subcluster_kernels as kernels

#: Rows per block of the sums (a shard holds whole blocks).
BLOCK_ROWS = kernels.BLOCK_ROWS

_GOLDEN = 0x9E3779B97F4A7C15
_TWO_64 = 1 << 64

_ENGINES = {}


def engine_for(likelihood):
    """The sub-cluster and block-tree kernels compiled for ``likelihood`` (memoised)."""
    key = (likelihood.kernels, likelihood.uncollapsed_kernels)
    engine = _ENGINES.get(key)
    if engine is None:
        engine = kernels.specialise(likelihood)
        tree_kernels = shard_kernels.specialise(likelihood)
        engine.block_tree_suff = tree_kernels.block_tree_suff
        engine.launch_pass_nodes = tree_kernels.launch_pass_nodes
        engine.launch = tree_kernels.launch
        # the launch kernel draws parameters with the block-tree module's copy of
        # draw_thetas: the driver uses it too (one compiled version)
        engine.draw_thetas = tree_kernels.draw_thetas
        _ENGINES[key] = engine
    return engine


#: Fewer rows than this are handled by the serial twins of the parallel kernels (the
#: same arithmetic: the chain does not change). Waking threads costs more than it saves:
#: the restricted Gibbs pass (20 clusters, 10 features) cost, in CPU ms, serial / two
#: threads 6.5 / 17.8 at 10^4 rows, 11.8 / 22.4 at 2 10^4, 30 / 34 at 5 10^4, with two
#: threads faster in wall time only from 5 10^4 rows (on the shared 2-core machine).
PARALLEL_MIN_ROWS = 8 * kernels.BLOCK_ROWS

#: The label pass's work per row at which ``PARALLEL_MIN_ROWS`` was measured: 20
#: clusters times 10 features. A pass over rows that cost more (80 clusters of 128
#: features: 51 times more) goes on threads with proportionally fewer rows.
LABEL_PASS_CALIBRATION = 20 * 10


def kernel(engine, name, n_rows, row_cost=1.0):
    """The parallel kernel ``name``, or its serial twin below ``PARALLEL_MIN_ROWS`` rows
    (each weighted by ``row_cost``, a row's work relative to the measurement's)."""
    twins = getattr(engine, name)
    rows = n_rows * max(row_cost, 1.0)
    if name == "block_tree_suff":
        return twins.for_work(n_rows if rows >= PARALLEL_MIN_ROWS else 0)
    return twins.parallel if rows >= PARALLEL_MIN_ROWS else twins.serial


def shifted_key(key, offset):
    """The pass key that makes local row ``t`` draw the uniform of global row ``offset + t``
    (``row_uniform`` hashes ``key + (i + 1) * golden`` modulo 2**64)."""
    shifted = (int(key) + int(offset) * _GOLDEN) % _TWO_64
    return np.int64(shifted - _TWO_64 if shifted >= 1 << 63 else shifted)


def dyadic_nodes(start, stop):
    """The maximal aligned power-of-two block ranges covering ``[start, stop)``, in order:
    ``(level, index)`` covers blocks ``[index * 2**level, (index + 1) * 2**level)``."""
    nodes = []
    while start < stop:
        level = (start & -start).bit_length() - 1 if start else (stop - start).bit_length()
        while (1 << level) > stop - start:
            level -= 1
        nodes.append((level, start >> level))
        start += 1 << level
    return nodes


@functools.lru_cache(maxsize=64)
def _all_nodes(n_blocks):
    return dyadic_nodes(0, n_blocks)


def reduce_tree(parts, n_blocks):
    """The total over blocks ``[0, n_blocks)`` from the shards' nodes, in the tree's order.

    ``parts`` is a list of ``(nodes, values)``: a shard's :func:`dyadic_nodes` and its
    stacked node values (``values[t]`` of ``nodes[t]``). Returns the root's value, the
    same whichever shards computed which nodes.
    """
    if len(parts) == 1 and parts[0][0] and parts[0][0] == _all_nodes(n_blocks):
        # one shard holding every block: the tree below adds its nodes from the right
        values = parts[0][1]
        total = values[-1]
        for t in range(len(values) - 2, -1, -1):
            total = values[t] + total
        return total
    given = {}
    for nodes, values in parts:
        for t, node in enumerate(nodes):
            given[node] = values[t]

    def value(level, index):
        found = given.get((level, index))
        if found is not None or level == 0:
            return found
        if index << level >= n_blocks:
            return None
        left = value(level - 1, 2 * index)
        right = value(level - 1, 2 * index + 1)
        return left if right is None else left + right

    return value(max(0, (n_blocks - 1).bit_length()), 0)


def _levels(nodes):
    return np.array([level for level, _ in nodes], np.int64)


class Shard:
    """Rows ``[offset, offset + len(data))`` of the data, their labels and launch sides.

    Every method takes and returns small arrays (parameters in, statistics out); the
    rows, labels and sides stay here. Used in-process by :class:`LocalExecutor` and as a
    Dask actor by :class:`DaskExecutor`.

    Parameters
    ----------
    likelihood : fitted ClusterLikelihood with an uncollapsed form
    data : ndarray of shape (n_rows, n_features)
        The shard's rows (validated by ``likelihood.check_sampler_data``).
    offset : int
        Global index of the first row, a multiple of ``block_rows``.
    block_rows : int
        Rows per block of the sums (the same on every shard).
    labels : ndarray of shape (n_rows,) or None
        Initial labels ``0..K-1`` (None: all rows in cluster 0).
    n_threads : int or None, default=None
        Threads of the shard's parallel kernels (a Dask worker's ``nthreads``); None:
        numba's setting of the calling thread.
    """

    def __init__(self, likelihood, data, offset, block_rows, labels=None, n_threads=None):
        if offset % block_rows:
            raise ValueError(f"A shard must start on a block boundary: offset {offset} is "
                             f"not a multiple of block_rows={block_rows}.")
        self.likelihood = likelihood
        self.data = likelihood.check_sampler_data(data)
        self.offset = int(offset)
        self.block_rows = int(block_rows)
        n = self.data.shape[0]
        self.labels = (np.zeros(n, np.int64) if labels is None
                       else np.ascontiguousarray(labels, dtype=np.int64))
        first = self.offset // self.block_rows
        self.nodes = dyadic_nodes(first, first - (-n // self.block_rows))
        self.node_levels = _levels(self.nodes)
        self.n_threads = n_threads
        self._proposal = None
        self._launch = None
        self._launch_rows = self._launch_sides = None

    @property
    def engine(self):
        return engine_for(self.likelihood)

    def _kernel(self, name, n_rows, row_cost=1.0):
        """:func:`kernel`, run on ``n_threads`` threads at most: numba's pool may be
        larger (``NUMBA_NUM_THREADS`` is read when numba is imported, which on a Dask
        worker can precede the worker's environment; the count is per calling thread)."""
        if self.n_threads is not None:
            numba.set_num_threads(max(1, min(self.n_threads, numba.config.NUMBA_NUM_THREADS)))
        return kernel(self.engine, name, n_rows, row_cost)

    def _suff_nodes(self, params, rows, offsets):
        out = np.zeros((len(self.nodes), offsets.size - 1, self.likelihood.n_suff))
        self._kernel("block_tree_suff", rows.size)(
            params, self.data, rows, offsets, self.block_rows, self.node_levels, out)
        return self.nodes, out

    # -- whole-shard statistics ------------------------------------------------------
    def statistics(self, params, n_clusters):
        """Per-cluster counts of the shard and the tree nodes of its sufficient statistics."""
        rows, offsets = kernels.group_rows(self.labels, n_clusters)
        return np.diff(offsets), self._suff_nodes(params, rows, offsets)

    def set_labels(self, labels):
        self.labels = np.ascontiguousarray(labels, dtype=np.int64)

    def get_labels(self):
        return self.labels.astype(np.int32)

    def first_rows(self, n_clusters):
        """Global first row of each cluster here (``2**62`` for a cluster not here)."""
        first = np.full(n_clusters, 1 << 62, np.int64)
        rows, offsets = kernels.group_rows(self.labels, n_clusters)
        present = np.diff(offsets) > 0
        first[present] = rows[offsets[:-1][present]] + self.offset
        return first

    def label_at(self, row):
        """The label of global row ``row`` (held by this shard)."""
        return int(self.labels[row - self.offset])

    def row_at_rank(self, cluster, rank, skip, inside):
        """The ``rank``-th row of ``cluster`` here (``inside``) or outside it, other than the
        global row ``skip``; returns ``(global row, its label)``."""
        local = kernels.row_at_rank(self.labels, cluster, rank, skip - self.offset, inside)
        return local + self.offset, int(self.labels[local])

    # -- restricted Gibbs -------------------------------------------------------------
    def propose(self, params, theta, log_pi, n_clusters, key, anchor_ranks):
        """Draw every label but the anchors' (``anchor_ranks[c]``: rank of cluster ``c``'s
        anchor among its rows here, or -1); keep the proposal, return its counts here."""
        n = self.labels.size
        anchors = np.full(n_clusters, -1, np.int64)
        kernels.rows_at_ranks(self.labels, anchor_ranks, anchors)
        pinned = np.zeros(n, np.bool_)
        pinned[anchors[anchors >= 0]] = True
        self._proposal = np.empty(n, np.int64)
        block_counts = np.empty((-(-n // kernels.BLOCK_ROWS), n_clusters), np.int64)
        row_cost = n_clusters * self.data.shape[1] / LABEL_PASS_CALIBRATION
        self._kernel("propose_labels", n, row_cost)(
            params, theta, log_pi, n_clusters, self.data, self.labels, pinned,
            shifted_key(key, self.offset), self._proposal, block_counts,
            numba.get_num_threads())
        return block_counts.sum(axis=0)

    def settle(self, accept, params, n_clusters, next_row=-1):
        """Keep (``accept``) or drop the proposal; return :meth:`statistics` when kept (else
        None) and the label of global row ``next_row`` if held here (else None: the row
        of the first split/merge proposal, in the same round trip)."""
        proposal, self._proposal = self._proposal, None
        if not accept:
            return None, self._label_if_here(next_row)
        self.labels = proposal
        return self.statistics(params, n_clusters), self._label_if_here(next_row)

    # -- split/merge launches ---------------------------------------------------------
    def launch_start(self, params, first, second, seeds, find=None):
        """Set up a launch on the rows of clusters ``first`` and ``second`` (equal for a
        split) with the global seed rows ``seeds`` (side 0, side 1); return the seeds'
        sufficient statistics held here (zeros for a seed elsewhere).

        ``find``: ``(cluster, rank, skip)`` when the side-1 seed is the ``rank``-th row of
        ``cluster`` here other than the global row ``skip`` (:meth:`row_at_rank`; its
        ``seeds[1]`` is then ignored): the driver need not ask for it first.
        """
        if find is not None:
            seeds = (seeds[0], self.row_at_rank(*find, True)[0])
        rows, current = kernels.members_of(self.labels, first, second)
        free = np.full(rows.size, -1, np.int64)
        counted = np.ones(rows.size, np.bool_)
        suff = np.zeros((2, self.likelihood.n_suff))
        for side, seed in enumerate(seeds):
            local = seed - self.offset
            if 0 <= local < self.labels.size:
                position = np.searchsorted(rows, local)
                free[position] = side
                counted[position] = False
                self.likelihood.uncollapsed_kernels.suff_add_rows(
                    params, self.data, np.array([local], np.int64), suff, side)
        self._launch = (rows, current, free, counted, np.empty(rows.size, np.int64))
        return suff

    def launch_pass(self, params, theta, log_pi, key, forced):
        """One two-way pass (sides drawn, or ``forced`` to the current clusters); returns
        the per-side counts here and the tree nodes of the sides' statistics and of the
        log probability of the sides."""
        rows, current, free, counted, sides = self._launch
        suff = np.zeros((len(self.nodes), 2, self.likelihood.n_suff))
        log_q = np.zeros((len(self.nodes), 1, 1))
        self._kernel("launch_pass_nodes", rows.size)(
            params, theta, log_pi, self.data, rows, current if forced else free, counted,
            shifted_key(key, self.offset), self.block_rows, self.node_levels, sides, suff,
            log_q)
        n_right = int(sides.sum())
        return (np.array([rows.size - n_right, n_right]), (self.nodes, suff),
                (self.nodes, log_q[:, 0, 0]))

    def launch(self, params, first, second, seeds, find, log_pi, theta_seeds, keys,
               log_fraction, forced):
        """A whole launch in one call: :meth:`launch_start`, every :meth:`launch_pass` and the
        parameter draws between them (:func:`._shard_kernels.launch`), the same bit for bit.
        Only for a shard holding every row (offset 0, the only shard): its sums are the
        totals.

        ``seeds`` and ``find`` are those of :meth:`launch_start` (``find`` None or
        ``(cluster, rank, skip)``), ``log_pi`` the first pass's log weights,
        ``theta_seeds[p]`` the seed of the parameters of pass ``p``, ``keys[p]`` its key
        (the random numbers the driver would draw, in its order), ``log_fraction[c] =
        log(c / m)`` for the ``m`` rows of the launch (numpy's log, as the driver's), and
        ``forced`` forces the last pass's sides to the current clusters. Returns the last
        pass's per-side counts, sufficient statistics and ``log q``; the sides are kept
        for :meth:`apply_split`.
        """
        lik = self.likelihood
        local_seeds = np.array(seeds, np.int64) - self.offset
        find = (np.array([find[0], find[1], find[2] - self.offset], np.int64) if find is not None
                else np.array([-1, 0, 0], np.int64))
        keys = np.array([shifted_key(key, self.offset) for key in keys], np.int64)
        suff = np.empty((2, lik.n_suff))
        counts = np.empty(2, np.int64)
        if self._launch_rows is None:
            self._launch_rows = np.empty(self.labels.size, np.int64)
            self._launch_sides = np.empty(self.labels.size, np.int64)
        m = log_fraction.size - 1
        log_q = self._kernel("launch", m)(
            params, self.data, self.labels, first, second, local_seeds, find,
            np.array(log_pi, np.float64), np.asarray(theta_seeds, np.int64), keys,
            log_fraction, forced, self.block_rows, self.node_levels,
            np.empty((2, lik.n_theta)), np.empty((2, lik.n_stats)), suff, counts,
            self._launch_rows, self._launch_sides)
        # what apply_split reads (views of scratch the next launch overwrites)
        self._launch = (self._launch_rows[:m], None, None, None, self._launch_sides[:m])
        return counts, suff, log_q

    def _label_if_here(self, row):
        """The label of global row ``row`` if this shard holds it, else None."""
        local = row - self.offset
        return int(self.labels[local]) if 0 <= local < self.labels.size else None

    # The methods ending a launch also return the label of global row ``next_row`` (if
    # held here) after it: the row of the next proposal, one round trip fewer.
    def apply_split(self, new_label, next_row=-1):
        """The last launch's side-1 rows take ``new_label``."""
        rows, _, _, _, sides = self._launch
        kernels.relabel(self.labels, rows, sides, 1, new_label)
        self._launch = None
        return self._label_if_here(next_row)

    def apply_merge(self, kept, merged, last, next_row=-1):
        """Cluster ``merged`` joins ``kept``; cluster ``last`` takes the freed label."""
        kernels.replace_label(self.labels, merged, kept)
        if merged != last:
            kernels.replace_label(self.labels, last, merged)
        self._launch = None
        return self._label_if_here(next_row)

    def end_launch(self, next_row=-1):
        self._launch = None
        return self._label_if_here(next_row)


def aligned_bounds(sizes, block_rows):
    """Shard boundaries near the cumulative ``sizes``, rounded to multiples of
    ``block_rows`` (empty shards dropped); returns the boundary offsets."""
    total = int(np.sum(sizes))
    bounds = {0, total}
    for edge in np.cumsum(sizes)[:-1]:
        bounds.add(min(total, int(round(edge / block_rows)) * block_rows))
    return sorted(bounds)


class _Executor:
    """Shard maps: ``map(name, *args, per_shard=None)`` calls method ``name`` of every
    shard (``per_shard[s]`` appended to shard ``s``'s arguments) and returns the results
    in shard order; ``call(s, name, *args)`` calls one shard."""

    n_blocks = 0
    #: True when one shard of this process holds every row: a launch is then one shard
    #: call (:meth:`Shard.launch`) instead of a map per pass.
    whole_launches = False

    def _set_bounds(self, bounds, block_rows):
        self.bounds = np.asarray(bounds, np.int64)
        self.block_rows = int(block_rows)
        self.n = int(self.bounds[-1])
        self.n_blocks = -(-self.n // self.block_rows)
        self.shard_sizes = np.diff(self.bounds)

    @property
    def n_shards(self):
        return self.shard_sizes.size

    def shard_of(self, row):
        """The shard holding global row ``row``."""
        if self.shard_sizes.size == 1:
            return 0
        return int(np.searchsorted(self.bounds, row, side="right") - 1)

    def labels(self):
        """All labels, gathered (int32; for kept samples, not per iteration)."""
        return np.concatenate(self.map("get_labels"))


class LocalExecutor(_Executor):
    """Shards in this process: ``n_shards`` contiguous row ranges (1: the whole data).

    Parameters
    ----------
    likelihood : fitted ClusterLikelihood
    data : ndarray of shape (n_samples, n_features)
    labels : ndarray of shape (n_samples,) or None
        Initial labels ``0..K-1`` (None: one cluster).
    n_shards : int, default=1
        More than one only shows (in tests) that the chain does not depend on the sharding.
    block_rows : int, default=BLOCK_ROWS
        Rows per block of the sums.
    """

    def __init__(self, likelihood, data, labels=None, *, n_shards=1,
                 block_rows=kernels.BLOCK_ROWS):
        n = data.shape[0]
        sizes = np.full(n_shards, n // n_shards)
        sizes[:n % n_shards] += 1
        bounds = aligned_bounds(sizes, block_rows)
        self._set_bounds(bounds, block_rows)
        self.shards = [Shard(likelihood, data[a:b], a, block_rows,
                             None if labels is None else labels[a:b])
                       for a, b in zip(bounds[:-1], bounds[1:])]
        self.whole_launches = len(self.shards) == 1

    def map(self, name, *args, per_shard=None):
        return [getattr(shard, name)(*(args if per_shard is None else args + (per_shard[s],)))
                for s, shard in enumerate(self.shards)]

    def call(self, s, name, *args):
        return getattr(self.shards[s], name)(*args)


def import_distributed():
    """``dask.array`` and ``distributed``, or an ImportError naming the extra."""
    try:
        import dask.array as da
        import distributed
    except ImportError as error:
        raise ImportError("Sampling a dask array needs dask[array,distributed]: "
                          'pip install "sklearn-trellis[dask]".') from error
    return da, distributed


def dask_client(client=None):
    """``client``, or the default ``distributed`` client: a ValueError saying how to start
    one when there is none (checked by a fit before it reads the data)."""
    if client is not None:
        return client
    _, distributed = import_distributed()
    try:
        return distributed.default_client()
    except ValueError as error:
        raise ValueError("Sampling a dask array needs a dask.distributed Client "
                         "(e.g. distributed.Client(LocalCluster())) to run the "
                         "shards on its workers.") from error


def is_dask_array(X):
    """True for a ``dask.array.Array`` (without importing dask when it is not loaded)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")


def balanced_placement(sizes, holders, threads):
    """The worker of each shard: rows spread over the workers in proportion to their
    threads, each shard kept on a holder of its chunk when it fits there.

    ``sizes[s]``: rows of shard ``s``; ``holders[s]``: the workers holding its chunk;
    ``threads``: ``{worker: nthreads}``. A shard stays on a holder whose rows so far plus
    half the shard's are within its share; the others go, in order, to the worker
    furthest below its share. Returns the list of workers, in shard order.
    """
    workers = sorted(threads)
    total = float(np.sum(sizes))
    share = {w: total * threads[w] / sum(threads.values()) for w in workers}
    load = dict.fromkeys(workers, 0.0)
    placed = [None] * len(sizes)
    for s, size in enumerate(sizes):
        for worker in sorted(set(holders[s]) & set(workers)):
            if load[worker] + size / 2 <= share[worker]:
                placed[s] = worker
                load[worker] += size
                break
    for s, size in enumerate(sizes):
        if placed[s] is None:
            placed[s] = min(workers, key=lambda w: (load[w] - share[w], w))
            load[placed[s]] += size
    return placed


class DaskExecutor(_Executor):
    """Shards as Dask actors, spread over the workers by rows, each from its chunk of a
    ``dask.array``.

    The row chunks are rechunked to block boundaries and persisted; shard ``s`` is an
    actor on worker ``workers[s]`` (:func:`balanced_placement`: the worker holding chunk
    ``s`` unless that worker already has its share of rows; ``moved_shards`` lists the
    chunks Dask copied to another worker, once), built from that chunk: rows, labels and
    launch sides stay there. The shards' parallel kernels run on as many threads as
    their worker has (its ``nthreads``), whatever numba's default.

    Dask's default ``distributed.nanny.pre-spawn-environ`` sets glibc's
    ``MALLOC_TRIM_THRESHOLD_``, which also fixes its mmap threshold at 128 kB: every
    larger temporary of the kernels is then a new mapping, page-faulted anew (10^6 rows,
    4 iterations on one worker: 4.9 CPU s, 1.2 of them system time, against 3.1 without
    it). Dropping it from that setting (``benchmarks/bench_dp_scale.py --dask`` does)
    removes that cost.

    ``bytes_sent`` counts the pickled size of every message (arguments to each shard,
    results back): statistics and parameters only.
    ``round_trips`` and ``seconds_by_method`` count the maps and calls and the seconds
    the driver waited for them, per shard method (a map is one round trip, its shards in
    parallel).

    Parameters
    ----------
    likelihood : fitted ClusterLikelihood
    X : dask.array.Array of shape (n_samples, n_features)
    labels : callable or None
        ``labels(start, stop)``: the initial labels of rows ``[start, stop)`` (computed
        on the driver, sent once); None: one cluster.
    client : distributed.Client, default=None
        The default client when None (``distributed.default_client``).
    block_rows : int, default=BLOCK_ROWS
    """

    def __init__(self, likelihood, X, labels=None, *, client=None,
                 block_rows=kernels.BLOCK_ROWS):
        _, distributed = import_distributed()
        self.client = client = dask_client(client)
        bounds = aligned_bounds(X.chunks[0], block_rows)
        self._set_bounds(bounds, block_rows)
        X = client.persist(X.rechunk({0: tuple(np.diff(bounds)), 1: -1}))
        chunks = sorted(distributed.futures_of(X), key=lambda f: f.key[1])
        with client.as_current():  # placed, so that each actor starts where its rows are
            distributed.wait(chunks)
        holders = client.who_has(chunks)
        threads = client.nthreads()   # {worker: its threads}
        # the scheduler places chunks by its own rules (4 equal chunks on 2 workers: 1 and
        # 3 seen), and an iteration lasts as long as the busiest worker: the actors are
        # spread by rows, a chunk copied (once, by Dask) only when its holder has its share
        self.workers = balanced_placement(self.shard_sizes, [holders[c.key] for c in chunks],
                                          threads)
        self.moved_shards = [s for s, (chunk, worker) in enumerate(zip(chunks, self.workers))
                             if worker not in holders[chunk.key]]
        futures = [client.submit(Shard, likelihood, chunk, int(a), block_rows,
                                 None if labels is None else labels(a, b), threads[worker],
                                 workers=[worker], actor=True)
                   for chunk, a, b, worker in zip(chunks, bounds[:-1], bounds[1:], self.workers)]
        self.shards = [future.result() for future in futures]
        self._futures = futures   # the actors live as long as their futures
        self.bytes_sent = 0
        self.seconds_waiting = 0.0
        self.round_trips = collections.Counter()
        self.seconds_by_method = collections.Counter()

    def _sized(self, value):
        return len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def map(self, name, *args, per_shard=None):
        start = time.perf_counter()
        futures = [getattr(shard, name)(*(args if per_shard is None else args + (per_shard[s],)))
                   for s, shard in enumerate(self.shards)]
        results = [future.result() for future in futures]
        self._count(name, start)
        self.bytes_sent += self.n_shards * self._sized(args) + self._sized(results)
        if per_shard is not None:
            self.bytes_sent += self._sized(list(per_shard))
        return results

    def call(self, s, name, *args):
        start = time.perf_counter()
        result = getattr(self.shards[s], name)(*args).result()
        self._count(name, start)
        self.bytes_sent += self._sized(args) + self._sized(result)
        return result

    def _count(self, name, start):
        seconds = time.perf_counter() - start
        self.seconds_waiting += seconds
        self.round_trips[name] += 1
        self.seconds_by_method[name] += seconds

    def __getstate__(self):
        raise TypeError("A DaskExecutor holds live Dask actors and cannot be pickled; "
                        "the sub-cluster state pickles its gathered labels instead.")


__all__ = ["BLOCK_ROWS", "Shard", "LocalExecutor", "DaskExecutor", "reduce_tree", "dyadic_nodes",
           "shifted_key", "aligned_bounds", "engine_for", "import_distributed",
           "dask_client", "is_dask_array", "balanced_placement"]
