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
  150,000, and the ``n`` at which it would be 90 % of the time;
- InfiniteBiclustering's cell prior strength on a binary matrix drawn from its
  own model (:func:`crp_bicluster_bernoulli`): ``GridSearchCV`` with default
  scoring (held-out rows), the posterior mean on the cells' strength grid, and
  the maximum-likelihood strength given the true partitions.

``calibration_rows()``: expected calibration error (10 equal-width bins), at
the estimators' defaults on data drawn from their own models, of

- DPMixture's pairwise marginals against the true co-membership, and of its
  ``predict_proba`` on held-out points, next to scikit-learn's
  ``BayesianGaussianMixture`` on the same data;
- BayesianHierarchicalClustering's held-out ``predict_proba`` and its nodes'
  merge probabilities ``r_k``, on separated blobs and on overlapping binary
  data drawn from its own model (:func:`crp_bernoulli`), next to DPMixture's
  sampled posterior of the same model;
- FastTIWD's pairwise marginals and held-out ``predict_proba`` on the
  generator's feature rows (exactly its model) and on its distances (the
  translation lost), at the defaults and at the true hyperparameters;
- FastTIWD where the distances hardly inform the blocks (``WEAK_SIGNAL``):
  five Dirichlet blocks (not the default prior) and CRP(1) blocks (the
  default's), with the held-out ``P(x ~ j)`` of :func:`heldout_comembership`;
- CrossCat's ``row_similarity`` in each planted view.

A held-out ``predict_proba`` is scored label-free (:func:`heldout_pairwise_ece`):
each held-out point and fitted item give the probability that the point joins
the item's cluster, against whether they share a true cluster. Matching
fitted clusters to true ones (Hungarian) is not used: it calls a point wrong
when its true cluster has no partner in a one-to-one matching, which is
common with tiny or merged clusters, and made calibrated probabilities look
overconfident (DPMixture on CRP(4) data: 0.159 by matching; the printed note
gives both).

Run through the issue's driver:
``python benchmarks/bench_calibration.py --only _calibration_models [--quick]
[--part NAME ...]`` (parts: the keys of ``RECOVERY_PARTS`` and ``CALIBRATION_PARTS``;
a name in both, e.g. ``dp``, runs both).
"""

import sys
import time

import numpy as np
from scipy.optimize import brentq, linear_sum_assignment, minimize_scalar
from scipy.special import betaln, logsumexp
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import GridSearchCV

from sklearn_trellis import (BayesianHierarchicalClustering, CrossCat, DPMixture, FastTIWD,
                             InfiniteBiclustering,
                             TrellisHierarchical)
from sklearn_trellis.datasets import make_gaussian_pairs, make_ginkgo_jets, make_wishart_blocks
from sklearn_trellis.metrics import expected_calibration_error, pairwise_from_proba
from sklearn_trellis.models import BetaBernoulli, GinkgoEnergy
from sklearn_trellis.models.cells import BernoulliCells
from sklearn_trellis.models.wishart import estimate_dof, estimate_dof_from_distances
from sklearn_trellis.preprocessing.distance_normalization import normalized_inner_products

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


def crp_bicluster_bernoulli(n_rows, n_columns, alpha, strength, seed):
    """A binary matrix from the infinite biclustering model: CRP(alpha) partitions of the
    rows and of the columns, each block's probability from Beta(s / 2, s / 2) (mean 0.5,
    strength ``s``), its cells Bernoulli. Returns ``(X, row labels, column labels)``."""
    rng = np.random.default_rng(seed)
    rows = make_gaussian_pairs(n_rows, alpha=alpha, random_state=seed).target
    columns = make_gaussian_pairs(n_columns, alpha=alpha, random_state=seed + 1000).target
    p = rng.beta(strength / 2, strength / 2, size=(rows.max() + 1, columns.max() + 1))
    X = (rng.random((n_rows, n_columns)) < p[rows][:, columns]).astype(float)
    return X, rows, columns


def known_partitions_strength(X, rows, columns):
    """The maximum-likelihood strength given the *true* partitions (the block probabilities
    integrated out): the best any estimate can do from this matrix."""
    ones = np.zeros((rows.max() + 1, columns.max() + 1))
    cells = np.zeros_like(ones)
    np.add.at(ones, (rows[:, None], columns[None, :]), X)
    np.add.at(cells, (rows[:, None], columns[None, :]), 1.0)

    def minus_log_lik(log_s):
        half = np.exp(log_s) / 2
        return -np.sum(betaln(half + ones, half + cells - ones) - betaln(half, half))

    return float(np.exp(minimize_scalar(minus_log_lik, bounds=(np.log(1e-2), np.log(1e4)),
                                        method="bounded").x))


def _ib_rows(quick):
    """InfiniteBiclustering: the Beta strength of the block probabilities (the cell prior)."""
    rows = []
    n_rows, n_columns, alpha = (40, 30, 2.0) if quick else (60, 40, 3.0)
    sweeps = 20 if quick else 60
    for true in (2.0, 8.0):
        X, row_labels, column_labels = crp_bicluster_bernoulli(n_rows, n_columns, alpha, true,
                                                               seed=0)
        grid = np.round(true * 2.0 ** (np.arange(-6, 7) / 4), 3)     # steps of 19 %
        search = GridSearchCV(
            InfiniteBiclustering(BernoulliCells(mean=0.5, hyperprior="fixed"),
                                 alpha_rows=alpha, alpha_columns=alpha, n_sweeps=sweeps,
                                 random_state=0),
            {"likelihood__strength": grid}, cv=3 if quick else 5).fit(X)
        learned = InfiniteBiclustering(BernoulliCells(mean=0.5), alpha_rows=alpha,
                                       alpha_columns=alpha, n_sweeps=2 * sweeps,
                                       random_state=0).fit(X)
        strength = learned.hyperparameters_["a"] + learned.hyperparameters_["b"]
        n_blocks = (row_labels.max() + 1) * (column_labels.max() + 1)
        rows.append(_row("InfiniteBiclustering", "cell strength",
                         f"CRP({alpha:g}) x CRP({alpha:g}) Beta-Bernoulli blocks, "
                         f"{n_rows} x {n_columns}", true,
                         grid=search.best_params_["likelihood__strength"],
                         auto=float(strength.mean()),
                         note=f"GridSearchCV default scoring (held-out rows), cv="
                              f"{3 if quick else 5}; auto = posterior mean on the 1..100 "
                              f"grid; MLE from the true partitions ({n_blocks} blocks): "
                              f"{known_partitions_strength(X, row_labels, column_labels):.3g}; "
                              f"clusters {learned.n_row_clusters_} x "
                              f"{learned.n_column_clusters_} (true {row_labels.max() + 1} x "
                              f"{column_labels.max() + 1})"))
    return rows


#: The parts of ``recovery_rows`` (``bench_calibration.py --part NAME`` runs some only).
RECOVERY_PARTS = {
    "ginkgo": lambda quick: _ginkgo_rows(20 if quick else 200),
    "fast_tiwd": _fast_tiwd_rows,
    "dp": _dp_rows,
    "infinite_biclustering": _ib_rows,
}


def recovery_rows(quick=False, parts=None):
    """Rows ``{model, parameter, data, true, grid, auto, note}`` (see bench_calibration.py);
    ``parts`` (names of ``RECOVERY_PARTS`` or ``CALIBRATION_PARTS``) keeps some only."""
    _check_parts(parts)
    return [row for name, part in RECOVERY_PARTS.items() if not parts or name in parts
            for row in part(quick)]


# -- calibration ------------------------------------------------------------------------
def _binary_ece(probabilities, outcomes):
    """ECE (10 bins) of probabilities of binary outcomes, through the library's pairwise
    ECE: one reference item labelled 0 and one item per outcome, labelled 0 when it
    happened."""
    return expected_calibration_error([0], np.ravel(np.asarray(probabilities, dtype=float))[None, :],
                                      y_reference=1 - np.ravel(np.asarray(outcomes, dtype=int)))


def _pairwise_ece(together, labels):
    return expected_calibration_error(labels, together)


def heldout_pairwise_ece(proba, fitted_labels, fitted_truth, truth):
    """ECE of ``predict_proba`` on held-out points, label-free.

    Each held-out point ``x`` and fitted item ``j`` give one probability,
    ``proba[x, fitted_labels[j]]`` (:func:`~sklearn_trellis.metrics.pairwise_from_proba`
    with the fitted labels as references: the probability that ``x`` joins
    ``j``'s cluster; a "new cluster" column joins no fitted item), and one
    outcome, whether ``x`` and ``j`` share a true cluster. This is what a
    cluster-assignment probability claims, and it needs no matching of fitted
    clusters to true ones.

    The earlier measure (the largest probability of each point against
    "correct", clusters matched one-to-one to classes by the Hungarian method,
    :func:`hungarian_max_proba_ece`) counts a point as wrong whenever its
    true cluster has no partner in the matching: a true cluster with no or
    one training point, two small true clusters that the model (rightly, at
    that spread) holds as one, or a fitted cluster split in two. On CRP(4)
    data, with many clusters of one to three points, these cases dominate
    and the measure reports overconfidence that is not there.
    """
    together = pairwise_from_proba(proba, reference_labels=np.asarray(fitted_labels))
    return _binary_ece(together, np.asarray(truth)[:, None] == np.asarray(fitted_truth)[None, :])


def hungarian_max_proba_ece(proba, fitted_labels, fitted_truth, truth):
    """Max-probability confidence against correctness, clusters matched one-to-one to classes
    (kept to show why it misleads: see :func:`heldout_pairwise_ece`)."""
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


def _dp_calibration_rows(quick):
    rows = []
    for alpha, seed in ((1.0, 0), (4.0, 1)):
        X, labels = crp_blobs(200, alpha, seed=seed)
        fit, held = np.arange(150), np.arange(150, 200)
        dp = DPMixture(n_sweeps=50 if quick else 400, random_state=0).fit(X[fit])
        bgm = BayesianGaussianMixture(n_components=20, random_state=0, max_iter=500).fit(X[fit])
        r = bgm.predict_proba(X[fit])
        name = f"CRP({alpha:g}) blobs n=150 (+50)"
        dp_proba, bgm_proba = dp.predict_proba(X[held]), bgm.predict_proba(X[held])
        bgm_labels = bgm.predict(X[fit])
        note = "x vs fitted items: proba[x, labels_[j]]; Hungarian max-proba measure: {:.3f}"
        rows += [
            dict(model="DPMixture", data=name, setting="pairwise marginals",
                 engine=dp.method_, ece=_pairwise_ece(dp.pairwise_marginals_, labels[fit])),
            dict(model="BayesianGaussianMixture", data=name, setting="pairwise marginals",
                 engine="variational", ece=_pairwise_ece(r @ r.T, labels[fit]),
                 note="sum_k r_ik r_jk"),
            dict(model="DPMixture", data=name, setting="predict_proba (held out)",
                 engine=dp.method_,
                 ece=heldout_pairwise_ece(dp_proba, dp.labels_, labels[fit], labels[held]),
                 note=note.format(hungarian_max_proba_ece(dp_proba[:, :-1], dp.labels_,
                                                          labels[fit], labels[held]))),
            dict(model="BayesianGaussianMixture", data=name, setting="predict_proba (held out)",
                 engine="variational",
                 ece=heldout_pairwise_ece(bgm_proba, bgm_labels, labels[fit], labels[held]),
                 note=note.format(hungarian_max_proba_ece(bgm_proba, bgm_labels, labels[fit],
                                                          labels[held]))),
        ]
    return rows


def _bhc_calibration_rows(quick):
    """BHC at its defaults on CRP(1.5) blobs: held-out ``predict_proba`` (label-free, as
    DPMixture's) and the merge probabilities ``r_k`` of the tree's nodes against the event
    they claim (all the node's leaves share one true cluster)."""
    n_fit = 40 if quick else 80
    X, labels = crp_blobs(n_fit + 20, 1.5, seed=2)
    fit, held = np.arange(n_fit), np.arange(n_fit, n_fit + 20)
    bhc = BayesianHierarchicalClustering().fit(X[fit])
    name = f"CRP(1.5) blobs n={n_fit} (+20)"
    members = [[i] for i in range(n_fit)]
    pure = []
    for a, b in bhc.children_:
        members.append(members[a] + members[b])
        pure.append(np.unique(labels[fit][members[-1]]).size == 1)
    r = np.exp(bhc.merge_log_probabilities_)
    return [
        dict(model="BayesianHierarchicalClustering", data=name, setting="predict_proba (held out)",
             engine="greedy tree",
             ece=heldout_pairwise_ece(bhc.predict_proba(X[held]), bhc.labels_, labels[fit],
                                      labels[held]),
             note="x vs fitted items: proba[x, labels_[j]]"),
        dict(model="BayesianHierarchicalClustering", data=name, setting="node merge prob. r_k",
             engine="greedy tree", ece=_binary_ece(r, pure),
             note=f"r_k vs 'the node's leaves share one true cluster' ({len(r)} nodes)"),
    ]


def _bootstrap_ece(per_draw, n_boot=200, seed=0):
    """Pooled ECE of ``(probabilities, outcomes)`` pairs from several planted draws, and its
    Monte Carlo standard error (the spread when the draws are resampled with replacement)."""
    def pooled(pick):
        return _binary_ece(np.concatenate([per_draw[i][0] for i in pick]),
                           np.concatenate([per_draw[i][1] for i in pick]))
    rng = np.random.default_rng(seed)
    spread = [pooled(rng.integers(0, len(per_draw), len(per_draw))) for _ in range(n_boot)]
    return pooled(range(len(per_draw))), float(np.std(spread))


#: The generator's own hyperparameters written as FastTIWD's: d = 300 (the default of
#: make_wishart_blocks), Dirichlet(1, 1, 1) block weights = n_blocks=3 with alpha = 3
#: (alpha / k = 1), theta = 0.05.
FAST_TIWD_ORACLE = dict(dof=300, n_blocks=3, alpha=3.0, theta=0.05)


def crp_bernoulli(n, alpha, n_features, seed):
    """Binary rows from BHC's own model with ``likelihood=BetaBernoulli(a=1, b=1)``: a
    CRP(alpha) partition, each cluster's feature probabilities drawn from Beta(1, 1), each
    cell Bernoulli. With a dozen features clusters overlap: some rows are ambiguous."""
    rng = np.random.default_rng(seed)
    labels = make_gaussian_pairs(n, alpha=alpha, random_state=seed).target   # CRP(alpha)
    probabilities = rng.random((labels.max() + 1, n_features))
    X = (rng.random((n, n_features)) < probabilities[labels]).astype(float)
    order = rng.permutation(n)
    return X[order], labels[order]


def _bhc_own_model_rows(quick):
    """BHC on data from its own model (:func:`crp_bernoulli`, alpha = 1, 12 features),
    pooled over planted draws with bootstrap errors: held-out ``predict_proba`` (label-free)
    and the nodes' ``r_k``, at the true prior (``hyperparameters='fixed'``) and at the
    default ``likelihood='bernoulli'`` (prior centred on the feature frequencies)."""
    n_fit, n_draws = 40, (8 if quick else 30)
    cases = (("true prior", dict(likelihood=BetaBernoulli(a=1.0, b=1.0),
                                 hyperparameters="fixed")),
             ("default", dict(likelihood="bernoulli")))
    rows = []
    held_out, pairs = [], []
    upper = np.triu_indices(n_fit, 1)
    for seed in range(n_draws):   # the same draws under the DP mixture's sampled posterior
        X, labels = crp_bernoulli(n_fit + 20, 1.0, 12, seed)
        dp = DPMixture(likelihood=BetaBernoulli(a=1.0, b=1.0), alpha=1.0,
                       n_sweeps=100 if quick else 300, random_state=0).fit(X[:n_fit])
        proba = dp.predict_proba(X[n_fit:])
        held_out.append((pairwise_from_proba(proba, reference_labels=dp.labels_).ravel(),
                         (labels[n_fit:, None] == labels[None, :n_fit]).ravel()))
        pairs.append((dp.pairwise_marginals_[upper],
                      (labels[:n_fit, None] == labels[None, :n_fit])[upper]))
    for quantity, per_draw in (("pairwise marginals", pairs),
                               ("predict_proba (held out)", held_out)):
        ece, error = _bootstrap_ece(per_draw)
        rows.append(dict(model="DPMixture (same model)",
                         data=f"CRP(1) Beta-Bernoulli n={n_fit}+20",
                         setting=f"{quantity}, true prior", engine=dp.method_, ece=ece,
                         note=f"+- {error:.3f} ({n_draws} draws): the anchor"))
    for setting, params in cases:
        held_out, nodes = [], []
        for seed in range(n_draws):
            X, labels = crp_bernoulli(n_fit + 20, 1.0, 12, seed)
            fit = np.arange(n_fit)
            bhc = BayesianHierarchicalClustering(alpha=1.0, **params).fit(X[fit])
            proba = bhc.predict_proba(X[n_fit:])
            held_out.append((pairwise_from_proba(proba, reference_labels=bhc.labels_).ravel(),
                             (labels[n_fit:, None] == labels[None, :n_fit]).ravel()))
            members = [[i] for i in range(n_fit)]
            pure = []
            for a, b in bhc.children_:
                members.append(members[a] + members[b])
                pure.append(np.unique(labels[fit][members[-1]]).size == 1)
            nodes.append((np.exp(bhc.merge_log_probabilities_), np.array(pure)))
        name = f"CRP(1) Beta-Bernoulli n={n_fit}+20"
        for quantity, per_draw in (("predict_proba (held out)", held_out),
                                   ("node merge prob. r_k", nodes)):
            ece, error = _bootstrap_ece(per_draw)
            rows.append(dict(model="BayesianHierarchicalClustering", data=name,
                             setting=f"{quantity}, {setting}", engine="greedy tree", ece=ece,
                             note=f"+- {error:.3f} ({n_draws} draws)"
                                  + (", likelihood='bernoulli'" if setting == "default" else "")))
    return rows


def _fast_tiwd_draws(n, n_draws, features, **params):
    """Pairwise marginals and held-out ``predict_proba`` (20 points) of FastTIWD on
    ``n_draws`` planted data sets of make_wishart_blocks: ``features`` fits the
    generator's zero-mean rows (``S = X X^T`` is exactly the Wishart block model,
    ``normalization='none'``), otherwise its squared distances (the exact
    translation-invariant likelihood of the distances, the marginal of that model)."""
    pairs, held_out, dofs = [], [], []
    upper = np.triu_indices(n, 1)
    for seed in range(n_draws):
        data = make_wishart_blocks(n_samples=n + 20, random_state=seed, return_features=True)
        truth = data.target
        if features:
            est = FastTIWD(metric="sqeuclidean", normalization="none", random_state=0,
                           **params).fit(data.features[:n])
            proba = est.predict_proba(data.features[n:])
        else:
            est = FastTIWD(random_state=0, **params).fit(data.distances[:n, :n])
            proba = est.predict_proba(data.distances[n:, :n])
        same = truth[:, None] == truth[None, :]
        pairs.append((est.pairwise_marginals_[upper], same[:n, :n][upper]))
        held_out.append((pairwise_from_proba(proba, reference_labels=est.labels_).ravel(),
                         same[n:, :n].ravel()))
        dofs.append(est.dof_)
    return pairs, held_out, float(np.mean(dofs)), est.method_


def _fast_tiwd_calibration_rows(quick):
    """FastTIWD on its own model's data (make_wishart_blocks, pooled over planted draws,
    +- the bootstrap standard error over draws): the zero-mean feature rows, whose inner
    products are exactly the Wishart block model, and the squared distances, where the
    translation is lost and the translation-invariant likelihood integrates it out; each
    at the defaults and at the generator's own hyperparameters (oracle)."""
    n, n_draws = 60, (8 if quick else 30)
    rows = []
    cases = (("rows", True, {}, "defaults"),
             ("rows", True, FAST_TIWD_ORACLE, "oracle"),
             ("distances", False, {}, "defaults"),
             ("distances", False, FAST_TIWD_ORACLE, "oracle"))
    for what, features, params, setting in cases:
        pairs, held_out, dof, engine = _fast_tiwd_draws(n, n_draws, features, **params)
        name = f"wishart {what} n={n}+20"
        how = "S = XX^T, normalization='none'; " if features else ""
        for quantity, per_draw in (("pairwise marginals", pairs),
                                   ("predict_proba (held out)", held_out)):
            ece, error = _bootstrap_ece(per_draw)
            rows.append(dict(model="FastTIWD", data=name, setting=f"{quantity}, {setting}",
                             engine=engine, ece=ece,
                             note=f"+- {error:.3f} ({n_draws} draws); {how}mean dof_ {dof:.0f}"
                                  + (" (true 300)" if dof != 300 else "")))
    return rows


#: The weak-signal draws of FastTIWD: few dimensions (``d`` just above the rank 59 of 60
#: fitted objects' distances, and twice that) and ``theta = 0.05``, 5 blocks. Each distance
#: then says little about the blocks and the posterior is close to the partition prior.
WEAK_SIGNAL_DOFS = (62, 120)
WEAK_SIGNAL = dict(n_blocks=5, theta=0.05)


def heldout_comembership(est, X_new):
    """``P(x ~ j | data)`` of each held-out item ``x`` and fitted item ``j``: each kept
    sample's exact conditional of ``x`` (the per-sample weights ``predict_proba``
    averages), read at the cluster that holds ``j`` in that sample, averaged over the
    samples. Unlike ``predict_proba[x, labels_[j]]`` it does not go through the point
    estimate ``labels_``, which a diffuse posterior makes a poor stand-in for ``j``'s
    cluster."""
    together, n_samples = 0.0, 0
    for sample_labels, log_weights in est._predictive(X_new):
        weights = np.exp(log_weights - logsumexp(log_weights, axis=1, keepdims=True))
        together = together + weights[:, sample_labels]
        n_samples += 1
    return together / n_samples


def moment_dof(distances):
    """The moment estimate of ``dof`` that FastTIWD held fixed before it learned ``dof``
    (the larger of the ``S*`` and log-distance estimates; its chain still starts there)."""
    S, _ = normalized_inner_products(distances, "single")
    return max(estimate_dof(S), estimate_dof_from_distances(distances))


def _weak_signal_draws(dof, crp, n, n_draws, params):
    """Pairwise marginals, held-out ``P(x ~ j)`` and held-out ``predict_proba`` read through
    ``labels_`` of FastTIWD on weak-signal distances (``WEAK_SIGNAL``), and the mean learned
    ``dof_``. ``crp``: the blocks are a CRP(1) partition (the default prior's), else five
    Dirichlet(1) blocks. ``params`` may say ``dof='true'`` or ``dof='moment'``. Also the
    fits' mean CPU seconds (``time.process_time``, the fit alone)."""
    pairs, comembership, readout, dofs, seconds = [], [], [], [], []
    upper = np.triu_indices(n, 1)
    for seed in range(n_draws):
        labels = make_gaussian_pairs(n + 20, alpha=1.0, random_state=seed).target if crp else None
        data = make_wishart_blocks(n_samples=n + 20, dof=dof, labels=labels, random_state=seed,
                                   **WEAK_SIGNAL)
        fitted, new = data.distances[:n, :n], data.distances[n:, :n]
        chosen = dict(params)
        if chosen.get("dof") == "true":
            chosen["dof"] = float(dof)
        elif chosen.get("dof") == "moment":
            chosen["dof"] = moment_dof(fitted)
        start = time.process_time()
        est = FastTIWD(random_state=0, **chosen).fit(fitted)
        seconds.append(time.process_time() - start)
        same = data.target[:, None] == data.target[None, :]
        pairs.append((est.pairwise_marginals_[upper], same[:n, :n][upper]))
        comembership.append((heldout_comembership(est, new).ravel(), same[n:, :n].ravel()))
        readout.append((pairwise_from_proba(est.predict_proba(new),
                                            reference_labels=est.labels_).ravel(),
                        same[n:, :n].ravel()))
        dofs.append(est.dof_)
    return pairs, comembership, readout, float(np.mean(dofs)), float(np.mean(seconds[1:]))


def _fast_tiwd_weak_signal_rows(quick):
    """FastTIWD where the data hardly inform the partition (``WEAK_SIGNAL``, on distances,
    pooled over planted draws, +- the bootstrap error): the posterior is then close to the
    prior, so it is calibrated only when the prior is the generator's. Five Dirichlet(1)
    blocks are ``n_blocks=5, alpha=5``, not the default CRP(1) prior; CRP(1) blocks are
    the default's own model. Settings: the defaults (``dof`` learned), ``dof`` held at
    its moment estimate (the previous default), the generator's partition prior, and the
    generator's every hyperparameter (oracle); on CRP(1) blocks also 4 chains of 800
    sweeps (one chain of 200 does not reach the posterior there)."""
    n, n_draws = 60, (8 if quick else 30)
    prior = dict(n_blocks=5, alpha=5.0)
    cases = (("5 blocks", False, "defaults", {}),
             ("5 blocks", False, "dof = moment estimate", dict(dof="moment")),
             ("5 blocks", False, "n_blocks=5, alpha=5", prior),
             ("5 blocks", False, "oracle", dict(dof="true", theta=0.05, **prior)),
             ("CRP(1) blocks", True, "defaults", {}),
             ("CRP(1) blocks", True, "800 sweeps x 4 chains", dict(n_sweeps=800, n_chains=4)),
             ("CRP(1) blocks", True, "oracle", dict(dof="true", theta=0.05)),
             ("CRP(1) blocks", True, "oracle, 800 x 4",
              dict(dof="true", theta=0.05, n_sweeps=800, n_chains=4)))
    rows = []
    for dof in WEAK_SIGNAL_DOFS[:1] if quick else WEAK_SIGNAL_DOFS:
        for blocks, crp, setting, params in cases:
            pairs, comembership, readout, mean_dof, _ = _weak_signal_draws(dof, crp, n, n_draws,
                                                                           params)
            for quantity, per_draw in (("pairwise marginals", pairs),
                                       ("held-out P(x ~ j)", comembership),
                                       ("predict_proba (held out)", readout)):
                ece, error = _bootstrap_ece(per_draw)
                rows.append(dict(model="FastTIWD", data=f"weak {blocks} d={dof} n={n}+20",
                                 setting=f"{quantity}, {setting}", engine="gibbs", ece=ece,
                                 note=f"+- {error:.3f} ({n_draws} draws); theta 0.05, "
                                      f"distances; mean dof_ {mean_dof:.0f}"))
    return rows


#: Split-merge proposals per sweep compared on the defaults' own model (CRP(1) blocks).
SPLIT_MERGE_SETTINGS = (("n_split_merge=0 (the previous default)", dict(n_split_merge=0)),
                        ("n_split_merge=2", dict(n_split_merge=2)),
                        ("defaults (n_split_merge=10)", {}),
                        ("n_split_merge=10, 4 chains", dict(n_split_merge=10, n_chains=4)),
                        ("800 sweeps x 4 chains", dict(n_sweeps=800, n_chains=4)))


def _fast_tiwd_split_merge_rows(quick):
    """FastTIWD's split-merge proposals on weak-signal distances from the defaults' own
    model (CRP(1) blocks, ``WEAK_SIGNAL``; the same planted draws and seeds for every
    setting, so ``n_split_merge=10`` is the defaults' fit itself): pairwise marginals and
    held-out ``P(x ~ j)`` against the truth, +- the bootstrap error, and the mean CPU seconds
    of a fit (the first fit, which may compile, left out)."""
    n, n_draws = 60, (8 if quick else 30)
    rows = []
    for dof in WEAK_SIGNAL_DOFS[1:] if quick else WEAK_SIGNAL_DOFS:
        for setting, params in SPLIT_MERGE_SETTINGS:
            pairs, comembership, _, mean_dof, seconds = _weak_signal_draws(dof, True, n,
                                                                           n_draws, params)
            for quantity, per_draw in (("pairwise marginals", pairs),
                                       ("held-out P(x ~ j)", comembership)):
                ece, error = _bootstrap_ece(per_draw)
                rows.append(dict(model="FastTIWD", data=f"weak CRP(1) blocks d={dof} n={n}+20",
                                 setting=f"{quantity}, {setting}", engine="gibbs", ece=ece,
                                 note=f"+- {error:.3f} ({n_draws} draws); {seconds:.2f} CPU s "
                                      f"per fit; mean dof_ {mean_dof:.0f}"))
    return rows


def two_view_data(n_rows, seed):
    """Rows in two views (two Gaussian columns each), each view's rows on its own CRP(1.5)
    partition: ``(X, labels of view 0, labels of view 1)``.

    The two partitions and the cells come from independent streams of ``seed``
    (``SeedSequence.spawn``; seeding view 1 with ``seed + 1`` reused it as view 0 of the
    next draw)."""
    data_seed, *view_seeds = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(data_seed)
    columns, partitions = [], []
    for view in range(2):
        labels = make_gaussian_pairs(n_rows, alpha=1.5,
                                     random_state=int(view_seeds[view].generate_state(1)[0])).target
        means = rng.normal(scale=5.0, size=(labels.max() + 1, 2))
        columns.append(means[labels] + rng.normal(size=(n_rows, 2)))
        partitions.append(labels)
    return np.hstack(columns), partitions[0], partitions[1]


def _crosscat_calibration_rows(quick):
    """CrossCat on planted two-view data (:func:`two_view_data`, pooled over draws, +- the
    bootstrap error): the rows' co-membership in the view of each column
    (``row_similarity``) against that view's true partition, at the defaults, with a 16
    times longer chain and with four chains (draws whose fit ends with both views merged,
    the mode chains were stuck in before the view split-merge move, are counted in the
    note)."""
    n, n_draws = (40, 4) if quick else (80, 30)
    upper = np.triu_indices(n, 1)
    rows = []
    for setting, params in (("defaults", {}), ("3200 sweeps", dict(n_sweeps=3200)),
                            ("200x4 chains", dict(n_chains=4)),
                            ("800x4 chains", dict(n_sweeps=800, n_chains=4))):
        per_view, merged = [[], []], 0
        for seed in range(4, 4 + n_draws):
            X, first, second = two_view_data(n, seed=seed)
            est = CrossCat(random_state=0, **params).fit(X)
            similarities = [est.row_similarity(view_of=column) for column in (0, 2)]
            merged += int(np.allclose(*similarities))
            for view, (similarity, truth) in enumerate(zip(similarities, (first, second))):
                same = (truth[:, None] == truth[None, :])[upper]
                per_view[view].append((similarity[upper], same))
        for view, per_draw in enumerate(per_view):
            ece, error = _bootstrap_ece(per_draw)
            rows.append(dict(model="CrossCat", data=f"2 planted views, n={n}",
                             setting=f"row_similarity view {view}, {setting}",
                             engine=est.method_, ece=ece,
                             note=f"+- {error:.3f} ({n_draws} draws); {merged} draws with "
                                  "the two views merged"))
    return rows


#: The parts of ``calibration_rows`` (``bench_calibration.py --part NAME`` runs some only).
CALIBRATION_PARTS = {
    "dp": lambda quick: _dp_calibration_rows(quick),
    "bhc": lambda quick: _bhc_calibration_rows(quick) + _bhc_own_model_rows(quick),
    "fast_tiwd": lambda quick: _fast_tiwd_calibration_rows(quick),
    "fast_tiwd_weak": lambda quick: _fast_tiwd_weak_signal_rows(quick),
    "fast_tiwd_split_merge": lambda quick: _fast_tiwd_split_merge_rows(quick),
    "crosscat": lambda quick: _crosscat_calibration_rows(quick),
}


def _check_parts(parts):
    known = {**RECOVERY_PARTS, **CALIBRATION_PARTS}
    unknown = set(parts or ()) - set(known)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; choose from {list(known)}")


def calibration_rows(quick=False, parts=None):
    """ECE of the probabilities of DPMixture, BHC, FastTIWD and CrossCat at their defaults on
    data from their own models, next to BayesianGaussianMixture (rows ``{model, data,
    setting, engine, ece, note}``, see bench_calibration.py); ``parts`` (names of
    ``CALIBRATION_PARTS``) keeps some only."""
    _check_parts(parts)
    return [row for name, part in CALIBRATION_PARTS.items() if not parts or name in parts
            for row in part(quick)]


if __name__ == "__main__":
    sys.exit("Run benchmarks/bench_calibration.py --only _calibration_models [--quick].")
