"""Pairwise calibration scores against scikit-learn's on the same pairs, and the scorers."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis.metrics import (expected_calibration_error, learned_parameters,
                                     make_pairwise_scorer,
                                     pair_targets, pairwise_brier_score,
                                     pairwise_brier_scorer, pairwise_calibration_curve,
                                     pairwise_from_proba, pairwise_log_loss,
                                     pairwise_log_loss_scorer)


def random_pairwise(rng, n):
    p = rng.uniform(0, 1, (n, n))
    p = (p + p.T) / 2
    np.fill_diagonal(p, 1.0)
    return p


def naive_pairs(y, p):
    targets, probs = [], []
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            targets.append(int(y[i] == y[j]))
            probs.append(p[i, j])
    return np.array(targets), np.array(probs)


@pytest.mark.parametrize("seed", range(4))
def test_losses_equal_sklearns_on_the_pairs(seed):
    rng = np.random.default_rng(seed)
    y = rng.choice(["a", "b", "c"], 9)
    p = random_pairwise(rng, 9)
    t, q = naive_pairs(y, p)
    assert pairwise_log_loss(y, p) == pytest.approx(log_loss(t, q, labels=[0, 1]))
    assert pairwise_brier_score(y, p) == pytest.approx(brier_score_loss(t, q))


def test_hand_case():
    P = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.1], [0.2, 0.1, 1.0]])
    assert pairwise_log_loss([0, 0, 1], P) == pytest.approx(
        -(np.log(0.9) + np.log(0.8) + np.log(0.9)) / 3)
    assert pairwise_brier_score([0, 0, 1], P) == pytest.approx((0.01 + 0.04 + 0.01) / 3)
    # certain and right: zero loss; certain and wrong: the clipped log loss, finite
    assert pairwise_log_loss([0, 0], np.ones((2, 2))) == pytest.approx(0.0, abs=1e-12)
    assert np.isfinite(pairwise_log_loss([0, 1], np.ones((2, 2))))


def test_reference_layout():
    rng = np.random.default_rng(5)
    y, y_ref = rng.integers(0, 3, 4), rng.integers(0, 3, 6)
    p = rng.uniform(0, 1, (4, 6))
    t = (y[:, None] == y_ref[None, :]).ravel().astype(int)
    assert pairwise_log_loss(y, p, y_reference=y_ref) == pytest.approx(
        log_loss(t, p.ravel(), labels=[0, 1]))
    assert pairwise_brier_score(y, p, y_reference=y_ref) == pytest.approx(
        brier_score_loss(t, p.ravel()))


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_calibration_curve_equals_sklearns(strategy):
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, 30)
    p = random_pairwise(rng, 30)
    prob_true, prob_pred, counts = pairwise_calibration_curve(y, p, n_bins=10,
                                                              strategy=strategy)
    t, q = naive_pairs(y, p)
    ref_true, ref_pred = calibration_curve(t, q, n_bins=10, strategy=strategy)
    np.testing.assert_allclose(prob_true, ref_true)
    np.testing.assert_allclose(prob_pred, ref_pred)
    assert counts.sum() == t.size


def test_expected_calibration_error():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 25)
    p = random_pairwise(rng, 25)
    t, q = naive_pairs(y, p)
    edges = np.linspace(0, 1, 11)
    ece = 0.0
    for k in range(10):
        inside = ((q > edges[k]) | (k == 0)) & (q <= edges[k + 1])
        if inside.any():
            ece += inside.sum() / q.size * abs(t[inside].mean() - q[inside].mean())
    assert expected_calibration_error(y, p) == pytest.approx(ece)
    # the co-membership indicator itself is perfectly calibrated
    same = (y[:, None] == y[None, :]).astype(float)
    assert expected_calibration_error(y, same) == 0.0


def test_pairwise_from_proba_is_label_permutation_free():
    rng = np.random.default_rng(8)
    proba = rng.dirichlet(np.ones(3), 5)
    perm = [2, 0, 1]
    np.testing.assert_allclose(pairwise_from_proba(proba), pairwise_from_proba(proba[:, perm]))
    labels = np.array([0, 2, 1, 1])
    inverse = np.argsort(perm)
    np.testing.assert_allclose(pairwise_from_proba(proba, labels),
                               pairwise_from_proba(proba[:, perm], inverse[labels]))
    together = pairwise_from_proba(proba)
    assert together[0, 1] == pytest.approx(np.dot(proba[0], proba[1]))
    assert np.all(np.diag(together) == 1.0)


@pytest.mark.parametrize("call, match", [
    (lambda: pairwise_log_loss([0, 1, 1], np.ones((2, 2))), "shape"),
    (lambda: pairwise_log_loss([0, 1], np.full((2, 2), 1.5)), r"\[0, 1\]"),
    (lambda: pairwise_log_loss([0], np.ones((1, 1))), "two items"),
    (lambda: pairwise_log_loss([[0, 1]], np.ones((2, 2))), "1-d"),
    (lambda: pairwise_brier_score([0, 1], np.ones((2, 3)), y_reference=[0, 1]), "shape"),
    (lambda: pairwise_calibration_curve([0, 1], np.ones((2, 2)), n_bins=0), "n_bins"),
    (lambda: pairwise_calibration_curve([0, 1], np.ones((2, 2)), strategy="x"), "strategy"),
    (lambda: pairwise_from_proba(np.ones(3)), "2-d"),
    (lambda: pairwise_from_proba(np.ones((2, 2)), [0, 2]), "reference_labels"),
    (lambda: make_pairwise_scorer("accuracy"), "loss"),
    (lambda: make_pairwise_scorer(source="x"), "source"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_pair_targets_order():
    t, p = pair_targets(["x", "x", "y"], np.array([[1, .3, .2], [.3, 1, .1], [.2, .1, 1]]))
    assert t.tolist() == [1.0, 0.0, 0.0] and p.tolist() == [0.3, 0.2, 0.1]


def two_blobs(seed, n=8):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(0, 0.4, (n, 2)), rng.normal(2.5, 0.4, (n, 2))]
    return X, np.repeat([0, 1], n)


def test_refit_scorer_scores_the_marginals_of_the_fold():
    X, y = two_blobs(9)
    est = ExactCorrelationClustering(beta=2.0)
    expected = -pairwise_log_loss(y[::2], est.fit(X[::2]).pairwise_marginals_)
    assert pairwise_log_loss_scorer(est.fit(X[1::2]), X[::2], y[::2]) == pytest.approx(expected)
    assert pairwise_brier_scorer(est, X[::2], y[::2]) == pytest.approx(
        -pairwise_brier_score(y[::2], est.fit(X[::2]).pairwise_marginals_))


def test_refit_scorer_keeps_the_values_the_training_fit_learned():
    X, y = two_blobs(12)
    est = ExactCorrelationClustering(beta="auto").fit(X[1::2])
    assert learned_parameters(est) == {"beta": est.beta_}
    fixed = ExactCorrelationClustering(beta=est.beta_).fit(X[::2])
    assert pairwise_log_loss_scorer(est, X[::2], y[::2]) == pytest.approx(
        -pairwise_log_loss(y[::2], fixed.pairwise_marginals_))
    assert learned_parameters(ExactCorrelationClustering(beta=2.0).fit(X)) == {}


def test_predict_proba_scorer():
    X, y = two_blobs(10)
    gm = GaussianMixture(2, random_state=0).fit(X[::2])
    expected = -pairwise_log_loss(y[1::2], pairwise_from_proba(gm.predict_proba(X[1::2])))
    assert pairwise_log_loss_scorer(gm, X[1::2], y[1::2]) == pytest.approx(expected)
    with pytest.raises(TypeError, match="predict_proba"):
        make_pairwise_scorer(source="predict_proba")(ExactCorrelationClustering(), X, y)
    with pytest.raises(ValueError, match="labels"):
        pairwise_log_loss_scorer(gm, X, None)


def test_grid_search_calibrates_beta_on_labels():
    X, y = two_blobs(11)
    search = GridSearchCV(ExactCorrelationClustering(), {"beta": [0.01, 3.0, 300.0]},
                          scoring=pairwise_log_loss_scorer,
                          cv=KFold(2, shuffle=True, random_state=0)).fit(X, y)
    # too cold: every pair at 1/2-ish; too hot: certain, and wrong on some pairs
    scores = search.cv_results_["mean_test_score"]
    assert scores[1] > scores[0]
    assert search.best_params_["beta"] != 0.01



def _top_label_ece(confidence, correct, n_bins=10):
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    return sum(np.mean(bins == b) * abs(confidence[bins == b].mean() - correct[bins == b].mean())
               for b in np.unique(bins))


def test_labelled_search_calibrates_the_tree_predict_proba():
    """The choosing guide's one line for TrellisHierarchical's held-out
    predict_proba: beta selected on labels with the pairwise scorer lowers the
    temperature (the default is overconfident) and the held-out ECE, and leaves
    the clusters as they are (Dasgupta's MAP tree does not depend on beta)."""
    from sklearn.datasets import make_blobs
    from sklearn.preprocessing import StandardScaler

    from sklearn_trellis import TrellisHierarchical

    X, y = make_blobs(150, centers=3, cluster_std=2.5, random_state=2)
    X = StandardScaler().fit_transform(X)
    train, test = np.arange(90), np.arange(90, 150)
    search = GridSearchCV(TrellisHierarchical(n_clusters=3), {"beta": np.logspace(-4, 1, 11)},
                          scoring=pairwise_log_loss_scorer,
                          cv=KFold(3, shuffle=True, random_state=0)).fit(X[train], y[train])
    default = TrellisHierarchical(n_clusters=3).fit(X[train])
    np.testing.assert_array_equal(search.best_estimator_.labels_, default.labels_)
    errors = []
    for fitted in (default, search.best_estimator_):
        proba = fitted.predict_proba(X[test])
        majority = np.array([np.bincount(y[train][fitted.labels_ == k], minlength=3).argmax()
                             for k in range(proba.shape[1])])
        correct = (majority[proba.argmax(axis=1)] == y[test]).astype(float)
        errors.append(_top_label_ece(proba.max(axis=1), correct))
    assert search.best_params_["beta"] <= 0.03
    assert errors[1] < errors[0] - 0.05        # 0.291 -> 0.207 when written

@pytest.mark.parametrize("proba", [[[0.5, 0.2], [0.1, 0.9]],     # a column left out
                                   [[0.9, 0.9], [0.5, 0.5]]])    # clipped to 1 before
@pytest.mark.parametrize("reference_labels", [None, [0, 1]])
def test_pairwise_from_proba_refuses_rows_that_are_not_distributions(proba, reference_labels):
    with pytest.raises(ValueError, match="row 0 sums to"):
        pairwise_from_proba(proba, reference_labels)
    # float32 rounding of a distribution is accepted
    ok = np.array([[0.3, 0.7], [0.5, 0.5]], dtype=np.float32)
    assert pairwise_from_proba(ok, reference_labels).shape[0] == 2


def test_n_bins_of_the_wrong_type_and_empty_proba_get_clear_answers():
    P = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.1], [0.2, 0.1, 1.0]])
    for bad in (None, True, "10", np.inf, 0, 2.5):  # None was int()'s TypeError
        with pytest.raises(ValueError, match="n_bins must be a positive integer"):
            pairwise_calibration_curve([0, 0, 1], P, n_bins=bad)
    curve = pairwise_calibration_curve([0, 0, 1], P, n_bins=np.int64(2))
    np.testing.assert_array_equal(curve[2], [2, 1])
    # no item: no pair (it was numpy's "zero-size array to reduction operation")
    assert pairwise_from_proba(np.zeros((0, 2))).shape == (0, 0)


def test_learned_parameters_of_no_estimator_is_a_type_error():
    with pytest.raises(TypeError, match="needs a scikit-learn estimator, got ndarray"):
        learned_parameters(np.zeros(3))   # AttributeError 'get_params' before


def test_co_membership_too_large_for_memory_is_refused_before_allocating():
    proba = np.full((400_000, 1), 1.0)   # 3.2 MB of input, a 2.3 TiB (n, n) product
    with pytest.raises(ValueError, match=r"co-membership matrix .* needs about 2.33 TiB"):
        pairwise_from_proba(proba)
    assert pairwise_from_proba(proba, reference_labels=[0, 0]).shape == (400_000, 2)
