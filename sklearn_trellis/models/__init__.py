"""Models: cluster log-potentials (flat), split energies (hierarchical), conjugate
likelihoods, cell models and partition priors.

The registries of the models selectable by name, all here:

- ``ENERGIES``: split energies (``TrellisHierarchical(energy=...)``);
- ``LIKELIHOODS``: cluster likelihoods (``DPMixture(likelihood=...)``,
  ``BayesianHierarchicalClustering(likelihood=...)``);
- ``CELL_MODELS``: cell models of matrix entries (``InfiniteBiclustering``, and
  CrossCat's column types); a model's position here is its type code in the
  generated dispatch :mod:`.cell_kernels`.

A new model is one module here plus one line in its registry (a new cell type
also regenerates :mod:`.cell_kernels`: ``python -m sklearn_trellis.models._cell_codegen``).
"""

from sklearn.base import clone

from .._core.units import feature_offset, shift_rows

from ._flat import FlatModel
from ._split import SplitKernelInputs, SplitModel
from .callable_energy import CallableEnergy
from .cells import BernoulliCells, CategoricalCells, CellModel, NormalCells, PoissonCells
from .conjugate import BetaBernoulli, DirichletMultinomial, NormalGamma, NormalInverseWishart
from .correlation import CorrelationClusteringModel
from .dasgupta import DasguptaEnergy, ExponentialTreeEnergy, sample_exponential_tree
from .ginkgo import GinkgoEnergy
from .hcc import HCCEnergy
from .likelihood import ClusterLikelihood
from .wishart import WishartBlockModel
from .wishart_likelihood import WishartBlockLikelihood

#: Split energies selectable by name (``TrellisHierarchical(energy=...)``).
ENERGIES = {
    "dasgupta": DasguptaEnergy,
    "exponential_tree": ExponentialTreeEnergy,
    "hcc": HCCEnergy,
    "ginkgo": GinkgoEnergy,
}

#: Cluster likelihoods selectable by name (``DPMixture(likelihood=...)``).
LIKELIHOODS = {
    "gaussian": NormalInverseWishart,
    "diagonal": NormalGamma,
    "bernoulli": BetaBernoulli,
    "multinomial": DirichletMultinomial,
}

#: Cell models selectable by name; the order gives the type codes of :mod:`.cell_kernels`.
CELL_MODELS = {
    "normal": NormalCells,
    "bernoulli": BernoulliCells,
    "poisson": PoissonCells,
    "categorical": CategoricalCells,
}


def _make(value, registry, base, what, noun):
    """A fresh model from a name of ``registry`` or a clone of a ``base`` instance."""
    if isinstance(value, str):
        if value not in registry:
            raise ValueError(f"{what} must be one of {sorted(registry)} or a {noun} "
                             f"instance, got {value!r}.")
        return registry[value]()
    if isinstance(value, base):
        return clone(value)
    raise TypeError(f"{what} must be a string or a {noun} instance, got "
                    f"{type(value).__name__}.")


def make_likelihood(likelihood):
    """A fresh likelihood from a name of :data:`LIKELIHOODS` or a clone of a
    :class:`ClusterLikelihood` instance."""
    return _make(likelihood, LIKELIHOODS, ClusterLikelihood, "likelihood", "ClusterLikelihood")


def fit_likelihood(likelihood, X):
    """A fresh likelihood fitted to the rows ``X``, centred first where float64 needs it.

    Returns ``(model, offset, rows)``: features of a translation-equivariant
    likelihood lying far from 0 relative to their spread are centred
    (:func:`~sklearn_trellis._core.units.feature_offset`; ``offset`` None when none
    is), ``model`` is fitted to ``rows = X - offset`` and new rows must be shifted
    alike (:func:`~sklearn_trellis._core.units.shift_rows`). Ordinary data are
    used as they are.
    """
    model = make_likelihood(likelihood)
    offset = feature_offset(X) if model.translation_equivariant else None
    if offset is not None:
        # in the rows' dtype: float64 new rows subtract exactly what float32 rows did
        offset = offset.astype(X.dtype)
        model = model.shifted(offset)
        X = shift_rows(X, offset)
    return model.fit(X), offset, X


def make_cell_model(likelihood):
    """A fresh cell model from a name of :data:`CELL_MODELS` or a clone of an instance
    (the ``likelihood`` of ``InfiniteBiclustering``)."""
    return _make(likelihood, CELL_MODELS, CellModel, "likelihood", "cell model")


__all__ = ["FlatModel", "CorrelationClusteringModel", "SplitModel", "SplitKernelInputs",
           "DasguptaEnergy", "ExponentialTreeEnergy", "sample_exponential_tree", "HCCEnergy",
           "GinkgoEnergy", "CallableEnergy",
           "NormalInverseWishart", "NormalGamma", "BetaBernoulli", "DirichletMultinomial",
           "CellModel", "NormalCells", "BernoulliCells", "PoissonCells", "CategoricalCells",
           "WishartBlockModel", "WishartBlockLikelihood", "ENERGIES", "LIKELIHOODS",
           "CELL_MODELS", "make_likelihood", "fit_likelihood", "make_cell_model"]
