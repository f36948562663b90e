"""Every refusal's advice lifts it, beyond the estimators' fits (issue 29).

The same table as ``tests/estimators/test_refusal_advice.py``, for the engines
an estimator's parameters reach (MILP, sparse trellis, exact split, energies),
the summaries and metrics, and the estimators' other methods: the refused
call, the memory the OS is made to report (``None``: the real one), the advice
the message must give, and the call that follows it literally.
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import pairwise_distances
from sklearn.preprocessing import StandardScaler

from sklearn_trellis import (CrossCat, DivisiveClustering, DPMixture, EntropyAgglomeration,
                             ExactCorrelationClustering, FastTIWD, InfiniteBiclustering,
                             TrellisHierarchical)
from sklearn_trellis._core import budget
from sklearn_trellis._core.validation import check_random_state
from sklearn_trellis.engines.divisive.exact_split import best_bipartition
from sklearn_trellis.engines.exact.binder import binder_point_estimate
from sklearn_trellis.engines.map.milp import (DEFAULT_MAX_MILP_ITEMS, HARD_MAX_MILP_ITEMS,
                                              correlation_clustering_map_milp,
                                              milp_memory_bytes)
from sklearn_trellis.metrics import make_pairwise_scorer
from sklearn_trellis.models import CallableEnergy, NormalInverseWishart
from sklearn_trellis.summaries import point_estimate
from sklearn_trellis.summaries.calibration import pairwise_from_proba, pairwise_log_loss
from sklearn_trellis.summaries.occurrence import pairwise_cooccurrence

RNG = np.random.RandomState(0)
X6, X8 = RNG.normal(size=(6, 2)), RNG.normal(size=(8, 2))
D8 = pairwise_distances(X8, metric="sqeuclidean")
COUNTS = RNG.randint(0, 50, size=(8, 3)).astype(float)   # distinct rows
BINARY = (RNG.rand(6, 5) > 0.5).astype(float)
MIXED = pd.DataFrame({"a": RNG.normal(size=8), "b": list("xyxyxyxy")})
W4 = np.array([[0.0, 1.0, -1.0, 0.5], [1.0, 0.0, -1.0, 0.5],
               [-1.0, -1.0, 0.0, -0.5], [0.5, 0.5, -0.5, 0.0]])
LABELS = RNG.randint(0, 3, size=(20, 30))          # 20 sampled partitions of 30 items
PROBA = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.5, 0.4, 0.1]])
P3 = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.3], [0.1, 0.3, 1.0]])


def balanced(X, left, right):
    return -abs(len(left) - len(right))


def _fitted(estimator, X):
    return estimator.fit(X)


REFUSALS = [  # (name, refused call, memory (bytes) or None, advice regex, the advised call)
    # -- the MILP: its own parameters at its own entry point
    ("milp-max-items", lambda: correlation_clustering_map_milp(np.zeros((11, 11)), max_items=10),
     None, r"Raise max_items", lambda: correlation_clustering_map_milp(np.zeros((11, 11)),
                                                                       max_items=11)),
    ("milp-memory", lambda: correlation_clustering_map_milp(W4), 20_000,
     r"Lower max_constraints", lambda: correlation_clustering_map_milp(W4, max_constraints=1)),
    # -- energies and engines reached through TrellisHierarchical's parameters
    ("callable-max-items-raise", lambda: TrellisHierarchical(
        energy=CallableEnergy(balanced, max_items=5), method="exact").fit(X6), None,
     r"raise max_items", lambda: TrellisHierarchical(
         energy=CallableEnergy(balanced, max_items=6), method="exact").fit(X6)),
    ("callable-max-items-sparse", lambda: TrellisHierarchical(
        energy=CallableEnergy(balanced, max_items=5), method="exact").fit(X6), None,
     r"Use a sparse trellis", lambda: TrellisHierarchical(
         energy=CallableEnergy(balanced, max_items=5), method="sparse").fit(X6)),
    ("exact-split-memory", lambda: best_bipartition(np.ones((12, 12)) - np.eye(12)), 50_000,
     r"Lower max_exact_size below 12",
     lambda: DivisiveClustering(method="exact", max_exact_size=11).fit(
         RNG.normal(size=(12, 2)))),
    # -- other methods of the estimators
    ("th-subtree-marginal-perturb", lambda: TrellisHierarchical(
        n_clusters=2, method="perturb_and_map", n_perturbations=2,
        random_state=0).fit(X6).subtree_marginal([0, 1]), None, r"use method='exact'",
     lambda: TrellisHierarchical(n_clusters=2, method="exact").fit(X6).subtree_marginal([0, 1])),
    ("scorer-no-predict-proba", lambda: make_pairwise_scorer(source="predict_proba")(
        _fitted(ExactCorrelationClustering(beta=1.0), X6), X6, [0, 0, 0, 1, 1, 1]), None,
     r"source='refit'", lambda: make_pairwise_scorer(source="refit")(
         _fitted(ExactCorrelationClustering(beta=1.0), X6), X6, [0, 0, 0, 1, 1, 1])),
    # -- summaries
    ("proba-columns", lambda: pairwise_from_proba(PROBA[:, :2]), None,
     r"Pass every column of predict_proba", lambda: pairwise_from_proba(PROBA)),
    ("comembership-memory", lambda: pairwise_from_proba(PROBA), 100, r"against reference_labels",
     lambda: pairwise_from_proba(PROBA, reference_labels=[0, 1, 0])),
    ("cooccurrence-memory", lambda: pairwise_cooccurrence(LABELS), 20_000,
     r"Summarise a subset of the elements", lambda: pairwise_cooccurrence(LABELS[:, :10])),
    ("binder-exact-size", lambda: binder_point_estimate(P3, max_items=2), None,
     r"Use sklearn_trellis\.summaries\.point_estimate",
     lambda: point_estimate(P3, "binder", random_state=0)),
    ("point-estimate-runs", lambda: point_estimate(P3, "binder", n_runs=0), None,
     r"needs samples", lambda: point_estimate(LABELS, "binder", n_runs=0)),
    ("point-estimate-vi-pairwise", lambda: point_estimate(P3, "vi"), None,
     r"needs the samples", lambda: point_estimate(LABELS, "vi", random_state=0)),
    ("label-vector", lambda: point_estimate(LABELS[0], "vi"), None, r"wrap it as \[labels\]",
     lambda: point_estimate([LABELS[0]], "vi", random_state=0)),
    # -- scales: the rescaling or the parameter the message names
    ("th-overflow-beta", lambda: TrellisHierarchical(beta=1e306).fit(X8 * 1e3), None,
     r"or lower beta", lambda: TrellisHierarchical(beta=1.0).fit(X8 * 1e3)),
    ("ecc-overflow-beta", lambda: ExactCorrelationClustering(beta=1e307).fit(X8), None,
     r"or lower beta", lambda: ExactCorrelationClustering(beta=1.0).fit(X8)),
    ("tiwd-overflow-features", lambda: FastTIWD(metric="sqeuclidean", n_sweeps=4).fit(
        X8 * 1e152), None, r"rescale X \(e\.g\. with sklearn\.preprocessing\.StandardScaler",
     lambda: FastTIWD(metric="sqeuclidean", n_sweeps=4).fit(
         StandardScaler().fit_transform(X8 * 1e152))),
    ("tiwd-overflow-distances", lambda: FastTIWD(n_sweeps=4).fit(D8 * 1e305), None,
     r"divide it by its largest entry",
     lambda: FastTIWD(n_sweeps=4).fit(D8 * 1e305 / (D8 * 1e305).max())),
    ("dp-count-total", lambda: DPMixture("multinomial", method="gibbs", n_sweeps=4).fit(
        COUNTS * 1e9), None, r"Divide the counts \(e\.g\. np\.round\(X / k\)\)",
     lambda: DPMixture("multinomial", method="gibbs", n_sweeps=4).fit(
         np.round(COUNTS * 1e9 / 1e9))),
    # -- declared types and nested models
    ("ib-inferred-cell-type", lambda: InfiniteBiclustering(
        method="gibbs", n_sweeps=4, random_state=0).fit(BINARY).score(BINARY + 0.5), None,
     r"declare it \(e\.g\. likelihood='normal'\)", lambda: InfiniteBiclustering(
         likelihood="normal", method="gibbs", n_sweeps=4, random_state=0).fit(BINARY).score(
         BINARY + 0.5)),
    ("crosscat-non-numeric", lambda: CrossCat(likelihood=["normal", "normal"],
                                              n_sweeps=2).fit(MIXED), None,
     r"declare it categorical", lambda: CrossCat(likelihood=["normal", "categorical"],
                                                 n_sweeps=2).fit(MIXED)),
    ("nested-set-params", lambda: DPMixture().set_params(likelihood__kappa=1.0), None,
     r"Pass a model instance \(e\.g\. likelihood=NormalInverseWishart\(\)\)",
     lambda: DPMixture(likelihood=NormalInverseWishart()).set_params(likelihood__kappa=1.0)),
    ("pairwise-shape", lambda: pairwise_log_loss([0, 1, 0], np.full((3, 2), 0.5)), None,
     r"pass y_reference", lambda: pairwise_log_loss([0, 1, 0], np.full((3, 2), 0.5),
                                                    y_reference=[0, 1])),
    ("samples-not-features", lambda: point_estimate(X8, "vi"), None,
     r"pass an int array \(T, n\) of label vectors",
     lambda: point_estimate(LABELS[:, :8], "vi", random_state=0)),
    # beta's posterior keeps the trellises that carry weight: refused past the memory
    ("ecc-beta-posterior-memory", lambda: ExactCorrelationClustering(beta="posterior").fit(X8),
     40_000, r"Give beta a value, or use beta='auto'",
     lambda: ExactCorrelationClustering(beta="auto").fit(X8)),
    # -- validation shared by every estimator
    ("random-state-generator", lambda: check_random_state(np.random.default_rng(0)), None,
     r"random_state=int\(rng\.integers\(2\*\*31\)\)",
     lambda: check_random_state(int(np.random.default_rng(0).integers(2**31)))),
]


@pytest.mark.parametrize("name, refused, memory, advice, lifted", REFUSALS,
                         ids=[row[0] for row in REFUSALS])
def test_every_refusal_names_a_parameter_that_lifts_it(monkeypatch, name, refused, memory,
                                                       advice, lifted):
    if memory is not None:
        monkeypatch.setattr(budget, "available_memory_bytes", lambda: memory)
    with pytest.raises((ValueError, TypeError)) as refusal:
        refused()
    assert re.search(advice, str(refusal.value)), str(refusal.value)
    lifted()


def test_the_milp_needs_only_the_cuts_there_are():
    """3 triangle cuts per triple at most: N=30 needs tens of MB, not the 2 GB of 10**6
    cuts (an ExactCorrelationClustering(method='milp') of 30 items was refused below
    2.5 GB of free memory)."""
    n = 30
    cuts = 3 * (n * (n - 1) * (n - 2) // 6)
    assert milp_memory_bytes(n) == milp_memory_bytes(n, cuts) < 30 << 20
    assert milp_memory_bytes(n, 10) < milp_memory_bytes(n)
    assert milp_memory_bytes(1000) == milp_memory_bytes(1000, 10 ** 6)   # the cap binds
    assert DEFAULT_MAX_MILP_ITEMS < HARD_MAX_MILP_ITEMS


def test_max_states_is_advised_only_when_it_is_the_limit(monkeypatch):
    """A states budget set by the memory is not lifted by raising max_states."""
    from sklearn_trellis._core.family import ClusterFamily
    from sklearn_trellis.engines.sparse.sparse_flat import SparseFlatTrellis

    n = 12
    clusters = [[i, j] for i in range(n) for j in range(i + 1, n)]
    family = ClusterFamily.from_clusters(clusters, n)
    table = np.zeros(family.n_vertices)
    with pytest.raises(ValueError, match=r"limit set by max_states\. .*raise max_states"):
        SparseFlatTrellis(family, table, max_states=10).fit()
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 3_000)
    with pytest.raises(ValueError, match=r"limit set by the memory available") as refusal:
        SparseFlatTrellis(family, table).fit()
    assert "max_states" not in str(refusal.value).split("the limit set by")[1]


def test_fast_tiwd_score_warning_names_the_dof_that_lifts_it():
    X = RNG.normal(size=(6, 8))
    fitted = FastTIWD(metric="sqeuclidean", normalization="none", n_sweeps=4,
                      random_state=0, dof=2.0).fit(X)
    X_new = RNG.normal(size=(3, 8))
    with pytest.warns(UserWarning, match=r"score dof values above it") as record:
        assert fitted.score(X_new) == -np.inf
    rank = int(re.search(r"rank (\d+)", str(record[0].message)).group(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        above = FastTIWD(metric="sqeuclidean", normalization="none", n_sweeps=4,
                         random_state=0, dof=rank + 1.0).fit(X)
        assert np.isfinite(above.score(X_new))


def test_the_scorer_advises_refit_only_where_it_lifts():
    """Without predict_proba and pairwise_marginals_, source='refit' fails too: not advised
    (it was, for DivisiveClustering)."""
    fitted = DivisiveClustering(n_clusters=2).fit(X6)
    for source in ("predict_proba", "refit"):
        with pytest.raises(TypeError, match="neither predict_proba nor pairwise_marginals_"):
            make_pairwise_scorer(source=source)(fitted, X6, [0, 0, 0, 1, 1, 1])


def test_entropy_agglomeration_refusal_is_before_any_table(monkeypatch):
    from sklearn_trellis.summaries import agglomeration
    monkeypatch.setattr(agglomeration, "MAX_AGGLOMERATION_BYTES", 5000)
    with pytest.raises(ValueError, match="Use fewer elements"):
        EntropyAgglomeration().fit(LABELS)
    EntropyAgglomeration().fit(LABELS[:, :4])


@pytest.mark.parametrize("cap, energy, advice", [
    ("max_python_edges", CallableEnergy(balanced), r"lower window_size, use a built-in energy"),
    ("max_edges", "dasgupta", r"lower window_size"),
])
def test_sparse_trellis_caps_advise_the_estimators_parameters(monkeypatch, cap, energy,
                                                              advice):
    """The engine's max_edges / max_python_edges are no TrellisHierarchical parameters:
    its refusal names window_size (it said 'raise max_python_edges'). The caps are
    lowered here so that 60 items reach them (N=1000 reaches the default 200,000)."""
    from sklearn_trellis.engines import planner
    trellis = planner.SparseHierarchicalTrellis
    build = trellis.from_model.__func__
    monkeypatch.setattr(trellis, "from_model", classmethod(
        lambda cls, *args, **kwargs: build(cls, *args, **{**kwargs, cap: 1500})))
    X = RNG.normal(size=(60, 2))
    with pytest.raises(ValueError, match=advice) as refusal:
        TrellisHierarchical(energy=energy, method="sparse").fit(X)
    assert cap not in str(refusal.value)
    TrellisHierarchical(energy=energy, method="sparse", window_size=1).fit(X)


def test_the_milp_and_the_sparse_flat_trellis_read_the_memory_through_the_budget(monkeypatch):
    """One mechanism: the MILP refuses through budget.check_memory and the sparse flat
    trellis caps its states through budget.memory_cap (each read the OS memory and
    worded its message itself); the messages keep their numbers and advice."""
    from sklearn_trellis._core.family import ClusterFamily
    from sklearn_trellis.engines.sparse.sparse_flat import SparseFlatTrellis
    calls = []
    check, cap = budget.check_memory, budget.memory_cap
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 3_000)
    monkeypatch.setattr(budget, "check_memory",
                        lambda *args, **kwargs: calls.append("check") or check(*args, **kwargs))
    monkeypatch.setattr(budget, "memory_cap",
                        lambda *args, **kwargs: calls.append("cap") or cap(*args, **kwargs))
    with pytest.raises(ValueError, match=r"Not enough memory: the MILP over N=4 items \(6 pair "
                                         r"variables and up to 12 triangle cuts\) needs about "
                                         r"[\d.]+ KiB, but only 2.93 KiB is available\. "
                                         r"Lower max_constraints"):
        correlation_clustering_map_milp(W4)
    assert calls == ["check"]
    n = 12
    family = ClusterFamily.from_clusters([[i, j] for i in range(n) for j in range(i + 1, n)], n)
    with pytest.raises(ValueError, match=r"limit set by the memory available \(2.93 KiB\)"):
        SparseFlatTrellis(family, np.zeros(family.n_vertices)).fit()
    assert calls[1:3] == ["cap", "cap"]
