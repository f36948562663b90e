"""Slice-sampler row step of a cell-block view (Walker 2007; Kalli, Griffin & Walker 2011).

The collapsed scan (:func:`.sampler.sweep`) moves one row at a time against the
others' statistics. This step is *uncollapsed*: it makes the DP's random measure
explicit for a moment and then moves every row at once.

Given the row partition ``z`` (``K`` clusters of sizes ``n_k``) of a view with
concentration ``alpha``:

1. weights ``(w_1..w_K, w_rest) ~ Dirichlet(n_1..n_K, alpha)`` (the DP posterior's
   masses of the occupied atoms and of the rest);
2. slices ``u_i ~ U(0, w_{z_i})``;
3. the rest broken into sticks ``v ~ Beta(1, alpha)`` until ``w_rest < min_i u_i``
   (no atom left unlisted can exceed any slice);
4. parameters ``theta_kg`` of each (cluster, column group) block from its conjugate
   posterior (:func:`~sklearn_trellis.models._cell_kernels.posterior_draw_at`), those
   of the new sticks from the prior;
5. every row independently: ``p(z_i = k) ∝ 1[w_k > u_i] prod_j f(x_ij | theta_k)``
   (NaN cells skipped), rows in parallel (numba ``prange``, views of at least
   ``PARALLEL_CELLS`` cells) with uniforms drawn beforehand from the seeded
   generator, so the result does not depend on the number of threads.

Steps 1-4 draw ``(w, theta, u)`` exactly from their conditional given ``z`` and the
data, step 5 draws ``z`` exactly from its conditional given them: a two-block
data-augmentation Gibbs kernel, and discarding ``(w, theta, u)`` afterwards leaves
``p(z | X)`` invariant. So it composes with the collapsed moves (split-merge, column
moves, hyperparameter draws), which run on the state rebuilt from the new labels.
Each step costs ``O(n d c)`` for ``c`` candidate clusters per row (few: large
clusters have large weights and slices), with no sequential dependence between rows;
it mixes less per step than the collapsed scan (parameters are fixed while the rows
move).
"""

import numpy as np

from . import _slice_kernels as sk
from . import sampler

_MAX_SEED = np.iinfo(np.int32).max
#: Cells (rows x columns) of a view from which its rows are scored on numba's threads.
#: Below it one thread: a parallel region costs a thread wake-up, and on a loaded
#: 2-core machine waiting for a busy core took longer than 10,000 x 16 cells on one.
PARALLEL_CELLS = 1_000_000


def reset_labels(state, likelihood, data, labels):
    """Put the partition ``labels`` (values ``0..K'-1``, some possibly empty) into ``state``.

    ``state`` is a GibbsState of a :class:`~sklearn_trellis.models.cell_blocks.CellBlocks`
    likelihood; its arrays are reused (grown when needed) and its items' cache kept
    (:func:`._slice_kernels.reset_partition`).
    """
    _, compact = np.unique(labels, return_inverse=True)
    compact = compact.astype(np.int64).ravel()
    n_clusters = int(compact.max()) + 1
    while state.capacity < min(n_clusters + 2, compact.size + 2):
        sampler._grow(state, likelihood)
    sk.reset_partition(state.params, data, compact, state.labels, state.counts, state.active,
                       state.where, state.free, state.meta, state.stats, state.shared,
                       state.work)


def slice_step(state, likelihood, data, rng):
    """One slice-sampler move of every row of ``state`` (a cell-block view's GibbsState)."""
    n = state.labels.size
    if n == 0:
        return
    n_active = int(state.meta[0])
    index = np.full(state.capacity, -1, np.int64)
    index[state.active[:n_active]] = np.arange(n_active)
    cluster = index[state.labels]
    log_w, log_u, theta, choice = sk.slice_draws(
        state.params, state.stats, state.active, n_active, state.counts, cluster,
        float(state.alpha), rng.randint(_MAX_SEED))
    new = np.empty(n, np.int64)
    assign = sk.slice_assign if data.size >= PARALLEL_CELLS else sk.slice_assign_serial
    assign(state.params, data, log_w, log_u, theta, choice, cluster, new)
    reset_labels(state, likelihood, data, new)


__all__ = ["slice_step", "reset_labels", "PARALLEL_CELLS"]
