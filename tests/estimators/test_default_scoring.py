"""GridSearchCV with its default scoring on each of the nine estimators: it runs
where ``score`` exists (and the score is finite), and where it does not,
``hasattr`` says so, scikit-learn refuses with a TypeError, and the estimator's
documentation names a scorer that works (issue 28)."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV

from sklearn_trellis import (BayesianHierarchicalClustering, CrossCat, DivisiveClustering,
                             DPMixture, EntropyAgglomeration, ExactCorrelationClustering,
                             FastTIWD, InfiniteBiclustering, TrellisHierarchical)
from sklearn_trellis.datasets import make_ginkgo_jets, make_wishart_blocks
from sklearn_trellis.models import GinkgoEnergy


def _blobs(n=16, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    return np.array([[0.0, 0.0], [5.0, 5.0]])[y] + rng.normal(scale=0.5, size=(n, 2)), y


def _cases():
    X, y = _blobs()
    jet = next(j for j in make_ginkgo_jets(40, jet_mass=12.0, random_state=0).jets
               if len(j) >= 7)
    D = make_wishart_blocks(n_samples=24, dof=60, random_state=0).distances
    samples = np.array([y, y, 1 - y, np.arange(16) % 3])
    return [
        (ExactCorrelationClustering(), {"beta": [0.5, 1.0]}, X[:8]),
        (TrellisHierarchical(), {"beta": [0.5, 1.0]}, X[:8]),
        (TrellisHierarchical(energy=GinkgoEnergy()), {"energy__lam": [1.0, 3.0]}, jet),
        (DPMixture(n_sweeps=6, random_state=0), {"alpha": [0.5, 2.0]}, X),
        (FastTIWD(n_sweeps=6, random_state=0), {"dof": [40.0, 60.0]}, D),
        (EntropyAgglomeration(), {"n_clusters": [2, 3]}, samples),
        (DivisiveClustering(), {"n_clusters": [2, 3]}, X),
        (InfiniteBiclustering(n_sweeps=4, random_state=0), {"alpha_rows": [0.5, 2.0]},
         np.hstack([X, X])),
        (BayesianHierarchicalClustering(), {"alpha": [0.5, 2.0]}, X),
        (CrossCat(n_sweeps=4, random_state=0), {"alpha_rows": [0.5, 2.0]}, X),
    ]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("estimator, grid, X", _cases(),
                         ids=lambda v: type(v).__name__ if hasattr(v, "fit") else "")
def test_default_scoring_runs_or_names_a_scorer(estimator, grid, X):
    search = GridSearchCV(estimator, grid, cv=2)
    if hasattr(estimator, "score"):
        search.fit(X)
        scores = search.cv_results_["mean_test_score"]
        if isinstance(getattr(estimator, "energy", None), GinkgoEnergy):
            # a fold's leaves need not make a jet that can split (-inf): one jet is one sample
            assert not np.any(np.isnan(scores))
        else:
            assert np.all(np.isfinite(scores))
    else:
        with pytest.raises(TypeError, match="score"):
            search.fit(X)
        if isinstance(estimator, (EntropyAgglomeration, DivisiveClustering)):
            # never a score: the docs say what to use
            assert "No ``score``" in type(estimator).__doc__
            assert "scoring=" in type(estimator).__doc__


def test_the_documented_refitting_scorer_works():
    X, y = _blobs()
    search = GridSearchCV(DivisiveClustering(), {"n_clusters": [2, 3]}, cv=2,
                          scoring=lambda est, X, y: adjusted_rand_score(y, est.fit_predict(X)))
    assert search.fit(X, y).best_params_ == {"n_clusters": 2}
