"""A feature matrix's memory layout changes nothing: C-ordered, Fortran-ordered (a pandas
DataFrame's) and strided views of the same values give bitwise the same fit."""

import numpy as np
import pytest

from sklearn_trellis import (BayesianHierarchicalClustering, CrossCat, DivisiveClustering,
                             DPMixture, ExactCorrelationClustering, FastTIWD,
                             InfiniteBiclustering, TrellisHierarchical)

rng = np.random.default_rng(0)
X = np.concatenate([rng.normal(0, 1, (12, 3)), rng.normal(3, 1, (12, 3))])

ESTIMATORS = {
    "DPMixture-gibbs": (lambda: DPMixture(method="gibbs", n_sweeps=20, random_state=0), X),
    "DPMixture-exact": (lambda: DPMixture(method="exact", n_sweeps=5, random_state=0), X[:8]),
    "FastTIWD": (lambda: FastTIWD(metric="sqeuclidean", method="gibbs", n_sweeps=20,
                                  random_state=0), X),
    "InfiniteBiclustering": (lambda: InfiniteBiclustering(method="gibbs", n_sweeps=10,
                                                          random_state=0), X),
    "CrossCat": (lambda: CrossCat(method="gibbs", n_sweeps=5, random_state=0), X),
    "TrellisHierarchical": (lambda: TrellisHierarchical(), X[:10]),
    "BayesianHierarchicalClustering": (lambda: BayesianHierarchicalClustering(), X),
    "ExactCorrelationClustering": (lambda: ExactCorrelationClustering(beta=1.0), X[:8]),
    "DivisiveClustering": (lambda: DivisiveClustering(), X),
}

#: Fitted attributes that measure time, not the fit.
TIMINGS = {"seconds_per_sweep_"}


def fitted_values(estimator):
    return {key: value for key, value in vars(estimator).items()
            if key.endswith("_") and not key.startswith("_") and key not in TIMINGS}


def layouts(data):
    yield "fortran", np.asfortranarray(data)
    yield "strided view", np.repeat(data, 2, axis=1)[:, ::2]
    try:
        import pandas
    except ImportError:
        return
    yield "DataFrame", pandas.DataFrame(data, columns=[f"x{j}" for j in range(data.shape[1])])


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_memory_layout_changes_nothing(name):
    # A Fortran-ordered X changed the last bits of DPMixture's log_joints_ (3e-14) and
    # of BayesianHierarchicalClustering's merge probabilities: the validator now makes
    # every feature matrix C-ordered, as check_array(order='C') does.
    make, data = ESTIMATORS[name]
    reference = fitted_values(make().fit(np.ascontiguousarray(data)))
    for layout, values in layouts(data):
        got = fitted_values(make().fit(values))
        for key, value in reference.items():
            if isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
                assert np.array_equal(got[key], value, equal_nan=True), (layout, key)
            elif isinstance(value, float):
                assert got[key] == value or (np.isnan(value) and np.isnan(got[key])), \
                    (layout, key)
