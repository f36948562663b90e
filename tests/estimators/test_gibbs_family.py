"""What the four Gibbs estimators share (``_BaseGibbs``), tested once on all of them:
the keyword-only signature, the burn-in default and check, the three cases of
``warm_start``, and the exact-or-sampled switch (``method``, ``max_exact_size``)."""

import inspect

import numpy as np
import pytest

from sklearn_trellis import CrossCat, DPMixture, FastTIWD, InfiniteBiclustering
from sklearn_trellis._core.labels import first_appearance_labels
from sklearn_trellis.engines.gibbs import bicluster, crosscat
from sklearn_trellis.engines.gibbs import sampler as gibbs


def _points(n=20, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) + shift
    X[n // 2:] += 5.0
    return X


def _distances(n=20, seed=0, shift=0.0):
    X = _points(n, seed, shift)
    return ((X[:, None] - X[None]) ** 2).sum(-1)


def _partition_of(labels):
    return first_appearance_labels(np.asarray(labels)).tolist()


# Per estimator: constructor, data maker (n, seed) -> X, number of kept samples of a fit,
# the engine function that receives the chains' start states (module, name), the
# partitions of a list of states, kwargs that make exact inference apply, a tiny problem
# and its size (as max_exact_size measures it).
FAMILY = {
    "DPMixture": dict(
        make=DPMixture, data=lambda n=20, seed=0: _points(n, seed),
        n_kept=lambda m: m.samples_.shape[0],
        runner=(gibbs, "run_chains"),
        partitions=lambda states: [_partition_of(s.compact_labels()) for s in states],
        last_states=lambda m: m._chains.states,
        exact_kwargs={}, tiny=lambda: _points(6), tiny_size=6),
    "FastTIWD": dict(
        make=FastTIWD, data=lambda n=20, seed=0: _distances(n, seed),
        n_kept=lambda m: m.samples_.shape[0],
        runner=(gibbs, "run_chains"),
        partitions=lambda states: [_partition_of(s.compact_labels()) for s in states],
        last_states=lambda m: m._chains.states,
        # exact mode needs feature rows with normalization='none' (the likelihood of
        # distances is translation invariant and does not factorise over blocks)
        exact_kwargs=dict(scale=1.0, theta=1.0, dof=3.0, metric="sqeuclidean",
                          normalization="none"), tiny=lambda: _points(6), tiny_size=6),
    "InfiniteBiclustering": dict(
        make=InfiniteBiclustering, data=lambda n=20, seed=0: _points(n, seed)[:, :3].repeat(2, 1),
        n_kept=lambda m: m.row_samples_.shape[0],
        runner=(bicluster, "run_bicluster_chains"),
        partitions=lambda states: [(_partition_of(s.row_labels), _partition_of(s.column_labels))
                                   for s in states],
        last_states=lambda m: m._chains,
        exact_kwargs={}, tiny=lambda: _points(5)[:, :3], tiny_size=52 * 5),
    "CrossCat": dict(
        make=CrossCat, data=lambda n=20, seed=0: _points(n, seed),
        n_kept=lambda m: m.view_samples_.shape[0],
        runner=(crosscat, "run_chains"),
        partitions=lambda states: [
            (_partition_of(s.view_of), [_partition_of(s.labels[v]) for v in s.views])
            for s in states],
        last_states=lambda m: m._chains,
        exact_kwargs=dict(alpha_prior=None), tiny=lambda: _points(6), tiny_size=6),
}
NAMES = list(FAMILY)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_after_the_first_are_keyword_only(name):
    make = FAMILY[name]["make"]
    parameters = list(inspect.signature(make).parameters.values())
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[1:])
    first = parameters[0].default
    with pytest.raises(TypeError):
        make(first, 1.0)
    for shared in ("n_sweeps", "burn_in", "thin", "n_chains", "n_jobs", "method",
                   "max_exact_size", "random_state", "verbose", "warm_start"):
        assert shared in make().get_params()


@pytest.mark.parametrize("name", NAMES)
def test_burn_in_defaults_to_half_the_sweeps_and_must_be_below_them(name):
    spec = FAMILY[name]
    X = spec["data"]()
    model = spec["make"](method="gibbs", n_sweeps=6, random_state=0).fit(X)
    assert spec["n_kept"](model) == 3
    model = spec["make"](method="gibbs", n_sweeps=6, burn_in=1, thin=2, n_chains=2,
                         random_state=0).fit(X)
    assert spec["n_kept"](model) == 2 * 3
    with pytest.raises(ValueError, match="burn_in must be < n_sweeps=5"):
        spec["make"](method="gibbs", n_sweeps=5, burn_in=5).fit(X)


@pytest.mark.parametrize("name", NAMES)
def test_n_jobs_zero_is_refused_by_name_whichever_engine_runs(name):
    """joblib's counts are positive or negative; 0 was refused by joblib after the setup
    of a Gibbs fit (CrossCat, InfiniteBiclustering) and ignored by an exact one."""
    spec = FAMILY[name]
    for method in ("gibbs", "exact"):
        model = spec["make"](n_jobs=0, n_chains=2, **{**spec["exact_kwargs"], "method": method})
        with pytest.raises(ValueError, match="'n_jobs' parameter"):
            model.fit(spec["tiny"]())
    for n_jobs in (-1, -2, 1, 2, None):
        spec["make"](n_jobs=n_jobs)._validate_params()


@pytest.mark.parametrize("name", NAMES)
def test_warm_start_continues_restarts_or_refuses(name, monkeypatch):
    spec = FAMILY[name]
    X, X_new = spec["data"](), spec["data"](seed=1)
    model = spec["make"](method="gibbs", n_sweeps=6, burn_in=2, n_chains=2, warm_start=True,
                         random_state=0).fit(X)
    assert spec["n_kept"](model) == 8
    # same data: the chains go on, no burn-in, the new samples appended
    model.fit(X)
    assert spec["n_kept"](model) == 8 + 12
    # new data of the same shape: each chain restarts from its last state, a burn-in
    # is run and the old samples are dropped
    last = spec["partitions"](spec["last_states"](model))
    module, function = spec["runner"]
    original, seen = getattr(module, function), {}

    def spy(*args, **kwargs):  # the chains update their states: read them at the start
        seen["starts"] = spec["partitions"](kwargs["states"])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, function, spy)
    model.fit(X_new)
    assert seen["starts"] == last
    assert spec["n_kept"](model) == 8
    monkeypatch.setattr(module, function, original)
    # another shape: a clear error naming both shapes
    smaller = spec["data"](n=10)
    with pytest.raises(ValueError, match=r"warm_start needs data of the previous fit's shape "
                                         r"\(20, \d+\).*got \(10, \d+\)"):
        model.fit(smaller)
    # without warm_start every fit starts afresh
    cold = spec["make"](method="gibbs", n_sweeps=6, burn_in=2, random_state=0)
    cold.fit(X)
    assert spec["n_kept"](cold.fit(X)) == 4
    assert spec["n_kept"](cold.fit(smaller)) == 4


@pytest.mark.parametrize("name", NAMES)
def test_one_switch_between_exact_and_gibbs(name):
    spec = FAMILY[name]
    X, size, exact_kwargs = spec["tiny"](), spec["tiny_size"], spec["exact_kwargs"]
    make = spec["make"]
    auto = make(n_sweeps=10, random_state=0, **exact_kwargs).fit(X)
    assert auto.method_ == "exact" and auto.approximation_ is None
    assert auto.model_ is not None
    at_size = make(n_sweeps=10, max_exact_size=size, random_state=0, **exact_kwargs).fit(X)
    assert at_size.method_ == "exact"
    below = make(n_sweeps=10, max_exact_size=size - 1, random_state=0, **exact_kwargs).fit(X)
    assert below.method_ == "gibbs"
    assert below.approximation_.startswith("Gibbs sampling: 5 kept samples from 1 chain")
    assert below.model_ is not None
    forced = make(method="gibbs", n_sweeps=10, random_state=0, **exact_kwargs).fit(X)
    assert forced.method_ == "gibbs"
    exact = make(method="exact", n_sweeps=10, max_exact_size=size, random_state=0,
                 **exact_kwargs).fit(X)
    assert exact.method_ == "exact"



@pytest.mark.parametrize("n_jobs, threads", [(None, 1), (1, 1), (2, 2)])
def test_kmeans_start_runs_on_the_threads_n_jobs_allows(n_jobs, threads, monkeypatch):
    """``init='kmeans'`` fits k-means on ``effective_n_jobs(n_jobs)`` BLAS and OpenMP
    threads (not every pool of the machine: a loaded machine's idle pools cost 5 to 60
    times the CPU), in both estimators that offer it; its labels do not depend on the
    number of threads."""
    from threadpoolctl import threadpool_info

    from sklearn_trellis import _gibbs_base

    seen = []

    class Stop(Exception):
        pass

    class Recording(_gibbs_base.KMeans):
        stop = False

        def fit(self, X, y=None, sample_weight=None):
            seen.append({m["num_threads"] for m in threadpool_info()})
            fitted = super().fit(X, y, sample_weight)
            if Recording.stop:   # the estimator's start is all this test needs
                raise Stop
            return fitted

    X = _points(60, seed=3)
    one = _gibbs_base.initial_labels("kmeans", X, np.random.RandomState(0), n_jobs=1)
    monkeypatch.setattr(_gibbs_base, "KMeans", Recording)
    labels = _gibbs_base.initial_labels("kmeans", X, np.random.RandomState(0), n_jobs=n_jobs)
    assert seen == [{threads}]
    np.testing.assert_array_equal(labels, one)
    monkeypatch.setattr(Recording, "stop", True)
    for estimator in (DPMixture(init="kmeans"), InfiniteBiclustering(init="kmeans")):
        seen.clear()
        with pytest.raises(Stop):
            estimator.set_params(n_jobs=n_jobs, method="gibbs").fit(X)
        assert seen == [{threads}]
