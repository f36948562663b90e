"""TrellisHierarchical beyond the exact limit: sparse trellis, perturb-and-MAP, attributes."""

import math
import re

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs

from oracles import canonical_tree
from sklearn_examples import plot_dendrogram
from sklearn_trellis import TrellisHierarchical
from sklearn_trellis._core.trees import children_to_tree
from sklearn_trellis.engines.exact.hierarchical import double_factorial_trees
from sklearn_trellis.models import DasguptaEnergy


def blobs(n, seed=0):
    X, _ = make_blobs(n_samples=n, centers=3, n_features=3, random_state=seed)
    return X


@pytest.mark.parametrize("energy", ["dasgupta", "hcc"])
def test_auto_switches_to_sparse_and_says_so(energy):
    X = blobs(40)
    est = TrellisHierarchical(n_clusters=3, energy=energy, compute_distances=True).fit(X)
    assert est.map_is_exact_ is False
    assert "sparse trellis" in est.approximation_ and "lower bound" in est.approximation_
    assert est.children_.shape == (39, 2) and est.distances_.shape == (39,)
    assert np.all(np.diff(est.distances_) >= 0)
    assert 1 <= est.n_trees_ <= double_factorial_trees(40)
    assert est.log10_sparsity_index_ == pytest.approx(
        math.log10(est.n_trees_) - math.log10(double_factorial_trees(40)))
    # the MAP tree is the children_ tree, and no linkage tree beats it
    tree = children_to_tree(est.children_, 40)
    assert est.log_potential(tree) == pytest.approx(est.map_log_potential_, rel=1e-9)
    assert est.log_potential(est.map_tree_) == pytest.approx(est.map_log_potential_, rel=1e-9)
    for linkage in ("single", "average", "complete", "ward"):
        baseline = TrellisHierarchical(energy=energy, linkage=linkage).fit(X).linkage_tree()
        assert est.map_log_potential_ >= baseline[1] - 1e-9 * abs(baseline[1])
    assert est.log_partition_function_ >= est.map_log_potential_
    assert len(np.unique(est.labels_)) == 3


def test_exact_below_the_limit_reports_exactness():
    X = blobs(8)
    est = TrellisHierarchical().fit(X)
    assert est.approximation_ is None and est.map_is_exact_ is True
    assert est.n_trellis_vertices_ == 2 ** 8 - 1
    assert est.log10_sparsity_index_ == 0.0
    # max_exact_size guides 'auto' only: an explicit 'exact' runs while it fits
    # (the sparse trellis then runs: windows of 5 leave subsets out of its family)
    assert TrellisHierarchical(max_exact_size=6, window_size=5).fit(X).map_is_exact_ is False
    forced = TrellisHierarchical(method="exact", max_exact_size=6).fit(X)
    assert forced.map_is_exact_ is True and forced.n_trellis_vertices_ == 2 ** 8 - 1
    with pytest.raises(ValueError, match="exact limit"):
        TrellisHierarchical(method="exact", max_exact_size=6).fit(blobs(29))


def test_sparse_on_small_data_is_bounded_by_exact():
    X = blobs(9, seed=3)
    exact = TrellisHierarchical(method="exact").fit(X)
    sparse = TrellisHierarchical(method="sparse", n_beam_trees=0).fit(X)
    assert sparse.log_partition_function_ <= exact.log_partition_function_ + 1e-9
    assert sparse.map_log_potential_ <= exact.map_log_potential_ + 1e-9
    assert sparse.n_trees_ <= exact.n_trees_
    with_beam = TrellisHierarchical(method="sparse", n_beam_trees=8).fit(X)
    assert with_beam.map_log_potential_ >= sparse.map_log_potential_ - 1e-9
    assert with_beam.n_trellis_vertices_ >= sparse.n_trellis_vertices_
    # cluster marginals within the family sum to the expected number of nodes
    family = sparse._trellis.family
    total = sum(sparse.cluster_marginal(family.members(v)) for v in range(family.n_vertices))
    assert total == pytest.approx(2 * 9 - 1)
    samples = sparse.sample_trees(5, random_state=0)
    assert all(sparse.log_potential(t) > -np.inf for t in samples)


def test_perturb_and_map_uses_full_trellis_on_small_data():
    X = blobs(7, seed=1)
    exact = TrellisHierarchical(method="exact").fit(X)
    pam = TrellisHierarchical(method="perturb_and_map", n_perturbations=50,
                              random_state=0).fit(X)
    assert pam.log_partition_function_ == pytest.approx(exact.log_partition_function_)
    assert pam.map_log_potential_ == pytest.approx(exact.map_log_potential_)
    assert pam.map_is_exact_ is True and "perturb-and-MAP" in pam.approximation_
    assert 0.0 <= pam.cluster_marginal([0, 1]) <= 1.0
    again = TrellisHierarchical(method="perturb_and_map", n_perturbations=50,
                                random_state=0).fit(X)
    assert again.cluster_marginal([0, 1]) == pam.cluster_marginal([0, 1])
    with pytest.raises(ValueError, match="perturb_and_map"):
        pam.subtree_marginal((0, 1))


def test_sparse_subtree_marginal_matches_exact_on_powerset_family():
    X = blobs(6, seed=2)
    exact = TrellisHierarchical(method="exact").fit(X)
    pam = TrellisHierarchical(method="perturb_and_map", n_perturbations=1).fit(X)
    for sub in [(0, 1), ((0, 1), 2), (3, (4, 5)), exact.map_tree_[0]]:
        assert pam._trellis.subtree_marginal(sub) == pytest.approx(
            exact.subtree_marginal(sub), abs=1e-12)


def test_parameter_errors():
    X = blobs(20)
    with pytest.raises(ValueError, match="linkage"):
        TrellisHierarchical(linkage="median").fit(X)
    with pytest.raises(ValueError, match="linkage"):
        TrellisHierarchical(linkage=[]).fit(X)
    with pytest.raises(ValueError, match="seed_linkages"):
        TrellisHierarchical(seed_linkages="median").fit(X)
    with pytest.raises(ValueError, match="linkage"):
        TrellisHierarchical(seed_linkages=[]).fit(X)
    with pytest.raises(ValueError, match="Ward can only work with euclidean"):
        TrellisHierarchical(linkage="ward", metric="manhattan").fit(X)
    with pytest.raises(ValueError, match="ward"):
        TrellisHierarchical(seed_linkages="ward", linkage="average",
                            metric="manhattan").fit(X)
    with pytest.raises(ValueError, match="method"):
        TrellisHierarchical(method="milp").fit(X)
    with pytest.raises(ValueError, match="n_beam_trees"):
        TrellisHierarchical(n_beam_trees=-1).fit(X)
    with pytest.raises(ValueError, match="n_perturbations"):
        TrellisHierarchical(n_perturbations=0).fit(X)
    est = TrellisHierarchical(seed_linkages=["single", "average"], metric="manhattan",
                              linkage="average", n_beam_trees=0).fit(X)
    assert est.approximation_.startswith("sparse trellis over the clusters of 2 seed trees")
    est = TrellisHierarchical(seed_linkages="all", metric="manhattan", linkage="single",
                              n_beam_trees=3).fit(X)
    assert "of 6 seed trees" in est.approximation_        # no Ward without euclidean
    big = TrellisHierarchical().fit(blobs(25))
    with pytest.raises(ValueError, match="2\\*\\*N"):
        big.greedy_tree()


def test_sklearn_dendrogram_example_runs_on_full_iris():
    """scikit-learn's plot_agglomerative_dendrogram.py on all 150 iris flowers."""
    plt = pytest.importorskip("matplotlib.pyplot")
    X = load_iris().data
    model = TrellisHierarchical(distance_threshold=0, n_clusters=None)
    model = model.fit(X)
    plt.title("Hierarchical Clustering Dendrogram")
    out = plot_dendrogram(model, truncate_mode="level", p=3)
    plt.close("all")
    assert out["ivl"]
    assert model.n_clusters_ == 150 and model.approximation_ is not None


@pytest.mark.parametrize("energy", ["dasgupta", "hcc"])
def test_window_refinement_never_loses_and_grows_the_family(energy):
    X = blobs(60, seed=5)
    plain = TrellisHierarchical(energy=energy, window_size=0).fit(X)
    refined = TrellisHierarchical(energy=energy, window_size=6).fit(X)
    assert refined.map_log_potential_ >= plain.map_log_potential_ - 1e-9 * abs(
        plain.map_log_potential_)
    assert refined.n_trellis_vertices_ > plain.n_trellis_vertices_
    assert refined.n_trees_ > plain.n_trees_
    assert "unions of 6 neighbouring clusters" in refined.approximation_
    assert refined.log_potential(refined.map_tree_) == pytest.approx(
        refined.map_log_potential_, rel=1e-9)
    with pytest.raises(ValueError, match="window_size"):
        TrellisHierarchical(window_size=13).fit(X)


def test_deep_trees_need_no_recursion():
    """A 3,000-level chain: tree checks and log-potentials are iterative."""
    from sklearn_trellis._core.trees import check_tree, tree_splits
    n = 3000
    chain = 0
    for i in range(1, n):
        chain = (chain, i)
    splits = tree_splits(check_tree(chain, n))   # (== on deep tuples would recurse)
    assert len(splits) == n - 1 and splits[-1] == (list(range(n - 1)), [n - 1])
    w = np.ones((n, n))
    np.fill_diagonal(w, 0.0)
    energy = DasguptaEnergy(similarity="precomputed").fit(w)
    # node {0..k} joins item k: cost (k + 1) * k
    expected = -sum((k + 1) * k for k in range(1, n))
    assert energy.log_potential(chain) == pytest.approx(expected)


def test_callable_energy_goes_sparse_above_its_exact_limit():
    X = blobs(30, seed=6)

    def negative_cut(X, left, right):       # minus the squared distance of the means
        return -float(np.sum((X[left].mean(axis=0) - X[right].mean(axis=0)) ** 2))

    est = TrellisHierarchical(energy=negative_cut, n_clusters=3, window_size=4).fit(X)
    assert "sparse trellis" in est.approximation_
    assert est.log_potential(est.map_tree_) == pytest.approx(est.map_log_potential_)
    small = TrellisHierarchical(energy=negative_cut).fit(X[:8])
    assert small.approximation_ is None
    with pytest.raises(ValueError, match="max_items"):
        TrellisHierarchical(energy=negative_cut, method="exact").fit(X[:13])


@pytest.mark.parametrize("lanes", [1, 2])
def test_verbose_reports_every_stage_and_progress_within_the_seed_linkages(capsys, monkeypatch,
                                                                          lanes):
    import numba

    from sklearn_trellis._core import progress
    from sklearn_trellis.engines.sparse import _nn_chain
    # a zero throttle interval: every compiled chunk of the linkages reports (the
    # compiled chains: at 120 items scipy's linkages would run, with stage lines only)
    monkeypatch.setattr(progress.Progress, "__init__", _tiny_interval(progress.Progress.__init__))
    monkeypatch.setattr(_nn_chain, "SCIPY_LINKAGE_ITEMS", 0)
    if lanes == 1:        # the chains in turn, on one (N, N) array
        monkeypatch.setattr(_nn_chain, "SECOND_CHAIN_BYTES", 0)
    elif numba.get_num_threads() < 2:
        pytest.skip("two lanes need two numba threads")
    two_lanes, used = _nn_chain._two_lanes, []
    monkeypatch.setattr(_nn_chain, "_two_lanes",
                        lambda *args: used.append(1) or two_lanes(*args))
    X = np.random.default_rng(0).normal(size=(120, 3))
    TrellisHierarchical(n_clusters=3, method="sparse", verbose=1).fit(X)
    out = capsys.readouterr().out
    assert len(used) == (lanes == 2)
    stages = ["(120, 120) distances", "seed trees", "energy (DasguptaEnergy)", "sparse trellis",
              "[SparseHierarchicalTrellis]", "ward merge heights"]
    stages += [f"{method} linkage of 120 items"
               for method in ("single", "average", "complete", "ward")]
    if lanes == 1:
        stages += ["average linkage of 120 items: ", "ward linkage of 120 items: "]
    for stage in stages:
        assert stage in out, stage
    # two lanes take the chains from one queue, so which lane runs which depends on
    # timing: the foreground lane's progress lines (if it ran a chain) name their linkage
    merges = [line for line in out.splitlines() if "/119 merges" in line]
    assert merges or lanes == 2
    if lanes == 2:
        assert all(re.search(r"/119 merges of (average|complete|ward) linkage", line)
                   for line in merges), merges


def _tiny_interval(init):
    def patched(self, name, verbose, *, interval=0.0, **kwargs):
        init(self, name, verbose, interval=0.0, **kwargs)
    return patched


@pytest.mark.parametrize("energy", ["dasgupta", "hcc"])
def test_energy_made_in_place_from_exact_condensed_distances(energy):
    # the (N, N) matrix lent to the seed linkages ends as the energy's similarities,
    # made from scipy's exact euclidean distances; the caller's X is untouched
    from scipy.spatial.distance import pdist, squareform
    X = np.random.default_rng(4).normal(size=(70, 3))
    before = X.copy()
    # one length scale for all pairs (Dasgupta's default is local: issue 29)
    chosen = DasguptaEnergy(scale="median") if energy == "dasgupta" else energy
    model = TrellisHierarchical(n_clusters=3, method="sparse", energy=chosen).fit(X)
    np.testing.assert_array_equal(X, before)
    D = squareform(pdist(X))
    width = float(np.median(pdist(X)))
    S = np.exp(D / -width)
    np.fill_diagonal(S, 0.0)
    if energy == "hcc":
        S -= S[~np.eye(70, dtype=bool)].mean()
        np.fill_diagonal(S, 0.0)
    got = model.model_.similarity_ if energy == "dasgupta" else model.model_.affinity_
    np.testing.assert_allclose(got, S, rtol=1e-12, atol=1e-14)
    assert model.model_.scale_ == pytest.approx(width, rel=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_sparse_over_a_complete_family_is_the_exact_trellis(seed):
    # Up to window_size items the windows cover the whole tree: the sparse
    # family is every subset, so the sparse trellis is the exact one and says so.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    X = rng.normal(size=(n, 2))
    energy = ("dasgupta", "hcc")[seed % 2]
    exact = TrellisHierarchical(method="exact", energy=energy).fit(X)
    sparse = TrellisHierarchical(method="sparse", energy=energy).fit(X)
    assert sparse.n_trellis_vertices_ == 2 ** n - 1
    assert sparse.map_is_exact_ is True and sparse.approximation_ is None
    assert abs(sparse.log_partition_function_ - exact.log_partition_function_) <= 1e-12 * max(
        1.0, abs(exact.log_partition_function_))
    assert abs(sparse.map_log_potential_ - exact.map_log_potential_) <= 1e-12 * max(
        1.0, abs(exact.map_log_potential_))
    # a MAP tree of the exact trellis (HCC's potentials tie exactly on some
    # trees: then either may be returned), the same tree under Dasgupta's
    assert abs(exact.log_potential(sparse.map_tree_) - exact.map_log_potential_) <= 1e-12 * max(
        1.0, abs(exact.map_log_potential_))
    if energy == "dasgupta":
        assert canonical_tree(sparse.map_tree_) == canonical_tree(exact.map_tree_)
    assert sparse.n_trees_ == exact.n_trees_


def test_sparse_over_an_incomplete_family_stays_a_lower_bound():
    X = np.random.default_rng(5).normal(size=(10, 2))
    exact = TrellisHierarchical(method="exact").fit(X)
    sparse = TrellisHierarchical(method="sparse").fit(X)
    assert sparse.n_trellis_vertices_ < 2 ** 10 - 1
    assert sparse.map_is_exact_ is False and "lower bound" in sparse.approximation_
    assert sparse.log_partition_function_ < exact.log_partition_function_ - 1e-3
    # so does a window smaller than the item count (5 < 8: not every subset)
    small = TrellisHierarchical(method="sparse", window_size=5).fit(X[:8])
    assert small.n_trellis_vertices_ < 2 ** 8 - 1 and small.map_is_exact_ is False


def test_sparse_with_connectivity_over_every_connected_subset_is_exact():
    from sklearn.neighbors import kneighbors_graph
    X = np.random.default_rng(3).normal(size=(7, 2))
    graph = kneighbors_graph(X, 2, include_self=False)
    exact = TrellisHierarchical(method="exact", connectivity=graph).fit(X)
    sparse = TrellisHierarchical(method="sparse", connectivity=graph).fit(X)
    assert sparse.map_is_exact_ is True and sparse.approximation_ is None
    assert sparse.log_partition_function_ == pytest.approx(exact.log_partition_function_,
                                                           abs=1e-12)
    assert canonical_tree(sparse.map_tree_) == canonical_tree(exact.map_tree_)
