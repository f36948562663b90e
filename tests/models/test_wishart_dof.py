"""FastTIWD's learned ``dof``: the complete likelihood in ``dof`` against dense brute force,
and the slice-sampled ``dof`` of the Gibbs chain against an exact posterior (issue 28)."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.spatial.distance import pdist, squareform

from oracles import set_partitions, wishart_complete_log_density
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.models.priors import make_prior
from sklearn_trellis.models.wishart import (block_cross_sums, block_statistics,
                                            centred_log_pdet, dof_log_likelihood,
                                            dof_log_likelihood_of_terms,
                                            translation_invariant_terms, wishart_terms)
from sklearn_trellis.models.wishart_likelihood import WishartBlockLikelihood


def _data(seed, n, dim, translation_invariant):
    """Inner products of ``n`` points in ``dim`` dimensions: ``X X^T``, or (distances) an
    arbitrary member ``-D / 2 + 1 u^T + u 1^T`` of the translation class."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim)) + np.repeat(rng.standard_normal((2, dim)), [n // 2,
                                                                                n - n // 2], 0)
    if not translation_invariant:
        return X @ X.T / dim
    u = rng.standard_normal(n)
    return -0.5 * squareform(pdist(X, "sqeuclidean")) / dim + np.add.outer(u, u)


@pytest.mark.parametrize("translation_invariant", [True, False])
@pytest.mark.parametrize("scale", [None, 0.8])
@pytest.mark.parametrize("seed", range(3))
def test_dof_log_likelihood_matches_dense(translation_invariant, scale, seed):
    """Every term of ``log p(S | B, theta, dof)`` at several ``dof``: absolute values match."""
    n = 6
    S = _data(seed, n, 9, translation_invariant)
    labels = np.random.default_rng(seed + 10).integers(0, 3, n)
    labels = np.unique(labels, return_inverse=True)[1]
    log_pdet = centred_log_pdet(S, translation_invariant=translation_invariant)
    sizes, sbars = block_statistics(S, labels)
    cross = block_cross_sums(S, labels) if translation_invariant else None
    for dof in (n + 0.5, 9.0, 23.7, 140.0):
        ours = dof_log_likelihood(dof, sizes, sbars, np.trace(S), n, 0.6, log_pdet=log_pdet,
                                  scale=scale, r0=0.3, s0=0.2, cross=cross)
        dense = wishart_complete_log_density(S, labels, 0.6, dof=dof, scale=scale, r0=0.3,
                                             s0=0.2,
                                             translation_invariant=translation_invariant)
        assert np.isclose(ours, dense, rtol=1e-8, atol=1e-7), (dof, ours, dense)


def test_dof_log_likelihood_outside_support_and_singular():
    S = _data(0, 6, 9, True)
    sizes, sbars = block_statistics(S, np.zeros(6, dtype=np.int64))
    cross = block_cross_sums(S, np.zeros(6, dtype=np.int64))
    log_pdet = centred_log_pdet(S, translation_invariant=True)
    assert dof_log_likelihood(4.0, sizes, sbars, np.trace(S), 6, 0.5, log_pdet=log_pdet,
                              cross=cross) == -np.inf     # dof <= r - 1 = 4
    # points in 3 < n - 1 dimensions: singular, the likelihood cannot learn dof
    assert centred_log_pdet(_data(0, 6, 3, True), translation_invariant=True) is None
    assert centred_log_pdet(_data(0, 6, 5, False), translation_invariant=False) is None
    model = WishartBlockLikelihood(dof=7.0, learn_dof=True, translation_invariant=True).fit(
        _data(0, 6, 3, True))
    assert not model.learns_dof_ and model.kernel_params()[8] == 0.0


@pytest.mark.parametrize("translation_invariant", [True, False])
def test_kernel_log_joint_is_complete_in_dof(translation_invariant):
    """With ``dof`` learned the engine's log joint is prior + the complete likelihood."""
    n = 6
    S = _data(1, n, 9, translation_invariant)
    labels = np.array([0, 0, 1, 1, 2, 0])
    model = WishartBlockLikelihood(learn_dof=True, theta=0.4,
                                   translation_invariant=translation_invariant).fit(S)
    prior = make_prior(1.0)
    sizes, sbars = block_statistics(S, labels)
    cross = block_cross_sums(S, labels) if translation_invariant else None
    values = []
    for dof in (8.0, 30.0):
        state = gibbs.new_state(model, model.kernel_data(S), labels, 1.0,
                                params=model.kernel_params(dof=dof))
        ours = gibbs.log_joint(state, model, prior.kernel_params())
        values.append(ours - model.dof_log_likelihood(dof, sizes, sbars, 0.4, cross))
    assert np.isclose(values[0], values[1], rtol=0, atol=1e-8)   # the prior alone


def _exact_posterior(S, theta, translation_invariant, log_dof_grid):
    """``P(B | S)`` (pairwise) and ``E[log dof | S]`` by enumerating partitions x a fine grid
    of ``log dof`` (flat prior on ``log dof``, CRP(1) prior, ``theta`` fixed)."""
    n = S.shape[0]
    log_pdet = centred_log_pdet(S, translation_invariant=translation_invariant)
    prior = make_prior(1.0)
    partitions = set_partitions(n)
    table = np.empty((len(partitions), log_dof_grid.size))
    for row, p in enumerate(partitions):
        sizes, sbars = block_statistics(S, p)
        if translation_invariant:
            terms = translation_invariant_terms(sizes, block_cross_sums(S, p), np.trace(S), theta)
        else:
            terms = wishart_terms(sizes, sbars, np.trace(S), theta)
        table[row] = prior.log_eppf(np.bincount(p)) + np.array(
            [dof_log_likelihood_of_terms(np.exp(u), *terms, rank=n - translation_invariant,
                                         log_pdet=log_pdet, r0=0.01, s0=0.01)
             for u in log_dof_grid])
    probs = np.exp(table - logsumexp(table))
    same = partitions[:, :, None] == partitions[:, None, :]
    pairwise = np.einsum("t,tij->ij", probs.sum(axis=1), same)
    # the grid holds it (the density vanishes at the support's edge dof = r - 1)
    assert probs[:, -5:].sum() < 1e-6 and probs[:, 0].sum() < 1e-3
    return pairwise, float(probs.sum(axis=0) @ log_dof_grid), probs.sum(axis=0)


@pytest.mark.parametrize("translation_invariant", [True, False])
def test_gibbs_with_learned_dof_matches_enumeration(translation_invariant):
    """The chain's partitions and ``dof`` against partitions x a ``log dof`` grid."""
    n = 5
    S = _data(3, n, 7, translation_invariant)
    low = np.log(n - 1 - translation_invariant)
    grid = low + np.linspace(1e-4, 7.0, 700)
    pairwise, mean_log_dof, dof_probs = _exact_posterior(S, 0.8, translation_invariant, grid)
    sd_log_dof = np.sqrt(dof_probs @ (grid - mean_log_dof) ** 2)
    model = WishartBlockLikelihood(dof=10.0, theta=0.8, learn_dof=True,
                                   translation_invariant=translation_invariant).fit(S)
    result = gibbs.run_chain(model, make_prior(1.0), model.kernel_data(S), n_sweeps=2500,
                             burn_in=100, random_state=0, init_labels=np.zeros(n, dtype=int),
                             record=gibbs.record_params)
    log_dofs = np.log(np.array(result.records)[:, 1])
    samples = np.asarray(result.samples)
    sampled = (samples[:, :, None] == samples[:, None, :]).mean(axis=0)
    assert np.abs(sampled - pairwise).max() < 0.04
    assert abs(log_dofs.mean() - mean_log_dof) < 0.12 * sd_log_dof
    assert abs(log_dofs.std() - sd_log_dof) < 0.1 * sd_log_dof
