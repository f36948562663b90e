"""Labelled scores of clustering probabilities, and scorers for ``GridSearchCV``.

The functions score pairwise co-membership probabilities against labels
(:mod:`sklearn_trellis.summaries.calibration`): a pair's target is whether
its two items share a label, so no matching of clusters to classes is
needed. The scorers make them usable as ``GridSearchCV(scoring=...)`` to
calibrate ``beta`` (or any hyperparameter) on a labelled subset::

    GridSearchCV(ExactCorrelationClustering(), {"beta": [0.5, 1, 2, 4]},
                 scoring=pairwise_log_loss_scorer).fit(X_labelled, y_labelled)

How a scorer obtains the probabilities of the held-out fold ``(X, y)``:

- ``source='predict_proba'``: estimators with ``predict_proba`` assign the
  held-out items to the clusters fitted on the training fold; two held-out
  items are together with probability ``sum_k p_ak p_bk``
  (:func:`pairwise_from_proba`; independent assignments given the fit).
- ``source='refit'``: transductive estimators, whose probabilities are over
  the items they were fitted on (``pairwise_marginals_``): a clone is fitted
  on the held-out fold and its pairwise marginals are scored against ``y``.
  The clone takes the parameters the training fit learned: each parameter
  set to ``'auto'`` whose fitted value the estimator reports as
  ``<name>_`` (``beta='auto'`` -> ``beta_``, ``alpha='auto'`` -> ``alpha_``,
  ``dof='auto'`` -> ``dof_``) is fixed to that value, so values learned on
  the training fold are judged on data it never saw (and not learned again
  on the scored fold). Other parameters are the estimator's own.
- ``'auto'`` (default): ``'predict_proba'`` when the estimator has it, else
  ``'refit'``.
"""

from sklearn.base import clone

from .summaries.calibration import (expected_calibration_error, pair_targets,
                                    pairwise_brier_score, pairwise_calibration_curve,
                                    pairwise_from_proba, pairwise_log_loss)

#: The losses a pairwise scorer can use, by name.
PAIRWISE_LOSSES = {"log_loss": pairwise_log_loss, "brier_score": pairwise_brier_score}

SOURCES = ("auto", "predict_proba", "refit")


def learned_parameters(estimator):
    """``{name: value}`` of the parameters a fitted estimator learned: those set to
    ``'auto'`` whose fitted value it holds as ``<name>_`` (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis import ExactCorrelationClustering
    >>> X = np.r_[np.zeros((3, 2)), np.full((3, 2), 3.0)]
    >>> est = ExactCorrelationClustering(beta="auto").fit(X)
    >>> learned_parameters(est) == {"beta": est.beta_}
    True
    """
    if not hasattr(estimator, "get_params"):
        raise TypeError(f"learned_parameters needs a scikit-learn estimator, got "
                        f"{type(estimator).__name__}.")
    return {name: getattr(estimator, f"{name}_")
            for name, value in estimator.get_params(deep=False).items()
            if isinstance(value, str) and value == "auto" and hasattr(estimator, f"{name}_")}


def _refuse_unscorable(estimator):
    raise TypeError(f"{type(estimator).__name__} has neither predict_proba nor "
                    "pairwise_marginals_: a pairwise scorer cannot score it.")


class PairwiseScorer:
    """A scorer ``scorer(estimator, X, y)``: minus a pairwise loss on a labelled fold.

    Build it with :func:`make_pairwise_scorer`; greater is better, as
    scikit-learn's model selection expects.

    Parameters
    ----------
    loss : {'log_loss', 'brier_score'}
    source : {'auto', 'predict_proba', 'refit'}
    """

    def __init__(self, loss="log_loss", source="auto"):
        if loss not in PAIRWISE_LOSSES:
            raise ValueError(f"loss must be one of {sorted(PAIRWISE_LOSSES)}, got {loss!r}.")
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}.")
        self.loss = loss
        self.source = source

    def __repr__(self):
        return f"make_pairwise_scorer({self.loss!r}, source={self.source!r})"

    def pairwise_probabilities(self, estimator, X):
        """Co-membership probabilities of the rows of ``X`` (see the module docstring)."""
        source = self.source
        if source == "auto":
            source = "predict_proba" if hasattr(estimator, "predict_proba") else "refit"
        if source == "predict_proba":
            if not hasattr(estimator, "predict_proba"):
                # 'refit' reads pairwise_marginals_: advise it only where the fit has them
                if not hasattr(estimator, "pairwise_marginals_"):
                    _refuse_unscorable(estimator)
                raise TypeError(f"{type(estimator).__name__} has no predict_proba: use "
                                "make_pairwise_scorer(..., source='refit').")
            return pairwise_from_proba(estimator.predict_proba(X))
        refitted = clone(estimator).set_params(**learned_parameters(estimator)).fit(X)
        if not hasattr(refitted, "pairwise_marginals_"):
            _refuse_unscorable(estimator)
        return refitted.pairwise_marginals_

    def __call__(self, estimator, X, y):
        if y is None:
            raise ValueError("A pairwise scorer needs the labels y of the scored items.")
        probabilities = self.pairwise_probabilities(estimator, X)
        return -PAIRWISE_LOSSES[self.loss](y, probabilities)


def make_pairwise_scorer(loss="log_loss", *, source="auto"):
    """A scorer for ``GridSearchCV(scoring=...)``: minus a pairwise loss against labels.

    Parameters
    ----------
    loss : {'log_loss', 'brier_score'}, default='log_loss'
        :func:`pairwise_log_loss` or :func:`pairwise_brier_score`.
    source : {'auto', 'predict_proba', 'refit'}, default='auto'
        Where the held-out fold's co-membership probabilities come from
        (module docstring).

    Returns
    -------
    PairwiseScorer

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV, KFold
    >>> from sklearn_trellis import ExactCorrelationClustering
    >>> from sklearn_trellis.metrics import make_pairwise_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 0.3, (8, 2)), rng.normal(2, 0.3, (8, 2))]
    >>> y = np.repeat([0, 1], 8)
    >>> search = GridSearchCV(ExactCorrelationClustering(), {"beta": [0.1, 2.0, 20.0]},
    ...                       scoring=make_pairwise_scorer("log_loss"),
    ...                       cv=KFold(2, shuffle=True, random_state=0)).fit(X, y)
    >>> search.best_params_["beta"] > 0.1
    True
    """
    return PairwiseScorer(loss, source)


#: ``make_pairwise_scorer('log_loss')``.
pairwise_log_loss_scorer = make_pairwise_scorer("log_loss")

#: ``make_pairwise_scorer('brier_score')``.
pairwise_brier_scorer = make_pairwise_scorer("brier_score")

__all__ = ["pairwise_log_loss", "pairwise_brier_score", "pairwise_calibration_curve",
           "expected_calibration_error", "pairwise_from_proba", "pair_targets",
           "make_pairwise_scorer", "PairwiseScorer", "learned_parameters",
           "pairwise_log_loss_scorer",
           "pairwise_brier_scorer"]
