"""Regenerate ``tests/data/diana_reference.json`` from R's ``cluster::diana``.

Needs R with the ``cluster`` package (Debian: ``apt-get install r-base-core
r-cran-cluster``). Run from the repository root::

    python tests/data/make_diana_reference.py

The datasets are built here (numpy and scikit-learn), handed to
``make_diana_reference.R`` as hexadecimal floats (exact), and stored in the
JSON with R's results, so the tests rebuild every input from the JSON alone.
"""

import json
import os
import subprocess
import tempfile

import numpy as np
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

HERE = os.path.dirname(os.path.abspath(__file__))


def datasets():
    rng = np.random.default_rng(20261123)
    out = {}
    out["iris"] = ("data", "euclidean", load_iris().data)
    out["wine_standardised"] = ("data", "euclidean",
                                StandardScaler().fit_transform(load_wine().data))
    out["integer_ties"] = ("data", "euclidean",
                           rng.integers(0, 4, size=(60, 3)).astype(float))
    upper = np.triu(rng.integers(1, 6, size=(40, 40)).astype(float), 1)
    out["precomputed_ties"] = ("dissimilarity", "precomputed", upper + upper.T)
    out["manhattan"] = ("data", "manhattan", np.round(rng.normal(size=(70, 4)), 1))
    out["binary_manhattan"] = ("data", "manhattan",
                               rng.integers(0, 2, size=(80, 6)).astype(float))
    out["continuous_300"] = ("data", "euclidean", rng.normal(size=(300, 5)))
    missing = rng.normal(size=(50, 5))
    missing[rng.random(missing.shape) < 0.12] = np.nan
    present = (~np.isnan(missing)).astype(int)
    assert (present @ present.T).min() > 0  # every pair shares a feature (R needs it)
    out["missing_euclidean"] = ("data", "euclidean", missing)
    out["missing_manhattan"] = ("data", "manhattan", missing)
    return out


def hex_token(value):
    return "NA" if np.isnan(value) else float(value).hex()


def main():
    data = datasets()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (kind, metric, x) in data.items():
            with open(os.path.join(tmp, f"{name}.txt"), "w") as handle:
                handle.write(f"{kind} {metric} {x.shape[0]} {x.shape[1]}\n")
                for row in x:
                    handle.write(" ".join(hex_token(v) for v in row) + "\n")
        subprocess.run(["Rscript", os.path.join(HERE, "make_diana_reference.R"), tmp, tmp],
                       check=True)
        reference = {}
        for name, (kind, metric, x) in data.items():
            fields = {}
            with open(os.path.join(tmp, f"{name}.out")) as handle:
                for line in handle:
                    key, _, value = line.strip().partition(" ")
                    fields.setdefault(key, []).append(value)
            reference[name] = {
                "kind": kind,
                "metric": metric,
                "x": [[None if np.isnan(v) else float(v) for v in row] for row in x],
                "merge": [[int(v) for v in row.split(",")] for row in fields["merge"]],
                "order": [int(v) for v in fields["order"][0].split(",")],
                "height": [float.fromhex(v) for v in fields["height"][0].split(",")],
                "dc": float.fromhex(fields["dc"][0]),
                "r_cluster_version": fields["version"][0],
            }
    with open(os.path.join(HERE, "diana_reference.json"), "w") as handle:
        json.dump(reference, handle)
    print("wrote", ", ".join(f"{k} (n={len(v['x'])})" for k, v in reference.items()))


if __name__ == "__main__":
    main()
