"""The cluster likelihood protocol of the collapsed Gibbs engine (see the package docstring)."""

from collections import namedtuple

import numpy as np
from numba import njit
from sklearn.base import BaseEstimator

#: The eight numba functions a cluster likelihood hands to the engine (see
#: :mod:`sklearn_trellis.engines.gibbs` for their signatures and contracts).
GibbsKernels = namedtuple("GibbsKernels", [
    "reset", "prepare", "add", "remove", "log_predictive", "log_cluster",
    "log_global", "refresh"])


@njit(cache=True)
def no_prepare(params, data, labels, stats, shared, work, i):
    """``prepare`` of likelihoods that need no per-item scratch."""
    return


@njit(cache=True)
def zero_global(params, shared):
    """``log_global`` of likelihoods that factorise over clusters."""
    return 0.0


@njit(cache=True)
def no_refresh(params, data, labels, stats, shared, active, n_active):
    """``refresh`` of likelihoods whose cached statistics do not drift."""
    return


class ClusterLikelihood(BaseEstimator):
    """Base class of cluster likelihoods usable by the collapsed Gibbs engine.

    Subclasses set the class attribute ``kernels`` (a :class:`GibbsKernels`),
    implement :meth:`fit` (validate ``X``, set ``n_features_in_`` and the
    resolved hyperparameters, return ``self``), :meth:`kernel_params` and the
    sizes ``n_stats`` / ``n_shared`` / :meth:`work_size`.
    """

    #: GibbsKernels of the model (class attribute of subclasses).
    kernels = None
    #: True when ``log_global`` is identically 0 (exact mode possible).
    factorizes = True

    def fit(self, X, y=None):
        raise NotImplementedError

    def kernel_params(self):
        """float64 1-d array of (resolved) hyperparameters read by the kernels."""
        raise NotImplementedError

    def kernel_data(self, X):
        """float64 C-contiguous writeable 2-d array, one row per item, read by the kernels.

        (Writeable so that read-only inputs, e.g. memory maps, do not make numba
        compile a second version of every kernel.)
        """
        return np.require(X, dtype=np.float64, requirements=["C", "W"])

    @property
    def n_stats(self):
        """Number of statistics kept per cluster slot."""
        raise NotImplementedError

    n_shared = 0

    def work_size(self, capacity):
        """Length of the per-item scratch vector for ``capacity`` cluster slots."""
        return 1

    def resample_params(self, params, stats, shared, counts, active, random_state):
        """Optional per-sweep hyperparameter update; return new params or ``None``."""
        return None

    @property
    def resamples_hyperparameters(self):
        """True when :meth:`resample_params` may change the parameters (the chain records them)."""
        return type(self).resample_params is not ClusterLikelihood.resample_params

    def hyperparameter_grid(self):
        """Finite hyperprior of a likelihood that resamples its hyperparameters, or ``None``.

        Returns ``(params, log_prior)``: a float64 array ``(G, len(kernel_params()))``
        of kernel parameter vectors and their normalised log prior weights
        ``(G,)``. The exact engine then computes the posterior marginalised over
        the grid (one trellis per grid point); :meth:`resample_params` must draw
        from the conditional posterior over the same grid.
        """
        return None

    def describe_params(self, params):
        """Named hyperparameters of kernel parameter vectors ``params`` (rows), as a dict of arrays."""
        return {}

    def check_data(self, X):
        """Validate new data against the fitted likelihood (same checks as ``fit``)."""
        return self.kernel_data(X)

    def log_marginal(self, X):
        """``log m(X)``: the marginal likelihood of the rows of ``X`` as one cluster.

        Computed by the same kernels the sampler uses (reset, add, log_cluster).
        """
        from ..engines.gibbs.sampler import cluster_log_marginal
        return cluster_log_marginal(self, X)


__all__ = ["GibbsKernels", "ClusterLikelihood", "no_prepare", "zero_global", "no_refresh"]
