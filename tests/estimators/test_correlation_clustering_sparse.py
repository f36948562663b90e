"""ExactCorrelationClustering beyond the exact trellis: sparse, MILP, perturb-and-MAP."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from sklearn_trellis import ExactCorrelationClustering
from sklearn_trellis._core.family import ClusterFamily
from sklearn_trellis.engines.sparse.sparse_flat import SparseFlatTrellis


def blobs(n, seed=0, centers=3):
    X, _ = make_blobs(n_samples=n, centers=centers, n_features=4, random_state=seed,
                      cluster_std=1.5)
    return X


def test_auto_goes_sparse_and_says_so():
    X = blobs(45)
    est = ExactCorrelationClustering(beta=1.0).fit(X)
    assert est.map_is_exact_ is False and est.map_gap_ is None
    assert "sparse trellis" in est.approximation_ and "lower bound" in est.approximation_
    assert est.n_trellis_vertices_ == est._trellis.family.n_vertices
    # fitted quantities are consistent with the model
    assert est.log_potential(est.labels_) == pytest.approx(est.map_log_potential_, rel=1e-10)
    assert est.log_partition_function_ >= est.map_log_potential_
    P = est.pairwise_marginals_
    assert P.shape == (45, 45) and np.allclose(P, P.T) and np.allclose(np.diag(P), 1.0)
    samples = est.sample(4, random_state=0)
    assert samples.shape == (4, 45)
    assert all(est.log_potential(s) > -np.inf for s in samples)
    assert 0.0 <= est.together_marginal([0, 1, 2]) <= 1.0
    assert est.n_clusters_distribution_.sum() == pytest.approx(1.0)
    # every seed tree's best cut is no better than the MAP
    for tree in est._trellis.family.seed_trees:
        single = SparseFlatTrellis.from_model(est.model_, ClusterFamily.from_trees([tree], 45))
        constant = est.model_.log_potential_constant()
        assert single.fit().map_log_potential + constant <= est.map_log_potential_ + 1e-9


def test_sparse_is_bounded_by_exact_on_small_data():
    X = blobs(11, seed=4)
    exact = ExactCorrelationClustering(beta=1.0).fit(X)
    sparse = ExactCorrelationClustering(beta=1.0, method="sparse").fit(X)
    assert exact.approximation_ is None and exact.map_is_exact_ and exact.map_gap_ == 0.0
    assert sparse.log_partition_function_ <= exact.log_partition_function_ + 1e-9
    assert sparse.map_log_potential_ <= exact.map_log_potential_ + 1e-9
    assert exact.n_trellis_vertices_ == 2 ** 11 - 1


def test_milp_certifies_the_map_beyond_the_trellis():
    X = blobs(40, seed=2)
    sparse = ExactCorrelationClustering(beta=1.0).fit(X)
    milp = ExactCorrelationClustering(beta=1.0, method="milp").fit(X)
    assert milp.map_is_exact_ is True and milp.map_gap_ == 0.0
    assert "certified" in milp.approximation_
    assert milp.map_log_potential_ >= sparse.map_log_potential_ - 1e-9
    assert milp.log_potential(milp.labels_) == pytest.approx(milp.map_log_potential_)
    # same distribution quantities as the sparse fit
    assert milp.log_partition_function_ == pytest.approx(sparse.log_partition_function_)


def test_milp_on_small_data_agrees_with_the_exact_trellis():
    X = blobs(10, seed=7)
    exact = ExactCorrelationClustering(beta=1.0).fit(X)
    milp = ExactCorrelationClustering(beta=1.0, method="milp").fit(X)
    assert milp.map_log_potential_ == pytest.approx(exact.map_log_potential_)
    assert milp.approximation_ is None and milp.map_is_exact_


def test_perturb_and_map_estimates_pairwise_marginals():
    X = blobs(9, seed=1)
    # beta = 5: affinities dominate the unit Gumbel noise (at beta = 1 the noise
    # swamps them and P&M is a poor baseline: correlation 0.19 here)
    exact = ExactCorrelationClustering(beta=5.0).fit(X)
    pam = ExactCorrelationClustering(beta=5.0, method="perturb_and_map", n_perturbations=60,
                                     random_state=0).fit(X)
    assert "perturb-and-MAP" in pam.approximation_
    assert pam.perturbed_maps_.shape == (60, 9)
    assert pam.log_partition_function_ == pytest.approx(exact.log_partition_function_)
    P = pam.pairwise_marginals_
    assert np.allclose(np.diag(P), 1.0) and np.allclose(P, P.T)
    iu = np.triu_indices(9, 1)
    assert np.corrcoef(P[iu], exact.pairwise_marginals_[iu])[0, 1] > 0.5
    again = ExactCorrelationClustering(beta=5.0, method="perturb_and_map",
                                       n_perturbations=60, random_state=0).fit(X)
    assert np.array_equal(again.pairwise_marginals_, P)


def test_union_too_large_falls_back_to_the_best_single_tree(monkeypatch):
    import sklearn_trellis.engines.sparse.family_search as module
    monkeypatch.setattr(module, "MAX_SPARSE_STATES", 5)
    X = blobs(40, seed=3)
    est = ExactCorrelationClustering(beta=1.0).fit(X)
    assert "needed more than 5 states" in est.approximation_
    assert est.n_trellis_vertices_ == 2 * 40 - 1
    monkeypatch.setattr(module, "MAX_UNION_ITEMS", 10)
    assert "not combined above 10 items" in ExactCorrelationClustering(beta=1.0).fit(X).approximation_


def test_precomputed_affinity_beyond_the_limit():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(30, 30))
    w = (w + w.T) / 2
    est = ExactCorrelationClustering(beta=1.0, affinity="precomputed").fit(w)
    assert "ward" not in est.approximation_
    assert est.labels_.shape == (30,)


def test_a_complete_sparse_family_is_reported_exact():
    """The sparse trellis's family can hold every subset, hence every partition (two
    items; the seed trees' clusters and windows miss some from three on): its answer is
    then the exact one and says so (it reported 'not exact', with no MAP gap), to 1e-12
    of method='exact'. An incomplete family still says it is not exact."""
    rng = np.random.RandomState(3)
    for n in (2, 2, 2, 2, 3, 4, 5):
        A = rng.normal(size=(n, n))
        A = A + A.T
        fits = [ExactCorrelationClustering(beta=1.0, method=method,
                                           affinity="precomputed").fit(A)
                for method in ("sparse", "exact")]
        sparse, exact = fits
        complete = sparse.n_trellis_vertices_ == 2 ** n - 1
        assert complete == (n == 2)
        if not complete:
            assert not sparse.map_is_exact_ and sparse.map_gap_ is None
            assert "sparse trellis" in sparse.approximation_
            continue
        assert sparse.map_is_exact_ and sparse.map_gap_ == 0.0
        assert sparse.approximation_ is None
        for name in ("log_partition_function_", "map_log_potential_", "pairwise_marginals_"):
            np.testing.assert_allclose(getattr(sparse, name), getattr(exact, name),
                                       rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_array_equal(sparse.labels_, exact.labels_)
