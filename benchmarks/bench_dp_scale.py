"""DP mixtures at scale: the sub-cluster sampler, collapsed Gibbs and BayesianGaussianMixture.

Prints, in one process and with the anchors measured in the same run:

1. Gaussian blobs, 10 features, 20 clusters, 10^6 rows (``--quick``: 10^5) and 10^4 rows:
   seconds per iteration of ``DPMixture(method='subcluster')`` (compilation excluded: a
   warm-up fit runs first; the starting state, ``init='subsample'`` above 10,000 rows, is
   printed apart as ``start``, the CPU figure includes it) and its ARI after
   ``--iterations`` iterations (default 200 at 10^4, 60 at 10^6: each iteration is one
   pass over the rows), next to the collapsed engine's seconds per sweep (a few sweeps
   only at 10^6, so its ARI there is that of a short chain) and
   ``BayesianGaussianMixture(n_components=50)``'s time and ARI. Goals (issue 30): <= 1 s
   per iteration and ARI >= 0.99 at 10^6; <= 15 ms per iteration at 10^4.
2. An embedding-like set: 100,000 x 128 float32 (``--quick``: 20,000 x 64), 80 clusters of
   Zipf-distributed sizes, each a Gaussian with its own diagonal spread: total fit time and
   NMI of ``DPMixture(method='subcluster', likelihood='diagonal')`` next to
   ``BayesianGaussianMixture(n_components=100, covariance_type='diag')`` (the same
   likelihood family; a full covariance costs ``d^2 = 16,384`` multiply-adds per row and
   cluster, out of reach here for either). A warm-up fit on 20,000 rows of the same dtype
   and options compiles first; every timed line prints the number of numba compilations
   it ran (0 when the warm-up covered it). ``--bgm-embedding-max-iter`` caps BGM's EM
   iterations (its seconds per iteration and whether it converged are printed). The chain
   runs ``EMBEDDING_ITERATIONS`` = 5 iterations (a fixed count, documented there with the
   measurement behind it; ``--iterations`` overrides); every iteration is kept, and the
   NMI of the start (t=0) and after 1, 5, 10, 20, 25, 30, ... iterations is printed, with
   the first iteration whose NMI reaches BGM's: how many iterations the goal (NMI >= BGM's)
   needs.

3. ``--scoring``: at 10^4 rows, the label pass scoring a block of rows against every
   cluster through the likelihood's BLAS kernel, against the generic row by row fallback
   (alternating fits on the same data: a ratio that survives the load).

4. ``--dask``: 10^7 x 10 float32 Gaussian blobs (20 clusters; ``--dask-rows`` to change),
   generated on the workers of a ``LocalCluster`` of 2 worker processes and never gathered
   on the driver: seconds per sub-cluster iteration with 1 and with 2 workers of one
   core each (one thread, numba's pool included; the same chain in both: the figures of
   one seed), and the bytes sent per iteration (pickled
   size of every message between the driver and the shards: parameters and statistics),
   and the driver's round trips per iteration (shard maps and single-shard calls, per
   shard method) with the seconds it waited for them.
   The same number of rows in one process is the anchor (``--dask-rows`` <= 10^6 only).
   Per worker: its CPU (user + system) and minor page faults over the timed iterations,
   numba's pool and its rows (the shards are spread by rows). The one-core settings go
   through ``distributed.nanny.pre-spawn-environ`` (numba reads them at import, before a
   ``LocalCluster(env=...)`` applies), without Dask's ``MALLOC_TRIM_THRESHOLD_`` unless
   ``--dask-keep-malloc-trim`` (see ``_worker_environ``).

The machine is shared: the load average is printed with every figure; compare ratios.

Run: ``PYTHONPATH=$PWD python benchmarks/bench_dp_scale.py [--quick] [--iterations N]
[--bgm-max-iter N] [--bgm-embedding-max-iter N] [--skip-small] [--skip-large] [--skip-embedding]
[--scoring] [--dask [--dask-rows N] [--dask-iterations N] [--dask-keep-malloc-trim]
[--dask-only]]`` (``--bgm-max-iter`` caps the EM iterations of
BayesianGaussianMixture on the large blobs, whose per-iteration time is printed). Every time
is printed with the CPU time of all threads beside it.
"""

import argparse
import contextlib
import os
import time

import numpy as np
from numba.core import event
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.mixture import BayesianGaussianMixture

from sklearn_trellis import DPMixture
from sklearn_trellis.engines.gibbs import subcluster
from sklearn_trellis.engines.gibbs._subcluster_kernels import replace_label


def load():
    return "load average %.1f %.1f %.1f" % os.getloadavg()


#: CPU seconds (all threads) of the last ``timed`` fit: the machine is shared, so the
#: wall time alone says little.
LAST_CPU = [0.0]
#: Names of the numba functions compiled during the last ``timed`` fit (loads from numba's
#: disk cache are not compilations): the warm-up must leave none.
LAST_COMPILED = []


class _CompileNames(event.Listener):
    def __init__(self, names):
        self.names = names

    def on_start(self, ev):
        self.names.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass


#: Seconds of the last ``timed`` fit spent in its starting state (``init='subsample'``:
#: greedy cuts and a chain on 10,000 rows, then one pass over all rows; its k-means start
#: is not counted), printed apart from the iterations.
LAST_START = [0.0]
_subsample_start = subcluster.subsample_start


#: The starting labels of the last ``timed`` fit that had a subsample start (its NMI is
#: iteration 0 of the embedding's table).
LAST_START_LABELS = [None]


def _timed_subsample_start(*args, **kwargs):
    start = time.perf_counter()
    try:
        LAST_START_LABELS[0] = _subsample_start(*args, **kwargs)
        return LAST_START_LABELS[0]
    finally:
        LAST_START[0] += time.perf_counter() - start


subcluster.subsample_start = _timed_subsample_start


def timed(make, X):
    LAST_START[0] = 0.0
    LAST_COMPILED.clear()
    with event.install_listener("numba:compile", _CompileNames(LAST_COMPILED)):
        start = time.perf_counter()
        cpu = time.process_time()
        model = make().fit(X)
        LAST_CPU[0] = time.process_time() - cpu
        seconds = time.perf_counter() - start
    return model, seconds


def cpu_note(per=1):
    compiled = (f", {len(LAST_COMPILED)} numba compilations ("
                + ", ".join(sorted(set(LAST_COMPILED))) + ")" if LAST_COMPILED
                else ", 0 numba compilations")
    return f"[CPU {LAST_CPU[0] / per * 1e3:.1f} ms{compiled}]"


def blobs(n, seed=0):
    X, y = make_blobs(n_samples=n, n_features=10, centers=20, cluster_std=1.0,
                      center_box=(-10, 10), random_state=seed)
    return X, y


def subcluster_fit(X, iterations, seed=0, burn_in=None, **kwargs):
    make = lambda: DPMixture(method="subcluster", n_sweeps=iterations,  # noqa: E731
                             burn_in=iterations - 1 if burn_in is None else burn_in,
                             point_estimate="map", random_state=seed, **kwargs)
    return timed(make, X)


def section_blobs(n, iterations, collapsed_sweeps, bgm_max_iter=100):
    X, y = blobs(n)
    print(f"\n== Gaussian blobs {n:,} x 10, 20 clusters ({load()})")
    model, seconds = subcluster_fit(X, iterations)
    start, seconds = LAST_START[0], seconds - LAST_START[0]
    print(f"subcluster: {seconds / iterations * 1e3:9.1f} ms/iteration {cpu_note(iterations)}, "
          f"{iterations} iterations {seconds:.1f} s + start {start:.1f} s, "
          f"K={model.n_clusters_}, ARI {adjusted_rand_score(y, model.labels_):.4f}   "
          f"({load()})")
    make = lambda: DPMixture(method="gibbs", n_sweeps=collapsed_sweeps,  # noqa: E731
                             burn_in=collapsed_sweeps - 1, point_estimate="map",
                             random_state=0)
    collapsed, c_seconds = timed(make, X)
    print(f"collapsed Gibbs: {c_seconds / collapsed_sweeps * 1e3:9.1f} ms/sweep "
          f"{cpu_note(collapsed_sweeps)}, "
          f"{collapsed_sweeps} sweeps {c_seconds:.1f} s, K={collapsed.n_clusters_}, "
          f"ARI {adjusted_rand_score(y, collapsed.labels_):.4f}   ({load()})")
    bgm, b_seconds = timed(lambda: BayesianGaussianMixture(
        n_components=50, max_iter=bgm_max_iter, random_state=0), X)
    print(f"BayesianGaussianMixture(n_components=50, max_iter={bgm_max_iter}): "
          f"{b_seconds:.1f} s {cpu_note()} "
          f"({b_seconds / bgm.n_iter_ * 1e3:.1f} ms/EM iteration, {bgm.n_iter_} iterations), "
          f"ARI {adjusted_rand_score(y, bgm.predict(X)):.4f}   ({load()})")
    print(f"ratios: collapsed sweep / subcluster iteration = "
          f"{(c_seconds / collapsed_sweeps) / (seconds / iterations):.1f}; "
          f"BGM fit / subcluster fit = {b_seconds / seconds:.2f}")


def embedding(n, d, k=80, seed=0):
    rng = np.random.default_rng(seed)
    sizes = 1.0 / np.arange(1, k + 1) ** 0.8
    y = rng.choice(k, size=n, p=sizes / sizes.sum())
    centres = rng.normal(0.0, 1.0, (k, d))
    spreads = rng.uniform(0.15, 0.35, (k, d))
    X = centres[y] + rng.normal(size=(n, d)) * spreads[y]
    return X.astype(np.float32), y


#: Iterations of the embedding's sub-cluster chain (``--iterations`` overrides): a fixed
#: count, not a stopping rule (``DPMixture`` has none). Measured (seed 0, the subsample
#: start of ``init='auto'``): NMI 1.0000 (K=80, BGM's figure) from the start (t=0)
#: through iteration 30 (``--iterations 30``); seeds 1 and 2: 1.0000 at t=0 too (K=80
#: both since the start's greedy cuts, ``subcluster.divisive_labels``; K=81 and 80
#: before). Before the start's split/merge search (``subcluster.SUBSAMPLE_SPLIT_MERGE``)
#: it was 0.9993 (K=79) until iteration 16, and 30 iterations were run. 5 keeps a
#: margin; the table of NMI against iterations is printed on every run, with the first
#: iteration whose NMI reaches BGM's, so a change that slows convergence shows
#: (``--iterations 30`` prints the longer table).
EMBEDDING_ITERATIONS = 5


def section_embedding(n, d, iterations, bgm_max_iter=100):
    X, y = embedding(n, d)
    print(f"\n== embedding-like {n:,} x {d} float32, 80 Zipf-sized clusters ({load()})")
    # compile outside the timing: the same dtype, likelihood and options on fewer rows
    # (enough for the parallel twins of every row pass)
    subcluster_fit(embedding(20_000, d, seed=1)[0], 3, likelihood="diagonal")
    # every iteration kept (burn_in=0): the NMI along the chain says how many iterations
    # the goal needs; the figure is the last iteration's partition
    LAST_START_LABELS[0] = None
    model, seconds = subcluster_fit(X, iterations, burn_in=0, likelihood="diagonal")
    start, start_labels = LAST_START[0], LAST_START_LABELS[0]
    cpu = LAST_CPU[0]
    samples = model.samples_
    print(f"subcluster (diagonal): {seconds:.1f} s total {cpu_note()} "
          f"(start {start:.1f} s + {iterations} iterations {seconds - start:.1f} s, "
          f"{(seconds - start) / iterations:.2f} s/iteration), "
          f"K={np.unique(samples[-1]).size}, "
          f"NMI {normalized_mutual_info_score(y, samples[-1]):.4f}   ({load()})")
    chain = [(t, samples[t - 1]) for t in range(1, iterations + 1)]
    if start_labels is not None:
        chain.insert(0, (0, start_labels))
    nmis = {t: normalized_mutual_info_score(y, labels) for t, labels in chain}
    shown = sorted({0, 1, 5, 10, 20, 25, 30, 50, 100, iterations} & set(nmis))
    print("subcluster NMI after t iterations (t=0: the start): " + ", ".join(
        f"t={t}: {nmis[t]:.4f} (K={np.unique(dict(chain)[t]).size})" for t in shown))
    # the same likelihood family: a Gaussian with a diagonal covariance per cluster
    bgm, b_seconds = timed(lambda: BayesianGaussianMixture(
        n_components=100, covariance_type="diag", max_iter=bgm_max_iter, random_state=0), X)
    state = "converged" if bgm.converged_ else "NOT converged: stopped at max_iter"
    bgm_nmi = normalized_mutual_info_score(y, bgm.predict(X))
    print(f"BayesianGaussianMixture(n_components=100, covariance_type='diag', "
          f"max_iter={bgm_max_iter}): {b_seconds:.1f} s {cpu_note()} "
          f"({bgm.n_iter_} EM iterations, {b_seconds / bgm.n_iter_:.2f} s/iteration, {state}),"
          f" NMI {bgm_nmi:.4f}   ({load()})")
    # rounded as printed: "NMI >= BGM's" compares the printed figures
    reached = [t for t in sorted(nmis) if round(nmis[t], 4) >= round(bgm_nmi, 4)]
    print("first iteration with NMI >= BGM's: "
          + (f"t={reached[0]}" if reached else f"none in {iterations}")
          + f"; NMI >= BGM's at the last iteration: "
          f"{round(nmis[iterations], 4) >= round(bgm_nmi, 4)}")
    # CPU seconds of all threads: the ratio that survives a loaded machine
    print(f"ratio: BGM time / subcluster time = {b_seconds / seconds:.2f} "
          f"(CPU: {LAST_CPU[0] / cpu:.2f})")


def section_scoring(n, iterations, repeats=3):
    """The label pass's scoring, one fit against the other alternately on the same data:
    the likelihood's BLAS block kernel (``log_density_block``) and the generic row by row
    fallback (``log_density_rows`` per cluster, the scoring before the block kernels)."""
    from sklearn_trellis.models import NormalInverseWishart
    from sklearn_trellis.models.likelihood import UncollapsedKernels
    X, _ = blobs(n)
    block = NormalInverseWishart.uncollapsed_kernels
    kinds = {"block": block, "rows": UncollapsedKernels(*block[:4])}
    print(f"\n== scoring of the label pass, blobs {n:,} x 10 ({load()})")
    figures = {name: [] for name in kinds}
    try:
        for name, kernels in kinds.items():   # compile both outside the timings
            NormalInverseWishart.uncollapsed_kernels = kernels
            subcluster_fit(X, 3)
        for _ in range(repeats):
            for name, kernels in kinds.items():
                NormalInverseWishart.uncollapsed_kernels = kernels
                _, seconds = subcluster_fit(X, iterations)
                figures[name].append(seconds / iterations)
    finally:
        NormalInverseWishart.uncollapsed_kernels = block
    for name, times in figures.items():
        print(f"{name:5s} scoring: ms/iteration " + " ".join(f"{t * 1e3:.1f}" for t in times))
    print(f"ratio rows / block (medians): "
          f"{np.median(figures['rows']) / np.median(figures['block']):.2f}   ({load()})")


def _process_cpu():
    """User and system CPU seconds and minor page faults of the calling process, and the
    size of numba's thread pool (run on each Dask worker by ``client.run``)."""
    import resource

    import numba
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (np.array([usage.ru_utime, usage.ru_stime, usage.ru_minflt]),
            numba.config.NUMBA_NUM_THREADS)


def _worker_environ(keep_malloc_trim):
    """``distributed.nanny.pre-spawn-environ`` of the benchmark's workers: one core each.

    These variables must be set before the worker process starts: the process imports
    this script (so numba and numpy) before Dask applies a ``LocalCluster(env=...)``, and
    numba reads ``NUMBA_NUM_THREADS`` at import (with ``env=`` and kernels loaded from
    numba's cache, each worker ran its kernels on 2 threads). Dask's own
    ``MALLOC_TRIM_THRESHOLD_`` is dropped unless ``keep_malloc_trim``: it also fixes
    glibc's mmap threshold, so every temporary array above 128 kB of the kernels is a fresh
    mapping, page-faulted anew (10^6 rows: 34,000 faults per label pass over 250,000 rows,
    a third of a worker's CPU in system time).
    """
    import dask
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    environ.update({name: "1" for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
                                           "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    if not keep_malloc_trim:
        environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return environ


@contextlib.contextmanager
def _driver_environ_kept(names):
    """Restore the driver's own ``names`` in ``os.environ`` after the block starts and ends.

    The nannies of a ``LocalCluster`` run in this (the driver's) process and write
    ``distributed.nanny.pre-spawn-environ`` into its ``os.environ`` when they spawn
    their workers; numba re-reads ``NUMBA_NUM_THREADS`` whenever it compiles and
    refuses a value other than the one its threads started with ("Cannot set
    NUMBA_NUM_THREADS to a different value once the threads have been launched").
    Call ``restore()`` once the workers are up.
    """
    saved = {name: os.environ.get(name) for name in names}

    def restore():
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    try:
        yield restore
    finally:
        restore()


def _dask_blobs_block(rows, d, k, seed, block_id=None):
    """One chunk of the blobs, made on the worker from its block index (labels first, so
    the driver can regenerate them alone)."""
    rng = np.random.default_rng([seed, block_id[0]])
    centres = np.random.default_rng(seed).uniform(-10, 10, (k, d))
    y = rng.integers(k, size=rows)
    return (centres[y] + rng.normal(size=(rows, d))).astype(np.float32)


def _dask_blobs_labels(n, chunk, k, seed):
    return np.concatenate([np.random.default_rng([seed, b]).integers(k, size=chunk)
                           for b in range(n // chunk)])


def section_dask(n, iterations, d=10, k=20, chunk=1_000_000, seed=0,
                 keep_malloc_trim=False):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    from sklearn_trellis.engines.gibbs import subcluster
    from sklearn_trellis.engines.gibbs.shards import DaskExecutor, LocalExecutor
    from sklearn_trellis.models import NormalInverseWishart
    from sklearn_trellis.models.priors import CRP

    chunk = min(chunk, max(1, n // 4))   # several chunks: each worker holds some
    n = n // chunk * chunk
    print(f"\n== Dask: blobs {n:,} x {d} float32 ({n * d * 4 / 1e9:.2f} GB of rows), {k} "
          f"clusters, chunks of {chunk:,} rows, made on the workers ({load()})")
    y = _dask_blobs_labels(n, chunk, k, seed)
    prior = CRP(1.0)
    pp = prior.kernel_params()
    figures = {}
    lik = None
    for n_workers in (1, 2):
        # one core per worker: numba's and BLAS's thread pools too (the label pass's
        # block scoring is a BLAS product), else one worker already uses every core of
        # a small machine and a second one cannot be faster
        environ = _worker_environ(keep_malloc_trim)
        with _driver_environ_kept(environ) as restore_driver_environ, \
                dask.config.set({"distributed.nanny.pre-spawn-environ": environ}), \
                LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                             memory_limit="10GB", dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            restore_driver_environ()   # the workers are up: the driver keeps its own threads
            X = da.map_blocks(_dask_blobs_block, chunk, d, k, seed, dtype=np.float32,
                              chunks=((chunk,) * (n // chunk), (d,)))
            if lik is None:   # the priors from evenly spaced rows, as DPMixture does
                rows = np.unique(np.linspace(0, n - 1, min(n, 100_000)).astype(np.int64))
                lik = NormalInverseWishart(hyperprior="fixed").fit(X[rows].compute())
            start = time.perf_counter()
            executor = DaskExecutor(lik, X, client=client)
            state = subcluster.new_state(lik, executor, None, prior.alpha)
            setup = time.perf_counter() - start
            rng = np.random.RandomState(seed)
            times, sent = [], []
            trips_before = sum(executor.round_trips.values())
            waited_before = executor.seconds_waiting
            cpu_before = client.run(_process_cpu)
            for _ in range(iterations):
                before, start = executor.bytes_sent, time.perf_counter()
                subcluster.iterate(state, lik, pp, rng, n_split_merge=10)
                times.append(time.perf_counter() - start)
                sent.append(executor.bytes_sent - before)
            cpu_after = client.run(_process_cpu)
            trips = (sum(executor.round_trips.values()) - trips_before) / iterations
            waited = (executor.seconds_waiting - waited_before) / iterations
            ari = adjusted_rand_score(y, state.labels)
            figures[n_workers] = (np.array(times), state.n_clusters)
            print(f"{n_workers} worker(s), {executor.n_shards} shards: setup (persist, "
                  f"actors, compile) {setup:.1f} s; s/iteration "
                  + " ".join(f"{t:.2f}" for t in times)
                  + f"; mean of the last half {np.mean(times[iterations // 2:]):.2f} s; "
                  f"K={state.n_clusters}, ARI {ari:.4f}; bytes sent per iteration "
                  f"{np.mean(sent) / 1e3:.1f} kB (max {max(sent) / 1e3:.1f} kB; the rows: "
                  f"{n * d * 4 / 1e6:.0f} MB)   ({load()})")
            print(f"  driver: {trips:.1f} round trips per iteration (maps and calls, since "
                  f"setup), {waited:.2f} s/iteration waiting for them; per method over the "
                  "whole run (round trips, seconds): " + ", ".join(
                      f"{name} {count} {executor.seconds_by_method[name]:.2f}"
                      for name, count in executor.round_trips.most_common()))
            # both workers busy at once, or one after the other? (CPU per worker)
            workers = sorted(cpu_after)
            rows = [int(executor.shard_sizes[[w == worker for w in executor.workers]].sum())
                    for worker in workers]
            spent = [cpu_after[w][0] - cpu_before[w][0] for w in workers]
            print(f"  workers' CPU over the iterations (user + system, minor page faults; "
                  f"MALLOC_TRIM_THRESHOLD_ {environ.get('MALLOC_TRIM_THRESHOLD_', 'unset')}): "
                  + ", ".join(f"{u + s:.1f} s ({u:.1f} + {s:.1f}, {f:,.0f} faults)"
                              for u, s, f in spent)
                  + "; numba threads " + ", ".join(str(cpu_after[w][1]) for w in workers)
                  + "; rows " + ", ".join(f"{r:,}" for r in rows)
                  + f" ({len(executor.moved_shards)} chunk(s) moved to balance them)")
    same = figures[1][1] == figures[2][1]
    print(f"ratio 1 worker / 2 workers (last half): "
          f"{np.mean(figures[1][0][iterations // 2:]) / np.mean(figures[2][0][iterations // 2:]):.2f}"
          f"; same K in both chains: {same}")
    if n <= 1_000_000:   # the anchor: the same rows and chain in one process
        X = np.concatenate([_dask_blobs_block(chunk, d, k, seed, block_id=(b,))
                            for b in range(n // chunk)])
        state = subcluster.new_state(lik, LocalExecutor(lik, X), None, prior.alpha)
        rng = np.random.RandomState(seed)
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            subcluster.iterate(state, lik, pp, rng, n_split_merge=10)
            times.append(time.perf_counter() - start)
        print(f"one process (LocalExecutor): s/iteration "
              + " ".join(f"{t:.2f}" for t in times) + f"; K={state.n_clusters}   ({load()})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--skip-embedding", action="store_true")
    parser.add_argument("--skip-small", action="store_true",
                        help="skip the 10^4 blobs (e.g. to run the 10^6 case alone)")
    parser.add_argument("--skip-large", action="store_true", help="skip the large blobs")
    parser.add_argument("--bgm-max-iter", type=int, default=100,
                        help="EM iterations of BayesianGaussianMixture on the large blobs")
    parser.add_argument("--bgm-embedding-max-iter", type=int, default=100,
                        help="EM iterations of BayesianGaussianMixture on the embedding set "
                        "(its per-iteration time is printed; 100 is scikit-learn's default)")
    parser.add_argument("--scoring", action="store_true",
                        help="add the label pass's block scoring against the row by row "
                        "fallback on the 10^4 blobs (alternating fits)")
    parser.add_argument("--dask", action="store_true",
                        help="add the Dask section (LocalCluster of 2 worker processes)")
    parser.add_argument("--dask-only", action="store_true", help="run the Dask section only")
    parser.add_argument("--dask-rows", type=int, default=10_000_000)
    parser.add_argument("--dask-iterations", type=int, default=6)
    parser.add_argument("--dask-keep-malloc-trim", action="store_true",
                        help="keep Dask's MALLOC_TRIM_THRESHOLD_ in the workers (page faults "
                        "of every large temporary: its cost)")
    args = parser.parse_args()
    print(f"numba threads: {__import__('numba').get_num_threads()}, {load()}")
    if args.dask_only:
        section_dask(args.dask_rows, args.dask_iterations,
                     keep_malloc_trim=args.dask_keep_malloc_trim)
        return
    # compile once, outside the timings: the serial and parallel twins (a launch over all
    # rows from init='one', statistics of >= 131,072 rows), the subsample start (its
    # greedy cuts: init='auto' above 10,000 rows) and the collapsed engine
    warm_X, _ = blobs(140_000)
    for X, likelihood in ((warm_X, "gaussian"), (warm_X.astype(np.float32), "diagonal")):
        subcluster_fit(X, 3, init="one", likelihood=likelihood)
        subcluster_fit(X[:2000], 3, init="one", likelihood=likelihood)
        subcluster_fit(X[:20_000], 1, likelihood=likelihood)
    DPMixture(method="gibbs", n_sweeps=2, random_state=0).fit(warm_X[:2000])
    # an accepted merge relabels rows; the short warm-up fits may accept none
    replace_label(np.zeros(1, np.int64), 0, 0)
    big = 100_000 if args.quick else 1_000_000
    if not args.skip_small:
        section_blobs(10_000, args.iterations or 200, collapsed_sweeps=20)
    if not args.skip_large:
        section_blobs(big, args.iterations or 60, collapsed_sweeps=2,
                      bgm_max_iter=args.bgm_max_iter)
    if not args.skip_embedding:
        n, d = (20_000, 64) if args.quick else (100_000, 128)
        section_embedding(n, d, args.iterations or EMBEDDING_ITERATIONS,
                          args.bgm_embedding_max_iter)
    if args.scoring:
        section_scoring(10_000, args.iterations or 200)
    if args.dask:
        section_dask(args.dask_rows, args.dask_iterations,
                     keep_malloc_trim=args.dask_keep_malloc_trim)


if __name__ == "__main__":
    main()
