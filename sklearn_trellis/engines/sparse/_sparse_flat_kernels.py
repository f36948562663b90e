"""Numba kernels of the sparse flat trellis (Greenberg et al. 2018, Section 4, Appendix J).

Vertices are those of a :class:`~sklearn_trellis._core.family.ClusterFamily`:
numbered by non-decreasing size, members ``items[starts[v]:stops[v]]``, a
construction split ``(build_left[v], build_right[v])`` or ``-1``. ``e[v]`` is the
cluster log-potential of vertex ``v``; clusters outside the family have zero
potential, so only clusterings whose every cluster is a vertex count.

Two engines:

- *tree*: the family is the node set of one binary tree. A clustering
  consistent with the tree either takes node ``v`` whole or splits it into
  clusterings of its two children, so ``Z(v) = exp(e(v)) + Z(L) Z(R)`` and
  ``MAP(v) = max(e(v), MAP(L) + MAP(R))``, with an outside pass
  ``O(L) = O(v) Z(R)`` for the marginals; ``O(N)`` time and memory.
- *states*: any family closed under recursive complement (Fact 5; a union of
  seed trees is). Items are ranked; a *state* is a remainder set ``S`` of items
  still to cluster, and ``Z(S) = sum_B exp(e(B)) Z(S \\ B)`` over the vertices
  ``B`` subset of ``S`` that hold the lowest-ranked item of ``S`` (each
  clustering is counted once: its cluster of that item is removed first).
  ``S \\ B`` is split into its *components* (items linked when a vertex inside
  ``S \\ B`` holds both): no cluster can straddle two, so ``Z(S \\ B)`` is the
  product of the components' ``Z``, and the components are the states. This
  keeps independent parts of the data from multiplying the number of states
  (a single tree's states are its nodes). States are reached from the full
  set; each is stored as a bitset in rank space and identified by its 128-bit
  additive hash (the sum of the family's item codes) and size.
"""

import numpy as np
from numba import njit

from ..._core.labels import canonical_rows
from ..._core.subsets import logaddexp
from ..._core.union_find import find_root

#: Status codes of :func:`enumerate_states`.
STATES_OK = 0
STATES_CAP = 1
TRANSITIONS_CAP = 2


# --------------------------------------------------------------------- tree engine
@njit(cache=True)
def tree_inside(e, left, right, log_z, best, cut):
    """``log Z``, MAP value and "cut" choice of every vertex of a tree family, in place.

    The outputs come from NumPy (``sparse_flat._tree_inside``): numba would
    compile each allocation of a kernel separately, per dtype, on a first fit.
    """
    for v in range(e.size):
        a = left[v]
        if a < 0:
            log_z[v] = e[v]
            best[v] = e[v]
            cut[v] = False
            continue
        b = right[v]
        split_z = log_z[a] + log_z[b]
        log_z[v] = logaddexp(e[v], split_z)
        split_best = best[a] + best[b]
        # Ties go to the whole cluster (fewer clusters), as an arbitrary rule.
        if split_best > e[v]:
            best[v] = split_best
            cut[v] = True
        else:
            best[v] = e[v]
            cut[v] = False


@njit(cache=True)
def tree_cluster_log_marginals(e, log_z, left, right):
    """``log P(v is a cluster)`` for every vertex (outside pass from the root)."""
    n_vertices = e.size
    root = n_vertices - 1
    log_out = np.full(n_vertices, -np.inf)
    log_out[root] = 0.0
    out = np.empty(n_vertices, np.float64)
    for v in range(root, -1, -1):
        out[v] = e[v] + log_out[v] - log_z[root]
        a = left[v]
        if a >= 0:
            b = right[v]
            log_out[a] = log_out[v] + log_z[b]
            log_out[b] = log_out[v] + log_z[a]
    return out


@njit(cache=True)
def tree_map_vertices(cut, left, right):
    """Vertices of the MAP clustering of a tree family (from the ``cut`` choices)."""
    root = cut.size - 1
    stack = [root]
    out = []
    while len(stack) > 0:
        v = stack.pop()
        if cut[v]:
            stack.append(right[v])
            stack.append(left[v])
        else:
            out.append(v)
    return np.array(out, dtype=np.int64)


@njit(cache=True)
def tree_sample(e, log_z, left, right, items, starts, stops, n_items, uniforms):
    """Exact draws from a tree family: one row of ``uniforms`` (one per vertex) each.

    At node ``v`` the whole cluster is taken with probability
    ``exp(e(v) - log Z(v))``, otherwise both children are visited.
    """
    n_samples = uniforms.shape[0]
    root = e.size - 1
    cluster_of = np.empty((n_samples, n_items), np.int64)
    for s in range(n_samples):
        stack = [root]
        k = 0
        while len(stack) > 0:
            v = stack.pop()
            if left[v] < 0 or uniforms[s, v] < np.exp(e[v] - log_z[v]):
                for a in range(starts[v], stops[v]):
                    cluster_of[s, items[a]] = k
                k += 1
            else:
                stack.append(right[v])
                stack.append(left[v])
    return canonical_rows(cluster_of)




@njit(cache=True)
def tree_n_clusters(e, log_z, left, right, sizes):
    """``log Z_k(root)`` for ``k = 0..N`` (clusterings of the root into k clusters).

    A polynomial per vertex, the product of its children's plus ``e(v) x``:
    ``O(N**2)`` over a tree. Polynomials are in log space.
    """
    n_vertices = e.size
    root = n_vertices - 1
    n = sizes[root]
    # Keep only the polynomials still needed: a vertex's is freed at its parent.
    polys = [np.empty(0, np.float64) for _ in range(n_vertices)]
    for v in range(n_vertices):
        a = left[v]
        p = np.full(sizes[v] + 1, -np.inf)
        if a >= 0:
            b = right[v]
            pa = polys[a]
            pb = polys[b]
            for i in range(pa.size):
                if pa[i] == -np.inf:
                    continue
                for j in range(pb.size):
                    p[i + j] = logaddexp(p[i + j], pa[i] + pb[j])
            polys[a] = np.empty(0, np.float64)
            polys[b] = np.empty(0, np.float64)
        p[1] = logaddexp(p[1], e[v])
        polys[v] = p
    return polys[root][:n + 1]


# -------------------------------------------------------------------- state engine
@njit(cache=True, inline="always")
def _rank_span(items, start, stop, rank):
    """Lowest and highest rank of the items ``items[start:stop]``."""
    low = rank.size
    high = -1
    for a in range(start, stop):
        r = rank[items[a]]
        if r < low:
            low = r
        if r > high:
            high = r
    return low, high


@njit(cache=True)
def vertex_bitsets(items, starts, stops, rank, n_words):
    """Rank-space bitsets of the vertices, stored over their own word range.

    Returns ``(anchor, word_lo, word_ptr, words)``: ``anchor[v]`` is the lowest
    rank in ``v``; the words of ``v`` are ``words[word_ptr[v]:word_ptr[v + 1]]``
    and cover ranks ``64 * word_lo[v]`` onwards.
    """
    n_vertices = starts.size
    anchor = np.empty(n_vertices, np.int64)
    word_lo = np.empty(n_vertices, np.int64)
    word_ptr = np.zeros(n_vertices + 1, np.int64)
    word_hi = np.empty(n_vertices, np.int64)
    for v in range(n_vertices):
        low, high = _rank_span(items, starts[v], stops[v], rank)
        anchor[v] = low
        word_lo[v] = low >> 6
        word_hi[v] = high >> 6
        word_ptr[v + 1] = word_ptr[v] + word_hi[v] - word_lo[v] + 1
    words = np.zeros(word_ptr[n_vertices], np.uint64)
    for v in range(n_vertices):
        base = word_ptr[v] - word_lo[v]
        for a in range(starts[v], stops[v]):
            r = rank[items[a]]
            words[base + (r >> 6)] |= np.uint64(1) << np.uint64(r & 63)
    return anchor, word_lo, word_ptr, words


@njit(cache=True)
def rank_holes(items, starts, stops, rank):
    """Total number of ranks inside the vertices' rank spans that they miss.

    Removing a vertex that is not a contiguous rank range leaves holes ahead
    of the current item; fewer holes usually means far fewer remainder states.
    """
    total = 0
    for v in range(starts.size):
        low, high = _rank_span(items, starts[v], stops[v], rank)
        total += high - low + 1 - (stops[v] - starts[v])
    return total


@njit(cache=True, inline="always")
def _slot(h0, size, mask):
    return (h0 ^ (np.uint64(size) * np.uint64(0x9E3779B97F4A7C15))) & mask


@njit(cache=True)
def _rehash(slots, h0, h1, sizes, n_states):
    capacity = slots.size * 2
    new = np.full(capacity, -1, np.int64)
    mask = np.uint64(capacity - 1)
    for s in range(n_states):
        i = _slot(h0[s], sizes[s], mask)
        while new[i] >= 0:
            i = (i + np.uint64(1)) & mask
        new[i] = s
    return new


@njit(cache=True)
def _grow_1d(array, capacity):
    out = np.empty(capacity, array.dtype)
    for i in range(array.size):  # loops: numba's slice copy compiles for seconds
        out[i] = array[i]
    return out


@njit(cache=True)
def _grow_2d(array, capacity):
    out = np.empty((capacity, array.shape[1]), array.dtype)
    for i in range(array.shape[0]):
        for j in range(array.shape[1]):
            out[i, j] = array[i, j]
    return out


@njit(cache=True)
def enumerate_states(n_items, rank, codes, items, starts, stops, vertex_sizes, build_left,
                     build_right, anchor, word_lo, word_ptr, words, anchor_ptr, anchored,
                     max_states, max_transitions):
    """All connected remainder states reachable from the full set, with their transitions.

    From state ``S`` (lowest rank ``r``) each vertex ``B`` subset of ``S`` anchored
    at ``r`` is a transition; ``S \\ B`` splits into its *components* (items
    linked when a vertex inside ``S \\ B`` holds both), each a state, and
    ``Z(S \\ B)`` is the product of theirs (no cluster of a partition of
    ``S \\ B`` can straddle two components). On one seed tree the states are
    then the tree's nodes.

    Returns ``(status, n_states, n_transitions, state_size, trans_ptr,
    trans_vertex, child_ptr, children)``: the transitions of state ``s`` are
    ``trans_ptr[s]:trans_ptr[s + 1]``; transition ``t`` removes vertex
    ``trans_vertex[t]`` and leaves the states ``children[child_ptr[t]:child_ptr[t + 1]]``.
    State 0 is the full set. ``status`` is :data:`STATES_CAP` or
    :data:`TRANSITIONS_CAP` if a cap was reached.
    """
    n_vertices = starts.size
    n_words = (n_items + 63) >> 6
    item_of_rank = np.empty(n_items, np.int64)
    for i in range(n_items):
        item_of_rank[rank[i]] = i
    capacity = 64
    bits = np.zeros((capacity, n_words), np.uint64)
    h0 = np.empty(capacity, np.uint64)
    h1 = np.empty(capacity, np.uint64)
    size = np.empty(capacity, np.int64)
    low = np.empty(capacity, np.int64)
    trans_ptr = np.zeros(capacity + 1, np.int64)
    t_capacity = 256
    trans_vertex = np.empty(t_capacity, np.int64)
    child_ptr = np.zeros(t_capacity + 1, np.int64)
    c_capacity = 256
    children = np.empty(c_capacity, np.int64)
    slots = np.full(256, -1, np.int64)
    # scratch
    fits_s = np.zeros(n_vertices, np.bool_)
    fits_c = np.zeros(n_vertices, np.bool_)
    inside = np.empty(n_vertices, np.int64)
    in_b = np.zeros(n_items, np.bool_)
    parent = np.empty(n_items, np.int64)     # each item its own root (a loop: no np.arange
    for i in range(n_items):                 # to compile)
        parent[i] = i
    comp_of_root = np.full(n_items, -1, np.int64)
    comp_items = np.empty(n_items, np.int64)
    comp_bits = np.zeros((n_items, n_words), np.uint64)
    comp_h0 = np.zeros(n_items, np.uint64)
    comp_h1 = np.zeros(n_items, np.uint64)
    comp_size = np.zeros(n_items, np.int64)
    comp_low = np.zeros(n_items, np.int64)

    full0 = np.uint64(0)
    full1 = np.uint64(0)
    for i in range(n_items):
        full0 += codes[i, 0]
        full1 += codes[i, 1]
        r = rank[i]
        bits[0, r >> 6] |= np.uint64(1) << np.uint64(r & 63)
    h0[0] = full0
    h1[0] = full1
    size[0] = n_items
    low[0] = 0
    slots[_slot(full0, n_items, np.uint64(slots.size - 1))] = 0
    n_states = 1
    n_trans = 0
    n_children = 0
    status = STATES_OK
    s = 0
    while s < n_states and status == STATES_OK:
        trans_ptr[s] = n_trans
        # The vertices inside S, bottom-up over construction splits (children first).
        n_inside = 0
        for v in range(n_vertices):
            a = build_left[v]
            if a >= 0:
                fit = fits_s[a] and fits_s[build_right[v]]
            else:
                fit = True
                lo = word_lo[v]
                base = word_ptr[v]
                for w in range(word_ptr[v + 1] - base):
                    if words[base + w] & ~bits[s, lo + w]:
                        fit = False
                        break
            fits_s[v] = fit
            if fit:
                inside[n_inside] = v
                n_inside += 1
        r = low[s]
        for idx in range(anchor_ptr[r], anchor_ptr[r + 1]):
            b = anchored[idx]
            if not fits_s[b]:
                continue
            if n_trans >= max_transitions:
                status = TRANSITIONS_CAP
                break
            for x in range(starts[b], stops[b]):
                in_b[items[x]] = True
            # Components of S \ B: union the two sides of every vertex inside it.
            for q in range(n_inside):
                v = inside[q]
                a = build_left[v]
                if a >= 0:
                    fit = fits_c[a] and fits_c[build_right[v]]
                else:
                    fit = True
                    for x in range(starts[v], stops[v]):
                        if in_b[items[x]]:
                            fit = False
                            break
                fits_c[v] = fit
                if fit and vertex_sizes[v] > 1:
                    if a >= 0:
                        ra = find_root(parent, items[starts[a]])
                        rb = find_root(parent, items[starts[build_right[v]]])
                        if ra != rb:
                            parent[ra] = rb
                    else:
                        first = find_root(parent, items[starts[v]])
                        for x in range(starts[v] + 1, stops[v]):
                            other = find_root(parent, items[x])
                            if other != first:
                                parent[other] = first
            n_comp = 0
            n_left = 0
            for w in range(n_words):
                word = bits[s, w]
                while word:
                    bit = 0
                    while not (word >> np.uint64(bit)) & np.uint64(1):
                        bit += 1
                    word &= word - np.uint64(1)
                    rr = (w << 6) + bit
                    i = item_of_rank[rr]
                    if in_b[i]:
                        continue
                    root = find_root(parent, i)
                    c = comp_of_root[root]
                    if c < 0:
                        c = n_comp
                        n_comp += 1
                        comp_of_root[root] = c
                        comp_h0[c] = 0
                        comp_h1[c] = 0
                        comp_size[c] = 0
                        comp_low[c] = rr        # ranks come in increasing order
                        for ww in range(n_words):
                            comp_bits[c, ww] = 0
                    comp_bits[c, w] |= np.uint64(1) << np.uint64(bit)
                    comp_h0[c] += codes[i, 0]
                    comp_h1[c] += codes[i, 1]
                    comp_size[c] += 1
                    comp_items[n_left] = i
                    n_left += 1
            # Reset the scratch for the next transition.
            for q in range(n_left):
                i = comp_items[q]
                comp_of_root[find_root(parent, i)] = -1
            for q in range(n_left):
                parent[comp_items[q]] = comp_items[q]
            for x in range(starts[b], stops[b]):
                in_b[items[x]] = False
            for q in range(n_inside):
                fits_c[inside[q]] = False
            # Look up (or add) every component.
            if n_trans == t_capacity:
                t_capacity *= 2
                trans_vertex = _grow_1d(trans_vertex, t_capacity)
                child_ptr = _grow_1d(child_ptr, t_capacity + 1)
            trans_vertex[n_trans] = b
            child_ptr[n_trans] = n_children
            for c in range(n_comp):
                mask = np.uint64(slots.size - 1)
                k = _slot(comp_h0[c], comp_size[c], mask)
                found = -1
                while slots[k] >= 0:
                    q = slots[k]
                    if h0[q] == comp_h0[c] and h1[q] == comp_h1[c] and size[q] == comp_size[c]:
                        found = q
                        break
                    k = (k + np.uint64(1)) & mask
                if found < 0:
                    if n_states >= max_states:
                        status = STATES_CAP
                        break
                    if n_states == capacity:
                        capacity *= 2
                        bits = _grow_2d(bits, capacity)
                        h0 = _grow_1d(h0, capacity)
                        h1 = _grow_1d(h1, capacity)
                        size = _grow_1d(size, capacity)
                        low = _grow_1d(low, capacity)
                        trans_ptr = _grow_1d(trans_ptr, capacity + 1)
                    found = n_states
                    for w in range(n_words):
                        bits[found, w] = comp_bits[c, w]
                    h0[found] = comp_h0[c]
                    h1[found] = comp_h1[c]
                    size[found] = comp_size[c]
                    low[found] = comp_low[c]
                    slots[k] = found
                    n_states += 1
                    if 2 * n_states > slots.size:
                        slots = _rehash(slots, h0, h1, size, n_states)
                if n_children == c_capacity:
                    c_capacity *= 2
                    children = _grow_1d(children, c_capacity)
                children[n_children] = found
                n_children += 1
            if status != STATES_OK:
                break
            n_trans += 1
        if status != STATES_OK:
            break
        s += 1
    trans_ptr[n_states] = n_trans
    child_ptr[n_trans] = n_children
    return (status, n_states, n_trans, size[:n_states].copy(), trans_ptr[:n_states + 1].copy(),
            trans_vertex[:n_trans].copy(), child_ptr[:n_trans + 1].copy(),
            children[:n_children].copy())


@njit(cache=True, inline="always")
def _children_sum(table, child_ptr, children, t):
    total = 0.0
    for q in range(child_ptr[t], child_ptr[t + 1]):
        total += table[children[q]]
    return total


@njit(cache=True)
def states_inside(e, order, trans_ptr, trans_vertex, child_ptr, children):
    """``log Z``, MAP value and MAP transition of every state (smaller states first).

    ``order`` is ``np.argsort(state_size, kind="mergesort")``, sorted by NumPy
    (numba's sorts take seconds to compile; both are stable, so identical).
    """
    n_states = order.size
    log_z = np.full(n_states, -np.inf)
    best = np.full(n_states, -np.inf)
    back = np.full(n_states, -1, np.int64)
    terms = np.empty(trans_vertex.size, np.float64)
    for k in range(n_states):
        s = order[k]
        top = -np.inf
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            v = trans_vertex[t]
            value = e[v] + _children_sum(log_z, child_ptr, children, t)
            terms[t] = value
            if value > top:
                top = value
            value = e[v] + _children_sum(best, child_ptr, children, t)
            if value > best[s]:
                best[s] = value
                back[s] = t
        if top == -np.inf:
            continue
        acc = 0.0
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            acc += np.exp(terms[t] - top)
        log_z[s] = top + np.log(acc)
    return log_z, best, back


@njit(cache=True)
def states_cluster_log_marginals(e, log_z, order, trans_ptr, trans_vertex, child_ptr,
                                 children, n_vertices):
    """``log P(v is a cluster)`` for every vertex (outside pass, larger states first).

    ``order`` is ``np.argsort(-state_size, kind="mergesort")`` (see :func:`states_inside`).
    """
    n_states = order.size
    log_out = np.full(n_states, -np.inf)
    log_out[0] = 0.0
    out = np.full(n_vertices, -np.inf)
    for k in range(n_states):
        s = order[k]
        if log_out[s] == -np.inf:
            continue
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            v = trans_vertex[t]
            value = log_out[s] + e[v] + _children_sum(log_z, child_ptr, children, t)
            if value == -np.inf:
                continue
            out[v] = logaddexp(out[v], value)
            for q in range(child_ptr[t], child_ptr[t + 1]):
                c = children[q]
                log_out[c] = logaddexp(log_out[c], value - log_z[c])
    return out - log_z[0]


@njit(cache=True)
def states_map_vertices(back, trans_vertex, child_ptr, children):
    """Vertices of the MAP partition, following the MAP transitions from the full set."""
    out = []
    stack = [0]
    while len(stack) > 0:
        s = stack.pop()
        t = back[s]
        out.append(trans_vertex[t])
        for q in range(child_ptr[t], child_ptr[t + 1]):
            stack.append(children[q])
    return np.array(out, dtype=np.int64)


@njit(cache=True)
def states_sample(e, log_z, trans_ptr, trans_vertex, child_ptr, children, items, starts,
                  stops, n_items, uniforms):
    """Exact draws: in each state, remove vertex ``B`` with probability
    ``exp(e(B) + sum of the components' log Z - log Z(S))``, then sample every
    component; one uniform per cluster."""
    n_samples = uniforms.shape[0]
    cluster_of = np.empty((n_samples, n_items), np.int64)
    for q in range(n_samples):
        stack = [0]
        k = 0
        while len(stack) > 0:
            s = stack.pop()
            u = uniforms[q, k]
            acc = 0.0
            chosen = -1
            for t in range(trans_ptr[s], trans_ptr[s + 1]):
                p = np.exp(e[trans_vertex[t]] + _children_sum(log_z, child_ptr, children, t)
                           - log_z[s])
                if p > 0.0:
                    chosen = t      # the last possible one absorbs rounding
                acc += p
                if u < acc:
                    break
            v = trans_vertex[chosen]
            for a in range(starts[v], stops[v]):
                cluster_of[q, items[a]] = k
            k += 1
            for x in range(child_ptr[chosen], child_ptr[chosen + 1]):
                stack.append(children[x])
    return canonical_rows(cluster_of)


@njit(cache=True)
def states_n_clusters(e, state_size, order, trans_ptr, trans_vertex, child_ptr, children,
                      n_items):
    """``log Z_k`` of the full set for ``k = 0..N``: a log-space polynomial per state.

    ``order`` as in :func:`states_inside`.
    """
    n_states = state_size.size
    table = np.full((n_states, n_items + 1), -np.inf)
    poly = np.empty(n_items + 1, np.float64)
    scratch = np.empty(n_items + 1, np.float64)
    for k in range(n_states):
        s = order[k]
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            poly[:] = -np.inf
            poly[1] = e[trans_vertex[t]]
            degree = 1
            for q in range(child_ptr[t], child_ptr[t + 1]):
                c = children[q]
                scratch[:] = -np.inf
                for i in range(degree + 1):
                    if poly[i] == -np.inf:
                        continue
                    for j in range(state_size[c] + 1):
                        if table[c, j] > -np.inf:
                            scratch[i + j] = logaddexp(scratch[i + j], poly[i] + table[c, j])
                degree += state_size[c]
                for i in range(degree + 1):
                    poly[i] = scratch[i]
            for i in range(degree + 1):
                table[s, i] = logaddexp(table[s, i], poly[i])
    return table[0]


# ----------------------------------------------------------------- pair marginals
@njit(cache=True)
def push_down(marginals, build_left, build_right):
    """Weight on every pair of each vertex: its own marginal plus its build parents'.

    ``P(i ~ j) = sum_{B containing i, j} P(B)``; splitting each vertex's pairs
    into those across its construction split and those inside each part, the
    weight ``acc(v)`` reaching the cross pairs of ``v`` is ``P(v)`` plus the
    ``acc`` of every vertex built from ``v``.
    """
    acc = marginals.copy()
    for v in range(acc.size - 1, -1, -1):
        a = build_left[v]
        if a >= 0:
            acc[a] += acc[v]
            acc[build_right[v]] += acc[v]
    return acc


@njit(cache=True)
def pairwise_full(acc, items, starts, stops, build_left, build_right, n_items):
    """The ``(N, N)`` matrix of ``P(i ~ j)`` from :func:`push_down`'s weights."""
    out = np.zeros((n_items, n_items), np.float64)
    for v in range(acc.size):
        w = acc[v]
        if w == 0.0 or stops[v] - starts[v] < 2:
            continue
        a = build_left[v]
        if a >= 0:
            b = build_right[v]
            for x in range(starts[a], stops[a]):
                i = items[x]
                for y in range(starts[b], stops[b]):
                    j = items[y]
                    out[i, j] += w
                    out[j, i] += w
        else:
            for x in range(starts[v], stops[v]):
                i = items[x]
                for y in range(x + 1, stops[v]):
                    j = items[y]
                    out[i, j] += w
                    out[j, i] += w
    for i in range(n_items):
        out[i, i] = 1.0
    return out


@njit(cache=True)
def containment(query, items, starts, stops, build_left, build_right, n_items):
    """How many of the ``query`` items each vertex holds (bottom-up over splits)."""
    n_vertices = starts.size
    marked = np.zeros(n_items, np.bool_)
    for i in query:
        marked[i] = True
    count = np.zeros(n_vertices, np.int64)
    for v in range(n_vertices):
        a = build_left[v]
        if a >= 0:
            count[v] = count[a] + count[build_right[v]]
        else:
            for x in range(starts[v], stops[v]):
                if marked[items[x]]:
                    count[v] += 1
    return count


@njit(cache=True)
def pairwise_rows(acc, rows, items, starts, stops, build_left, build_right, n_items):
    """Rows ``P(i ~ .)`` for the items ``rows``: ``O(n_vertices + N)`` per row on trees."""
    n_vertices = starts.size
    out = np.zeros((rows.size, n_items), np.float64)
    query = np.empty(1, np.int64)
    for q in range(rows.size):
        i = rows[q]
        query[0] = i
        holds = containment(query, items, starts, stops, build_left, build_right, n_items)
        for v in range(n_vertices):
            w = acc[v]
            if holds[v] == 0 or w == 0.0 or stops[v] - starts[v] < 2:
                continue
            a = build_left[v]
            if a >= 0:
                other = build_right[v] if holds[a] else a
                for x in range(starts[other], stops[other]):
                    out[q, items[x]] += w
            else:
                for x in range(starts[v], stops[v]):
                    out[q, items[x]] += w
        out[q, i] = 1.0
    return out
