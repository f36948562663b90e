"""Pooling chains: concatenation, warm-start appending, the interrupted-before-burn-in case."""

import numpy as np

from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.engines.gibbs.chains import collect_chains, n_clusters_frequencies
from sklearn_trellis.models import NormalGamma
from sklearn_trellis.models.priors import CRP


def _setup(n=9):
    X = np.random.default_rng(0).normal(size=(n, 2))
    lik = NormalGamma(hyperprior="fixed").fit(X)
    return lik, CRP(1.0), lik.kernel_data(X)


def test_collect_concatenates_chains_and_appends_to_previous():
    lik, prior, data = _setup()
    results = gibbs.run_chains(lik, prior, data, n_chains=2, random_state=0, n_sweeps=6,
                               burn_in=2, record=gibbs.record_params)
    chains = collect_chains(results, lik, prior, record=gibbs.record_params)
    np.testing.assert_array_equal(chains.samples, np.concatenate([r.samples for r in results]))
    np.testing.assert_array_equal(chains.log_joints,
                                  np.concatenate([r.log_joints for r in results]))
    assert chains.samples.dtype == np.int32 and chains.samples.shape == (8, 9)
    assert len(chains.records) == 8 and len(chains.states) == 2 and not chains.interrupted
    more = gibbs.run_chains(lik, prior, data, n_chains=2, random_state=1, n_sweeps=3,
                            states=chains.states, record=gibbs.record_params)
    continued = collect_chains(more, lik, prior, record=gibbs.record_params, previous=chains)
    assert continued.samples.shape == (14, 9) and len(continued.records) == 14
    np.testing.assert_array_equal(continued.samples[:8], chains.samples)
    np.testing.assert_array_equal(continued.alphas[8:], np.concatenate([r.alphas for r in more]))


def test_collect_keeps_the_states_when_no_sample_was_kept():
    lik, prior, data = _setup()
    results = gibbs.run_chains(lik, prior, data, n_chains=2, random_state=0, n_sweeps=3,
                               burn_in=3)
    assert sum(r.samples.shape[0] for r in results) == 0
    chains = collect_chains(results, lik, prior)
    assert chains.samples.shape == (2, 9) and chains.records is None
    for row, r in zip(chains.samples, results):
        np.testing.assert_array_equal(row, r.state.compact_labels())
    expected = [gibbs.log_joint(r.state, lik, prior.kernel_params()) for r in results]
    np.testing.assert_allclose(chains.log_joints, expected, rtol=1e-12)


def test_n_clusters_frequencies():
    samples = np.array([[0, 0, 1], [0, 1, 2], [0, 1, 1], [0, 0, 0]])
    np.testing.assert_allclose(n_clusters_frequencies(samples, 3), [0.25, 0.5, 0.25])
