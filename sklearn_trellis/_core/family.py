"""Families of clusters: the vertex sets of sparse trellises.

A sparse trellis runs the exact recursions over a chosen family of clusters
instead of all ``2**N`` subsets (Greenberg et al. 2018, Section 4; Greenberg
et al. 2021, Section 3). :class:`ClusterFamily` stores such a family for any
``N``: the union of the nodes of seed trees (agglomerative linkages, beam
search, samples), plus any extra clusters, always including the singletons and
the full set.

Storage is ``O(N)`` per seed tree, not ``O(sum of cluster sizes)``: the members
of a vertex are a contiguous slice of one item buffer (a seed tree contributes
its leaf order once and each of its nodes is a range of it).

Clusters are identified by a 128-bit hash of their item set (the wrapping sum
of two independent random 64-bit codes per item) together with their size.
Two different clusters of the same size collide only if the random codes
satisfy a linear relation, with probability about ``2**-128`` per pair;
:meth:`ClusterFamily.from_clusters` and the seed-tree constructor also compare
the member lists of equal-hash clusters, so deduplication is exact.
"""

import numpy as np
from numba import njit

from .interpreted import call
from .trees import check_children, leaf_order, tree_to_postorder_children

#: Up to this many items a family is built by its kernels' own Python source
#: (:mod:`~sklearn_trellis._core.interpreted`: the same steps and values), windows
#: too when their unions hold at most ``INTERPRETED_WINDOW_ENTRIES`` items (about
#: a microsecond each): a small fit's family takes milliseconds (40 items, four
#: trees and eleven windows of 8: 20 ms), against about 1.5 s of compiling the
#: builder's kernels (3 s with the windows' in a first fit).
INTERPRETED_FAMILY_ITEMS = 100
INTERPRETED_WINDOW_ENTRIES = 100_000

#: Seed of the random item codes (fixed: families built separately agree on hashes).
_CODE_SEED = 0x7E11_15C0_DE5


def item_codes(n_items):
    """The two random 64-bit codes of every item, shape ``(n_items, 2)``, uint64."""
    rng = np.random.default_rng(_CODE_SEED)
    return rng.integers(0, np.iinfo(np.uint64).max, size=(n_items, 2), dtype=np.uint64,
                        endpoint=True)


class ClusterFamily:
    """A family of clusters over ``N`` items (the vertices of a sparse trellis).

    Build one with :meth:`from_trees` (the union of the nodes of seed trees) or
    :meth:`from_clusters` (any clusters). The singletons and the full set are
    always members. Vertices are numbered by non-decreasing size; vertex ``i``
    is the singleton ``{i}`` for ``i < N`` and the full set is the last vertex.

    Attributes
    ----------
    n_items : int
    n_vertices : int
    items : ndarray of int64
        Item buffer; the members of vertex ``v`` are ``items[starts[v]:stops[v]]``.
    starts, stops : ndarray of int64, shape (n_vertices,)
    sizes : ndarray of int64, shape (n_vertices,)
    build_left, build_right : ndarray of int64, shape (n_vertices,)
        A split of each vertex into two smaller vertices (from the seed tree that
        first produced it), ``-1`` for singletons and for clusters given without
        one. Models use it to compute statistics in ``O(|L| |R|)`` per vertex.
    hashes : ndarray of uint64, shape (n_vertices, 2)
        The vertex hashes (wrapping sums of :func:`item_codes`).
    root : int
        The vertex of the full set (``n_vertices - 1``).
    seed_trees : list of ndarray of shape (N - 1, 2)
        The ``children_`` arrays the family was built from.
    vertex_window, vertex_window_mask : ndarray of int64, shape (n_vertices,)
        For the unions added by ``windows`` (and each window's own root): the
        window's number and which of its clusters the vertex is made of (a
        bit mask; all bits for the root); ``-1`` / 0 for other vertices.
        Edge discovery looks for splits of a window union only among the
        unions of its own window.
    window_table : ndarray of int64, shape (n_windows, 2**k)
        The vertex of every union (bit mask over the window's clusters) of each
        window (``-1`` beyond a window's own ``2**k``).
    seed_tree_vertices : list of ndarray of shape (2 N - 1,)
        For each seed tree, the vertex of each of its nodes (scikit-learn
        numbering: leaves ``0..N-1``, merge ``k`` is node ``N + k``).
    seed_tree_offsets : ndarray of int64, shape (n_seed_trees,)
        The leaf order of seed tree ``t`` is ``items[o:o + N]`` with
        ``o = seed_tree_offsets[t]``; a vertex whose slice lies there is a
        contiguous range of that order (sparse engines use this for O(1)
        membership tests).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis._core.family import ClusterFamily
    >>> chain = np.array([[0, 1], [4, 2], [5, 3]])      # ((0, 1), 2), 3)
    >>> balanced = np.array([[0, 1], [2, 3], [4, 5]])   # ((0, 1), (2, 3))
    >>> family = ClusterFamily.from_trees([chain, balanced], n_items=4)
    >>> family.n_vertices                               # 4 leaves, {0,1}, {2,3}, {0,1,2}, root
    8
    >>> family.members(family.vertex_of([2, 3])).tolist()
    [2, 3]
    """

    def __init__(self, n_items, items, starts, stops, sizes, build_left, build_right,
                 hashes, seed_trees=(), seed_tree_vertices=(), seed_tree_offsets=(),
                 vertex_window=None, vertex_window_mask=None, window_table=None):
        self.n_items = int(n_items)
        self.items = items
        self.starts = starts
        self.stops = stops
        self.sizes = sizes
        self.build_left = build_left
        self.build_right = build_right
        self.hashes = hashes
        self.n_vertices = int(sizes.size)
        self.root = self.n_vertices - 1
        self.seed_trees = list(seed_trees)
        self.seed_tree_vertices = list(seed_tree_vertices)
        self.seed_tree_offsets = np.asarray(seed_tree_offsets, dtype=np.int64).reshape(-1)
        n_vertices = self.n_vertices
        self.vertex_window = (np.full(n_vertices, -1, np.int64) if vertex_window is None
                              else vertex_window)
        self.vertex_window_mask = (np.zeros(n_vertices, np.int64) if vertex_window_mask is None
                                   else vertex_window_mask)
        self.window_table = (np.full((0, 1), -1, np.int64) if window_table is None
                             else window_table)
        self._index = None

    # ----------------------------------------------------------------- build
    @classmethod
    def from_trees(cls, trees, n_items, extra_clusters=(), windows=()):
        """The union of the nodes of seed trees (and optional extra clusters, windows).

        Parameters
        ----------
        trees : list of array-like of shape (n_items - 1, 2) or nested tuples
            Seed trees as scikit-learn ``children_`` arrays (leaves ``0..N-1``,
            merge ``k`` is node ``N + k``) or nested pairs of item indices.
        n_items : int
        extra_clusters : iterable of iterables of int, default=()
            Further clusters to include.
        windows : iterable of lists of arrays of int, default=()
            Each window is a list of ``k`` disjoint clusters already in the
            family (e.g. from :func:`~sklearn_trellis.engines.sparse.seeds.tree_windows`);
            all ``2**k - 1`` unions of them are added, each with a
            construction split, so a sparse hierarchical trellis realises
            every binary tree over the window's clusters.

        Returns
        -------
        ClusterFamily
        """
        n_items = _check_n_items(n_items)
        builder = _FamilyBuilder(n_items)
        for tree in trees:
            if isinstance(tree, tuple) or (isinstance(tree, (int, np.integer)) and n_items == 1):
                tree = tree_to_postorder_children(tree, n_items)
            builder.add_tree(check_children(tree, n_items))
        for cluster in extra_clusters:
            builder.add_cluster(cluster)
        builder.add_windows(windows)
        return builder.finish()

    @classmethod
    def from_clusters(cls, clusters, n_items):
        """A family made of the given clusters (plus the singletons and the full set).

        A cluster ``S`` gets the construction split ``(S - {max S}, {max S})``
        when ``S - {max S}`` is also given, so the full powerset has one for
        every vertex.

        Parameters
        ----------
        clusters : iterable of iterables of int
        n_items : int

        Returns
        -------
        ClusterFamily
        """
        n_items = _check_n_items(n_items)
        builder = _FamilyBuilder(n_items)
        for cluster in clusters:
            builder.add_cluster(cluster)
        return builder.finish()

    @classmethod
    def powerset(cls, n_items, max_items=16):
        """Every non-empty subset of ``n_items`` items (for tests against exact engines)."""
        n_items = _check_n_items(n_items)
        if n_items > max_items:
            raise ValueError(f"The powerset of {n_items} items has {2 ** n_items - 1} "
                             f"clusters; refusing above max_items={max_items}.")
        clusters = [[i for i in range(n_items) if mask >> i & 1]
                    for mask in range(1, 1 << n_items)]
        return cls.from_clusters(clusters, n_items)

    # ----------------------------------------------------------------- query
    def members(self, vertex):
        """Sorted item indices of a vertex."""
        return np.sort(self.items[self.starts[vertex]:self.stops[vertex]])

    def vertex_of(self, items):
        """The vertex of a cluster given by its items, or ``-1`` if it is not in the family."""
        items = np.unique(np.asarray(items, dtype=np.int64))
        if items.size == 0 or items[0] < 0 or items[-1] >= self.n_items:
            raise ValueError(f"Cluster items must be in 0..{self.n_items - 1}, got {items}.")
        key = _key(_hash_of(item_codes(self.n_items), items), items.size)
        if self._index is None:
            self._index = {_key(h, s): v for v, (h, s) in enumerate(zip(self.hashes,
                                                                       self.sizes))}
        vertex = self._index.get(key, -1)
        if vertex >= 0 and not np.array_equal(self.members(vertex), items):
            return -1
        return vertex

    def masks(self):
        """Bitmask (Python int) of every vertex: for small ``N`` and tests."""
        return [int(sum(1 << int(i) for i in self.members(v))) for v in range(self.n_vertices)]

    def __repr__(self):
        return (f"ClusterFamily(n_items={self.n_items}, n_vertices={self.n_vertices}, "
                f"n_seed_trees={len(self.seed_trees)})")


def _check_n_items(n_items):
    if isinstance(n_items, (bool, np.bool_)) or not isinstance(n_items, (int, np.integer)):
        raise TypeError(f"n_items must be an int, got {n_items!r}.")
    if n_items < 1:
        raise ValueError(f"n_items must be >= 1, got {n_items}.")
    return int(n_items)


def _hash_of(codes, items):
    with np.errstate(over="ignore"):
        return codes[items].sum(axis=0, dtype=np.uint64)


def _key(hash_pair, size):
    return (int(hash_pair[0]), int(hash_pair[1]), int(size))


# -- the builder's compiled core ---------------------------------------------------
# Records (one per distinct cluster, in order of first appearance) are rows of
# ``rec``: start, stop (in the item buffer), size, and the records of a
# construction split (-1: none). ``table`` is an open-addressing hash table of
# record ids keyed by (hash, size); ``tick`` / ``stamp`` mark items for the
# exact member comparison of equal keys.
_START, _STOP, _SIZE, _LEFT, _RIGHT = range(5)
_COLLISION = -2


@njit(cache=True, inline="always")
def _slot(h0, size, mask):
    return np.int64((h0 + np.uint64(size) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(1)) & mask


@njit(cache=True)
def _lookup(rec, hashes, table, h0, h1, size):
    """The record of the cluster with this hash and size, or -1."""
    mask = table.size - 1
    slot = _slot(h0, size, mask)
    while True:
        r = table[slot]
        if r < 0:
            return -1
        if hashes[r, 0] == h0 and hashes[r, 1] == h1 and rec[r, _SIZE] == size:
            return r
        slot = (slot + 1) & mask


@njit(cache=True)
def _insert(rec, hashes, table, n_records, buf, h0, h1, start, stop, left, right,
            members, lo, hi, stamp, tick, check):
    """Add a cluster (members ``members[lo:hi]``, stored at ``buf[start:stop]`` if new).

    Returns its record (``n_records`` if new) or ``_COLLISION``. A known cluster
    gains the split ``(left, right)`` if it had none.
    """
    size = stop - start
    mask = table.size - 1
    slot = _slot(h0, size, mask)
    while True:
        r = table[slot]
        if r < 0:
            break
        if hashes[r, 0] == h0 and hashes[r, 1] == h1 and rec[r, _SIZE] == size:
            if check:       # the same items (members are distinct, sizes equal)
                tick[0] += 1
                t = tick[0]
                for p in range(rec[r, _START], rec[r, _STOP]):
                    stamp[buf[p]] = t
                for p in range(lo, hi):
                    if stamp[members[p]] != t:
                        return _COLLISION
            if rec[r, _LEFT] < 0 and left >= 0:
                rec[r, _LEFT] = left
                rec[r, _RIGHT] = right
            return r
        slot = (slot + 1) & mask
    table[slot] = n_records
    rec[n_records, _START], rec[n_records, _STOP], rec[n_records, _SIZE] = start, stop, size
    rec[n_records, _LEFT], rec[n_records, _RIGHT] = left, right
    hashes[n_records, 0], hashes[n_records, 1] = h0, h1
    return n_records


@njit(cache=True)
def _rehash(rec, hashes, n_records, size):
    table = np.full(size, -1, np.int64)
    mask = size - 1
    for r in range(n_records):
        slot = _slot(hashes[r, 0], rec[r, _SIZE], mask)
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = r
    return table


@njit(cache=True)
def _add_tree_nodes(children, n, base, start, stop, codes, rec, hashes, table, n_records,
                    buf, stamp, tick, tree_records):
    """One pass over a seed tree's merges (its leaf order is at ``buf[base:base + n]``)."""
    node_hash = np.empty((2 * n - 1, 2), np.uint64)
    for i in range(n):  # loops: numba's slice copy compiles for seconds
        node_hash[i, 0], node_hash[i, 1] = codes[i, 0], codes[i, 1]
    for i in range(n):
        tree_records[i] = i
    for node in range(n, 2 * n - 1):
        a, b = children[node - n, 0], children[node - n, 1]
        h0 = node_hash[a, 0] + node_hash[b, 0]
        h1 = node_hash[a, 1] + node_hash[b, 1]
        node_hash[node, 0], node_hash[node, 1] = h0, h1
        lo, hi = base + start[node], base + stop[node]
        r = _insert(rec, hashes, table, n_records, buf, h0, h1, lo, hi, tree_records[a],
                    tree_records[b], buf, lo, hi, stamp, tick, np.bool_(True))
        if r == _COLLISION:
            return -1
        if r == n_records:
            n_records += 1
        tree_records[node] = r
    return n_records


@njit(cache=True)
def _add_window_unions(piece_items, piece_ptr, codes, rec, hashes, table, n_records, buf,
                       offset, stamp, tick, roles, window, row):
    """All unions of a window's pieces (known clusters), in the order of the bit masks.

    Returns ``(n_records, offset)``; ``n_records`` is -1 on a hash collision and
    -2 - j if piece ``j`` is not in the family.
    """
    k = piece_ptr.size - 1
    full = (1 << k) - 1
    union_hash = np.zeros((full + 1, 2), np.uint64)
    union_size = np.zeros(full + 1, np.int64)
    member_start = np.zeros(full + 1, np.int64)
    total = 0
    for mask in range(1, full + 1):
        for j in range(k):
            if mask >> j & 1:
                total += piece_ptr[j + 1] - piece_ptr[j]
    scratch = np.empty(total, np.int64)
    # typed values, not literals (``0``, ``True``): numba compiles _insert once
    # per distinct literal argument
    fill = np.int64(0)
    zero = np.int64(0)
    checked, unchecked = np.bool_(True), np.bool_(False)
    for j in range(k):
        mask = 1 << j
        h0, h1 = np.uint64(0), np.uint64(0)
        for p in range(piece_ptr[j], piece_ptr[j + 1]):
            h0 += codes[piece_items[p], 0]
            h1 += codes[piece_items[p], 1]
            scratch[fill + p - piece_ptr[j]] = piece_items[p]
        size = piece_ptr[j + 1] - piece_ptr[j]
        union_hash[mask, 0], union_hash[mask, 1], union_size[mask] = h0, h1, size
        member_start[mask] = fill
        fill += size
        r = _lookup(rec, hashes, table, h0, h1, size)
        if r < 0:
            return -2 - j, offset
        row[mask] = r
    for mask in range(3, full + 1):
        if mask & (mask - 1) == 0:
            continue
        top = 0
        while mask >> (top + 1):
            top += 1
        rest = mask ^ (1 << top)
        piece = 1 << top
        h0 = union_hash[rest, 0] + union_hash[piece, 0]
        h1 = union_hash[rest, 1] + union_hash[piece, 1]
        size = union_size[rest] + union_size[piece]
        union_hash[mask, 0], union_hash[mask, 1], union_size[mask] = h0, h1, size
        lo = fill
        for e in range(union_size[rest]):  # loops: numba's slice copy compiles for seconds
            scratch[fill + e] = scratch[member_start[rest] + e]
        for e in range(union_size[piece]):
            scratch[fill + union_size[rest] + e] = scratch[member_start[piece] + e]
        member_start[mask] = fill
        fill += size
        known = _lookup(rec, hashes, table, h0, h1, size)
        if mask == full and known >= 0:
            r = known         # the window's own root: already a member (no check)
        elif known >= 0:
            r = _insert(rec, hashes, table, n_records, buf, h0, h1, zero, size, row[rest],
                        row[piece], scratch, lo, lo + size, stamp, tick, checked)
            if r == _COLLISION:
                return -1, offset
        else:
            for e in range(size):
                buf[offset + e] = scratch[lo + e]
            r = _insert(rec, hashes, table, n_records, buf, h0, h1, offset, offset + size,
                        row[rest], row[piece], scratch, lo, lo + size, stamp, tick, unchecked)
            offset += size
            n_records += 1
        if roles[r, 0] < 0:               # the first window role wins
            roles[r, 0], roles[r, 1] = window, mask
        row[mask] = r
    return n_records, offset


@njit(cache=True)
def _add_windows(items, piece_ptr, window_ptr, row_ptr, codes, rec, hashes, table, n_records,
                 buf, offset, stamp, tick, roles, first_window, rows):
    """:func:`_add_window_unions` for window after window: ``(n_records, offset,
    window)``, ``window`` the one that failed when ``n_records < 0``."""
    for w in range(window_ptr.size - 1):
        n_records, offset = _add_window_unions(
            items, piece_ptr[window_ptr[w]:window_ptr[w + 1] + 1], codes, rec, hashes, table,
            n_records, buf, offset, stamp, tick, roles, first_window + w,
            rows[row_ptr[w]:row_ptr[w + 1]])
        if n_records < 0:
            return n_records, offset, w
    return n_records, offset, np.int64(-1)


@njit(cache=True)
def _missing_splits(build_left, build_right, sizes, starts, stops, buf, hashes, codes, rec,
                    record_hashes, table, new_id):
    """``(S - {max S}, {max S})`` for clusters given without a split, when present."""
    for v in range(sizes.size):
        if build_left[v] >= 0 or sizes[v] < 2:
            continue
        top = buf[starts[v]]
        for p in range(starts[v], stops[v]):
            top = max(top, buf[p])
        r = _lookup(rec, record_hashes, table, hashes[v, 0] - codes[top, 0],
                    hashes[v, 1] - codes[top, 1], sizes[v] - 1)
        if r >= 0:
            build_left[v] = new_id[r]
            build_right[v] = top


class _FamilyBuilder:
    """Accumulates clusters with deduplication, then numbers them by size.

    The clusters, their hashes and the hash table live in arrays handled by
    the compiled kernels above (one pass per seed tree, one per window).
    """

    def __init__(self, n_items):
        n = n_items
        self.n_items = n
        self.codes = item_codes(n)
        self.rec = np.empty((max(4 * n, 16), 5), np.int64)
        self.hashes = np.empty((self.rec.shape[0], 2), np.uint64)
        self.roles = np.full((self.rec.shape[0], 2), -1, np.int64)
        self.buf = np.empty(max(4 * n, 16), np.int64)
        self.buf[:n] = np.arange(n)
        self.offset = n
        self.stamp = np.zeros(n, np.int64)
        self.tick = np.zeros(1, np.int64)
        # singletons: records 0..n-1
        self.rec[:n, _START] = np.arange(n)
        self.rec[:n, _STOP] = np.arange(1, n + 1)
        self.rec[:n, _SIZE] = 1
        self.rec[:n, _LEFT:] = -1
        self.hashes[:n] = self.codes
        self.n_records = n
        self.table = self._run(_rehash, self.rec, self.hashes, n, _table_size(n))
        self.trees = []
        self.tree_records = []
        self.tree_offsets = []
        self.window_rows = []

    def _run(self, kernel, *args, interpreted=True):
        """``kernel(*args)``, interpreted for a small family (``INTERPRETED_FAMILY_ITEMS``)."""
        return call(kernel, *args, small=interpreted and self.n_items <= INTERPRETED_FAMILY_ITEMS)

    def _reserve(self, records, items):
        """Room for ``records`` more clusters and ``items`` more buffer entries."""
        need = self.n_records + records
        if need > self.rec.shape[0]:
            size = max(need, 2 * self.rec.shape[0])
            for name, fill in (("rec", None), ("hashes", None), ("roles", -1)):
                old = getattr(self, name)
                new = np.empty((size, 2 if name != "rec" else 5), old.dtype) if fill is None \
                    else np.full((size, 2), fill, old.dtype)
                new[:self.n_records] = old[:self.n_records]
                setattr(self, name, new)
        if 2 * need > self.table.size:
            self.table = self._run(_rehash, self.rec, self.hashes, self.n_records,
                                   _table_size(need))
        if self.offset + items > self.buf.size:
            new = np.empty(max(self.offset + items, 2 * self.buf.size), np.int64)
            new[:self.offset] = self.buf[:self.offset]
            self.buf = new

    def add_tree(self, children):
        n = self.n_items
        order, start, stop = leaf_order(children, n)
        self._reserve(n, n)
        base = self.offset
        self.tree_offsets.append(base)
        self.buf[base:base + n] = order
        self.offset += n
        records = np.empty(2 * n - 1, np.int64)
        self.n_records = _check_collision(self._run(
            _add_tree_nodes, np.ascontiguousarray(children, dtype=np.int64).reshape(-1, 2), n,
            base, start, stop, self.codes, self.rec, self.hashes, self.table, self.n_records,
            self.buf, self.stamp, self.tick, records))
        self.trees.append(children)
        self.tree_records.append(records)

    def add_window(self, pieces):
        """Add every union of the disjoint clusters ``pieces`` (already members)."""
        self.add_windows([pieces])

    def add_windows(self, windows):
        """:meth:`add_window` for each window, in one compiled pass over all of them."""
        windows = [[np.asarray(piece, dtype=np.int64).reshape(-1) for piece in pieces]
                   for pieces in windows]
        if not windows:
            return
        counts = np.array([len(pieces) for pieces in windows], dtype=np.int64)
        if counts.max() > 16:
            k = int(counts.max())
            raise ValueError(f"A window of {k} clusters has {2 ** k - 1} unions; at most "
                             "16 clusters per window.")
        pieces = [piece for window in windows for piece in window]
        piece_ptr = np.zeros(len(pieces) + 1, np.int64)
        np.cumsum([piece.size for piece in pieces], out=piece_ptr[1:])
        window_ptr = np.zeros(len(windows) + 1, np.int64)
        np.cumsum(counts, out=window_ptr[1:])
        row_ptr = np.zeros(len(windows) + 1, np.int64)
        np.cumsum(np.left_shift(1, counts), out=row_ptr[1:])
        window_items = piece_ptr[window_ptr[1:]] - piece_ptr[window_ptr[:-1]]
        entries = int((np.left_shift(1, np.maximum(counts - 1, 0)) * window_items).sum())
        self._reserve(int(row_ptr[-1]), entries)
        rows = np.full(row_ptr[-1], -1, np.int64)
        items = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        n_records, self.offset, failed = self._run(
            _add_windows, items, piece_ptr, window_ptr, row_ptr, self.codes, self.rec,
            self.hashes, self.table, self.n_records, self.buf, self.offset, self.stamp,
            self.tick, self.roles, np.int64(len(self.window_rows)), rows,
            interpreted=entries <= INTERPRETED_WINDOW_ENTRIES)
        if n_records <= -2:
            piece = windows[failed][-2 - n_records]
            raise ValueError("Every cluster of a window must already be in the family; "
                             f"{np.sort(piece)[:10].tolist()}... is not.")
        self.n_records = _check_collision(n_records)
        self.window_rows += np.split(rows, row_ptr[1:-1])

    def add_cluster(self, cluster):
        items = np.unique(np.asarray(list(cluster), dtype=np.int64))
        if items.size == 0:
            raise ValueError("Clusters must be non-empty.")
        if items[0] < 0 or items[-1] >= self.n_items:
            raise ValueError(f"Cluster items must be in 0..{self.n_items - 1}, got "
                             f"{items.tolist()}.")
        hash_pair = _hash_of(self.codes, items)
        self._reserve(1, items.size)
        start = self.offset
        self.buf[start:start + items.size] = items
        self.offset += items.size
        r = _check_collision(self._run(
            _insert, self.rec, self.hashes, self.table, self.n_records, self.buf, hash_pair[0],
            hash_pair[1], start, start + items.size, -1, -1, items, 0, items.size,
            self.stamp, self.tick, True))
        if r == self.n_records:
            self.n_records += 1

    def finish(self):
        n = self.n_items
        if n > 1:
            self.add_cluster(np.arange(n))
        n_records = self.n_records
        rec = self.rec[:n_records]
        buffer = self.buf[:self.offset].copy()
        sizes = rec[:, _SIZE]
        # Stable sort by size: singletons first (in item order), the full set last.
        order = np.argsort(sizes, kind="stable")
        new_id = np.empty(n_records, dtype=np.int64)
        new_id[order] = np.arange(n_records)
        starts = rec[order, _START].copy()
        stops = rec[order, _STOP].copy()
        hashes = self.hashes[:n_records][order].copy()
        left, right = rec[order, _LEFT], rec[order, _RIGHT]
        build_left = np.where(left >= 0, new_id[np.maximum(left, 0)], -1)
        build_right = np.where(left >= 0, new_id[np.maximum(right, 0)], -1)
        # Clusters given without a split: use (S - {max S}, {max S}) when present.
        self._run(_missing_splits, build_left, build_right, sizes[order], starts, stops,
                  buffer, hashes, self.codes, self.rec, self.hashes, self.table, new_id)
        tree_vertices = [new_id[records] for records in self.tree_records]
        roles = self.roles[:n_records][order]
        vertex_window = roles[:, 0].copy()
        vertex_window_mask = np.where(roles[:, 0] >= 0, roles[:, 1], 0)
        width = max((row.size for row in self.window_rows), default=1)
        window_table = np.full((len(self.window_rows), width), -1, dtype=np.int64)
        for w, row in enumerate(self.window_rows):
            window_table[w, 1:row.size] = new_id[row[1:]]
        return ClusterFamily(n, buffer, starts, stops, sizes[order].copy(), build_left,
                             build_right, hashes, self.trees, tree_vertices,
                             self.tree_offsets, vertex_window, vertex_window_mask,
                             window_table)


def _table_size(n_records):
    size = 16
    while size < 2 * n_records:
        size *= 2
    return size


def _check_collision(result):
    if result == -1 or result == _COLLISION:
        raise RuntimeError("128-bit cluster hash collision between different "
                           "clusters (probability ~1e-38): please report it.")
    return result


__all__ = ["ClusterFamily", "item_codes"]
