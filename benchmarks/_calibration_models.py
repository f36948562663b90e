"""Recovery of model hyperparameters and calibration of DPMixture (issue 28, models part).

``recovery_rows()``: data drawn from each model at known hyperparameters and
the value the evidence / ``GridSearchCV`` with default scoring selects:

- Ginkgo ``lam`` (jets of :func:`~sklearn_trellis.datasets.make_ginkgo_jets` at
  two generating values): ``GridSearchCV(TrellisHierarchical(energy=GinkgoEnergy()))``
  with default scoring, each fold holding out one whole jet (a jet is one
  sample), so its score is the exact ``log p(jet | lam)``;
- FastTIWD ``dof`` on :func:`~sklearn_trellis.datasets.make_wishart_blocks`:
  ``GridSearchCV(FastTIWD(), {'dof': grid})`` with default scoring;
- DPMixture ``alpha`` on CRP-generated Gaussian clusters: ``GridSearchCV`` with
  default scoring, the posterior mean under ``alpha_prior=(1, 1)``, and the
  oracle limit: how often the maximum-likelihood ``alpha`` given the *true*
  partition (Ewens; ``K`` is sufficient) is within 15 %, at n = 150 to
  150,000, and the ``n`` at which it would be 90 % of the time.

``calibration_rows()``: expected calibration error (10 equal-width bins) of
DPMixture's pairwise marginals against the true co-membership, and of
``predict_proba`` (confidence of the most probable cluster against
correctness, clusters matched to classes by the Hungarian method) on held-out
points, next to scikit-learn's ``BayesianGaussianMixture`` on the same data.

Run through the issue's driver:
``python benchmarks/bench_calibration.py --only _calibration_models [--quick]``.
"""

import sys

import numpy as np
from scipy.optimize import brentq, linear_sum_assignment
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import GridSearchCV

from sklearn_trellis import DPMixture, FastTIWD, TrellisHierarchical
from sklearn_trellis.datasets import make_gaussian_pairs, make_ginkgo_jets, make_wishart_blocks
from sklearn_trellis.metrics import expected_calibration_error
from sklearn_trellis.models import GinkgoEnergy

GOAL = 0.15


def _row(model, parameter, data, true, grid=None, auto=None, note=""):
    """A recovery row in the keys ``bench_calibration.py`` prints."""
    return dict(model=model, parameter=parameter, data=data, true=float(true),
                grid=None if grid is None else float(grid),
                auto=None if auto is None else float(auto), note=note)


# -- recovery ---------------------------------------------------------------------------
def _jets_as_folds(jets):
    """``(X, cv)``: the jets' leaves stacked, and folds that hold out one whole jet each
    (fitted on the next jet): a jet is one sample, so the held-out score of a fold is the
    exact ``log p(jet | lam)`` and GridSearchCV's mean test score is their mean."""
    stops = np.cumsum([len(jet) for jet in jets])
    index = [np.arange(stop - len(jet), stop) for jet, stop in zip(jets, stops)]
    folds = [(index[(k + 1) % len(jets)], index[k]) for k in range(len(jets))]
    return np.concatenate(jets), folds


def _ginkgo_rows(n_jets):
    rows = []
    for true in (1.5, 4.0):
        jets = make_ginkgo_jets(n_jets, lam=true, random_state=1).jets
        X, folds = _jets_as_folds(jets)
        grid = np.round(true * np.arange(0.6, 1.45, 0.05), 4)
        search = GridSearchCV(TrellisHierarchical(energy=GinkgoEnergy()),
                              {"energy__lam": grid}, cv=folds, refit=False).fit(X)
        rows.append(_row("TrellisHierarchical(Ginkgo)", "lam",
                         f"{n_jets} jets of make_ginkgo_jets", true,
                         grid=search.best_params_["energy__lam"],
                         note="GridSearchCV default scoring, one held-out jet per fold "
                              "(exact log p(jet | lam)); refit=False: the jets"
                              " stacked are no jet"))
    return rows


def _fast_tiwd_rows(quick):
    n, dof = (80, 120) if quick else (200, 300)
    grid = [round(dof * f) for f in (0.6, 0.73, 0.87, 1.0, 1.13, 1.27, 1.5)]
    data = make_wishart_blocks(n_samples=n, dof=dof, random_state=0)
    search = GridSearchCV(FastTIWD(n_sweeps=30 if quick else 40, random_state=0),
                          {"dof": grid}, cv=5).fit(data.distances)
    return [_row("FastTIWD", "dof", f"make_wishart_blocks, n={n}", dof,
                 grid=search.best_params_["dof"], note="GridSearchCV default scoring, cv=5")]


def _ewens_mle(n, k):
    return brentq(lambda a: sum(a / (a + i) for i in range(n)) - k, 1e-6, 1e4) if k > 1 else 0.0


def oracle_within_goal(n, alpha, n_draws=400, seed=0):
    """Fraction of CRP(alpha) partitions of ``n`` items whose Ewens MLE of alpha (the best
    estimate from the true partition: K is sufficient) lies within 15 % of alpha.

    K is a sum of independent Bernoulli(alpha / (alpha + i)), drawn directly; the MLE
    solves ``sum_i a / (a + i) = K`` (vectorised bisection in log a)."""
    rng = np.random.default_rng(seed)
    p = alpha / (alpha + np.arange(n))
    k = np.array([(rng.random(n) < p).sum() for _ in range(n_draws)])
    low, high = np.full(n_draws, np.log(1e-6)), np.full(n_draws, np.log(1e6))
    i = np.arange(n)
    for _ in range(60):
        mid = (low + high) / 2
        mean_k = (np.exp(mid)[:, None] / (np.exp(mid)[:, None] + i[None, :])).sum(axis=1)
        low, high = np.where(mean_k < k, mid, low), np.where(mean_k < k, high, mid)
    estimate = np.exp((low + high) / 2)
    return float(np.mean(np.abs(estimate - alpha) <= GOAL * alpha))


def n_for_identifiable(alpha, coverage=0.9):
    """Smallest ``n`` at which the oracle's normal approximation is within 15 % with
    probability ``coverage``: ``Var K = sum_i alpha i / (alpha + i)**2 >= (z / 0.15)**2``
    (the Ewens Fisher information is ``Var K / alpha**2``); ``Var K ~ alpha log n``."""
    z = {0.9: 1.645, 0.95: 1.96}[coverage]
    need = (z / GOAL) ** 2
    # Var K = alpha (H_{n-1} terms): alpha (log(n / alpha) - 1) + O(1); solve in log n
    return float(np.exp(need / alpha + 1 + np.log(alpha)))


def crp_blobs(n, alpha, seed, spread=6.0):
    """Gaussian clusters (unit variance, means ``N(0, spread^2)``) on a CRP(alpha) partition."""
    rng = np.random.default_rng(seed)
    labels = make_gaussian_pairs(n, alpha=alpha, random_state=seed).target   # CRP(alpha)
    means = rng.normal(scale=spread, size=(labels.max() + 1, 2))
    order = rng.permutation(n)
    return (means[labels] + rng.normal(size=(n, 2)))[order], labels[order]


def _dp_rows(quick):
    rows = []
    n = 150
    grid = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    for alpha in (1.0, 4.0):
        X, labels = crp_blobs(n, alpha, seed=0)
        search = GridSearchCV(DPMixture(n_sweeps=20 if quick else 100, random_state=0),
                              {"alpha": grid}, cv=3 if quick else 5).fit(X)
        learned = DPMixture(n_sweeps=50 if quick else 300, alpha_prior=(1.0, 1.0),
                            random_state=0).fit(X)
        n_draws = 100 if quick else 400
        inside = {m: oracle_within_goal(m, alpha, n_draws) for m in (150, 1500, 15000)}
        coverage = ", ".join(f"n={m}: {v:.0%}" for m, v in inside.items())
        rows.append(_row("DPMixture", "alpha", f"CRP({alpha:g}) blobs, n={n}", alpha,
                         grid=search.best_params_["alpha"],
                         auto=float(learned.alphas_.mean()),
                         note=f"auto = posterior mean, alpha_prior=(1, 1); Ewens MLE from the "
                              f"true partition: {_ewens_mle(n, labels.max() + 1):.3g}"))
        rows.append(_row("(oracle: true partition)", "alpha", f"CRP({alpha:g}), any n", alpha,
                         note=f"MLE within 15% in {coverage} ({n_draws} draws each); 90% needs "
                              f"n ~ {n_for_identifiable(alpha):.1e}: not identifiable"))
    return rows


def recovery_rows(quick=False):
    """Rows ``{model, parameter, data, true, grid, auto, note}`` (see bench_calibration.py)."""
    return _ginkgo_rows(20 if quick else 200) + _fast_tiwd_rows(quick) + _dp_rows(quick)


# -- calibration ------------------------------------------------------------------------
def _binary_ece(probabilities, outcomes):
    """ECE (10 bins) of probabilities of binary outcomes, through the library's pairwise
    ECE: one reference item labelled 0 and one item per outcome, labelled 0 when it
    happened."""
    return expected_calibration_error([0], np.asarray(probabilities, dtype=float)[None, :],
                                      y_reference=1 - np.asarray(outcomes, dtype=int))


def _pairwise_ece(together, labels):
    return expected_calibration_error(labels, together)


def _proba_ece(proba, fitted_labels, fitted_truth, truth):
    """Max-probability confidence against correctness, clusters matched to classes."""
    k = proba.shape[1]
    classes = np.unique(np.concatenate([fitted_truth, truth]))
    overlap = np.zeros((k, classes.size))
    for c in range(min(k, fitted_labels.max() + 1)):
        for j, t in enumerate(classes):
            overlap[c, j] = np.sum((fitted_labels == c) & (fitted_truth == t))
    rows, cols = linear_sum_assignment(-overlap)
    mapping = dict(zip(rows, classes[cols]))
    predicted = np.argmax(proba, axis=1)
    correct = np.array([mapping.get(c, -1) == t for c, t in zip(predicted, truth)])
    return _binary_ece(proba.max(axis=1), correct)


def calibration_rows(quick=False):
    """ECE of pairwise marginals and of ``predict_proba``: DPMixture and BayesianGaussianMixture
    (rows ``{model, data, setting, engine, ece, note}``, see bench_calibration.py)."""
    rows = []
    for alpha, seed in ((1.0, 0), (4.0, 1)):
        X, labels = crp_blobs(200, alpha, seed=seed)
        fit, held = np.arange(150), np.arange(150, 200)
        dp = DPMixture(n_sweeps=50 if quick else 400, random_state=0).fit(X[fit])
        bgm = BayesianGaussianMixture(n_components=20, random_state=0, max_iter=500).fit(X[fit])
        r = bgm.predict_proba(X[fit])
        name = f"CRP({alpha:g}) blobs n=150 (+50)"
        rows += [
            dict(model="DPMixture", data=name, setting="pairwise marginals",
                 engine=dp.method_, ece=_pairwise_ece(dp.pairwise_marginals_, labels[fit])),
            dict(model="BayesianGaussianMixture", data=name, setting="pairwise marginals",
                 engine="variational", ece=_pairwise_ece(r @ r.T, labels[fit]),
                 note="sum_k r_ik r_jk"),
            dict(model="DPMixture", data=name, setting="predict_proba (held out)",
                 engine=dp.method_,
                 ece=_proba_ece(dp.predict_proba(X[held])[:, :-1], dp.labels_, labels[fit],
                                labels[held]),
                 note="max probability vs correct (Hungarian-matched clusters)"),
            dict(model="BayesianGaussianMixture", data=name, setting="predict_proba (held out)",
                 engine="variational",
                 ece=_proba_ece(bgm.predict_proba(X[held]), bgm.predict(X[fit]), labels[fit],
                                labels[held]),
                 note="max probability vs correct (Hungarian-matched clusters)"),
        ]
    return rows


if __name__ == "__main__":
    sys.exit("Run benchmarks/bench_calibration.py --only _calibration_models [--quick].")
