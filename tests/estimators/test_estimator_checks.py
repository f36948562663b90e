"""scikit-learn's estimator checks on every estimator, expected failures declared."""

import numpy as np
import pytest
from numba.core import event
from numba.core.dispatcher import Dispatcher
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances
from sklearn.utils._testing import create_memmap_backed_data
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_trellis import (BayesianHierarchicalClustering, CrossCat, DivisiveClustering,
                             DPMixture, EntropyAgglomeration, ExactCorrelationClustering,
                             FastTIWD, InfiniteBiclustering, TrellisHierarchical)
from sklearn_trellis._core import validation
from sklearn_trellis._core.validation import writeable_if_small

# EntropyAgglomeration.fit takes a sample set: rows are sampled clusterings, the
# columns are the n elements (n_features_in_ = n), values are integer labels.
_SAMPLE_SET_INPUT = {
    "check_clustering": "fit takes a sample set of integer labels (rows = sampled "
                        "clusterings, columns = elements); the check's continuous feature "
                        "rows are refused on purpose, and labels_ has one entry per column",
    "check_dtype_object": "the check's object array holds non-integral floats, which are "
                          "refused on purpose: labels must be integers (a feature matrix "
                          "passed by mistake gets a clear ValueError)",
}

ESTIMATORS = [
    # the checks' usual n = 20 through the sparse engine, n <= 16 through the exact one (at
    # n = 20 every fit would cost the exact engine ~1 CPU s; test_correlation_clustering's
    # test_exact_engine_at_n20_matches_the_closed_form checks it there)
    ExactCorrelationClustering(max_exact_size=16),
    # the same API through the sparse engine from n = 13, on precomputed affinities
    ExactCorrelationClustering(affinity="precomputed", max_exact_size=12),
    TrellisHierarchical(),
    TrellisHierarchical(metric="precomputed", energy="hcc", linkage="average"),
    TrellisHierarchical(energy="exponential_tree", beta="auto"),
    DPMixture(n_sweeps=20),
    DPMixture(n_sweeps=20, discount=0.3, likelihood="diagonal", n_chains=2),
    EntropyAgglomeration(),
    FastTIWD(metric="sqeuclidean", n_sweeps=30),  # 2-D blobs: dof_ ~ 2, a slow start
    FastTIWD(n_sweeps=10),
    DivisiveClustering(),
    DivisiveClustering(method="kmeans", random_state=0),
    DivisiveClustering(method="exact", criterion="dasgupta", max_exact_size=8),
    DivisiveClustering(metric="precomputed", method="kmedoids"),
    InfiniteBiclustering(n_sweeps=6),
    BayesianHierarchicalClustering(),
    BayesianHierarchicalClustering(likelihood="diagonal", tree="rose"),
    BayesianHierarchicalClustering(method="randomized", subsample_size=10, random_state=0),
    CrossCat(n_sweeps=10),
    CrossCat(n_sweeps=10, row_sampler="collapsed", n_split_merge=2),
]

_DISTANCES_ONLY = ("check_clustering passes feature rows, not the squared-distance matrix "
                   "that metric='precomputed' expects (the metric='sqeuclidean' instance "
                   "passes it)")

_NAN_PAIRS = ("with allow_nan the check blanks 10 of the 90 entries of a 30 x 3 matrix, leaving "
              "a pair of rows with no feature present in both; their dissimilarity is "
              "undefined and is refused, as R's daisy/diana refuse it (the 'kmeans' and "
              "'precomputed' instances, which refuse NaN, pass the check)")

EXPECTED_FAILURES = {
    "EntropyAgglomeration": _SAMPLE_SET_INPUT,
    "ExactCorrelationClustering(precomputed)": {
        "check_clustering": "check_clustering passes feature rows, not the signed affinity "
                            "matrix that affinity='precomputed' expects (the default "
                            "instance passes it)",
        "check_clustering(readonly_memmap=True)": "as check_clustering",
    },
    "TrellisHierarchical(precomputed)": {
        "check_clustering": "check_clustering passes feature rows, not the distance matrix "
                            "that metric='precomputed' expects (the default instance passes it)",
        "check_clustering(readonly_memmap=True)": "as check_clustering",
    },
    "DivisiveClustering(precomputed)": {
        "check_clustering": "check_clustering passes feature rows, not the dissimilarity "
                            "matrix that metric='precomputed' expects (the default "
                            "instance passes it)",
        "check_clustering(readonly_memmap=True)": "as check_clustering",
    },
    "DivisiveClustering(allow_nan)": {
        "check_estimators_pickle": _NAN_PAIRS,
        "check_estimators_pickle(readonly_memmap=True)": _NAN_PAIRS,
    },
    "FastTIWD(precomputed)": {"check_clustering": _DISTANCES_ONLY,
                              "check_clustering(readonly_memmap=True)": _DISTANCES_ONLY},
}


def expected_failed_checks(estimator):
    name = type(estimator).__name__
    if getattr(estimator, "metric", getattr(estimator, "affinity", None)) == "precomputed":
        name = f"{name}(precomputed)"
    elif name == "DivisiveClustering" and estimator.__sklearn_tags__().input_tags.allow_nan:
        name = f"{name}(allow_nan)"
    return EXPECTED_FAILURES.get(name, {})


# TrellisHierarchical(energy='exponential_tree', beta='auto') fits beta by EM: five or six
# planner runs a fit, four times the CPU of TrellisHierarchical()'s checks (21 of 34 CPU s
# from an empty cache). Its checks of how the input is read (dtypes, memory layout and
# read-only memory, one feature or one sample, subsets and order of the rows, NaN) go
# through the validation and fit path every TrellisHierarchical shares, which the
# TrellisHierarchical() and energy='hcc' instances check in the fast set: they run with the
# slow tests. The fast set keeps its checks of the fitted state and the parameters, which
# beta='auto' changes (beta_ fitted, beta left 'auto'; score at beta_; pickle; refit).
_EM_INSTANCE = "TrellisHierarchical(beta='auto',energy='exponential_tree')"
_INPUT_CHECKS = {
    "check_estimators_dtypes", "check_n_features_in_after_fitting", "check_n_features_in",
    "check_methods_subset_invariance", "check_methods_sample_order_invariance",
    "check_fit2d_predict1d", "check_f_contiguous_array_estimator", "check_dtype_object",
    "check_dict_unchanged", "check_pipeline_consistency", "check_readonly_memmap_input",
    "check_fit2d_1feature", "check_fit2d_1sample", "check_estimators_nan_inf",
    "check_positive_only_tag_during_fit", "check_complex_data", "check_fit1d",
    "check_estimators_empty_data_messages",
}


def _input_checks_of_the_em_instance_are_slow(parametrize):
    """``parametrize`` (``parametrize_with_checks``) with the input checks of
    ``_EM_INSTANCE`` (and any check on its read-only memory) marked slow."""
    names, cases = parametrize.args

    def slow(case):
        estimator, check = case.values if hasattr(case, "values") else case
        keywords = getattr(check, "keywords", {})
        return (repr(estimator).replace(" ", "").replace("\n", "") == _EM_INSTANCE
                and (check.func.__name__ in _INPUT_CHECKS or keywords.get("readonly_memmap")))

    cases = [pytest.param(*getattr(case, "values", case),
                          marks=[*getattr(case, "marks", ()), pytest.mark.slow],
                          id=getattr(case, "id", None))
             if slow(case) else case for case in cases]
    return pytest.mark.parametrize(names, cases, **parametrize.kwargs)


@_input_checks_of_the_em_instance_are_slow(
    parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks))
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- read-only input (issue 29) ------------------------------------------------------
# numba types a read-only array apart from a writeable one and would compile every
# kernel again for it: small read-only inputs are copied (validate_kernel_data). One
# instance per estimator, on the input its kernels read; the parameter is called
# ``estimator`` so that tests/conftest.py runs each case with that estimator's checks,
# which compile the same kernels.
READONLY_CASES = [
    ExactCorrelationClustering(max_exact_size=16),
    TrellisHierarchical(metric="precomputed", energy="hcc", linkage="average"),
    DPMixture(n_sweeps=20),
    EntropyAgglomeration(),
    FastTIWD(n_sweeps=10),                       # metric='precomputed'
    DivisiveClustering(metric="precomputed", method="kmedoids"),
    InfiniteBiclustering(n_sweeps=6),
    BayesianHierarchicalClustering(),
    CrossCat(n_sweeps=10),
]


def _input_for(estimator):
    """A small writeable input of the kind ``estimator`` fits."""
    X, _ = make_blobs(n_samples=12, n_features=3, centers=3, random_state=0)
    if isinstance(estimator, DPMixture):
        # its exact fit and predictive cost 3^n and 2^n a grid point: 8 rows run the
        # same compiled kernels as 12 (and one more), in a third of the time
        return X[:8]
    if isinstance(estimator, EntropyAgglomeration):
        return np.random.RandomState(0).randint(0, 3, size=(6, 8))
    if getattr(estimator, "metric", None) == "precomputed":
        return pairwise_distances(X, metric="sqeuclidean")
    return X


def _read_only(X):
    X = X.copy()
    X.setflags(write=False)
    return X


@pytest.fixture
def new_read_only_versions(monkeypatch):
    """The kernel versions taking a read-only array that calls from Python add from now on.

    Compiled or loaded from the on-disk cache (the compilation events alone miss
    the versions that a warm cache loads): numba's dispatcher calls
    ``_compile_for_args`` on every call whose argument types it has no version for.
    """
    added = []
    compile_for_args = Dispatcher._compile_for_args

    def spy(kernel, *args, **kwargs):
        before = set(kernel.overloads)
        try:
            return compile_for_args(kernel, *args, **kwargs)
        finally:
            added.extend(f"{kernel.py_func.__qualname__}{signature}"
                         for signature in set(kernel.overloads) - before
                         if any(getattr(arg, "mutable", True) is False for arg in signature))

    monkeypatch.setattr(Dispatcher, "_compile_for_args", spy)
    return added


def _fitted_arrays(estimator):
    return {name: value for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("_") and isinstance(value, np.ndarray)}


@pytest.mark.parametrize("estimator", READONLY_CASES, ids=lambda e: type(e).__name__)
def test_read_only_input_compiles_nothing_more_and_fits_the_same(estimator,
                                                                 new_read_only_versions):
    if "random_state" in estimator.get_params():
        estimator = clone(estimator).set_params(random_state=0)
    X = _input_for(estimator)
    writeable = clone(estimator).fit(X)              # compiles (or loads) the kernels
    read_only_X = _read_only(X)
    del new_read_only_versions[:]
    with event.install_recorder("numba:compile") as recorder:
        read_only = clone(estimator).fit(read_only_X)
    compiled = [str(e.data.get("dispatcher", e.data)) for _, e in recorder.buffer
                if e.is_start]
    assert compiled == [], f"fit on read-only input compiled {compiled}"
    assert new_read_only_versions == []          # nor loaded a read-only version
    assert not read_only_X.flags.writeable            # the user's array is left as it was
    expected, got = _fitted_arrays(writeable), _fitted_arrays(read_only)
    assert expected and got.keys() == expected.keys()
    for name, value in expected.items():              # exactly the same fit
        np.testing.assert_array_equal(got[name], value, err_msg=name, strict=True)


def test_large_read_only_input_reaches_the_fit_uncopied(monkeypatch):
    """Above the threshold (patched down to 0 bytes) the validated array is the user's."""
    validated = []

    def spy(array):
        validated.append(writeable_if_small(array))
        return validated[-1]

    monkeypatch.setattr(validation, "READONLY_COPY_MAX_BYTES", 0)
    monkeypatch.setattr(validation, "writeable_if_small", spy)
    estimator = DivisiveClustering()          # the features reach no kernel: no compilation
    X = _input_for(estimator)
    read_only_X = _read_only(X)
    read_only = clone(estimator).fit(read_only_X)
    assert len(validated) == 1 and np.shares_memory(validated[0], read_only_X)
    assert not validated[0].flags.writeable
    np.testing.assert_array_equal(read_only.children_, clone(estimator).fit(X).children_)


@pytest.mark.parametrize("estimator", READONLY_CASES, ids=lambda e: type(e).__name__)
def test_memory_mapped_fitted_state_compiles_nothing_more(estimator, new_read_only_versions):
    """A fit loaded with ``joblib.load(mmap_mode='r')`` predicts with the writeable kernels."""
    if "random_state" in estimator.get_params():
        estimator = clone(estimator).set_params(random_state=0)
    X = _input_for(estimator)
    fitted = clone(estimator).fit(X)
    methods = [m for m in ("predict", "predict_proba", "score_samples", "transform")
               if hasattr(fitted, m)]
    # three new rows run the same kernels as twelve (DPMixture's exact score_samples costs
    # about 0.2 CPU s a row)
    new = X[:3]
    expected = {m: getattr(fitted, m)(new) for m in methods}  # compiles (or loads) the kernels
    mapped = create_memmap_backed_data(fitted)
    assert all(value.flags.writeable for value in _fitted_arrays(mapped).values())
    del new_read_only_versions[:]
    with event.install_recorder("numba:compile") as recorder:
        got = {m: getattr(mapped, m)(new) for m in methods}
    assert not [e for _, e in recorder.buffer if e.is_start]
    assert new_read_only_versions == []
    for m in methods:
        np.testing.assert_array_equal(got[m], expected[m], err_msg=m, strict=True)


def test_large_memory_mapped_fitted_state_stays_mapped(monkeypatch):
    monkeypatch.setattr(validation, "READONLY_COPY_MAX_BYTES", 0)
    estimator = DivisiveClustering().fit(_input_for(DivisiveClustering()))
    mapped = create_memmap_backed_data(estimator)
    assert not mapped.children_.flags.writeable
    np.testing.assert_array_equal(mapped.children_, estimator.children_)


@pytest.mark.slow   # compiles the read-only version of every Gibbs and BHC kernel
@pytest.mark.parametrize("estimator", [
    DPMixture(n_sweeps=20, method="gibbs"), DPMixture(n_sweeps=20, method="subcluster"),
    BayesianHierarchicalClustering()], ids=["gibbs", "subcluster", "bhc"])
def test_large_read_only_rows_are_not_duplicated(estimator, monkeypatch):
    """Above the threshold (patched down to 0 bytes) the rows the kernels read are the
    user's read-only array itself, and the fit is the writeable input's bit for bit."""
    from sklearn_trellis.models.conjugate import _FittedMixin
    if "random_state" in estimator.get_params():
        estimator = clone(estimator).set_params(random_state=0)
    X, _ = make_blobs(n_samples=40, n_features=3, centers=3, random_state=0)
    writeable = clone(estimator).fit(X)
    monkeypatch.setattr(validation, "READONLY_COPY_MAX_BYTES", 0)
    rows = []
    for name in ("check_data", "check_sampler_data"):
        def spy(self, data, _check=getattr(_FittedMixin, name)):
            rows.append(_check(self, data))
            return rows[-1]
        monkeypatch.setattr(_FittedMixin, name, spy)
    read_only_X = _read_only(X)
    read_only = clone(estimator).fit(read_only_X)
    assert rows and all(np.shares_memory(r, read_only_X) and not r.flags.writeable
                        for r in rows)
    expected, got = _fitted_arrays(writeable), _fitted_arrays(read_only)
    assert expected and got.keys() == expected.keys()
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name, strict=True)
