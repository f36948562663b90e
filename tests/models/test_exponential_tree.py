"""The exponential tree model (generative Dasgupta): evidence, gradient, predictive, score.

Every exact quantity is checked against brute-force enumeration of all binary
trees, computed pair by pair from the lowest common ancestors (not split by
split as the model does), and the gradient against finite differences.
"""

import math

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.metrics import pairwise_distances
from sklearn.model_selection import GridSearchCV

from sklearn_trellis import TrellisHierarchical
from sklearn_trellis._core.pairwise import local_scales
from sklearn_trellis.engines import ExactHierarchicalTrellis
from sklearn_trellis.models import (DasguptaEnergy, ExponentialTreeEnergy, GinkgoEnergy,
                                    HCCEnergy, sample_exponential_tree)

from oracles import binary_trees, tree_clusters


def lca_sizes(tree, n):
    """``|lowest common ancestor|`` of every pair, read off the tree's nodes."""
    sizes = np.zeros((n, n))

    def walk(node):
        if not isinstance(node, tuple):
            return [node]
        left, right = walk(node[0]), walk(node[1])
        size = len(left) + len(right)
        for i in left:
            for j in right:
                sizes[i, j] = sizes[j, i] = size
        return left + right

    walk(tree)
    return sizes


def pair_log_likelihood(tree, s, beta):
    """``sum_{i<j} log Exp(s_ij; beta |lca_ij| / N)``, pair by pair (``N`` the items of ``s``)."""
    n = s.shape[0]
    rate = beta * lca_sizes(tree, n) / n
    upper = np.triu_indices(n, 1)
    return float(np.sum(np.log(rate[upper]) - rate[upper] * s[upper]))


def pair_scales(d, scale, n_neighbors):
    """``tau_ij`` of every fitted pair, from the definition."""
    n = d.shape[0]
    if scale == "local":
        sigma = np.array([np.sort(np.delete(d[i], i))[min(n_neighbors, n - 1) - 1]
                          for i in range(n)])
        return np.sqrt(np.outer(sigma, sigma))
    width = np.median(d[np.triu_indices(n, 1)]) if scale == "median" else scale
    return np.full((n, n), width)


@pytest.mark.parametrize("scale", ["local", "median", 0.7])
@pytest.mark.parametrize("seed", [0, 1])
def test_evidence_is_brute_force_marginal_likelihood_of_distances(scale, seed):
    rng = np.random.default_rng(seed)
    n, beta = 6, 0.8
    d = pairwise_distances(rng.normal(size=(n, 2)))
    energy = ExponentialTreeEnergy(scale=scale, n_neighbors=3).fit(d)
    tau = pair_scales(d, scale, 3)
    s = np.exp(-d / tau)
    np.fill_diagonal(s, 0.0)
    np.testing.assert_allclose(energy.similarity_, s, rtol=1e-12)
    trees = binary_trees(range(n))
    assert len(trees) == 945
    upper = np.triu_indices(n, 1)
    jacobian = float(np.sum(-d[upper] / tau[upper] - np.log(tau[upper])))
    brute = (logsumexp([pair_log_likelihood(t, s, beta) for t in trees])
             - math.log(len(trees)) + jacobian)
    trellis = ExactHierarchicalTrellis(*energy.kernel_inputs(beta)).fit()
    assert energy.log_evidence(trellis.log_partition_function) == pytest.approx(brute,
                                                                              rel=1e-12)
    for tree in trees[::97]:
        assert energy.log_potential(tree, beta) == pytest.approx(
            pair_log_likelihood(tree, s, beta), rel=1e-12)
        assert trellis.log_potential(tree) == pytest.approx(
            pair_log_likelihood(tree, s, beta), rel=1e-12)


def test_sample_exponential_tree_draws_the_model():
    s, tree = sample_exponential_tree(7, beta=3.0, random_state=0)
    upper = np.triu_indices(7, 1)
    assert (s[upper] > 0).all() and np.allclose(s, s.T) and not np.diag(s).any()
    # the three trees of 3 items are equally likely; s_ij * beta |lca| / 3 is Exp(1)
    counts = {}
    scaled = []
    for k in range(600):
        s, tree = sample_exponential_tree(3, 2.0, random_state=k)
        counts[tree] = counts.get(tree, 0) + 1
        scaled.append(s[0, 1] * 2.0 * lca_sizes(tree, 3)[0, 1] / 3)
    assert set(counts) == {((0, 1), 2), ((0, 2), 1), (0, (1, 2))}
    assert all(abs(c - 200) < 45 for c in counts.values())     # 3.5 standard deviations
    assert np.mean(scaled) == pytest.approx(1.0, abs=0.15)      # 3.5 standard deviations


@pytest.mark.parametrize("beta", [0.3, 2.0])
def test_gradient_is_expected_split_statistic(beta):
    rng = np.random.default_rng(3)
    d = pairwise_distances(rng.normal(size=(6, 3)))
    energy = ExponentialTreeEnergy().fit(d)
    trellis = ExactHierarchicalTrellis(*energy.kernel_inputs(beta)).fit()
    gradient = trellis.expected_split_value(energy.gradient_params(beta))
    h = 1e-5 * beta

    def log_z(b):
        return ExactHierarchicalTrellis(*energy.kernel_inputs(b)).fit().log_partition_function

    assert gradient == pytest.approx((log_z(beta + h) - log_z(beta - h)) / (2 * h),
                                     rel=1e-6)
    # and against the enumeration: E[sum_pairs (1 / beta - |lca| s / N)]
    trees = binary_trees(range(6))
    s = energy.similarity_
    log_w = np.array([pair_log_likelihood(t, s, beta) for t in trees])
    w = np.exp(log_w - logsumexp(log_w))
    upper = np.triu_indices(6, 1)
    stat = [np.sum(1 / beta - lca_sizes(t, 6)[upper] * s[upper] / 6) for t in trees]
    assert gradient == pytest.approx(float(w @ stat), rel=1e-9)


def test_sparse_gradient_is_derivative_of_family_log_z():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(24, 2))
    beta = 0.4

    def fit(b):
        return TrellisHierarchical(energy="exponential_tree", beta=b, method="sparse",
                                   n_beam_trees=0, window_size=0).fit(X)

    model = fit(beta)
    gradient = model._trellis.expected_split_value(model.model_.gradient_params(beta))
    h = 1e-5
    # the family does not depend on beta without beam seeds and windows
    assert gradient == pytest.approx((fit(beta + h).log_partition_function_
                                      - fit(beta - h).log_partition_function_) / (2 * h),
                                     rel=1e-5)


@pytest.mark.parametrize("scale", ["local", 0.9])
def test_score_is_brute_force_held_out_predictive_under_the_tree_posterior(scale):
    rng = np.random.default_rng(5)
    n, m, beta = 5, 3, 0.7
    X = rng.normal(size=(n + m, 2))
    d = pairwise_distances(X)
    model = TrellisHierarchical(energy=ExponentialTreeEnergy(scale=scale, n_neighbors=2),
                                beta=beta, n_clusters=2).fit(X[:n])
    assert model.approximation_ is None
    energy = model.model_
    tau = pair_scales(d[:n, :n], scale, 2)
    s = np.exp(-d[:n, :n] / tau)
    np.fill_diagonal(s, 0.0)
    upper = np.triu_indices(n, 1)
    log_p_train = (logsumexp([pair_log_likelihood(t, s, beta) for t in binary_trees(range(n))])
                   - math.log(105) + np.sum(-d[:n, :n][upper] / tau[upper] - np.log(tau[upper])))
    trees = binary_trees(range(n + 1))
    expected = []
    for x in range(n, n + m):
        # the new item's scales: its own sigma from its distances to the fitted items
        if scale == "local":
            sigma_x = np.sort(d[x, :n])[1]
            tau_x = np.sqrt(sigma_x * energy.scale_)
        else:
            tau_x = np.full(n, scale)
        big = np.zeros((n + 1, n + 1))
        big[:n, :n] = s
        big[n, :n] = big[:n, n] = np.exp(-d[x, :n] / tau_x)
        log_p = (logsumexp([pair_log_likelihood(t, big, beta) for t in trees])
                 - math.log(945) + np.sum(-d[:n, :n][upper] / tau[upper] - np.log(tau[upper]))
                 + np.sum(-d[x, :n] / tau_x - np.log(tau_x)))
        expected.append(log_p - log_p_train)
    assert model.score(X[n:]) == pytest.approx(np.mean(expected), rel=1e-10)
    assert model.log_marginal_likelihood_ == pytest.approx(log_p_train, rel=1e-10)


def test_predict_proba_is_brute_force_posterior_of_cluster_plus_new_item():
    rng = np.random.default_rng(8)
    n = 5
    X = rng.normal(size=(n + 2, 2))
    d = pairwise_distances(X)
    model = TrellisHierarchical(energy=ExponentialTreeEnergy(scale=0.9), beta=1.5,
                                n_clusters=2).fit(X[:n])
    s = model.model_.similarity_
    clusters = [tuple(np.flatnonzero(model.labels_ == k).tolist()) for k in range(2)]
    trees = binary_trees(range(n + 1))
    proba = model.predict_proba(X[n:])
    for j, x in enumerate(range(n, n + 2)):
        big = np.zeros((n + 1, n + 1))
        big[:n, :n] = s
        big[n, :n] = big[:n, n] = np.exp(-d[x, :n] / 0.9)
        log_w = np.array([pair_log_likelihood(t, big, 1.5) for t in trees])
        w = np.exp(log_w - logsumexp(log_w))
        inside = np.array([sum(p for p, t in zip(w, trees)
                               if (*c, n) in tree_clusters(t)) for c in clusters])
        np.testing.assert_allclose(proba[j], inside / inside.sum(), rtol=1e-9)
    assert np.array_equal(model.predict(X[n:]), proba.argmax(axis=1))


@pytest.mark.slow
def test_predict_proba_is_calibrated_on_data_from_the_model():
    """Top-class calibration of one held-out item per draw of N + 1 = 9 items."""
    n, beta = 8, 90.0
    confidence, correct = [], []
    for draw in range(1500):
        s, tree = sample_exponential_tree(n + 1, beta, random_state=draw)
        d = -np.log(s + np.eye(n + 1))
        est = TrellisHierarchical(metric="precomputed", linkage="average", n_clusters=2,
                                  energy=ExponentialTreeEnergy(scale=1.0), beta=beta)
        proba = est.fit(d[:n, :n]).predict_proba(d[n:, :n])[0]
        clusters = [tuple(np.flatnonzero(est.labels_ == k).tolist()) + (n,) for k in range(2)]
        nodes = tree_clusters(tree)
        truth = [k for k, c in enumerate(clusters) if c in nodes]
        if truth:       # proba is conditional on the item joining one of the clusters
            confidence.append(proba.max())
            correct.append(proba.argmax() == truth[0])
    confidence, correct = np.array(confidence), np.array(correct)
    assert len(correct) > 300
    bins = np.clip((confidence * 10).astype(int), 0, 9)
    ece = sum(np.mean(bins == b) * abs(confidence[bins == b].mean() - correct[bins == b].mean())
              for b in range(10) if np.any(bins == b))
    assert ece < 0.05


def test_score_exists_only_for_likelihood_energies():
    assert not hasattr(TrellisHierarchical(), "score")
    assert not hasattr(TrellisHierarchical(energy="hcc"), "score")
    assert not hasattr(TrellisHierarchical(energy=DasguptaEnergy()), "score")
    assert not hasattr(TrellisHierarchical(energy=HCCEnergy()), "score")
    assert not hasattr(TrellisHierarchical(energy=lambda X, l, r: 0.0), "score")
    assert hasattr(TrellisHierarchical(energy="exponential_tree"), "score")
    assert hasattr(TrellisHierarchical(energy=ExponentialTreeEnergy()), "score")
    assert hasattr(TrellisHierarchical(energy="ginkgo"), "score")
    assert hasattr(TrellisHierarchical(energy=GinkgoEnergy()), "score")


@pytest.mark.parametrize("energy, named", [
    ("dasgupta", "energy='dasgupta'"), ("hcc", "energy='hcc'"),
    (HCCEnergy(), "energy=HCCEnergy()"), (lambda X, l, r: 0.0, "a callable energy")])
def test_missing_score_says_why_and_names_a_scorer(energy, named):
    with pytest.raises(AttributeError) as error:
        TrellisHierarchical(energy=energy).score
    message = _attribute_error_messages(error.value)
    assert "not a likelihood" in message and named in message
    assert "energy='exponential_tree'" in message
    assert "pairwise_log_loss_scorer" in message


def test_missing_score_of_the_ginkgo_likelihood_names_the_density():
    with pytest.raises(AttributeError) as error:
        TrellisHierarchical(energy=GinkgoEnergy(likelihood="ginkgo")).score
    assert "likelihood='momenta'" in _attribute_error_messages(error.value)


def _attribute_error_messages(error):
    """The error's message and its cause's: scikit-learn >= 1.5 re-raises the check's
    AttributeError with a generic message, ``from`` the check's own (printed above it)."""
    return f"{error} {error.__cause__ or ''}"


def test_auto_beta_is_a_stationary_point_of_the_evidence():
    rng = np.random.default_rng(6)
    X = np.concatenate([rng.normal(0, 1, (5, 2)), rng.normal(5, 1, (5, 2))])
    model = TrellisHierarchical(energy="exponential_tree", beta="auto").fit(X)
    beta = model.beta_
    gradient = model._trellis.expected_split_value(model.model_.gradient_params(beta))
    assert abs(gradient) < 1e-3 * 45 / beta
    for other in (beta / 1.2, beta * 1.2):
        fixed = TrellisHierarchical(energy="exponential_tree", beta=other).fit(X)
        assert fixed.log_marginal_likelihood_ < model.log_marginal_likelihood_


def test_auto_beta_needs_a_likelihood_energy():
    with pytest.raises(ValueError, match="exponential_tree"):
        TrellisHierarchical(beta="auto").fit(np.arange(8.0).reshape(4, 2))
    with pytest.raises(ValueError, match="beta > 0"):
        TrellisHierarchical(energy="exponential_tree", beta=0.0).fit(
            np.arange(8.0).reshape(4, 2))


def recovery(n_items, beta, grid, seed, cv=4):
    """beta selected by GridSearchCV's default scoring and by beta='auto'.

    The similarities drawn from the model are given as distances
    ``d = -log s`` with ``scale=1`` (so the energy sees ``s`` again and the
    seed linkages see distances); ``beta >= 10 N`` keeps ``s < 1`` (``d > 0``)
    with probability ``1 - exp(-20)`` per pair (the smallest rate is ``2 beta / N``).
    """
    s, _ = sample_exponential_tree(n_items, beta, random_state=seed)
    assert s.max() < 1
    d = -np.log(s + np.eye(n_items))
    est = TrellisHierarchical(metric="precomputed", linkage="average",
                              energy=ExponentialTreeEnergy(scale=1.0))
    search = GridSearchCV(est, {"beta": grid}, cv=cv).fit(d)
    auto = est.set_params(beta="auto").fit(d)
    return search.best_params_["beta"], auto.beta_


def test_grid_search_default_scoring_recovers_beta_small():
    beta = 400.0
    grid = list(beta * np.array([0.5, 0.8, 1.0, 1.25, 2.0]))
    chosen, auto = recovery(40, beta, grid, seed=0)
    assert chosen == beta
    assert auto == pytest.approx(beta, rel=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("beta", [1500.0, 6000.0])
def test_grid_search_default_scoring_recovers_beta(beta):
    # rates beta |S| / N: a training fold's model means the same beta as the whole set's
    grid = list(beta * np.array([0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0]))
    chosen, auto = recovery(150, beta, grid, seed=1, cv=5)
    assert chosen == pytest.approx(beta, rel=0.15)
    assert auto == pytest.approx(beta, rel=0.15)


def test_local_scales_dense_graph_and_new_items_agree_with_definition():
    from scipy import sparse
    rng = np.random.default_rng(7)
    X = rng.normal(size=(12, 3))
    d = pairwise_distances(X)
    dense = DasguptaEnergy(n_neighbors=4).fit(d)
    sigma = np.sort(d, axis=1)[:, 4]          # column 0 is the item itself
    np.testing.assert_allclose(dense.scale_, sigma)
    expected = np.exp(-d / np.sqrt(np.outer(sigma, sigma)))
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_allclose(dense.similarity_, expected, rtol=1e-12)
    # every pair an edge: the graph path gives the same similarities
    graph = DasguptaEnergy(n_neighbors=4).fit(sparse.csr_matrix(d + 1e-300 * (1 - np.eye(12))))
    np.testing.assert_allclose(graph.similarity_.toarray(), expected, rtol=1e-9)
    # a new item: its own sigma is the distance to its 4th nearest fitted item
    new = pairwise_distances(rng.normal(size=(2, 3)), X)
    own = np.sort(new, axis=1)[:, 3]
    np.testing.assert_allclose(dense._new_similarities(new),
                               np.exp(-new / np.sqrt(np.outer(own, sigma))), rtol=1e-12)
    with pytest.raises(ValueError, match="'median' or 'local'"):
        DasguptaEnergy(scale="mean").fit(d)
