"""Rows of the calibration benchmark for ``TrellisHierarchical`` (issue 28).

``recovery_rows()``: data drawn from the exponential tree model (the
generative reading of Dasgupta's cost, :class:`ExponentialTreeEnergy`) at a
known ``beta``; the ``beta`` selected by ``GridSearchCV`` with default scoring
(held-out log predictive density) and by ``beta='auto'`` (empirical Bayes),
with their relative errors.

``calibration_rows()``: expected calibration error (10 bins) of
``predict_proba`` on held-out points (confidence: the largest probability;
correct: the predicted cluster's majority class in the training labels is the
truth), at the default settings and with ``energy='exponential_tree',
beta='auto'``, next to scikit-learn's ``BayesianGaussianMixture``, on planted
blobs, iris, wine and a 300 + 100 point digits subset (standardised).
``TrellisHierarchical``'s distribution is over trees and its flat clusters are
a cut of the MAP tree, so it has no flat pairwise marginals to calibrate.

Run: ``python benchmarks/_calibration_trees.py`` prints both tables.
"""

import os
import time

import numpy as np
from sklearn.datasets import load_digits, load_iris, load_wine, make_blobs
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.models import ExponentialTreeEnergy, sample_exponential_tree


def expected_calibration_error(confidence, correct, n_bins=10):
    """ECE: the bin-weighted mean of |mean confidence - accuracy| over equal-width bins."""
    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=float)
    bins = np.clip((confidence * n_bins).astype(int), 0, n_bins - 1)
    total = 0.0
    for b in range(n_bins):
        inside = bins == b
        if inside.any():
            total += inside.mean() * abs(confidence[inside].mean() - correct[inside].mean())
    return float(total)


def _model_distances(n_items, beta, seed):
    """Similarities drawn from the model, as distances ``-log s`` (``scale=1`` maps back).

    ``beta >= 10`` keeps every ``s < 1`` with probability ``1 - exp(-20)`` per pair.
    """
    s, _ = sample_exponential_tree(n_items, beta, random_state=seed)
    return -np.log(s + np.eye(n_items))


def recovery_rows(n_items=120, betas=(10.0, 40.0), seed=0):
    """GridSearchCV (default scoring) and beta='auto' against the true beta."""
    rows = []
    for beta in betas:
        d = _model_distances(n_items, beta, seed)
        estimator = TrellisHierarchical(metric="precomputed", linkage="average",
                                        energy=ExponentialTreeEnergy(scale=1.0))
        grid = [float(beta * f) for f in (0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0)]
        start = time.perf_counter()
        chosen = GridSearchCV(estimator, {"beta": grid}, cv=5).fit(d).best_params_["beta"]
        auto = estimator.set_params(beta="auto").fit(d).beta_
        rows.append({"model": "exponential tree (Dasgupta)", "parameter": "beta",
                     "n_items": n_items, "true": beta, "grid_search": chosen,
                     "rel_error_grid_search": abs(chosen - beta) / beta, "auto": auto,
                     "rel_error_auto": abs(auto - beta) / beta,
                     "seconds": time.perf_counter() - start})
    return rows


def _datasets():
    rng = np.random.default_rng(0)
    X, y = make_blobs(n_samples=300, centers=3, cluster_std=1.5, random_state=0)
    sets = {"planted blobs": (X, y)}
    for name, loader in (("iris", load_iris), ("wine", load_wine)):
        sets[name] = loader(return_X_y=True)
    X, y = load_digits(return_X_y=True)
    keep = rng.permutation(len(y))[:400]
    sets["digits 400"] = (X[keep], y[keep])
    return sets


def calibration_rows(seed=0):
    """ECE of held-out predict_proba: TrellisHierarchical defaults, auto, BGM."""
    rows = []
    for name, (X, y) in _datasets().items():
        X = StandardScaler().fit_transform(X)
        order = np.random.default_rng(seed).permutation(len(y))
        n_train = min(300, 2 * len(y) // 3)
        train, test = order[:n_train], order[n_train:]
        k = len(np.unique(y))
        candidates = {
            "TrellisHierarchical()": TrellisHierarchical(n_clusters=k),
            "TrellisHierarchical(exponential_tree, auto)": TrellisHierarchical(
                n_clusters=k, energy="exponential_tree", beta="auto"),
            "BayesianGaussianMixture": BayesianGaussianMixture(
                n_components=k, random_state=seed, max_iter=500),
        }
        for label, estimator in candidates.items():
            start = time.perf_counter()
            fitted = estimator.fit(X[train])
            train_labels = fitted.predict(X[train])
            proba = fitted.predict_proba(X[test])
            majority = np.array([np.bincount(y[train][train_labels == c]).argmax()
                                 if np.any(train_labels == c) else -1
                                 for c in range(proba.shape[1])])
            confidence = proba.max(axis=1)
            correct = majority[proba.argmax(axis=1)] == y[test]
            rows.append({"dataset": name, "estimator": label, "n_test": len(test),
                         "mean_confidence": float(confidence.mean()),
                         "accuracy": float(correct.mean()),
                         "ece_predict_proba": expected_calibration_error(confidence, correct),
                         "beta": getattr(fitted, "beta_", None),
                         "seconds": time.perf_counter() - start})
    return rows


def _print(rows):
    keys = list(rows[0])
    cells = [[f"{row[key]:.4g}" if isinstance(row[key], float) else str(row[key])
              for key in keys] for row in rows]
    widths = [max(len(key), *(len(line[i]) for line in cells)) for i, key in enumerate(keys)]
    print("  ".join(key.rjust(width) for key, width in zip(keys, widths)))
    for line in cells:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))


if __name__ == "__main__":
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("Recovery (data from the exponential tree model)")
    _print(recovery_rows())
    print()
    print("Calibration of predict_proba on held-out points")
    _print(calibration_rows())
