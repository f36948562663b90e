"""``verbose``: every stage line and the throttled progress lines of long stages (issue 29).

A fake clock (``ticking_progress`` in conftest.py) advances a few seconds at every
reading, so the throttled progress lines of the shared reporter
(:class:`~sklearn_trellis._core.progress.Progress`) show up in a small fit; the
lines are then checked for their stages, their order and their spacing.
"""

import re

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from sklearn_trellis import (BayesianHierarchicalClustering, DivisiveClustering,
                             EntropyAgglomeration, ExactCorrelationClustering)
from sklearn_trellis._core.progress import DEFAULT_INTERVAL

STEP = 3.0   # fake seconds per clock reading
LINE = re.compile(r"^\[(?P<name>[^\]]+)\] (?P<message>.*) \((?P<seconds>[0-9.]+) s\)$")


def lines_of(out, name):
    """``(message, seconds)`` of every line printed by the reporter ``name``."""
    found = [LINE.match(line) for line in out.splitlines()]
    return [(m["message"], float(m["seconds"])) for m in found if m and m["name"] == name]


def check_lines(lines, stages, progress):
    """The stages appear in this order; a progress line ``done[/total] what`` for each
    ``what`` of ``progress``; a progress line never follows the previous line sooner
    than the interval allows, and the clock never goes back."""
    messages = [message for message, _ in lines]
    positions = [next(k for k, m in enumerate(messages) if m.startswith(stage))
                 for stage in stages]
    assert positions == sorted(positions), messages
    update = re.compile(r": [0-9,]+(/[0-9,]+)? (" + "|".join(map(re.escape, progress)) + ")")
    is_update = [bool(progress) and update.search(m) is not None for m in messages]
    for what in progress:
        assert any(f" {what}" in m for m, u in zip(messages, is_update) if u), (what, messages)
    for (_, then), (_, now), later_is_update in zip(lines, lines[1:], is_update[1:]):
        assert now >= then + (DEFAULT_INTERVAL if later_is_update else 0.0), messages


def blobs(n, seed):
    return make_blobs(n, 2, centers=[[0, 0], [4, 0], [0, 4]], cluster_std=0.6,
                      random_state=seed)[0]


def test_exact_correlation_clustering_reports_empirical_bayes_and_the_exact_pass(
        ticking_progress, capsys):
    ticking_progress(STEP)
    ExactCorrelationClustering(beta="auto", verbose=1).fit(blobs(9, 0))
    lines = lines_of(capsys.readouterr().out, "ExactCorrelationClustering")
    check_lines(lines, ["(9, 9) affinities", "empirical Bayes beta", "empirical Bayes: beta=",
                        "exact flat trellis (511 subsets"],
                progress=["trellis fits", "items ("])


def test_exact_correlation_clustering_reports_the_milp_and_the_perturbations(
        ticking_progress, capsys):
    ticking_progress(STEP)
    X = blobs(9, 1)
    ExactCorrelationClustering(beta=1.0, method="milp", verbose=1).fit(X)
    lines = lines_of(capsys.readouterr().out, "ExactCorrelationClustering")
    check_lines(lines, ["exact flat trellis", "MAP by integer programming",
                        "MILP: "], progress=[])
    ExactCorrelationClustering(beta=5.0, method="perturb_and_map", n_perturbations=30,
                               random_state=0, verbose=1).fit(X)
    lines = lines_of(capsys.readouterr().out, "ExactCorrelationClustering")
    check_lines(lines, ["exact flat trellis", "perturb-and-MAP (30 perturbed MAPs)"],
                progress=["perturbed MAPs"])


def test_sparse_correlation_clustering_names_its_stage(ticking_progress, capsys):
    ticking_progress(STEP)
    ExactCorrelationClustering(beta=1.0, method="sparse", seed_linkages=["average"],
                               verbose=1).fit(blobs(12, 2))
    lines = lines_of(capsys.readouterr().out, "ExactCorrelationClustering")
    check_lines(lines, ["(12, 12) affinities", "sparse flat trellis over seed trees (average)"],
                progress=[])


def test_bhc_reports_the_hyperparameter_rounds_and_the_randomized_tree(
        ticking_progress, capsys):
    ticking_progress(STEP)
    X = blobs(60, 3)
    BayesianHierarchicalClustering(method="randomized", subsample_size=10, random_state=0,
                                   family="average", verbose=1).fit(X)
    lines = lines_of(capsys.readouterr().out, "BayesianHierarchicalClustering")
    check_lines(lines, ["hyperparameters by the evidence of greedy binary trees",
                        "randomized binary tree of 60 items", "node posteriors",
                        "family bound"],
                progress=["grid points of round 1", "items in finished subtrees"])
    BayesianHierarchicalClustering(verbose=1).fit(X[:12])
    lines = lines_of(capsys.readouterr().out, "BayesianHierarchicalClustering")
    check_lines(lines, ["hyperparameters", "greedy binary tree of 12 items", "node posteriors",
                        "exact DP-mixture evidence"], progress=[])


@pytest.mark.parametrize("method", ["kmedoids", "exact", "diana"])
def test_divisive_clustering_reports_its_splits(ticking_progress, capsys, method):
    ticking_progress(STEP)
    DivisiveClustering(method=method, max_exact_size=8, verbose=1).fit(blobs(40, 4))
    lines = lines_of(capsys.readouterr().out, "DivisiveClustering")
    check_lines(lines, ["(40, 40) dissimilarities", f"{method} splits of 40 items"],
                progress=["splits"])


def test_entropy_agglomeration_names_its_stages(ticking_progress, capsys):
    ticking_progress(STEP)
    samples = np.random.default_rng(0).integers(0, 3, size=(20, 15))
    EntropyAgglomeration(verbose=1).fit(samples)
    lines = lines_of(capsys.readouterr().out, "EntropyAgglomeration")
    check_lines(lines, ["reading the samples",
                        "agglomeration of 15 elements over 20 samples"], progress=[])


@pytest.mark.parametrize("estimator, X", [
    (ExactCorrelationClustering(), blobs(8, 5)),
    (BayesianHierarchicalClustering(), blobs(12, 5)),
    (DivisiveClustering(method="kmedoids"), blobs(12, 5)),
    (EntropyAgglomeration(), np.zeros((3, 5), dtype=int)),
])
def test_silent_by_default(ticking_progress, capsys, estimator, X):
    ticking_progress(60.0)   # every update would be due
    estimator.fit(X)
    assert capsys.readouterr().out == ""
