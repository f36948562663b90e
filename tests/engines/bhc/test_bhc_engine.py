"""BHC engine: the tree quantities against brute force, the lecture's recursion, the builders."""

import math

import numpy as np
import pytest
from oracles import conjugate_log_marginal, family_log_sum, set_partitions
from scipy.special import gammaln, logsumexp

from sklearn_trellis.engines.bhc import posterior
from sklearn_trellis.engines.bhc.build import (binarize_rose, greedy_tree, randomized_tree,
                                               rose_children)
from sklearn_trellis.models.conjugate import (BetaBernoulli, DirichletMultinomial,
                                              NormalGamma, NormalInverseWishart)


def dataset(kind, n, seed):
    rng = np.random.RandomState(seed)
    if kind in ("gaussian", "diagonal"):
        X = np.vstack([rng.randn(n // 2, 2), rng.randn(n - n // 2, 2) + 3.0])
        lik = (NormalInverseWishart(hyperprior="fixed") if kind == "gaussian"
               else NormalGamma()).fit(X)
    elif kind == "bernoulli":
        X = (rng.rand(n, 4) < np.where(np.arange(n)[:, None] < n // 2, 0.2, 0.8)).astype(float)
        lik = BetaBernoulli().fit(X)
    else:
        X = rng.poisson(np.where(np.arange(n)[:, None] < n // 2, [3, 1, 1], [1, 1, 3]))
        X = X.astype(float)
        lik = DirichletMultinomial().fit(X)
    return X, lik


def tree_clusters(children, is_cluster, n):
    """Item sets of the nodes of a tree that are clusters (leaves and real merges)."""
    members = [frozenset([i]) for i in range(n)]
    for a, b in children.tolist():
        members.append(members[a] | members[b])
    keep = np.concatenate([np.ones(n, bool), is_cluster])
    return members, {m for m, k in zip(members, keep) if k}


LIKELIHOODS = ["gaussian", "diagonal", "bernoulli", "multinomial"]


# Each (likelihood, tree) pair compiles its own kernels (about 2.5 CPU s from an empty
# cache). Rose trees with the Bernoulli and multinomial likelihoods run with the slow tests:
# what they check is checked in the fast set by the rose trees of the Gaussian likelihoods
# and the binary trees of those two (and the multinomial data here make no node with more
# than two children).
@pytest.mark.parametrize("rose, kind", [(False, kind) for kind in LIKELIHOODS]
                         + [(True, "gaussian"), (True, "diagonal")]
                         + [pytest.param(True, kind, marks=pytest.mark.slow)
                            for kind in ("bernoulli", "multinomial")])
def test_tree_quantities_match_brute_force(kind, rose):
    n, alpha = 8, 1.3
    X, lik = dataset(kind, n, seed=8)
    data = lik.kernel_data(X)
    children, is_cluster = greedy_tree(lik, data, alpha, rose=rose)
    if rose and kind != "multinomial":   # nodes with more than two children are checked
        assert not is_cluster.all()
    members, allowed = tree_clusters(children, is_cluster, n)
    post = posterior.TreePosterior(children, is_cluster,
                                   posterior.node_log_marginals(lik, data, children), alpha)

    def e(block):
        return math.log(alpha) + gammaln(len(block)) + conjugate_log_marginal(
            lik, X[sorted(block)])

    def e_prior(block):
        return math.log(alpha) + gammaln(len(block))

    root = members[-1]
    log_s = family_log_sum(root, allowed, e)
    log_d = family_log_sum(root, allowed, e_prior)
    assert post.log_marginal_likelihood == pytest.approx(log_s - log_d, abs=1e-8)
    bound = log_s + gammaln(alpha) - gammaln(n + alpha)
    assert post.log_evidence_lower_bound == pytest.approx(bound, abs=1e-8)
    # r_k = pi_k m(D_k) / p(D_k | T_k) over each node's own subtree
    for k in range(n, 2 * n - 1):
        if not post.is_cluster[k]:
            assert post.log_r[k] == -np.inf
            continue
        sub = {b for b in allowed if b <= members[k]}
        log_pi = e_prior(members[k]) - family_log_sum(members[k], sub, e_prior)
        log_p = family_log_sum(members[k], sub, e) - family_log_sum(members[k], sub, e_prior)
        expected = log_pi + conjugate_log_marginal(lik, X[sorted(members[k])]) - log_p
        assert post.log_r[k] == pytest.approx(expected, abs=1e-8)
    # the bound lies below the exact DP marginal (enumeration of all partitions)
    all_sets = {frozenset(c) for labels in set_partitions(n)
                for c in (np.flatnonzero(labels == j).tolist() for j in range(labels.max() + 1))}
    exact = family_log_sum(range(n), all_sets, e) + gammaln(alpha) - gammaln(n + alpha)
    assert exact == pytest.approx(posterior.exact_dp_log_marginal(lik, data, alpha), abs=1e-8)
    assert post.log_evidence_lower_bound <= exact + 1e-9
    family_bound = posterior.family_lower_bound(lik, data, X, alpha, [children])[0]
    assert post.log_evidence_lower_bound - 1e-9 <= family_bound <= exact + 1e-9


def test_lecture_recursion_hand_worked():
    """Murphy's lecture notes 5.4.2: d_k = alpha Gamma(n_k) + d_i d_j, pi_k = alpha Gamma(n_k) / d_k."""
    alpha = 2.0
    children = np.array([[0, 1], [3, 2]])
    # m of the leaves e^-1, of {0, 1} e^-1.5, of all three e^-4
    log_m = np.array([-1.0, -1.0, -1.0, -1.5, -4.0])
    post = posterior.TreePosterior(children, np.ones(2, bool), log_m, alpha)
    # leaves d = alpha = 2; d_{01} = 2 Gamma(2) + 2 * 2 = 6; d_root = 2 Gamma(3) + 6 * 2 = 16
    assert np.exp(post.log_d).tolist() == pytest.approx([2, 2, 2, 6, 16])
    pi_01, pi_root = 2.0 / 6.0, 4.0 / 16.0
    p_01 = pi_01 * math.exp(-1.5) + (1 - pi_01) * math.exp(-1.0) ** 2
    p_root = pi_root * math.exp(-4.0) + (1 - pi_root) * p_01 * math.exp(-1.0)
    assert post.log_marginal_likelihood == pytest.approx(math.log(p_root), abs=1e-12)
    assert math.exp(post.log_r[3]) == pytest.approx(pi_01 * math.exp(-1.5) / p_01)
    assert math.exp(post.log_r[4]) == pytest.approx(pi_root * math.exp(-4.0) / p_root)
    # the bound: p(D|T) d_root Gamma(alpha) / Gamma(n + alpha)
    assert post.log_evidence_lower_bound == pytest.approx(
        math.log(p_root * 16 * math.gamma(2.0) / math.gamma(5.0)))


def test_predictive_weights_sum_to_one_and_match_definition():
    X, lik = dataset("gaussian", 7, seed=1)
    data = lik.kernel_data(X)
    children, is_cluster = greedy_tree(lik, data, 1.0)
    post = posterior.TreePosterior(children, is_cluster,
                                   posterior.node_log_marginals(lik, data, children), 1.0)
    log_w = post.predictive_log_weights()
    assert np.exp(logsumexp(log_w)) == pytest.approx(1.0)
    # brute force: w_k = r_k prod over ancestors a (1 - r_a) n_c / n_a (c: a's child on the path)
    n = 7
    parent = {}
    for t, (a, b) in enumerate(children.tolist()):
        parent[a] = parent[b] = n + t
    r = np.exp(post.log_r)
    size = post.sizes
    for k in range(2 * n - 1):
        w, c, a = r[k], k, parent.get(k)
        while a is not None:
            w *= (1 - r[a]) * size[c] / size[a]
            c, a = a, parent.get(a)
        assert np.exp(log_w[k]) == pytest.approx(w, rel=1e-9, abs=1e-300)
    # the grouped predictive of the kernel against marginals ratios
    new = np.array([[0.3, -0.2], [2.5, 3.1]])
    group = np.zeros(2 * n - 1, dtype=np.int64)
    got = posterior.grouped_log_predictive(lik, data, lik.check_data(new), children, log_w,
                                           group, 1)[:, 0]
    members, _ = tree_clusters(children, np.ones(n - 1, bool), n)
    for row, x in enumerate(new):
        terms = [log_w[k] + lik.log_marginal_closed_form(np.vstack([X[sorted(m)], x]))
                 - lik.log_marginal_closed_form(X[sorted(m)]) for k, m in enumerate(members)]
        assert got[row] == pytest.approx(logsumexp(terms), abs=1e-8)


def test_greedy_merges_highest_r_first():
    """Greedy BHC (binary) takes the pair of largest r among the current clusters."""
    X, lik = dataset("diagonal", 9, seed=5)
    data = lik.kernel_data(X)
    children, _ = greedy_tree(lik, data, 1.0)
    n = 9
    members = [[i] for i in range(n)]
    log_s = {i: math.log(1.0) + lik.log_marginal(X[[i]]) for i in range(n)}
    active = set(range(n))
    for t, (a, b) in enumerate(children.tolist()):

        def log_r(i, j):
            m = members[i] + members[j]
            e = gammaln(len(m)) + lik.log_marginal(X[m])
            return e - np.logaddexp(e, log_s[i] + log_s[j])

        best = max(log_r(i, j) for i in active for j in active if i < j)
        assert log_r(a, b) == pytest.approx(best, abs=1e-9)
        members.append(members[a] + members[b])
        m = members[-1]
        e = gammaln(len(m)) + lik.log_marginal(X[m])
        log_s[n + t] = np.logaddexp(e, log_s[a] + log_s[b])
        active -= {a, b}
        active.add(n + t)


def test_rose_children_and_binarization():
    # merges: join(0,1)->5, join(2,3)->6, absorb 4 into 5 ->7, collapse(7,6)->8
    merges = np.array([[0, 1], [2, 3], [5, 4], [7, 6]])
    kinds = np.array([0, 0, 1, 3])
    children = rose_children(merges, kinds, 5)
    assert children == {8: [0, 1, 4, 2, 3]}
    binary, is_cluster = binarize_rose(children, 5)
    assert binary.tolist() == [[0, 1], [5, 4], [6, 2], [7, 3]]
    assert is_cluster.tolist() == [False, False, False, True]


def test_randomized_equals_greedy_below_the_sample_size():
    X, lik = dataset("gaussian", 12, seed=0)
    data = lik.kernel_data(X)
    greedy, _ = greedy_tree(lik, data, 1.0)
    randomized, _ = randomized_tree(lik, data, 1.0, subsample_size=12,
                                    random_state=np.random.RandomState(0))
    assert np.array_equal(greedy, randomized)


def test_randomized_tree_is_valid_and_splits_blobs():
    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(300, 3), rng.randn(300, 3) + 10, rng.randn(300, 3) - 10])
    lik = NormalInverseWishart().fit(X)
    data = lik.kernel_data(X)
    children, _ = randomized_tree(lik, data, 1.0, subsample_size=30,
                                  random_state=np.random.RandomState(1))
    from sklearn_trellis._core.trees import check_children
    check_children(children, 900)
    post = posterior.TreePosterior(children, np.ones(899, bool),
                                   posterior.node_log_marginals(lik, data, children), 1.0)
    labels = post.cut_labels()
    assert len(set(zip(labels.tolist(), np.repeat([0, 1, 2], 300).tolist()))) == 3
    with pytest.raises(ValueError, match="subsample_size"):
        randomized_tree(lik, data, 1.0, subsample_size=1, random_state=np.random.RandomState(0))


@pytest.mark.parametrize("rose", [False, True])
def test_greedy_search_in_chunks_makes_the_same_merges(monkeypatch, rose):
    """The greedy search runs in chunks (for progress lines): one row or merge per chunk
    gives the tree of a single chunk."""
    import io

    from sklearn_trellis._core import progress as progress_module
    from sklearn_trellis._core.progress import Progress
    from sklearn_trellis.engines.bhc import build

    X, lik = dataset("gaussian", 40, seed=3)
    data = lik.kernel_data(X)
    whole = greedy_tree(lik, data, 1.0, rose=rose)
    monkeypatch.setattr(build, "FIRST_CHUNK", 1)
    monkeypatch.setattr(progress_module, "CHUNK_SECONDS", 0.0)   # chunks never grow
    stream = io.StringIO()
    progress = Progress("BHC", verbose=1, interval=0.0, stream=stream)
    chunked = greedy_tree(lik, data, 1.0, rose=rose, progress=progress)
    np.testing.assert_array_equal(chunked[0], whole[0])
    np.testing.assert_array_equal(chunked[1], whole[1])
    lines = stream.getvalue().splitlines()
    assert sum("pair scores" in line for line in lines) == 40
    assert sum("merges" in line for line in lines) == 39
    assert "780/780 pair scores" in lines[39] and "39/39 merges" in lines[-1]
