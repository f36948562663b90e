"""Empirical Bayes for BHC: the likelihood's grid point that maximises the tree's evidence.

Heller & Ghahramani (2005, Section 4) fit the hyperparameters by maximising
``p(D | T)``. For a fixed tree ``T`` the evidence bound
``log S(root) + log Gamma(alpha) - log Gamma(n + alpha)`` differs from
``log p(D | T)`` by ``log d_root``, which does not involve the likelihood, so
both pick the same point. The tree depends on the hyperparameters, hence the
alternation: build the tree, pick the grid point of the likelihood's
hyperprior (:meth:`~sklearn_trellis.models.likelihood.ClusterLikelihood.hyperparameter_grid`)
with the highest evidence on it, rebuild, until the choice repeats.
"""

import numpy as np

from ..._core.progress import SILENT
from .build import greedy_tree, kernel_params
from .posterior import TreePosterior, node_log_marginals

#: Rows used to choose the hyperparameters (a random subset beyond it).
MAX_SELECTION_ITEMS = 1_000

#: Most tree / grid-point alternations.
MAX_ROUNDS = 4


def select_hyperparameters(likelihood, data, alpha, *, rose=False, random_state,
                           max_items=MAX_SELECTION_ITEMS, max_rounds=MAX_ROUNDS,
                           progress=SILENT):
    """Kernel parameters of the grid point with the highest BHC evidence bound.

    Parameters
    ----------
    likelihood : ClusterLikelihood
        Fitted; without a grid hyperprior its own parameters are returned.
    data : ndarray
        ``kernel_data`` of all rows.
    alpha : float
    rose : bool, default=False
        Build rose trees instead of binary ones.
    random_state : RandomState
        Draws the subset when there are more than ``max_items`` rows.
    max_items, max_rounds : int
    progress : Progress, default=SILENT
        Reporter of a fit with ``verbose``: the rounds and grid points done,
        at most every 10 s.

    Returns
    -------
    params : ndarray
        Kernel parameters.
    tree : tuple or None
        ``(children, is_cluster)`` of the last tree, built on all rows at
        ``params``, when no subset was drawn; ``None`` otherwise.
    """
    params = kernel_params(likelihood)
    grid = likelihood.hyperparameter_grid()
    if grid is None:
        return params, None
    candidates = grid[0]
    n = data.shape[0]
    subset = n > max_items
    if subset:
        rows = np.sort(random_state.choice(n, size=max_items, replace=False))
        data = np.ascontiguousarray(data[rows])
    chosen = -1
    for round_ in range(max_rounds):
        children, is_cluster = greedy_tree(likelihood, data, alpha, rose=rose, params=params,
                                           progress=progress)
        bounds = []
        for k, row in enumerate(candidates):
            bounds.append(TreePosterior(children, is_cluster,
                                        node_log_marginals(likelihood, data, children, row),
                                        alpha).log_evidence_lower_bound)
            progress.update(k + 1, len(candidates), f"grid points of round {round_ + 1}")
        best = int(np.argmax(bounds))
        if best == chosen:
            return params, None if subset else (children, is_cluster)
        chosen = best
        params = np.ascontiguousarray(candidates[best])
    return params, None


__all__ = ["select_hyperparameters", "MAX_SELECTION_ITEMS", "MAX_ROUNDS"]
