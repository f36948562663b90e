"""The hierarchical model abstraction: a tree's log-potential is a sum over splits.

A binary hierarchy ``H`` of N items has ``N - 1`` internal nodes; each splits
its items ``S`` into two children ``(L, R)``. A split model defines the *split
log-potential* ``psi(L, R)`` (``-inf`` forbids the split) and::

    log phi(H) = beta * sum_{(L, R) siblings in H} psi(L, R)

Convention: a split is counted once, with ``L`` the child that holds the lowest
item of ``S``.

Engines never see a model; they see :class:`SplitKernelInputs`: the model's
*split function*, a ``numba.njit`` function::

    split(params, stats, full, parent, left, right) -> psi(left, right)

(without ``beta``; ``parent``, ``left``, ``right`` and ``full``, the set of all
items, are bitmasks, or vertex ids in a sparse trellis), a float ``params``
vector (``params[0]`` is always the inverse temperature ``beta``) and
``stats``, per-subset sufficient statistics of shape ``(k, 2**N)`` computed
once in ``O(k 2**N)``, so that every one of the ``3**N / 2`` splits costs a few
arithmetic operations on ``stats[:, S]``, ``stats[:, L]`` and ``stats[:, R]``.
The engines compile their kernels with the split function bound in
(``sklearn_trellis._core.specialise``), so a new energy is one module with its
split function and its :class:`SplitModel`, plus one line in the ``ENERGIES``
registry; it touches no engine file.
"""

from collections import namedtuple

import numpy as np
from sklearn.base import BaseEstimator

from .._core.trees import check_tree, tree_splits

SplitKernelInputs = namedtuple("SplitKernelInputs", ["split", "params", "stats"])
SplitKernelInputs.__doc__ = """What an engine needs to evaluate every split of one fitted model.

split : numba dispatcher
    The model's ``numba.njit`` split function ``(params, stats, full, parent,
    left, right) -> float`` (``-inf`` forbids the split); compile it with
    ``cache=True`` (and ``inline="always"``, as the built-in energies do).
params : ndarray of float64
    ``params[0]`` is the inverse temperature; the rest is model-specific.
stats : ndarray of shape (k, 2**N)
    Per-subset sufficient statistics.
"""


InsertionInputs = namedtuple("InsertionInputs", ["params", "joined", "alone"])
InsertionInputs.__doc__ = """What the attachment engine needs to insert ``m`` new items into a tree.

Returned by :meth:`SplitModel.insertion_inputs` for the vertices ``S`` of a
family (the nodes of a fitted tree) and new items ``x``; the split function
is the model's own, evaluated on a stats table with columns ``[S..., S + {x}...,
{x}]``, so the enlarged tree's splits cost what the fitted tree's do.

params : ndarray of shape (m, P)
    The kernel parameters of the model enlarged by each new item (the whole
    set, e.g. Ginkgo's root terms, grows by the item); ``params[:, 0]`` is ``beta``.
joined : ndarray of shape (m, k, n_vertices)
    Statistics of ``S + {x}`` for every vertex ``S``.
alone : ndarray of shape (m, k)
    Statistics of the singleton ``{x}``.
"""


class SplitModel(BaseEstimator):
    """Base class of hierarchical (split) models.

    A split model is a small scikit-learn style object: hyperparameters are
    constructor arguments (reachable as ``energy__name`` through an estimator),
    and ``fit(data)`` binds it to ``n_items_`` items. ``input_kind`` says what
    ``fit`` expects: ``'distances'`` (an (N, N) distance matrix; the estimator
    computes it from ``X`` with its ``metric``, or takes ``X`` itself when
    ``metric='precomputed'``) or ``'features'`` (the rows of ``X``).

    Subclasses implement :meth:`split_log_potential` (a direct, slow
    evaluation used for single trees and as the tests' reference) and
    :meth:`kernel_inputs` (the fast path of the engines).
    """

    input_kind = "distances"
    #: True when every split is a Python call (no numba split function): the
    #: engines then skip what needs the model over all 2**N subsets (beam seeds).
    python_splits = False

    def split_log_potential(self, left, right):
        """``psi(left, right)`` of one split (without ``beta``); ``-inf`` if forbidden.

        Parameters
        ----------
        left, right : array-like of int
            Disjoint non-empty item index sets; ``left`` holds the lowest item.
        """
        raise NotImplementedError

    def kernel_inputs(self, beta=1.0):
        """:class:`SplitKernelInputs` of the fitted model for the engines."""
        raise NotImplementedError

    def family_kernel_inputs(self, family, beta=1.0):
        """:class:`SplitKernelInputs` over the vertices of a cluster family.

        The same ``split`` and ``params`` as :meth:`kernel_inputs`, with
        ``stats`` of shape ``(k, family.n_vertices)`` (column ``v`` for vertex
        ``v``), for the sparse trellis (which passes vertex ids, and the root
        vertex as ``full``, to the split function). Models without vectorised
        statistics raise ``NotImplementedError``; the sparse engine then calls
        :meth:`split_log_potential` once per split.

        Parameters
        ----------
        family : ClusterFamily
        beta : float, default=1.0
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no per-vertex statistics; the sparse trellis "
            "evaluates its split_log_potential once per split instead.")

    def insertion_inputs(self, family, fitted, new_data):
        """:class:`InsertionInputs` of new items against the vertices of ``family``.

        The new items are scored with the fitted model's constants held fixed
        (length scale, centring, hyperparameters): a new item does not move
        the fitted similarities. Models without this fast path raise
        ``NotImplementedError``; the attachment engine then calls
        :meth:`with_new_item` and :meth:`split_log_potential` per split.

        Parameters
        ----------
        family : ClusterFamily
        fitted : SplitKernelInputs
            ``family_kernel_inputs(family, beta)`` of the fitted model.
        new_data : ndarray of shape (m, N) or (m, n_features)
            For ``input_kind='distances'``: distances of each new item to the
            ``N`` fitted items (similarities with ``similarity='precomputed'``);
            for ``'features'``: the new items' rows.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no vectorised insertion statistics.")

    def enlarged_params(self, params):
        """Kernel ``params`` under which the model enlarged by a new item weighs the
        splits of fitted items alone, or ``None`` when they are the fitted ``params``.

        Most energies score a split of fitted items the same with or without
        the new item (a root term is re-evaluated by the engines: the whole set
        grows); a model whose parameters depend on ``N`` (the exponential tree
        model's rates ``beta |S| / N``) returns its ``N + 1``-item parameters,
        and the engines recompute the fitted trees' weights with them.
        """
        return None

    def with_new_item(self, new_row):
        """The model fitted on the ``N`` fitted items plus one new item (index ``N``).

        Data-derived constants (length scale, centring) keep their fitted
        values. ``new_row`` is as one row of ``new_data`` in ``insertion_inputs``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} cannot be enlarged by a new item; implement "
            "with_new_item (or insertion_inputs) to predict with it.")

    def _check_family(self, family):
        if family.n_items != self.n_items_:
            raise ValueError(f"The family has {family.n_items} items but the model was "
                             f"fitted on {self.n_items_}.")

    def separable_form(self, beta=1.0):
        """``(u, a, c)`` if ``beta * psi(L, R) = c[S] + a[|S|] * (u[L] + u[R])``, else None.

        ``u`` and ``c`` are tables over all bitmasks, ``a`` is indexed by the
        parent's size. Engines use this faster form when it exists.
        """
        return None

    def log_potential(self, tree, beta=1.0):
        """``log phi(H) = beta * sum psi(L, R)`` of a tree given as nested tuples."""
        tree = check_tree(tree, self.n_items_)
        total = 0.0
        for left, right in tree_splits(tree):
            if min(right) < min(left):
                left, right = right, left
            value = float(self.split_log_potential(np.array(left), np.array(right)))
            if value == -np.inf:
                return -np.inf
            total += value
        return float(beta) * total


__all__ = ["SplitModel", "SplitKernelInputs", "InsertionInputs"]
