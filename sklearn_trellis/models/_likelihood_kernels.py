"""Kernel templates that compute whole-data quantities of one cluster likelihood.

The templates call the likelihood's protocol functions by the names
``lik_reset``, ``lik_add``, ``lik_log_cluster`` (see
:mod:`sklearn_trellis.models.likelihood`); :func:`specialise` compiles them for
one likelihood through :mod:`sklearn_trellis._core.specialise`, as the Gibbs
engine does with its own templates, so that models build their own potential
tables without importing an engine.
"""

import numpy as np

from .._core.specialise import specialise as _specialise, template


@template
def subset_log_marginals(params, data, n_items, n_stats, work, out, n_roots):
    """``out[B] = log m(X_B)`` for every non-empty bitmask ``B`` whose lowest item is below
    ``n_roots`` (depth-first, O(n) rows): all of them for ``n_roots = n_items``, those
    holding item 0 for ``n_roots = 1``."""
    rows = np.empty((n_items + 1, n_stats))
    shared = np.zeros(1)
    lik_reset(params, rows, np.int64(0))
    out[0] = 0.0
    # explicit DFS stack: mask, next item to try, depth
    masks = np.zeros(n_items + 1, np.int64)
    nexts = np.zeros(n_items + 1, np.int64)
    depth = 0
    while depth >= 0:
        item = nexts[depth]
        if item >= (n_roots if depth == 0 else n_items):
            depth -= 1
            continue
        nexts[depth] = item + 1
        for col in range(rows.shape[1]):  # a loop: numba's slice copy compiles for seconds
            rows[depth + 1, col] = rows[depth, col]
        lik_add(params, data, rows, shared, work, depth + 1, item)
        mask = masks[depth] | (1 << item)
        out[mask] = lik_log_cluster(params, rows, shared, depth + 1)
        masks[depth + 1] = mask
        nexts[depth + 1] = item + 1
        depth += 1
    return out


def specialise(bindings):
    """The templates of this module compiled for one likelihood (``lik_*`` name -> function)."""
    return _specialise(globals(), bindings)
