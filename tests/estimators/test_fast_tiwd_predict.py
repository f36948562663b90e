"""FastTIWD.predict / predict_proba / score against the conditional of an enlarged matrix.

The points live in 3 dimensions, so ``S*`` has rank 3 < n - 1 and ``score`` leaves
out the Wishart terms of the data alone (with a warning; they are tested on
full-rank data in ``test_fast_tiwd_score``): the enumeration below leaves them out too.
"""

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score, pairwise_distances

from oracles import (dense_wishart_loglik, log_eppf, new_item_predictive_by_enumeration,
                     set_partitions)
from sklearn_trellis import FastTIWD
from sklearn_trellis.datasets import make_wishart_blocks
from sklearn_trellis.models.wishart import (block_cross_sums, block_statistics,
                                            collapsed_log_likelihood, log_likelihood_exponent,
                                            new_item_data_terms)
from sklearn_trellis.models.priors import make_prior
from sklearn_trellis.preprocessing.distance_normalization import (normalized_inner_products,
                                                                  project_distances)


def _points(rng, n):
    centers = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [0.0, 4.0, 0.0]])
    return centers[rng.integers(0, 3, n)] + rng.normal(0, 1.0, (n, 3))


def _enlarged_inner_products(D, d_new, normalization):
    """``S`` of the enlarged matrix with the new item at weight 0 (the fitted origin)."""
    _, info = normalized_inner_products(D, normalization)
    n = D.shape[0]
    big = np.zeros((n + 1, n + 1))
    big[:n, :n] = D
    big[n, :n] = big[:n, n] = d_new
    return project_distances(big, np.append(info["weights"], 0.0))


def _reference(model, D, D_new, log_joint):
    """:func:`~oracles.new_item_predictive_by_enumeration` of ``model``'s samples on ``D_new``."""
    enlarged = [_enlarged_inner_products(D, d_new, model.normalization) for d_new in D_new]
    return new_item_predictive_by_enumeration(model.samples_, model.labels_, model.n_clusters_,
                                              enlarged, log_joint)


@pytest.mark.filterwarnings("ignore:FastTIWD.score")
@pytest.mark.parametrize("normalization", ["single", "center"])
def test_fixed_scale_and_theta_match_enlarged_matrix(normalization):
    rng = np.random.default_rng(0)
    X = _points(rng, 9)
    new = _points(rng, 3)
    D = pairwise_distances(X, metric="sqeuclidean")
    D_new = pairwise_distances(new, X, metric="sqeuclidean")
    model = FastTIWD(scale=0.5, theta=2.0, dof=3.0, alpha=0.7, n_sweeps=20,
                     normalization=normalization, random_state=0).fit(D)
    assert model.method_ == "gibbs"   # distances: the translation-invariant likelihood
    prior = make_prior(0.7)

    def log_joint(S, labels):
        # log p(B, S | scale, theta) of the translation-invariant likelihood
        sizes, sbars = block_statistics(S, labels)
        lik = collapsed_log_likelihood(sizes, sbars, np.trace(S), S.shape[0], 2.0, dof=3.0,
                                       scale=0.5, cross=block_cross_sums(S, labels))
        return prior.log_eppf(sizes) + lik - 1.5 * (S.shape[0] - 1) * np.log(0.5)

    proba, density = _reference(model, D, D_new, log_joint)
    np.testing.assert_allclose(model.predict_proba(D_new), proba, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(model.score_samples(D_new), density, rtol=1e-8)
    assert model.score(D_new) == pytest.approx(density.mean(), rel=1e-8)
    np.testing.assert_array_equal(model.predict(D_new), np.argmax(proba, axis=1))


@pytest.mark.filterwarnings("ignore:FastTIWD.score")
@pytest.mark.parametrize("n_blocks", [None, 4])
def test_gibbs_mode_matches_enlarged_matrix(n_blocks):
    rng = np.random.default_rng(1)
    X = _points(rng, 10)
    new = _points(rng, 3)
    D = pairwise_distances(X, metric="sqeuclidean")
    D_new = pairwise_distances(new, X, metric="sqeuclidean")
    model = FastTIWD(n_sweeps=24, dof=4.0, n_blocks=n_blocks, random_state=0).fit(D)
    assert model.method_ == "gibbs" and len(model.samples_) <= 25
    prior = make_prior(1.0, n_components=n_blocks)
    theta = None

    def log_joint(S, labels):
        n = S.shape[0]
        sizes, sbars = block_statistics(S, labels)
        # s0 in the data's units, as the fit and the predictive use it (issue 31 item 2)
        lik = collapsed_log_likelihood(sizes, sbars, np.trace(S), n, theta, dof=4.0,
                                       s0=model._s0(), cross=block_cross_sums(S, labels))
        # scale's integral Gamma(a) ((d/2)(T + s0))^-a: the factors that depend on n
        a = log_likelihood_exponent(n - 1, 4.0, 0.01)
        return prior.log_eppf(sizes) + lik + gammaln(a) - a * np.log(2.0)

    probas, densities = [], []
    for index in range(len(model.samples_)):
        theta = model.theta_samples_[index]
        single = FastTIWD(n_sweeps=24, dof=4.0, n_blocks=n_blocks)
        single.__dict__.update(model.__dict__)
        single.samples_ = model.samples_[[index]]
        single.theta_samples_ = model.theta_samples_[[index]]
        p, d = _reference(single, D, D_new, log_joint)
        probas.append(p)
        densities.append(d)
    # each sample weighted by its predictive density of the item (the posterior given it)
    weights = np.exp(np.array(densities) - logsumexp(densities, axis=0))
    np.testing.assert_allclose(model.predict_proba(D_new),
                               np.einsum("si,sik->ik", weights, np.array(probas)),
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(model.score_samples(D_new),
                               logsumexp(densities, axis=0) - np.log(len(densities)), rtol=1e-8)


def test_feature_rows_match_precomputed():
    rng = np.random.default_rng(2)
    X = _points(rng, 30)
    new = _points(rng, 5)
    kwargs = dict(n_sweeps=20, dof=4.0, random_state=0)
    rows = FastTIWD(metric="sqeuclidean", **kwargs).fit(X)
    pre = FastTIWD(**kwargs).fit(pairwise_distances(X, metric="sqeuclidean"))
    np.testing.assert_allclose(rows.predict_proba(new),
                               pre.predict_proba(pairwise_distances(new, X, metric="sqeuclidean")),
                               rtol=1e-7, atol=1e-10)
    plain = FastTIWD(metric="sqeuclidean", normalization="none", **kwargs).fit(X)
    np.testing.assert_allclose(plain.predict_proba(new).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="features"):
        pre.predict(np.zeros((2, 7)))
    with pytest.raises(ValueError, match="Negative"):
        pre.predict(-np.ones((2, 30)))


def test_held_out_items_of_the_benchmark():
    data = make_wishart_blocks(n_samples=400, random_state=3)
    D, target = data.distances, data.target
    rng = np.random.default_rng(0)
    order = rng.permutation(400)
    fitted, held_out = np.sort(order[:300]), np.sort(order[300:])
    model = FastTIWD(n_sweeps=60, random_state=0).fit(D[np.ix_(fitted, fitted)])
    fitted_ari = adjusted_rand_score(target[fitted], model.labels_)
    predicted = model.predict(D[np.ix_(held_out, fitted)])
    held_ari = adjusted_rand_score(target[held_out], predicted)
    assert fitted_ari > 0.8
    assert held_ari > fitted_ari - 0.1
    # dof='auto' is learned inside the Wishart's support (dof > rank - 1 = 298): the truth
    # is 300, and the score is finite
    assert 298 < model.dof_samples_.min() and abs(model.dof_ - 300) < 0.15 * 300
    assert np.isfinite(model.score(D[np.ix_(held_out, fitted)]))
    # a fixed dof = 240 (the moment estimate) does not exceed the rank 299 of S*
    model.set_params(dof=240.0, n_sweeps=20).fit(D[np.ix_(fitted, fitted)])
    with pytest.warns(UserWarning, match="does not exceed the rank 299"):
        assert model.score(D[np.ix_(held_out, fitted)]) == -np.inf


def test_cluster_sums_follow_a_chain_of_partitions():
    from sklearn_trellis.models.wishart import ClusterSums

    rng = np.random.default_rng(4)
    n, m = 60, 4
    A = rng.normal(size=(n, 5))
    S = A @ A.T
    rows = rng.normal(size=(m, n))
    sums = ClusterSums(S, rows)
    labels = rng.integers(0, 4, n)
    for step in range(30):
        moved = rng.choice(n, rng.integers(0, 12), replace=False)
        labels = labels.copy()
        labels[moved] = rng.integers(0, 6, moved.size)
        compact = np.unique(rng.permutation(7)[labels], return_inverse=True)[1]  # relabelled
        sizes, sbars, row_sums = sums.of_labels(compact)
        ref_sizes, ref_sbars = block_statistics(S, compact)
        np.testing.assert_allclose(sizes, ref_sizes)
        np.testing.assert_allclose(sbars, ref_sbars, rtol=1e-10, atol=1e-9)
        ref_rows = np.column_stack([rows[:, compact == b].sum(axis=1)
                                    for b in range(compact.max() + 1)])
        np.testing.assert_allclose(row_sums, ref_rows, rtol=1e-10, atol=1e-9)


def _with_samples(model, picks):
    """A copy of the fitted ``model`` keeping the kept samples ``picks`` only."""
    copy = FastTIWD(**model.get_params())
    copy.__dict__.update(model.__dict__)
    for name in ("samples_", "theta_samples_", "dof_samples_"):
        setattr(copy, name, getattr(model, name)[picks])
    return copy


def test_predict_proba_weighs_each_sample_by_its_predictive_density_dof_included():
    """The samples' probabilities are averaged with self-normalised weights
    ``p(x | z_s, theta_s, dof_s, S*)``, the density :meth:`score_samples` reports for a
    single sample; with ``dof`` learned the samples' Wishart terms of the data alone
    differ, and are part of the weights. (Full-rank points: those terms are kept.)"""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(8, 12))
    X[:4] += 1.5
    new = rng.normal(size=(3, 12)) + np.array([[1.5], [0.0], [0.7]])
    D = pairwise_distances(X, metric="sqeuclidean")
    D_new = pairwise_distances(new, X, metric="sqeuclidean")
    model = FastTIWD(n_sweeps=40, random_state=0).fit(D)
    first, second = 0, len(model.samples_) - 1
    assert model.dof_samples_[first] != model.dof_samples_[second]
    pair = _with_samples(model, [first, second])
    singles = [_with_samples(model, [index]) for index in (first, second)]
    log_densities = np.array([single.score_samples(D_new) for single in singles])
    weights = np.exp(log_densities - logsumexp(log_densities, axis=0))
    expected = sum(w[:, None] * single.predict_proba(D_new)
                   for w, single in zip(weights, singles))
    np.testing.assert_allclose(pair.predict_proba(D_new), expected, rtol=1e-10, atol=1e-14)
    # the unweighted mean of the two, reported before, is another quantity
    unweighted = np.mean([single.predict_proba(D_new) for single in singles], axis=0)
    assert np.abs(pair.predict_proba(D_new) - unweighted).max() > 1e-3


@pytest.mark.parametrize("semi_supervised", [False, True])
def test_exact_mode_predicts_from_the_exact_posterior_of_the_n_plus_1_items(semi_supervised):
    # normalization='none' with scale and theta fixed: the exact mode's predict_proba and
    # score_samples sum over every partition of the n + 1 items (not over exact draws)
    rng = np.random.default_rng(3)
    n, d, scale, theta, dof, alpha = 6, 10, 0.7, 1.5, 12.0, 0.8
    X = rng.normal(size=(n, d))
    X[:3] += 1.5
    new = np.vstack([rng.normal(size=(2, d)), X[0] + 0.1])
    y = np.array([0, -1, -1, 1, -1, -1]) if semi_supervised else None
    model = FastTIWD(metric="sqeuclidean", normalization="none", scale=scale, theta=theta,
                     dof=dof, alpha=alpha, n_sweeps=5, random_state=0).fit(X, y)
    assert model.method_ == "exact"

    def allowed(partitions, known):
        keep = [all(np.unique(p[known == c]).size == 1 for c in (0, 1))
                and p[known == 0][0] != p[known == 1][0] for p in partitions]
        return partitions[np.array(keep)] if semi_supervised else partitions

    def log_joints(S, partitions):
        return np.array([log_eppf(np.bincount(p), alpha)
                         + dense_wishart_loglik(S, p, scale, theta, dof) for p in partitions])

    known = np.array([0, -1, -1, 1, -1, -1, -1])
    fitted = allowed(set_partitions(n), known[:n])
    enlarged = allowed(set_partitions(n + 1), known)
    log_z = logsumexp(log_joints(X @ X.T, fitted))
    K = model.n_clusters_
    proba = model.predict_proba(new)
    for r in range(new.shape[0]):
        joined = np.vstack([X, new[r]])
        values = log_joints(joined @ joined.T, enlarged)
        weights = np.exp(values - logsumexp(values))
        expected = np.zeros(K + 1)
        for z, weight in zip(enlarged, weights):
            shared = np.flatnonzero(z[:n] == z[n])
            if shared.size:
                counts = np.bincount(model.labels_[shared], minlength=K)
                expected[:K] += weight * counts / shared.size
            else:
                expected[K] += weight
        np.testing.assert_allclose(proba[r], expected, rtol=1e-9, atol=1e-12)
        # score_samples: the same sum's density plus the Wishart terms of the data alone,
        # which is the difference of the two exact fits' log marginal likelihoods
        bigger = clone(model).fit(joined, None if y is None else np.append(y, -1))
        assert model.score_samples(new[r:r + 1])[0] == pytest.approx(
            bigger.log_marginal_likelihood_ - model.log_marginal_likelihood_, rel=1e-10)
        assert logsumexp(values) - log_z == pytest.approx(
            bigger.log_marginal_likelihood_ - model.log_marginal_likelihood_
            - (new_item_data_terms(X @ X.T, (X @ new[r])[None], np.array([new[r] @ new[r]]),
                                   dof=np.array([dof]))[0][0, 0]), rel=1e-9)
    # the item next to fitted item 0 joins its cluster; the draws do not enter
    assert np.argmax(proba[2]) == model.labels_[0]
    other = clone(model).set_params(random_state=7).fit(X, y)
    np.testing.assert_array_equal(other.predict_proba(new), proba)
