"""Numba kernels of the point-estimate search and of posterior expected losses.

Two families of losses share one search (SALSO-style sequential allocation
and sweetening, Dahl, Johnson & Müller 2022):

*Contingency losses*, read from the sampled partitions (``samples``: (T, n)
block ids ``0..L_t-1``). Every one is a function, per sample ``t``, of six
sums over the contingency table of the candidate ``c`` (the estimate) and
the sample (the reference), on the ``m`` elements allocated so far::

    SEx = sum_k x(n_k)     STx = sum_l x(m_tl)     SJx = sum_kl x(N_tkl)
    SEp = sum_k C(n_k, 2)  STp = sum_l C(m_tl, 2)  SJp = sum_kl C(N_tkl, 2)

with ``x(u) = u log u``. Binder(a, b) ``= a (STp - SJp) + b (SEp - SJp)``;
``m VI_a = a STx + (2 - a) SEx - 2 SJx``; NVI, NID and omARI follow from the
entropies ``H = log m - S.x / m`` and the pair counts (see :func:`cm_loss`).
The search keeps ``N_tkl`` for every cluster, so moving an element costs
``O(T)`` per cluster whatever the loss.

*Pairwise losses*, read from ``P`` (pairwise co-clustering probabilities):
Binder(a, b) ``= a sum_{i<j} P_ij + sum_{i<j, c_i = c_j} (b - (a + b) P_ij)``,
the approximate omARI of Fritsch & Ickstadt (2009) (``1 - PEAR``, salso's
``omARI.approx``) and Wade & Ghahramani's (2018) lower bound of the expected
VI (``VI.lb``, natural log)::

    VI.lb(c) = (1/n) sum_i [log |c(i)| + log sum_j P_ij - 2 log sum_{j in c(i)} P_ij].

A candidate's slot ``k`` is a cluster of ``labels`` (``-1``: not allocated).

The kernels are templates compiled per family of losses (:func:`loss_kernels`:
Binder and VI, the other contingency losses, the pairwise losses): they branch on
the bound constant ``FAMILY``, and numba drops the other families' branches before
typing them, so a fit compiles its family's code only (DPMixture's default VI
search: about a quarter less compilation CPU than kernels holding all eight losses).

The search and :func:`cm_losses` take the ``x log x`` table ``xl`` from their
caller, computed compiled: Binder's and VI's kernels then only add, multiply and
compare, and run their own Python source on small inputs
(:mod:`~sklearn_trellis._core.interpreted`, the same values bit for bit; the
thresholds are in :mod:`~sklearn_trellis.summaries.point_estimates`).
"""

import math

import numpy as np
from numba import njit

from .._core.specialise import specialise, template

BINDER = 0
VI = 1
OMARI = 2
NVI = 3
NID = 4
BINDER_PSM = 5
OMARI_APPROX = 6
VI_LB = 7
#: Kinds read from the sampled partitions (the others from ``P``).
N_CONTINGENCY_KINDS = 5

# Families of kinds, each compiled on its own (see :func:`loss_kernels`): the losses
# linear in the contingency sums, the other contingency losses, the pairwise losses.
LINEAR, ENTROPY, PAIRWISE = 0, 1, 2


@njit(cache=True)
def _omari(both, in_a, in_b, n_pairs):
    expected = in_a * in_b / n_pairs if n_pairs > 0 else 0.0
    maximum = 0.5 * (in_a + in_b)
    if abs(maximum - expected) <= 1e-12 * max(1.0, maximum):
        return 0.0 if (abs(in_a - both) <= 1e-9 and abs(in_b - both) <= 1e-9) else 1.0
    return 1.0 - (both - expected) / (maximum - expected)


@template
def cm_loss(kind, m, sex, sep, stx, stp, sjx, sjp, a, b):
    """Loss of the estimate against one sample from the six contingency sums."""
    if FAMILY == LINEAR:
        if kind == BINDER:
            return a * (stp - sjp) + b * (sep - sjp)
        if m <= 0:
            return 0.0
        return (a * stx + (2.0 - a) * sex - 2.0 * sjx) / m   # VI
    if m <= 0:
        return 0.0
    if kind == OMARI:
        return _omari(sjp, stp, sep, 0.5 * m * (m - 1.0))
    log_m = math.log(m)
    h_e = max(log_m - sex / m, 0.0)
    h_t = max(log_m - stx / m, 0.0)
    h_j = max(log_m - sjx / m, 0.0)
    if kind == NVI:
        if h_j <= 1e-15:
            return 0.0
        return min(max((2.0 * h_j - h_e - h_t) / h_j, 0.0), 1.0)
    top = max(h_e, h_t)  # NID
    if top <= 1e-15:
        return 0.0
    return min(max((h_j - min(h_e, h_t)) / top, 0.0), 1.0)


@template(nogil=True)
def cm_losses(candidates, samples, kind, a, b, xl):
    """(C, T) losses of each candidate (labels ``0..K-1``) against each sample.

    ``xl`` is ``xlogx_table(n + 2)``, passed in (computed by the caller) so that the
    kernel itself only adds, multiplies and compares for Binder and VI.
    """
    n_candidates, n = candidates.shape
    n_samples = samples.shape[0]
    out = np.zeros((n_candidates, n_samples))
    # largest labels by loops: ``.max()`` compiles numba's reduction, seconds per array type
    n_blocks = 0
    for t in range(n_samples):
        for i in range(n):
            if samples[t, i] >= n_blocks:
                n_blocks = samples[t, i] + 1
    for r in range(n_candidates):
        row = candidates[r]
        n_clusters = 0
        for i in range(n):
            if row[i] >= n_clusters:
                n_clusters = row[i] + 1
        sizes = np.zeros(n_clusters, np.int64)
        for i in range(n):
            sizes[row[i]] += 1
        sex = 0.0
        sep = 0.0
        for k in range(n_clusters):
            sex += xl[sizes[k]]
            sep += 0.5 * sizes[k] * (sizes[k] - 1.0)
        table = np.zeros((n_clusters, n_blocks), np.int64)
        block_sizes = np.zeros(n_blocks, np.int64)
        for t in range(n_samples):
            for i in range(n):
                table[row[i], samples[t, i]] += 1
                block_sizes[samples[t, i]] += 1
            sjx = 0.0
            sjp = 0.0
            stx = 0.0
            stp = 0.0
            for i in range(n):
                k, blk = row[i], samples[t, i]
                u = table[k, blk]
                if u > 0:
                    sjx += xl[u]
                    sjp += 0.5 * u * (u - 1.0)
                    table[k, blk] = 0
                v = block_sizes[blk]
                if v > 0:
                    stx += xl[v]
                    stp += 0.5 * v * (v - 1.0)
                    block_sizes[blk] = 0
            out[r, t] = cm_loss(kind, float(n), sex, sep, stx, stp, sjx, sjp, a, b)
    return out


@template(nogil=True)
def psm_losses(candidates, pairwise, kind, a, b):
    """Pairwise-loss value of each candidate (labels ``0..K-1``) given ``P``."""
    n_candidates, n = candidates.shape
    out = np.zeros(n_candidates)
    total = 0.0
    row_sums = np.zeros(n)
    for i in range(n):
        for j in range(n):
            row_sums[i] += pairwise[i, j]
            if j > i:
                total += pairwise[i, j]
    for r in range(n_candidates):
        row = candidates[r]
        together = 0.0
        weighted = 0.0
        value = 0.0
        for i in range(n):
            size = 0
            mass = 0.0
            for j in range(n):
                if row[j] == row[i]:
                    size += 1
                    mass += pairwise[i, j]
                    if j > i:
                        together += 1.0
                        weighted += pairwise[i, j]
            if kind == VI_LB:
                value += math.log(size) + math.log(row_sums[i]) - 2.0 * math.log(mass)
        if kind == BINDER_PSM:
            out[r] = a * total + b * together - (a + b) * weighted
        elif kind == OMARI_APPROX:
            out[r] = _omari(weighted, total, together, 0.5 * n * (n - 1.0))
        else:
            out[r] = value / n
    return out


@template
def _update(kind, i, k, delta, labels, sizes, counts, samples_t, block_counts, stats,
            pairwise, mass, xl_step):
    """Add (``delta = 1``) or remove (``-1``) element ``i`` to/from slot ``k``.

    ``stats`` = [m, SEx, SEp, (contingency: per sample STx, STp, SJx, SJp
    follow in the 2-D arrays) | pairwise: SP, SCP]; ``mass[j]`` is
    ``sum_{l in c(j)} P_jl`` (VI.lb); ``xl_step[u] = xl[u + 1] - xl[u]``.
    """
    n = labels.shape[0]
    if delta < 0:
        labels[i] = -1
        sizes[k] -= 1
    size = sizes[k]  # size without i
    stats[0, 0] += delta
    sign = 1.0 if delta > 0 else -1.0
    stats[0, 1] += sign * xl_step[size]
    stats[0, 2] += sign * size
    if FAMILY != PAIRWISE:
        # Per sample, only the sums its loss reads (Binder: the pair counts, VI: the
        # x log x sums); adding ``-d`` is subtracting ``d``, bit for bit. Views hoisted
        # out of the loop: it is most of the search's time when it runs interpreted
        # (each operation an interpreted step).
        row = samples_t[i]
        counts_k = counts[k]
        with_x = FAMILY != LINEAR or kind != BINDER
        with_pairs = FAMILY != LINEAR or kind == BINDER
        st_x = stats[1:, 0]
        st_p = stats[1:, 1]
        sj_x = stats[1:, 2]
        sj_p = stats[1:, 3]
        removing = delta < 0
        for t in range(samples_t.shape[1]):
            blk = row[t]
            if removing:
                u = counts_k[t, blk] - 1
                v = block_counts[t, blk] - 1
                counts_k[t, blk] = u
                block_counts[t, blk] = v
                if with_x:
                    st_x[t] -= xl_step[v]
                    sj_x[t] -= xl_step[u]
                if with_pairs:
                    st_p[t] -= v
                    sj_p[t] -= u
            else:
                u = counts_k[t, blk]
                v = block_counts[t, blk]
                counts_k[t, blk] = u + 1
                block_counts[t, blk] = v + 1
                if with_x:
                    st_x[t] += xl_step[v]
                    sj_x[t] += xl_step[u]
                if with_pairs:
                    st_p[t] += v
                    sj_p[t] += u
    else:
        together = 0.0
        for j in range(n):
            if j == i or labels[j] < 0:
                continue
            stats[1, 0] += sign * pairwise[i, j]
            if labels[j] == k:
                together += pairwise[i, j]
                mass[j] += sign * pairwise[i, j]
        stats[1, 1] += sign * together
        mass[i] = 1.0 + together if delta > 0 else 0.0
    if delta > 0:
        labels[i] = k
        sizes[k] += 1


@template
def _costs(kind, i, labels, sizes, n_slots, counts, samples_t, weights, block_counts, stats,
           pairwise, mass, xl, xl_step, a, b, out, scratch):
    """Loss (up to a constant common to all slots) if ``i`` joins each slot.

    Fills ``out[:n_slots]`` (empty slots: any value) and returns the cost of a
    new cluster. ``weights``: the samples' weights (Binder and VI), empty for
    equal weights (the mean over the samples).
    """
    n = labels.shape[0]
    m = stats[0, 0] + 1.0
    if FAMILY == LINEAR:
        # linear in the sums: only the estimate's terms differ between slots
        n_samples = samples_t.shape[1]
        row = samples_t[i]
        for k in range(n_slots):
            size = sizes[k]
            if size == 0:
                continue
            counts_k = counts[k]
            cross = 0.0
            if weights.shape[0] > 0:    # a weighted mean: the weights sum to 1
                for t in range(n_samples):
                    u = counts_k[t, row[t]]
                    cross += weights[t] * (float(u) if kind == BINDER else xl_step[u])
                if kind == BINDER:
                    out[k] = b * size - (a + b) * cross
                else:
                    out[k] = (2.0 - a) * xl_step[size] - 2.0 * cross
            elif kind == BINDER:
                for t in range(n_samples):
                    cross += counts_k[t, row[t]]
                out[k] = b * size - (a + b) * cross / n_samples
            else:
                for t in range(n_samples):
                    u = counts_k[t, row[t]]
                    cross += xl_step[u]
                out[k] = (2.0 - a) * xl_step[size] - 2.0 * cross / n_samples
        return 0.0
    if FAMILY == ENTROPY:
        n_samples = samples_t.shape[1]
        # the reference side gains i whatever slot it joins
        for t in range(n_samples):
            v = block_counts[t, samples_t[i, t]]
            scratch[t, 0] = stats[1 + t, 0] + xl[v + 1] - xl[v]
            scratch[t, 1] = stats[1 + t, 1] + v
        new = 0.0
        for t in range(n_samples):
            new += cm_loss(kind, m, stats[0, 1], stats[0, 2], scratch[t, 0], scratch[t, 1],
                           stats[1 + t, 2], stats[1 + t, 3], a, b)
        for k in range(n_slots):
            size = sizes[k]
            if size == 0:
                continue
            sex = stats[0, 1] + xl[size + 1] - xl[size]
            sep = stats[0, 2] + size
            total = 0.0
            for t in range(n_samples):
                u = counts[k, t, samples_t[i, t]]
                total += cm_loss(kind, m, sex, sep, scratch[t, 0], scratch[t, 1],
                                 stats[1 + t, 2] + xl[u + 1] - xl[u], stats[1 + t, 3] + u,
                                 a, b)
            out[k] = total / n_samples
        return new / n_samples
    # pairwise kinds: r_k = sum_{j in k} P_ij (and the VI.lb mass changes) in one pass
    for k in range(n_slots):
        out[k] = 0.0
        scratch[k, 0] = 0.0
    row_mass = 0.0
    for j in range(n):
        k = labels[j]
        if k < 0 or j == i:
            continue
        p = pairwise[i, j]
        row_mass += p
        scratch[k, 0] += p
        if kind == VI_LB:
            out[k] -= 2.0 * (math.log(mass[j] + p) - math.log(mass[j]))
    if kind == BINDER_PSM:
        for k in range(n_slots):
            out[k] = b * sizes[k] - (a + b) * scratch[k, 0]
        return 0.0
    if kind == VI_LB:
        for k in range(n_slots):
            size = sizes[k]
            if size > 0:
                out[k] += (size * (math.log(size + 1.0) - math.log(size)) + math.log(size + 1.0)
                           - 2.0 * math.log(1.0 + scratch[k, 0]))
        return 0.0
    sp = stats[1, 0] + row_mass  # OMARI_APPROX
    n_pairs = 0.5 * m * (m - 1.0)
    for k in range(n_slots):
        if sizes[k] > 0:
            out[k] = _omari(stats[1, 1] + scratch[k, 0], sp, stats[0, 2] + sizes[k], n_pairs)
    return _omari(stats[1, 1], sp, stats[0, 2], n_pairs)


@njit(cache=True)
def _choose(sizes, n_slots, costs, new_cost, current, n_clusters, max_clusters):
    """Cheapest slot: ``current`` kept on ties, a new cluster only if strictly better.

    Returns the slot, ``n_slots`` meaning "a new cluster".
    """
    if current >= 0 and sizes[current] == 0:
        costs[current] = new_cost  # leaving a singleton: staying is a new cluster
    best_slot = current
    best = costs[current] if current >= 0 else np.inf
    for k in range(n_slots):
        if sizes[k] == 0:
            continue
        if best_slot < 0 or costs[k] < best - 1e-12 * max(1.0, abs(best)):
            best = costs[k]
            best_slot = k
    if current >= 0 and sizes[current] == 0:
        return best_slot
    if n_clusters < max_clusters and (best_slot < 0 or
                                      new_cost < best - 1e-12 * max(1.0, abs(best))):
        return n_slots
    return best_slot


@template
def _loss_value(kind, labels, sizes, stats, weights, pairwise, mass, a, b):
    """Loss of the allocated elements from the search state (``O(T)`` or ``O(n^2)``)."""
    m = stats[0, 0]
    if FAMILY != PAIRWISE:
        n_samples = stats.shape[0] - 1
        total = 0.0
        for t in range(n_samples):
            value = cm_loss(kind, m, stats[0, 1], stats[0, 2], stats[1 + t, 0],
                            stats[1 + t, 1], stats[1 + t, 2], stats[1 + t, 3], a, b)
            total += value if weights.shape[0] == 0 else weights[t] * value
        return total / n_samples if weights.shape[0] == 0 else total
    if kind == BINDER_PSM:
        return a * stats[1, 0] + b * stats[0, 2] - (a + b) * stats[1, 1]
    if kind == OMARI_APPROX:
        return _omari(stats[1, 1], stats[1, 0], stats[0, 2], 0.5 * m * (m - 1.0))
    n = labels.shape[0]  # VI_LB
    value = 0.0
    for i in range(n):
        if labels[i] < 0:
            continue
        row = 0.0
        for j in range(n):
            if labels[j] >= 0:
                row += pairwise[i, j]
        value += math.log(sizes[labels[i]]) + math.log(row) - 2.0 * math.log(mass[i])
    return value / m if m > 0 else 0.0


@template(nogil=True)
def greedy_search(kind, labels, order, pairwise, samples_t, weights, n_sample_blocks,
                  max_sweeps, max_clusters, a, b, xl):
    """SALSO-style search, in place on ``labels`` (``-1`` = not yet allocated).

    1. Sequential allocation: elements still at ``-1`` join, in ``order``, the
       cluster (or a new one, while fewer than ``max_clusters``) that least
       increases the loss of the elements allocated so far.
    2. Sweetening: sweep over ``order`` moving each element to its best
       cluster (strict improvements only) until a sweep changes nothing or
       ``max_sweeps`` sweeps are done. Every move lowers the expected loss.

    ``samples_t`` is element-major (n, T) for the contingency kinds, ``weights``
    the samples' weights summing to 1 (Binder and VI; empty: equal weights); labels
    already set must lie in ``0..n-1`` and number at most ``max_clusters``.
    ``xl`` is ``xlogx_table(n + 2)`` (as in :func:`cm_losses`). Returns ``(labels,
    loss)``: the loss of the result, as :func:`cm_losses` / :func:`psm_losses`
    compute it.
    """
    n = labels.shape[0]
    n_samples = samples_t.shape[1] if FAMILY != PAIRWISE else 0
    capacity = min(n, max(8, 2 * n_sample_blocks))
    for i in range(n):
        if labels[i] + 1 > capacity:
            capacity = labels[i] + 1
    sizes = np.zeros(n, np.int64)
    if FAMILY != PAIRWISE:
        counts = np.zeros((capacity, n_samples, n_sample_blocks), np.int32)
        block_counts = np.zeros((n_samples, n_sample_blocks), np.int32)
        stats = np.zeros((1 + n_samples, 4))
        scratch = np.zeros((n_samples, 2))
    else:
        counts = np.zeros((1, 1, 1), np.int32)
        block_counts = np.zeros((1, 1), np.int32)
        stats = np.zeros((2, 4))
        scratch = np.zeros((n, 1))
    mass = np.zeros(n)
    costs = np.zeros(n)
    # the x log x steps the moves add, each rounded once (as ``xl[u + 1] - xl[u]`` was)
    xl_step = np.zeros(n + 1)
    for u in range(n + 1):
        xl_step[u] = xl[u + 1] - xl[u]
    preset = labels.copy()
    labels[:] = -1
    # typed counters and deltas: a literal argument (``0``, ``1``, ``-1``) would
    # compile each callee once more per literal value
    n_slots = np.int64(0)
    n_clusters = np.int64(0)
    add = np.int64(1)
    remove = np.int64(-1)
    if FAMILY != PAIRWISE:
        # bulk start: count, then the sums from the tables (O(n T) increments)
        for i in range(n):
            k = preset[i]
            if k < 0:
                continue
            labels[i] = k
            sizes[k] += 1
            n_slots = max(n_slots, k + 1)
            row = samples_t[i]
            counts_k = counts[k]
            for t in range(n_samples):
                blk = row[t]
                counts_k[t, blk] += 1
                block_counts[t, blk] += 1
        for k in range(n_slots):
            if sizes[k] > 0:
                n_clusters += 1
                stats[0, 0] += sizes[k]
                stats[0, 1] += xl[sizes[k]]
                stats[0, 2] += 0.5 * sizes[k] * (sizes[k] - 1.0)
        # per sample, the sums its loss reads (as in _update), in local sums; a count
        # below 2 adds 0 (x log x and pairs) to a sum >= 0: skipped, the same sums
        with_x = FAMILY != LINEAR or kind != BINDER
        with_pairs = FAMILY != LINEAR or kind == BINDER
        for t in range(n_samples):
            stx = 0.0
            stp = 0.0
            sjx = 0.0
            sjp = 0.0
            for blk in range(n_sample_blocks):
                v = block_counts[t, blk]
                if v < 2:
                    continue
                if with_x:
                    stx += xl[v]
                if with_pairs:
                    stp += 0.5 * v * (v - 1.0)
                for k in range(n_slots):
                    u = counts[k, t, blk]
                    if u < 2:
                        continue
                    if with_x:
                        sjx += xl[u]
                    if with_pairs:
                        sjp += 0.5 * u * (u - 1.0)
            stats[1 + t, 0] = stx
            stats[1 + t, 1] = stp
            stats[1 + t, 2] = sjx
            stats[1 + t, 3] = sjp
    else:
        for i in range(n):
            if preset[i] >= 0:
                if sizes[preset[i]] == 0:
                    n_clusters += 1
                _update(kind, i, preset[i], add, labels, sizes, counts, samples_t,
                        block_counts, stats, pairwise, mass, xl_step)
                n_slots = max(n_slots, preset[i] + 1)
    for step in range(max_sweeps + 1):
        changed = False
        for i in order:
            current = labels[i]
            if step == 0 and current >= 0:
                continue  # allocation pass: only the unallocated elements
            if current >= 0:
                _update(kind, i, current, remove, labels, sizes, counts, samples_t, block_counts,
                        stats, pairwise, mass, xl_step)
                if sizes[current] == 0:
                    n_clusters -= 1
            new_cost = _costs(kind, i, labels, sizes, n_slots, counts, samples_t, weights,
                              block_counts, stats, pairwise, mass, xl, xl_step, a, b, costs,
                              scratch)
            slot = _choose(sizes, n_slots, costs, new_cost, current, n_clusters, max_clusters)
            if slot == n_slots:  # a new cluster: the first empty slot
                slot = np.int64(0)
                while slot < n_slots and sizes[slot] > 0:
                    slot += 1
                if slot == n_slots:
                    n_slots += 1
                if FAMILY != PAIRWISE and slot >= counts.shape[0]:
                    grown = np.zeros((min(n, 2 * counts.shape[0]), n_samples,
                                      n_sample_blocks), np.int32)
                    # loops: numba's slice copy compiles for seconds
                    for old_slot in range(counts.shape[0]):
                        for sample in range(n_samples):
                            for block in range(n_sample_blocks):
                                grown[old_slot, sample, block] = counts[old_slot, sample, block]
                    counts = grown
            if sizes[slot] == 0:
                n_clusters += 1
            _update(kind, i, slot, add, labels, sizes, counts, samples_t, block_counts,
                    stats, pairwise, mass, xl_step)
            changed |= slot != current
        if step > 0 and not changed:
            break
    return labels, _loss_value(kind, labels, sizes, stats, weights, pairwise, mass, a, b)


def loss_kernels(kind):
    """The kernels of the family of loss ``kind`` (``BINDER``, ``VI``, ...), compiled on first use.

    Returns a namespace with ``cm_losses(candidates, samples, kind, a, b)``,
    ``psm_losses(candidates, pairwise, kind, a, b)`` and ``greedy_search(kind, labels,
    order, pairwise, samples_t, weights, n_sample_blocks, max_sweeps, max_clusters, a, b)`` (and
    their helpers), compiled for the family of ``kind`` only (Binder and VI; omARI, NVI
    and NID; the pairwise losses); memoised, and cached on disk per family.
    """
    kind = int(kind)
    if not 0 <= kind <= VI_LB:
        raise ValueError(f"Unknown loss kind {kind}.")
    family = (PAIRWISE if kind >= N_CONTINGENCY_KINDS
              else LINEAR if kind in (BINDER, VI) else ENTROPY)
    return specialise(globals(), {"FAMILY": family})


__all__ = ["loss_kernels", "BINDER", "VI", "OMARI", "NVI", "NID", "BINDER_PSM",
           "OMARI_APPROX", "VI_LB", "N_CONTINGENCY_KINDS"]
