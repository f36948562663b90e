"""DPMixture.score in exact mode: the held-out rows' exact log posterior predictive (issue 28).

An exact fit sums the predictive of a new row over every partition (and hyperparameter
grid point), so a row's score is ``log p(X + x) - log p(X)``: checked against the
evidences of two exact fits, against brute-force enumeration of the partitions of the
``n + 1`` rows with the textbook closed-form marginals, and for its sensitivity to the
new-cluster term and the ``n + alpha`` normaliser."""

import dataclasses

import numpy as np
import pytest
from scipy.special import logsumexp

from oracles import conjugate_log_marginal, partition_log_joints
from sklearn_trellis import DPMixture
from sklearn_trellis.engines.exact.grid_marginal import GridMarginalPosterior
from sklearn_trellis.models import BetaBernoulli, NormalGamma, NormalInverseWishart

PRIORS = {"crp": dict(alpha=0.6), "pitman_yor": dict(alpha=1.3, discount=0.4),
          "finite": dict(alpha=2.0, n_prior_components=3)}


def _draw(kind, rng, n):
    if kind == "bernoulli":
        return (rng.random_sample((n, 4)) < 0.4).astype(float)
    if kind == "multinomial":
        return rng.poisson(2.0, size=(n, 3)).astype(float)
    X = rng.normal(size=(n, 2))
    X[: n // 2] += 2.5
    return X


def _evidence_with(model, rows):
    """``log p(X + rows)`` under the fitted model's likelihood and prior (a second exact
    posterior, not the predictive)."""
    data = np.vstack([model._data, model.model_.check_data(rows)])
    return GridMarginalPosterior(model.prior_, model.model_, data.shape[0]).fit(
        data).log_marginal_likelihood


@pytest.mark.parametrize("prior", list(PRIORS))
@pytest.mark.parametrize("kind", ["gaussian", "diagonal", "bernoulli", "multinomial"])
def test_exact_score_is_the_ratio_of_two_exact_evidences(kind, prior):
    rng = np.random.RandomState(0)
    X, new = _draw(kind, rng, 5), _draw(kind, rng, 2)
    new[1] += 0 if kind in ("bernoulli", "multinomial") else 6.0   # a far row
    model = DPMixture(kind, method="exact", n_sweeps=5, random_state=0, **PRIORS[prior]).fit(X)
    expected = [_evidence_with(model, row[None]) - model.log_marginal_likelihood_
                for row in new]
    assert np.allclose(model.score_samples(new), expected, rtol=0, atol=1e-10)
    assert model.score(new) == pytest.approx(np.mean(expected), abs=1e-10)


@pytest.mark.parametrize("prior", list(PRIORS))
@pytest.mark.parametrize("likelihood", [
    NormalInverseWishart(hyperprior="fixed"), NormalGamma(hyperprior="fixed"),
    BetaBernoulli(a=0.7, b=1.5)])
def test_exact_score_matches_brute_force_enumeration(likelihood, prior):
    """Every partition of the ``n + 1`` rows and of the ``n`` rows, each scored by the
    prior's EPPF and the closed-form marginals of the likelihood fitted to ``X``."""
    kind = "bernoulli" if isinstance(likelihood, BetaBernoulli) else "gaussian"
    rng = np.random.RandomState(1)
    X, x = _draw(kind, rng, 4), _draw(kind, rng, 1)
    model = DPMixture(likelihood, method="exact", n_sweeps=5, random_state=0,
                      **PRIORS[prior]).fit(X)
    assert model.model_.hyperparameter_grid() is None

    def log_evidence(data):
        log_joint = partition_log_joints(
            data.shape[0], model.prior_.log_eppf,
            lambda members: conjugate_log_marginal(model.model_, data[members]))[1]
        return logsumexp(log_joint)

    expected = log_evidence(np.vstack([X, x])) - log_evidence(X)
    assert model.score(x) == pytest.approx(expected, abs=1e-10)


def test_data_free_prior_scores_by_two_estimator_fits():
    """With a prior that does not follow the data, the score is the difference of the
    evidences of two DPMixture fits (on X and on X + x)."""
    rng = np.random.RandomState(2)
    X, new = _draw("bernoulli", rng, 6), _draw("bernoulli", rng, 3)
    params = dict(likelihood=BetaBernoulli(a=0.5, b=0.5), alpha=3.0, method="exact",
                  n_sweeps=5)
    model = DPMixture(**params).fit(X)
    expected = [DPMixture(**params).fit(np.vstack([X, row])).log_marginal_likelihood_
                - model.log_marginal_likelihood_ for row in new]
    assert np.allclose(model.score_samples(new), expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("prior", ["crp", "pitman_yor"])
def test_the_check_sees_a_dropped_new_cluster_and_an_off_by_one_normaliser(prior):
    """The ratio check fails for the two likely slips: no new-cluster term, and
    ``n + 1 + alpha`` (or ``n - 1``) instead of ``n + alpha``."""
    rng = np.random.RandomState(3)
    X, x = _draw("gaussian", rng, 5), _draw("gaussian", rng, 1)
    model = DPMixture(method="exact", n_sweeps=5, random_state=0, **PRIORS[prior]).fit(X)
    expected = _evidence_with(model, x) - model.log_marginal_likelihood_
    data_new = model.model_.check_data(x)
    exact = model._exact_predictive
    assert exact.log_density(data_new)[0] == pytest.approx(expected, abs=1e-10)
    alpha = model.prior_.alpha
    slips = [dataclasses.replace(exact, log_new_weights=np.full_like(exact.log_new_weights,
                                                                      -np.inf)),
             dataclasses.replace(exact, log_normaliser=float(np.log(6 + alpha))),
             dataclasses.replace(exact, log_normaliser=float(np.log(4 + alpha)))]
    for slip in slips:
        assert abs(slip.log_density(data_new)[0] - expected) > 1e-3


def test_exact_score_does_not_depend_on_the_random_state():
    rng = np.random.RandomState(4)
    X, new = _draw("gaussian", rng, 5), _draw("gaussian", rng, 2)
    models = [DPMixture(method="exact", n_sweeps=20, point_estimate="map",
                        random_state=seed).fit(X)
              for seed in (0, 1)]
    assert not np.array_equal(models[0].samples_, models[1].samples_)   # the draws differ
    assert np.array_equal(models[0].score_samples(new), models[1].score_samples(new))


def test_gibbs_fit_after_an_exact_fit_scores_its_samples():
    """A refit by Gibbs sampling drops the exact predictive (the score averages samples)."""
    rng = np.random.RandomState(5)
    X, new = _draw("gaussian", rng, 6), _draw("gaussian", rng, 2)
    model = DPMixture(method="exact", n_sweeps=10, random_state=0).fit(X)
    exact = model.score_samples(new)
    model.set_params(method="gibbs").fit(X)
    assert model._exact_predictive is None
    assert np.allclose(model.score_samples(new), model._mean_predictive_log_density(new))
    assert not np.allclose(model.score_samples(new), exact, rtol=0, atol=1e-10)


def test_exact_score_of_rows_far_from_zero_is_translation_invariant():
    """Features far from 0 are centred in fit (``fit_likelihood``): the exact score shifts
    new rows alike, so it is the score of the same rows near 0 (to the data's precision)."""
    rng = np.random.RandomState(3)
    X = _draw("gaussian", rng, 10)
    shift = 1e8     # |mean| / std > 1e3: centred
    near = DPMixture(method="exact", random_state=0).fit(X[:8])
    far = DPMixture(method="exact", random_state=0).fit(X[:8] + shift)
    assert far._offset is not None
    np.testing.assert_allclose(far.score_samples(X[8:] + shift), near.score_samples(X[8:]),
                               rtol=0, atol=1e-5)
