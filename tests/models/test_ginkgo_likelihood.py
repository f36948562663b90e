"""Ginkgo: the public likelihood term by term, the density of the leaf momenta
(``likelihood='momenta'``), its evidence against enumeration, and the recovery of
the generating ``lam`` on jets drawn from the model (issue 28)."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from oracles import binary_trees, ginkgo_split_by_definition, tree_log_potential
from sklearn_trellis import TrellisHierarchical
from sklearn_trellis.datasets import load_ginkgo_jets, make_ginkgo_jets
from sklearn_trellis.engines import ExactHierarchicalTrellis
from sklearn_trellis.models import GinkgoEnergy


def _leaf_indices(jet):
    """Item indices (rows of ``leaves``) under every node of the generating tree."""
    children = np.asarray(jet["truth_tree"])
    content = np.asarray(jet["truth_content"])
    leaves = jet["leaves"]

    def under(node):
        a, b = children[node]
        if a < 0:
            return [int(np.argmin(np.abs(leaves - content[node]).sum(axis=1)))]
        return under(a) + under(b)
    return under


@pytest.mark.parametrize("likelihood", ["ginkgo", "momenta"])
def test_every_split_term_matches_the_definition_and_ginkgo_sums_to_truth(likelihood):
    for jet in load_ginkgo_jets(n_leaves=6).jets[:5]:
        energy = GinkgoEnergy(lam=jet["lam"], lam_root=jet["lam_root"], t_cut=jet["t_cut"],
                              likelihood=likelihood).fit(jet["leaves"])
        under = _leaf_indices(jet)
        children = np.asarray(jet["truth_tree"])
        total = 0.0
        for node, (a, b) in enumerate(children):
            if a < 0:
                continue
            ours = energy.split_log_potential(under(a), under(b))
            rate = jet["lam_root"] if node == 0 else jet["lam"]
            leaves = jet["leaves"]
            expected = ginkgo_split_by_definition(leaves[under(a)].sum(0), leaves[under(b)].sum(0),
                                                  rate, jet["t_cut"], likelihood)
            assert ours == pytest.approx(expected, rel=1e-9, abs=1e-9)
            total += ours
        if likelihood == "ginkgo":   # the generator's own value, shipped with the jet
            # (light masses E^2 - p^2 of the generator's node momenta and of the leaf sums
            # differ by rounding)
            assert total == pytest.approx(jet["truth_logLH"], rel=1e-6)


def _decay(parent, t_left, t_right, cos_theta, phi):
    """Left child's 4-momentum: rest-frame decay then a boost (written independently)."""
    t_parent = parent[0] ** 2 - parent[1:] @ parent[1:]
    m = math.sqrt(t_parent)
    p_star = math.sqrt((t_parent - t_left - t_right) ** 2 - 4 * t_left * t_right) / (2 * m)
    sin_theta = math.sqrt(1 - cos_theta ** 2)
    rest = np.array([(t_parent + t_left - t_right) / (2 * m),
                     p_star * sin_theta * math.cos(phi), p_star * sin_theta * math.sin(phi),
                     p_star * cos_theta])
    beta = parent[1:] / parent[0]
    gamma = 1 / math.sqrt(1 - beta @ beta)
    boost = np.eye(4)
    boost[0, 0] = gamma
    boost[0, 1:] = boost[1:, 0] = gamma * beta
    boost[1:, 1:] += (gamma - 1) * np.outer(beta, beta) / (beta @ beta)
    return boost @ rest


def test_two_body_jacobian_against_finite_differences():
    rng = np.random.default_rng(0)
    for _ in range(5):
        parent = np.array([60.0, *rng.normal(scale=15, size=3)])
        t_p = parent[0] ** 2 - parent[1:] @ parent[1:]
        t_l, t_r = t_p * 0.2 * rng.random(2)
        point = np.array([t_l, t_r, rng.uniform(-0.9, 0.9), rng.uniform(0, 6)])
        jac = np.empty((4, 4))
        for k in range(4):
            step = np.zeros(4)
            step[k] = 1e-6 * max(1.0, abs(point[k]))
            jac[:, k] = (_decay(parent, *(point + step)) - _decay(parent, *(point - step))) \
                / (2 * step[k])
        # d^4 p_L = p* / (4 sqrt t_P) dt_L dt_R dcos(theta) dphi: the oracle's Jacobian
        kallen = (t_p - t_l - t_r) ** 2 - 4 * t_l * t_r
        p_star = math.sqrt(kallen) / (2 * math.sqrt(t_p))
        assert abs(np.linalg.det(jac)) == pytest.approx(p_star / (4 * math.sqrt(t_p)), rel=1e-5)


def test_momenta_evidence_matches_enumeration():
    jets = [j for j in make_ginkgo_jets(30, lam=2.0, random_state=3).jets if len(j) == 5]
    assert jets
    for jet in jets[:2]:
        for lam in (1.0, 2.5):
            energy = GinkgoEnergy(lam=lam, likelihood="momenta")
            est = TrellisHierarchical(energy=energy).fit(jet)

            def split(left, right):
                is_root = len(left) + len(right) == len(jet)
                return ginkgo_split_by_definition(jet[list(left)].sum(0), jet[list(right)].sum(0),
                                                  3.0 if is_root else lam, 6.25, "momenta")

            trees = binary_trees(tuple(range(len(jet))))
            values = [tree_log_potential(t, split) for t in trees]
            assert np.isfinite(values).any()
            assert est.log_partition_function_ == pytest.approx(logsumexp(values), rel=1e-10)
            assert est.score(jet) == pytest.approx(logsumexp(values), rel=1e-10)


def test_sampler_conserves_momentum_and_stops_below_the_cut():
    data = make_ginkgo_jets(30, lam=2.0, jet_mass=9.0, jet_momentum=30.0, random_state=0)
    root = np.array([math.sqrt(81 + 900), *(30 / math.sqrt(3) * np.ones(3))])
    for jet in data.jets:
        assert np.allclose(jet.sum(axis=0), root)
        t = jet[:, 0] ** 2 - (jet[:, 1:] ** 2).sum(axis=1)
        assert np.all(t <= 6.25 + 1e-9) and np.all(t > -1e-9)
    assert make_ginkgo_jets(3, random_state=1).jets[0].tolist() == \
        make_ginkgo_jets(3, random_state=1).jets[0].tolist()
    with pytest.raises(ValueError, match="lam"):
        make_ginkgo_jets(3, lam=0.0)


def _selected_lam(jets, grid):
    """The grid value of largest summed evidence ``sum_jets log p(jet | lam)``."""
    def log_z(jet, lam):
        split, params, stats = GinkgoEnergy(lam=lam).fit(jet).kernel_inputs()
        return ExactHierarchicalTrellis(split, params, stats).fit().log_partition_function
    evidence = [sum(log_z(jet, lam) for jet in jets) for lam in grid]
    return grid[int(np.argmax(evidence))]


def test_maximum_evidence_lam_separates_two_generating_values():
    grid = [0.75, 1.5, 3.0, 6.0, 12.0]
    for true in (1.5, 6.0):
        assert _selected_lam(make_ginkgo_jets(60, lam=true, random_state=0).jets, grid) == true


@pytest.mark.slow
@pytest.mark.parametrize("true", [1.5, 4.0])
def test_maximum_evidence_lam_within_15_percent(true):
    jets = make_ginkgo_jets(600, lam=true, random_state=1).jets
    grid = list(np.round(true * np.arange(0.6, 1.45, 0.05), 3))
    assert abs(_selected_lam(jets, grid) - true) <= 0.15 * true


def test_score_only_for_the_density_of_the_momenta():
    assert hasattr(TrellisHierarchical(energy="ginkgo"), "score")
    assert hasattr(TrellisHierarchical(energy=GinkgoEnergy()), "score")
    assert not hasattr(TrellisHierarchical(energy=GinkgoEnergy(likelihood="ginkgo")), "score")
    with pytest.raises(ValueError, match="likelihood"):
        GinkgoEnergy(likelihood="full").fit(np.ones((3, 4)))
