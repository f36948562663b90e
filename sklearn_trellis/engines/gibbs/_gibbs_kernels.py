"""Numba kernels of the collapsed Gibbs engine.

The kernels that call the likelihood are templates (:mod:`sklearn_trellis._core.specialise`)
that call ``lik_reset``, ``lik_add``, ... (the eight protocol functions, named by
:func:`sklearn_trellis.models.likelihood.protocol_bindings`), which are not
defined here; :func:`specialise` compiles them for one likelihood, with direct,
inlinable calls and an on-disk cache.

State arrays (see ``sampler.GibbsState``):

- ``labels[i]``: slot of item ``i`` (``-1`` while unassigned);
- ``counts[c]``: items in slot ``c``;
- ``active[:meta[0]]``: occupied slots, ``where[c]`` = position of ``c`` in
  ``active`` (``-1`` if free);
- ``free[:meta[1]]``: a stack of free slots, every one in the reset state; the
  kernels always keep at least one (the "new cluster" candidate) and return
  early when they would run out, so that the driver can grow the capacity.

Random numbers come from numba's generator, seeded by ``np.random.seed`` at the
start of each call with a seed drawn by the driver from the chain's RandomState.
The scan and split-merge kernels release the GIL (``nogil``): independent states
(CrossCat's views) run them on threads; numba's generator is per thread.
"""

import math

import numpy as np
from numba import njit

from ..._core.compilation import CALLEE_ONLY
from ..._core.specialise import specialise as _specialise, template
from ...models.prior_kernels import (log_block, log_count, log_rising_factorial,
                                     log_weight_existing, log_weight_new)
from ...models.likelihood import protocol_bindings


@njit(cache=True, **CALLEE_ONLY)
def sample_log_weights(logw, n):
    """Index drawn with probability proportional to ``exp(logw[:n])``."""
    largest = -np.inf
    for a in range(n):
        if logw[a] > largest:
            largest = logw[a]
    total = 0.0
    for a in range(n):
        logw[a] = math.exp(logw[a] - largest)
        total += logw[a]
    u = np.random.random() * total
    cumulative = 0.0
    for a in range(n):
        cumulative += logw[a]
        if cumulative > u:
            return a
    for a in range(n - 1, -1, -1):  # rounding: the last positive weight
        if logw[a] > 0:
            return a
    return n - 1


@njit(cache=True, inline='always')
def _activate(c, active, where, meta):
    active[meta[0]] = c
    where[c] = meta[0]
    meta[0] += 1


@njit(cache=True, inline='always')
def _deactivate(c, active, where, meta):
    last = active[meta[0] - 1]
    active[where[c]] = last
    where[last] = where[c]
    where[c] = -1
    meta[0] -= 1


@njit(cache=True, inline='always')
def _pop_free(free, meta):
    meta[1] -= 1
    return free[meta[1]]


@njit(cache=True, inline='always')
def _push_free(c, free, meta):
    free[meta[1]] = c
    meta[1] += 1


@njit(cache=True)
def occupy_slots(compact, counts, active, where, free, meta):
    """Slot bookkeeping of compact labels ``compact`` (``0..K-1``; capacity ``counts.size`` > K).

    Slots ``0..K-1`` active with their sizes in ``counts``, the others on the
    free stack (``K`` on top). The likelihood's statistics are the caller's.
    """
    capacity = counts.size
    n_clusters = 0
    for i in range(compact.size):
        if compact[i] + 1 > n_clusters:
            n_clusters = compact[i] + 1
    counts[:] = 0
    where[:] = -1
    meta[0] = 0
    meta[1] = 0
    for c in range(capacity - 1, n_clusters - 1, -1):
        _push_free(c, free, meta)
    for c in range(n_clusters):
        _activate(c, active, where, meta)
    for i in range(compact.size):
        counts[compact[i]] += 1


@template
def rebuild(params, data, init_labels, labels, counts, active, where, free, meta,
            stats, shared, work):
    """Fill the state from compact labels ``init_labels`` (values ``0..K-1``, capacity > K)
    whose slots :func:`occupy_slots` has filled (the caller runs it: small label vectors
    interpreted), item by item; the caller then runs the likelihood's ``refresh`` (small
    states: its Python source, see ``sampler.refresh``)."""
    for c in range(stats.shape[0]):
        lik_reset(params, stats, c)
    shared[:] = 0.0
    labels[:] = -1
    for i in range(init_labels.size):
        c = init_labels[i]
        lik_prepare(params, data, labels, stats, shared, work, i)
        lik_add(params, data, stats, shared, work, c, i)
        labels[i] = c


@template(nogil=True)
def gibbs_scan(params, pp, data, labels, counts, active, where, free, meta,
               stats, shared, work, order, start, seed, logw):
    """One sequential scan (Neal's Algorithm 3) over ``order[start:]``.

    Returns the position reached: ``order.size`` when done, less when no free
    slot is left (the driver grows the capacity and calls again from there).
    """
    np.random.seed(seed)
    for pos in range(start, order.size):
        if meta[1] == 0:
            return pos
        i = order[pos]
        c0 = labels[i]
        lik_prepare(params, data, labels, stats, shared, work, i)
        lik_remove(params, data, stats, shared, work, c0, i)
        labels[i] = -1
        counts[c0] -= 1
        if counts[c0] == 0:
            _deactivate(c0, active, where, meta)
            lik_reset(params, stats, c0)
            _push_free(c0, free, meta)
        n_clusters = meta[0]
        for a in range(n_clusters):
            c = active[a]
            logw[a] = (log_weight_existing(pp, counts[c])
                       + lik_log_predictive(params, data, stats, shared, work, c, i))
        fresh = free[meta[1] - 1]
        logw[n_clusters] = (log_weight_new(pp, n_clusters)
                            + lik_log_predictive(params, data, stats, shared, work, fresh, i))
        choice = sample_log_weights(logw, n_clusters + 1)
        if choice == n_clusters:
            c = _pop_free(free, meta)
            _activate(c, active, where, meta)
        else:
            c = active[choice]
        lik_add(params, data, stats, shared, work, c, i)
        labels[i] = c
        counts[c] += 1
    return order.size


@template(inline='always')
def _move_out(params, data, labels, stats, shared, work, items, n, c):
    for t in range(n):
        k = items[t]
        lik_prepare(params, data, labels, stats, shared, work, k)
        lik_remove(params, data, stats, shared, work, c, k)
        labels[k] = -1


@template(**CALLEE_ONLY)
def _allocate(params, pp, data, labels, stats, shared, work, items, n, ci, cj,
              sizes, target):
    """Sequentially allocate ``items`` to ``ci``/``cj``; log proposal probability.

    ``target[t] = -1`` samples the allocation, otherwise forces it (0 -> ci,
    1 -> cj) and returns the probability of the forced path.
    """
    log_q = 0.0
    for t in range(n):
        k = items[t]
        lik_prepare(params, data, labels, stats, shared, work, k)
        wi = (log_weight_existing(pp, sizes[0])
              + lik_log_predictive(params, data, stats, shared, work, ci, k))
        wj = (log_weight_existing(pp, sizes[1])
              + lik_log_predictive(params, data, stats, shared, work, cj, k))
        # max(wi, wj) as numba computes it, without its max compiled once more for this
        # kernel's flags (CALLEE_ONLY)
        largest = wj if wj > wi else wi
        log_norm = largest + math.log(math.exp(wi - largest) + math.exp(wj - largest))
        if target[t] < 0:
            side = 0 if np.random.random() < math.exp(wi - log_norm) else 1
        else:
            side = target[t]
        if side == 0:
            log_q += wi - log_norm
            lik_add(params, data, stats, shared, work, ci, k)
            labels[k] = ci
        else:
            log_q += wj - log_norm
            lik_add(params, data, stats, shared, work, cj, k)
            labels[k] = cj
        sizes[side] += 1
    return log_q


@njit(cache=True, **CALLEE_ONLY)
def _copy_state(stats, work, stats_to, work_to):
    """``stats_to[:] = stats``, ``work_to[:] = work`` (loops: numba's slice copy compiles for
    seconds; not inlined: its three call sites typed and lowered in ``split_merge`` cost more
    than its own compilation)."""
    for c in range(stats.shape[0]):
        for col in range(stats.shape[1]):
            stats_to[c, col] = stats[c, col]
    for k in range(work.size):
        work_to[k] = work[k]


@template(nogil=True)
def split_merge(params, pp, data, labels, counts, active, where, free, meta,
                stats, shared, work, fixed, n_proposals, seed):
    """Sequentially-allocated split-merge proposals (Dahl 2003); returns the number accepted.

    Picks two distinct items ``i, j``; if they share a cluster, proposes to split
    it, seeding the two parts with ``i`` and ``j`` and allocating the others in
    random order by their restricted Gibbs conditionals; otherwise proposes to
    merge the two clusters (the reverse proposal probability is that of the
    sequential allocation reproducing the current split). Metropolis-Hastings
    accepts with the exact ratio of the log joints. Clusters holding fixed
    items are left to the Gibbs scan.

    A rejected proposal gets back ``shared`` and the two clusters' rows of
    ``stats``; with the bound constant ``RESTORE_ALL`` (a likelihood with
    ``nonlocal_state``, e.g. fastTIWD's translation-invariant cross-block sums)
    the whole of ``stats`` and ``work`` instead (``O(capacity n_stats + work.size)``
    per proposal). Numba prunes the other way before typing.
    """
    np.random.seed(seed)
    n_items = labels.size
    if n_items < 2:
        return 0
    n_stats = stats.shape[1]
    saved = np.empty((2, n_stats))
    saved_shared = np.empty(shared.size)
    items = np.empty(n_items, np.int64)
    target = np.empty(n_items, np.int64)
    sizes = np.empty(2, np.int64)  # set before each allocation (np.zeros: two more compilations)
    all_stats = np.empty((stats.shape[0] if RESTORE_ALL else 0, n_stats))
    all_work = np.empty(work.size if RESTORE_ALL else 0)
    accepted = 0
    for _ in range(n_proposals):
        if meta[1] < 2:
            break
        i = np.random.randint(n_items)
        j = np.random.randint(n_items - 1)
        if j >= i:
            j += 1
        ci, cj = labels[i], labels[j]
        # the other members of the cluster(s), in random order (a typed count:
        # a literal 0 would compile _allocate once more)
        n = np.int64(0)
        has_fixed = fixed[i] or fixed[j]
        for k in range(n_items):
            if k != i and k != j and (labels[k] == ci or labels[k] == cj):
                items[n] = k
                n += 1
                if fixed[k]:
                    has_fixed = True
        if has_fixed:
            continue
        for t in range(n - 1, 0, -1):
            s = np.random.randint(t + 1)
            items[t], items[s] = items[s], items[t]
        n_clusters = meta[0]
        for col in range(shared.shape[0]):  # loops: numba's slice copy compiles for seconds
            saved_shared[col] = shared[col]
        if RESTORE_ALL:
            _copy_state(stats, work, all_stats, all_work)
        else:
            for col in range(n_stats):
                saved[0, col] = stats[ci, col]
                saved[1, col] = stats[cj, col]
        if ci == cj:
            size = counts[ci]
            old = (lik_log_cluster(params, stats, shared, ci) + lik_log_global(params, shared)
                   + log_block(pp, size) + log_count(pp, n_clusters))
            cs = free[meta[1] - 1]
            _move_out(params, data, labels, stats, shared, work, items, n, ci)
            lik_prepare(params, data, labels, stats, shared, work, j)
            lik_remove(params, data, stats, shared, work, ci, j)
            labels[j] = -1
            lik_add(params, data, stats, shared, work, cs, j)
            labels[j] = cs
            sizes[0] = 1
            sizes[1] = 1
            for t in range(n):
                target[t] = -1
            log_q = _allocate(params, pp, data, labels, stats, shared, work, items, n,
                              ci, cs, sizes, target)
            new = (lik_log_cluster(params, stats, shared, ci) + lik_log_cluster(params, stats, shared, cs)
                   + lik_log_global(params, shared) + log_block(pp, sizes[0])
                   + log_block(pp, sizes[1]) + log_count(pp, n_clusters + 1))
            if math.log(np.random.random()) < new - old - log_q:
                _pop_free(free, meta)
                _activate(cs, active, where, meta)
                counts[ci] = sizes[0]
                counts[cs] = sizes[1]
                accepted += 1
            else:
                for t in range(n):
                    labels[items[t]] = ci
                labels[j] = ci
                for col in range(shared.shape[0]):
                    shared[col] = saved_shared[col]
                if RESTORE_ALL:
                    _copy_state(all_stats, all_work, stats, work)
                else:
                    for col in range(n_stats):
                        stats[ci, col] = saved[0, col]
                    lik_reset(params, stats, cs)
        else:
            old = (lik_log_cluster(params, stats, shared, ci) + lik_log_cluster(params, stats, shared, cj)
                   + lik_log_global(params, shared) + log_block(pp, counts[ci])
                   + log_block(pp, counts[cj]) + log_count(pp, n_clusters))
            # probability of the current split under the sequential allocation
            for t in range(n):
                target[t] = 0 if labels[items[t]] == ci else 1
            for t in range(n):
                k = items[t]
                lik_prepare(params, data, labels, stats, shared, work, k)
                lik_remove(params, data, stats, shared, work, labels[k], k)
                labels[k] = -1
            sizes[0] = 1
            sizes[1] = 1
            log_q = _allocate(params, pp, data, labels, stats, shared, work, items, n,
                              ci, cj, sizes, target)
            # merge cj into ci
            for k in range(n_items):
                if labels[k] == cj:
                    lik_prepare(params, data, labels, stats, shared, work, k)
                    lik_remove(params, data, stats, shared, work, cj, k)
                    lik_add(params, data, stats, shared, work, ci, k)
                    labels[k] = ci
            size = counts[ci] + counts[cj]
            new = (lik_log_cluster(params, stats, shared, ci) + lik_log_global(params, shared)
                   + log_block(pp, size) + log_count(pp, n_clusters - 1))
            if math.log(np.random.random()) < new - old + log_q:
                _deactivate(cj, active, where, meta)
                lik_reset(params, stats, cj)
                _push_free(cj, free, meta)
                counts[ci] = size
                counts[cj] = 0
                accepted += 1
            else:
                for t in range(n):
                    labels[items[t]] = ci if target[t] == 0 else cj
                labels[j] = cj
                for col in range(shared.shape[0]):
                    shared[col] = saved_shared[col]
                if RESTORE_ALL:
                    _copy_state(all_stats, all_work, stats, work)
                else:
                    for col in range(n_stats):
                        stats[ci, col] = saved[0, col]
                        stats[cj, col] = saved[1, col]
    return accepted


@template
def log_joint(params, pp, stats, shared, counts, active, n_active, n_items):
    """``log p(z, X)``: EPPF (with its normaliser) plus the collapsed likelihood."""
    alpha = pp[0]
    total = -log_rising_factorial(alpha, float(n_items)) + log_count(pp, n_active)
    for a in range(n_active):
        c = active[a]
        total += log_block(pp, counts[c]) + lik_log_cluster(params, stats, shared, c)
    return total + lik_log_global(params, shared)


@template
def predictive_log_weights(params, pp, data_new, stats, shared, work, counts, active,
                           n_active, spare, n_items, out):
    """``out[m, a]`` = log(prior weight x predictive) of new row ``m`` joining ``active[a]``; last column: new cluster.

    Weights are normalised by the prior's ``n + alpha`` so that their
    log-sum-exp is the posterior predictive log density given this partition.
    """
    lik_reset(params, stats, spare)
    log_denominator = math.log(n_items + pp[0])
    for m in range(data_new.shape[0]):
        for a in range(n_active):
            c = active[a]
            out[m, a] = (log_weight_existing(pp, counts[c]) - log_denominator
                         + lik_log_predictive(params, data_new, stats, shared, work, c, m))
        out[m, n_active] = (log_weight_new(pp, n_active) - log_denominator
                            + lik_log_predictive(params, data_new, stats, shared, work, spare, m))
    return out


def specialise(likelihood_kernels, restore_all=False):
    """A namespace of the engine kernels compiled for one likelihood's ``GibbsKernels``.

    ``restore_all``: the likelihood's ``nonlocal_state`` (``RESTORE_ALL`` in
    :func:`split_merge`).
    """
    bindings = protocol_bindings(likelihood_kernels)
    bindings["RESTORE_ALL"] = bool(restore_all)
    return _specialise(globals(), bindings)
