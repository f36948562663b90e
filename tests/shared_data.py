"""Paths of the reference data: ``tests/data`` (a copy of the small files), else
``shared/data`` of the project workspace."""

import json
import os

import pytest


def shared_data(name):
    """Path of ``shared/data/<name>``, searched upwards from the tests; skip if absent."""
    here = os.path.dirname(os.path.abspath(__file__))
    local = os.path.join(here, "data", name)
    if os.path.exists(local):
        return local
    folder = here
    while os.path.dirname(folder) != folder:
        candidate = os.path.join(folder, "shared", "data", name)
        if os.path.exists(candidate):
            return candidate
        folder = os.path.dirname(folder)
    candidate = os.path.join("/work/shared/data", name)
    if os.path.exists(candidate):
        return candidate
    pytest.skip(f"reference data {name} not found")


def small_ginkgo_jets():
    """The jets of ``ginkgo_jets_small.json``, with their reference values (list of dicts)."""
    with open(shared_data("ginkgo_jets_small.json")) as handle:
        return json.load(handle)


def ginkgo_energy(jet):
    """The (unfitted) Ginkgo energy with a jet's parameters."""
    from sklearn_trellis.models import GinkgoEnergy
    return GinkgoEnergy(lam=jet["lam"], lam_root=jet["lam_root"], t_cut=jet["t_cut"])
