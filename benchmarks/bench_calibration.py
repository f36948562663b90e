"""Calibration of the library's probabilities and recovery of its hyperparameters (issue 28).

Prints two tables (three with the rows of held-out ``predict_proba``):

- **Recovery**: data drawn from a model at a known hyperparameter; the value
  ``GridSearchCV`` selects with the estimator's default scoring (its
  ``score``), the value the fit learns (``'auto'``, where built), and their
  relative errors (goal: within 15 %).
- **Calibration**: the expected calibration error (ECE, 10 equal-width bins)
  of pairwise co-membership probabilities against the true co-membership of
  the labels, at the default settings and with the learned hyperparameters,
  next to scikit-learn's ``BayesianGaussianMixture.predict_proba`` turned
  into co-membership probabilities (``sum_k p_ik p_jk``) on the same data.

The correlation-clustering rows (``ExactCorrelationClustering``) are built
here. Other estimators' rows come from optional modules next to this file,
imported when present:

- ``benchmarks/_calibration_trees.py`` (TrellisHierarchical energies),
- ``benchmarks/_calibration_models.py`` (Ginkgo, FastTIWD, DPMixture, ...).

Each may define either or both of these functions (``quick`` asks for a
small, fast version, as ``--quick`` does here)::

    recovery_rows(quick: bool) -> list of dict with keys
        model (str), parameter (str), data (str), true (float),
        grid (float or None: selected by GridSearchCV default scoring),
        auto (float or None: learned by the fit), note (str)
    calibration_rows(quick: bool) -> list of dict with keys
        model (str), data (str), setting (str), engine (str),
        ece (float), note (str), quantity (optional: 'predict_proba' for the ECE
        of held-out predict_proba, printed in a table of its own)

Missing keys print as blank; relative errors are computed here.

Run: ``python benchmarks/bench_calibration.py [--quick] [--only SECTION ...]
[--setting NAME ...] [--ecc-part PART ...] [--part NAME ...] [--skip-recovery]`` (sections: ``ecc``,
``_calibration_trees``, ``_calibration_models``; ``--setting`` keeps only the named
correlation-clustering calibration settings, e.g. ``--setting "beta='posterior', alpha
'auto'"``; ``--part`` only the named parts of a module's recovery and calibration rows, e.g.
``--only _calibration_models --part fast_tiwd_weak``; ``--ecc-part`` only the named parts
of the correlation-clustering section: ``recovery``, ``crp`` (cells drawn with an Ewens
prior), ``uniform`` (the default model's own data: uniform partitions, affinities on
three scales), ``features`` (blobs, iris, wine, digits), ``cost`` (CPU of a warm fit per
``beta`` setting)). The load average is printed with the timings (a shared machine's
figures vary with it).
"""

import argparse
import importlib
import inspect
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.datasets import make_gaussian_pairs
from sklearn_trellis.metrics import (expected_calibration_error, pair_targets,
                                     pairwise_from_proba)

#: True ``beta`` values of the recovery rows (pairs N(+-beta, 1): beta = (mu_s - mu_d) / 2s2).
TRUE_BETAS = (0.5, 1.0, 2.0)

#: The grid GridSearchCV searches (the same for every true value; steps of 10 %).
BETA_GRID = np.geomspace(0.1, 2.5, 35)

#: Concentration of the CRP drawing the planted partitions (and of the fitted prior).
ALPHA = 1.5

SECTIONS = ("_calibration_trees", "_calibration_models")


def known_partition_beta(w, labels):
    """The maximum-likelihood beta when the partition is known: the best any estimate can do."""
    rows, cols = np.triu_indices(labels.size, 1)
    same = labels[rows] == labels[cols]
    values = w[rows, cols]
    if same.all() or not same.any():
        return float("nan")
    mu_same, mu_diff = values[same].mean(), values[~same].mean()
    variance = np.mean((values - np.where(same, mu_same, mu_diff)) ** 2)
    return float((mu_same - mu_diff) / (2 * variance))


def ecc_recovery_rows(quick):
    """beta of ExactCorrelationClustering under the Gaussian pair model (median of draws)."""
    n_items, n_draws = (12, 2) if quick else (14, 5)
    rows = []
    for true in TRUE_BETAS[1:2] if quick else TRUE_BETAS:
        grid, auto, oracle = [], [], []
        for draw in range(n_draws):
            data = make_gaussian_pairs(n_items, beta=true, alpha=ALPHA,
                                       random_state=1000 * draw + 7)
            w, labels = data.affinity, data.target
            oracle.append(known_partition_beta(w, labels))
            base = ExactCorrelationClustering(affinity="precomputed", center=False, alpha=ALPHA)
            search = GridSearchCV(base, {"beta": BETA_GRID[::3] if quick else BETA_GRID},
                                  cv=KFold(4, shuffle=True, random_state=draw)).fit(w)
            grid.append(search.best_params_["beta"])
            auto.append(base.set_params(beta="auto").fit(w).beta_)
        print(f"  recovery beta={true}: grid {np.round(grid, 3)}, auto {np.round(auto, 3)}",
              flush=True)
        rows.append(dict(model="ExactCorrelationClustering", parameter="beta",
                         data=f"Gaussian pairs, N={n_items}, CRP({ALPHA})", true=true,
                         grid=float(np.median(grid)), auto=float(np.median(auto)),
                         note=f"median of {n_draws} draws, exact trellis; with the true "
                              f"partition known: {np.median(oracle):.3g}"))
    return rows


def planted_blobs(seed=0, n_per=6, centres=((0, 0), (3, 0), (0, 3))):
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(c, 0.7, (n_per, 2)) for c in centres])
    return X, np.repeat(np.arange(len(centres)), n_per)


def datasets(quick):
    """``(name, X, y)``: planted blobs, then iris, wine and a 300-point digits subset."""
    n_per = 4 if quick else 6
    yield f"3 blobs N={3 * n_per} (planted)", *planted_blobs(n_per=n_per)
    iris = load_iris()
    wine = load_wine()
    digits = load_digits()
    subset = np.random.default_rng(0).choice(digits.target.size, 300, replace=False)
    if quick:
        rng = np.random.default_rng(1)
        pick = rng.choice(150, 14, replace=False)
        yield "iris (14-point subset)", iris.data[pick], iris.target[pick]
        return
    yield "iris", iris.data, iris.target
    yield "wine (standardised)", StandardScaler().fit_transform(wine.data), wine.target
    yield ("digits (300, standardised)",
           StandardScaler().fit_transform(digits.data[subset]), digits.target[subset])


def engine_of(est):
    n = est.affinity_matrix_.shape[0]
    return "exact" if est.approximation_ is None else f"sparse (N={n})"


#: The settings of the calibration table: ``(name, parameters)``.
CALIBRATION_SETTINGS = (
    ("beta=1", dict(beta=1.0)),
    ("beta='auto'", dict(beta="auto", alpha=None)),
    ("beta, alpha 'auto', no hyperprior", dict(beta="auto", alpha="auto", alpha_prior=None)),
    ("beta, alpha 'auto'", dict(beta="auto", alpha="auto")),
    ("beta, alpha, center 'auto'", dict(beta="auto", alpha="auto", center="auto")),
    ("beta='posterior'", dict(beta="posterior")),
    ("beta='posterior', alpha 'auto'", dict(beta="posterior", alpha="auto")),
    ("beta, alpha 'posterior'", dict(beta="posterior", alpha="posterior")),
)

#: The settings chosen with ``--setting`` (all when empty).
CHOSEN_SETTINGS = []


def chosen_settings(extra=()):
    """The calibration settings to run (``--setting`` filters them by name)."""
    settings = list(CALIBRATION_SETTINGS) + list(extra)
    return [s for s in settings if not CHOSEN_SETTINGS or s[0] in CHOSEN_SETTINGS]

#: The planted cells: true ``(beta, alpha)`` of the Gaussian pair model (noise variance 1).
PLANTED_CELLS = tuple((b, a) for b in (0.25, 0.5, 1.0) for a in (0.5, 1.5, 4.0))


def pooled_ece(targets, probabilities):
    """ECE over pairs pooled from several data sets (1-d arrays of same-label flags and
    co-membership probabilities): one reference item whose label is 0 and one "item" per
    pair whose label is 0 exactly when the pair's labels agree."""
    return expected_calibration_error([0], np.asarray(probabilities)[None, :],
                                      y_reference=1 - np.asarray(targets))


def bootstrap_error(per_draw, n_boot=200, seed=0):
    """Monte Carlo standard error of the pooled ECE: its spread when the draws (each a
    ``(targets, probabilities)`` pair) are resampled with replacement."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(per_draw), len(per_draw))
        values.append(pooled_ece(np.concatenate([per_draw[i][0] for i in pick]),
                                 np.concatenate([per_draw[i][1] for i in pick])))
    return float(np.std(values))


def pooled_cells_row(setting, cells, n_draws, draw, fit):
    """ECE of one setting's pairwise marginals over planted cells: per cell (pairs pooled over
    its ``n_draws`` draws) and over all cells, each with its bootstrap error over draws.

    ``draw(cell, seed)`` returns the data (a Bunch of :func:`make_gaussian_pairs`), ``fit(cell,
    data)`` the fitted estimator. Returns ``(pooled ece, error, {cell: (ece, error)}, worst
    cell text, CPU seconds)``."""
    start = time.process_time()
    everything, worst, per_cell = [], (0.0, None), {}
    for cell in cells:
        per_draw = []
        for seed in range(n_draws):
            data = draw(cell, 100 + seed)
            est = fit(cell, data)
            per_draw.append(pair_targets(data.target, est.pairwise_marginals_))
        ece = pooled_ece(*map(np.concatenate, zip(*per_draw)))
        error = bootstrap_error(per_draw)
        per_cell[cell] = (ece, error)
        print(f"  pairs {cell}, {setting}: ECE {ece:.3f} +- {error:.3f}", flush=True)
        worst = max(worst, (ece, f"worst cell {cell}: {ece:.3f} +- {error:.3f}"))
        everything += per_draw
    ece = pooled_ece(*map(np.concatenate, zip(*everything)))
    return ece, bootstrap_error(everything), per_cell, worst[1], time.process_time() - start


def planted_pair_rows(quick):
    """ECE on data drawn from the Gaussian pair model over a range of true ``(beta, alpha)``
    (weak to strong signal, few to many clusters), pairs pooled over the draws of a cell
    (one draw of N items has only N (N - 1) / 2 dependent pairs: its ECE is mostly noise)
    and over all cells; the Monte Carlo error (bootstrap over draws) is printed with each,
    and the "true beta and alpha" row is the floor the finite sample leaves (a calibrated
    posterior's ECE is positive)."""
    n_items, n_draws = (10, 4) if quick else (12, 16)
    cells = PLANTED_CELLS[4:5] if quick else PLANTED_CELLS
    settings = chosen_settings([("true beta and alpha", None)])
    rows = []

    def draw(cell, seed):
        beta, alpha = cell
        return make_gaussian_pairs(n_items, beta=beta, alpha=alpha, random_state=seed)

    for setting, params in settings:
        def fit(cell, data):
            beta, alpha = cell
            return ExactCorrelationClustering(
                affinity="precomputed",
                **(dict(beta=beta, alpha=alpha) if params is None else params)
            ).fit(data.affinity)

        ece, error, _, worst, seconds = pooled_cells_row(
            setting, cells, n_draws, draw, fit)
        rows.append(dict(model="ExactCorrelationClustering",
                         data=f"pairs N={n_items}, {len(cells)} CRP cells (beta, alpha) "
                              f"x {n_draws}",
                         setting=setting, engine="exact", ece=ece,
                         note=f"+- {error:.3f} (bootstrap); {worst}; {seconds:.0f} CPU s"))
    return rows


#: The default model's own data: uniform partitions (``alpha=None``), true ``beta`` from weak
#: to strong signal, and affinities on three scales (``noise_variance``), so that no fixed
#: ``beta`` is right by the affinities' scale alone. Cells ``(beta, noise_variance)``.
UNIFORM_CELLS = tuple((b, s2) for s2 in (0.25, 1.0, 4.0) for b in (0.25, 0.5, 1.0, 2.0))

#: The settings compared on them (all with the default uniform prior, ``alpha=None``); the
#: last, the true ``beta``, is the floor the finite sample leaves.
UNIFORM_SETTINGS = (("beta=1", dict(beta=1.0)), ("beta='auto'", dict(beta="auto")),
                    ("beta='posterior'", dict(beta="posterior")), ("true beta", None))


def uniform_pair_rows(quick):
    """ECE of the pairwise marginals on the DEFAULT model's own data (:data:`UNIFORM_CELLS`:
    uniform partitions of 12 items, 16 draws per cell), pooled per cell and over all cells,
    for each of :data:`UNIFORM_SETTINGS`; then a table of every cell's ECE per setting."""
    n_items, n_draws = (10, 4) if quick else (12, 16)
    cells = UNIFORM_CELLS[5:6] if quick else UNIFORM_CELLS
    rows, table = [], {}

    def draw(cell, seed):
        # Each cell its own seeds: the data of cells with equal beta sqrt(s2) would otherwise
        # be one data set rescaled, which every scale-equivariant setting fits alike.
        beta, s2 = cell
        return make_gaussian_pairs(n_items, beta=beta, noise_variance=s2, alpha=None,
                                   random_state=seed + 1000 * UNIFORM_CELLS.index(cell))

    for setting, params in UNIFORM_SETTINGS:
        if CHOSEN_SETTINGS and setting not in CHOSEN_SETTINGS:
            continue

        def fit(cell, data):
            return ExactCorrelationClustering(
                affinity="precomputed", alpha=None,
                **(dict(beta=cell[0]) if params is None else params)).fit(data.affinity)

        ece, error, per_cell, worst, seconds = pooled_cells_row(
            setting, cells, n_draws, draw, fit)
        table[setting] = per_cell
        rows.append(dict(model="ExactCorrelationClustering",
                         data=f"pairs N={n_items}, uniform prior, {len(cells)} cells "
                              f"(beta, s2) x {n_draws}",
                         setting=setting, engine="exact", ece=ece,
                         note=f"+- {error:.3f} (bootstrap); {worst}; {seconds:.0f} CPU s"))
    if table:
        print("\nECE per cell of the uniform-prior data, +- bootstrap error (cell = true "
              "beta, noise variance s2)")
        columns = [("cell (beta, s2)", "<")] + [(name, ">") for name in table]
        print_table(columns, [[str(cell)] + [f"{table[name][cell][0]:.3f} +- "
                                             f"{table[name][cell][1]:.3f}" for name in table]
                              for cell in cells])
    return rows


#: Settings whose fitting cost :func:`cost_rows` measures.
COST_SETTINGS = (("beta=1", dict(beta=1.0)), ("beta='auto'", dict(beta="auto")),
                 ("beta='posterior'", dict(beta="posterior")))


def cost_rows(quick):
    """CPU seconds of one warm fit (``time.process_time``; the kernels compiled and the
    interpreted kernels' budget spent by earlier fits) with the default parameters but
    ``beta``, on 12 items (exact trellis), 40 and 300 (sparse): 12 and 40 rows of
    ``make_blobs(40, 4 features, 3 centres)`` (bench_cold_start's data) and the 300-point
    standardised digits subset; and 20 rows of ``N(0, I_4)`` (``max_exact_size``: the exact
    trellis's largest default size). Median of 5 fits (1 from 20 items on)."""
    from sklearn.datasets import make_blobs

    blobs, _ = make_blobs(n_samples=40, n_features=4, centers=3, random_state=0)
    digits = load_digits()
    subset = np.random.default_rng(0).choice(digits.target.size, 300, replace=False)
    problems = [("12 blobs (exact)", blobs[:12]), ("40 blobs (sparse)", blobs)]
    if not quick:
        problems.append(("digits 300 (sparse)", StandardScaler().fit_transform(
            digits.data[subset])))
        # the largest exact size of method='auto', where a fit's 3^N pass dominates
        problems.append(("20 Gaussian rows (exact)",
                         np.random.default_rng(0).standard_normal((20, 4))))
    for _, X in problems[:2]:       # warm: compile, and spend the interpreters' budgets
        for _, params in COST_SETTINGS:
            for _ in range(15):
                ExactCorrelationClustering(**params).fit(X)
    for _, X in problems[2:]:       # the kernels of larger layers and families
        ExactCorrelationClustering(beta=1.0).fit(X)
    print(f"\nCPU seconds of one warm fit (load average {os.getloadavg()[0]:.1f})")
    cells = []
    for name, X in problems:
        line = [name]
        for setting, params in COST_SETTINGS:
            seconds = []
            for _ in range(1 if X.shape[0] >= 20 else 5):
                start = time.process_time()
                ExactCorrelationClustering(**params).fit(X)
                seconds.append(time.process_time() - start)
            line.append(f"{np.median(seconds):.3f}")
        cells.append(line)
    print_table([("data", "<")] + [(setting, ">") for setting, _ in COST_SETTINGS], cells)
    print(f"(load average {os.getloadavg()[0]:.1f})")


def item_bootstrap(y, marginals, reference=None, n_boot=200, seed=0):
    """Sampling error of one data set's pairwise ECE: its standard deviation over the items
    resampled with replacement (pairs of two copies of one item left out), and, given the
    marginals of a ``reference`` setting, the standard deviation of the paired difference
    ``ECE - ECE(reference)`` on the same resamples (nan without)."""
    rng = np.random.default_rng(seed)
    y = np.asarray(y)
    values, differences = [], []
    for _ in range(n_boot):
        pick = rng.integers(0, y.size, y.size)
        rows, cols = np.triu_indices(y.size, 1)
        rows, cols = pick[rows], pick[cols]
        keep = rows != cols
        rows, cols = rows[keep], cols[keep]
        targets = y[rows] == y[cols]
        values.append(pooled_ece(targets, marginals[rows, cols]))
        if reference is not None:
            differences.append(values[-1] - pooled_ece(targets, reference[rows, cols]))
    return float(np.std(values)), float(np.std(differences)) if differences else float("nan")


#: The parts of the correlation-clustering section (``--ecc-part``; all by default).
ECC_PARTS = ("recovery", "crp", "uniform", "features", "cost")


def ecc_calibration_rows(quick, parts=ECC_PARTS):
    rows = planted_pair_rows(quick) if "crp" in parts else []
    if "uniform" in parts:
        rows += uniform_pair_rows(quick)
    if "features" not in parts:
        return rows
    for name, X, y in datasets(quick):
        first = None
        for setting, params in chosen_settings():
            start = time.perf_counter()
            est = ExactCorrelationClustering(**params).fit(X)
            seconds = time.perf_counter() - start
            ece = expected_calibration_error(y, est.pairwise_marginals_)
            ari = adjusted_rand_score(y, est.labels_)
            error, difference_error = item_bootstrap(y, est.pairwise_marginals_,
                                                     None if first is None else first[2])
            compared = ("" if first is None else
                        f"; minus {first[0]}: {ece - first[1]:+.3f} +- {difference_error:.3f}")
            first = first or (setting, ece, est.pairwise_marginals_)
            print(f"  {name}, {setting}: ECE {ece:.3f} +- {error:.3f}{compared}, ARI {ari:.3f}, "
                  f"{seconds:.1f} s", flush=True)
            alpha = "None" if est.alpha_ is None else f"{est.alpha_:.3g}"
            rows.append(dict(model="ExactCorrelationClustering", data=name, setting=setting,
                             engine=engine_of(est), ece=ece,
                             note=f"+- {error:.3f} (items bootstrap){compared}; ARI {ari:.3f}; "
                                  f"beta_={est.beta_:.3g}, alpha_={alpha}, "
                                  f"offset={est.affinity_offset_:.3g}, {seconds:.1f} s"))
        gmm = BayesianGaussianMixture(n_components=10, random_state=0, max_iter=500).fit(X)
        print(f"  {name}, BayesianGaussianMixture", flush=True)
        rows.append(dict(model="BayesianGaussianMixture", data=name,
                         setting="n_components=10", engine="variational",
                         ece=expected_calibration_error(
                             y, pairwise_from_proba(gmm.predict_proba(X))),
                         note=f"ARI {adjusted_rand_score(y, gmm.predict(X)):.3f}; "
                              "predict_proba on the fitted points"))
    return rows


def optional_sections():
    """The other helpers' modules that are present (see the module docstring)."""
    sys.path.insert(0, str(Path(__file__).parent))
    found = []
    for name in SECTIONS:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
    return found


def fmt(value, spec=".3g"):
    return "" if value is None else format(value, spec)


def relative_error(selected, true):
    return None if selected is None or not true else abs(selected - true) / abs(true)


def print_table(columns, cells):
    """Print ``cells`` (lists of strings) under ``columns`` (name, alignment '<' or '>'),
    each column as wide as its widest entry, the last one unpadded."""
    widths = [max([len(name)] + [len(row[i]) for row in cells])
              for i, (name, _) in enumerate(columns)]
    widths[-1] = 0

    def line(values):
        return " ".join(format(value, f"{align}{width}")
                        for value, (_, align), width in zip(values, columns, widths)).rstrip()

    header = line([name for name, _ in columns])
    print(header)
    print("-" * len(header))
    for row in cells:
        print(line(row))


def print_recovery(rows):
    print("\nRecovery (goal: relative error <= 15 %)")
    columns = [("model", "<"), ("parameter", "<"), ("data", "<"), ("true", ">"), ("grid", ">"),
               ("err", ">"), ("auto", ">"), ("err", ">"), ("note", "<")]
    cells = []
    for row in rows:
        true = row.get("true")
        cells.append([str(row.get("model", "")), str(row.get("parameter", "")),
                      str(row.get("data", "")), fmt(true), fmt(row.get("grid")),
                      fmt(relative_error(row.get("grid"), true), ".0%"), fmt(row.get("auto")),
                      fmt(relative_error(row.get("auto"), true), ".0%"),
                      str(row.get("note", ""))])
    print_table(columns, cells)


def print_ece_table(title, rows):
    """One ECE table: a row per (model, data, setting, engine)."""
    if not rows:
        return
    print("\n" + title)
    columns = [("model", "<"), ("data", "<"), ("setting", "<"), ("engine", "<"), ("ECE", ">"),
               ("note", "<")]
    print_table(columns, [[str(row.get("model", "")), str(row.get("data", "")),
                           str(row.get("setting", "")), str(row.get("engine", "")),
                           fmt(row.get("ece"), ".3f"), str(row.get("note", ""))]
                          for row in rows])

def print_calibration(rows):
    print_ece_table("Calibration: ECE (10 bins) of the probability named in 'setting' against "
                    "the event it claims (co-membership unless said; goal <= 0.05 where the "
                    "model is right)", rows)


def print_proba_calibration(rows):
    """Rows with ``quantity='predict_proba'``: ECE of held-out ``predict_proba``."""
    print_ece_table("Calibration: ECE (10 bins) of held-out predict_proba, confidence = "
                    "largest probability (goal <= 0.05 where the model is right)", rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast version")
    parser.add_argument("--only", action="append", choices=("ecc", *SECTIONS),
                        help="run only these sections (repeatable): 'ecc' is this file's "
                             "correlation-clustering rows, the others the optional modules")
    parser.add_argument("--setting", action="append",
                        choices=sorted({name for name, _ in CALIBRATION_SETTINGS
                                        + UNIFORM_SETTINGS} | {"true beta and alpha"}),
                        help="run only these settings of the correlation-clustering "
                             "calibration rows (repeatable)")
    parser.add_argument("--part", action="append",
                        help="run only these parts of the optional modules' recovery and "
                             "calibration rows (repeatable; e.g. 'fast_tiwd_weak' or "
                             "'infinite_biclustering' of _calibration_models)")
    parser.add_argument("--skip-recovery", action="store_true",
                        help="leave out the recovery rows (of every section)")
    parser.add_argument("--ecc-part", action="append", choices=ECC_PARTS,
                        help="run only these parts of the correlation-clustering section "
                             "(repeatable): 'recovery' of beta, the 'crp' cells, the "
                             "'uniform' cells (the default model's own data), the "
                             "'features' data sets, the 'cost' of a warm fit")
    args = parser.parse_args(argv)
    CHOSEN_SETTINGS[:] = args.setting or []
    chosen = set(args.only or ("ecc", *SECTIONS))
    start = time.perf_counter()
    print(f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    sections = [m for m in optional_sections() if m.__name__ in chosen]
    print("sections: " + ", ".join((["ecc"] if "ecc" in chosen else [])
                                   + [m.__name__ for m in sections]))
    recovery, calibration = [], []
    ecc_parts = args.ecc_part or ECC_PARTS
    if "ecc" in chosen:
        if not args.skip_recovery and "recovery" in ecc_parts:
            recovery += ecc_recovery_rows(args.quick)
        calibration += ecc_calibration_rows(args.quick, ecc_parts)
    for module in sections:
        if hasattr(module, "recovery_rows") and not args.skip_recovery:
            takes_parts = "parts" in inspect.signature(module.recovery_rows).parameters
            recovery += (module.recovery_rows(args.quick, parts=args.part)
                         if args.part and takes_parts else module.recovery_rows(args.quick))
        if hasattr(module, "calibration_rows"):
            takes_parts = "parts" in inspect.signature(module.calibration_rows).parameters
            calibration += (module.calibration_rows(args.quick, parts=args.part)
                            if args.part and takes_parts else module.calibration_rows(args.quick))
    print_recovery(recovery)
    pairwise = [row for row in calibration if row.get("quantity") != "predict_proba"]
    if pairwise or not calibration:
        print_calibration(pairwise)
    print_proba_calibration([row for row in calibration
                             if row.get("quantity") == "predict_proba"])
    if "ecc" in chosen and "cost" in ecc_parts:
        cost_rows(args.quick)
    print(f"\n{time.perf_counter() - start:.0f} s in all; load average at end: "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
