"""Numba kernels of the sparse flat trellis (Greenberg et al. 2018, Section 4, Appendix J).

Vertices are those of a :class:`~sklearn_trellis.trellis.family.ClusterFamily`:
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
  States are reached from the full set by these removals; each is stored as
  a bitset in rank space and identified by its 128-bit additive hash (the sum
  of the family's item codes, so ``hash(S \\ B) = hash(S) - hash(B)``) and size.
"""

import numpy as np
from numba import njit

#: Status codes of :func:`enumerate_states`.
STATES_OK = 0
STATES_CAP = 1
TRANSITIONS_CAP = 2


@njit(cache=True, inline="always")
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


# --------------------------------------------------------------------- tree engine
@njit(cache=True)
def tree_inside(e, left, right):
    """``log Z``, MAP value and "cut" choice of every vertex of a tree family."""
    n_vertices = e.size
    log_z = np.empty(n_vertices)
    best = np.empty(n_vertices)
    cut = np.zeros(n_vertices, np.bool_)
    for v in range(n_vertices):
        a = left[v]
        if a < 0:
            log_z[v] = e[v]
            best[v] = e[v]
            continue
        b = right[v]
        split_z = log_z[a] + log_z[b]
        log_z[v] = _logaddexp(e[v], split_z)
        split_best = best[a] + best[b]
        # Ties go to the whole cluster (fewer clusters), as an arbitrary rule.
        if split_best > e[v]:
            best[v] = split_best
            cut[v] = True
        else:
            best[v] = e[v]
    return log_z, best, cut


@njit(cache=True)
def tree_cluster_log_marginals(e, log_z, left, right):
    """``log P(v is a cluster)`` for every vertex (outside pass from the root)."""
    n_vertices = e.size
    root = n_vertices - 1
    log_out = np.full(n_vertices, -np.inf)
    log_out[root] = 0.0
    out = np.empty(n_vertices)
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
    return canonical_labels(cluster_of)


@njit(cache=True)
def canonical_labels(cluster_of):
    """Relabel each row in order of first appearance."""
    n_samples, n_items = cluster_of.shape
    out = np.empty_like(cluster_of)
    mapping = np.full(n_items, -1, np.int64)
    for s in range(n_samples):
        mapping[:] = -1
        k = 0
        for i in range(n_items):
            c = cluster_of[s, i]
            if mapping[c] < 0:
                mapping[c] = k
                k += 1
            out[s, i] = mapping[c]
    return out


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
    polys = [np.empty(0) for _ in range(n_vertices)]
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
                    p[i + j] = _logaddexp(p[i + j], pa[i] + pb[j])
            polys[a] = np.empty(0)
            polys[b] = np.empty(0)
        p[1] = _logaddexp(p[1], e[v])
        polys[v] = p
    return polys[root][:n + 1]


# -------------------------------------------------------------------- state engine
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
        low = rank.size
        high = -1
        for a in range(starts[v], stops[v]):
            r = rank[items[a]]
            if r < low:
                low = r
            if r > high:
                high = r
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
        low = rank.size
        high = -1
        for a in range(starts[v], stops[v]):
            r = rank[items[a]]
            if r < low:
                low = r
            if r > high:
                high = r
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
    out[:array.size] = array
    return out


@njit(cache=True)
def _grow_2d(array, capacity):
    out = np.empty((capacity, array.shape[1]), array.dtype)
    out[:array.shape[0]] = array
    return out


@njit(cache=True)
def enumerate_states(n_items, vertex_sizes, vertex_hashes, anchor, word_lo, word_ptr, words,
                     anchor_ptr, anchored, full_hash, max_states, max_transitions):
    """All remainder states reachable from the full set, with their transitions.

    Returns ``(status, n_states, n_transitions, state_size, trans_ptr,
    trans_vertex, trans_child)``: the transitions of state ``s`` (``s = 0`` is
    the full set) are ``trans_ptr[s]:trans_ptr[s + 1]``, each removing vertex
    ``trans_vertex[t]`` and leading to state ``trans_child[t]``. ``status`` is
    :data:`STATES_CAP` or :data:`TRANSITIONS_CAP` if a cap was reached (the
    counts then say how far it got).
    """
    n_words = (n_items + 63) >> 6
    capacity = 64
    bits = np.zeros((capacity, n_words), np.uint64)
    h0 = np.empty(capacity, np.uint64)
    h1 = np.empty(capacity, np.uint64)
    size = np.empty(capacity, np.int64)
    low = np.empty(capacity, np.int64)
    trans_ptr = np.zeros(capacity + 1, np.int64)
    t_capacity = 256
    trans_vertex = np.empty(t_capacity, np.int64)
    trans_child = np.empty(t_capacity, np.int64)
    slots = np.full(256, -1, np.int64)

    for r in range(n_items):
        bits[0, r >> 6] |= np.uint64(1) << np.uint64(r & 63)
    h0[0] = full_hash[0]
    h1[0] = full_hash[1]
    size[0] = n_items
    low[0] = 0
    slots[_slot(h0[0], n_items, np.uint64(slots.size - 1))] = 0
    n_states = 1
    n_trans = 0
    status = STATES_OK
    s = 0
    while s < n_states:
        trans_ptr[s] = n_trans
        if size[s] > 0:
            r = low[s]
            for idx in range(anchor_ptr[r], anchor_ptr[r + 1]):
                v = anchored[idx]
                if vertex_sizes[v] > size[s]:
                    continue
                lo = word_lo[v]
                base = word_ptr[v]
                n_w = word_ptr[v + 1] - base
                inside = True
                for w in range(n_w):
                    if words[base + w] & ~bits[s, lo + w]:
                        inside = False
                        break
                if not inside:
                    continue
                c0 = h0[s] - vertex_hashes[v, 0]
                c1 = h1[s] - vertex_hashes[v, 1]
                c_size = size[s] - vertex_sizes[v]
                mask = np.uint64(slots.size - 1)
                i = _slot(c0, c_size, mask)
                child = -1
                while slots[i] >= 0:
                    q = slots[i]
                    if h0[q] == c0 and h1[q] == c1 and size[q] == c_size:
                        child = q
                        break
                    i = (i + np.uint64(1)) & mask
                if child < 0:
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
                    child = n_states
                    for w in range(n_words):
                        bits[child, w] = bits[s, w]
                    for w in range(n_w):
                        bits[child, lo + w] &= ~words[base + w]
                    h0[child] = c0
                    h1[child] = c1
                    size[child] = c_size
                    # The lowest remaining rank: no bit below r is set.
                    first = n_items
                    for w in range(r >> 6, n_words):
                        word = bits[child, w]
                        if word:
                            bit = 0
                            while not (word >> np.uint64(bit)) & np.uint64(1):
                                bit += 1
                            first = (w << 6) + bit
                            break
                    low[child] = first
                    slots[i] = child
                    n_states += 1
                    if 2 * n_states > slots.size:
                        slots = _rehash(slots, h0, h1, size, n_states)
                if n_trans >= max_transitions:
                    status = TRANSITIONS_CAP
                    break
                if n_trans == t_capacity:
                    t_capacity *= 2
                    trans_vertex = _grow_1d(trans_vertex, t_capacity)
                    trans_child = _grow_1d(trans_child, t_capacity)
                trans_vertex[n_trans] = v
                trans_child[n_trans] = child
                n_trans += 1
        if status != STATES_OK:
            break
        s += 1
    trans_ptr[n_states] = n_trans
    return (status, n_states, n_trans, size[:n_states].copy(),
            trans_ptr[:n_states + 1].copy(), trans_vertex[:n_trans].copy(),
            trans_child[:n_trans].copy())


@njit(cache=True)
def states_inside(e, state_size, trans_ptr, trans_vertex, trans_child):
    """``log Z``, MAP value and MAP transition of every state (smaller states first)."""
    n_states = state_size.size
    order = np.argsort(state_size, kind="mergesort")
    log_z = np.full(n_states, -np.inf)
    best = np.full(n_states, -np.inf)
    back = np.full(n_states, -1, np.int64)
    for k in range(n_states):
        s = order[k]
        if state_size[s] == 0:
            log_z[s] = 0.0
            best[s] = 0.0
            continue
        top = -np.inf
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            value = e[trans_vertex[t]] + log_z[trans_child[t]]
            if value > top:
                top = value
            value = e[trans_vertex[t]] + best[trans_child[t]]
            if value > best[s]:
                best[s] = value
                back[s] = t
        if top == -np.inf:
            continue
        acc = 0.0
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            acc += np.exp(e[trans_vertex[t]] + log_z[trans_child[t]] - top)
        log_z[s] = top + np.log(acc)
    return log_z, best, back


@njit(cache=True)
def states_cluster_log_marginals(e, log_z, state_size, trans_ptr, trans_vertex, trans_child,
                                 n_vertices):
    """``log P(v is a cluster)`` for every vertex (outside pass over the states)."""
    n_states = state_size.size
    order = np.argsort(-state_size, kind="mergesort")
    log_out = np.full(n_states, -np.inf)
    log_out[0] = 0.0
    out = np.full(n_vertices, -np.inf)
    for k in range(n_states):
        s = order[k]
        if log_out[s] == -np.inf:
            continue
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            v = trans_vertex[t]
            c = trans_child[t]
            value = log_out[s] + e[v]
            log_out[c] = _logaddexp(log_out[c], value)
            out[v] = _logaddexp(out[v], value + log_z[c])
    return out - log_z[0]


@njit(cache=True)
def states_map_vertices(back, state_size, trans_vertex, trans_child):
    """Vertices of the MAP clustering, following the MAP transitions from the full set."""
    out = []
    s = 0
    while state_size[s] > 0:
        t = back[s]
        out.append(trans_vertex[t])
        s = trans_child[t]
    return np.array(out, dtype=np.int64)


@njit(cache=True)
def states_sample(e, log_z, state_size, trans_ptr, trans_vertex, trans_child, items, starts,
                  stops, n_items, uniforms):
    """Exact draws: from each state, remove vertex ``B`` with probability
    ``exp(e(B) + log Z(S \\ B) - log Z(S))``; one uniform per removed cluster."""
    n_samples = uniforms.shape[0]
    cluster_of = np.empty((n_samples, n_items), np.int64)
    for q in range(n_samples):
        s = 0
        k = 0
        while state_size[s] > 0:
            u = uniforms[q, k]
            acc = 0.0
            chosen = -1
            for t in range(trans_ptr[s], trans_ptr[s + 1]):
                p = np.exp(e[trans_vertex[t]] + log_z[trans_child[t]] - log_z[s])
                if p > 0.0:
                    chosen = t      # the last possible one absorbs rounding
                acc += p
                if u < acc:
                    break
            v = trans_vertex[chosen]
            for a in range(starts[v], stops[v]):
                cluster_of[q, items[a]] = k
            k += 1
            s = trans_child[chosen]
    return canonical_labels(cluster_of)


@njit(cache=True)
def states_n_clusters(e, state_size, trans_ptr, trans_vertex, trans_child, n_items):
    """``log Z_k`` of the full set for ``k = 0..N``: a log-space vector per state."""
    n_states = state_size.size
    order = np.argsort(state_size, kind="mergesort")
    table = np.full((n_states, n_items + 1), -np.inf)
    for k in range(n_states):
        s = order[k]
        if state_size[s] == 0:
            table[s, 0] = 0.0
            continue
        for t in range(trans_ptr[s], trans_ptr[s + 1]):
            v = trans_vertex[t]
            c = trans_child[t]
            for j in range(state_size[c] + 1):
                if table[c, j] > -np.inf:
                    table[s, j + 1] = _logaddexp(table[s, j + 1], e[v] + table[c, j])
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
    out = np.zeros((n_items, n_items))
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
    out = np.zeros((rows.size, n_items))
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
