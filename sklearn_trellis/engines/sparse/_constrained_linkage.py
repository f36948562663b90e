"""Connectivity-constrained agglomerative linkages: scikit-learn's trees, compiled.

scikit-learn's :func:`~sklearn.cluster.ward_tree` and
:func:`~sklearn.cluster.linkage_tree` under a connectivity graph run their
merge loops in Python (a heap of edges, one dictionary per cluster): about a
minute per linkage at N = 100,000 with a 10-nearest-neighbour graph. These
kernels run the same algorithms in numba and return the same ``children_``:

- the same edge distances (``paired_distances`` over the graph's edges, in
  its row-major order) and the same updates in the same floating-point order
  (Ward's moments; the weighted mean of average linkage, kept unweighted for
  a neighbour of one side only; the maximum of complete linkage);
- the same merges: Ward's heap orders ``(inertia, i, j)`` tuples, a total
  order; average and complete linkage compare edges by weight alone, so
  CPython's ``heapq`` layout decides between equal weights.
  :func:`average_complete_tree` re-pushes only the edges whose distance
  changes (scikit-learn re-pushes every neighbour of a new cluster: quadratic
  when a cluster with many neighbours keeps growing, 40 s at N = 100,000) and
  checks at every merge that no two current edges tie; if one does,
  :func:`heap_replay_tree` reproduces scikit-learn's heap step for step
  (:func:`_sift_down`, :func:`_sift_up`);
- single linkage: scipy's minimum spanning tree, labelled as scikit-learn does.

Memory is ``O(edges)``: neighbour lists live in one pool that is compacted
when it fills. ``tests/engines/sparse/test_constrained_linkage.py`` checks
equality with scikit-learn on graphs with ties.
"""

import numpy as np
from numba import njit
from scipy import sparse
from ..._core.union_find import find_root
from sklearn.metrics.pairwise import paired_distances


# -- CPython's heapq, on rows (weight, a, b) of one array ------------------------
# One row per entry keeps an entry in one cache line: the heap holds millions.
@njit(cache=True, inline="always")
def _less(w, a, b, heap, y, lexicographic):
    """``(w, a, b) < heap[y]``: by weight, then (Ward's tuples) by ``(a, b)``."""
    if w < heap[y, 0]:
        return True
    if not lexicographic or w != heap[y, 0]:
        return False
    if a != heap[y, 1]:
        return a < heap[y, 1]
    return b < heap[y, 2]


@njit(cache=True)
def _sift_down(heap, start, pos, lexicographic):
    """heapq._siftdown: move the entry at ``pos`` up towards ``start``."""
    w, a, b = heap[pos, 0], heap[pos, 1], heap[pos, 2]
    while pos > start:
        parent = (pos - 1) >> 1
        if _less(w, a, b, heap, parent, lexicographic):
            heap[pos, 0], heap[pos, 1], heap[pos, 2] = heap[parent, 0], heap[parent, 1], \
                heap[parent, 2]
            pos = parent
            continue
        break
    heap[pos, 0], heap[pos, 1], heap[pos, 2] = w, a, b


@njit(cache=True)
def _sift_up(heap, size, pos, lexicographic):
    """heapq._siftup: the smaller child rises until a leaf, then sift down."""
    start = pos
    w, a, b = heap[pos, 0], heap[pos, 1], heap[pos, 2]
    child = 2 * pos + 1
    while child < size:
        right = child + 1
        if right < size and not _less(heap[child, 0], heap[child, 1], heap[child, 2], heap,
                                      right, lexicographic):
            child = right
        heap[pos, 0], heap[pos, 1], heap[pos, 2] = heap[child, 0], heap[child, 1], \
            heap[child, 2]
        pos = child
        child = 2 * pos + 1
    heap[pos, 0], heap[pos, 1], heap[pos, 2] = w, a, b
    _sift_down(heap, start, pos, lexicographic)


@njit(cache=True)
def _heapify(heap, size, lexicographic):
    for pos in range(size // 2 - 1, -1, -1):
        _sift_up(heap, size, pos, lexicographic)


@njit(cache=True)
def _pop(heap, size, lexicographic):
    """heapq.heappop: the smallest entry (returned as a, b) and the new size."""
    a, b = np.int64(heap[0, 1]), np.int64(heap[0, 2])
    size -= 1
    if size > 0:
        heap[0, 0], heap[0, 1], heap[0, 2] = heap[size, 0], heap[size, 1], heap[size, 2]
        _sift_up(heap, size, np.int64(0), lexicographic)  # int64, not a literal: one compile
    return a, b, size


@njit(cache=True)
def _push(heap, size, w, a, b, lexicographic):
    """heapq.heappush (the heap doubles when full); returns the heap and its size."""
    if size == heap.shape[0]:
        grown = np.empty((2 * size + 16, 3))
        grown[:size] = heap[:size]
        heap = grown
    heap[size, 0], heap[size, 1], heap[size, 2] = w, a, b
    _sift_down(heap, np.int64(0), size, lexicographic)
    return heap, size + 1


# -- neighbour lists: one pool, a slice per cluster ---------------------------------
@njit(cache=True)
def _compact(keys, values, start, length, capacity, alive, n_created, need):
    """Copy the live lists into fresh arrays with room for ``need`` more entries."""
    live = 0
    for node in range(n_created):
        if alive[node]:
            live += capacity[node]
    size = max(2 * (live + need), 16)
    new_keys = np.empty(size, np.int64)
    new_values = np.empty(size, np.float64)
    top = 0
    for node in range(n_created):
        if alive[node]:
            s, m = start[node], length[node]
            new_keys[top:top + m] = keys[s:s + m]
            new_values[top:top + m] = values[s:s + m]
            start[node] = top
            top += capacity[node]
    return new_keys, new_values, top


@njit(cache=True)
def _initial_lists(n, indptr, indices, distances, n_nodes):
    """Pool holding each leaf's sorted neighbours (with room to grow)."""
    start = np.zeros(n_nodes, np.int64)
    length = np.zeros(n_nodes, np.int64)
    capacity = np.zeros(n_nodes, np.int64)
    total = 0
    for i in range(n):
        total += indptr[i + 1] - indptr[i] + 4
    keys = np.empty(2 * total + 16, np.int64)
    values = np.empty(2 * total + 16, np.float64)
    top = 0
    for i in range(n):
        degree = indptr[i + 1] - indptr[i]
        start[i] = top
        length[i] = degree
        capacity[i] = degree + 4
        for p in range(degree):
            keys[top + p] = indices[indptr[i] + p]
            values[top + p] = distances[indptr[i] + p]
        top += degree + 4
    return keys, values, start, length, capacity, top


@njit(cache=True)
def _upper_edges(n, indptr, indices, distances):
    """scikit-learn's initial heap list: rows (d, row, col) for col < row, row-major
    (node ids are stored as floats, exact below 2**53)."""
    count = 0
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] < i:
                count += 1
    heap = np.empty((max(2 * count, 16), 3))
    m = 0
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] < i:
                heap[m, 0], heap[m, 1], heap[m, 2] = distances[p], i, indices[p]
                m += 1
    return heap, m


@njit(cache=True)
def _purge(heap, size, live, lexicographic):
    """Keep the entries ``(w, a, b)`` with ``live[a]`` and ``live[b]`` (drop those of
    merged clusters, or superseded edges) and re-heapify; returns the new size."""
    m = np.int64(0)   # not a literal: _heapify would be compiled again for a literal 0
    for e in range(size):
        if live[np.int64(heap[e, 1])] and live[np.int64(heap[e, 2])]:
            heap[m, 0], heap[m, 1], heap[m, 2] = heap[e, 0], heap[e, 1], heap[e, 2]
            m += 1
    _heapify(heap, m, lexicographic)
    return m


@njit(cache=True, nogil=True)
def heap_replay_tree(n, indptr, indices, distances, complete):
    """scikit-learn's ``linkage_tree`` (average or complete), its heap step for step.

    ``indptr, indices, distances``: the symmetric graph in CSR form, sorted
    columns, no diagonal, ``distances`` the edge lengths (each row's own).
    Returns ``children_``.

    scikit-learn's heap keeps the entries of merged clusters and compares
    weights only, so between two live edges of equal weight its own layout
    decides: this kernel keeps the same heap (CPython's ``heapq``) and pushes
    the same entries in the same order. It re-pushes every neighbour of each
    new cluster, as scikit-learn does (quadratic when a cluster with many
    neighbours keeps growing): :func:`average_complete_tree` is the fast one.
    """
    n_nodes = 2 * n - 1
    children = np.empty((n - 1, 2), np.int64)
    keys, values, start, length, capacity, top = _initial_lists(n, indptr, indices,
                                                                distances, n_nodes)
    heap, size = _upper_edges(n, indptr, indices, distances)
    order = np.bool_(False)   # weights only, as scikit-learn's heap (typed: not a constant)
    _heapify(heap, size, order)
    used = np.zeros(n_nodes, np.int64)    # cluster sizes; 0 once merged
    used[:n] = 1
    alive = np.zeros(n_nodes, np.bool_)
    alive[:n] = True
    for k in range(n, n_nodes):
        while True:                        # heappop until both ends are live clusters
            if size == 0:
                raise ValueError("The connectivity graph is not connected.")
            i, j, size = _pop(heap, size, order)
            if used[i] and used[j]:
                break
        children[k - n, 0] = j
        children[k - n, 1] = i
        n_i, n_j = used[i], used[j]
        used[k] = n_i + n_j
        # The merged list of k: sorted union of the live keys of i's and j's lists.
        need = length[i] + length[j]
        if top + need + 4 > keys.size:
            keys, values, top = _compact(keys, values, start, length, capacity, alive, k,
                                         need + 4)
        used[i] = used[j] = 0
        alive[i] = alive[j] = False
        n_out = np.float64(n_i + n_j)
        out = top
        a, a_end = start[i], start[i] + length[i]
        b, b_end = start[j], start[j] + length[j]
        while a < a_end or b < b_end:
            if b == b_end or (a < a_end and keys[a] < keys[b]):
                key, value = keys[a], values[a]
                a += 1
            elif a == a_end or keys[b] < keys[a]:
                key, value = keys[b], values[b]
                b += 1
            else:
                key = keys[a]
                if complete:
                    value = max(values[a], values[b])
                else:
                    value = (n_i * values[a] + n_j * values[b]) / n_out
                a += 1
                b += 1
            if used[key]:
                keys[out], values[out] = key, value
                out += 1
        start[k], length[k] = top, out - top
        capacity[k] = out - top + 4
        alive[k] = True
        top += capacity[k]
        for q in range(length[k]):
            col, d = keys[start[k] + q], values[start[k] + q]
            keys, values, top = _append(keys, values, start, length, capacity, alive, k + 1,
                                        top, col, k, d)
            heap, size = _push(heap, size, d, k, col, order)
    return children


@njit(cache=True)
def _append(keys, values, start, length, capacity, alive, n_created, top, node, key, value):
    """Append ``(key, value)`` to ``node``'s list (moved to the top, twice as big, when
    full; the pool is compacted when that does not fit). Returns the pool and its top."""
    if length[node] == capacity[node]:
        grown = 2 * capacity[node] + 4
        if top + grown > keys.size:
            keys, values, top = _compact(keys, values, start, length, capacity, alive,
                                         n_created, grown)
        s, m = start[node], length[node]
        keys[top:top + m] = keys[s:s + m]
        values[top:top + m] = values[s:s + m]
        start[node], capacity[node] = top, grown
        top += grown
    keys[start[node] + length[node]] = key
    values[start[node] + length[node]] = value
    length[node] += 1
    return keys, values, top


# -- average and complete linkage without re-pushing unchanged edges ------------------
# A cluster is stored under a *slot*: a leaf id whose neighbour list it inherited.
# Merging i and j keeps the longer list (slot L) and folds the shorter one (slot S)
# into it: only S's neighbours change distance (average and complete linkage keep
# d(k, c) = d(L, c) for a neighbour of L alone), so only their edges are re-pushed.
# Each live edge has one current entry (a stamp); superseded entries stay in the
# heap until they surface (lazy deletion). A hash table finds the edge of two slots.
_EMPTY, _DELETED = -1, -2


@njit(cache=True, inline="always")
def _hash(key, mask):
    return np.int64((np.uint64(key) * np.uint64(11400714819323198485)) >> np.uint64(32)) & mask


@njit(cache=True)
def _table_find(table, key):
    """Position of ``key`` in the open-addressing table ``table[:, 0]``, or -1."""
    mask = table.shape[0] - 1
    pos = _hash(key, mask)
    while table[pos, 0] != _EMPTY:
        if table[pos, 0] == key:
            return pos
        pos = (pos + 1) & mask
    return -1


@njit(cache=True)
def _table_insert(table, filled, key, value):
    """Insert an absent ``key``; rebuilt without deleted marks when 3/4 full.
    Returns the table and its count of non-empty cells."""
    mask = table.shape[0] - 1
    if 4 * (filled + 1) > 3 * table.shape[0]:
        fresh = np.full_like(table, _EMPTY)
        filled = 0
        for pos in range(table.shape[0]):
            if table[pos, 0] >= 0:
                at = _hash(table[pos, 0], mask)
                while fresh[at, 0] != _EMPTY:
                    at = (at + 1) & mask
                fresh[at, 0], fresh[at, 1] = table[pos, 0], table[pos, 1]
                filled += 1
        table = fresh
    pos = _hash(key, mask)
    while table[pos, 0] >= 0:
        pos = (pos + 1) & mask
    if table[pos, 0] == _EMPTY:
        filled += 1
    table[pos, 0], table[pos, 1] = key, value
    return table, filled


@njit(cache=True, nogil=True)
def _symmetric_weights(n, indptr, indices, distances):
    """Whether each edge has the same distance in both rows (scikit-learn then
    keeps one value per edge; otherwise each side's own value until it merges)."""
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            col = indices[p]
            q = indptr[col] + np.searchsorted(indices[indptr[col]:indptr[col + 1]], i)
            if q >= indptr[col + 1] or indices[q] != i or not distances[q] == distances[p]:
                return False
    return True


@njit(cache=True)
def _slot_append(pool, start, length, capacity, top, alive, slot, value):
    """Append ``value`` to ``slot``'s list (moved to the top, twice as big, when full;
    the pool is rebuilt with the live slots' lists when that does not fit)."""
    if length[slot] == capacity[slot]:
        grown = 2 * capacity[slot] + 4
        if top + grown > pool.size:
            live = grown
            for s in range(alive.size):
                if alive[s]:
                    live += capacity[s]
            fresh = np.empty(2 * live + 16, np.int64)
            top = 0
            for s in range(alive.size):
                if alive[s]:
                    fresh[top:top + length[s]] = pool[start[s]:start[s] + length[s]]
                    start[s] = top
                    top += capacity[s]
            pool = fresh
        s, m = start[slot], length[slot]
        pool[top:top + m] = pool[s:s + m]
        start[slot], capacity[slot] = top, grown
        top += grown
    pool[start[slot] + length[slot]] = value
    length[slot] += 1
    return pool, top


@njit(cache=True, nogil=True)
def average_complete_tree(n, indptr, indices, distances, complete):
    """scikit-learn's ``linkage_tree`` (average or complete) on a connected graph,
    in about ``O(E log E)`` for ``E`` edges (scikit-learn's is quadratic when a
    cluster with many neighbours keeps growing).

    The graph as in :func:`heap_replay_tree`, with the same distance on
    both sides of every edge (:func:`_symmetric_weights`). Returns
    ``(children_, done)``: ``done`` is ``False`` when two current edges share
    the smallest distance at some merge (scikit-learn's heap layout decides
    that one: the caller replays it). Otherwise every merge is the unique
    closest pair of current clusters, the distances are updated by the same
    operations as scikit-learn's (weighted mean over common neighbours in the
    order ``(newer cluster, older)``, or maximum; a neighbour of one side
    keeps its distance), so ``children_`` is scikit-learn's.
    """
    n_nodes = 2 * n - 1
    children = np.empty((n - 1, 2), np.int64)
    # neighbour lists of the slots (entries of dead slots are skipped, then dropped)
    start = np.zeros(n, np.int64)
    length = np.zeros(n, np.int64)
    capacity = np.zeros(n, np.int64)
    pool = np.empty(2 * (indices.size + 4 * n) + 16, np.int64)
    # counters start as int64 values, not literals: numba's type inference would otherwise
    # compile the helpers they reach (_slot_append, _table_insert, the heap's) a second
    # time, for the literal 0 it meets first
    top = np.int64(0)
    for i in range(n):
        degree = indptr[i + 1] - indptr[i]
        start[i], length[i], capacity[i] = top, degree, degree + 4
        pool[top:top + degree] = indices[indptr[i]:indptr[i + 1]]
        top += degree + 4
    degree = length.copy()              # live neighbours of each slot
    alive = np.ones(n, np.bool_)
    cluster = np.arange(n)              # the cluster a slot holds
    size = np.ones(n, np.int64)
    # edges: one stamp per (re)computed distance; the table maps a slot pair to its stamp
    n_edges = indices.size // 2
    edge_w = np.empty(max(4 * n_edges, 16))
    edge_lo = np.empty(edge_w.size, np.int64)
    edge_hi = np.empty(edge_w.size, np.int64)
    current = np.zeros(edge_w.size, np.bool_)
    cells = 16
    while cells < 4 * n_edges:
        cells *= 2
    table = np.full((cells, 2), _EMPTY, np.int64)
    filled = np.int64(0)
    # heap rows (distance, stamp, stamp): both ends name the edge, for _purge
    heap = np.empty((max(2 * n_edges, 16), 3))
    order = np.bool_(False)   # by weight only, ties abort anyway (typed: not a constant)
    stamps = np.int64(0)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            col = indices[p]
            if col < i:
                edge_w[stamps], edge_lo[stamps], edge_hi[stamps] = distances[p], col, i
                current[stamps] = True
                table, filled = _table_insert(table, filled, col * n + i, stamps)
                heap[stamps, 0], heap[stamps, 1], heap[stamps, 2] = distances[p], stamps, stamps
                stamps += 1
    heap_size = stamps
    _heapify(heap, heap_size, order)
    n_current = stamps
    for k in range(n, n_nodes):
        while True:
            if heap_size == 0:
                raise ValueError("The connectivity graph is not connected.")
            w = heap[0, 0]
            e, _, heap_size = _pop(heap, heap_size, order)
            if current[e]:
                break
        while heap_size > 0 and not current[np.int64(heap[0, 1])]:
            _, _, heap_size = _pop(heap, heap_size, order)
        if heap_size > 0 and heap[0, 0] == w:        # another current edge of that weight
            return children, False
        x, y = edge_lo[e], edge_hi[e]
        if cluster[x] < cluster[y]:      # x holds scikit-learn's i (the newer cluster)
            x, y = y, x
        children[k - n, 0] = cluster[y]
        children[k - n, 1] = cluster[x]
        n_x, n_y = size[x], size[y]
        n_out = np.float64(n_x + n_y)
        small, large = (x, y) if length[x] < length[y] else (y, x)
        current[e] = False
        n_current -= 1
        table[_table_find(table, x * n + y if x < y else y * n + x), 0] = _DELETED
        degree[large] -= 1
        for q in range(length[small]):   # (appends may move the pool: index it afresh)
            c = pool[start[small] + q]
            if not alive[c] or c == large:
                continue
            at = _table_find(table, small * n + c if small < c else c * n + small)
            old = table[at, 1]
            table[at, 0] = _DELETED
            current[old] = False
            n_current -= 1
            value = edge_w[old]
            at = _table_find(table, large * n + c if large < c else c * n + large)
            if at >= 0:                  # a common neighbour: the distance changes
                shared = table[at, 1]
                current[shared] = False
                n_current -= 1
                v_x, v_y = (edge_w[shared], value) if large == x else (value, edge_w[shared])
                if complete:
                    value = max(v_x, v_y)
                else:
                    value = (n_x * v_x + n_y * v_y) / n_out
                degree[c] -= 1
            else:                        # a neighbour of small only: moved to large
                pool, top = _slot_append(pool, start, length, capacity, top, alive, large, c)
                pool, top = _slot_append(pool, start, length, capacity, top, alive, c, large)
                degree[large] += 1
            if stamps == edge_w.size:
                grown = 2 * stamps
                edge_w = np.concatenate((edge_w, np.empty(grown - stamps)))
                edge_lo = np.concatenate((edge_lo, np.empty(grown - stamps, np.int64)))
                edge_hi = np.concatenate((edge_hi, np.empty(grown - stamps, np.int64)))
                current = np.concatenate((current, np.zeros(grown - stamps, np.bool_)))
            edge_w[stamps] = value
            edge_lo[stamps], edge_hi[stamps] = min(large, c), max(large, c)
            current[stamps] = True
            n_current += 1
            if at >= 0:
                table[at, 1] = stamps
            else:
                table, filled = _table_insert(table, filled,
                                              large * n + c if large < c else c * n + large,
                                              stamps)
            heap, heap_size = _push(heap, heap_size, value, stamps, stamps, order)
            stamps += 1
            if length[c] > 2 * degree[c] + 8:      # drop the dead slots from c's list
                _drop_dead(pool, start, length, alive, c)
        alive[small] = False
        length[small] = 0
        if length[large] > 2 * degree[large] + 8:
            _drop_dead(pool, start, length, alive, large)
        cluster[large] = k
        size[large] = n_x + n_y
        if heap_size > 2 * n_current + 1024:
            heap_size = _purge(heap, heap_size, current, order)
    return children, True


@njit(cache=True)
def _drop_dead(pool, start, length, alive, slot):
    out = start[slot]
    for p in range(start[slot], start[slot] + length[slot]):
        if alive[pool[p]]:
            pool[out] = pool[p]
            out += 1
    length[slot] = out - start[slot]


@njit(cache=True)
def _ward_distance(m1, m2, row, col):
    """scikit-learn's ``compute_ward_dist`` for one pair, same operations."""
    n = (m1[row] * m1[col]) / (m1[row] + m1[col])
    pa = 0.0
    for f in range(m2.shape[1]):
        diff = m2[row, f] / m1[row] - m2[col, f] / m1[col]
        pa += diff * diff
    return pa * n


@njit(cache=True, nogil=True)
def ward_connected_tree(n, indptr, indices, X):
    """scikit-learn's ``ward_tree`` on a connected graph (CSR, sorted, no diagonal)."""
    # True, as a comparison: a literal True would compile the heap helpers a second time
    lexicographic = n > 0
    n_nodes = 2 * n - 1
    children = np.empty((n - 1, 2), np.int64)
    dummy = np.zeros(indices.size)
    keys, values, start, length, capacity, top = _initial_lists(n, indptr, indices, dummy,
                                                                n_nodes)
    heap, size = _upper_edges(n, indptr, indices, dummy)
    m1 = np.zeros(n_nodes)
    m1[:n] = 1.0
    m2 = np.zeros((n_nodes, X.shape[1]))
    m2[:n] = X
    for e in range(size):
        heap[e, 0] = _ward_distance(m1, m2, np.int64(heap[e, 1]), np.int64(heap[e, 2]))
    _heapify(heap, size, lexicographic)
    used = np.ones(n_nodes, np.bool_)      # as scikit-learn: future clusters count as used
    alive = np.zeros(n_nodes, np.bool_)
    alive[:n] = True
    used_live = alive            # the live clusters (the heap's entries are among them)
    purge_at = max(2 * size, 1024)
    root = np.arange(n_nodes)
    seen = np.full(n_nodes, -1, np.int64)
    for k in range(n, n_nodes):
        while True:
            if size == 0:
                raise ValueError("The connectivity graph is not connected.")
            i, j, size = _pop(heap, size, lexicographic)
            if used[i] and used[j]:
                break
        children[k - n, 0] = j
        children[k - n, 1] = i
        root[i] = root[j] = k
        m1[k] = m1[i] + m1[j]
        for f in range(X.shape[1]):
            m2[k, f] = m2[i, f] + m2[j, f]
        # The current clusters next to i or j, in the order scikit-learn finds them.
        need = length[i] + length[j]
        if top + need + 4 > keys.size:
            keys, values, top = _compact(keys, values, start, length, capacity, alive, k,
                                         need + 4)
        used[i] = used[j] = False
        alive[i] = alive[j] = False
        seen[k] = k
        out = top
        for side in (i, j):
            for p in range(start[side], start[side] + length[side]):
                head = find_root(root, keys[p])
                if seen[head] != k:
                    seen[head] = k
                    keys[out] = head
                    out += 1
        start[k], length[k] = top, out - top
        capacity[k] = out - top + 4
        alive[k] = True
        top += capacity[k]
        for q in range(length[k]):
            col = keys[start[k] + q]
            keys, values, top = _append(keys, values, start, length, capacity, alive, k + 1,
                                        top, col, k, 0.0)
            heap, size = _push(heap, size, _ward_distance(m1, m2, k, col), k, col, lexicographic)
        if size > purge_at:     # a total order: dropping dead entries changes no merge
            size = _purge(heap, size, used_live, lexicographic)
            purge_at = max(2 * size, 1024)
    return children


@njit(cache=True)
def _label_mst(rows, cols, n):
    """scikit-learn's ``_single_linkage_label`` of MST edges sorted by weight."""
    parent = np.full(2 * n - 1, -1, np.int64)
    children = np.empty((n - 1, 2), np.int64)
    for index in range(n - 1):
        a, b = rows[index], cols[index]
        for end in range(2):
            x = a if end == 0 else b
            top = x
            while parent[top] != -1:
                top = parent[top]
            while x != top and parent[x] != top:
                parent[x], x = top, parent[x]
            children[index, end] = top
        parent[children[index, 0]] = n + index
        parent[children[index, 1]] = n + index
    return children


def edge_distances(X, graph, metric):
    """Distances on the edges of a CSR graph, in its order (as scikit-learn computes them)."""
    coo = graph.tocoo()
    if metric == "precomputed":
        return np.asarray(X[coo.row, coo.col], dtype=np.float64).ravel()
    return paired_distances(X[coo.row], X[coo.col], metric=metric)


def constrained_tree(name, X, graph, metric="euclidean", distances=None):
    """scikit-learn's connectivity-constrained ``children_`` of linkage ``name``.

    Parameters
    ----------
    name : {'ward', 'average', 'complete', 'single'}
    X : ndarray of shape (N, n_features) or (N, N)
        Features, or distances if ``metric='precomputed'`` (not for Ward).
    graph : CSR matrix of shape (N, N)
        Connected, symmetric, sorted indices, no diagonal (as
        :func:`~sklearn_trellis._core.connectivity.check_connectivity` returns it).
    metric : str or callable, default='euclidean'
    distances : ndarray, optional
        :func:`edge_distances` of the graph, if already computed.

    Returns
    -------
    ndarray of int64, shape (N - 1, 2)
    """
    n = graph.shape[0]
    if n < 2:
        return np.zeros((0, 2), np.int64)
    indptr = np.asarray(graph.indptr, dtype=np.int64)
    indices = np.asarray(graph.indices, dtype=np.int64)
    if name == "ward":
        return ward_connected_tree(n, indptr, indices, np.ascontiguousarray(X, np.float64))
    if distances is None:
        distances = edge_distances(X, graph, metric)
    if name == "single":
        from scipy.sparse.csgraph import minimum_spanning_tree
        data = np.array(distances, dtype=np.float64)
        epsilon = np.finfo(np.float64).eps
        data[data == 0] = epsilon       # zero distances are edges too
        mst = minimum_spanning_tree(
            sparse.csr_matrix((data, graph.indices, graph.indptr), shape=(n, n))).tocoo()
        mst.data[mst.data == epsilon] = 0
        order = np.argsort(mst.data, kind="mergesort")
        return _label_mst(np.asarray(mst.row, np.int64)[order],
                          np.asarray(mst.col, np.int64)[order], n)
    distances = np.asarray(distances, np.float64)
    complete = name == "complete"
    if _symmetric_weights(n, indptr, indices, distances):
        children, done = average_complete_tree(n, indptr, indices, distances, complete)
        if done:
            return children
    # a tie between current edges (or a distance that differs between an edge's two
    # rows): scikit-learn's own heap decides
    return heap_replay_tree(n, indptr, indices, distances, complete)


__all__ = ["constrained_tree", "edge_distances"]
