"""The trellis planners: which engine for which sizes and options, refusals before allocating."""

import tracemalloc

import numpy as np
import pytest
from scipy import sparse
from sklearn.neighbors import kneighbors_graph

from sklearn_trellis._core import budget
from sklearn_trellis._core.budget import HARD_MAX_ITEMS
from sklearn_trellis.engines import planner
from sklearn_trellis.engines.planner import (MAX_POWERSET_PERTURB_ITEMS, MAX_WINDOW_SPLITS,
                                             connected_family, lowered_window_size,
                                             plan_flat, plan_hierarchical)
from sklearn_trellis.models import CallableEnergy, CorrelationClusteringModel, DasguptaEnergy


def blobs(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0, 1, (n // 2, 2)), rng.normal(5, 1, (n - n // 2, 2))])


def distances(X):
    return np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))


def chain_graph(n):
    return sparse.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")


# -- hierarchical: which engine ------------------------------------------------------
@pytest.mark.parametrize("n, method, options, engine", [
    (10, "auto", {}, "exact"),
    (16, "auto", {}, "exact"),
    (17, "auto", {}, "sparse"),
    (12, "auto", {"max_exact_size": 8}, "sparse"),
    (20, "exact", {}, "exact"),            # max_exact_size guides 'auto' only
    (5, "sparse", {}, "sparse"),
    (10, "auto", {"connectivity": chain_graph(10)}, "connected"),
    (20, "auto", {"connectivity": chain_graph(20)}, "sparse"),
    (20, "exact", {"connectivity": chain_graph(20)}, "connected"),
    (MAX_POWERSET_PERTURB_ITEMS, "perturb_and_map", {}, "powerset"),
    (MAX_POWERSET_PERTURB_ITEMS + 1, "perturb_and_map", {}, "sparse"),
    (10, "perturb_and_map", {"max_exact_size": 8}, "sparse"),
    (10, "perturb_and_map", {"connectivity": chain_graph(10)}, "connected"),
])
def test_hierarchical_engine_for_sizes_and_options(n, method, options, engine):
    plan = plan_hierarchical(n, DasguptaEnergy(), method=method, **options)
    assert plan.engine == engine and plan.n_items == n
    assert plan.needs_seeds == (engine == "sparse")
    assert plan.n_perturbations == (100 if method == "perturb_and_map" else 0)
    assert plan.window_size == (8 if engine == "sparse" else 0)
    assert plan.n_beam_trees == (0 if "connectivity" in options else 8)


def test_python_split_models_cap_the_exact_size():
    model = CallableEnergy(lambda X, left, right: 0.0, max_items=12)
    assert plan_hierarchical(12, model).engine == "exact"
    assert plan_hierarchical(13, model).engine == "sparse"
    assert plan_hierarchical(13, model, method="exact").engine == "exact"


def test_windows_are_lowered_for_large_n():
    assert lowered_window_size(8, 30) == 8
    for n in (100_000, 1_000_000):
        size = lowered_window_size(8, n)
        assert 3 <= size < 8
        assert n / (size - 1) * 3 ** size / 2 <= MAX_WINDOW_SPLITS or size == 3
        assert n / size * 3 ** (size + 1) / 2 > MAX_WINDOW_SPLITS   # the largest that fits
    assert plan_hierarchical(100_000, DasguptaEnergy()).window_size == lowered_window_size(
        8, 100_000)
    assert lowered_window_size(2, 10 ** 9) == 2   # 0-2 disable the windows: kept


# -- hierarchical: refusals before allocating, with advice ---------------------------
def test_exact_refusals_come_from_the_plan_before_any_allocation(monkeypatch):
    with pytest.raises(ValueError, match=rf"above the exact limit of {HARD_MAX_ITEMS}.*"
                                         r"max_exact_size"):
        plan_hierarchical(HARD_MAX_ITEMS + 1, DasguptaEnergy(), method="exact")
    with pytest.raises(ValueError, match=rf"above the exact limit of {HARD_MAX_ITEMS}"):
        plan_hierarchical(HARD_MAX_ITEMS + 1, DasguptaEnergy(), method="exact",
                          connectivity=chain_graph(HARD_MAX_ITEMS + 1))
    with pytest.raises(ValueError, match=rf"above the exact limit of {HARD_MAX_ITEMS}"):
        plan_hierarchical(HARD_MAX_ITEMS + 1, DasguptaEnergy(), max_exact_size=40)
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="Not enough memory: an exact hierarchical"):
            plan_hierarchical(24, DasguptaEnergy(), method="exact")
        with pytest.raises(ValueError, match="Not enough memory: an enumeration of the "
                                             "connected subsets"):
            plan_hierarchical(24, DasguptaEnergy(), method="exact",
                              connectivity=chain_graph(24))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_connected_family_refusal_names_the_parameters(monkeypatch):
    graph = kneighbors_graph(np.random.default_rng(0).normal(size=(12, 2)), 5)
    assert connected_family(graph, 12).n_items == 12
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 50_000)
    with pytest.raises(ValueError, match=r"Not enough memory: the trellis over the .* "
                                         r"connected subsets.*To go on: use method='sparse' "
                                         r"or a sparser connectivity graph\."):
        connected_family(graph, 12)


def test_sparse_trellis_refusal_names_the_parameters(monkeypatch):
    X = blobs(60)
    plan = plan_hierarchical(60, DasguptaEnergy())
    trees = plan.seed_trees(["average", "single"], X, distances(X))
    model = DasguptaEnergy().fit(distances(X))
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 50_000)
    with pytest.raises(ValueError, match=r"Not enough memory.*To go on: lower window_size, "
                                         r"use fewer seed_linkages or fewer samples\."):
        plan.run(model, seed_trees=trees)


# -- hierarchical: run and notes -----------------------------------------------------
def test_exact_run_is_exact_and_has_no_note():
    X = blobs(8)
    model = DasguptaEnergy().fit(distances(X))
    plan = plan_hierarchical(8, model)
    assert plan.seed_trees(["average"], X, distances(X)) == []
    found = plan.run(model)
    assert found.map_is_exact and found.notes == [] and found.approximation is None
    assert found.n_trellis_vertices == 2 ** 8 - 1 and found.row_keys is None
    assert found.map_children.shape == (7, 2)
    assert model.log_potential(found.map_tree) == pytest.approx(found.map_log_potential)


def test_sparse_run_notes_what_is_not_exact():
    X = blobs(24)
    model = DasguptaEnergy().fit(distances(X))
    plan = plan_hierarchical(24, model, window_size=0, n_beam_trees=0)
    trees = plan.seed_trees(["average", "single", "ward"], X, distances(X))
    assert len(trees) == 3
    found = plan.run(model, seed_trees=trees)
    assert not found.map_is_exact and found.perturbed_marginals is None
    assert found.approximation == found.notes[0]
    assert found.notes[0].startswith("sparse trellis over the clusters of 3 seed trees (")
    assert "log Z is a lower bound" in found.notes[0]
    assert found.row_keys.shape == (23,)
    # the family holds every seed tree: the MAP is never worse than any of them
    exact_best = plan_hierarchical(24, model, method="sparse", window_size=4,
                                   n_beam_trees=0).run(model, seed_trees=trees)
    assert exact_best.map_log_potential >= found.map_log_potential - 1e-9
    assert "all unions of 4 neighbouring clusters" in exact_best.notes[0]


def test_perturb_and_map_run_notes_its_marginals():
    X = blobs(8)
    model = DasguptaEnergy().fit(distances(X))
    found = plan_hierarchical(8, model, method="perturb_and_map", n_perturbations=5).run(
        model, random_state=0)
    assert found.map_is_exact and found.perturbed_marginals is not None
    assert found.approximation == ("cluster marginals estimated by perturb-and-MAP (5 "
                                   "Gumbel-perturbed MAP trees over the full trellis)")


# -- flat ----------------------------------------------------------------------------
@pytest.mark.parametrize("n, method, exact, milp, perturbations", [
    (10, "auto", True, False, 0),
    (21, "auto", False, False, 0),
    (10, "sparse", False, False, 0),
    (10, "milp", True, True, 0),
    (30, "milp", False, True, 0),
    (10, "perturb_and_map", True, False, 100),
    (30, "perturb_and_map", False, True, 100),
])
def test_flat_engines_for_sizes_and_options(n, method, exact, milp, perturbations):
    plan = plan_flat(n, method=method)
    assert (plan.exact, plan.milp, plan.n_perturbations) == (exact, milp, perturbations)


def test_flat_exact_refusals_come_from_the_plan(monkeypatch):
    with pytest.raises(ValueError, match="N=21 is above the exact limit of 20"):
        plan_flat(21, method="exact")
    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 1 << 20)
    with pytest.raises(ValueError, match="Not enough memory: an exact flat trellis"):
        plan_flat(20)
    assert not plan_flat(20, method="sparse").exact   # nothing exact to refuse


def correlation_model(n, seed=0):
    d = distances(blobs(n, seed))
    w = np.exp(-d) - np.exp(-d).mean()
    np.fill_diagonal(w, 0.0)
    return CorrelationClusteringModel(beta=1.0).fit(w), w


def test_flat_exact_run():
    model, w = correlation_model(8)
    found = plan_flat(8).run(model, w)
    assert found.map_is_exact and found.map_gap == 0.0 and found.approximation is None
    assert found.n_trellis_vertices == 2 ** 8 - 1
    assert found.pairwise_marginals.shape == (8, 8)   # cheap when exact: computed
    assert model.log_potential(found.labels) == pytest.approx(found.map_log_potential)


def test_flat_sparse_run_notes_its_seed_trees():
    model, w = correlation_model(24)
    found = plan_flat(24).run(model, w, seed_linkages=["average", "single"])
    assert not found.map_is_exact and found.map_gap is None
    assert found.pairwise_marginals is None           # left to the first access
    assert found.notes[0].startswith("sparse trellis over the clusters of the ")
    assert "exact over the clusterings made of these clusters" in found.notes[0]
    assert model.log_potential(found.labels) == pytest.approx(found.map_log_potential)


def test_flat_milp_run_certifies_the_map():
    model, w = correlation_model(24)
    found = plan_flat(24, method="milp").run(model, w, seed_linkages=["average"])
    assert found.map_is_exact and found.map_gap == 0.0
    assert found.notes[-1] == "MAP certified optimal by integer programming"
    assert model.log_potential(found.labels) == pytest.approx(found.map_log_potential)
    # an exact trellis already certifies its MAP: no note
    assert plan_flat(8, method="milp").run(*correlation_model(8)).notes == []


def test_flat_perturb_and_map_run():
    model, w = correlation_model(8)
    found = plan_flat(8, method="perturb_and_map", n_perturbations=5).run(
        model, w, random_state=0)
    assert found.perturbed_maps.shape == (5, 8)
    assert found.approximation.startswith("pairwise_marginals_ estimated by perturb-and-MAP "
                                          "from 5 Gumbel-perturbed MAP clusterings (")


def test_approximation_joins_the_notes():
    assert planner.approximation([]) is None
    assert planner.approximation(["a", "b"]) == "a; b"


def test_a_hierarchical_plan_names_a_known_engine():
    for engine in planner.HIERARCHICAL_ENGINES:
        assert planner.HierarchicalPlan(engine, 5).engine == engine
    with pytest.raises(ValueError, match="Unknown hierarchical engine 'greedy'"):
        planner.HierarchicalPlan("greedy", 5)


# -- every refusal's advice names a parameter that lifts it ----------------------------
N_OVER = HARD_MAX_ITEMS + 2
REFUSALS = [  # (refused plan, memory patched, advice it must give, the plan that advice allows)
    (lambda: plan_hierarchical(N_OVER, DasguptaEnergy(), method="exact"), False,
     r"method='sparse'", lambda: plan_hierarchical(N_OVER, DasguptaEnergy(), method="sparse")),
    (lambda: plan_hierarchical(N_OVER, DasguptaEnergy(), method="exact"), False,
     r"method='auto'", lambda: plan_hierarchical(N_OVER, DasguptaEnergy(), method="auto")),
    (lambda: plan_hierarchical(N_OVER, DasguptaEnergy(), max_exact_size=40), False,
     rf"lower max_exact_size below {N_OVER}",
     lambda: plan_hierarchical(N_OVER, DasguptaEnergy(), max_exact_size=N_OVER - 1)),
    (lambda: plan_hierarchical(24, DasguptaEnergy(), method="exact"), True,
     r"method='sparse'", lambda: plan_hierarchical(24, DasguptaEnergy(), method="sparse")),
    (lambda: plan_hierarchical(20, DasguptaEnergy(), max_exact_size=20), True,
     r"lower max_exact_size below 20",
     lambda: plan_hierarchical(20, DasguptaEnergy(), max_exact_size=19)),
    (lambda: plan_flat(22, method="exact"), False, r"raise max_exact_size to 22",
     lambda: plan_flat(22, method="exact", max_exact_size=22)),
    (lambda: plan_flat(N_OVER, method="exact", max_exact_size=40), False, r"method='sparse'",
     lambda: plan_flat(N_OVER, method="sparse", max_exact_size=40)),
    (lambda: plan_flat(N_OVER, method="milp", max_exact_size=40), False,
     rf"lower max_exact_size below {N_OVER}",
     lambda: plan_flat(N_OVER, method="milp", max_exact_size=N_OVER - 1)),
    (lambda: plan_flat(20), True, r"lower max_exact_size below 20",
     lambda: plan_flat(20, max_exact_size=19)),
]


@pytest.mark.parametrize("refused, low_memory, advice, lifted", REFUSALS,
                         ids=[f"{i}-{advice}" for i, (_, _, advice, _) in enumerate(REFUSALS)])
def test_every_refusal_names_a_parameter_that_lifts_it(monkeypatch, refused, low_memory,
                                                       advice, lifted):
    if low_memory:
        monkeypatch.setattr(budget, "available_memory_bytes", lambda: 1 << 20)
    with pytest.raises(ValueError, match=advice) as refusal:
        refused()
    # Only what lifts it: max_exact_size does not limit an explicit hierarchical 'exact'.
    assert "raise the limit" not in str(refusal.value)
    lifted()  # following the advice is not refused
