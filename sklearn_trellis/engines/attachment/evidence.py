"""A new item's evidence over the whole tree posterior: its predictive density and cluster.

The attachment posterior (:class:`~sklearn_trellis.engines.attachment.AttachmentTree`)
places a new item ``x`` in one fitted tree. Here the fitted tree is not held
fixed: every tree over the ``N + 1`` items that is a tree ``T`` of the
trellis with ``x`` inserted above one of its ``2N - 1`` nodes is weighted by
its potential under the model enlarged by ``x`` (the fitted constants held
fixed). Every binary tree over ``N + 1`` items arises exactly once this way,
so on the exact trellis the sum is the exact partition function of the
``N + 1`` items, and on a sparse trellis it is over the family's trees
enlarged by ``x``. When the model's parameters depend on ``N``
(:meth:`SplitModel.enlarged_params`, the exponential tree model's rates
``beta |S| / N``), the enlarged model's trees are weighted with its own
``N + 1``-item parameters, the fitted items' splits included:

- ``log Z(train + x) - log Z(train)``: for a likelihood energy (uniform prior
  over trees), ``log p(x | train)`` up to the prior's ``log (2N - 1)``;
- ``P(C + {x} is a node)``: the posterior probability that the fitted
  cluster ``C`` is a node and ``x`` joins it (is inserted at or below it).

Exact trellis: the ``O(3^(N+1))`` trellis of the enlarged model
(:meth:`SplitModel.with_new_item`), one per new item. Sparse trellis: one
``O(edges)`` inside and outside pass per new item over the fitted family
(:func:`_kernels.insertion_evidence`), for energies with vectorised
statistics (:meth:`SplitModel.insertion_inputs`).
"""

import numpy as np

from ...models import SplitModel
from ..exact.hierarchical import ExactHierarchicalTrellis
from ..sparse.sparse_hierarchical import SparseHierarchicalTrellis
from . import _kernels


def new_item_evidence(trellis, model, new_data, beta, clusters=()):
    """Log evidence ratio of each new item and its log probability of joining each cluster.

    Parameters
    ----------
    trellis : ExactHierarchicalTrellis or SparseHierarchicalTrellis
        Fitted on ``model`` at ``beta``.
    model : SplitModel
        The fitted model.
    new_data : ndarray of shape (m, N) or (m, n_features)
        As :meth:`SplitModel.insertion_inputs` takes it.
    beta : float
    clusters : sequence of array-like of int, default=()
        Clusters of fitted items.

    Returns
    -------
    log_ratio : ndarray of shape (m,)
        ``log Z(train + x) - log Z(train)`` over the trees described above.
    log_inside : ndarray of shape (m, len(clusters))
        ``log P(cluster + {x} is a node of the enlarged tree)``; ``-inf`` for a
        cluster the trellis does not hold.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis.engines import ExactHierarchicalTrellis
    >>> from sklearn_trellis.engines.attachment import new_item_evidence
    >>> from sklearn_trellis.models import ExponentialTreeEnergy
    >>> s = np.array([[0., 2., .1], [2., 0., .1], [.1, .1, 0.]])
    >>> energy = ExponentialTreeEnergy(similarity="precomputed").fit(s)
    >>> trellis = ExactHierarchicalTrellis(*energy.kernel_inputs(3.0)).fit()
    >>> # a new item similar to item 2 only: it most probably joins {2}
    >>> log_ratio, log_inside = new_item_evidence(trellis, energy, [[.1, .1, 3.]], 3.0,
    ...                                           clusters=[[0, 1], [2]])
    >>> np.exp(log_inside).round(2)
    array([[0.02, 0.94]])
    """
    if not isinstance(model, SplitModel):
        raise TypeError(f"model must be a fitted SplitModel, got {type(model).__name__}.")
    new_data = np.asarray(new_data, dtype=np.float64)
    if new_data.ndim != 2:
        raise ValueError(f"new_data must be 2-d (one row per new item), got shape "
                         f"{new_data.shape}.")
    clusters = [np.asarray(c, dtype=np.int64) for c in clusters]
    if isinstance(trellis, ExactHierarchicalTrellis):
        return _exact(trellis, model, new_data, float(beta), clusters)
    if isinstance(trellis, SparseHierarchicalTrellis):
        return _sparse(trellis, model, new_data, float(beta), clusters)
    raise TypeError(f"trellis must be an exact or sparse hierarchical trellis, got "
                    f"{type(trellis).__name__}.")


def _exact(trellis, model, new_data, beta, clusters):
    n = model.n_items_
    m = new_data.shape[0]
    log_ratio = np.empty(m)
    log_inside = np.empty((m, len(clusters)))
    for j, row in enumerate(new_data):
        enlarged = ExactHierarchicalTrellis(*model.with_new_item(row).kernel_inputs(beta),
                                            max_items=n + 1).fit()
        log_ratio[j] = enlarged.log_partition_function - trellis.log_partition_function
        for t, cluster in enumerate(clusters):
            mask = _mask(np.append(cluster, n))
            log_inside[j, t] = (enlarged.log_z[mask] + enlarged._outside()[mask]
                                - enlarged.log_partition_function)
    return log_ratio, np.minimum(log_inside, 0.0)


def _mask(indices):
    mask = 0
    for i in indices.tolist():
        mask |= 1 << i
    return mask


def _sparse(trellis, model, new_data, beta, clusters):
    if trellis.split_function is not None:
        raise ValueError("A new item's evidence over the tree posterior needs a model with "
                         "vectorised statistics (family_kernel_inputs).")
    family = trellis.family
    fitted = model.family_kernel_inputs(family, beta)
    targets = np.array([family.vertex_of(c) for c in clusters], dtype=np.int64)
    present = targets >= 0
    m = new_data.shape[0]
    log_ratio = np.empty(m)
    log_inside = np.full((m, len(clusters)), -np.inf)
    found = np.empty((m, int(present.sum())))
    kernel = _kernels.specialise(fitted.split).insertion_evidence
    psi, log_z = trellis.edge_log_potential, trellis.log_z
    enlarged = model.enlarged_params(fitted.params)
    if enlarged is not None:     # the fitted items' own trees reweighted in the N + 1 model
        psi, log_z = trellis.inside_at(enlarged)
    n_vertices = family.n_vertices
    chunk = max(1, _CHUNK_FLOATS // (fitted.stats.shape[0] * n_vertices))
    for start in range(0, m, chunk):
        stop = min(m, start + chunk)
        block = model.insertion_inputs(family, fitted, new_data[start:stop])
        kernel(fitted.stats, block.params, block.joined, block.alone, trellis.edge_ptr,
               trellis.edge_left, trellis.edge_right, psi, log_z, family.root,
               targets[present], log_ratio[start:stop], found[start:stop])
    # the kernel's ratio is over Z(train) at the kernel's parameters: make it over the fitted
    log_ratio += log_z[family.root] - trellis.log_z[family.root]
    log_inside[:, present] = np.minimum(found, 0.0)
    return log_ratio, log_inside


#: Largest block of new items' statistics (floats) built at once.
_CHUNK_FLOATS = 1 << 20


__all__ = ["new_item_evidence"]
