"""Ginkgo toy parton-shower jets shipped with the package (no download)."""

import gzip
import json
import numbers
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

from .._core.validation import check_random_state, check_scalar_param

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
    ...                       t_cut=jets[0]["t_cut"], likelihood="ginkgo").fit(jets[0]["leaves"])

    Notes
    -----
    ``truth_logLH`` and the reference values are those of the public Ginkgo
    likelihood (``GinkgoEnergy(likelihood='ginkgo')``). The jets were kept
    for their number of leaves (5 to 10 of a shower that usually makes
    more), so they are not draws of the model at ``lam``: the maximum
    likelihood ``lam`` of these jets, even on their generating trees, is
    well above 1.5. To study the choice of ``lam`` use
    :func:`make_ginkgo_jets`, whose jets are unselected draws.
    """
    if name not in _FILES:
        raise ValueError(f"name must be one of {sorted(_FILES)}, got {name!r}.")
    if n_leaves is not None and (isinstance(n_leaves, bool)
                                 or not isinstance(n_leaves, numbers.Integral)):
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


_ONE_MINUS = 1.0 - 1e-3   # Ginkgo's bound t_child < (1 - 1e-3) t_max


def _truncated_exponential(rng, lam):
    """``u`` of density ``lam exp(-lam u) / (1 - exp(-lam (1 - 1e-3)))`` on ``[0, 1 - 1e-3)``."""
    return -np.log1p(-rng.random() * -np.expm1(-lam * _ONE_MINUS)) / lam


def _two_body_decay(rng, parent, t_left, t_right):
    """Children 4-momenta of ``parent`` decaying isotropically in its rest frame."""
    t_parent = parent[0] ** 2 - parent[1:] @ parent[1:]
    mass = np.sqrt(t_parent)
    kallen = (t_parent - t_left - t_right) ** 2 - 4.0 * t_left * t_right
    p_star = np.sqrt(max(kallen, 0.0)) / (2.0 * mass)
    cos_theta = rng.uniform(-1.0, 1.0)
    phi = rng.uniform(0.0, 2.0 * np.pi)
    sin_theta = np.sqrt(1.0 - cos_theta ** 2)
    direction = np.array([sin_theta * np.cos(phi), sin_theta * np.sin(phi), cos_theta])
    e_left = (t_parent + t_left - t_right) / (2.0 * mass)
    rest = np.concatenate([[e_left], p_star * direction])
    # boost the rest-frame left child to the lab frame of the parent
    gamma = parent[0] / mass
    velocity = parent[1:] / parent[0]
    speed2 = velocity @ velocity
    along = velocity @ rest[1:]
    energy = gamma * (rest[0] + along)
    factor = (gamma - 1.0) * along / speed2 if speed2 > 0 else 0.0
    momentum = rest[1:] + (factor + gamma * rest[0]) * velocity
    left = np.concatenate([[energy], momentum])
    return left, parent - left


def _shower(rng, momentum, t, lam, lam_root, t_cut, is_root, leaves):
    if t <= t_cut:
        leaves.append(momentum)
        return
    rate = lam_root if is_root else lam
    t_first = t * _truncated_exponential(rng, rate)
    t_second = (np.sqrt(t) - np.sqrt(t_first)) ** 2 * _truncated_exponential(rng, rate)
    # which child's mass is drawn first is a fair coin
    t_left, t_right = (t_first, t_second) if rng.random() < 0.5 else (t_second, t_first)
    left, right = _two_body_decay(rng, momentum, t_left, t_right)
    _shower(rng, left, t_left, lam, lam_root, t_cut, False, leaves)
    _shower(rng, right, t_right, lam, lam_root, t_cut, False, leaves)


def make_ginkgo_jets(n_jets=20, *, lam=1.5, lam_root=3.0, t_cut=6.25, jet_mass=8.0,
                     jet_momentum=40.0, random_state=None):
    """Jets drawn from the Ginkgo toy parton shower, exactly the model of ``GinkgoEnergy``.

    A particle of invariant mass squared ``t > t_cut`` decays isotropically in
    its rest frame into two children whose masses squared are drawn one after
    the other (which child first is a fair coin) as ``t_max u`` with ``u``
    truncated-exponential of rate ``lam`` on ``[0, 1 - 1e-3)``: ``t_max = t``
    for the first child, ``(sqrt t - sqrt t_first)^2`` for the second. The
    jet's own split uses ``lam_root``. A particle with ``t <= t_cut`` is a
    leaf and keeps its mass. Every jet is kept, whatever its number of leaves,
    so the jets are draws of the model (no selection on ``N``): choose
    ``jet_mass`` small against ``sqrt(t_cut)`` to keep ``N`` small.

    Parameters
    ----------
    n_jets : int, default=20
    lam, lam_root, t_cut : float, default=1.5, 3.0, 6.25
        As in :class:`~sklearn_trellis.models.GinkgoEnergy`.
    jet_mass : float, default=8.0
        Mass of the jet (``t = jet_mass ** 2`` at the root).
    jet_momentum : float, default=40.0
        Magnitude of the jet's 3-momentum, along ``(1, 1, 1) / sqrt 3``.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    data : Bunch
        ``jets``: list of ``(N, 4)`` arrays of leaf 4-momenta ``(E, px, py, pz)``
        (``N`` varies from jet to jet; ``N = 1`` when the jet does not split);
        ``lam``, ``lam_root``, ``t_cut``.

    Examples
    --------
    >>> from sklearn_trellis.datasets import make_ginkgo_jets
    >>> jets = make_ginkgo_jets(3, random_state=0).jets
    >>> [jet.shape[1] for jet in jets]
    [4, 4, 4]
    """
    for name, value in (("lam", lam), ("lam_root", lam_root), ("t_cut", t_cut),
                        ("jet_mass", jet_mass)):
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    if jet_momentum < 0:
        raise ValueError(f"jet_momentum must be >= 0, got {jet_momentum!r}.")
    check_scalar_param(n_jets, "n_jets", kind=numbers.Integral, low=0)
    rng = check_random_state(random_state)
    p = jet_momentum * np.ones(3) / np.sqrt(3.0)
    root = np.concatenate([[np.sqrt(jet_mass ** 2 + p @ p)], p])
    jets = []
    for _ in range(int(n_jets)):
        leaves = []
        _shower(rng, root.copy(), jet_mass ** 2, lam, lam_root, t_cut, True, leaves)
        jets.append(np.array(leaves))
    return Bunch(jets=jets, lam=lam, lam_root=lam_root, t_cut=t_cut)
