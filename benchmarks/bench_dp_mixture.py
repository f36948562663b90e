"""Quality and speed of ``DPMixture`` (collapsed Gibbs) with default settings.

Prints, per dataset, the adjusted Rand index and seconds of ``DPMixture()``
and of scikit-learn's ``BayesianGaussianMixture`` (default settings,
``n_components=10``, measured in the same run; also its ARI with
``n_components=50``, where the truncation no longer caps the number of
clusters at the number of classes), next to the targets quoted in issue #4
(the best of BayesianGaussianMixture, bnpy's variational DP mixture and the C
collapsed-Gibbs package bmcc). Then seconds per Gibbs sweep (scan only, scan
+ the default 10 split-merge proposals, and with the default likelihood's
hyperparameter draw) and the time of the co-clustering matrix of 1,000
samples of 2,000 items.

Run: ``python benchmarks/bench_dp_mixture.py [--quick] [--seeds N] [--anchors] [--fixed-prior]``
(``--fixed-prior`` measures ``NormalInverseWishart(hyperprior='fixed')``, the
default before the grid hyperprior, instead of the defaults;
``--quick`` skips the 100,000-point dataset; ``--seeds N`` averages the ARI
over seeds ``0..N-1``, default 5, at most 2 on the 100,000-point dataset where
one fit takes minutes; ``--anchors`` adds the anchor section below).

Anchors (optional)
------------------
With ``--anchors``, bnpy's variational DP mixture and bmcc's collapsed Gibbs
sampler are run on the same datasets, each only if it imports (otherwise a
skip message is printed). Neither belongs in the project's environment; on
the reference machine they live in a separate virtualenv that sees the
system packages::

    python -m venv /tmp/anchors --system-site-packages
    /tmp/anchors/bin/pip install wheel pandas cython munkres memory_profiler numexpr
    /tmp/anchors/bin/pip install --no-deps --no-build-isolation bnpy      # 0.1.7
    CFLAGS=-fcommon /tmp/anchors/bin/pip install --no-deps --no-build-isolation bmcc  # 1.0.3
    PYTHONPATH=$PWD /tmp/anchors/bin/python benchmarks/bench_dp_mixture.py --anchors

(``--no-deps`` because bnpy pins joblib 0.14 and an old scikit-learn and bmcc
depends on the defunct ``sklearn`` package; ``-fcommon`` because bmcc's C
headers define globals that GCC >= 10 rejects as duplicates.) bnpy 0.1.7
predates NumPy 2 and Python 3.11: :func:`_import_bnpy` restores the removed
aliases it uses (``np.float``, ``np.bool8``, ..., ``inspect.getargspec``)
before importing it.

- bnpy, two settings: its defaults (``'VB'``, ``K=6`` random examples,
  ``nLap=10``) and its recommended memoized VB with birth / merge / delete /
  shuffle moves from one cluster (``nLap=100``); both use bnpy's default
  Gauss prior (``E[Sigma] = I``, ``nu = d + 2``, ``kappa = 1e-4``,
  ``gamma0 = 1``). Labels = most responsible component; seed = ``taskID``.
- bmcc, its defaults (Normal-Wishart components with ``df = d`` and scale
  ``Cov(X)^-1 / d``, DP with empirical-Bayes updates of alpha, all points in
  one cluster at the start), 200 iterations like ``DPMixture``; labels = the
  least-squares (Dahl) sample after a burn-in of 100 for ``n <= 3000``,
  otherwise the last sample (the least-squares search needs ``n x n``
  matrices per sample). bmcc's C sampler takes no seed, so its runs are not
  reproducible; it is not run on the 100,000-point dataset (too slow).

Measured on the reference machine (2 cores shared with other jobs, load 3-8;
mean ARI over seeds 0-4, seconds per fit in parentheses):

==============================  ==============  ==============  ==============  ===============
dataset                         bnpy defaults   bnpy moves      bmcc            BGM
==============================  ==============  ==============  ==============  ===============
iris                            0.765 (0.6)     0.568 (8.6)     0.227 (0.3)     0.553
wine (standardized)             0.482 (0.8)     0.401 (13.4)    0.090 (20.7)    0.368
breast cancer (standardized)    0.495 (1.6)     0.079 (18.3)    0.016 (13.4)    0.218
digits (10 PCA dims)            0.406 (0.2)     0.000 (1.5)     0.000 (1.7)     0.727
blobs 10,000 x 2                0.682 (0.1)     0.872 (72)      0.453 (81)      0.699
blobs 100,000 x 10 (seed 0)     0.724 (33)      1.000 (1020)    not run         0.650 (2 seeds)
==============================  ==============  ==============  ==============  ===============

(bnpy's defaults stop after 10 laps from 6 random clusters; with births and
merges it settles on 1-2 clusters on the real datasets. bmcc, which has no
split-merge moves, ended with 56 clusters on wine, 9 on breast cancer and 1
on digits in single runs.)
"""

import collections
import contextlib
import importlib.util
import inspect
import os
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_blobs
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import DPMixture
from sklearn_trellis.models import NormalInverseWishart
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.summaries import pairwise_cooccurrence
from sklearn_trellis.models.priors import CRP

TARGETS = {"iris": 0.57, "wine (standardized)": 0.50, "breast cancer (standardized)": 0.62,
           "digits (10 PCA dims)": 0.74, "blobs 10,000 x 2": 0.87, "blobs 100,000 x 10": 0.99}


def datasets(quick):
    X, y = load_iris(return_X_y=True)
    yield "iris", X, y
    X, y = load_wine(return_X_y=True)
    yield "wine (standardized)", StandardScaler().fit_transform(X), y
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer (standardized)", StandardScaler().fit_transform(X), y
    X, y = load_digits(return_X_y=True)
    yield "digits (10 PCA dims)", PCA(10, random_state=0).fit_transform(X), y
    X, y = make_blobs(10_000, 2, centers=5, random_state=0)
    yield "blobs 10,000 x 2", X, y
    if not quick:
        X, y = make_blobs(100_000, 10, centers=5, random_state=0)
        yield "blobs 100,000 x 10", X, y


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def seeds_for(name, n_seeds):
    return range(min(n_seeds, 2) if name.startswith("blobs 100,000") else n_seeds)


def bgm_ari(X, y, n_components, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        bgm, seconds = timed(lambda: BayesianGaussianMixture(
            n_components=n_components, random_state=seed).fit(X))
    return adjusted_rand_score(y, bgm.predict(X)), seconds


def quality(quick, n_seeds, fixed_prior=False):
    """ARI of DPMixture and of BayesianGaussianMixture truncated at 10 and 50 components.

    The second BGM column shows how much of the anchor's ARI comes from its
    truncation at the true number of classes (not run on the 100,000-point
    blobs, where it takes minutes).
    """
    print(f"ARI = mean over seeds 0..{n_seeds - 1} (at most 2 on the 100,000-point blobs); "
          "s = mean seconds per fit")
    print(f"{'dataset':30s} {'target':>6s} | {'DPMixture ARI':>13s} {'s':>7s} {'K':>5s} | "
          f"{'BGM10 ARI':>9s} {'s':>6s} | {'BGM50 ARI':>9s}")
    for name, X, y in datasets(quick):
        aris, secs, ks, bgm_aris, bgm_secs, wide_aris = [], [], [], [], [], []
        for seed in seeds_for(name, n_seeds):
            likelihood = (NormalInverseWishart(hyperprior="fixed") if fixed_prior
                          else "gaussian")
            model, seconds = timed(lambda: DPMixture(likelihood=likelihood,
                                                     random_state=seed).fit(X))
            aris.append(adjusted_rand_score(y, model.labels_))
            secs.append(seconds)
            ks.append(model.n_clusters_)
            ari, seconds = bgm_ari(X, y, 10, seed)
            bgm_aris.append(ari)
            bgm_secs.append(seconds)
            if X.shape[0] <= 10_000:
                wide_aris.append(bgm_ari(X, y, 50, seed)[0])
        ari = np.mean(aris)
        flag = "ok " if ari >= TARGETS[name] else "LOW"
        wide = f"{np.mean(wide_aris):9.3f}" if wide_aris else f"{'-':>9s}"
        print(f"{name:30s} {TARGETS[name]:6.2f} | {ari:9.3f} {flag} {np.mean(secs):7.2f} "
              f"{np.mean(ks):5.1f} | {np.mean(bgm_aris):9.3f} {np.mean(bgm_secs):6.2f} | "
              f"{wide}   (per seed: {' '.join(f'{a:.3f}' for a in aris)})", flush=True)


# -- anchors (optional) -----------------------------------------------------------
def _import_bnpy():
    """Import bnpy 0.1.7 after restoring the NumPy / inspect names it still uses."""
    if importlib.util.find_spec("bnpy") is None:  # patch nothing when it is absent
        raise ModuleNotFoundError("No module named 'bnpy'")
    aliases = {"float": float, "int": int, "bool": bool, "object": object, "complex": complex,
               "bool8": np.bool_, "float_": np.float64, "int0": np.intp, "Inf": np.inf,
               "NaN": np.nan, "product": np.prod, "alltrue": np.all, "sometrue": np.any,
               "cumproduct": np.cumprod}
    for alias, value in aliases.items():
        if alias not in np.__dict__:
            setattr(np, alias, value)
    if not hasattr(inspect, "getargspec"):
        argspec = collections.namedtuple("ArgSpec", "args varargs keywords defaults")
        inspect.getargspec = lambda f: argspec(*inspect.getfullargspec(f)[:4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import bnpy
    return bnpy


def bnpy_labels(bnpy, X, seed, setting):
    data = bnpy.data.XData(np.ascontiguousarray(X, dtype=np.float64))
    if setting == "defaults":
        kwargs = dict(algName="VB")
    else:
        kwargs = dict(algName="memoVB", K=1, nLap=100, moves="birth,merge,delete,shuffle")
    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings(), \
            contextlib.redirect_stdout(open(os.devnull, "w")):
        warnings.simplefilter("ignore")
        model, _ = bnpy.run(data, "DPMixtureModel", "Gauss", output_path=os.path.join(out, "r"),
                            doWriteStdOut=False, taskID=seed + 1, **kwargs)
        return model.calc_local_params(data)["resp"].argmax(axis=1)


def bmcc_labels(bmcc, X, n_iter=200):
    n, d = X.shape
    with contextlib.redirect_stdout(open(os.devnull, "w")):
        chain = bmcc.GibbsMixtureModel(
            data=np.ascontiguousarray(X, dtype=np.float64),
            component_model=bmcc.NormalWishart(df=d), mixture_model=bmcc.DPM(alpha=1, use_eb=True),
            assignments=np.zeros(n, dtype=np.uint16), thinning=1)
        chain.iter(n_iter)
        if n <= 3000:
            return chain.select_lstsq(burn_in=n_iter // 2).best
        return chain.hist[-1]


def anchors(quick, n_seeds):
    runners = []
    try:
        bnpy = _import_bnpy()
    except Exception as exc:  # any failure means "not available here"
        print(f"bnpy anchor skipped: bnpy does not import ({type(exc).__name__}: {exc})")
    else:
        runners += [(f"bnpy {setting}", lambda X, seed, setting=setting:
                     bnpy_labels(bnpy, X, seed, setting)) for setting in ("defaults", "moves")]
    try:
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            import bmcc
    except Exception as exc:
        print(f"bmcc anchor skipped: bmcc does not import ({type(exc).__name__}: {exc})")
    else:
        runners.append(("bmcc", lambda X, seed: None if X.shape[0] > 10_000
                        else bmcc_labels(bmcc, X)))
    if not runners:
        return
    print(f"{'anchor ARI (s)':30s} " + " ".join(f"{label:>17s}" for label, _ in runners))
    for name, X, y in datasets(quick):
        cells = []
        for _, run in runners:
            aris, secs = [], []
            for seed in seeds_for(name, n_seeds):
                labels, seconds = timed(lambda: run(X, seed))
                if labels is None:
                    break
                aris.append(adjusted_rand_score(y, labels))
                secs.append(seconds)
            cells.append(f"{np.mean(aris):8.3f} ({np.mean(secs):6.1f})" if aris
                         else f"{'skipped':>17s}")
        print(f"{name:30s} " + " ".join(cells), flush=True)


def seconds_per_sweep(n, d, repeats=5):
    X, y = make_blobs(n, d, centers=5, random_state=0)
    lik = NormalInverseWishart().fit(X)
    data = lik.kernel_data(X)
    state = gibbs.new_state(lik, data, y, 1.0)
    rng = np.random.RandomState(0)
    pp = CRP(1.0).kernel_params()
    gibbs.sweep(state, lik, pp, data, rng, n_split_merge=10)   # compile / warm up
    _, scan = timed(lambda: [gibbs.sweep(state, lik, pp, data, rng) for _ in range(repeats)])
    _, full = timed(lambda: [gibbs.sweep(state, lik, pp, data, rng, n_split_merge=10)
                             for _ in range(repeats)])

    def hyper_step():   # the default grid hyperprior's draw and the state update it causes
        active = state.active[:state.meta[0]]
        new = lik.resample_params(state.params, state.stats, state.shared, state.counts,
                                  active, rng)
        gibbs.set_params(state, lik, data, new)

    _, hyper = timed(lambda: [hyper_step() for _ in range(repeats)])
    return scan / repeats, full / repeats, hyper / repeats


def speed(quick):
    targets = {(10_000, 2): 0.1, (10_000, 10): 0.1, (100_000, 10): 1.5}
    for (n, d), target in targets.items():
        if quick and n > 10_000:
            continue
        scan, full, hyper = seconds_per_sweep(n, d)
        print(f"seconds per sweep n={n:,} d={d}: scan {scan:.4f} s, scan + 10 split-merge "
              f"{full:.4f} s, + hyperparameter draw {full + hyper:.4f} s "
              f"(target <= {target} s)", flush=True)
    rng = np.random.default_rng(0)
    samples = rng.integers(0, 5, size=(1000, 2000))
    pairwise_cooccurrence(samples[:2, :10])  # compile
    _, seconds = timed(lambda: pairwise_cooccurrence(samples))
    print(f"co-clustering matrix, 1,000 samples x 2,000 items: {seconds:.3f} s (target <= 2 s)")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    seeds = int(sys.argv[sys.argv.index("--seeds") + 1]) if "--seeds" in sys.argv else 5
    if "--anchors" in sys.argv:
        anchors(quick, seeds)
    quality(quick, seeds, fixed_prior="--fixed-prior" in sys.argv)
    speed(quick)
