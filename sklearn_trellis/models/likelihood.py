"""The cluster likelihood protocol of the collapsed Gibbs engine.

See :mod:`sklearn_trellis.engines.gibbs` for the contract of the eight kernels.
The whole-data quantities of a likelihood (``log m(X)`` of one cluster, the
table of ``log m(X_B)`` over all subsets for the exact engines) are computed
here from the same kernels, so models need no engine to compute them.
"""

from collections import namedtuple

import numpy as np
from numba import njit
from sklearn.base import BaseEstimator

from .._core.specialise import is_specialisation_of, specialise
from .._core.validation import writeable_if_small
from . import _likelihood_kernels, _uncollapsed_kernels
from ._conjugate_kernels import refresh_by_adding

#: The eight numba functions a cluster likelihood hands to the engine (see
#: :mod:`sklearn_trellis.engines.gibbs` for their signatures and contracts).
GibbsKernels = namedtuple("GibbsKernels", [
    "reset", "prepare", "add", "remove", "log_predictive", "log_cluster",
    "log_global", "refresh"])


#: The numba functions of a likelihood's *uncollapsed* form, for samplers that draw the
#: cluster parameters (:mod:`sklearn_trellis.engines.gibbs.subcluster`); contracts in
#: :mod:`sklearn_trellis.models._uncollapsed_kernels`. ``log_density_block`` (a block of
#: rows against every cluster) is optional: without it the rows are scored cluster by
#: cluster through ``log_density_rows``; so is ``log_density_screen`` (the label pass's
#: block, ``-inf`` where an entry cannot matter): without it, ``log_density_block``.
UncollapsedKernels = namedtuple("UncollapsedKernels", [
    "suff_add_rows", "suff_to_stats", "draw_theta", "log_density_rows", "log_density_block",
    "log_density_screen"], defaults=(None, None))


#: The optional numba pair of a likelihood's *tabulated* posterior predictive, for the exact
#: predictive (:class:`sklearn_trellis.engines.exact.grid_marginal.ExactMixturePredictive`),
#: which evaluates ``log p(x | X_B)`` for every subset ``B`` of the fitted rows and many new
#: rows: ``table_row(params, stats, c, table, row)`` writes ``table[row]`` (``predictive_size``
#: floats) from the statistics row ``c``, once per subset; ``log_predictive(params, data,
#: table, shared, work, c, i)`` is ``log_predictive`` of the Gibbs protocol read from
#: ``table[c]`` (``inline="always"``: it runs once per subset and new row). A likelihood
#: without it is tabulated as its statistics and evaluated by its ``log_predictive``.
TabulatedPredictive = namedtuple("TabulatedPredictive", ["table_row", "log_predictive"])


def protocol_bindings(kernels):
    """A likelihood's :class:`GibbsKernels` under the names kernel templates call (``lik_reset``, ...)."""
    return {"lik_" + name: function for name, function in zip(GibbsKernels._fields, kernels)}


def uncollapsed_bindings(likelihood):
    """A likelihood's collapsed and uncollapsed kernels under the names templates call.

    Raises a ValueError naming the likelihood when it has no uncollapsed form.
    """
    if likelihood.uncollapsed_kernels is None:
        raise ValueError(f"{type(likelihood).__name__} has no uncollapsed form (cluster "
                         "parameter draws); use a collapsed sampler (method='gibbs').")
    bindings = protocol_bindings(likelihood.kernels)
    bindings.update({"lik_" + name: function for name, function
                     in zip(UncollapsedKernels._fields, likelihood.uncollapsed_kernels)})
    if bindings["lik_log_density_block"] is None:
        bindings["lik_log_density_block"] = specialise(
            vars(_uncollapsed_kernels),
            {"lik_log_density_rows": bindings["lik_log_density_rows"]}
        ).log_density_block_by_rows
    if bindings["lik_log_density_screen"] is None:
        bindings["lik_log_density_screen"] = specialise(
            vars(_uncollapsed_kernels),
            {"lik_log_density_block": bindings["lik_log_density_block"]}
        ).log_density_screen_by_block
    return bindings


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
    #: UncollapsedKernels of a factorising conjugate model (class attribute), or None. With
    #: them the likelihood also defines ``n_suff`` (length of an additive sufficient
    #: statistics row) and ``n_theta`` (length of a cluster parameter row).
    uncollapsed_kernels = None
    #: TabulatedPredictive of the model (class attribute), or None: then the exact
    #: predictive tabulates the statistics rows and calls ``log_predictive``.
    tabulated_predictive = None
    #: True when moving an item changes more than its two clusters' rows of ``stats`` and
    #: ``shared`` (fastTIWD's translation-invariant cross-block sums, in ``work`` and in every
    #: slot's row): a rejected split-merge proposal then restores the whole of ``stats`` and
    #: ``work`` (``O(capacity n_stats + work size)`` per proposal) instead of those rows.
    nonlocal_state = False
    #: True when the model of ``X - c`` with ``mean_prior - c`` is that of ``X`` (the
    #: Gaussian clusters): estimators then centre features far from 0 before the
    #: kernels sum their squares (:func:`sklearn_trellis._core.units.feature_offset`).
    translation_equivariant = False
    #: True when ``refresh`` computes every occupied slot's statistics from the labels and
    #: the data alone and ``work`` holds no state of the partition (only caches that its
    #: kernels fill on demand): a new Gibbs state then needs no item-by-item ``rebuild``
    #: (one kernel less to compile), only ``reset`` of every slot and ``refresh``.
    refresh_rebuilds = False

    @property
    def refresh_interpretable(self):
        """Whether ``kernels.refresh`` is a ``refresh_by_adding`` (it resets the occupied
        slots and adds every assigned item in order with ``add``): its own steps are integer
        bookkeeping, so the Gibbs engine runs its Python source around the compiled
        ``reset`` and ``add`` on small states (:mod:`sklearn_trellis._core.interpreted`,
        ``compiled_callees``)."""
        return (self.kernels is not None
                and is_specialisation_of(self.kernels.refresh, refresh_by_adding))

    def fit(self, X, y=None):
        raise NotImplementedError

    def kernel_params(self):
        """float64 1-d array of (resolved) hyperparameters read by the kernels."""
        raise NotImplementedError

    def kernel_data(self, X):
        """float64 C-contiguous 2-d array, one row per item, read by the kernels.

        A small read-only input (e.g. a memory map) is copied, so that numba does
        not compile a read-only version of every kernel; one larger than
        ``READONLY_COPY_MAX_BYTES`` is used in place (:func:`.writeable_if_small`).
        """
        return writeable_if_small(np.require(X, dtype=np.float64, requirements=["C"]))

    @property
    def n_stats(self):
        """Number of statistics kept per cluster slot."""
        raise NotImplementedError

    n_shared = 0

    @property
    def predictive_size(self):
        """Length of a row of the tabulated predictive (:data:`TabulatedPredictive`)."""
        return self.n_stats

    def work_size(self, capacity):
        """Length of the per-item scratch vector for ``capacity`` cluster slots."""
        return 1

    def grow_work(self, work, old_capacity, new_capacity):
        """The scratch vector for ``new_capacity`` slots, keeping what ``work`` holds for the old ones.

        The default copies ``work`` to the front of a zero vector; a likelihood
        that keeps per-slot state in ``work`` in a capacity-dependent layout
        overrides it.
        """
        grown = np.zeros(max(1, self.work_size(new_capacity)))
        grown[:work.size] = work
        return grown

    def refresh_work(self, params, stats, shared, work, active, n_active):
        """Recompute cached state that ``refresh`` cannot (it does not see ``work``); nothing by default.

        Called by :func:`sklearn_trellis.engines.gibbs.sampler.set_params` after ``refresh``.
        """
        return

    def resample_params(self, params, stats, shared, counts, active, random_state):
        """Optional per-sweep hyperparameter update; return new params or ``None``."""
        return None

    def resample_state_params(self, state, random_state):
        """:meth:`resample_params` of a Gibbs state (the collapsed engine's call, once per sweep).

        A likelihood whose update reads more of the state (fastTIWD: its
        cross-block sums in ``work``) overrides this.
        """
        return self.resample_params(state.params, state.stats, state.shared, state.counts,
                                    state.active[:state.meta[0]], random_state)

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

    def check_sampler_data(self, X):
        """Validated rows for the uncollapsed kernels: float32 stays float32 (no float64 copy).

        Returns a C-contiguous writeable float32 or float64 array (the same checks as
        :meth:`check_data`).
        """
        return self.check_data(X)

    def log_marginal(self, X):
        """``log m(X)``: the marginal likelihood of the rows of ``X`` as one cluster.

        Computed by the same kernels the sampler uses (reset, add, log_cluster).
        """
        data = self.kernel_data(X)
        fns = self.kernels
        stats = np.zeros((1, self.n_stats))
        shared = np.zeros(max(1, self.n_shared))
        work = np.zeros(max(1, self.work_size(1)))
        params = np.ascontiguousarray(self.kernel_params(), dtype=np.float64)
        fns.reset(params, stats, 0)
        for i in range(data.shape[0]):
            fns.add(params, data, stats, shared, work, 0, i)
        return float(fns.log_cluster(params, stats, shared, 0))

    def subset_log_marginals(self, data, params=None, *, with_first=False):
        """``log m(X_B)`` for all ``2**n`` bitmasks ``B`` (entry 0 is 0); factorising likelihoods only.

        Parameters
        ----------
        data : ndarray of shape (n, ...)
            ``kernel_data(X)`` of the ``n`` items.
        params : ndarray, default=None
            Kernel parameters; ``None`` means :meth:`kernel_params`.
        with_first : bool, default=False
            Only the subsets that hold item 0 (the odd bitmasks; the others are left
            0), at half the cost: a new row's joins to every subset of the others.

        Returns
        -------
        table : ndarray of shape (2**n,)
        """
        if not self.factorizes:
            raise ValueError(f"{type(self).__name__} does not factorise over clusters; "
                             "exact mode needs a likelihood with log_global = 0.")
        n = data.shape[0]
        out = np.zeros(1 << n)
        if params is None:
            params = self.kernel_params()
        params = np.ascontiguousarray(params, dtype=np.float64)
        work = np.zeros(max(1, self.work_size(n + 1)))
        _likelihood_kernels.specialise(protocol_bindings(self.kernels)).subset_log_marginals(
            params, data, n, self.n_stats, work, out, 1 if with_first else n)
        return out


__all__ = ["GibbsKernels", "UncollapsedKernels", "TabulatedPredictive", "ClusterLikelihood",
           "protocol_bindings", "uncollapsed_bindings", "no_prepare", "zero_global", "no_refresh"]
