"""Ginkgo toy parton-shower jets shipped with the package (no download)."""

import gzip
import json
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

_FILES = {"ginkgo510": "ginkgo510_jets.json.gz", "reference": "ginkgo_reference_jets.json"}

_DESCRIPTIONS = {
    "reference": (
        "9 W jets (N = 4, 5, 6 leaves; 3 each) from the public Ginkgo toy parton-shower "
        "generator, with the exact values that the public ClusterTrellis implementation "
        "computes for the Ginkgo split likelihood: ref_logZ (log partition function over "
        "all binary trees), ref_map_loglik (log-likelihood of the MAP tree) and "
        "ref_n_trees_allowed (trees with finite likelihood)."),
}


def _read(name):
    with resources.files(__package__).joinpath("data", _FILES[name]).open("rb") as handle:
        raw = handle.read()
    if _FILES[name].endswith(".gz"):
        raw = gzip.decompress(raw)
    return json.loads(raw)


def load_ginkgo_jets(name="ginkgo510", *, n_leaves=None):
    """W jets of the Ginkgo toy parton-shower generator, with their generating trees.

    Each jet is a dict with ``leaves`` (an ``(N, 4)`` float array of
    4-momenta ``(E, px, py, pz)``), ``N``, the :class:`~sklearn_trellis.models.GinkgoEnergy`
    parameters ``t_cut``, ``lam`` and ``lam_root``, and the generating tree
    (``truth_tree``: children index pairs per node, -1 for leaves;
    ``truth_content``: the 4-momentum of every node; ``truth_logLH``: its
    log-likelihood).

    Parameters
    ----------
    name : {'ginkgo510', 'reference'}, default='ginkgo510'
        ``'ginkgo510'``: 1,000 jets with 5 to 10 leaves (like the Ginkgo510 set
        of Greenberg et al. 2021, Table 1 and Figure 7). ``'reference'``: 9 jets
        of 4 to 6 leaves with reference values computed by the public
        ClusterTrellis code (``ref_logZ``, ``ref_map_loglik``,
        ``ref_n_trees_allowed``), against which the exact engines are tested.
    n_leaves : int or None, default=None
        Keep only the jets with this many leaves.

    Returns
    -------
    data : Bunch
        ``jets`` (list of dicts, in file order) and ``DESCR``.

    Examples
    --------
    >>> from sklearn_trellis.datasets import load_ginkgo_jets
    >>> jets = load_ginkgo_jets(n_leaves=9).jets
    >>> len(jets), jets[0]["leaves"].shape
    (256, (9, 4))
    >>> from sklearn_trellis.models import GinkgoEnergy
    >>> energy = GinkgoEnergy(lam=jets[0]["lam"], lam_root=jets[0]["lam_root"],
    ...                       t_cut=jets[0]["t_cut"]).fit(jets[0]["leaves"])
    """
    if name not in _FILES:
        raise ValueError(f"name must be one of {sorted(_FILES)}, got {name!r}.")
    if n_leaves is not None and (isinstance(n_leaves, bool) or not isinstance(n_leaves, int)):
        raise TypeError(f"n_leaves must be an int or None, got {n_leaves!r}.")
    content = _read(name)
    if isinstance(content, dict):
        description, jets = content["description"], content["jets"]
    else:
        description, jets = _DESCRIPTIONS[name], content
    for jet in jets:
        jet["leaves"] = np.asarray(jet["leaves"], dtype=np.float64)
    if n_leaves is not None:
        jets = [jet for jet in jets if jet["N"] == n_leaves]
    return Bunch(jets=jets, DESCR=description)
