"""Kernel templates of Bayesian hierarchical clustering (greedy BHC, rose trees, filters).

The templates call a conjugate likelihood's protocol functions by the names
``lik_reset``, ``lik_add``, ``lik_log_predictive`` and ``lik_log_cluster``
(:mod:`sklearn_trellis.models.likelihood`); :func:`specialise` compiles them
for one likelihood through :mod:`sklearn_trellis._core.specialise`.

Every cluster ``B`` carries the Dirichlet-process quantities of Heller &
Ghahramani (2005), in log space:

- ``e(B) = log alpha + log Gamma(|B|) + log m(X_B)``, the DP cluster potential;
- ``S(B) = d(B) p(X_B | T_B)``: the sum over the partitions of ``B``
  consistent with its tree of ``prod exp(e)``, ``S = exp(e) + S(L) S(R)``;
- ``d(B)``: the same sum with ``m = 1``, ``d = alpha Gamma(|B|) + d(L) d(R)``;
- ``r(B) = exp(e(B)) / S(B)``, the merge posterior.

A rose-tree node's recursions take the product over all its children
(``P = prod S(child)``, ``Q = prod d(child)``). Statistics of a merged
cluster are those of its larger part plus the items of the smaller one, added
one by one with ``lik_add`` (no likelihood needs a "merge statistics" kernel).
"""

import math

import numpy as np
from numba import njit

from ..._core.compilation import CALLEE_ONLY
from ..._core.specialise import specialise as _specialise, template
from ..._core.subsets import logaddexp

#: Tree shapes, bound to ``TREE`` when the templates are compiled (:func:`specialise`):
#: numba prunes the other shape's branches, so a binary fit compiles no rose-tree code.
BINARY, ROSE = 0, 1

#: Merge kinds of the rose-tree greedy search (Blundell, Teh & Heller 2010).
JOIN = 0           # new node with children {a, b}
ABSORB = 1         # b becomes one more child of a
ABSORBED = 2       # a becomes one more child of b
COLLAPSE = 3       # new node with the children of a and of b


@template(inline="always")
def merged_log_marginal(params, data, stats, shared, work, scratch, slot_big, head_small,
                        next_item):
    """``log m`` of a cluster's statistics (row ``slot_big``) plus a list of items, in ``scratch``."""
    for col in range(stats.shape[1]):  # a loop: numba's slice copy compiles for seconds
        stats[scratch, col] = stats[slot_big, col]
    item = head_small
    while item >= 0:
        lik_add(params, data, stats, shared, work, scratch, item)
        item = next_item[item]
    return lik_log_cluster(params, stats, shared, scratch)


@template(**CALLEE_ONLY)
def pair_score(params, data, stats, shared, work, scratch, a, b, log_alpha, size, slot, head,
               next_item, log_s, log_d, log_p, log_q, out):
    """Score of merging active clusters ``a`` and ``b``; ``out = [kind, log m, S, d]``.

    Binary trees: ``log r`` of the merge (Heller & Ghahramani's criterion).
    Rose trees: the log likelihood ratio
    ``log p(X|T_m) - log p(X_a|T_a) - log p(X_b|T_b)`` of the best of join,
    absorb and collapse (Blundell, Teh & Heller's criterion). The shape is the bound ``TREE``.
    """
    big, small = (a, b) if size[a] >= size[b] else (b, a)
    log_m = merged_log_marginal(params, data, stats, shared, work, scratch, slot[big],
                                head[slot[small]], next_item)
    n_k = size[a] + size[b]
    e_prior = log_alpha + math.lgamma(n_k)
    e = e_prior + log_m
    out[1] = log_m
    if TREE == BINARY:
        s_k = logaddexp(e, log_s[a] + log_s[b])
        out[0] = JOIN
        out[2] = s_k
        out[3] = logaddexp(e_prior, log_d[a] + log_d[b])
        return e - s_k
    n_leaves = next_item.size   # one per item: nodes below it are leaves
    base = (log_s[a] - log_d[a]) + (log_s[b] - log_d[b])
    best = -np.inf
    for kind in range(4):
        if kind == JOIN:
            p, q = log_s[a] + log_s[b], log_d[a] + log_d[b]
        elif kind == ABSORB:
            if a < n_leaves:
                continue
            p, q = log_p[a] + log_s[b], log_q[a] + log_d[b]
        elif kind == ABSORBED:
            if b < n_leaves:
                continue
            p, q = log_s[a] + log_p[b], log_d[a] + log_q[b]
        else:
            if a < n_leaves or b < n_leaves:
                continue
            p, q = log_p[a] + log_p[b], log_q[a] + log_q[b]
        s_k = logaddexp(e, p)
        d_k = logaddexp(e_prior, q)
        score = (s_k - d_k) - base
        if score > best:
            best = score
            out[0] = kind
            out[2] = s_k
            out[3] = d_k
            out[4] = p
            out[5] = q
    return best


#: Partners kept per cluster by the greedy search (see :func:`greedy_search`).
N_CANDIDATES = 16


#: The same merge seen from the other cluster, by kind (absorb and absorbed swap).
FLIPPED_KIND = (JOIN, ABSORBED, ABSORB, COLLAPSE)


@njit(cache=True, **CALLEE_ONLY)
def insert_candidate(c, x, score, kind, cand_node, cand_score, cand_kind, cand_count,
                     threshold):
    """Offer partner ``x`` to the candidate list of ``c``; a full list drops its lowest entry.

    Invariant: every active partner of ``c`` that is not listed scores at most
    ``threshold[c]``, and every listed one at least that much, so the best
    listed active partner is the best partner while the list is not empty.
    """
    if score <= threshold[c]:
        return
    count = cand_count[c]
    if count < cand_node.shape[1]:
        cand_node[c, count] = x
        cand_score[c, count] = score
        cand_kind[c, count] = kind
        cand_count[c] = count + 1
        return
    low = 0
    for t in range(1, count):
        if cand_score[c, t] < cand_score[c, low]:
            low = t
    if score <= cand_score[c, low]:
        threshold[c] = max(threshold[c], score)
        return
    threshold[c] = max(threshold[c], cand_score[c, low])
    cand_node[c, low] = x
    cand_score[c, low] = score
    cand_kind[c, low] = kind


@njit(cache=True, **CALLEE_ONLY)
def best_from_list(c, active, cand_node, cand_score, cand_kind, cand_count, best_score,
                   best_node, best_kind):
    """Drop the merged partners of ``c``'s list and take its best; False if it is empty."""
    kept = 0
    best_node[c] = -1
    best_score[c] = -np.inf
    for t in range(cand_count[c]):
        x = cand_node[c, t]
        if not active[x]:
            continue
        cand_node[c, kept] = x
        cand_score[c, kept] = cand_score[c, t]
        cand_kind[c, kept] = cand_kind[c, t]
        if best_node[c] < 0 or cand_score[c, kept] > best_score[c]:
            best_score[c] = cand_score[c, kept]
            best_node[c] = x
            best_kind[c] = cand_kind[c, kept]
        kept += 1
    cand_count[c] = kept
    return kept > 0


#: Order of the arrays in the greedy search's state tuple (see :func:`greedy_state`).
GREEDY_STATE = ("stats", "shared", "work", "out", "size", "slot", "head", "tail", "next_item",
                "log_s", "log_d", "log_p", "log_q", "best_score", "best_node", "best_kind",
                "cand_node", "cand_score", "cand_kind", "cand_count", "threshold", "active",
                "active_list", "position", "counters")

#: Entries of the state's ``counters``: active clusters, next node id, rescans.
N_ACTIVE, NEXT_NODE, N_RESCANS = 0, 1, 2


def greedy_state(n, n_stats, work_size):
    """The arrays of a greedy search over ``n`` rows, in :data:`GREEDY_STATE` order.

    Allocated by the caller so that the search can run in chunks (a fit with
    ``verbose`` reports between them) of :func:`greedy_search`: pair scores
    over consecutive row ranges, then merges until ``n - 1`` are made.
    Memory ``O(n)``.
    """
    n_nodes = 2 * n - 1
    counters = np.zeros(3, np.int64)
    counters[N_ACTIVE] = n
    counters[NEXT_NODE] = n
    return (np.zeros((n + 1, n_stats), np.float64), np.zeros(1, np.float64),
            np.zeros(max(1, work_size), np.float64), np.zeros(6, np.float64),
            np.zeros(n_nodes, np.int64), np.full(n_nodes, -1, np.int64),
            np.full(n + 1, -1, np.int64), np.full(n + 1, -1, np.int64),
            np.full(n, -1, np.int64), np.full(n_nodes, -np.inf), np.full(n_nodes, -np.inf),
            np.full(n_nodes, -np.inf), np.full(n_nodes, -np.inf), np.full(n_nodes, -np.inf),
            np.full(n_nodes, -1, np.int64), np.zeros(n_nodes, np.int64),
            np.full((n_nodes, N_CANDIDATES), -1, np.int64),
            np.full((n_nodes, N_CANDIDATES), -np.inf), np.zeros((n_nodes, N_CANDIDATES), np.int64),
            np.zeros(n_nodes, np.int64), np.full(n_nodes, -np.inf), np.zeros(n_nodes, np.bool_),
            np.empty(n, np.int64), np.full(n_nodes, -1, np.int64), counters)


@template
def greedy_search(params, data, log_alpha, state, start, stop, merges, kinds, max_merges):
    """One chunk of the greedy agglomeration (Heller & Ghahramani 2005, Algorithm 1).

    Called on consecutive row ranges ``[start, stop)`` covering ``[0, n)``
    with ``max_merges = 0``, then with ``start = stop = n`` until ``n - 1``
    merges are made. The first range makes every row its own cluster; each
    range scores the pairs ``(i, j)``, ``start <= i < stop``, ``j > i``, in the
    order of one call over all rows, offered to both ends; the last one picks
    every cluster's best partner. Then up to ``max_merges`` more merges: row
    ``t`` of ``merges`` joins nodes ``a`` and ``b`` into node ``n + t``
    (leaves are ``0..n-1``), ``kinds[t]`` is :data:`JOIN` for binary trees,
    or the rose-tree merge kind. Returns the number of merges made so far.

    A pair's score never changes while both clusters exist, so each active
    cluster keeps its :data:`N_CANDIDATES` best partners
    (:func:`insert_candidate`) and an upper bound of its best score. A new
    cluster is scored against every other one (and offered to their lists);
    a cluster whose best partner was merged keeps its old score as an upper
    bound and, when it reaches the top, takes the best partner still in its
    list, and is rescored against all clusters only once its list is empty.
    The merges are exactly those of the greedy algorithm; time ``O(n^2)``
    pair scores in all.

    The phases are one kernel: numba compiles each kernel's body and the
    likelihood code linked into it separately, so one kernel compiles in
    less time than three on a first fit.
    """
    (stats, shared, work, out, size, slot, head, tail, next_item, log_s, log_d, log_p, log_q,
     best_score, best_node, best_kind, cand_node, cand_score, cand_kind, cand_count, threshold,
     active, active_list, position, counters) = state
    n = data.shape[0]
    scratch = n
    if start == 0 and stop > 0:    # every row its own active cluster
        for i in range(n):
            lik_reset(params, stats, i)
            lik_add(params, data, stats, shared, work, i, i)
            slot[i] = i
            head[i] = i
            tail[i] = i
            size[i] = 1
            log_d[i] = log_alpha
            log_s[i] = log_alpha + lik_log_cluster(params, stats, shared, i)
            active[i] = True
            active_list[i] = i
            position[i] = i
    for i in range(start, stop):
        for j in range(i + 1, n):
            score = pair_score(params, data, stats, shared, work, scratch, i, j, log_alpha, size,
                               slot, head, next_item, log_s, log_d, log_p, log_q, out)
            kind = int(out[0])
            insert_candidate(i, j, score, kind, cand_node, cand_score, cand_kind, cand_count,
                             threshold)
            insert_candidate(j, i, score, FLIPPED_KIND[kind], cand_node, cand_score, cand_kind,
                             cand_count, threshold)
    if stop == n and stop > start:
        for i in range(n):
            best_from_list(i, active, cand_node, cand_score, cand_kind, cand_count, best_score,
                           best_node, best_kind)
    n_active = counters[N_ACTIVE]
    new = counters[NEXT_NODE]
    n_rescans = counters[N_RESCANS]
    made = 0
    while n_active > 1 and made < max_merges:
        c = active_list[0]
        for t in range(1, n_active):
            x = active_list[t]
            if best_score[x] > best_score[c]:
                c = x
        partner = best_node[c]
        if partner < 0 or not active[partner]:
            if not best_from_list(c, active, cand_node, cand_score, cand_kind, cand_count,
                                  best_score, best_node, best_kind):
                n_rescans += 1   # score c against all other active clusters, refill its list
                cand_count[c] = 0
                threshold[c] = -np.inf
                for t in range(n_active):
                    x = active_list[t]
                    if x == c:
                        continue
                    score = pair_score(params, data, stats, shared, work, scratch, c, x,
                                       log_alpha, size, slot, head, next_item, log_s,
                                       log_d, log_p, log_q, out)
                    insert_candidate(c, x, score, int(out[0]), cand_node, cand_score,
                                     cand_kind, cand_count, threshold)
                best_from_list(c, active, cand_node, cand_score, cand_kind, cand_count,
                               best_score, best_node, best_kind)
            continue
        # merge c and partner into node `new`, in c's slot
        pair_score(params, data, stats, shared, work, scratch, c, partner, log_alpha, size, slot,
                   head, next_item, log_s, log_d, log_p, log_q, out)
        kind = int(out[0])
        s_c = slot[c]
        s_p = slot[partner]
        for col in range(stats.shape[1]):
            stats[s_c, col] = stats[scratch, col]
        next_item[tail[s_c]] = head[s_p]
        tail[s_c] = tail[s_p]
        head[s_p] = -1
        slot[new] = s_c
        size[new] = size[c] + size[partner]
        n_k = size[new]
        e_prior = log_alpha + math.lgamma(n_k)
        e = e_prior + out[1]
        if TREE == BINARY or kind == JOIN:
            p, q = log_s[c] + log_s[partner], log_d[c] + log_d[partner]
        elif kind == ABSORB:
            p, q = log_p[c] + log_s[partner], log_q[c] + log_d[partner]
        elif kind == ABSORBED:
            p, q = log_s[c] + log_p[partner], log_d[c] + log_q[partner]
        else:
            p, q = log_p[c] + log_p[partner], log_q[c] + log_q[partner]
        log_p[new] = p
        log_q[new] = q
        log_s[new] = logaddexp(e, p)
        log_d[new] = logaddexp(e_prior, q)
        merges[new - n, 0] = c
        merges[new - n, 1] = partner
        kinds[new - n] = kind
        for x in (c, partner):
            active[x] = False
            t = position[x]
            last = active_list[n_active - 1]
            active_list[t] = last
            position[last] = t
            n_active -= 1
        active[new] = True
        active_list[n_active] = new
        position[new] = n_active
        n_active += 1
        for t in range(n_active - 1):
            x = active_list[t]
            score = pair_score(params, data, stats, shared, work, scratch, new, x, log_alpha,
                               size, slot, head, next_item, log_s, log_d, log_p, log_q, out)
            kind = int(out[0])
            insert_candidate(new, x, score, kind, cand_node, cand_score, cand_kind, cand_count,
                             threshold)
            insert_candidate(x, new, score, FLIPPED_KIND[kind], cand_node, cand_score, cand_kind,
                             cand_count, threshold)
            if score > best_score[x]:
                best_score[x] = score
                best_node[x] = new
                best_kind[x] = FLIPPED_KIND[kind]
        best_from_list(new, active, cand_node, cand_score, cand_kind, cand_count, best_score,
                       best_node, best_kind)
        new += 1
        made += 1
    counters[N_ACTIVE] = n_active
    counters[NEXT_NODE] = new
    counters[N_RESCANS] = n_rescans
    return new - n


def bottom_up_state(n, n_stats, work_size, extra_rows=0):
    """The arrays of :func:`_merge_into_larger_child` before any merge of an ``n``-leaf tree.

    ``(stats, shared, work, free, slot, size, head, tail, next_item)``: zeroed
    statistics rows, ``n // 2 + 2`` of them free (at most that many are
    alive at once) and listed in ``free`` from the last to row 0, then
    ``extra_rows`` more for the caller; over the tree's ``2 n - 1`` nodes no
    statistics row, size 1 and a one-item list per node. Built by NumPy and
    passed to the kernels: numba compiles each array allocation of a kernel
    separately (per dtype and dimension).
    """
    n_nodes = 2 * n - 1
    n_free = n // 2 + 2
    return (np.zeros((n_free + extra_rows, n_stats), np.float64), np.zeros(1, np.float64),
            np.zeros(max(1, work_size), np.float64),
            np.arange(n_free - 1, -1, -1, dtype=np.int64), np.full(n_nodes, -1, np.int64),
            np.ones(n_nodes, np.int64), np.arange(n_nodes, dtype=np.int64),
            np.arange(n_nodes, dtype=np.int64), np.full(n, -1, np.int64))


@template(inline="always")
def _merge_into_larger_child(params, data, stats, shared, work, children, t, slot, size, head,
                             tail, next_item, free, n_free):
    """Statistics row of merge ``t``'s node: its larger child's row plus the smaller child's items.

    The bottom-up recycling shared by :func:`tree_node_log_marginals` and
    :func:`grouped_log_predictives` (arrays from :func:`bottom_up_state`):
    ``slot[k]`` is node ``k``'s row (``-1`` for a leaf, which gets a fresh
    row from ``free[:n_free]``), the items of a
    node are the linked list ``head[k], next_item[...], ..., tail[k]``.
    Returns ``(row, n_free)``; the smaller child's row goes back to ``free``.
    """
    n = children.shape[0] + 1
    k = n + t
    a, b = children[t, 0], children[t, 1]
    if size[a] < size[b]:
        a, b = b, a
    if slot[a] >= 0:
        s = slot[a]
    else:   # a leaf: a fresh row
        n_free -= 1
        s = free[n_free]
        lik_reset(params, stats, s)
        lik_add(params, data, stats, shared, work, s, a)
    item = head[b]
    while item >= 0:
        lik_add(params, data, stats, shared, work, s, item)
        item = next_item[item]
    if slot[b] >= 0:
        free[n_free] = slot[b]
        n_free += 1
    slot[k] = s
    size[k] = size[a] + size[b]
    next_item[tail[a]] = head[b]
    head[k] = head[a]
    tail[k] = tail[b]
    return s, n_free


@template
def tree_node_log_marginals(params, data, children, state, out):
    """``log m(X_k)`` of every node of a ``children_`` tree, in ``out`` (leaves, then merges).

    Leaves are ``0..n-1`` (each row a cluster of its own), merge ``t`` is node
    ``n + t`` (children before parents). Bottom-up; a merge takes over the
    statistics of its larger child and adds the items of the smaller one, so
    each item is added ``O(log n)`` times and at most ``n / 2`` statistics
    rows are alive. ``state`` is :func:`bottom_up_state` ``(n, ...)``
    (overwritten).
    """
    n = children.shape[0] + 1
    stats, shared, work, free, slot, size, head, tail, next_item = state
    row = np.int64(0)   # the leaves in turn (typed, not a constant: one compiled callee)
    for i in range(n):
        lik_reset(params, stats, row)
        lik_add(params, data, stats, shared, work, row, i)
        out[i] = lik_log_cluster(params, stats, shared, row)
    n_free = free.size
    for t in range(n - 1):
        s, n_free = _merge_into_larger_child(params, data, stats, shared, work, children, t,
                                             slot, size, head, tail, next_item, free, n_free)
        out[n + t] = lik_log_cluster(params, stats, shared, s)


@template
def filter_items(params, data, items, part_items, part_starts, n_stats, work_size):
    """Part of every item of ``items`` for randomized BHC's filter step.

    Part ``p`` holds the sampled items ``part_items[part_starts[p]:part_starts[p + 1]]``;
    each item goes to the part under which its predictive density
    ``log p(x | X_part)`` is highest (Heller & Ghahramani 2005b, Algorithm 2,
    with two or more parts).
    """
    n_parts = part_starts.size - 1
    stats = np.zeros((n_parts, n_stats), np.float64)
    shared = np.zeros(1, np.float64)
    work = np.zeros(max(1, work_size), np.float64)
    for p in range(n_parts):
        lik_reset(params, stats, p)
        for t in range(part_starts[p], part_starts[p + 1]):
            lik_add(params, data, stats, shared, work, p, part_items[t])
    part = np.empty(items.size, np.int64)
    for t in range(items.size):
        i = items[t]
        best = -np.inf
        part[t] = 0
        for p in range(n_parts):
            value = lik_log_predictive(params, data, stats, shared, work, p, i)
            if value > best:
                best = value
                part[t] = p
    return part


@template
def grouped_log_predictives(params, data, new_data, children, log_weight, group, n_groups,
                            state):
    """``log sum_{k in g} w_k p(x | X_k)`` of every new row ``x`` and node group ``g``.

    ``log_weight[k]`` is ``log w_k`` (nodes at ``-inf`` are skipped) and
    ``group[k]`` its column. Nodes are visited bottom-up with the statistics
    recycling of :func:`tree_node_log_marginals` (``state`` is
    :func:`bottom_up_state` ``(n, ..., extra_rows=1)``, its last row is the
    leaves'); the output is ``(n_new, n_groups)``.
    """
    n = children.shape[0] + 1
    n_new = new_data.shape[0]
    result = np.full((n_new, n_groups), -np.inf)
    stats, shared, work, free, slot, size, head, tail, next_item = state
    leaf_row = stats.shape[0] - 1
    for i in range(n):
        if log_weight[i] > -np.inf:
            lik_reset(params, stats, leaf_row)
            lik_add(params, data, stats, shared, work, leaf_row, i)
            g = group[i]
            for j in range(n_new):
                result[j, g] = logaddexp(result[j, g], log_weight[i] + lik_log_predictive(
                    params, new_data, stats, shared, work, leaf_row, j))
    n_free = free.size
    for t in range(n - 1):
        k = n + t
        s, n_free = _merge_into_larger_child(params, data, stats, shared, work, children, t,
                                             slot, size, head, tail, next_item, free, n_free)
        if log_weight[k] > -np.inf:
            g = group[k]
            for j in range(n_new):
                result[j, g] = logaddexp(result[j, g], log_weight[k] + lik_log_predictive(
                    params, new_data, stats, shared, work, s, j))
    return result


def specialise(bindings, tree=BINARY):
    """The templates of this module compiled for one likelihood (``lik_*`` name -> function)
    and one tree shape (:data:`BINARY` or :data:`ROSE`)."""
    return _specialise(globals(), {**bindings, "TREE": tree})
