"""Recovery of model hyperparameters and calibration of DPMixture (issue 28, models part).

``recovery_rows()``: data drawn from each model at known hyperparameters and
the value the evidence / ``GridSearchCV`` with default scoring selects:

- Ginkgo ``lam`` (jets of :func:`~sklearn_trellis.datasets.make_ginkgo_jets` at
  two generating values): the grid value of largest summed exact evidence
  ``sum_jets log p(jet | lam)`` (``GinkgoEnergy(likelihood='momenta')``; one
  jet is one sample, so the jets, not the leaves, are the data set);
- FastTIWD ``dof`` on :func:`~sklearn_trellis.datasets.make_wishart_blocks`:
  ``GridSearchCV(FastTIWD(), {'dof': grid})`` with default scoring;
- DPMixture ``alpha`` on CRP-generated Gaussian clusters: ``GridSearchCV`` with
  default scoring, the posterior mean under ``alpha_prior=(1, 1)``, and the
  oracle limit: the maximum-likelihood ``alpha`` given the *true* partition
  (Ewens), whose spread over draws bounds what any method can do at this ``n``.

``calibration_rows()``: expected calibration error (10 equal-width bins) of
DPMixture's pairwise marginals against the true co-membership, and of
``predict_proba`` (confidence of the most probable cluster against
correctness, clusters matched to classes by the Hungarian method) on held-out
points, next to scikit-learn's ``BayesianGaussianMixture`` on the same data.

Run: ``python benchmarks/_calibration_models.py [--quick]``; the issue's
driver ``benchmarks/bench_calibration.py`` imports both functions.
"""

import os
import sys
import time

import numpy as np
from scipy.optimize import brentq, linear_sum_assignment
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import GridSearchCV

from sklearn_trellis import DPMixture, FastTIWD
from sklearn_trellis.datasets import make_ginkgo_jets, make_wishart_blocks
from sklearn_trellis.engines import ExactHierarchicalTrellis
from sklearn_trellis.models import GinkgoEnergy

GOAL = 0.15


def _row(model, parameter, method, true, selected, note=""):
    error = abs(selected - true) / true
    return dict(model=model, parameter=parameter, method=method, true=float(true),
                selected=float(selected), relative_error=float(error),
                within_goal=bool(error <= GOAL), note=note)


# -- recovery ---------------------------------------------------------------------------
def _ginkgo_rows(n_jets):
    rows = []
    for true in (1.5, 4.0):
        jets = make_ginkgo_jets(n_jets, lam=true, random_state=1).jets
        grid = np.round(true * np.arange(0.6, 1.45, 0.05), 4)

        def evidence(lam):
            total = 0.0
            for jet in jets:
                split, params, stats = GinkgoEnergy(lam=lam).fit(jet).kernel_inputs()
                total += ExactHierarchicalTrellis(split, params, stats).fit() \
                    .log_partition_function
            return total
        values = [evidence(lam) for lam in grid]
        rows.append(_row("TrellisHierarchical(energy=GinkgoEnergy())", "lam",
                         f"max summed exact evidence, {n_jets} jets", true,
                         grid[int(np.argmax(values))]))
    # the public likelihood on the same jets, for contrast
    jets = make_ginkgo_jets(n_jets, lam=1.5, random_state=1).jets
    grid = np.round(1.5 * np.arange(0.6, 1.45, 0.05), 4)
    values = []
    for lam in grid:
        total = 0.0
        for jet in jets:
            energy = GinkgoEnergy(lam=lam, likelihood="ginkgo").fit(jet)
            total += ExactHierarchicalTrellis(*energy.kernel_inputs()).fit() \
                .log_partition_function
        values.append(total)
    rows.append(_row("GinkgoEnergy(likelihood='ginkgo')", "lam",
                     "same, public likelihood (not a density of X)", 1.5,
                     grid[int(np.argmax(values))], note="biased: leaf masses censored, "
                     "no Jacobian"))
    return rows


def _fast_tiwd_rows(quick):
    n, dof = (80, 120) if quick else (200, 300)
    grid = [round(dof * f) for f in (0.6, 0.73, 0.87, 1.0, 1.13, 1.27, 1.5)]
    data = make_wishart_blocks(n_samples=n, dof=dof, random_state=0)
    search = GridSearchCV(FastTIWD(n_sweeps=30 if quick else 40, random_state=0),
                          {"dof": grid}, cv=5).fit(data.distances)
    return [_row("FastTIWD", "dof", f"GridSearchCV default scoring, n={n}", dof,
                 search.best_params_["dof"])]


def _crp(rng, n, alpha):
    labels, counts = np.zeros(n, dtype=int), [1]
    for i in range(1, n):
        p = np.append(counts, alpha) / (i + alpha)
        k = rng.choice(len(p), p=p)
        counts.append(1) if k == len(counts) else counts.__setitem__(k, counts[k] + 1)
        labels[i] = k
    return labels


def _ewens_mle(n, k):
    return brentq(lambda a: sum(a / (a + i) for i in range(n)) - k, 1e-6, 1e4) if k > 1 else 0.0


def crp_blobs(n, alpha, seed, spread=6.0):
    """Gaussian clusters (unit variance, means ``N(0, spread^2)``) on a CRP(alpha) partition."""
    rng = np.random.default_rng(seed)
    labels = _crp(rng, n, alpha)
    means = rng.normal(scale=spread, size=(labels.max() + 1, 2))
    order = rng.permutation(n)
    return (means[labels] + rng.normal(size=(n, 2)))[order], labels[order]


def _dp_rows(quick):
    rows = []
    n = 150
    grid = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    for alpha in (1.0, 4.0):
        X, labels = crp_blobs(n, alpha, seed=0)
        search = GridSearchCV(DPMixture(n_sweeps=40 if quick else 100, random_state=0),
                              {"alpha": grid}, cv=5).fit(X)
        oracle = np.array([_ewens_mle(n, _crp(np.random.default_rng(s), n, alpha).max() + 1)
                           for s in range(200)])
        inside = float(np.mean(np.abs(oracle - alpha) <= GOAL * alpha))
        note = (f"oracle (true partition known) is within 15% in {inside:.0%} of 200 CRP "
                f"draws at n={n}: K ~ alpha log n carries little information")
        rows.append(_row("DPMixture", "alpha", f"GridSearchCV default scoring, n={n}",
                         alpha, search.best_params_["alpha"], note))
        learned = DPMixture(n_sweeps=100 if quick else 300, alpha_prior=(1.0, 1.0),
                            random_state=0).fit(X)
        rows.append(_row("DPMixture", "alpha", "posterior mean, alpha_prior=(1, 1)", alpha,
                         float(learned.alphas_.mean()), note))
        rows.append(_row("(oracle)", "alpha", "Ewens MLE from the true partition", alpha,
                         _ewens_mle(n, labels.max() + 1), note))
    return rows


def recovery_rows(quick=False):
    """Rows ``{model, parameter, method, true, selected, relative_error, within_goal, note}``."""
    return (_ginkgo_rows(150 if quick else 600) + _fast_tiwd_rows(quick) + _dp_rows(quick))


# -- calibration ------------------------------------------------------------------------
def expected_calibration_error(probabilities, outcomes, n_bins=10):
    """ECE: bin-weighted mean of ``|mean outcome - mean probability|`` over 10 equal bins."""
    p = np.asarray(probabilities, dtype=float).ravel()
    y = np.asarray(outcomes, dtype=float).ravel()
    bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for b in range(n_bins):
        inside = bins == b
        if inside.any():
            total += inside.sum() * abs(y[inside].mean() - p[inside].mean())
    return total / p.size


def _pairwise_ece(together, labels):
    iu = np.triu_indices(len(labels), 1)
    same = labels[:, None] == labels[None, :]
    return expected_calibration_error(together[iu], same[iu])


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
    return expected_calibration_error(proba.max(axis=1), correct)


def calibration_rows(quick=False):
    """ECE of pairwise marginals and of ``predict_proba``: DPMixture and BayesianGaussianMixture."""
    rows = []
    for alpha, seed in ((1.0, 0), (4.0, 1)):
        X, labels = crp_blobs(200, alpha, seed=seed)
        fit, held = np.arange(150), np.arange(150, 200)
        dp = DPMixture(n_sweeps=100 if quick else 400, random_state=0).fit(X[fit])
        bgm = BayesianGaussianMixture(n_components=20, random_state=0, max_iter=500).fit(X[fit])
        r = bgm.predict_proba(X[fit])
        name = f"CRP(alpha={alpha}) blobs, n=150 (+50 held out)"
        rows.append(dict(data=name, quantity="pairwise marginals", estimator="DPMixture",
                         ece=_pairwise_ece(dp.pairwise_marginals_, labels[fit])))
        rows.append(dict(data=name, quantity="pairwise marginals",
                         estimator="BayesianGaussianMixture (sum_k r_ik r_jk)",
                         ece=_pairwise_ece(r @ r.T, labels[fit])))
        rows.append(dict(data=name, quantity="predict_proba (held out)", estimator="DPMixture",
                         ece=_proba_ece(dp.predict_proba(X[held])[:, :-1], dp.labels_,
                                        labels[fit], labels[held])))
        rows.append(dict(data=name, quantity="predict_proba (held out)",
                         estimator="BayesianGaussianMixture",
                         ece=_proba_ece(bgm.predict_proba(X[held]), bgm.predict(X[fit]),
                                        labels[fit], labels[held])))
    return rows


def main(argv):
    quick = "--quick" in argv
    start = time.perf_counter()
    print(f"load average at start: {os.getloadavg()}")
    print("\n== Recovery (goal: within 15% of the truth) ==")
    print(f"{'model':44s} {'par':6s} {'true':>6s} {'selected':>9s} {'rel.err':>8s} goal  method")
    for row in recovery_rows(quick):
        print(f"{row['model']:44s} {row['parameter']:6s} {row['true']:6.2f} "
              f"{row['selected']:9.3f} {row['relative_error']:8.2f} "
              f"{'yes' if row['within_goal'] else 'NO ':4s}  {row['method']}")
        if row["note"]:
            print(f"{'':44s}   note: {row['note']}")
    print("\n== Calibration: ECE, 10 bins ==")
    for row in calibration_rows(quick):
        print(f"{row['data']:44s} {row['quantity']:26s} {row['estimator']:44s} "
              f"{row['ece']:.3f}")
    print(f"\n{time.perf_counter() - start:.0f} s; load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main(sys.argv[1:])
