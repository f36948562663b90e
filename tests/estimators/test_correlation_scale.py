"""ExactCorrelationClustering at any affinity scale: far from unit scale the Gaussian pair
model is fitted in units of a power of 2 and every reported quantity is mapped back.

Scaling W by ``2**k`` (exact in float64) scales ``beta_`` by ``2**-k``, the offset by
``2**k``, the noise variance by ``2**(2 k)``, and lowers the log density of each affinity
by ``k log 2`` (``log_evidence_``: P pairs; a new item's score: N affinities); the
clustering and every probability depend on ``beta * w`` alone.
"""

import math
import warnings

import numpy as np
import pytest

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.preprocessing.affinity import mean_off_diagonal, similarity

#: Exponents beyond the range float64 sums squares over (rescaled inside) and within it.
FAR = (-600, 600)
NEAR = (-300, 300)


def _unit_affinities(n, seed):
    """A symmetric matrix, zero diagonal, largest |w| in [0.5, 1) (the unit scale)."""
    a = np.random.default_rng(seed).standard_normal((n, n))
    w = a + a.T
    np.fill_diagonal(w, 0.0)
    return np.ldexp(w, -int(np.frexp(np.abs(w).max())[1]))


def _new_rows(n, seed):
    return np.ldexp(np.random.default_rng(seed + 100).standard_normal((3, n)), -1)


def _fit(W, k=0, **params):
    if not isinstance(params.get("beta", "auto"), str):
        params["beta"] = math.ldexp(params["beta"], -k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # noise_variance_ beyond float64
        return ExactCorrelationClustering(affinity="precomputed", random_state=0,
                                          **params).fit(np.ldexp(W, k))


def _assert_mapped(far, unit, k, new, variance_exact):
    """Every output of the fit of ``2**k W`` against the unit fit's mapped value."""
    n = unit.affinity_matrix_.shape[0]
    assert far.beta_ == math.ldexp(unit.beta_, -k)
    assert far.affinity_offset_ == math.ldexp(unit.affinity_offset_, k)
    assert far.alpha_ == unit.alpha_
    np.testing.assert_array_equal(far.labels_, unit.labels_)
    np.testing.assert_array_equal(far.affinity_matrix_, np.ldexp(unit.affinity_matrix_, k))
    np.testing.assert_array_equal(far.pairwise_marginals_, unit.pairwise_marginals_)
    np.testing.assert_array_equal(far.n_clusters_distribution_,
                                  unit.n_clusters_distribution_)
    assert far.cluster_marginal([0, 1]) == unit.cluster_marginal([0, 1])
    assert far.together_marginal([0, 1, 2]) == unit.together_marginal([0, 1, 2])
    assert far.log_partition_function_ == unit.log_partition_function_
    assert far.map_log_potential_ == unit.map_log_potential_
    np.testing.assert_array_equal(far.sample(4, 0), unit.sample(4, 0))
    np.testing.assert_array_equal(far.predict(np.ldexp(new, k)), unit.predict(new))
    if hasattr(unit, "beta_grid_"):
        np.testing.assert_array_equal(far.beta_grid_, np.ldexp(unit.beta_grid_, -k))
        np.testing.assert_array_equal(far.beta_posterior_, unit.beta_posterior_)
    n_pairs = n * (n - 1) // 2
    assert far.log_evidence_ == pytest.approx(unit.log_evidence_ - n_pairs * k * math.log(2),
                                              rel=1e-12)
    np.testing.assert_allclose(far.score_samples(np.ldexp(new, k)),
                               unit.score_samples(new) - n * k * math.log(2), rtol=1e-12)
    if variance_exact:
        assert far.noise_variance_ == math.ldexp(unit.noise_variance_, 2 * k)


EXACT_SETTINGS = [(8, dict()), (8, dict(beta=1.5)), (8, dict(beta="posterior")),
                  (5, dict(beta="posterior", alpha="posterior")),
                  (7, dict(center="auto", alpha="auto")), (7, dict(point_estimate="binder"))]


@pytest.mark.parametrize("k", FAR)
@pytest.mark.parametrize("n, params", EXACT_SETTINGS, ids=str)
def test_far_scales_map_back_exactly_on_the_exact_trellis(n, params, k):
    W, new = _unit_affinities(n, 0), _new_rows(n, 0)
    _assert_mapped(_fit(W, k, **params), _fit(W, **params), k, new, variance_exact=False)


@pytest.fixture(scope="module")
def sparse_unit():
    W = _unit_affinities(40, 1)
    return W, _fit(W, method="sparse")


@pytest.mark.parametrize("k", FAR)
def test_far_scales_map_back_exactly_on_the_sparse_trellis(sparse_unit, k):
    W, unit = sparse_unit
    _assert_mapped(_fit(W, k, method="sparse"), unit, k, _new_rows(40, 1),
                   variance_exact=False)


@pytest.mark.parametrize("k", FAR)
def test_beta_posterior_on_the_sparse_trellis_far_from_unit_scale(k):
    W = _unit_affinities(40, 2)
    _assert_mapped(_fit(W, k, method="sparse", beta="posterior"),
                   _fit(W, method="sparse", beta="posterior"), k, _new_rows(40, 2),
                   variance_exact=False)


@pytest.mark.parametrize("k", [-500, -460, 460, 500])
def test_a_noise_variance_float64_holds_is_mapped_bit_for_bit(k):
    """Rescaled (beyond 2**450), with s2 * 2**(2 k) still a normal float64."""
    W, new = _unit_affinities(8, 3), _new_rows(8, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        far = _fit(W, k)
    _assert_mapped(far, _fit(W), k, new, variance_exact=True)


@pytest.mark.parametrize("k", NEAR)
def test_ordinary_scales_are_not_rescaled_and_stay_equivariant(k):
    """At 2**+-300 the fit runs in the affinities' own units (the arithmetic of every
    ordinary scale); a fixed beta maps bit for bit."""
    W, new = _unit_affinities(8, 4), _new_rows(8, 4)
    unit, far = _fit(W, beta=1.5), _fit(W, k, beta=1.5)
    assert far._unit_exponent == 0
    _assert_mapped(far, unit, k, new, variance_exact=True)


@pytest.mark.parametrize("params, scale, shift", [
    (dict(center="auto"), 1e6, 3.0), (dict(center="auto"), 1e-6, -2.0),
    (dict(center="auto", alpha="auto"), 1e6, 3.0), (dict(center="auto", alpha="auto"), 1e-6, 0.0),
    (dict(beta="posterior", center="auto"), 1e6, 3.0)], ids=str)
def test_a_learned_offset_is_found_at_any_scale_and_shift(params, scale, shift):
    """Empirical Bayes searches in units of the affinities' spread: ``fit(k W + t)`` finds
    the unit fit's point (not bit for bit: k is no power of 2 and L-BFGS-B's steps round).
    In raw units a search of ``1e6 W`` stopped at its start (pairwise marginals 0.42 away,
    log evidence 0.7 below the maximum); of ``1e-6 W`` 0.03 and 0.025 away."""
    D = np.abs(np.subtract.outer(*2 * [np.r_[0.0, 0.3, 0.5, 2.6, 3.0, 3.1, 5.5, 6.2]]))
    W = np.exp(-D / 2)
    unit, far = _fit(W, **params), _fit(W * scale + shift, **params)
    assert far._unit_exponent == 0
    n_pairs = 28
    assert far.beta_ * scale == pytest.approx(unit.beta_, rel=1e-7)
    assert far.affinity_offset_ == pytest.approx(unit.affinity_offset_ * scale + shift, rel=1e-7)
    assert far.log_evidence_ == pytest.approx(unit.log_evidence_ - n_pairs * math.log(scale),
                                              rel=1e-9)
    np.testing.assert_allclose(far.pairwise_marginals_, unit.pairwise_marginals_, atol=1e-8)


@pytest.mark.parametrize("k, side", [(600, "inf"), (-600, "0.0")])
def test_a_noise_variance_float64_cannot_hold_is_named(k, side):
    W = _unit_affinities(8, 5)
    unit = _fit(W)
    with pytest.warns(UserWarning, match=f"noise_variance_ is .* \\* 2\\*\\*{1 if k > 0 else '-'}"
                                         f".*reported as {side}.*pair noise sd, is "):
        far = ExactCorrelationClustering(affinity="precomputed").fit(np.ldexp(W, k))
    mantissa, power = math.frexp(unit.noise_variance_)
    assert far.noise_variance_ == float(side)
    with pytest.warns(UserWarning, match=f"is {mantissa!r} \\* 2\\*\\*{power + 2 * k},"):
        far._noise_variance_in_affinity_units()
    # the score needs the variance: it is kept in the fitted units, exact
    assert np.isfinite(far.score(np.ldexp(_new_rows(8, 5), k)))


def test_a_beta_float64_cannot_hold_is_refused_by_name():
    """At |w| ~ 2**-1060 a learned beta_ ~ 2**1060 / sd would overflow: refused, named."""
    W = np.ldexp(_unit_affinities(6, 6), -1060)
    with pytest.raises(ValueError, match="beta_ is .* \\* 2\\*\\*10[0-9][0-9], which float64 "
                                         "cannot hold exactly \\(overflow\\)"):
        ExactCorrelationClustering(affinity="precomputed").fit(W)


def test_features_far_from_unit_scale():
    """exp(-||x - y||) of rows 2000 times apart falls to ~1e-180 and below (|w - c| under
    2**-450): fitted in units, the same as the precomputed fit of those centred
    affinities. At 1e+-200 the affinities saturate (0 or 1 off the diagonal): every
    pair sits at the offset and carries no information, so nothing is learned (a
    clear error naming the cause) and a fixed beta reports no noise variance (0), no
    evidence (NaN) and refuses to score, instead of a clamped variance's meaningless
    evidence (about 9891.8 for 8 items)."""
    X = np.random.default_rng(7).normal(size=(9, 2)) + np.repeat(np.eye(3, 2) * 4, 3, axis=0)
    s = similarity(X * 2000.0, X * 2000.0, "exp_euclidean")
    np.fill_diagonal(s, 0.0)
    w = s - mean_off_diagonal(s)
    np.fill_diagonal(w, 0.0)
    from_features = ExactCorrelationClustering().fit(X * 2000.0)
    precomputed = ExactCorrelationClustering(affinity="precomputed").fit(w)
    assert from_features.beta_ == precomputed.beta_
    assert from_features.log_evidence_ == precomputed.log_evidence_
    np.testing.assert_array_equal(from_features.labels_, precomputed.labels_)
    np.testing.assert_array_equal(from_features.pairwise_marginals_,
                                  precomputed.pairwise_marginals_)
    assert from_features._unit_exponent < -450 and from_features.n_clusters_ > 1
    for scale in (1e200, 1e-200):
        with pytest.raises(ValueError, match="standardise X or set gamma.*carry no information"):
            ExactCorrelationClustering().fit(X * scale)
        with pytest.warns(UserWarning, match="noise_variance_ is 0, log_evidence_ is NaN"):
            fixed = ExactCorrelationClustering(beta=1.0).fit(X * scale)
        prior = ExactCorrelationClustering(beta=0.0).fit(X)     # no pair term: the prior
        assert fixed.noise_variance_ == 0.0 and np.isnan(fixed.log_evidence_)
        np.testing.assert_allclose(fixed.pairwise_marginals_, prior.pairwise_marginals_,
                                   rtol=0, atol=1e-12)
        with pytest.raises(ValueError, match="score needs a noise variance"):
            fixed.score(X[:2] * scale)


def test_constant_precomputed_affinities_carry_no_information():
    with pytest.raises(ValueError, match="28 pairs carry no information.*Give beta a value"):
        ExactCorrelationClustering(affinity="precomputed").fit(np.zeros((8, 8)))
    with pytest.raises(ValueError, match="alpha_prior must be a"):   # parameters first
        ExactCorrelationClustering(alpha="auto", alpha_prior=(1.0,),
                                   affinity="precomputed").fit(np.zeros((8, 8)))
    # a constant that is not the offset (center=False) is information: all together
    fitted = ExactCorrelationClustering(affinity="precomputed", beta=1.0).fit(
        np.full((8, 8), 0.5))
    assert np.isfinite(fitted.log_evidence_) and fitted.noise_variance_ > 0
