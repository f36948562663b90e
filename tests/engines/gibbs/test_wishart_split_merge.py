"""Split-merge moves of the shared Gibbs engine on the Wishart block likelihood of fastTIWD,
in both modes: the translation-invariant likelihood of distances (whose cross-block sums live
in ``work`` and in every slot's row) and the Wishart likelihood of ``S`` itself. Split-merge
proposals alone (no Gibbs scan) against the posterior enumerated with dense matrices, and
the state after rejected proposals against a rebuild."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from oracles import translation_invariant_posterior_summaries, wishart_posterior_summaries
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.models.priors import CRP
from sklearn_trellis.models.wishart_likelihood import WishartBlockLikelihood

THETA, DOF, SCALE, ALPHA = 1.5, 2.0, 0.6, 0.7   # alpha != 1: log_count(K) matters


def _rows(seed, n, dim=3):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0] * dim, [1.2] * dim])
    return rng.standard_normal((n, dim)) * 0.8 + centres[np.arange(n) % 2]


def _model(translation_invariant, n=6, seed=2, enumerate_partitions=True):
    """``(likelihood, data, exact pairwise, exact P(K))`` of a spread-out posterior (the
    exact values None without ``enumerate_partitions``)."""
    X = _rows(seed, n)
    D = squareform(pdist(X, "sqeuclidean"))
    S = -0.5 * D + np.add.outer(X[:, 0], X[:, 0]) if translation_invariant else X @ X.T
    exact = dict(pairwise=None, k_dist=None)
    if enumerate_partitions and translation_invariant:   # any S with distances D
        exact = translation_invariant_posterior_summaries(D, THETA, DOF, ALPHA, scale=SCALE)
    elif enumerate_partitions:
        exact = wishart_posterior_summaries(S, SCALE, THETA, DOF, ALPHA)
    likelihood = WishartBlockLikelihood(dof=DOF, scale=SCALE, theta=THETA,
                                        translation_invariant=translation_invariant).fit(S)
    return likelihood, likelihood.kernel_data(S), exact["pairwise"], exact["k_dist"]


def _split_merge_chain(likelihood, data, n_steps, n_split_merge=3, seed=0):
    n = data.shape[0]
    state = gibbs.new_state(likelihood, data, np.zeros(n, np.int64), ALPHA)
    gibbs.set_params(state, likelihood, data, state.params)
    rng = np.random.RandomState(seed)
    samples = np.empty((n_steps, n), np.int64)
    accepted = 0
    for t in range(n_steps):
        accepted += gibbs.sweep(state, likelihood, CRP(ALPHA).kernel_params(), data, rng,
                                n_split_merge=n_split_merge, scan=False)
        samples[t] = state.compact_labels()
    return samples, accepted, state


@pytest.mark.parametrize("translation_invariant", [True, False], ids=["distances", "S"])
def test_split_merge_alone_matches_enumeration(translation_invariant):
    """Split-merge proposals are a valid MCMC kernel on their own: co-clustering and
    number-of-clusters frequencies within Monte Carlo error (batch means) of the posterior
    enumerated over all 203 partitions with dense matrices."""
    likelihood, data, pair_exact, k_exact = _model(translation_invariant)
    n = data.shape[0]
    iu = np.triu_indices(n, 1)
    assert np.sum((pair_exact[iu] > 0.1) & (pair_exact[iu] < 0.9)) >= 4  # spread out
    n_steps, n_batches = 6000, 20
    samples, accepted, _ = _split_merge_chain(likelihood, data, n_steps + 100)
    samples = samples[100:]
    assert 0.05 < accepted / (3 * (n_steps + 100)) < 0.95
    k = samples.max(axis=1) + 1
    features = np.hstack([samples[:, iu[0]] == samples[:, iu[1]],
                          (k[:, None] == np.arange(1, n + 1)[None, :])]).astype(float)
    exact = np.concatenate([pair_exact[iu], k_exact])
    freq = features.mean(axis=0)
    batches = features.reshape(n_batches, -1, features.shape[1]).mean(axis=1)
    se = batches.std(axis=0, ddof=1) / np.sqrt(n_batches)
    assert np.all(np.abs(freq - exact) < 5 * se + 5e-3), np.abs(freq - exact) / (se + 1e-12)


@pytest.mark.parametrize("translation_invariant", [True, False], ids=["distances", "S"])
def test_rejected_proposals_restore_the_state(translation_invariant):
    """After many proposals (most rejected), the state (log joint, each slot's statistics,
    the cross-block sums, zero sums of the free slots) equals one rebuilt from its labels."""
    likelihood, data, _, _ = _model(translation_invariant, n=12, seed=3,
                                    enumerate_partitions=False)
    samples, accepted, state = _split_merge_chain(likelihood, data, 200, n_split_merge=5)
    assert 0 < accepted < 5 * 200
    rebuilt = gibbs.new_state(likelihood, data, state.labels, ALPHA, capacity=state.capacity)
    gibbs.set_params(rebuilt, likelihood, data, rebuilt.params)
    pp = CRP(ALPHA).kernel_params()
    assert gibbs.log_joint(state, likelihood, pp) == pytest.approx(
        gibbs.log_joint(rebuilt, likelihood, pp), rel=1e-12, abs=1e-10)
    ours = state.active[:state.n_clusters]
    # the rebuild numbers the slots by sorted label: slot of each of our clusters
    theirs = rebuilt.labels[[int(np.flatnonzero(state.labels == c)[0]) for c in ours]]
    np.testing.assert_allclose(state.stats[ours], rebuilt.stats[theirs], rtol=1e-10, atol=1e-10)
    if translation_invariant:
        np.testing.assert_allclose(likelihood.cross_sums(state.stats, state.work, ours),
                                   likelihood.cross_sums(rebuilt.stats, rebuilt.work, theirs),
                                   rtol=1e-10, atol=1e-10)
        cross = likelihood.cross_sums(state.stats, state.work, np.arange(state.capacity))
        np.fill_diagonal(cross, 0.0)
        free = state.free[:state.meta[1]]
        assert np.all(cross[free] == 0.0)   # a free slot holds no cross-block sums
        assert np.all(state.stats[free, :3] == 0.0)
