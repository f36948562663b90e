"""Bayes estimates of the exact estimators: exact under Binder's loss, every loss accepted."""

import numpy as np
import pytest

from oracles import all_partitions_binder_losses, pairwise_losses
from sklearn_trellis import DPMixture, ExactCorrelationClustering
from sklearn_trellis.models import NormalInverseWishart
from sklearn_trellis.summaries import expected_loss
from sklearn_trellis.summaries.point_estimates import LOSSES


def exhaustive_binder_minimum(pairwise):
    """Smallest expected Binder loss over every partition, from the exact marginals."""
    return all_partitions_binder_losses(pairwise)[1].min()


@pytest.mark.parametrize("seed", range(3))
def test_correlation_clustering_binder_estimate_is_the_exhaustive_minimiser(seed):
    X = np.random.default_rng(seed).normal(size=(8, 2))
    model = ExactCorrelationClustering(beta=1.5).fit(X)
    labels = ExactCorrelationClustering(beta=1.5, point_estimate="binder").fit(X).labels_
    P = model.pairwise_marginals_
    got = pairwise_losses(labels[None, :], P, "binder")[0]
    assert got == pytest.approx(exhaustive_binder_minimum(P), abs=1e-9)
    # the MAP is never better under the expected loss
    assert got <= pairwise_losses(model.labels_[None, :], P, "binder")[0] + 1e-12


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_correlation_clustering_point_estimate_accepts_every_loss(loss):
    X = np.random.default_rng(0).normal(size=(7, 2))
    model = ExactCorrelationClustering(beta=1.0, point_estimate=loss, random_state=0)
    labels = model.fit(X).labels_
    assert labels.shape == (7,) and labels[0] == 0
    assert np.array_equal(labels, model.fit(X).labels_)  # reproducible


def test_point_estimate_rejects_unknown_loss():
    model = ExactCorrelationClustering(point_estimate="hamming")
    with pytest.raises(ValueError, match="point_estimate"):
        model.fit(np.random.default_rng(0).normal(size=(5, 2)))


def test_dp_mixture_exact_binder_estimate_is_the_exhaustive_minimiser():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 0.5, (4, 2)), rng.normal(2, 0.5, (4, 2))])
    model = DPMixture(method="exact", point_estimate="binder", n_sweeps=50,
                      likelihood=NormalInverseWishart(hyperprior="fixed"),
                      random_state=0).fit(X)
    P = model.pairwise_marginals_
    got = pairwise_losses(model.labels_[None, :], P, "binder")[0]
    assert got == pytest.approx(exhaustive_binder_minimum(P), abs=1e-9)


@pytest.mark.parametrize("method", ["exact", "gibbs"])
@pytest.mark.parametrize("loss", ["vi", "omari", "vi_lb"])
def test_dp_mixture_point_estimate_accepts_every_loss(method, loss):
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 0.3, (4, 2)), rng.normal(3, 0.3, (4, 2))])
    model = DPMixture(method=method, point_estimate=loss, n_sweeps=60,
                      likelihood=NormalInverseWishart(hyperprior="fixed"),
                      random_state=0).fit(X)
    assert model.labels_.shape == (8,)
    if loss == "vi":  # no sample has a smaller expected VI than the estimate
        ours = expected_loss(model.samples_, model.labels_, loss="vi")
        best = min(expected_loss(model.samples_, s, loss="vi") for s in np.unique(model.samples_, axis=0))
        assert ours <= best + 1e-9


@pytest.mark.parametrize("loss", ["map", "binder", "vi", "vi_lb", "omari", "nvi"])
def test_dp_mixture_exact_approximation_names_a_point_estimate_searched_on_draws(loss):
    # Exact mode: MAP, Binder and VI are exact minimisers (vi_lb too: its search ends by
    # checking every partition of 8 items); omARI and NVI are searched on the draws.
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 0.3, (4, 2)), rng.normal(3, 0.3, (4, 2))])
    model = DPMixture(method="exact", point_estimate=loss, n_sweeps=60,
                      likelihood=NormalInverseWishart(hyperprior="fixed"),
                      random_state=0).fit(X)
    assert model.method_ == "exact"
    if loss in ("omari", "nvi"):
        assert model.approximation_ == (f"labels_ (point_estimate={loss!r}): searched on 60 "
                                        f"posterior draws (their mean {loss!r} loss estimates "
                                        "the expected one; it depends on random_state)")
    else:
        assert model.approximation_ is None


def test_infinite_biclustering_exact_approximation_names_both_point_estimates():
    from sklearn_trellis import InfiniteBiclustering
    X = np.random.default_rng(0).normal(size=(4, 3))
    fitted = {loss: InfiniteBiclustering(method="exact", point_estimate=loss, n_sweeps=20,
                                         random_state=0).fit(X) for loss in ("vi", "nid")}
    assert fitted["vi"].method_ == "exact" and fitted["vi"].approximation_ is None
    note = fitted["nid"].approximation_
    assert note.startswith("row_labels_ (point_estimate='nid'): searched on 20 posterior")
    assert "; column_labels_ (point_estimate='nid'): searched on 20" in note
