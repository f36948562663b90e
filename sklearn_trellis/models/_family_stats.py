"""Per-vertex sufficient statistics over a :class:`~sklearn_trellis._core.family.ClusterFamily`.

The exact engines read statistics tabulated over all ``2**N`` bitmasks; a
sparse trellis reads the same statistics tabulated over its vertices (column
``v`` for vertex ``v``), so the models' numba split and cluster functions serve
both engines unchanged. These helpers compute the two kinds of statistics the
built-in models need:

- item sums ``sum_{i in S} x_i`` (additive: ``x(S) = x(L) + x(R)``);
- pair sums ``W(S) = sum_{i<j in S} w_ij``, from a vertex's construction split
  as ``W(L) + W(R) + sum_{i in L, j in R} w_ij``: ``O(|L| |R|)`` per vertex, so
  ``O(N**2)`` per seed tree in total instead of ``O(sum |S|**2)``.
"""

import numpy as np
from numba import njit, prange

from .._core.interpreted import call
from .._core.parallel import SLOT_CHUNK, parallel_kernel

#: Up to this many pair terms (:func:`_pair_terms`, about a microsecond each)
#: :func:`family_pair_sums` runs its kernels' own Python source
#: (:mod:`~sklearn_trellis._core.interpreted`: the same additions in the same order,
#: so the same sums): a small fit's family takes milliseconds, against about 0.7 s
#: of compiling them (1.3 s with windows) in a first fit.
INTERPRETED_PAIR_TERMS = 100_000


@njit(cache=True, inline="always")
def _part(value, sign):
    if sign > 0:
        return max(value, 0.0)
    if sign < 0:
        return max(-value, 0.0)
    return value


@njit(cache=True, inline="always")
def _vertex_cut(matrix, items, starts, stops, build_left, build_right, sign, v):
    """The sum between the children of vertex ``v``'s construction split, or, without
    one, over the pairs inside ``v``: ``W(S)`` less its children's."""
    left = build_left[v]
    acc = 0.0
    if left >= 0:
        right = build_right[v]
        for a in range(starts[left], stops[left]):
            row = items[a]
            for b in range(starts[right], stops[right]):
                acc += _part(matrix[row, items[b]], sign)
        return acc
    # No construction split: sum over the pairs directly.
    for a in range(starts[v], stops[v]):
        row = items[a]
        for b in range(a + 1, stops[v]):
            acc += _part(matrix[row, items[b]], sign)
    return acc


@njit(cache=True, inline="always")
def _vertex_pair_sum(matrix, items, starts, stops, build_left, build_right, sign, out, v):
    """``W(S)`` of vertex ``v`` from its construction split (children already in ``out``)."""
    acc = _vertex_cut(matrix, items, starts, stops, build_left, build_right, sign, v)
    left = build_left[v]
    if left >= 0:
        return out[left] + out[build_right[v]] + acc
    return acc


@njit(cache=True)
def _pair_sums(matrix, items, starts, stops, build_left, build_right, sign):
    n_vertices = starts.size
    out = np.zeros(n_vertices, np.float64)
    for v in range(n_vertices):
        size = stops[v] - starts[v]
        if size < 2:
            continue
        out[v] = _vertex_pair_sum(matrix, items, starts, stops, build_left, build_right, sign,
                                  out, v)
    return out


def family_pair_sums(matrix, family, part=None):
    """``W(S) = sum_{i<j in S} matrix[i, j]`` for every vertex ``S`` (symmetric matrix).

    Parameters
    ----------
    matrix : ndarray of shape (N, N)
        Symmetric; the diagonal is ignored.
    family : ClusterFamily
    part : {None, 'positive', 'negative'}, default=None
        Sum ``max(w, 0)`` or ``max(-w, 0)`` instead of ``w`` (without copying
        the matrix: at N = 10,000 a copy is 800 MB).

    Returns
    -------
    ndarray of shape (n_vertices,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis._core.family import ClusterFamily
    >>> from sklearn_trellis.models._family_stats import family_pair_sums
    >>> family = ClusterFamily.from_trees([np.array([[0, 1], [3, 2]])], n_items=3)
    >>> w = np.array([[0., 1., 2.], [1., 0., 4.], [2., 4., 0.]])
    >>> family_pair_sums(w, family).tolist()       # {0}, {1}, {2}, {0,1}, {0,1,2}
    [0.0, 0.0, 0.0, 1.0, 7.0]
    """
    matrix = np.ascontiguousarray(matrix, dtype=np.float64)
    if matrix.shape != (family.n_items, family.n_items):
        raise ValueError(f"Expected a ({family.n_items}, {family.n_items}) matrix, got "
                         f"shape {matrix.shape}.")
    signs = {None: 0, "positive": 1, "negative": -1}
    if part not in signs:
        raise ValueError(f"part must be None, 'positive' or 'negative', got {part!r}.")
    small = _pair_terms(family) <= INTERPRETED_PAIR_TERMS
    work = matrix.size * max(len(family.seed_trees), 1)     # about N**2 / 2 per tree
    # Small families: one serial pass (the threads' kernel is not compiled).
    threads = not small and _vertex_cuts.for_work(work) is _vertex_cuts.parallel
    if family.window_table.size:
        # A window union is the sum of its pieces' W and of the cuts between its
        # pieces: the cuts cost O(s**2) once per window of s items, instead of
        # O(s**2) for each of its 2**k unions.
        cuts = call(_window_cuts.for_work(work), matrix, family.items, family.starts,
                    family.stops, family.window_table, signs[part], small=small)
        if not threads:
            return call(_pair_sums_windows, matrix, family.items, family.starts, family.stops,
                        family.build_left, family.build_right, signs[part],
                        family.vertex_window, family.vertex_window_mask,
                        family.window_table, cuts, small=small)
        unions = (family.vertex_window >= 0) & (
            (family.vertex_window_mask & (family.vertex_window_mask - 1)) != 0)
        vertex_cuts = _parallel_vertex_cuts(matrix, family, signs[part], unions, work)
        return _sum_cuts_windows(vertex_cuts, family.starts, family.stops, family.build_left,
                                 family.build_right, family.vertex_window,
                                 family.vertex_window_mask, family.window_table, cuts)
    if not threads:
        return call(_pair_sums, matrix, family.items, family.starts, family.stops,
                    family.build_left, family.build_right, signs[part], small=small)
    vertex_cuts = _parallel_vertex_cuts(matrix, family, signs[part],
                                        np.zeros(family.n_vertices, np.bool_), work)
    return _sum_cuts(vertex_cuts, family.starts, family.stops, family.build_left,
                     family.build_right)


def _pair_terms(family):
    """Terms :func:`family_pair_sums` adds, at most: ``|L| |R|`` per vertex with a
    construction split, ``|S| (|S| - 1) / 2`` per other vertex (window unions,
    summed from their pieces, count as split ones)."""
    sizes = family.stops - family.starts
    split = family.build_left >= 0
    whole = sizes[~split]
    return int((sizes[family.build_left[split]] * sizes[family.build_right[split]]).sum()
               + (whole * (whole - 1) // 2).sum())


def _parallel_vertex_cuts(matrix, family, sign, skip, work):
    """Each vertex's :func:`_vertex_cut` (``skip``: left at 0) on numba's threads."""
    kernel, n_slots = _vertex_cuts.with_slots(work)
    return kernel(matrix, family.items, family.starts, family.stops, family.build_left,
                  family.build_right, np.int64(sign), skip, np.int64(n_slots))


@parallel_kernel
def _vertex_cuts(matrix, items, starts, stops, build_left, build_right, sign, skip, n_slots):
    """:func:`_vertex_cut` of every vertex of two items or more not in ``skip``.

    Slot ``j`` takes the vertices ``last - j``, ``last - j - n_slots``, ...:
    vertices are numbered by size, so the slots share the large ones (a
    vertex's sum is its own: the result does not depend on the slots).
    """
    n_vertices = starts.size
    cuts = np.zeros(n_vertices, np.float64)
    for slot in prange(n_slots):
        for v in range(n_vertices - 1 - slot, -1, -n_slots):
            if stops[v] - starts[v] >= 2 and not skip[v]:
                cuts[v] = _vertex_cut(matrix, items, starts, stops, build_left, build_right,
                                      sign, v)
    return cuts


@njit(cache=True)
def _window_pieces(table, w):
    width = table.shape[1]
    k = 0
    while (1 << k) < width and table[w, 1 << k] >= 0:
        k += 1
    return k


@parallel_kernel
def _window_cuts(matrix, items, starts, stops, table, sign):
    """``cuts[w, j, l]``: the sum of ``w`` between pieces ``j`` and ``l`` of window ``w``."""
    n_windows, width = table.shape
    k_max = 0
    while (1 << k_max) < width:
        k_max += 1
    cuts = np.zeros((n_windows, max(k_max, 1), max(k_max, 1)), np.float64)
    for w in prange(n_windows):
        k = _window_pieces(table, w)
        for j in range(k):
            pj = table[w, 1 << j]
            for l in range(j + 1, k):
                pl = table[w, 1 << l]
                acc = 0.0
                for a in range(starts[pj], stops[pj]):
                    row = items[a]
                    for b in range(starts[pl], stops[pl]):
                        acc += _part(matrix[row, items[b]], sign)
                cuts[w, j, l] = acc
                cuts[w, l, j] = acc
    return cuts


@njit(cache=True)
def _pair_sums_windows(matrix, items, starts, stops, build_left, build_right, sign,
                       vertex_window, vertex_mask, table, cuts):
    n_vertices = starts.size
    out = np.zeros(n_vertices, np.float64)
    for v in range(n_vertices):
        size = stops[v] - starts[v]
        if size < 2:
            continue
        w = vertex_window[v]
        mask = vertex_mask[v]
        if w >= 0 and (mask & (mask - 1)) != 0:
            out[v] = _window_union_sum(out, table, cuts, w, mask)
            continue
        out[v] = _vertex_pair_sum(matrix, items, starts, stops, build_left, build_right, sign,
                                  out, v)
    return out


@njit(cache=True, inline="always")
def _window_union_sum(out, table, cuts, w, mask):
    """``W`` of the union ``mask`` of window ``w``'s pieces: their ``W`` and the cuts
    between them."""
    acc = 0.0
    k = _window_pieces(table, w)
    for j in range(k):
        if mask >> j & 1:
            acc += out[table[w, 1 << j]]
            for l in range(j + 1, k):
                if mask >> l & 1:
                    acc += cuts[w, j, l]
    return acc


@njit(cache=True)
def _sum_cuts_windows(vertex_cuts, starts, stops, build_left, build_right, vertex_window,
                      vertex_mask, table, cuts):
    """:func:`_pair_sums_windows` from the vertices' cuts (:func:`_vertex_cuts`)."""
    out = np.zeros(starts.size, np.float64)
    for v in range(starts.size):
        if stops[v] - starts[v] < 2:
            continue
        w = vertex_window[v]
        mask = vertex_mask[v]
        if w >= 0 and (mask & (mask - 1)) != 0:
            out[v] = _window_union_sum(out, table, cuts, w, mask)
        elif build_left[v] >= 0:
            out[v] = out[build_left[v]] + out[build_right[v]] + vertex_cuts[v]
        else:
            out[v] = vertex_cuts[v]
    return out


@njit(cache=True)
def _item_sums(values, items, starts, stops, build_left, build_right):
    n_vertices = starts.size
    k = values.shape[1]
    out = np.zeros((k, n_vertices), np.float64)
    for v in range(n_vertices):
        left = build_left[v]
        if left >= 0:
            right = build_right[v]
            for c in range(k):
                out[c, v] = out[c, left] + out[c, right]
        else:
            for a in range(starts[v], stops[v]):
                item = items[a]
                for c in range(k):
                    out[c, v] += values[item, c]
    return out


def family_item_sums(values, family):
    """``sum_{i in S} values[i]`` for every vertex ``S``: shape ``(k, n_vertices)``.

    Parameters
    ----------
    values : ndarray of shape (N,) or (N, k)
    family : ClusterFamily

    Returns
    -------
    ndarray of shape (k, n_vertices)
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.shape[0] != family.n_items:
        raise ValueError(f"Expected {family.n_items} rows of values, got {values.shape[0]}.")
    return _item_sums(np.ascontiguousarray(values), family.items, family.starts,
                      family.stops, family.build_left, family.build_right)


def family_graph_pair_sums(graph, family):
    """``W(S) = sum of w_ij over the graph's edges inside S`` for every vertex ``S``.

    The sparse counterpart of :func:`family_pair_sums` for similarities that
    live on the edges of a graph (``O(edges)`` memory, no ``N x N`` matrix).
    From a vertex's construction split, ``W(S) = W(L) + W(R) + cut(L, R)`` with
    the cut read from the edges of the smaller child's items: a neighbour is
    in the other child when it lies in ``S`` (its position in the leaf order
    of the seed tree holding ``S`` as a range) and not in the smaller child,
    so a seed tree costs ``O(N log N * degree)`` (small-to-large); other
    vertices mark their larger child (``O(|S|)``).

    Parameters
    ----------
    graph : scipy sparse matrix of shape (N, N)
        Symmetric similarities on the edges (the diagonal is ignored).
    family : ClusterFamily

    Returns
    -------
    ndarray of shape (n_vertices,)
    """
    from scipy import sparse
    graph = sparse.csr_matrix(graph, dtype=np.float64)
    n = family.n_items
    if graph.shape != (n, n):
        raise ValueError(f"Expected a ({n}, {n}) graph, got shape {graph.shape}.")
    graph.sort_indices()
    offsets = np.asarray(family.seed_tree_offsets, dtype=np.int64)
    positions = np.empty((offsets.size, n), np.int64)
    for t, offset in enumerate(offsets.tolist()):
        positions[t, family.items[offset:offset + n]] = np.arange(n)
    home = np.full(family.n_vertices, -1, np.int64)
    for t, offset in enumerate(offsets.tolist()):
        inside = (family.starts >= offset) & (family.stops <= offset + n)
        home[inside] = t
    indptr = graph.indptr.astype(np.int64)
    indices = graph.indices.astype(np.int64)
    # Each vertex's cut is its own: vertices in chunks over numba's threads, one
    # stamp array per thread; then W(S) = W(L) + W(R) + cut in size order.
    kernel, n_slots = _graph_cuts.with_slots(family.n_vertices * (indices.size // max(n, 1)))
    cuts = kernel(indptr, indices, graph.data, family.items, family.starts, family.stops,
                  family.build_left, family.build_right, home, offsets, positions,
                  np.int64(SLOT_CHUNK), np.int64(n_slots))
    return _sum_cuts(cuts, family.starts, family.stops, family.build_left,
                     family.build_right)


@parallel_kernel
def _graph_cuts(indptr, indices, weights, items, starts, stops, build_left, build_right,
                home, offsets, positions, chunk, n_slots):
    """Per vertex: the edge weights between its construction split's children
    (or inside it, without a split); slot ``j`` takes chunks ``j``, ``j + n_slots``, ..."""
    n_vertices = starts.size
    n = indptr.size - 1
    cuts = np.zeros(n_vertices, np.float64)
    stamps = np.full((n_slots, n), -1, np.int64)
    n_chunks = (n_vertices + chunk - 1) // chunk
    for slot in prange(n_slots):
        stamp = stamps[slot]
        for c in range(slot, n_chunks, n_slots):
            for v in range(c * chunk, min((c + 1) * chunk, n_vertices)):
                if stops[v] - starts[v] >= 2:
                    cuts[v] = _cut(v, indptr, indices, weights, items, starts, stops,
                                   build_left, build_right, home, offsets, positions, stamp)
    return cuts


@njit(cache=True, inline="always")
def _cut(v, indptr, indices, weights, items, starts, stops, build_left, build_right, home,
         offsets, positions, stamp):
    left = build_left[v]
    acc = 0.0
    if left < 0:
        # No construction split: every edge inside S, once.
        for a in range(starts[v], stops[v]):
            stamp[items[a]] = v
        for a in range(starts[v], stops[v]):
            i = items[a]
            for e in range(indptr[i], indptr[i + 1]):
                if stamp[indices[e]] == v and indices[e] > i:
                    acc += weights[e]
        return acc
    right = build_right[v]
    small, big = left, right
    if stops[left] - starts[left] > stops[right] - starts[right]:
        small, big = right, left
    t = home[v]
    if t >= 0:
        lo = starts[v] - offsets[t]
        hi = stops[v] - offsets[t]
        for a in range(starts[small], stops[small]):
            stamp[items[a]] = v
        for a in range(starts[small], stops[small]):
            i = items[a]
            for e in range(indptr[i], indptr[i + 1]):
                j = indices[e]
                p = positions[t, j]
                if lo <= p < hi and stamp[j] != v:
                    acc += weights[e]
    else:
        for a in range(starts[big], stops[big]):
            stamp[items[a]] = v
        for a in range(starts[small], stops[small]):
            i = items[a]
            for e in range(indptr[i], indptr[i + 1]):
                if stamp[indices[e]] == v:
                    acc += weights[e]
    return acc


@njit(cache=True)
def _sum_cuts(cuts, starts, stops, build_left, build_right):
    """``W(S) = W(L) + W(R) + cut`` over the vertices in size order (children first)."""
    out = np.zeros(starts.size, np.float64)
    for v in range(starts.size):
        if stops[v] - starts[v] < 2:
            continue
        left = build_left[v]
        if left < 0:
            out[v] = cuts[v]
        else:
            out[v] = out[left] + out[build_right[v]] + cuts[v]
    return out


@njit(cache=True)
def _item_sums_per_row(values, items, starts, stops, build_left, build_right):
    m = values.shape[0]
    n_vertices = starts.size
    out = np.zeros((m, n_vertices), np.float64)
    for j in range(m):
        row = values[j]
        sums = out[j]
        for v in range(n_vertices):
            left = build_left[v]
            if left >= 0:
                sums[v] = sums[left] + sums[build_right[v]]
            else:
                acc = 0.0
                for a in range(starts[v], stops[v]):
                    acc += row[items[a]]
                sums[v] = acc
    return out


def family_item_sums_per_row(values, family):
    """``sum_{i in S} values[j, i]`` for every row ``j`` and vertex ``S``: shape ``(m, n_vertices)``.

    :func:`family_item_sums` for many value vectors given row by row (the
    similarities of many new items to the fitted ones): each row is summed
    over the family in one cache-resident pass.

    Parameters
    ----------
    values : ndarray of shape (m, N)
    family : ClusterFamily

    Returns
    -------
    ndarray of shape (m, n_vertices)
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != family.n_items:
        raise ValueError(f"Expected values of shape (m, {family.n_items}), got {values.shape}.")
    return _item_sums_per_row(values, family.items, family.starts, family.stops,
                              family.build_left, family.build_right)


__all__ = ["family_pair_sums", "family_graph_pair_sums", "family_item_sums",
           "family_item_sums_per_row"]
