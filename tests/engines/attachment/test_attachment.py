"""The attachment posterior against brute-force insertion and re-evaluation.

For every energy, inserting a new leaf above each node of a fitted tree, and
evaluating ``log_potential`` of the enlarged tree under the model refitted on
the enlarged data (the fitted length scale and centring held fixed), must give
the kernel's ``delta`` for every one of the ``2N - 1`` positions.
"""

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform
from sklearn.metrics import pairwise_distances

from sklearn_trellis import TrellisHierarchical
from sklearn_trellis._core.trees import children_to_tree
from sklearn_trellis.engines.attachment import AttachmentTree, cluster_attachment_proba
from sklearn_trellis.models import (CallableEnergy, DasguptaEnergy, ExponentialTreeEnergy,
                                    GinkgoEnergy, HCCEnergy)

N_ITEMS = 7


def enlarged_trees(children, n):
    """``{v: tree with item n inserted above node v}`` as nested tuples (brute force)."""
    nodes = list(range(n)) + [None] * (n - 1)
    out = {}
    for target in range(2 * n - 1):
        built = {}
        for v in range(n):
            built[v] = (v, n) if v == target else v
        for k, (a, b) in enumerate(children):
            node = (built[a], built[b])
            built[n + k] = (node, n) if n + k == target else node
        out[target] = built[2 * n - 2]
    del nodes
    return out


def _random_tree(rng, n):
    clusters = list(range(n))
    children = []
    next_id = n
    while len(clusters) > 1:
        i, j = rng.choice(len(clusters), 2, replace=False)
        children.append([clusters[i], clusters[j]])
        clusters = [c for t, c in enumerate(clusters) if t not in (i, j)] + [next_id]
        next_id += 1
    return np.array(children)


def _momenta(rng, m):
    """Massive 4-momenta (E large enough for positive invariant mass)."""
    p = rng.normal(0, 3, (m, 3))
    e = np.sqrt((p ** 2).sum(axis=1) + rng.uniform(20, 60, m))
    return np.column_stack([e, p])


def _balance(X, left, right):
    return -abs(len(left) - len(right)) - 0.1 * float(X[left, 0].sum() - X[right, 0].sum())


def fitted_and_enlarged(name, rng):
    """``(model, new rows for the model, [enlarged model per new row])``."""
    if name == "ginkgo":
        X = _momenta(rng, N_ITEMS)
        new = _momenta(rng, 3)
        model = GinkgoEnergy(t_cut=4.0).fit(X)
        enlarged = [GinkgoEnergy(t_cut=4.0).fit(np.vstack([X, row])) for row in new]
        return model, new, enlarged
    X = rng.normal(size=(N_ITEMS, 2))
    new_X = rng.normal(size=(3, 2))
    if name == "callable":
        model = CallableEnergy(_balance).fit(X)
        return model, new_X, [CallableEnergy(_balance).fit(np.vstack([X, row]))
                              for row in new_X]
    D = pairwise_distances(X)
    new_D = pairwise_distances(new_X, X)
    big = [pairwise_distances(np.vstack([X, row])) for row in new_X]
    if name == "dasgupta":
        # one length scale: the enlarged models then see the fitted one
        model = DasguptaEnergy(scale="median").fit(D)
        return model, new_D, [DasguptaEnergy(scale=model.scale_).fit(d) for d in big]
    model = HCCEnergy().fit(D)
    enlarged = []
    for d in big:
        w = np.exp(-d / model.scale_) - model.offset_
        np.fill_diagonal(w, 0.0)
        enlarged.append(HCCEnergy(similarity="precomputed").fit(w))
    return model, new_D, enlarged


@pytest.mark.parametrize("name", ["dasgupta", "hcc", "ginkgo", "callable"])
@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_insertion_deltas_match_brute_force(name, beta):
    rng = np.random.default_rng(3)
    model, new, enlarged = fitted_and_enlarged(name, rng)
    for seed in range(3):
        children = _random_tree(np.random.default_rng(seed), N_ITEMS)
        base = model.log_potential(children_to_tree(children, N_ITEMS), beta)
        if not np.isfinite(base):
            continue
        deltas = AttachmentTree(children, N_ITEMS).insertion_log_potentials(model, new, beta)
        assert deltas.shape == (3, 2 * N_ITEMS - 1)
        for j, big in enumerate(enlarged):
            for v, tree in enlarged_trees(children, N_ITEMS).items():
                expected = big.log_potential(tree, beta) - base
                if expected == -np.inf:
                    assert deltas[j, v] == -np.inf
                else:
                    assert deltas[j, v] == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_exponential_tree_positions_are_those_of_the_n_plus_one_item_model(beta):
    # every rate becomes beta |S| / (N + 1): positions differ by the enlarged model's
    # log-likelihood of the whole enlarged tree, the fitted splits' reweighting included
    rng = np.random.default_rng(4)
    X = rng.normal(size=(N_ITEMS + 2, 2))
    d = pairwise_distances(X)
    model = ExponentialTreeEnergy(scale=0.8).fit(d[:N_ITEMS, :N_ITEMS])
    for seed in range(2):
        children = _random_tree(np.random.default_rng(seed), N_ITEMS)
        deltas = AttachmentTree(children, N_ITEMS).insertion_log_potentials(
            model, d[N_ITEMS:, :N_ITEMS], beta)
        for j in range(2):
            big = ExponentialTreeEnergy(scale=0.8).fit(d[:N_ITEMS, :N_ITEMS])
            big = big.with_new_item(d[N_ITEMS + j, :N_ITEMS])
            log_phi = np.array([big.log_potential(tree, beta) for _, tree in
                                sorted(enlarged_trees(children, N_ITEMS).items())])
            np.testing.assert_allclose(deltas[j] - deltas[j, 0], log_phi - log_phi[0],
                                       rtol=1e-9, atol=1e-9)


def test_ginkgo_deltas_are_finite_somewhere():
    # the Ginkgo brute force above must not pass vacuously on forbidden trees only
    rng = np.random.default_rng(3)
    model, new, _ = fitted_and_enlarged("ginkgo", rng)
    children = _random_tree(np.random.default_rng(0), N_ITEMS)
    assert np.isfinite(model.log_potential(children_to_tree(children, N_ITEMS)))
    deltas = AttachmentTree(children, N_ITEMS).insertion_log_potentials(model, new)
    assert np.isfinite(deltas).any(axis=1).all()


def test_kernel_and_split_by_split_paths_agree():
    rng = np.random.default_rng(5)
    model, new, _ = fitted_and_enlarged("dasgupta", rng)
    children = _random_tree(rng, N_ITEMS)
    tree = AttachmentTree(children, N_ITEMS)
    fast = tree.insertion_log_potentials(model, new, 0.7)
    slow = tree._split_by_split(model, new, 0.7)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-10)


def test_cluster_proba_rule():
    # tree ((0, 1), (2, (3, 4))) cut into {0,1} {2} {3,4}
    children = np.array([[0, 1], [3, 4], [2, 6], [5, 7]])
    labels = np.array([0, 0, 1, 2, 2])
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(9), size=4)
    out = cluster_attachment_proba(children, labels, np.log(proba) + 3.0)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    own = np.column_stack([proba[:, [0, 1, 5]].sum(1), proba[:, 2], proba[:, [3, 4, 6]].sum(1)])
    # node 7 = {2, 3, 4} is above the cut: shared between clusters 1 and 2 by their mass;
    # the root (8) is shared among all three
    below7 = own[:, 1] + own[:, 2]
    share_root = proba[:, 8] / own.sum(axis=1)
    expected = own * (1 + share_root[:, None])
    expected[:, 1:] += proba[:, [7]] * own[:, 1:] / below7[:, None] * (1 + share_root[:, None]) \
        - proba[:, [7]] * own[:, 1:] / below7[:, None] * share_root[:, None]
    np.testing.assert_allclose(out, expected)


@pytest.mark.parametrize("energy", ["dasgupta", "hcc"])
def test_estimator_predict(energy):
    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = np.concatenate([c + rng.normal(0, 0.5, (5, 2)) for c in centers])
    model = TrellisHierarchical(n_clusters=3, energy=energy, linkage="average").fit(X)
    new = np.concatenate([c + rng.normal(0, 0.5, (4, 2)) for c in centers])
    proba = model.predict_proba(new)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    truth = np.repeat(model.labels_[[0, 5, 10]], 4)
    np.testing.assert_array_equal(model.predict(new), truth)
    # precomputed distances give the same answer: the fit's own distances are scipy's
    # exact ones, and HCC's MAP tree has near-ties that 1e-16 differences would break
    pre = TrellisHierarchical(n_clusters=3, energy=energy, metric="precomputed",
                              linkage="average").fit(
        squareform(pdist(X)))
    np.testing.assert_allclose(pre.predict_proba(pairwise_distances(new, X)), proba,
                               rtol=1e-9, atol=1e-12)
    log_proba = model.attachment_log_proba(new)
    assert log_proba.shape == (12, 2 * X.shape[0] - 1)
    np.testing.assert_allclose(np.exp(log_proba).sum(axis=1), 1.0)


def test_estimator_predict_sparse_and_errors():
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(0, 1, (15, 2)), rng.normal(8, 1, (15, 2))])
    model = TrellisHierarchical(n_clusters=2, max_exact_size=8).fit(X)
    assert model.approximation_ is not None
    new = np.array([[0.0, 0.0], [8.0, 8.0]])
    np.testing.assert_array_equal(model.predict(new), model.labels_[[0, 15]])
    with pytest.raises(ValueError):
        model.predict(np.zeros((2, 3)))
    pre = TrellisHierarchical(n_clusters=2, metric="precomputed", linkage="average").fit(pairwise_distances(X[:6]))
    with pytest.raises(ValueError, match="features"):
        pre.predict(np.zeros((2, 5)))


def test_estimator_predict_callable_energy():
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(0, 0.3, (3, 1)), rng.normal(5, 0.3, (3, 1))])

    def tight(X, left, right):
        return -float(np.var(X[left]) * len(left) + np.var(X[right]) * len(right))

    model = TrellisHierarchical(n_clusters=2, energy=tight).fit(X)
    new = np.array([[0.1], [5.2]])
    proba = model.predict_proba(new)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.predict(new), model.labels_[[0, 3]])
    with pytest.raises(ValueError, match="callable"):
        TrellisHierarchical(energy=tight, metric="precomputed", linkage="average").fit(
            pairwise_distances(X)).predict(np.zeros((1, 6)))


def test_estimator_predict_with_connectivity_and_partial_tree():
    # children_ stops early (compute_full_tree=False with a graph): predict
    # still places new items in the full MAP tree and agrees with the full fit.
    from sklearn.neighbors import kneighbors_graph
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(0, 0.3, (12, 2)), rng.normal(4, 0.3, (12, 2))])
    graph = kneighbors_graph(X, 4, include_self=False)
    new = np.array([[0.1, 0.0], [4.1, 3.9], [2.0, 2.0]])
    with pytest.warns(UserWarning, match="connected components"):
        partial = TrellisHierarchical(n_clusters=2, connectivity=graph,
                                      compute_full_tree=False).fit(X)
        full = TrellisHierarchical(n_clusters=2, connectivity=graph,
                                   compute_full_tree=True).fit(X)
    assert partial.children_.shape[0] < full.children_.shape[0] == X.shape[0] - 1
    assert partial.attachment_log_proba(new).shape == (3, 2 * X.shape[0] - 1)
    np.testing.assert_allclose(partial.predict_proba(new), full.predict_proba(new))
    np.testing.assert_array_equal(partial.predict(new[:2]), partial.labels_[[0, 12]])
