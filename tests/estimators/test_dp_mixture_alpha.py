"""DPMixture's alpha: the exact evidence carries every alpha-dependent term (its
gradient is the posterior expected number of clusters), and the held-out score moves
with alpha as the CRP's predictive weights say (issue 28)."""

import numpy as np
import pytest

from sklearn_trellis import DPMixture


def _separated(sizes, seed=0):
    rng = np.random.default_rng(seed)
    centres = 40.0 * np.arange(len(sizes))[:, None] * np.array([[1.0, 0.5]])
    return np.vstack([c + 0.3 * rng.normal(size=(s, 2)) for c, s in zip(centres, sizes)])


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_evidence_gradient_in_alpha_is_the_posterior_expected_count(alpha):
    # log p(X | alpha) = log sum_z alpha^K Gamma(alpha) / Gamma(alpha + n) prod Gamma(n_k) p(X | z)
    # so d/d alpha = E[K | X] / alpha - sum_i 1 / (alpha + i): every alpha term, checked
    # against finite differences of the exact evidence
    X = _separated([4, 3, 2, 1])
    n = len(X)

    def fit(a):
        return DPMixture(alpha=a, method="exact", n_sweeps=1, random_state=0).fit(X)
    model = fit(alpha)
    expected_k = np.arange(1, n + 1) @ model.n_clusters_distribution_
    gradient = expected_k / alpha - np.sum(1.0 / (alpha + np.arange(n)))
    h = 1e-4 * alpha
    numeric = (fit(alpha + h).log_marginal_likelihood_
               - fit(alpha - h).log_marginal_likelihood_) / (2 * h)
    assert numeric == pytest.approx(gradient, rel=1e-5, abs=1e-7)


def test_score_rewards_the_alpha_that_predicts_new_clusters():
    X = _separated([4, 4])
    far = _separated([1, 1, 1], seed=1)[[0, 1, 2]] + np.array([[500.0, -300.0]])
    near = X[:2] + 0.01
    scores = {a: DPMixture(alpha=a, method="exact", n_sweeps=30, random_state=0).fit(X)
              for a in (0.1, 10.0)}
    # points of a new cluster: the larger alpha / (n + alpha) wins; old clusters: the smaller
    assert scores[10.0].score(far) > scores[0.1].score(far)
    assert scores[0.1].score(near) > scores[10.0].score(near)
