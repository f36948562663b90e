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

import bisect

import numpy as np

from .trees import check_children, leaf_order, tree_to_postorder_children

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
        for window in windows:
            builder.add_window(window)
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


class _FamilyBuilder:
    """Accumulates clusters with deduplication, then numbers them by size."""

    def __init__(self, n_items):
        self.n_items = n_items
        self.codes = item_codes(n_items)
        self.chunks = [np.arange(n_items, dtype=np.int64)]   # singletons live here
        self.chunk_starts = [0]       # buffer offset of each chunk (records never span two)
        self.offset = n_items
        # per cluster: (start, stop, size, hash, build_left key, build_right key)
        self.records = []
        self.index = {}
        self.trees = []
        self.tree_keys = []
        self.tree_offsets = []
        self.window_roles = {}        # cluster key -> (window, mask): first role wins
        self.n_windows = 0
        self.window_keys = []         # per window: key of the union of each mask
        for i in range(n_items):
            self._add(i, i + 1, self.codes[i], None, None, self.chunks[0][i:i + 1])

    def _add(self, start, stop, hash_pair, left_key, right_key, members):
        size = stop - start
        key = _key(hash_pair, size)
        known = self.index.get(key)
        if known is not None:
            record = self.records[known]
            other = self._members(record)
            if not np.array_equal(np.sort(other), np.sort(members)):
                raise RuntimeError("128-bit cluster hash collision between different "
                                   "clusters (probability ~1e-38): please report it.")
            if record[4] is None and left_key is not None:
                self.records[known] = record[:4] + (left_key, right_key)
            return key
        self.index[key] = len(self.records)
        self.records.append((start, stop, size, hash_pair, left_key, right_key))
        return key

    def _members(self, record):
        start, stop = record[0], record[1]
        # Look the chunk up instead of concatenating: duplicates are frequent.
        i = bisect.bisect_right(self.chunk_starts, start) - 1
        base = self.chunk_starts[i]
        return self.chunks[i][start - base:stop - base]

    def _append(self, items):
        self.chunk_starts.append(self.offset)
        self.chunks.append(items)
        self.offset += items.size

    def _buffer(self):
        if len(self.chunks) > 1:
            self.chunks = [np.concatenate(self.chunks)]
            self.chunk_starts = [0]
        return self.chunks[0]

    def add_tree(self, children):
        n = self.n_items
        n_nodes = 2 * n - 1
        order, start, stop = leaf_order(children, n)
        base = self.offset
        self.tree_offsets.append(base)
        self._append(order)
        keys = [_key(self.codes[i], 1) for i in range(n)] + [None] * (n - 1)
        hashes = np.empty((n_nodes, 2), dtype=np.uint64)
        hashes[:n] = self.codes
        with np.errstate(over="ignore"):
            for node in range(n, n_nodes):
                a, b = children[node - n]
                hashes[node] = hashes[a] + hashes[b]
                keys[node] = self._add(base + start[node], base + stop[node], hashes[node],
                                       keys[a], keys[b], order[start[node]:stop[node]])
        self.trees.append(children)
        self.tree_keys.append(keys)

    def add_window(self, pieces):
        """Add every union of the disjoint clusters ``pieces`` (already members)."""
        pieces = [np.asarray(piece, dtype=np.int64) for piece in pieces]
        k = len(pieces)
        if k > 16:
            raise ValueError(f"A window of {k} clusters has {2 ** k - 1} unions; at most "
                             "16 clusters per window.")
        hashes = [_hash_of(self.codes, piece) for piece in pieces]
        keys = [_key(h, piece.size) for h, piece in zip(hashes, pieces)]
        for piece, key in zip(pieces, keys):
            if key not in self.index:
                raise ValueError("Every cluster of a window must already be in the family; "
                                 f"{np.sort(piece)[:10].tolist()}... is not.")
        # unions[mask] = (hash, size, key, members); a union is built as
        # (union without its highest piece) + (highest piece).
        unions = {1 << j: (hashes[j], pieces[j].size, keys[j], pieces[j]) for j in range(k)}
        full = (1 << k) - 1
        window = self.n_windows
        self.n_windows += 1
        table = [None] * (full + 1)
        for j in range(k):
            table[1 << j] = keys[j]
        self.window_keys.append(table)

        with np.errstate(over="ignore"):
            for mask in range(3, full + 1):
                if mask & (mask - 1) == 0:
                    continue
                top = mask.bit_length() - 1
                rest = mask ^ (1 << top)
                rest_hash, rest_size, rest_key, rest_members = unions[rest]
                hash_pair = rest_hash + hashes[top]
                size = rest_size + pieces[top].size
                key = _key(hash_pair, size)
                members = np.concatenate([rest_members, pieces[top]]) if mask != full else None
                self.window_roles.setdefault(key, (window, mask))
                table[mask] = key
                if mask == full and key in self.index:
                    # The window's own root: already a member (no copy, no check).
                    unions[mask] = (hash_pair, size, key, None)
                    continue
                if members is None:
                    members = np.concatenate([rest_members, pieces[top]])
                if key in self.index:
                    self._add(0, size, hash_pair, rest_key, keys[top], members)
                else:
                    start = self.offset
                    self._append(members)
                    self._add(start, start + size, hash_pair, rest_key, keys[top], members)
                unions[mask] = (hash_pair, size, key, members)

    def add_cluster(self, cluster):
        items = np.unique(np.asarray(list(cluster), dtype=np.int64))
        if items.size == 0:
            raise ValueError("Clusters must be non-empty.")
        if items[0] < 0 or items[-1] >= self.n_items:
            raise ValueError(f"Cluster items must be in 0..{self.n_items - 1}, got "
                             f"{items.tolist()}.")
        hash_pair = _hash_of(self.codes, items)
        start = self.offset
        self._append(items)
        self._add(start, start + items.size, hash_pair, None, None, items)

    def finish(self):
        n = self.n_items
        if n > 1:
            self.add_cluster(np.arange(n))
        buffer = self._buffer()
        records = self.records
        sizes = np.array([r[2] for r in records], dtype=np.int64)
        # Stable sort by size: singletons first (in item order), the full set last.
        order = np.argsort(sizes, kind="stable")
        new_id = np.empty(len(records), dtype=np.int64)
        new_id[order] = np.arange(len(records))
        keys = [_key(r[3], r[2]) for r in records]
        position = {key: new_id[old] for key, old in zip(keys, range(len(records)))}
        starts = np.array([records[i][0] for i in order], dtype=np.int64)
        stops = np.array([records[i][1] for i in order], dtype=np.int64)
        hashes = np.array([records[i][3] for i in order], dtype=np.uint64).reshape(-1, 2)
        build_left = np.full(len(records), -1, dtype=np.int64)
        build_right = np.full(len(records), -1, dtype=np.int64)
        for v, old in enumerate(order):
            left_key, right_key = records[old][4], records[old][5]
            if left_key is not None:
                build_left[v] = position[left_key]
                build_right[v] = position[right_key]
        # Clusters given without a split: use (S - {max S}, {max S}) when present.
        codes = self.codes
        for v in np.flatnonzero((build_left < 0) & (sizes[order] > 1)):
            members = buffer[starts[v]:stops[v]]
            top = int(members.max())
            rest = members[members != top]
            with np.errstate(over="ignore"):
                rest_hash = hashes[v] - codes[top]
            left = position.get(_key(rest_hash, rest.size))
            if left is not None:
                build_left[v] = left
                build_right[v] = top
        tree_vertices = [np.array([position[k] for k in keys_], dtype=np.int64)
                         for keys_ in self.tree_keys]
        vertex_window = np.full(len(records), -1, dtype=np.int64)
        vertex_window_mask = np.zeros(len(records), dtype=np.int64)
        for key, (window, mask) in self.window_roles.items():
            vertex_window[position[key]] = window
            vertex_window_mask[position[key]] = mask
        width = max((len(t) for t in self.window_keys), default=1)
        window_table = np.full((len(self.window_keys), width), -1, dtype=np.int64)
        for w, table in enumerate(self.window_keys):
            window_table[w, 1:len(table)] = [position[key] for key in table[1:]]
        return ClusterFamily(n, buffer, starts, stops, sizes[order], build_left, build_right,
                             hashes, self.trees, tree_vertices, self.tree_offsets,
                             vertex_window, vertex_window_mask, window_table)


__all__ = ["ClusterFamily", "item_codes"]
