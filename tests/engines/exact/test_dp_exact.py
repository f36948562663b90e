"""Exact mode of the mixture posterior against enumeration of all set partitions."""

import numpy as np
import pytest

from oracles import (cluster_probability, flat_summaries, partition_log_joints, random_subsets,
                     set_partitions, together_probability)
from numba_threads import numba_threads
from sklearn_trellis import DPMixture
from sklearn_trellis.models import (BetaBernoulli, DirichletMultinomial, NormalGamma,
                                    NormalInverseWishart)
from sklearn_trellis.models.dp_mixture import MixturePartitionModel
from sklearn_trellis.models.priors import CRP, DirichletMultinomialPrior, PitmanYor
from sklearn_trellis.engines.exact.flat_counts import CountWeightedFlatTrellis
from sklearn_trellis.engines.exact.trellis_for_model import trellis_for_model
from sklearn_trellis._core.subsets import mask_of


def enumerate_posterior(prior, lik, X):
    """log p(C, X) of every partition, from the EPPF formula and closed-form marginals."""
    closed = getattr(lik, "log_marginal_closed_form", lik.log_marginal)
    return partition_log_joints(X.shape[0], prior.log_eppf, lambda members: closed(X[members]))


def data_for(lik, rng, n):
    if isinstance(lik, BetaBernoulli):
        return (rng.random((n, 4)) < 0.5).astype(float)
    if isinstance(lik, DirichletMultinomial):
        return rng.integers(0, 4, size=(n, 3)).astype(float)
    return np.vstack([rng.normal(0, 1, (n // 2, 2)), rng.normal(3, 1, (n - n // 2, 2))])


CASES = [
    (CRP(0.8), NormalInverseWishart(kappa=0.3)),
    (PitmanYor(0.7, 0.4), NormalInverseWishart(kappa=0.3)),
    (DirichletMultinomialPrior(1.5, 3), NormalGamma()),
    (CRP(2.0), BetaBernoulli()),
    (PitmanYor(1.2, 0.2), DirichletMultinomial()),
]


@pytest.mark.parametrize("n", [4, 7])
@pytest.mark.parametrize("prior, lik", CASES, ids=lambda v: type(v).__name__)
def test_exact_posterior_matches_enumeration(n, prior, lik):
    rng = np.random.default_rng(n)
    X = data_for(lik, rng, n)
    lik = lik.fit(X)
    parts, log_joint = enumerate_posterior(prior, lik, X)
    ref = flat_summaries(parts, log_joint)
    model = MixturePartitionModel(prior, lik).fit(X)
    trellis = trellis_for_model(model, max_items=12)
    assert trellis.log_partition_function + model.log_potential_constant() == pytest.approx(
        ref["log_z"], abs=1e-8)
    assert tuple(trellis.map_labels) == tuple(parts[ref["map_index"]])
    np.testing.assert_allclose(trellis.pairwise_marginals(), ref["pairwise"], atol=1e-9)
    np.testing.assert_allclose(trellis.n_clusters_distribution(), ref["k_dist"], atol=1e-9)
    for subset in random_subsets(rng, n, 4):
        assert trellis.together_marginal(subset) == pytest.approx(
            together_probability(parts, ref["probs"], subset), abs=1e-9)
        assert trellis.cluster_marginal(subset) == pytest.approx(
            cluster_probability(parts, ref["probs"], subset), abs=1e-9)
    # log-potential of a labelling = log p(C, X) up to log Z
    t = int(rng.integers(len(parts)))
    assert model.log_potential(parts[t]) == pytest.approx(log_joint[t], abs=1e-8)


@pytest.mark.parametrize("n", [3, 6, 8])
def test_count_weighted_trellis_matches_enumeration(n):
    rng = np.random.default_rng(10 + n)
    table = 2.0 * rng.standard_normal(1 << n)
    table[0] = 0.0
    log_count = 3.0 * rng.standard_normal(n + 1)
    log_count[n // 2] = -np.inf   # forbid one number of clusters
    parts = set_partitions(n)
    log_phi = np.array([log_count[row.max() + 1] + sum(
        table[mask_of(np.flatnonzero(row == c))] for c in np.unique(row)) for row in parts])
    ref = flat_summaries(parts, log_phi)
    trellis = CountWeightedFlatTrellis(table, log_count).fit()
    assert trellis.log_partition_function == pytest.approx(ref["log_z"], abs=1e-9)
    assert trellis.map_log_potential == pytest.approx(ref["map_log_phi"], abs=1e-9)
    assert tuple(trellis.map_labels) == tuple(parts[ref["map_index"]])
    np.testing.assert_allclose(trellis.pairwise_marginals(), ref["pairwise"], atol=1e-9)
    np.testing.assert_allclose(trellis.n_clusters_distribution(), ref["k_dist"], atol=1e-9)
    # exact samples: frequencies of the partitions within 5 standard errors
    draws = trellis.sample(20000, np.random.RandomState(0))
    index = {tuple(row): t for t, row in enumerate(parts)}
    freq = np.bincount([index[tuple(row)] for row in draws], minlength=len(parts)) / 20000
    se = np.sqrt(ref["probs"] * (1 - ref["probs"]) / 20000) + 1e-4
    assert np.all(np.abs(freq - ref["probs"]) < 5 * se)


def test_count_weighted_trellis_serial_and_parallel_twins_agree(monkeypatch):
    """Small layers run the kernels' serial twins, large ones the parallel: same bits."""
    from sklearn_trellis._core import parallel
    rng = np.random.default_rng(3)
    n = 7
    table = rng.standard_normal(1 << n)
    table[0] = 0.0
    log_count = rng.standard_normal(n + 1)

    def run():
        trellis = CountWeightedFlatTrellis(table, log_count).fit()
        return (trellis.log_partition_function, trellis.pairwise_marginals(),
                trellis.n_clusters_distribution(), trellis._cluster,
                trellis.sample(50, np.random.RandomState(0)))

    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 1 << 62)
    serial = run()
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    with numba_threads(2):
        threaded = run()
    for a, b in zip(serial, threaded):
        np.testing.assert_array_equal(a, b)


def test_count_weighted_trellis_validation():
    with pytest.raises(ValueError, match="log_count"):
        CountWeightedFlatTrellis(np.zeros(8), np.zeros(3))
    with pytest.raises(ValueError, match="2\\*\\*N"):
        CountWeightedFlatTrellis(np.zeros(6), np.zeros(3))


def test_dp_mixture_exact_mode_reports_exact_quantities():
    """Fixed hyperparameters (the grid hyperprior is tested in test_dp_hyperprior.py)."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(0, 0.3, (3, 2)), rng.normal(4, 0.3, (4, 2))])
    for discount in (0.0, 0.3):
        model = DPMixture(alpha=1.3, discount=discount, method="exact", n_sweeps=500,
                          point_estimate="map",
                          likelihood=NormalInverseWishart(hyperprior="fixed"),
                          random_state=0).fit(X)
        prior = model.prior_
        parts, log_joint = enumerate_posterior(prior, model.model_, X)
        ref = flat_summaries(parts, log_joint)
        assert model.log_marginal_likelihood_ == pytest.approx(ref["log_z"], abs=1e-8)
        np.testing.assert_allclose(model.pairwise_marginals_, ref["pairwise"], atol=1e-9)
        np.testing.assert_allclose(model.n_clusters_distribution_, ref["k_dist"], atol=1e-9)
        assert tuple(model.labels_) == tuple(parts[ref["map_index"]])
        assert model.samples_.shape == (500, 7)
        assert model.method_ == "exact"


def test_log_joints_from_table_match_log_potential():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(6, 2))
    for prior in (CRP(0.9), PitmanYor(0.9, 0.5)):
        model = MixturePartitionModel(prior, NormalInverseWishart().fit(X)).fit(X)
        parts = set_partitions(6)[::17]
        fast = model.log_joints(parts, model.log_potential_table())
        slow = [model.log_potential(row) for row in parts]
        np.testing.assert_allclose(fast, slow, atol=1e-9)


def test_trellis_for_model_picks_the_count_weighted_trellis_when_counts_do_not_fold():
    from sklearn_trellis.engines.exact.flat import ExactFlatTrellis
    X = np.random.default_rng(1).normal(size=(6, 2))
    lik = NormalGamma(hyperprior="fixed").fit(X)
    crp = MixturePartitionModel(CRP(1.5), lik).fit(X)
    py = MixturePartitionModel(PitmanYor(1.5, 0.3), lik).fit(X)
    assert type(trellis_for_model(crp)) is ExactFlatTrellis
    assert type(trellis_for_model(py)) is CountWeightedFlatTrellis
    # a given table is used as is
    table = crp.log_potential_table()
    table[3] = -np.inf  # forbid the cluster {0, 1}
    constrained = trellis_for_model(crp, table).log_partition_function
    assert constrained < trellis_for_model(crp).log_partition_function
    assert constrained == ExactFlatTrellis(table, max_items=12).fit().log_partition_function
