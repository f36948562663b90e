"""Conjugate models of i.i.d. scalar cells (matrix entries), for block models of matrices.

A *cell model* describes the entries of one block of a matrix (biclustering) or
of one column within a row cluster (CrossCat) as i.i.d. draws from ``p(x | theta)``
with a conjugate prior on ``theta``, integrated out. NaN cells are missing: they
contribute nothing (marginalised, not imputed).

Interface of every cell model (a small ``BaseEstimator``):

- ``fit(values)``: validate the values (any shape, flattened; NaN allowed) and
  fill the data-dependent defaults (units-free, documented per class); returns
  ``self``. ``check_values(values)`` validates new values the same way.
- ``cell_type``: the module of its numba kernels (:mod:`.cell_types`, the
  protocol in :mod:`.cell_kernels`); ``code``: its type code (its position in
  :data:`sklearn_trellis.models.CELL_MODELS`), the argument of the dispatchers of
  :mod:`.cell_kernels` and :mod:`.cell_loops` that engines mixing types call;
  ``n_stats``: length of its statistics vector (``stats[0]`` = number of observed
  cells; statistics are additive over disjoint cell sets, the empty set is the
  zero vector); ``kernel_params()``: its float64 parameter vector (the grid's
  starting point).
- ``kernels``: the named tuple :class:`~.cell_kernels.CellKernels` of its three
  ``numba.njit`` functions at offset 0, one signature for every cell type:
  ``add_cell(params, stats, x, weight)`` (``weight`` +1 / -1, NaN skipped),
  ``log_marginal(params, stats)``, ``log_predictive(params, stats, x)``.
- Grid hyperprior (the mechanism of :class:`~sklearn_trellis.models.conjugate.NormalGamma`,
  reused): ``hyperparameter_grid()`` -> ``(params (G, q), log_prior (G,))`` or
  ``None`` when the hyperparameters are fixed; ``resample_params(params, stats,
  shared, counts, active, random_state)`` draws a grid point from its exact
  conditional posterior given the statistics rows ``stats[active]`` (one row per
  block); ``describe_params(params)`` names the values.
- ``log_marginal(values)``: ``log m`` of the values as one block (Python
  convenience, computed by the kernels).

The registry :data:`sklearn_trellis.models.CELL_MODELS` maps the names
``'normal'``, ``'bernoulli'``, ``'poisson'`` and ``'categorical'`` to the classes.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator

from .._core.validation import check_option, check_scalar_param
from .cell_kernels import KERNELS, code_of
from .cell_loops import one_type
from .cell_types import bernoulli, categorical, normal, poisson
from .conjugate import (NormalInverseWishart, _GridHyperpriorMixin, _rate_factor,
                        check_count_total)

#: Strengths (prior pseudo-counts) of the Beta / Gamma / Dirichlet grids, 1 to 100. Not
#: lower: a Beta prior of strength 0.1 is so U-shaped that a block holding a single 0
#: among many 1s is split off (rows with one flipped cell became their own clusters).
STRENGTH_GRID = np.logspace(0.0, 2.0, 9)

#: Category codes are below this (each block keeps one count per category).
MAX_CATEGORIES = 2**16


def _as_values(values, name):
    try:
        values = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"{name} needs numeric values.") from None
    if np.any(np.isinf(values)):
        raise ValueError(f"{name}: values contain infinity (NaN marks a missing cell).")
    return values


def _location_unit_variance(observed):
    """Mean, ``unit`` (a power of two, :attr:`NormalCells.unit_`) and variance in ``unit**2``.

    Computed on ``observed / max |observed|`` and from binary exponents, so no
    intermediate over- or underflows at any finite scale.
    """
    magnitude = float(np.max(np.abs(observed))) if observed.size else 0.0
    if magnitude == 0.0:
        return 0.0, 1.0, 1.0
    relative = observed / magnitude
    location = float(relative.mean()) * magnitude
    spread = float(relative.std()) if observed.size > 1 else 0.0
    m_fraction, m_exponent = np.frexp(magnitude)
    s_fraction, s_exponent = np.frexp(spread) if spread > 0 else (1.0, 0)
    exponent = int(m_exponent) + int(s_exponent)
    # a normal power of two whose inverse is one too
    unit_exponent = min(max(exponent, -1021), 1021)
    if spread == 0:   # all values equal: the prior variance is their magnitude squared
        return location, float(np.ldexp(1.0, min(max(int(m_exponent), -1021), 1021))), 1.0
    ratio = float(np.ldexp(m_fraction * s_fraction, exponent - unit_exponent))
    return location, float(np.ldexp(1.0, unit_exponent)), ratio * ratio


class CellModel(_GridHyperpriorMixin, BaseEstimator):
    """Base class of the cell models (the grid hyperprior and the Python conveniences)."""

    cell_type = None

    @property
    def code(self):
        """Type code of :attr:`cell_type` in the dispatch of :mod:`.cell_kernels`."""
        return code_of(self.cell_type)

    @property
    def kernels(self):
        """The :class:`~.cell_kernels.CellKernels` of this cell type."""
        return KERNELS[self.code]

    def _check_fitted(self):
        if not hasattr(self, "grid_scale_"):
            raise ValueError(f"{type(self).__name__} is not fitted: call fit(values) first.")

    def check_values(self, values):
        """Validated float64 1-d copy of ``values`` (NaN = missing)."""
        values = _as_values(values, type(self).__name__)
        self._check_domain(values[~np.isnan(values)])
        return values

    def _check_domain(self, observed):
        """Raise ``ValueError`` when an observed value is outside the model's support."""

    def _grid_log_likelihoods(self, params, rows):
        grid = np.array([self._grid_params(g) for g in range(self.grid_scale_.size)])
        out = np.empty(grid.shape[0])
        return one_type(self.cell_type).typed_grid_sum_log_marginals(
            grid, np.ascontiguousarray(rows, np.float64), out)

    def log_marginal(self, values, params=None):
        """``log m`` of ``values`` (NaN skipped) as one block, by the kernels."""
        self._check_fitted()
        values = self.check_values(values)
        params = self.kernel_params() if params is None else np.asarray(params, np.float64)
        stats = one_type(self.cell_type).typed_values_stats(params, values, self.n_stats)
        return float(self.kernels.log_marginal(params, stats))

    def describe_params(self, params):
        params = np.atleast_2d(params)
        return {name: params[:, j] for name, j in self._param_names.items()}


class NormalCells(CellModel):
    """Real cells, ``x ~ N(mu, 1/tau)`` with a Normal-Gamma prior on ``(mu, tau)``.

    ``tau ~ Gamma(shape, rate=b0)``, ``mu | tau ~ N(m0, 1 / (kappa tau))`` (the
    one-dimensional case of :class:`~sklearn_trellis.models.NormalGamma`).

    Parameters
    ----------
    kappa : float, default=None
        Prior pseudo-count of a block mean. ``None``: learned on the grid
        ``{0.01, 0.1, 1}`` (``hyperprior='grid'``), or 0.1 (``'fixed'``).
    shape : float, default=2.0
        Gamma shape ``a0`` of the precision.
    mean_prior : float, default=None
        ``m0``; ``None`` means the mean of the observed values.
    variance_prior : float, default=None
        Prior expected block variance ``E[1/tau] = b0 / (a0 - 1)`` (``b0 =
        variance_prior`` when ``a0 <= 1``), in units of the data. ``None``: the
        rate is learned, ``b0 = t v`` with ``v`` the variance of the observed
        values and ``t`` on :attr:`NormalInverseWishart.SCALE_GRID`
        (``hyperprior='grid'``), or ``E[1/tau] = 0.1 v`` (``'fixed'``). So the
        defaults do not depend on the data's units.
    hyperprior : {'grid', 'fixed'}, default='grid'
        ``'grid'``: the hyperparameters left at ``None`` get a uniform prior on
        their grids (the product grid), drawn by the sampler and summed over by
        exact inference.

    Attributes
    ----------
    unit_ : float
        The power of two in ``(s, 4 s]`` for the spread ``s`` of the observed
        values (of their magnitude if they are all equal, 1 if all zero): the
        kernels compute with ``(x - m0) / unit_``, so no value is squared in
        its own units and any scale from ``1e-300`` to ``1e300`` works (scaling
        the data by a power of two changes the log densities by the Jacobian
        ``-n log 2**k`` only).
    mean_prior_ : float
        ``m0``.
    kappa_, rate_ : float
        The starting grid point; ``rate_`` (``b0``) in units of ``unit_**2``.

    Notes
    -----
    A continuous density on data with atoms (0/1 or small integer codes) rewards
    blocks whose values are all equal without bound as their variance goes to 0:
    only the prior's rate (down to ``10^-3`` of the data's variance on the grid)
    limits it, so Normal cells split binary blocks into pure sub-blocks. Model
    such data with :class:`BernoulliCells` or :class:`CategoricalCells`
    (``InfiniteBiclustering(likelihood='auto')`` chooses them).

    Examples
    --------
    >>> from sklearn_trellis.models.cells import NormalCells
    >>> model = NormalCells(hyperprior="fixed").fit([0.2, 1.1, -0.3, float("nan")])
    >>> model.kernel_params().round(3).tolist()   # m0, kappa0, a0, b0 / unit**2, 1/unit, log(1/unit)
    [0.333, 0.1, 2.0, 0.008, 0.5, -0.693]
    """

    cell_type = normal
    n_stats = 3
    _param_names = {"mean": 0, "kappa": 1, "shape": 2, "rate": 3}
    KAPPA_GRID = np.array([0.01, 0.1, 1.0])

    def __init__(self, kappa=None, shape=2.0, mean_prior=None, variance_prior=None,
                 hyperprior="grid"):
        self.kappa = kappa
        self.shape = shape
        self.mean_prior = mean_prior
        self.variance_prior = variance_prior
        self.hyperprior = hyperprior

    def fit(self, values, y=None):
        values = self.check_values(values)
        check_scalar_param(self.kappa, "kappa", low=0.0, include_low=False, allow_none=True)
        check_scalar_param(self.shape, "shape", low=0.0, include_low=False)
        check_scalar_param(self.mean_prior, "mean_prior", allow_none=True)
        check_scalar_param(self.variance_prior, "variance_prior", low=0.0, include_low=False,
                           allow_none=True)
        check_option(self.hyperprior, "hyperprior", {"grid", "fixed"})
        observed = values[~np.isnan(values)]
        location, self.unit_, variance = _location_unit_variance(observed)
        self.mean_prior_ = (float(self.mean_prior) if self.mean_prior is not None
                            else location)
        self.shape_ = float(self.shape)
        learn = self.hyperprior == "grid"
        kappas = (self.KAPPA_GRID if learn and self.kappa is None
                  else np.array([0.1 if self.kappa is None else float(self.kappa)]))
        if learn and self.variance_prior is None:
            scales = NormalInverseWishart.SCALE_GRID * variance
        else:
            expected = (0.1 * variance if self.variance_prior is None
                        else float(self.variance_prior) / self.unit_ / self.unit_)
            scales = np.array([expected * _rate_factor(self.shape_)])
        rate, kappa = np.meshgrid(scales, kappas, indexing="ij")
        self.grid_rate_ = rate.ravel()
        self.grid_kappa_ = kappa.ravel()
        self.grid_scale_ = self.grid_rate_ / variance
        start = int(np.argmin(np.abs(np.log(self.grid_scale_ / (0.1 * _rate_factor(self.shape_))))
                              + np.abs(np.log(self.grid_kappa_ / 0.1))))
        self.kappa_, self.rate_ = float(self.grid_kappa_[start]), float(self.grid_rate_[start])
        return self

    def _grid_params(self, g):
        return self._params(self.grid_kappa_[g], self.grid_rate_[g])

    def _params(self, kappa, rate):
        inverse_unit = 1.0 / self.unit_
        return np.array([self.mean_prior_, kappa, self.shape_, rate, inverse_unit,
                         np.log(inverse_unit)])

    def kernel_params(self):
        self._check_fitted()
        return self._params(self.kappa_, self.rate_)

    def describe_params(self, params):
        """The hyperparameters by name, ``rate`` (``b0``) in the data's units (squared)."""
        params = np.atleast_2d(params)
        with np.errstate(over="ignore"):
            rate = params[:, 3] / params[:, 4] / params[:, 4]
        return {"mean": params[:, 0], "kappa": params[:, 1], "shape": params[:, 2],
                "rate": rate}


class BernoulliCells(CellModel):
    """Binary cells (0/1), ``x ~ Bernoulli(p)`` with a Beta(a, b) prior on ``p``.

    The prior is ``a = s m``, ``b = s (1 - m)``: mean ``m``, strength ``s``.

    Parameters
    ----------
    strength : float, default=None
        ``s = a + b``. ``None``: learned on :data:`STRENGTH_GRID`
        (``1 .. 100``, ``hyperprior='grid'``), or 2 (``'fixed'``).
    mean : float, default=None
        ``m`` in (0, 1); ``None`` means the frequency of ones among the observed
        cells, clipped to ``[0.05, 0.95]``.
    hyperprior : {'grid', 'fixed'}, default='grid'

    Examples
    --------
    >>> import math
    >>> from sklearn_trellis.models.cells import BernoulliCells
    >>> model = BernoulliCells(strength=2.0, mean=0.5).fit([1, 0, 1])
    >>> round(math.exp(model.log_marginal([1, 0, 1])), 6)   # 1/2 * 1/3 * 2/4
    0.083333
    """

    cell_type = bernoulli
    n_stats = 2
    _param_names = {"a": 0, "b": 1}

    def __init__(self, strength=None, mean=None, hyperprior="grid"):
        self.strength = strength
        self.mean = mean
        self.hyperprior = hyperprior

    def _check_domain(self, observed):
        if not np.all((observed == 0) | (observed == 1)):
            raise ValueError("BernoulliCells needs binary cells (0 or 1; NaN for missing).")

    def fit(self, values, y=None):
        values = self.check_values(values)
        check_scalar_param(self.strength, "strength", low=0.0, include_low=False,
                           allow_none=True)
        check_scalar_param(self.mean, "mean", low=0.0, high=1.0, include_low=False,
                           allow_none=True)
        if self.mean == 1.0:
            raise ValueError("mean must be < 1, got 1.0.")
        check_option(self.hyperprior, "hyperprior", {"grid", "fixed"})
        observed = values[~np.isnan(values)]
        frequency = observed.mean() if observed.size else 0.5
        self.mean_ = float(np.clip(frequency, 0.05, 0.95) if self.mean is None else self.mean)
        if self.strength is None and self.hyperprior == "grid":
            self.grid_scale_ = STRENGTH_GRID.copy()
        else:
            self.grid_scale_ = np.array([2.0 if self.strength is None else float(self.strength)])
        self.strength_ = float(self.grid_scale_[np.argmin(np.abs(np.log(self.grid_scale_ / 2)))])
        return self

    def _grid_params(self, g):
        s = self.grid_scale_[g]
        return np.array([s * self.mean_, s * (1.0 - self.mean_)])

    def kernel_params(self):
        self._check_fitted()
        return np.array([self.strength_ * self.mean_, self.strength_ * (1.0 - self.mean_)])


class PoissonCells(CellModel):
    """Count cells (non-negative integers), ``x ~ Poisson(lam)`` with a Gamma prior on ``lam``.

    ``lam ~ Gamma(shape=s m, rate=s)``: mean ``m``, strength ``s`` (a prior
    pseudo-count of cells).

    Parameters
    ----------
    strength : float, default=None
        ``s``. ``None``: learned on :data:`STRENGTH_GRID` (``1 .. 100``,
        ``hyperprior='grid'``), or 1 (``'fixed'``).
    mean : float, default=None
        ``m > 0``; ``None`` means the mean of the observed cells (at least 0.1,
        so an all-zero matrix still has a proper prior).
    hyperprior : {'grid', 'fixed'}, default='grid'

    Examples
    --------
    >>> import math
    >>> from sklearn_trellis.models.cells import PoissonCells
    >>> model = PoissonCells(strength=1.0, mean=1.0).fit([0, 2])
    >>> round(model.log_marginal([0]), 6) == round(math.log(0.5), 6)   # Gamma(1, 1) prior
    True
    """

    cell_type = poisson
    n_stats = 3
    _param_names = {"shape": 0, "rate": 1}

    def __init__(self, strength=None, mean=None, hyperprior="grid"):
        self.strength = strength
        self.mean = mean
        self.hyperprior = hyperprior

    def _check_domain(self, observed):
        if np.any(observed < 0) or np.any(observed != np.round(observed)):
            raise ValueError("PoissonCells needs non-negative integer cells (NaN for missing).")
        check_count_total(observed, "PoissonCells")

    def fit(self, values, y=None):
        values = self.check_values(values)
        check_scalar_param(self.strength, "strength", low=0.0, include_low=False,
                           allow_none=True)
        check_scalar_param(self.mean, "mean", low=0.0, include_low=False, allow_none=True)
        check_option(self.hyperprior, "hyperprior", {"grid", "fixed"})
        observed = values[~np.isnan(values)]
        empirical = observed.mean() if observed.size else 1.0
        self.mean_ = float(max(empirical, 0.1) if self.mean is None else self.mean)
        if self.strength is None and self.hyperprior == "grid":
            self.grid_scale_ = STRENGTH_GRID.copy()
        else:
            self.grid_scale_ = np.array([1.0 if self.strength is None else float(self.strength)])
        self.strength_ = float(self.grid_scale_[np.argmin(np.abs(np.log(self.grid_scale_)))])
        return self

    def _grid_params(self, g):
        s = self.grid_scale_[g]
        return np.array([s * self.mean_, s])

    def kernel_params(self):
        self._check_fitted()
        return np.array([self.strength_ * self.mean_, self.strength_])


class CategoricalCells(CellModel):
    """Category cells coded ``0..k-1``, ``x ~ Categorical(p)`` with a Dirichlet prior on ``p``.

    ``p ~ Dirichlet(s m)``: mean ``m`` (a probability vector), strength ``s``.

    Parameters
    ----------
    n_categories : int, default=None
        ``k``; ``None`` means one more than the largest observed code.
    strength : float, default=None
        ``s``. ``None``: learned on :data:`STRENGTH_GRID` (``1 .. 100``,
        ``hyperprior='grid'``), or ``k`` (``'fixed'``: ``beta = 1`` per category
        with the uniform mean).
    mean : array-like of shape (k,), default=None
        ``m``; ``None`` means the smoothed frequencies of the observed codes,
        ``(count_c + 1) / (n + k)``.
    hyperprior : {'grid', 'fixed'}, default='grid'

    Examples
    --------
    >>> import math
    >>> from sklearn_trellis.models.cells import CategoricalCells
    >>> model = CategoricalCells(n_categories=3, strength=3.0, mean=[1/3, 1/3, 1/3]).fit([0, 2])
    >>> round(math.exp(model.log_marginal([0, 0])), 6)   # 1/3 * 2/4
    0.166667
    """

    cell_type = categorical

    def __init__(self, n_categories=None, strength=None, mean=None, hyperprior="grid"):
        self.n_categories = n_categories
        self.strength = strength
        self.mean = mean
        self.hyperprior = hyperprior

    def _check_domain(self, observed):
        if (np.any(observed < 0) or np.any(observed != np.round(observed))
                or np.any(observed >= MAX_CATEGORIES)):
            raise ValueError(f"CategoricalCells needs integer category codes in [0, "
                             f"{MAX_CATEGORIES}) (NaN for missing); recode labels with "
                             "sklearn.preprocessing.OrdinalEncoder.")
        limit = getattr(self, "n_categories_", None)
        if limit is not None and observed.size and observed.max() >= limit:
            raise ValueError(f"CategoricalCells was fitted with {limit} categories; got code "
                             f"{int(observed.max())}.")

    @property
    def n_stats(self):
        self._check_fitted()
        return 1 + self.n_categories_

    def fit(self, values, y=None):
        if hasattr(self, "n_categories_"):
            del self.n_categories_
        values = self.check_values(values)
        observed = values[~np.isnan(values)].astype(np.int64)
        check_scalar_param(self.n_categories, "n_categories", low=1, high=MAX_CATEGORIES,
                           allow_none=True, kind=numbers.Integral)
        check_scalar_param(self.strength, "strength", low=0.0, include_low=False,
                           allow_none=True)
        check_option(self.hyperprior, "hyperprior", {"grid", "fixed"})
        largest = int(observed.max()) + 1 if observed.size else 1
        kk = largest if self.n_categories is None else int(self.n_categories)
        if kk < largest:
            raise ValueError(f"n_categories={kk} but the cells hold code {largest - 1}.")
        if self.mean is None:
            mean = (np.bincount(observed, minlength=kk) + 1.0) / (observed.size + kk)
        else:
            mean = np.asarray(self.mean, dtype=np.float64).ravel()
            if mean.shape != (kk,) or np.any(mean <= 0) or not np.isclose(mean.sum(), 1.0):
                raise ValueError(f"mean must be {kk} positive probabilities summing to 1.")
        self.mean_ = mean / mean.sum()
        if self.strength is None and self.hyperprior == "grid":
            self.grid_scale_ = STRENGTH_GRID.copy()
        else:
            self.grid_scale_ = np.array([float(kk) if self.strength is None
                                         else float(self.strength)])
        self.strength_ = float(self.grid_scale_[np.argmin(np.abs(np.log(self.grid_scale_ / kk)))])
        self.n_categories_ = kk
        return self

    def _grid_params(self, g):
        s = self.grid_scale_[g]
        return np.concatenate([[self.n_categories_, s], s * self.mean_])

    def kernel_params(self):
        self._check_fitted()
        return self._grid_params(int(np.flatnonzero(self.grid_scale_ == self.strength_)[0]))

    def describe_params(self, params):
        return {"strength": np.atleast_2d(params)[:, 1]}


__all__ = ["CellModel", "NormalCells", "BernoulliCells", "PoissonCells", "CategoricalCells",
           "STRENGTH_GRID", "MAX_CATEGORIES"]
