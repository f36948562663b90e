"""DPMixture's exact mode: predict_proba and the point estimate from the whole posterior (issue 28).

``predict_proba`` of an exact fit is the posterior of the ``n + 1`` rows ``[X, x]`` over the
new row's cluster, ``P(x joins B | X, x)``, spread onto the clusters of ``labels_`` by overlap:
checked against brute-force enumeration of the partitions of the ``n + 1`` rows, against a
second exact posterior fitted to ``[x, X]``, and against exact draws weighted by each draw's
predictive density (self-normalised importance sampling of the same quantity)."""

import numpy as np
import pytest
from scipy.special import logsumexp

from oracles import (conjugate_log_marginal, expected_losses_by_enumeration,
                     partition_log_joints, partition_losses)
from sklearn_trellis import DPMixture
from sklearn_trellis._gibbs_base import to_fitted_columns
from sklearn_trellis.engines.exact.grid_marginal import GridMarginalPosterior
from sklearn_trellis.engines.gibbs import sampler as gibbs
from sklearn_trellis.models import BetaBernoulli, NormalGamma, NormalInverseWishart

PRIORS = {"crp": dict(alpha=0.6), "pitman_yor": dict(alpha=1.3, discount=0.4),
          "finite": dict(alpha=2.0, n_prior_components=3)}


def _draw(kind, rng, n):
    if kind == "bernoulli":
        return (rng.random_sample((n, 4)) < 0.4).astype(float)
    X = rng.normal(size=(n, 2))
    X[: n // 2] += 2.5
    return X


def _mapped(blocks_of_x, labels, n_clusters):
    """The row of predict_proba's columns of the new row's cluster (minus the new row)."""
    row = np.zeros(n_clusters + 1)
    if blocks_of_x.size == 0:
        row[n_clusters] = 1.0
    else:
        np.add.at(row, labels[blocks_of_x], 1.0 / blocks_of_x.size)
    return row


@pytest.mark.parametrize("prior", list(PRIORS))
@pytest.mark.parametrize("likelihood", [
    NormalInverseWishart(hyperprior="fixed"), NormalGamma(hyperprior="fixed"),
    BetaBernoulli(a=0.7, b=1.5)])
def test_exact_predict_proba_matches_brute_force_enumeration(likelihood, prior):
    """Every partition of the ``n + 1`` rows (the new row last), each scored by the prior's
    EPPF and the closed-form marginals: the new row's cluster, mapped onto labels_."""
    kind = "bernoulli" if isinstance(likelihood, BetaBernoulli) else "gaussian"
    rng = np.random.RandomState(1)
    X, new = _draw(kind, rng, 5), _draw(kind, rng, 2)
    model = DPMixture(likelihood, method="exact", n_sweeps=5, random_state=0,
                      **PRIORS[prior]).fit(X)
    assert model.model_.hyperparameter_grid() is None
    n, K = X.shape[0], model.n_clusters_
    expected = []
    for x in new:
        data = np.vstack([X, x])
        partitions, log_joint = partition_log_joints(
            n + 1, model.prior_.log_eppf,
            lambda members: conjugate_log_marginal(model.model_, data[members]))
        probs = np.exp(log_joint - logsumexp(log_joint))
        expected.append(sum(p * _mapped(np.flatnonzero(z[:n] == z[n]), model.labels_, K)
                            for p, z in zip(probs, partitions)))
    proba = model.predict_proba(new)
    assert np.allclose(proba, expected, rtol=0, atol=1e-10)
    assert np.allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # ties (symmetric clusters) may break either way at the last bit: the pick is a maximum
    picked = model.predict(new)
    assert np.array_equal(picked, np.argmax(proba, axis=1))
    expected = np.asarray(expected)
    assert np.allclose(expected[np.arange(len(picked)), picked], expected.max(axis=1),
                       rtol=0, atol=1e-10)


@pytest.mark.parametrize("prior", ["crp", "pitman_yor"])
def test_exact_predict_proba_is_a_cluster_marginal_of_the_n_plus_1_rows(prior):
    """With the learned hyperparameter grid: ``P(x joins B | X, x)`` is the exact cluster
    marginal of ``B + {x}`` in the posterior of ``[x, X]`` (a second exact fit)."""
    rng = np.random.RandomState(2)
    X, new = _draw("gaussian", rng, 6), _draw("gaussian", rng, 2)
    new[1] += 5.0
    model = DPMixture(method="exact", n_sweeps=5, random_state=0, **PRIORS[prior]).fit(X)
    assert model.model_.hyperparameter_grid() is not None
    data_new = model._new_rows(new)
    n, K = X.shape[0], model.n_clusters_
    for x, proba in zip(data_new, model.predict_proba(new)):
        joined = np.vstack([x[None], model._data])
        marginals = GridMarginalPosterior(model.prior_, model.model_, n + 1).fit(
            joined).cluster_marginals()[1::2]          # the subsets holding x (bit 0)
        expected = sum(p * _mapped(np.flatnonzero((mask >> np.arange(n)) & 1),
                                   model.labels_, K) for mask, p in enumerate(marginals))
        assert np.allclose(proba, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("n_draws", [400, pytest.param(6000, marks=pytest.mark.slow)])
def test_exact_predict_proba_is_the_weighted_mean_over_exact_draws(n_draws):
    """The same quantity by Monte Carlo: exact draws of ``p(z, g | X)``, each draw's
    assignment probabilities weighted by its predictive density ``p(x | z, g, X)``
    (self-normalised importance sampling of ``p(z, g | X, x)``), within 4 standard errors.
    The unweighted mean over draws (the Gibbs fit's predict_proba before) is another quantity."""
    rng = np.random.RandomState(3)
    X, new = _draw("gaussian", rng, 6), np.array([[1.2, 1.0]])
    model = DPMixture(method="exact", n_sweeps=n_draws, point_estimate="map", random_state=0,
                      alpha=1.5).fit(X)
    data_new = model._new_rows(new)
    K = model.n_clusters_
    weights, mapped = [], []
    for labels, params, alpha in zip(model.samples_, model._sample_params, model.alphas_):
        logw = gibbs.predictive_log_weights(
            model.model_, model.prior_.with_alpha(alpha).kernel_params(), model._data,
            labels.astype(np.int64), data_new, params)
        total = logsumexp(logw, axis=1)
        weights.append(np.exp(total[0]))
        mapped.append(to_fitted_columns(np.exp(logw - total[:, None]), labels.astype(np.int64),
                                        model.labels_, K)[0])
    weights, mapped = np.array(weights), np.array(mapped)
    weights /= weights.sum()
    estimate = weights @ mapped
    # delta-method standard error of a self-normalised estimate
    error = np.sqrt(np.sum(weights[:, None] ** 2 * (mapped - estimate) ** 2, axis=0))
    exact = model.predict_proba(new)[0]
    assert np.all(np.abs(exact - estimate) <= 4 * error + 1e-12)


def test_exact_predict_proba_does_not_depend_on_the_random_state():
    rng = np.random.RandomState(4)
    X, new = _draw("gaussian", rng, 6), _draw("gaussian", rng, 3)
    models = [DPMixture(method="exact", n_sweeps=20, point_estimate="map",
                        random_state=seed).fit(X) for seed in (0, 1)]
    assert not np.array_equal(models[0].samples_, models[1].samples_)
    assert np.array_equal(models[0].predict_proba(new), models[1].predict_proba(new))


# -- the point estimate: exact expected VI ----------------------------------------------

def _posterior_by_enumeration(model, X):
    """Every partition of the fitted rows and its exact posterior probability (fixed
    hyperparameters: the prior's EPPF and the closed-form marginals)."""
    partitions, log_joint = partition_log_joints(
        X.shape[0], model.prior_.log_eppf,
        lambda members: conjugate_log_marginal(model.model_, model._data[members]))
    return partitions, np.exp(log_joint - logsumexp(log_joint))


def _exact_vi_instance(seed, n, prior="crp"):
    rng = np.random.RandomState(seed)
    X = _draw("gaussian", rng, n) * rng.uniform(0.5, 1.5)
    model = DPMixture(NormalGamma(hyperprior="fixed"), method="exact", n_sweeps=10,
                      random_state=seed, **PRIORS[prior]).fit(X)
    return model, *_posterior_by_enumeration(model, X)


def test_exact_expected_vi_matches_brute_force_enumeration():
    from sklearn_trellis.summaries.point_estimates import ClusterMarginals, expected_loss
    model, partitions, probs = _exact_vi_instance(0, 7, "pitman_yor")
    posterior = GridMarginalPosterior(model.prior_, model.model_, 7).fit(model._data)
    marginals = ClusterMarginals(posterior.cluster_marginals())
    rng = np.random.RandomState(0)
    chosen = rng.choice(len(partitions), 6, replace=False)
    expected = partition_losses(partitions[chosen], partitions, "vi") @ probs
    got = [expected_loss(marginals, c, "vi") for c in partitions[chosen]]
    assert np.allclose(got, expected, rtol=0, atol=1e-10)


def _check_vi_estimate_is_the_brute_force_minimiser(seed, n, prior):
    """``labels_`` reaches the smallest exact expected VI over every partition."""
    model, partitions, probs = _exact_vi_instance(seed, n, prior)
    losses = expected_losses_by_enumeration(partitions, "vi", weights=probs)[1]
    index = np.flatnonzero(np.all(partitions == model.labels_, axis=1))[0]
    assert losses[index] <= losses.min() + 1e-10


def test_exact_vi_estimate_is_the_brute_force_minimiser():
    _check_vi_estimate_is_the_brute_force_minimiser(3, 6, "crp")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_exact_vi_estimate_is_the_brute_force_minimiser_on_random_instances(seed):
    _check_vi_estimate_is_the_brute_force_minimiser(seed, 6, list(PRIORS)[seed % 3])


def test_exact_vi_estimate_does_not_depend_on_the_random_state():
    """At 10 items (above the exhaustive check's reach) the exact-marginal search is seeded
    by the posterior alone; the draws-based search it replaced was not."""
    rng = np.random.RandomState(5)
    X = _draw("gaussian", rng, 10) * 0.6
    labels = {DPMixture(method="exact", n_sweeps=5, random_state=seed).fit(X).labels_.tobytes()
              for seed in range(3)}
    assert len(labels) == 1


def test_pickled_exact_fit_is_small_and_rebuilds_its_predictive_table_bit_for_bit():
    """The (grid points x 2**n) table of the exact predictive is not pickled; an unpickled
    fit rebuilds it on first use and scores and predicts the same bits."""
    import pickle
    rng = np.random.RandomState(6)
    X, new = _draw("gaussian", rng, 8), _draw("gaussian", rng, 3)
    model = DPMixture(method="exact", n_sweeps=5, point_estimate="map", random_state=0).fit(X)
    table = model._exact_predictive.log_join_weights
    assert table.shape == (len(model._exact_predictive.grid_params), 2 ** 8 - 1)
    blob = pickle.dumps(model)
    assert len(blob) < table.nbytes / 4
    loaded = pickle.loads(blob)
    assert loaded._exact_predictive.log_join_weights is None
    assert np.array_equal(loaded.score_samples(new), model.score_samples(new))
    assert np.array_equal(loaded._exact_predictive.log_join_weights, table)
    assert np.array_equal(loaded.predict_proba(new), model.predict_proba(new))


def test_gibbs_predict_proba_weighs_each_sample_by_its_predictive_density():
    """A Gibbs fit estimates the exact fit's quantity, P(x joins k | X, x): each picked
    sample's assignment probabilities weighted by p(x | z_s, X) (the normaliser of its
    log weights), not averaged uniformly."""
    rng = np.random.RandomState(5)
    X, new = _draw("gaussian", rng, 8), np.array([[1.2, 1.0], [-3.0, 0.5], [0.0, 0.0]])
    model = DPMixture(method="gibbs", n_sweeps=60, random_state=0, alpha=1.5).fit(X)
    mapped, log_density = [], []
    for labels, logw in model._predictive(new):
        total = logsumexp(logw, axis=1)
        log_density.append(total)
        mapped.append(to_fitted_columns(np.exp(logw - total[:, None]), labels, model.labels_,
                                        model.n_clusters_))
    weights = np.exp(np.array(log_density) - np.max(log_density, axis=0))
    weights /= weights.sum(axis=0)
    expected = np.einsum("sr,srk->rk", weights, np.array(mapped))
    uniform = np.mean(mapped, axis=0)
    proba = model.predict_proba(new)
    assert np.allclose(proba, expected, rtol=0, atol=1e-12)
    assert np.abs(proba - uniform).max() > 1e-3     # the weights matter on this instance
    assert np.allclose(proba.sum(axis=1), 1.0)


def test_exact_predict_proba_in_blocks_gives_the_same_bits(monkeypatch):
    """Rows go through the (rows, 2**n) subset probabilities in blocks (bounded memory):
    one call, small blocks and one row at a time agree bit for bit."""
    import sklearn_trellis._dp_mixture as dp_module

    rng = np.random.RandomState(6)
    X, new = _draw("gaussian", rng, 7), _draw("gaussian", rng, 5)
    model = DPMixture(method="exact", n_sweeps=10, random_state=0).fit(X)
    whole = model.predict_proba(new)
    monkeypatch.setattr(dp_module, "EXACT_PREDICT_BLOCK", 2)
    np.testing.assert_array_equal(model.predict_proba(new), whole)
    np.testing.assert_array_equal(np.vstack([model.predict_proba(row[None]) for row in new]),
                                  whole)
