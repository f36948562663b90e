"""Fuzzing the Bayesian estimators (issue 31): a right answer or a clear error, at any scale.

InfiniteBiclustering, CrossCat, FastTIWD, BayesianHierarchicalClustering and
DPMixture on random tables: scales ``1e-300 .. 1e300`` globally and per feature,
0/1 data, counts, category codes that are not ``0..k-1`` (gaps, negatives,
fractions, huge codes), identical rows, NaN / inf, empty and one-row inputs at
fit, predict and score. Each call either returns a result that passes the
invariants (finite log densities, probabilities in [0, 1] summing to 1, labels
``0..K-1``, a pmf's log at most 0, the BHC bound below the exact evidence) or
raises ``ValueError`` / ``TypeError`` with a message; RuntimeWarnings are errors.

Profiles as in ``tests/test_fuzz.py`` (``SKLEARN_TRELLIS_FUZZ=slow``: 200 examples per
test). Run with ``-s`` to see how many inputs each estimator refused.
"""

import collections
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_fuzz import FUZZ, check_probabilities  # noqa: E402

from sklearn_trellis import (BayesianHierarchicalClustering, CrossCat, DPMixture,  # noqa: E402
                             FastTIWD, InfiniteBiclustering)

EXPONENTS = [-300, -150, -20, -3, 0, 3, 20, 150, 300]

#: Inputs refused with a clear error, per estimator and stage (printed at the end).
REFUSED = collections.Counter()
CALLS = collections.Counter()


@pytest.fixture(scope="module", autouse=True)
def _report_refusals():
    yield
    lines = [f"  {name}: {REFUSED[name]} of {CALLS[name]} refused with a clear error"
             for name in sorted(CALLS)]
    print("\nBad inputs refused (fuzz_bayesian):\n" + "\n".join(lines))


def clearly(name, call, *args, **kwargs):
    """``call(*args)``, or None after a ValueError / TypeError with a message (counted).

    A RuntimeWarning (overflow, NaN arithmetic) on a call that returns is a failure:
    it is how silent wrong answers announce themselves.
    """
    CALLS[name] += 1
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"
        REFUSED[name] += 1
        return None
    runtime = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not runtime, f"{name} returned after RuntimeWarnings: {runtime}"
    return result


# -- inputs ---------------------------------------------------------------------------
@st.composite
def tables(draw, min_rows=0, max_rows=7, max_columns=4, kinds=None, allow_nan=True):
    """Random tables of one kind: reals, 0/1, counts or category codes (odd ones too)."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, max_columns))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    kind = draw(st.sampled_from(kinds or ["real", "real", "binary", "counts", "codes"]))
    if kind == "real":
        X = rng.normal(size=(n, d))
        if draw(st.booleans()):
            X[n // 2:] += 4.0
        scale = 10.0 ** draw(st.sampled_from(EXPONENTS))
        per_feature = draw(st.booleans())
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            if per_feature:
                X = X * (10.0 ** np.array([draw(st.sampled_from(EXPONENTS))
                                           for _ in range(d)], dtype=np.float64))
            else:
                X = X * scale
    elif kind == "binary":
        X = (rng.random((n, d)) < 0.4).astype(np.float64)
    elif kind == "counts":
        X = rng.poisson(3.0, size=(n, d)).astype(np.float64)
        X = X * draw(st.sampled_from([1.0, 1.0, 1e6, 1e300]))
    else:
        codes = draw(st.sampled_from([[0, 1, 2], [3, 7], [1, 2], [-1, 5], [0.5, 1.5],
                                      [0, 2**20], [0, 1e300]]))
        X = rng.choice(np.array(codes, dtype=np.float64), size=(n, d))
    if n > 1 and draw(st.integers(0, 4)) == 0:   # identical rows
        X[:] = X[:1]
    bad = draw(st.sampled_from([None, None, None, None, np.nan, np.inf] if allow_nan
                               else [None, None, None, np.inf]))
    if bad is not None and n > 0:
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = bad
    return X


def check_labels(labels, n):
    labels = np.asarray(labels)
    assert labels.shape == (n,)
    assert labels.min() == 0 and np.array_equal(np.unique(labels), np.arange(labels.max() + 1))


def check_log_density(values):
    values = np.asarray(values, dtype=np.float64)
    assert np.all(np.isfinite(values)), values


def with_columns(X, d):
    """``X`` with ``d`` columns (cut or repeated), for queries of a fitted estimator."""
    reps = -(-d // X.shape[1]) if X.shape[1] else 1
    return np.tile(X, (1, reps))[:, :d] if X.shape[1] else np.zeros((X.shape[0], d))


# -- the estimators ---------------------------------------------------------------------
@FUZZ
@given(X=tables(), X_new=tables(min_rows=0, max_rows=2),
       likelihood=st.sampled_from(["auto", "normal", "bernoulli", "poisson", "categorical"]),
       method=st.sampled_from(["exact", "gibbs"]))
def test_infinite_biclustering(X, X_new, likelihood, method):
    model = clearly("InfiniteBiclustering", InfiniteBiclustering(
        likelihood, method=method, n_sweeps=4, random_state=0).fit, X)
    if model is None:
        return
    check_labels(model.row_labels_, X.shape[0])
    check_labels(model.column_labels_, X.shape[1])
    check_log_density(model.log_joints_)
    if model.method_ == "exact":
        check_log_density(model.log_marginal_likelihood_)
        assert np.all(model.log_joints_ <= model.log_marginal_likelihood_ + 1e-9 * max(
            1.0, abs(model.log_marginal_likelihood_)))
        if likelihood != "normal" and model.model_.cell_type.__name__.endswith(
                ("bernoulli", "categorical", "poisson")):
            assert model.log_marginal_likelihood_ <= 1e-9   # a probability mass function
    for P in (model.row_pairwise_marginals_, model.column_pairwise_marginals_):
        check_probabilities(P)
    assert model.get_shape(0)[0] >= 1
    with pytest.raises(ValueError, match="bicluster index"):
        model.get_shape(model.rows_.shape[0])
    query = with_columns(X_new, X.shape[1])
    scores = clearly("InfiniteBiclustering", model.score_samples, query)
    if scores is not None:
        assert scores.shape == (query.shape[0],)
        check_log_density(scores)


@FUZZ
@given(X=tables(min_rows=0, max_rows=8), X_new=tables(min_rows=0, max_rows=2),
       exact=st.booleans())
def test_crosscat(X, X_new, exact):
    params = dict(alpha_prior=None) if exact else dict(method="gibbs")
    model = clearly("CrossCat", CrossCat(n_sweeps=4, random_state=0, **params).fit, X)
    if model is None:
        return
    n, d = X.shape
    check_labels(model.labels_, n)
    check_log_density(model.log_joints_)
    check_probabilities(model.dependence_probability_)
    if model.method_ == "exact":
        check_log_density(model.log_marginal_likelihood_)
    query = with_columns(X_new, d)
    scores = clearly("CrossCat", model.score_samples, query)
    if scores is not None:
        assert scores.shape == (query.shape[0],)
        check_log_density(scores)
    imputed = clearly("CrossCat", model.impute, query)
    if imputed is not None:
        assert imputed.shape == query.shape
        assert not np.any(np.isnan(np.asarray(imputed, dtype=np.float64)))
    rows = clearly("CrossCat", model.simulate, 2, given={0: X[0, 0]}, random_state=0)
    if rows is not None:
        assert rows.shape == (2, d)


@FUZZ
@given(X=tables(min_rows=0, max_rows=8, kinds=["real", "binary"], allow_nan=False),
       X_new=tables(min_rows=0, max_rows=2, kinds=["real"], allow_nan=False),
       method=st.sampled_from(["gibbs", "exact"]))
def test_fast_tiwd(X, X_new, method):
    params = dict(scale=1.0, theta=0.1) if method == "exact" else {}
    model = clearly("FastTIWD", FastTIWD(metric="sqeuclidean", method=method, n_sweeps=4,
                                         random_state=0, **params).fit, X)
    if model is None:
        return
    check_labels(model.labels_, X.shape[0])
    check_log_density(model.log_joints_)
    query = with_columns(X_new, X.shape[1])
    proba = clearly("FastTIWD", model.predict_proba, query)
    if proba is not None:
        assert proba.shape == (query.shape[0], model.n_clusters_ + 1)
        check_probabilities(proba, axis=1)
    scores = clearly("FastTIWD", model.score_samples, query)
    if scores is not None:   # -inf (with a UserWarning) when dof <= rank(S*): no density
        assert np.all(np.isfinite(scores) | (scores == -np.inf)), scores


@FUZZ
@given(X=tables(min_rows=0, max_rows=8, allow_nan=False),
       likelihood=st.sampled_from(["gaussian", "diagonal", "bernoulli", "multinomial"]),
       alpha=st.sampled_from([1e-12, 1.0, 1e16, 1e300]))
def test_bayesian_hierarchical_clustering(X, likelihood, alpha):
    model = clearly("BayesianHierarchicalClustering", BayesianHierarchicalClustering(
        likelihood, alpha=alpha).fit, X)
    if model is None:
        return
    check_labels(model.labels_, X.shape[0])
    check_log_density([model.log_marginal_likelihood_, model.log_evidence_lower_bound_])
    evidence = model.log_marginal_likelihood_dp_
    if evidence is not None:
        check_log_density(evidence)
        assert model.log_evidence_lower_bound_ <= evidence + 1e-9 * max(1.0, abs(evidence))
        if likelihood in ("bernoulli", "multinomial"):
            assert evidence <= 1e-9   # a probability mass function


@FUZZ
@given(X=tables(min_rows=0, max_rows=7, allow_nan=False),
       X_new=tables(min_rows=0, max_rows=2, allow_nan=False),
       likelihood=st.sampled_from(["gaussian", "diagonal", "bernoulli", "multinomial"]),
       method=st.sampled_from(["gibbs", "exact"]), alpha=st.sampled_from([1e-12, 1.0, 1e16]))
def test_dp_mixture(X, X_new, likelihood, method, alpha):
    model = clearly("DPMixture", DPMixture(likelihood, alpha=alpha, method=method, n_sweeps=4,
                                           random_state=0).fit, X)
    if model is None:
        return
    check_labels(model.labels_, X.shape[0])
    check_log_density(model.log_joints_)
    if model.method_ == "exact":
        check_log_density(model.log_marginal_likelihood_)
    query = with_columns(X_new, X.shape[1])
    proba = clearly("DPMixture", model.predict_proba, query)
    if proba is not None:
        check_probabilities(proba, axis=1)
    scores = clearly("DPMixture", model.score_samples, query)
    if scores is not None:
        assert np.all(np.isfinite(scores) | (scores == -np.inf))   # -inf: off the support
