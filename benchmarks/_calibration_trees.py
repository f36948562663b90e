"""Rows of the calibration benchmark for ``TrellisHierarchical`` (issue 28).

Imported by ``bench_calibration.py`` (see its docstring for the row format);
``python benchmarks/_calibration_trees.py [--quick]`` prints the rows alone.

``recovery_rows(quick)``: data drawn from the exponential tree model (the
generative reading of Dasgupta's cost, :class:`ExponentialTreeEnergy`) at a
known ``beta``; the ``beta`` that ``GridSearchCV`` with default scoring
selects (``score``: the held-out log predictive density under the tree
posterior) and the one ``beta='auto'`` learns (empirical Bayes).

``calibration_rows(quick)``: expected calibration error (10 bins) of
``predict_proba`` on held-out points; confidence is the largest probability.

- Planted: ``N + 1`` items drawn from the exponential tree model, the fit on
  ``N``, the last one held out. ``predict_proba`` of
  ``energy='exponential_tree'`` is the probability that cluster ``k`` plus
  the new item is a node, given that it joins one of the clusters: it is
  correct when that event holds in the true tree, and the draws in which the
  held-out item joins none of the fitted clusters are left out (the
  probability is conditional on that event). At the true ``beta`` and with
  ``beta='auto'``.
- Real data (standardised blobs, iris, wine, a 300 + 100 point digits
  subset): correct when the predicted cluster's majority class among the
  training points is the item's class; ``TrellisHierarchical()`` (Dasgupta,
  the default: the new item placed in the MAP tree), the same fit with the
  new item's cluster summed over the tree posterior (``P(C_k + x is a
  node)``, :func:`new_item_evidence`, normalised over the clusters: what
  ``energy='exponential_tree'`` reports), ``energy='exponential_tree',
  beta='auto'``, the one-line labelled choice (``beta`` selected by
  ``GridSearchCV(TrellisHierarchical(), {"beta": LABELLED_BETA_GRID},
  scoring=pairwise_log_loss_scorer)`` on the labelled training points alone,
  5 folds; the held-out points are never seen) and scikit-learn's
  ``BayesianGaussianMixture`` on the same split.

``exp_tree`` in the rows is ``energy='exponential_tree'``.
"""

import argparse
import os
import time

import numpy as np
from sklearn.datasets import (load_breast_cancer, load_digits, load_iris, load_wine,
                              make_blobs)
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.engines.attachment import new_item_evidence
from sklearn_trellis.metrics import pairwise_log_loss_scorer
from sklearn_trellis.models import ExponentialTreeEnergy, sample_exponential_tree

MODEL = "TrellisHierarchical"

#: The grid of the labelled one-line choice (the choosing guide's): 0.25 decades apart.
LABELLED_BETA_GRID = np.logspace(-4, 1, 21)


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


def model_distances(n_items, beta, seed):
    """Similarities and tree drawn from the model; the similarities as distances ``-log s``.

    ``scale=1`` maps the distances back to ``s``; ``beta >= 10 N`` keeps every
    ``s < 1`` with probability ``1 - exp(-20)`` per pair (the smallest rate,
    ``beta |S| / N`` at a pair of leaves, is ``2 beta / N``).
    """
    s, tree = sample_exponential_tree(n_items, beta, random_state=seed)
    return -np.log(s + np.eye(n_items)), tree


def exponential_tree_estimator(**params):
    return TrellisHierarchical(metric="precomputed", linkage="average",
                               energy=ExponentialTreeEnergy(scale=1.0), **params)


def recovery_rows(quick=False):
    """GridSearchCV (default scoring) and beta='auto' against the true beta."""
    # beta = 10 N and 40 N: rates 10 |S| and 40 |S| on the whole set
    n_items, betas, factors = ((40, (400.0,), (0.5, 0.8, 1.0, 1.25, 2.0)) if quick else
                               (120, (1200.0, 4800.0), (0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0)))
    rows = []
    for beta in betas:
        d, _ = model_distances(n_items, beta, 0)
        grid = [float(beta * f) for f in factors]
        start = time.perf_counter()
        chosen = GridSearchCV(exponential_tree_estimator(), {"beta": grid},
                              cv=5).fit(d).best_params_["beta"]
        auto = exponential_tree_estimator(beta="auto").fit(d).beta_
        seconds = time.perf_counter() - start
        print(f"  exponential tree recovery beta={beta}: grid {chosen:.3g}, auto {auto:.3g} "
              f"({seconds:.0f} s)", flush=True)
        rows.append(dict(model=MODEL, parameter="beta",
                         data=f"exponential tree model, N={n_items}", true=beta,
                         grid=chosen, auto=auto,
                         note=f"energy='exponential_tree'; grid beta x {factors}, 5-fold; "
                              f"{seconds:.0f} s"))
    return rows


def planted_rows(quick=False):
    """ECE of predict_proba on one held-out item per draw from the model (exact trellis)."""
    n_items, beta, n_clusters = 10, 110.0, 2     # beta = 10 (N + 1)
    n_draws = 300 if quick else 2000
    rows = []
    for setting, fitted_beta in (("true beta", beta), ("beta='auto'", "auto")):
        confidence, correct = [], []
        start = time.perf_counter()
        for draw in range(n_draws):
            d, tree = model_distances(n_items + 1, beta, 10_000 + draw)
            est = exponential_tree_estimator(beta=fitted_beta, n_clusters=n_clusters)
            est.fit(d[:n_items, :n_items])
            proba = est.predict_proba(d[n_items:, :n_items])[0]
            truth = _joined_cluster(tree, est.labels_, n_items)
            if truth < 0:
                continue
            confidence.append(proba.max())
            correct.append(proba.argmax() == truth)
        seconds = time.perf_counter() - start
        ece = expected_calibration_error(confidence, correct)
        print(f"  planted exponential tree, {setting}: ECE {ece:.3f}", flush=True)
        rows.append(dict(model=MODEL, quantity="predict_proba",
                         data=f"exp. tree N={n_items}+1 (planted)",
                         setting=f"exp_tree, {setting}", engine="exact", ece=ece,
                         note=f"predict_proba; {len(correct)} of {n_draws} draws (item joins "
                              f"a cluster); confidence {np.mean(confidence):.2f}, accuracy "
                              f"{np.mean(correct):.2f}; {seconds:.0f} s"))
    return rows


def _joined_cluster(tree, labels, new_item):
    """The fitted cluster ``k`` such that ``cluster k + new_item`` is a node of ``tree``, or -1."""
    clusters = {tuple(np.flatnonzero(labels == k).tolist()) + (new_item,): k
                for k in range(labels.max() + 1)}
    found = -1

    def walk(node):
        nonlocal found
        if not isinstance(node, tuple):
            return [node]
        leaves = sorted(walk(node[0]) + walk(node[1]))
        found = clusters.get(tuple(leaves), found)
        return leaves

    walk(tree)
    return found


def _datasets(quick):
    rng = np.random.default_rng(0)
    X, y = make_blobs(n_samples=300, centers=3, cluster_std=1.5, random_state=0)
    yield "planted blobs", X, y
    yield "iris", *load_iris(return_X_y=True)
    if quick:
        return
    yield "wine", *load_wine(return_X_y=True)
    yield "breast cancer", *load_breast_cancer(return_X_y=True)
    X, y = load_digits(return_X_y=True)
    keep = rng.permutation(len(y))[:400]
    yield "digits 400", X[keep], y[keep]


def real_rows(quick=False, seed=0):
    """ECE of held-out predict_proba: TrellisHierarchical defaults, exponential tree,
    beta selected on labels, BGM."""
    rows = []
    for name, X, y in _datasets(quick):
        X = StandardScaler().fit_transform(X)
        order = np.random.default_rng(seed).permutation(len(y))
        n_train = min(300, 2 * len(y) // 3)
        train, test = order[:n_train], order[n_train:]
        k = len(np.unique(y))
        labelled_search = GridSearchCV(
            TrellisHierarchical(n_clusters=k), {"beta": LABELLED_BETA_GRID},
            scoring=pairwise_log_loss_scorer, cv=KFold(5, shuffle=True, random_state=seed))
        candidates = {   # each: fit on the training points -> a fitted clustering
            "TrellisHierarchical()": lambda: TrellisHierarchical(n_clusters=k).fit(X[train]),
            "exp_tree, beta='auto'": lambda: TrellisHierarchical(
                n_clusters=k, energy="exponential_tree", beta="auto").fit(X[train]),
            "labelled GridSearchCV beta": lambda: labelled_search.fit(
                X[train], y[train]).best_estimator_,
            "BayesianGaussianMixture": lambda: BayesianGaussianMixture(
                n_components=k, random_state=seed, max_iter=500).fit(X[train]),
        }
        for label, fit in candidates.items():
            start = time.perf_counter()
            fitted = fit()
            train_labels = fitted.predict(X[train])
            proba = fitted.predict_proba(X[test])
            if label == "TrellisHierarchical()":
                rows.append(_tree_posterior_row(name, fitted, X[test], y[train], y[test]))
            majority = np.array([np.bincount(y[train][train_labels == c]).argmax()
                                 if np.any(train_labels == c) else -1
                                 for c in range(proba.shape[1])])
            confidence = proba.max(axis=1)
            correct = majority[proba.argmax(axis=1)] == y[test]
            seconds = time.perf_counter() - start
            ece = expected_calibration_error(confidence, correct)
            beta = getattr(fitted, "beta_", None)
            engine = ("variational" if beta is None else
                      "exact" if fitted.approximation_ is None else "sparse")
            print(f"  {name}, {label}: ECE {ece:.3f}", flush=True)
            rows.append(dict(
                model="BayesianGaussianMixture" if beta is None else MODEL,
                quantity="predict_proba",
                data=f"{name} ({len(train)} + {len(test)})", setting=label, engine=engine,
                ece=ece,
                note=f"predict_proba held out; confidence {confidence.mean():.2f}, accuracy "
                     f"{correct.mean():.2f}" + ("" if beta is None else f", beta_={beta:.3g}")
                     + f"; {seconds:.0f} s"))
    return rows


def _tree_posterior_row(name, fitted, X_test, y_train, y_test):
    """The Dasgupta fit's held-out cluster summed over the tree posterior, not the MAP tree."""
    start = time.perf_counter()
    labels = fitted.labels_
    clusters = [np.flatnonzero(labels == k) for k in range(fitted.n_clusters_)]
    data = fitted._new_item_data(X_test)      # distances to the fitted samples
    _, log_inside = new_item_evidence(fitted._trellis, fitted.model_, data, fitted.beta_,
                                      clusters)
    proba = np.exp(log_inside - log_inside.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    majority = np.array([np.bincount(y_train[labels == k]).argmax() for k in range(len(clusters))])
    confidence = proba.max(axis=1)
    correct = majority[proba.argmax(axis=1)] == y_test
    ece = expected_calibration_error(confidence, correct)
    print(f"  {name}, TrellisHierarchical(), tree posterior: ECE {ece:.3f}", flush=True)
    return dict(model=MODEL, quantity="predict_proba",
                data=f"{name} ({len(y_train)} + {len(y_test)})",
                setting="TrellisHierarchical(), tree post.",
                engine="exact" if fitted.approximation_ is None else "sparse", ece=ece,
                note=f"P(C_k + x node) over the tree posterior; confidence "
                     f"{confidence.mean():.2f}, accuracy {correct.mean():.2f}; "
                     f"{time.perf_counter() - start:.0f} s")


def calibration_rows(quick=False):
    return planted_rows(quick) + real_rows(quick)


def _print(rows):
    keys = list(rows[0])
    cells = [[f"{row[key]:.4g}" if isinstance(row[key], float) else str(row[key])
              for key in keys] for row in rows]
    widths = [max(len(key), *(len(line[i]) for line in cells)) for i, key in enumerate(keys)]
    print("  ".join(key.ljust(width) for key, width in zip(keys, widths)))
    for line in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast version")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    _print(recovery_rows(args.quick))
    _print(calibration_rows(args.quick))
