"""BayesianHierarchicalClustering: fitted attributes, bounds, predictive, scale, errors."""

import pickle

import numpy as np
import pytest
from oracles import set_partitions
from scipy.cluster.hierarchy import is_valid_linkage, to_tree
from scipy.special import gammaln, logsumexp
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV

from sklearn_trellis import BayesianHierarchicalClustering
from sklearn_trellis._core.trees import check_children
from sklearn_trellis.models import NormalGamma


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(90, 2, centers=[[0, 0], [6, 0], [0, 6]], cluster_std=0.7, random_state=2)


@pytest.mark.parametrize("tree", ["binary", "rose"])
def test_fitted_tree_attributes(blobs, tree):
    X, y = blobs
    model = BayesianHierarchicalClustering(tree=tree).fit(X)
    n = X.shape[0]
    check_children(model.children_, n)
    assert np.all(np.diff(model.distances_) >= 0) and np.all(model.distances_ >= 0)
    assert is_valid_linkage(model.linkage_matrix_)
    assert to_tree(model.linkage_matrix_).get_count() == n
    assert model.linkage_matrix_[-1, 3] == n
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert model.n_clusters_ == 3
    log_r = model.merge_log_probabilities_
    assert np.all(log_r <= 1e-12)
    assert np.array_equal(np.isfinite(log_r), model.merge_is_cluster_)
    # heights: the largest -log r below, so a merge is at least its own -log r
    own = np.where(model.merge_is_cluster_, -log_r, 0.0)
    assert np.all(model.distances_ >= own - 1e-12)
    assert model.log_marginal_likelihood_dp_ is None
    assert np.isfinite(model.log_marginal_likelihood_)
    assert np.isfinite(model.log_evidence_lower_bound_)
    if tree == "binary":
        assert model.merge_is_cluster_.all()
    else:   # some nodes have more than two children (absorb / collapse merges)
        assert not model.merge_is_cluster_.all()
    # the cut at r < 0.5: the merges joining different clusters are the unsure ones
    n_split = np.sum(np.exp(log_r[model.merge_is_cluster_]) < 0.5)
    assert n_split >= model.n_clusters_ - 1


def test_lower_bound_below_exact_dp_and_family_between():
    rng = np.random.RandomState(0)
    partitions = set_partitions(9)
    bits = 1 << np.arange(9)
    blocks = np.stack([(partitions == k) @ bits for k in range(9)], axis=1)
    for seed in range(3):
        X = rng.randn(9, 2) + np.repeat([[0, 0], [2, 2], [0, 3]], 3, axis=0)
        model = BayesianHierarchicalClustering(alpha=0.7, likelihood="diagonal",
                                               family="all").fit(X)
        lik = model.model_
        # the exact DP marginal by enumeration of all partitions; a block's term depends
        # on its members only, so it is computed once per subset (bit mask; 0: no block)
        block_terms = np.zeros(2 ** 9)
        for mask in range(1, 2 ** 9):
            members = (mask & bits) > 0
            block_terms[mask] = (np.log(0.7) + gammaln(members.sum())
                                 + lik.log_marginal_closed_form(X[members]))
        values = block_terms[blocks].sum(axis=1)
        exact = logsumexp(values) + gammaln(0.7) - gammaln(9.7)
        assert model.log_marginal_likelihood_dp_ == pytest.approx(exact, abs=1e-8)
        assert model.log_evidence_lower_bound_ <= model.log_evidence_family_bound_ + 1e-9
        assert model.log_evidence_family_bound_ <= exact + 1e-9


def test_n_clusters_cuts_the_highest_merges(blobs):
    X, _ = blobs
    model = BayesianHierarchicalClustering(n_clusters=5).fit(X)
    assert model.n_clusters_ == 5
    with pytest.raises(ValueError, match="exceeds"):
        BayesianHierarchicalClustering(n_clusters=100).fit(X)


def test_predict_proba_predict_score(blobs):
    X, y = blobs
    model = BayesianHierarchicalClustering().fit(X)
    proba = model.predict_proba(X)
    assert proba.shape == (90, 3)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(model.predict(X), model.labels_)
    scores = model.score_samples(X[:5])
    assert np.all(np.isfinite(scores))
    assert model.score(X[:5]) == pytest.approx(scores.mean())
    far = model.score_samples(np.array([[50.0, 50.0]]))
    assert far[0] < scores.min()


def test_grid_search_over_alpha_unsupervised(blobs):
    X, _ = blobs
    search = GridSearchCV(BayesianHierarchicalClustering(), {"alpha": [0.1, 1.0, 10.0]},
                          cv=3).fit(X)
    assert search.best_params_["alpha"] in (0.1, 1.0, 10.0)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_nested_likelihood_parameters(blobs):
    X, _ = blobs
    model = BayesianHierarchicalClustering(likelihood=NormalGamma())
    model.set_params(likelihood__kappa=0.5).fit(X)
    assert model.model_.kappa == 0.5


def test_every_likelihood_fits():
    rng = np.random.RandomState(0)
    binary = (rng.rand(40, 6) < np.repeat([[0.1], [0.9]], 20, axis=0)).astype(float)
    counts = rng.poisson(np.repeat([[20, 2, 2], [2, 2, 20]], 20, axis=0)).astype(float)
    truth = np.repeat([0, 1], 20)
    for likelihood, X in [("bernoulli", binary), ("multinomial", counts)]:
        model = BayesianHierarchicalClustering(likelihood=likelihood).fit(X)
        assert adjusted_rand_score(truth, model.labels_) > 0.9
        assert np.allclose(model.predict_proba(X[:3]).sum(axis=1), 1.0)


def test_randomized_large_n_is_finite_and_correct():
    """n = 10,000: everything in log space stays finite, separated blobs are found."""
    X, y = make_blobs(10_000, 2, centers=[[0, 0], [20, 0], [0, 20], [20, 20]],
                      cluster_std=1.0, random_state=0)
    model = BayesianHierarchicalClustering(method="randomized", random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert np.isfinite(model.log_marginal_likelihood_)
    assert np.isfinite(model.log_evidence_lower_bound_)
    assert np.all(np.isfinite(model.distances_))
    check_children(model.children_, 10_000)
    assert model.approximation_.startswith("randomized BHC binary tree: each split decided by "
                                           "greedy BHC on 100 random rows")
    assert "hyperparameters chosen on 1000 random rows of 10000" in model.approximation_


@pytest.mark.slow
def test_greedy_large_n_is_finite_and_correct():
    X, y = make_blobs(10_000, 2, centers=[[0, 0], [20, 0], [0, 20], [20, 20]],
                      cluster_std=1.0, random_state=0)
    model = BayesianHierarchicalClustering().fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert np.isfinite(model.log_evidence_lower_bound_)


@pytest.mark.parametrize("tree", ["binary", "rose"])
def test_approximation_says_what_is_not_exact(blobs, tree):
    model = BayesianHierarchicalClustering(tree=tree).fit(blobs[0])
    assert model.approximation_.startswith(f"greedy BHC {tree} tree")
    assert "bounds the DP-mixture evidence from below" in model.approximation_
    assert "random rows" not in model.approximation_        # 90 rows: no subset drawn
    fixed = BayesianHierarchicalClustering(hyperparameters="fixed").fit(blobs[0])
    assert "hyperparameters" not in fixed.approximation_


def test_pickle_round_trip(blobs):
    X, _ = blobs
    model = BayesianHierarchicalClustering(tree="rose").fit(X)
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.children_, model.children_)
    assert np.array_equal(again.predict(X[:10]), model.predict(X[:10]))
    assert again.score(X[:10]) == pytest.approx(model.score(X[:10]))


def test_clear_errors():
    X = np.array([[0.0, 1.0], [1.0, np.nan], [2.0, 2.0]])
    with pytest.raises(ValueError, match="NaN"):
        BayesianHierarchicalClustering().fit(X)
    with pytest.raises(ValueError, match="binary"):
        BayesianHierarchicalClustering(likelihood="bernoulli").fit([[0, 1], [2, 1]])
    with pytest.raises(ValueError, match="integer counts"):
        BayesianHierarchicalClustering(likelihood="multinomial").fit([[0.5, 1], [2, 1]])
    with pytest.raises(ValueError, match="minimum of 2"):
        BayesianHierarchicalClustering().fit([[0.0, 1.0]])
    with pytest.raises(ValueError, match="binary trees"):
        BayesianHierarchicalClustering(method="randomized", tree="rose").fit(
            [[0.0], [1.0], [2.0]])
    with pytest.raises(ValueError, match="alpha"):
        BayesianHierarchicalClustering(alpha=0).fit([[0.0], [1.0]])
    model = BayesianHierarchicalClustering(likelihood="bernoulli").fit([[0, 1], [1, 1]])
    with pytest.raises(ValueError, match="binary"):
        model.predict([[0.5, 1]])


def test_evidence_hyperparameters_maximise_the_tree_evidence(blobs):
    """hyperparameters='evidence': no grid point gives the final tree a higher evidence."""
    from sklearn_trellis.engines.bhc.posterior import TreePosterior, node_log_marginals
    X, _ = blobs
    model = BayesianHierarchicalClustering().fit(X)
    lik, data = model.model_, model.model_.kernel_data(X)
    grid, _ = lik.hyperparameter_grid()
    bounds = [TreePosterior(model.children_, model.merge_is_cluster_,
                            node_log_marginals(lik, data, model.children_, row),
                            1.0).log_evidence_lower_bound for row in grid]
    assert max(bounds) == pytest.approx(model.log_evidence_lower_bound_, abs=1e-9)
    assert set(model.hyperparameters_) == {"scale", "dof"}
    fixed = BayesianHierarchicalClustering(hyperparameters="fixed").fit(X)
    assert fixed.log_evidence_lower_bound_ <= model.log_evidence_lower_bound_ + 1e-9


@pytest.mark.parametrize("likelihood", ["gaussian", "diagonal"])
def test_a_large_offset_of_the_features_changes_nothing(likelihood):
    # x**2 ~ 1e20 summed by the kernels rounded away the spread of features near 1e10
    # ('diagonal' merged the two blobs); features far from 0 are centred first.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(4, 2)), rng.normal(size=(4, 2)) + 6.0])
    near = BayesianHierarchicalClustering(likelihood=likelihood).fit(X)
    far = BayesianHierarchicalClustering(likelihood=likelihood).fit(X + 1e10)
    np.testing.assert_array_equal(far.labels_, near.labels_)
    np.testing.assert_array_equal(far.children_, near.children_)
    np.testing.assert_allclose(far.score_samples(X[:3] + 1e10), near.score_samples(X[:3]),
                               rtol=1e-4)
