"""Shared hypothesis strategies and outcome checks of the fuzz tests (test_fuzz*.py).

The profile (``SKLEARN_TRELLIS_FUZZ=fast|slow``: 8 or 200 examples per test), the
input strategies (random shapes, dtypes, scales 1e-300 ... 1e300 globally and per
feature, NaN / inf, ties, identical rows, corrupted precomputed matrices) and the
rule every estimator must follow: a result that passes the invariants, or a
ValueError / TypeError with a message. :data:`REJECTED` counts the clear
refusals per estimator (printed at the end of a fuzz module).
"""

import os
import warnings
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: Clear refusals (ValueError / TypeError with a message) per estimator or function.
REJECTED = Counter()

_PROFILES = {"fast": 8, "slow": 200}
_PROFILE = os.environ.get("SKLEARN_TRELLIS_FUZZ", "fast")
if _PROFILE not in _PROFILES:
    raise ValueError(f"SKLEARN_TRELLIS_FUZZ must be one of {sorted(_PROFILES)}, got {_PROFILE!r}.")
FUZZ = settings(max_examples=_PROFILES[_PROFILE], deadline=None, derandomize=_PROFILE == "fast",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

#: Probabilities may exceed [0, 1] by rounding only.
TOL = 1e-9


# -- inputs ---------------------------------------------------------------------------
@st.composite
def feature_matrices(draw, min_rows=1, max_rows=9):
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    exponent = draw(st.sampled_from([-300, -150, -20, -3, 0, 3, 20, 150, 300]))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
    X = np.random.default_rng(seed).normal(size=(n, d))
    if draw(st.booleans()):
        X[n // 2:] += 4.0
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        X = (X * 10.0 ** exponent).astype(dtype) if dtype != np.int64 else \
            np.round(X * 3).astype(np.int64)
    bad = draw(st.sampled_from([None, None, None, np.nan, np.inf, -np.inf]))
    if bad is not None and dtype != np.int64:
        X = X.astype(np.float64)
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = bad
    return X


@st.composite
def square_matrices(draw, kind):
    """``kind='distances'``: squared distances of random points (some corrupted);
    ``'affinities'``: signed symmetric affinities (some corrupted)."""
    n = draw(st.integers(2, 8))
    seed = draw(st.integers(0, 2**16))
    exponent = draw(st.sampled_from([-300, -150, -3, 0, 3, 150, 300]))
    rng = np.random.default_rng(seed)
    if kind == "distances":
        P = rng.normal(size=(n, 3))
        M = ((P[:, None] - P[None]) ** 2).sum(axis=2)
    else:
        M = rng.normal(size=(n, n))
        M = M + M.T
        np.fill_diagonal(M, 0.0)
    with np.errstate(over="ignore", under="ignore"):
        M = M * 10.0 ** exponent
    corruption = draw(st.sampled_from(["none", "none", "asymmetric", "negative", "diagonal",
                                       "nan", "inf"]))
    i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
    if corruption == "asymmetric" and i != j:
        M[i, j] += 1.0 + abs(M[i, j])
    elif corruption == "negative":
        M[i, j] = M[j, i] = -1.0 - abs(M[i, j])
    elif corruption == "diagonal":
        M[i, i] = 1.0 + abs(M).max()
    elif corruption == "nan":
        M[i, j] = np.nan
    elif corruption == "inf":
        M[i, j] = np.inf
    return M


INDEX_ARGUMENTS = st.one_of(
    st.lists(st.integers(-3, 12), min_size=0, max_size=4),
    st.lists(st.one_of(st.floats(-2, 12), st.just(float("nan"))), min_size=1, max_size=3),
    st.lists(st.booleans(), min_size=1, max_size=2),
    st.just("0"), st.just(None))


# -- outcomes ---------------------------------------------------------------------------
def fit_or_clear_error(estimator, X, y=None):
    """The fitted estimator, or None after a ValueError / TypeError with a message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return estimator.fit(X, y)
    except (ValueError, TypeError) as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"
        REJECTED[type(estimator).__name__] += 1
        return None


def check_probabilities(P, axis=None):
    P = np.asarray(P, dtype=np.float64)
    assert np.all(np.isfinite(P))
    assert np.all(P >= -TOL) and np.all(P <= 1 + TOL)
    if axis is not None:
        np.testing.assert_allclose(P.sum(axis=axis), 1.0, atol=1e-8)


def check_labels(model, n):
    labels = np.asarray(model.labels_)
    assert labels.shape == (n,)
    assert labels.min() == 0 and np.array_equal(np.unique(labels), np.arange(labels.max() + 1))


def check_index_argument(method, indices):
    try:
        value = method(indices)
    except (ValueError, TypeError) as error:
        assert str(error).strip()
        return
    assert -TOL <= float(value) <= 1 + TOL


def check_exact_model(model, n):
    """The invariants of the trellis estimators (flat and hierarchical)."""
    check_labels(model, n)
    log_z, best = model.log_partition_function_, model.map_log_potential_
    assert np.isfinite(log_z) and np.isfinite(best)
    assert log_z >= best - 1e-9 * max(1.0, abs(best))


# -- issue 31: the edges of the tree estimators and the summaries --------------------------
EXPONENTS = [-300, -200, -150, -20, 0, 20, 150, 200, 300]


@st.composite
def edge_feature_matrices(draw, min_rows=0, max_rows=9):
    """Feature rows at the edges: global and per-feature scales 1e-300 ... 1e300, tied
    values (integer grids), identical rows, zero or one row."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    kind = draw(st.sampled_from(["normal", "grid", "identical", "duplicated"]))
    X = rng.normal(size=(n, d))
    if kind == "grid":  # ties in distances and heights
        X = rng.integers(0, 3, size=(n, d)).astype(float)
    elif kind == "identical":
        X = np.repeat(rng.normal(size=(1, d)), n, axis=0)
    elif kind == "duplicated" and n:
        X = X[rng.integers(0, max(1, n // 2), size=n)]
    exponents = draw(st.one_of(st.sampled_from(EXPONENTS).map(lambda e: [e] * d),
                               st.lists(st.sampled_from(EXPONENTS), min_size=d, max_size=d)))
    with np.errstate(over="ignore", under="ignore"):
        X = X * 10.0 ** np.array(exponents, dtype=float)
    return X


def report_rejected(name):
    """Print the refusals counted so far (a fuzz module's last line)."""
    counts = ", ".join(f"{key}: {value}" for key, value in sorted(REJECTED.items()))
    print(f"\n[{name}] clear refusals per estimator: {counts or 'none'}")
