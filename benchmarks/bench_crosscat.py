"""CrossCat on planted views: structure recovery, imputation and speed, next to Lace.

Tables of 1,000 x 20 (3 views) and 10,000 x 50 (4 views) are drawn from the
CrossCat model itself: columns split into views, each view's rows into 3-5
clusters, column types cycling through normal, bernoulli, categorical (4
categories) and poisson, and 10% of the cells removed at random (MCAR). For
``CrossCat`` (row ``CrossCat``: the defaults, the slice row move and one row
and one column split-merge proposal per sweep; ``CrossCat sm=0``:
``n_split_merge=0``, Lace's moves only; ``CrossCat coll.``: the collapsed
row scan) and for Lace (same data, same number of sweeps, one chain each,
``--seeds`` chains of each, default 3) the script prints the means over the
seeds of:

- ``view ARI``: adjusted Rand index of the inferred column partition (the last
  sample) against the planted views;
- ``row ARI``: for each planted view, the ARI of its rows against the row
  clustering of the inferred view holding most of its columns, averaged;
- imputation error of the removed cells: RMSE of normal cells (in units of the
  column's standard deviation), error rate of bernoulli and categorical cells,
  mean absolute error of poisson cells;
- seconds per sweep (wall time of the sweeps divided by their number;
  CrossCat's includes numba compilation only on a cold cache, so run twice)
  and seconds of the whole fit (Lace: of its subprocess, start-up included).

Lace is run twice: with the same number of sweeps, and (row ``LaceN``) with
the ``N`` sweeps that fit in the time of CrossCat's default sweeps (at most
5,000), which answers "does Lace reach the same accuracy in the same time".

Measured 2026-11-27 with the view split-merge move (every sweep up to
``VIEW_MOVE_CELLS`` = 50,000 cells, a share of the sweeps above), on the 2-core
reference machine shared with other jobs (load average 5.1 to 7.2: the seconds
are wall time, about 2 to 3 times a quiet machine's; the ARI and errors do not
depend on the load); warm numba cache, seeds 0-2, pylace not installed. Command:
``python benchmarks/bench_crosscat.py``::

    100 sweeps, one chain, mean over 3 seeds; imputation: normal RMSE (sd units), bernoulli and categorical error rate, poisson MAE
            table         method  view ARI  row ARI  normal  bern. categ.  poisson  s/sweep   fit s
     1000x20 (3v)       CrossCat     0.934    0.805   0.505  0.226  0.358    2.374   0.0169     1.9
     1000x20 (3v)  CrossCat sm=0     0.824    0.705   0.512  0.227  0.365    2.275   0.0033     0.4
     1000x20 (3v) CrossCat coll.     0.979    0.865   0.497  0.226  0.355    2.226   0.0234     2.4
    10000x50 (4v)       CrossCat     0.932    0.869   0.459  0.182  0.363    1.765   0.1612    16.5
    10000x50 (4v)  CrossCat sm=0     0.634    0.469   0.719  0.224  0.384    2.079   0.0875     9.1
    10000x50 (4v) CrossCat coll.     0.932    0.856   0.454  0.176  0.358    1.761   0.3119    31.5

Lace's rows, from the earlier measurement before the view move (quiet: load
average 0.9; pylace 0.10.1, seeds 0-2; same tables and command), kept as the
reference until Lace is run again in the same run::

            table         method  view ARI  row ARI  normal  bern. categ.  poisson  s/sweep   fit s
     1000x20 (3v)       CrossCat     0.804    0.702   0.513  0.227  0.365    2.403   0.0021     0.3
     1000x20 (3v)  CrossCat sm=0     0.797    0.708   0.532  0.236  0.362    2.364   0.0013     0.1
     1000x20 (3v)           Lace     0.627    0.505   0.661  0.312  0.398    2.465   0.0015     1.2
     1000x20 (3v)        Lace144     0.625    0.519   0.693  0.314  0.385    2.430   0.0013     1.3
    10000x50 (4v)       CrossCat     0.934    0.918   0.487  0.176  0.360    1.767   0.0200     2.1
    10000x50 (4v)  CrossCat sm=0     0.763    0.577   0.580  0.211  0.381    1.932   0.0123     1.4
    10000x50 (4v)           Lace     0.744    0.392   0.780  0.312  0.468    2.257   0.0158     3.7
    10000x50 (4v)        Lace126     0.741    0.393   0.780  0.312  0.469    2.260   0.0156     4.1

Then, with Lace's moves only (``n_split_merge=0``) a CrossCat sweep cost less
than Lace's on both tables (1.3 against 1.5 ms, 12.3 against 15.8 ms) and was
at least as accurate (views, rows, every imputation error); Lace given the time
of CrossCat's defaults (126 to 144 sweeps) gained nothing. With the view move
the defaults find the views of the 1,000 x 20 table better (view ARI 0.80 ->
0.93, row ARI 0.70 -> 0.81; the runs without split-merge, which the move does
not touch, moved 0.80 -> 0.82 and 0.76 -> 0.63 between the two measurements:
other changes and three seeds' spread) at about 5 times the sweep of
``n_split_merge=0`` (the move runs every sweep below 50,000 cells), and reach
0.93 / 0.87 on 10,000 x 50 at 1.8 times (same run, same load). The collapsed
row scan, with the view move, now recovers the structure best (0.98 / 0.87 and
0.93 / 0.86) at 1.4 to 2 times the defaults' sweep. A sweep is a few kernel calls on one seed
(``engines/gibbs/_crosscat_sweep.py``) on a flat state in which each column keeps
its statistics per row cluster of its view: the slice move scores a view's
cells column by column, the columns' scores against the views are computed at
once on numba's threads, and the auxiliary views of column moves seat their rows
in O(1) each.

Run: ``python benchmarks/bench_crosscat.py [--quick] [--sweeps N]`` (``--quick``:
the 1,000 x 20 table only; default 100 sweeps).

Lace (the anchor)
-----------------
Lace (Rust, ``pylace`` on PyPI) is never a dependency of this project. The
benchmark runs it, when a separate virtual environment holds it, through a
subprocess in the same run::

    python -m venv /tmp/lace_env && /tmp/lace_env/bin/pip install pylace

(pylace 0.10.1 was used.) ``--lace-python PATH`` names another interpreter;
without one the script prints CrossCat's rows only and this recipe. Lace gets
the same table as a DataFrame with explicit column types (continuous,
categorical for bernoulli and categorical columns, count for poisson), one
state, ``update(n_sweeps)`` with its default transitions, imputation with
``Engine.impute`` and the structure of state 0.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.metrics import adjusted_rand_score

from sklearn_trellis import CrossCat

TYPES = ("normal", "bernoulli", "categorical", "poisson")
N_CATEGORIES = 4
LACE_PYTHON = "/tmp/lace_env/bin/python"
#: Cap of the equal-time Lace run's sweeps.
MAX_LACE_SWEEPS = 5000


def planted_table(n_rows, n_columns, n_views, missing=0.1, seed=0):
    """A table drawn from CrossCat with planted views; returns (X with NaN, X complete, truth)."""
    rng = np.random.RandomState(seed)
    views = np.concatenate([np.arange(n_views), rng.randint(n_views, size=n_columns - n_views)])
    rng.shuffle(views)
    types = [TYPES[j % len(TYPES)] for j in range(n_columns)]
    rows = [rng.randint(rng.randint(3, 6), size=n_rows) for _ in range(n_views)]
    X = np.empty((n_rows, n_columns))
    for j in range(n_columns):
        z = rows[views[j]]
        k = z.max() + 1
        if types[j] == "normal":
            X[:, j] = rng.normal(0, 2.5, size=k)[z] + rng.randn(n_rows)
        elif types[j] == "bernoulli":
            X[:, j] = rng.rand(n_rows) < rng.beta(0.5, 0.5, size=k)[z]
        elif types[j] == "categorical":
            probs = rng.dirichlet(np.full(N_CATEGORIES, 0.5), size=k)[z]
            X[:, j] = (rng.rand(n_rows, 1) > np.cumsum(probs, axis=1)).sum(axis=1)
        else:
            X[:, j] = rng.poisson(rng.gamma(2.0, 3.0, size=k)[z])
    complete = X.copy()
    X[rng.rand(*X.shape) < missing] = np.nan
    for j in range(n_columns):   # every category seen, no column left empty
        if np.isnan(X[:, j]).all():
            X[0, j] = complete[0, j]
    return X, complete, {"views": views, "rows": rows, "types": types}


def structure_scores(truth, views, row_labels):
    view_ari = adjusted_rand_score(truth["views"], views)
    row_aris = []
    for v, z in enumerate(truth["rows"]):
        members = np.flatnonzero(truth["views"] == v)
        holder = np.bincount(np.asarray(views)[members]).argmax()
        row_aris.append(adjusted_rand_score(z, row_labels[holder]))
    return view_ari, float(np.mean(row_aris))


def imputation_errors(X, complete, imputed, types):
    errors = {}
    missing = np.isnan(X)
    for kind in TYPES:
        columns = [j for j, t in enumerate(types) if t == kind]
        diffs = []
        for j in columns:
            m = missing[:, j]
            if not m.any():
                continue
            truth, guess = complete[m, j], imputed[m, j].astype(float)
            if kind == "normal":
                diffs.append(((guess - truth) / complete[:, j].std()) ** 2)
            elif kind == "poisson":
                diffs.append(np.abs(guess - truth))
            else:
                diffs.append(guess != truth)
        values = np.concatenate(diffs)
        errors[kind] = float(np.sqrt(values.mean()) if kind == "normal" else values.mean())
    return errors


#: CrossCat's rows: the defaults (slice row move, one split-merge proposal per view and
#: one on the columns per sweep), Lace's moves only, and the collapsed row scan.
OUR_RUNS = [("CrossCat", {}), ("CrossCat sm=0", {"n_split_merge": 0}),
            ("CrossCat coll.", {"row_sampler": "collapsed"})]


def run_ours(X, truth, n_sweeps, seed, **params):
    types = ["categorical" if t == "categorical" else t for t in truth["types"]]
    model = CrossCat(likelihood=types, n_sweeps=n_sweeps, burn_in=n_sweeps - 1,
                     random_state=seed, **params)
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    imputed = model.impute(X)
    return model.views_, model.view_row_labels_, imputed, model.seconds_per_sweep_, seconds


LACE_SCRIPT = r"""
import json, sys, time
import numpy as np, pandas as pd
import lace
from lace import ColumnMetadata
data = np.load(sys.argv[1])
X, n_sweeps, seed = data["X"], int(data["n_sweeps"]), int(data["seed"])
types = [str(t) for t in data["types"]]
columns, metadata = {}, []
for j, t in enumerate(types):
    name = f"c{j}"
    if t == "normal":
        columns[name] = pd.Series(X[:, j], dtype="float64")
        metadata.append(ColumnMetadata.continuous(name))
    else:
        values = pd.array([None if np.isnan(x) else int(x) for x in X[:, j]], dtype="UInt32")
        columns[name] = pd.Series(values)
        if t == "poisson":
            metadata.append(ColumnMetadata.count(name))
        else:
            k = 2 if t == "bernoulli" else int(data["n_categories"])
            metadata.append(ColumnMetadata.categorical(name, k))
frame = pd.DataFrame(columns)
frame.index = [str(i) for i in range(X.shape[0])]
frame.index.name = "ID"
codebook = lace.Codebook.empty("bench").append_column_metadata(metadata)
codebook = codebook.set_row_names(list(frame.index)) or codebook
engine = lace.Engine.from_df(frame, codebook=lace.CodebookBuilder.codebook(codebook.codebook),
                             n_states=1, rng_seed=seed)
start = time.perf_counter()
engine.update(n_sweeps, quiet=True)
seconds = time.perf_counter() - start
imputed = X.copy()
for j in range(X.shape[1]):
    rows = np.flatnonzero(np.isnan(X[:, j]))
    if rows.size:
        out = engine.impute(f"c{j}", rows=[str(r) for r in rows], with_uncertainty=False)
        imputed[rows, j] = np.asarray(out[f"c{j}"].to_numpy(), dtype=float)
json.dump({"views": list(engine.column_assignment(0)),
           "rows": [list(r) for r in engine.row_assignments(0)],
           "imputed": imputed.tolist(), "seconds": seconds}, open(sys.argv[2], "w"))
"""


def run_lace(python, X, truth, n_sweeps, seed):
    with tempfile.TemporaryDirectory() as tmp:
        inputs, outputs = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.json")
        np.savez(inputs, X=X, types=np.array(truth["types"]), n_sweeps=n_sweeps, seed=seed,
                 n_categories=N_CATEGORIES)
        script = os.path.join(tmp, "run_lace.py")
        with open(script, "w") as handle:
            handle.write(LACE_SCRIPT)
        start = time.perf_counter()
        done = subprocess.run([python, script, inputs, outputs], capture_output=True, text=True)
        if done.returncode != 0:
            print("Lace failed:", done.stderr[-2000:])
            return None
        result = json.load(open(outputs))
        result["wall"] = time.perf_counter() - start
    result["imputed"] = np.array(result["imputed"], dtype=float)
    return result


def _lace_row(name, result, X, complete, truth, n_sweeps):
    lace_rows = [np.array(r) for r in result["rows"]]
    return (name, *structure_scores(truth, result["views"], lace_rows),
            imputation_errors(X, complete, result["imputed"], truth["types"]),
            result["seconds"] / n_sweeps, result["wall"])


def _mean_row(runs):
    """One printed row: the mean of each figure over the seeds' runs."""
    name = runs[0][0]
    errors = {key: float(np.mean([r[3][key] for r in runs])) for key in runs[0][3]}
    return (name, float(np.mean([r[1] for r in runs])), float(np.mean([r[2] for r in runs])),
            errors, float(np.mean([r[4] for r in runs])), float(np.mean([r[5] for r in runs])))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sweeps", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=3,
                        help="chains (seeds 0, 1, ...) per method; figures are their means")
    parser.add_argument("--lace-python", default=LACE_PYTHON)
    args = parser.parse_args()
    has_lace = os.path.exists(args.lace_python)
    if not has_lace:
        print(f"Lace not found at {args.lace_python}: printing CrossCat only. Install it "
              "apart from this project with\n  python -m venv /tmp/lace_env && "
              "/tmp/lace_env/bin/pip install pylace")
    tables = [(1000, 20, 3)] + ([] if args.quick else [(10000, 50, 4)])
    header = (f"{'table':>13} {'method':>14} {'view ARI':>9} {'row ARI':>8} {'normal':>7} "
              f"{'bern.':>6} {'categ.':>6} {'poisson':>8} {'s/sweep':>8} {'fit s':>7}")
    print(f"{args.sweeps} sweeps, one chain, mean over {args.seeds} seeds; imputation: "
          "normal RMSE (sd units), bernoulli and categorical error rate, poisson MAE")
    print(header)
    for n, d, v in tables:
        X, complete, truth = planted_table(n, d, v, seed=0)
        rows = []
        per_sweep = None
        for name, params in OUR_RUNS:
            runs = []
            for seed in range(args.seeds):
                views, row_labels, imputed, seconds, total = run_ours(X, truth, args.sweeps,
                                                                      seed, **params)
                runs.append((name, *structure_scores(truth, views, row_labels),
                             imputation_errors(X, complete, imputed, truth["types"]), seconds,
                             total))
            rows.append(_mean_row(runs))
            per_sweep = rows[-1][4] if per_sweep is None else per_sweep   # the defaults'
        if has_lace:
            runs = [run_lace(args.lace_python, X, truth, args.sweeps, seed)
                    for seed in range(args.seeds)]
            budget = None
            if all(r is not None for r in runs):
                rows.append(_mean_row([_lace_row("Lace", r, X, complete, truth, args.sweeps)
                                       for r in runs]))
                # as many Lace sweeps as fit in CrossCat's sweep time
                budget = int(min(MAX_LACE_SWEEPS, per_sweep / max(rows[-1][4], 1e-6)
                                 * args.sweeps))
            if budget is not None and budget > args.sweeps:
                runs = [run_lace(args.lace_python, X, truth, budget, seed)
                        for seed in range(args.seeds)]
                if all(r is not None for r in runs):
                    rows.append(_mean_row([_lace_row(f"Lace{budget}", r, X, complete, truth,
                                                     budget) for r in runs]))
        for name, view_ari, row_ari, errors, per_sweep, total in rows:
            print(f"{f'{n}x{d} ({v}v)':>13} {name:>14} {view_ari:9.3f} {row_ari:8.3f} "
                  f"{errors['normal']:7.3f} {errors['bernoulli']:6.3f} "
                  f"{errors['categorical']:6.3f} {errors['poisson']:8.3f} {per_sweep:8.4f} "
                  f"{total:7.1f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
