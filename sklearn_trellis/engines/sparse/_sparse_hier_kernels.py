"""Numba kernels of the sparse hierarchical cluster trellis.

Vertices are the clusters of a :class:`~sklearn_trellis._core.family.ClusterFamily`
(numbered by non-decreasing size, so both children of a split precede their
parent). Edges are the splits ``(S, L, R)`` with ``S``, ``L``, ``R`` vertices,
``L`` holding the lowest item of ``S``; they are stored by parent in CSR form
(``ptr[S]:ptr[S + 1]``), each with its log-potential ``psi``. Every recursion
below is then a single ``O(n_edges)`` sweep over the vertices in size order
(inside: ``log Z``, MAP) or in reverse (outside).

Edge discovery (:func:`discover_edges`): a split ``(L, R)`` of ``S`` needs
``L`` to contain the lowest item ``m`` of ``S``. Every vertex containing ``m``
is an ancestor of leaf ``m`` in some seed tree, or an extra cluster listed
under ``m``; so the candidates are those, ``R`` is looked up by its hash
``hash(S) - hash(L)`` and size ``|S| - |L|`` in an open-addressing table.
When ``S`` is a range of some seed tree's leaf order, an ancestor of ``m``
that is not a subset of ``S`` ends the walk up that tree (its ancestors are
not subsets either); the subset test is O(1) from the minimum and maximum
position of each node's items in that order.

Split log-potentials (:func:`edge_potentials`, once per edge) come from the
energy's numba split function, called with vertex ids (the root vertex as
``full``): that kernel is a template, compiled per energy by
:func:`specialise` (see ``sklearn_trellis._core.specialise``); the others
never see the energy.
"""

import functools
import math

import numpy as np
from numba import njit, prange

from ..._core.interpreted import call
from ..._core.parallel import SLOT_CHUNK, parallel_kernel
from ..._core.specialise import specialise as _specialise, template
from ..._core.subsets import logaddexp, logsumexp_buffer
from .._split_potential import split_bindings, split_log_potential

_EMPTY = -1

#: Up to this many inner iterations (:func:`_discovery_work`; about half a
#: microsecond each) edge discovery runs its kernels' own Python source
#: (:mod:`~sklearn_trellis._core.interpreted`: the same steps and values), and so
#: do :func:`edges_to_csr`, :func:`lowest_items`, :func:`tree_from_root` and
#: :func:`node_heights` up to as many rows, vertices or items:
#: a small fit's trellises take tens of milliseconds (40 items, window_size 8:
#: 70 ms), against about 3.5 s of compiling these kernels in a first fit.
INTERPRETED_DISCOVERY_WORK = 200_000


# -- hash table over the vertices ----------------------------------------------
@njit(cache=True, inline="always")
def _slot(h0, mask):
    return np.int64(h0 & np.uint64(mask))


@njit(cache=True)
def build_hash_table(hashes, sizes):
    """Open-addressing table (load <= 1/2) of the vertices keyed by (hash, size)."""
    n_vertices = sizes.shape[0]
    capacity = 16
    while capacity < 2 * n_vertices:
        capacity *= 2
    table = np.full(capacity, _EMPTY, np.int64)
    mask = capacity - 1
    for v in range(n_vertices):
        slot = _slot(hashes[v, 0], mask)
        while table[slot] != _EMPTY:
            slot = (slot + 1) & mask
        table[slot] = v
    return table


@njit(cache=True, inline="always")
def lookup(table, hashes, sizes, h0, h1, size):
    """Vertex with hash ``(h0, h1)`` and ``size`` items, or -1."""
    mask = table.shape[0] - 1
    slot = _slot(h0, mask)
    while True:
        v = table[slot]
        if v == _EMPTY:
            return -1
        if hashes[v, 0] == h0 and hashes[v, 1] == h1 and sizes[v] == size:
            return v
        slot = (slot + 1) & mask


@njit(cache=True)
def build_hash_filter(hashes):
    """Bit filter of the vertices' hashes (about 16 bits per vertex, a few MB): a
    clear bit rules a hash out without reading the table (no false negatives)."""
    n_bits = 64
    while n_bits < 16 * hashes.shape[0]:
        n_bits *= 2
    present = np.zeros(n_bits // 64, np.uint64)
    for v in range(hashes.shape[0]):
        bit = _filter_bit(hashes[v, 0], n_bits - 1)
        present[bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)
    return present


@njit(cache=True, inline="always")
def _filter_bit(h0, mask):
    # high bits: the table's slot uses the low ones
    return np.int64((h0 >> np.uint64(32)) & np.uint64(mask))


@njit(cache=True, inline="always")
def _may_be_vertex(present, h0):
    bit = _filter_bit(h0, 64 * present.shape[0] - 1)
    return (present[bit >> 6] >> np.uint64(bit & 63)) & np.uint64(1) != 0


# -- per-vertex and per-tree tables ----------------------------------------------
@njit(cache=True)
def lowest_items(items, starts, stops, build_left, build_right):
    """Lowest item of every vertex (from its construction split when it has one)."""
    n_vertices = starts.shape[0]
    out = np.empty(n_vertices, np.int64)
    for v in range(n_vertices):
        left = build_left[v]
        if left >= 0:
            out[v] = min(out[left], out[build_right[v]])
        else:
            best = items[starts[v]]
            for a in range(starts[v] + 1, stops[v]):
                best = min(best, items[a])
            out[v] = best
    return out


#: Fields of :func:`_walk_records` (one 64-byte row per node of a seed tree).
_PARENT, _VERTEX, _SIZE, _HASH0, _HASH1, _LO, _HI = 0, 1, 2, 3, 4, 5, 6


@njit(cache=True)
def _walk_records(children, tree_vertex, sizes, hashes, n_items):
    """What a walk up a seed tree reads of a node, in one cache line per node.

    ``records[t, x]``: node ``x``'s parent in tree ``t`` (-1 for the root), its
    vertex, that vertex's size and hash (the two words bit-cast to int64), and
    the ``_LO``/``_HI`` slots :func:`_position_ranges` fills. The walks of edge
    discovery step from node to parent at random: one row instead of a read in
    each of seven arrays.
    """
    n_trees = children.shape[0]
    width = 2 * n_items - 1
    records = np.empty((n_trees, width, 8), np.int64)
    for t in range(n_trees):
        for x in range(width):
            v = tree_vertex[t, x]
            records[t, x, _PARENT] = -1
            records[t, x, _VERTEX] = v
            records[t, x, _SIZE] = sizes[v]
            records[t, x, _HASH0] = np.int64(hashes[v, 0])
            records[t, x, _HASH1] = np.int64(hashes[v, 1])
        for k in range(n_items - 1):
            records[t, children[t, k, 0], _PARENT] = n_items + k
            records[t, children[t, k, 1], _PARENT] = n_items + k
    return records


@njit(cache=True)
def _position_ranges(children, items, offset, n_items, records):
    """``records[t, x, _LO/_HI]``: min/max buffer position, in the leaf order at
    ``offset``, of the items of node ``x`` of tree ``t``."""
    position = np.empty(n_items, np.int64)
    for j in range(n_items):
        position[items[offset + j]] = offset + j
    for t in range(children.shape[0]):
        for i in range(n_items):
            records[t, i, _LO] = position[i]
            records[t, i, _HI] = position[i]
        for k in range(n_items - 1):
            a = children[t, k, 0]
            b = children[t, k, 1]
            records[t, n_items + k, _LO] = min(records[t, a, _LO], records[t, b, _LO])
            records[t, n_items + k, _HI] = max(records[t, a, _HI], records[t, b, _HI])


# -- edge discovery ------------------------------------------------------------------
@njit(cache=True, inline="always")
def _try_candidate(s, left, sizes, hashes, table, stamp, out, n_out):
    """Record the split of ``s`` with left child ``left`` if its complement is a vertex."""
    if stamp[left] == s:
        return n_out
    stamp[left] = s
    size = sizes[s] - sizes[left]
    right = lookup(table, hashes, sizes, hashes[s, 0] - hashes[left, 0],
                   hashes[s, 1] - hashes[left, 1], size)
    return _append_split(s, left, right, out, n_out)


@njit(cache=True, inline="always")
def _append_split(s, left, right, out, n_out):
    """Row ``(s, left, right)`` of ``out`` if ``right`` is a vertex (counted even when
    ``out`` is full, so the caller can grow it and run again)."""
    if right >= 0:
        if n_out < out.shape[0]:
            out[n_out, 0] = s
            out[n_out, 1] = left
            out[n_out, 2] = right
        n_out += 1
    return n_out


@njit(cache=True)
def _splits_of(s, use_range, range_vertex, records, starts, stops, sizes, hashes, table,
               present, lowest, extra_ptr, extra_list, vertex_window, vertex_window_mask,
               window_table, stamp, out, n_out):
    """Append every split of vertex ``s`` to ``out`` (rows ``(s, L, R)``).

    With ``use_range``, ``range_vertex`` (``s`` or a superset of it) is a range
    of the leaf order the ``_LO``/``_HI`` fields of ``records`` are positions in.
    """
    m = lowest[s]
    size = sizes[s]
    n_out = _try_candidate(s, m, sizes, hashes, table, stamp, out, n_out)
    first = starts[range_vertex]
    last = stops[range_vertex]
    h0, h1 = hashes[s, 0], hashes[s, 1]
    for t in range(records.shape[0]):
        node = records[t, m, _PARENT]
        while node >= 0:
            record = records[t, node]
            left_size = record[_SIZE]
            if left_size >= size:
                break
            # Not a subset of s (not even of the range): no ancestor is one either.
            if use_range and (record[_LO] < first or record[_HI] >= last):
                break
            left = record[_VERTEX]
            if stamp[left] != s:           # _try_candidate, from the record
                stamp[left] = s
                r0 = h0 - np.uint64(record[_HASH0])
                if _may_be_vertex(present, r0):    # (most complements are not)
                    right = lookup(table, hashes, sizes, r0, h1 - np.uint64(record[_HASH1]),
                                   size - left_size)
                    n_out = _append_split(s, left, right, out, n_out)
            node = record[_PARENT]
    # Extra clusters of item m (window unions are handled below, not listed).
    for j in range(extra_ptr[m], extra_ptr[m + 1]):
        left = extra_list[j]
        if sizes[left] < size:
            n_out = _try_candidate(s, left, sizes, hashes, table, stamp, out, n_out)
    window = vertex_window[s]
    if window >= 0:
        # A window union splits into two unions of the same window: enumerate the
        # sub-masks holding the cluster of the lowest item (no hashing needed).
        mask = vertex_window_mask[s]
        low_bit = 0
        lowest_item = -1
        j = 0
        while (1 << j) <= mask:
            if (mask >> j) & 1:
                piece_lowest = lowest[window_table[window, 1 << j]]
                if lowest_item < 0 or piece_lowest < lowest_item:
                    lowest_item = piece_lowest
                    low_bit = j
            j += 1
        rest = mask ^ (1 << low_bit)
        sub = rest
        while True:
            # left = low cluster + sub; right = the others (skip right empty)
            if sub != rest:
                left = window_table[window, sub | (1 << low_bit)]
                right = window_table[window, rest ^ sub]
                if left >= 0 and right >= 0 and stamp[left] != s:
                    stamp[left] = s
                    n_out = _append_split(s, left, right, out, n_out)
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return n_out


#: First output rows per vertex of the family (the buffers double when short).
_ROWS_PER_VERTEX = 4


@parallel_kernel
def _group_splits(vertices, chunk, n_slots, chunk_rows, slot_next, buffers, fill, stamps,
                  records, use_range, range_vertex, starts, stops, sizes, hashes, table, present,
                  lowest, extra_ptr, extra_list, vertex_window, vertex_window_mask,
                  window_table, max_edges):
    """The splits of ``vertices`` (one group), slot ``j`` taking the chunks
    (of ``chunk`` vertices) ``j``, ``j + n_slots``, ... into ``buffers[j]``.

    Resumable: slot ``j`` goes on from position ``slot_next[j]`` of
    ``vertices`` with ``fill[j]`` rows, and stops before a vertex that could
    overflow its buffer (``slot_next[j] < vertices.size``: the caller grows
    the buffers and calls again) or once it holds more than ``max_edges`` rows.
    ``chunk_rows[c]``: the first and last row of chunk ``c`` in its slot's buffer.
    """
    n = vertices.shape[0]
    n_trees = records.shape[0]
    capacity = buffers.shape[1]
    width = window_table.shape[1]
    for j in prange(n_slots):
        out = buffers[j]
        stamp = stamps[j]
        n_out = fill[j]
        p = slot_next[j]
        while p < n:
            c = p // chunk
            if p % chunk == 0:
                chunk_rows[c, 0] = n_out
            s = vertices[p]
            # A vertex has fewer splits than candidates.
            need = n_out + 1 + n_trees * sizes[s] + (extra_ptr[lowest[s] + 1]
                                                     - extra_ptr[lowest[s]])
            if vertex_window[s] >= 0:
                need += width
            if need > capacity and capacity <= max_edges:
                break
            n_out = _splits_of(s, use_range, range_vertex[s], records, starts, stops, sizes,
                               hashes, table, present, lowest, extra_ptr, extra_list,
                               vertex_window, vertex_window_mask, window_table, stamp, out,
                               n_out)
            p += 1
            if p % chunk == 0 or p == n:
                chunk_rows[c, 1] = n_out
                p += (n_slots - 1) * chunk       # this slot's next chunk
            if n_out > max_edges:
                break
        fill[j] = n_out
        slot_next[j] = p


def _discovery_work(vertices, sizes, vertex_window, n_trees, window_width):
    """Inner iterations of the splits of ``vertices``, for the serial/parallel choice.

    A vertex of ``s`` items walks up ``n_trees`` trees (about ``log2 s``
    steps each, more in unbalanced trees) after trying its lowest item, and a
    window union enumerates up to ``window_width / 2`` sub-masks of its window
    (the ones holding its lowest piece).
    """
    steps = np.log2(sizes[vertices].astype(np.float64)) + 1.0
    work = float(vertices.size) + n_trees * float(steps.sum())
    work += window_width // 2 * float(np.count_nonzero(vertex_window[vertices] >= 0))
    return work


def discover_edges(children, tree_vertex, tree_offsets, home, range_vertex, n_items, items,
                   starts, stops, sizes, hashes, lowest, extra_ptr, extra_list,
                   vertex_window, vertex_window_mask, window_table, max_edges):
    """Every split of every vertex: rows ``(S, L, R)`` grouped by home tree.

    ``home[v]`` is the seed tree whose leaf order holds the slice of
    ``range_vertex[v]``, a superset of ``v`` (``v`` itself, or the root of
    the window ``v`` is a union in), ``-1`` if none: the walk up a tree stops
    at the first ancestor outside that range (no higher one is a subset of
    ``v``). Returns ``(groups, n_edges)``: the rows, group by group, for
    :func:`edges_to_csr`; ``n_edges > max_edges`` means the search stopped
    early (``groups`` is then empty).

    The vertices of a group are independent: large groups run on
    ``numba.get_num_threads()`` threads (at most ``MAX_SLOTS``), each with
    its own stamps and output buffer, taking chunks of ``SLOT_CHUNK`` vertices
    in turn; :func:`edges_to_csr` reads the rows in vertex order (chunk by
    chunk), so the result is the same for any number of threads. A group is
    ``(buffers, chunk_rows)``: the rows stay where the kernel wrote them (no
    compact copy, no concatenation: only the rows written are resident).
    """
    n_vertices = sizes.shape[0]
    n_trees = children.shape[0]
    small = _discovery_work(np.arange(n_items, n_vertices), sizes, vertex_window, n_trees,
                            window_table.shape[1]) <= INTERPRETED_DISCOVERY_WORK
    table = call(build_hash_table, hashes, sizes, small=small)
    present = call(build_hash_filter, hashes, small=small)
    records = call(_walk_records, children, tree_vertex, sizes, hashes, n_items, small=small)
    # Group -1 (no home tree) first, then tree by tree; vertices ascending in each.
    order = n_items + np.argsort(home[n_items:], kind="stable")
    bounds = np.searchsorted(home[order], np.arange(-1, n_trees + 1))
    stamps = np.zeros((0, n_vertices), np.int64)
    groups = []
    n_edges = 0
    for group in range(-1, n_trees):
        vertices = order[bounds[group + 1]:bounds[group + 2]]
        if vertices.size == 0:
            continue
        if group >= 0:
            call(_position_ranges, children, items, tree_offsets[group], n_items, records,
                 small=small)
        kernel, n_slots = _group_splits.with_slots(
            _discovery_work(vertices, sizes, vertex_window, n_trees, window_table.shape[1]))
        if small and kernel is _group_splits.serial:
            kernel = functools.partial(call, kernel, small=True)
        if stamps.shape[0] < n_slots:     # stamps stay valid: a vertex is done once
            stamps = np.full((n_slots, n_vertices), -1, np.int64)
        # As many rows as one buffer for every vertex would have: a group with
        # many splits per vertex (window unions) seldom has to grow them.
        capacity = min(max_edges + 1, _ROWS_PER_VERTEX * n_vertices // n_slots + 16)
        buffers = np.empty((n_slots, capacity, 3), np.int64)
        chunk_rows = np.zeros((-(-vertices.size // SLOT_CHUNK), 2), np.int64)
        slot_next = np.arange(n_slots, dtype=np.int64) * SLOT_CHUNK
        fill = np.zeros(n_slots, np.int64)
        while True:
            kernel(vertices, np.int64(SLOT_CHUNK), np.int64(n_slots), chunk_rows, slot_next,
                   buffers, fill, stamps, records, np.bool_(group >= 0), range_vertex, starts,
                   stops, sizes, hashes, table, present, lowest, extra_ptr, extra_list,
                   vertex_window, vertex_window_mask, window_table, np.int64(max_edges))
            if n_edges + int(fill.sum()) > max_edges:
                return [], n_edges + int(fill.sum())
            if (slot_next >= vertices.size).all():
                break
            capacity = min(2 * capacity, max_edges + 1)
            grown = np.empty((n_slots, capacity, 3), np.int64)
            for j, rows in enumerate(fill.tolist()):     # (untouched rows cost no memory)
                grown[j, :rows] = buffers[j, :rows]
            buffers = grown
        # Rows past a slot's fill were never written: no resident memory.
        groups.append((buffers, chunk_rows))
        del buffers
        n_edges += int(fill.sum())
    return groups, n_edges


@njit(cache=True)
def _count_parents(buffers, chunk_rows, counts):
    """``counts[S + 1] += 1`` for every row ``(S, L, R)`` of a group."""
    n_slots = buffers.shape[0]
    for c in range(chunk_rows.shape[0]):
        rows = buffers[c % n_slots]
        for e in range(chunk_rows[c, 0], chunk_rows[c, 1]):
            counts[rows[e, 0] + 1] += 1


@njit(cache=True)
def _place_rows(buffers, chunk_rows, fill, parent, left, right):
    """Each row of a group, in vertex order, at its parent's next CSR position."""
    n_slots = buffers.shape[0]
    for c in range(chunk_rows.shape[0]):
        rows = buffers[c % n_slots]
        for e in range(chunk_rows[c, 0], chunk_rows[c, 1]):
            s = rows[e, 0]
            j = fill[s]
            parent[j] = s
            left[j] = rows[e, 1]
            right[j] = rows[e, 2]
            fill[s] += 1


def edges_to_csr(groups, n_vertices):
    """The rows of :func:`discover_edges`'s ``groups``, sorted by parent (stable,
    in group then vertex order): ``(ptr, parent, left, right)``.

    Empties ``groups``: each group's buffers are freed once its rows are placed.
    """
    counts = np.zeros(n_vertices + 1, np.int64)
    n_rows = sum(int((chunk_rows[:, 1] - chunk_rows[:, 0]).sum()) for _, chunk_rows in groups)
    small = n_rows <= INTERPRETED_DISCOVERY_WORK
    for buffers, chunk_rows in groups:
        call(_count_parents, buffers, chunk_rows, counts, small=small)
    ptr = np.cumsum(counts)
    fill = ptr[:-1].copy()
    n_edges = int(ptr[-1])
    parent = np.empty(n_edges, np.int64)
    left = np.empty(n_edges, np.int64)
    right = np.empty(n_edges, np.int64)
    while groups:
        buffers, chunk_rows = groups.pop(0)
        call(_place_rows, buffers, chunk_rows, fill, parent, left, right, small=small)
        del buffers
    return ptr, parent, left, right


@njit(cache=True)
def verify_edges(ptr, left, right, items, starts, stops, n_items):
    """Number of edges whose children do not partition their parent (exact check)."""
    n_vertices = ptr.shape[0] - 1
    mark = np.full(n_items, -1, np.int64)
    n_bad = 0
    e_id = 0
    for s in range(n_vertices):
        for e in range(ptr[s], ptr[s + 1]):
            e_id += 1
            for a in range(starts[s], stops[s]):
                mark[items[a]] = e_id
            ok = (stops[left[e]] - starts[left[e]] + stops[right[e]] - starts[right[e]]
                  == stops[s] - starts[s])
            for child in (left[e], right[e]):
                for a in range(starts[child], stops[child]):
                    if mark[items[a]] != e_id:
                        ok = False
                    mark[items[a]] = -2  # a repeated item is caught too
            if not ok:
                n_bad += 1
    return n_bad


# -- split log-potentials ---------------------------------------------------------------
@template(parallel=True)
def edge_potentials(params, stats, full, ptr, left, right):
    """``psi`` of every edge and the number of NaN / +inf values (set to -inf)."""
    n_vertices = ptr.shape[0] - 1
    psi = np.empty(left.shape[0], np.float64)
    invalid = np.zeros(n_vertices, np.int64)
    for s in prange(n_vertices):
        for e in range(ptr[s], ptr[s + 1]):
            value = split_log_potential(params, stats, full, s, left[e], right[e])
            if not value < np.inf and value != -np.inf:
                invalid[s] += 1
                value = -np.inf
            psi[e] = value
    n_invalid = 0               # a loop: array.sum() compiles numba's reduction twice
    for s in range(n_vertices):
        n_invalid += invalid[s]
    return psi, n_invalid


# -- inside recursions -------------------------------------------------------------------
@njit(cache=True)
def inside_pass(ptr, left, right, psi, is_leaf, log_z, map_value, best_edge,
                       with_log_z):
    """``log Z`` (if ``with_log_z``), MAP value and MAP edge of every vertex.

    Leaves (singletons) get 0; other vertices without an allowed split get ``-inf``.
    """
    n_vertices = ptr.shape[0] - 1
    width = 1
    for s in range(n_vertices):
        width = max(width, ptr[s + 1] - ptr[s])
    terms = np.empty(width, np.float64)
    scratch = np.empty(width, np.int64)
    for s in range(n_vertices):
        first = ptr[s]
        last = ptr[s + 1]
        if is_leaf[s]:
            log_z[s] = 0.0
            map_value[s] = 0.0
            best_edge[s] = -1
            continue
        largest = -np.inf
        best = -np.inf
        chosen = -1
        for e in range(first, last):
            p = psi[e]
            if with_log_z:
                term = p + log_z[left[e]] + log_z[right[e]]
                terms[e - first] = term
                if term > largest:
                    largest = term
            candidate = p + map_value[left[e]] + map_value[right[e]]
            if candidate > best:
                best = candidate
                chosen = e
        if with_log_z:
            log_z[s] = logsumexp_buffer(terms, scratch, last - first, largest)
        map_value[s] = best
        best_edge[s] = chosen


@njit(cache=True)
def tree_from_root(root, n_items, best_edge, left, right):
    """Edges of the tree chosen by ``best_edge`` below ``root``, preorder (iterative)."""
    out = np.empty(max(n_items - 1, 0), np.int64)
    stack = np.empty(n_items + 1, np.int64)
    stack[0] = root
    top = 1
    k = 0
    while top:
        top -= 1
        s = stack[top]
        e = best_edge[s]
        if e < 0:
            continue
        out[k] = e
        k += 1
        stack[top] = right[e]
        stack[top + 1] = left[e]
        top += 2
    return out[:k]


# -- counting trees ------------------------------------------------------------------------
@njit(cache=True)
def count_trees_int64(ptr, left, right, psi, is_leaf):
    """Allowed trees below every vertex as int64, and a flag where that overflows.

    ``big[v]`` marks vertices whose count (or a child's) does not fit in int64:
    the caller finishes those with Python integers.
    """
    n_vertices = ptr.shape[0] - 1
    limit = np.int64(2 ** 62)
    counts = np.zeros(n_vertices, np.int64)
    big = np.zeros(n_vertices, np.bool_)
    for s in range(n_vertices):
        if is_leaf[s]:
            counts[s] = 1
            continue
        acc = np.int64(0)
        for e in range(ptr[s], ptr[s + 1]):
            if psi[e] == -np.inf:
                continue
            a = left[e]
            b = right[e]
            if big[a] or big[b]:
                big[s] = True
                break
            ca = counts[a]
            cb = counts[b]
            if ca == 0 or cb == 0:
                continue
            if ca > limit // cb or acc > limit - ca * cb:
                big[s] = True
                break
            acc += ca * cb
        counts[s] = acc
    return counts, big


@njit(cache=True)
def log_count_trees(ptr, left, right, psi, is_leaf):
    """Natural log of the number of allowed trees below every vertex (floating point)."""
    n_vertices = ptr.shape[0] - 1
    out = np.full(n_vertices, -np.inf)
    for s in range(n_vertices):
        if is_leaf[s]:
            out[s] = 0.0
            continue
        acc = -np.inf
        for e in range(ptr[s], ptr[s + 1]):
            if psi[e] == -np.inf:
                continue
            acc = logaddexp(acc, out[left[e]] + out[right[e]])
        out[s] = acc
    return out


# -- outside recursion and marginals ---------------------------------------------------------
@njit(cache=True)
def outside_pass(ptr, left, right, psi, log_z, root):
    """``log out(v)``: log of the summed potential of every completion of a tree
    around a node ``v`` (``out(root) = 1``), so ``P(v) = Z(v) out(v) / Z(root)``."""
    n_vertices = ptr.shape[0] - 1
    log_out = np.full(n_vertices, -np.inf)
    log_out[root] = 0.0
    for s in range(n_vertices - 1, -1, -1):
        outer = log_out[s]
        if outer == -np.inf:
            continue
        for e in range(ptr[s], ptr[s + 1]):
            p = psi[e]
            if p == -np.inf:
                continue
            a = left[e]
            b = right[e]
            log_out[a] = logaddexp(log_out[a], outer + p + log_z[b])
            log_out[b] = logaddexp(log_out[b], outer + p + log_z[a])
    return log_out


@njit(cache=True)
def vertex_frequencies(trees, left, right, root, n_vertices):
    """Fraction of the trees (rows of edge ids) in which each vertex is a node."""
    n_trees = trees.shape[0]
    counts = np.zeros(n_vertices, np.float64)
    mark = np.full(n_vertices, -1, np.int64)
    for t in range(n_trees):
        for k in range(trees.shape[1]):
            e = trees[t, k]
            for v in (left[e], right[e]):
                if mark[v] != t:
                    mark[v] = t
                    counts[v] += 1.0
    out = counts / max(n_trees, 1)
    out[root] = 1.0 if n_trees else 0.0
    return out


# -- sampling -----------------------------------------------------------------------------------
@njit(cache=True)
def split_cdfs(ptr, left, right, psi, log_z):
    """Cumulative probability of each edge among the splits of its parent (Eq. 3)."""
    n_vertices = ptr.shape[0] - 1
    cdf = np.zeros(left.shape[0], np.float64)
    for s in range(n_vertices):
        acc = 0.0
        base = log_z[s]
        for e in range(ptr[s], ptr[s + 1]):
            value = psi[e] + log_z[left[e]] + log_z[right[e]] - base
            if value > -745.0:
                acc += math.exp(value)
            cdf[e] = acc
    return cdf


@njit(cache=True, parallel=True)
def sample_trees(ptr, left, right, cdf, root, n_items, uniforms):
    """Exact top-down draws: edge ids of each sampled tree, preorder, one uniform per node."""
    n_samples = uniforms.shape[0]
    n_nodes = max(n_items - 1, 0)
    out = np.empty((n_samples, n_nodes), np.int64)
    for t in prange(n_samples):
        stack = np.empty(n_items + 1, np.int64)
        stack[0] = root
        top = 1
        k = 0
        while top:
            top -= 1
            s = stack[top]
            first = ptr[s]
            last = ptr[s + 1]
            if first == last:
                continue
            threshold = uniforms[t, k] * cdf[last - 1]
            index = first + np.searchsorted(cdf[first:last], threshold, side="right")
            if index >= last:
                index = last - 1
            while index > first and cdf[index] == cdf[index - 1]:
                index -= 1  # step back onto an edge of positive weight
            out[t, k] = index
            k += 1
            stack[top] = right[index]
            stack[top + 1] = left[index]
            top += 2
    return out


# -- trees given from outside --------------------------------------------------------------------
@njit(cache=True)
def edges_of_children(children, codes, n_items, table, hashes, sizes, lowest, ptr, left):
    """Edge id of every merge of a ``children_`` tree: -1 when the split is not an
    edge of the trellis, -2 when the merged cluster is not a vertex."""
    n_nodes = 2 * n_items - 1
    node_hash = np.empty((n_nodes, 2), np.uint64)
    node_size = np.empty(n_nodes, np.int64)
    node_vertex = np.empty(n_nodes, np.int64)
    for i in range(n_items):
        node_hash[i, 0], node_hash[i, 1] = codes[i, 0], codes[i, 1]
    for i in range(n_items):
        node_size[i] = 1
        node_vertex[i] = i
    out = np.empty(n_items - 1, np.int64)
    for k in range(n_items - 1):
        a = children[k, 0]
        b = children[k, 1]
        node = n_items + k
        node_hash[node, 0] = node_hash[a, 0] + node_hash[b, 0]
        node_hash[node, 1] = node_hash[a, 1] + node_hash[b, 1]
        node_size[node] = node_size[a] + node_size[b]
        va = node_vertex[a]
        vb = node_vertex[b]
        s = lookup(table, hashes, sizes, node_hash[node, 0], node_hash[node, 1],
                   node_size[node])
        node_vertex[node] = s
        if s < 0 or va < 0 or vb < 0:
            out[k] = -2
            continue
        want = va if lowest[va] < lowest[vb] else vb
        out[k] = -1
        for e in range(ptr[s], ptr[s + 1]):
            if left[e] == want:
                out[k] = e
                break
    return out


@njit(cache=True)
def node_heights(edges, parent, left, right, n_vertices):
    """Height (levels above the leaves) of the parent of each edge of one tree."""
    n_merges = edges.shape[0]
    height_of = np.zeros(n_vertices, np.int64)
    heights = np.empty(n_merges, np.int64)
    for k in range(n_merges - 1, -1, -1):  # reverse preorder: children first
        e = edges[k]
        h = 1 + max(height_of[left[e]], height_of[right[e]])
        height_of[parent[e]] = h
        heights[k] = h
    return heights


def specialise(split):
    """The kernels of this module compiled for one energy's numba split function."""
    return _specialise(globals(), split_bindings(split))
