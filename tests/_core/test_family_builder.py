"""The compiled family builder gives the same ClusterFamily as the former Python one.

``_PythonFamilyBuilder`` below is the pure-Python builder the compiled kernels
of ``_core/family.py`` replaced (dict of cluster keys, one NumPy call per
cluster); every array of the families must agree.
"""

import bisect

import numpy as np
import pytest

from sklearn_trellis._core import family as family_module, interpreted as interpreted_module
from sklearn_trellis._core import trees as trees_module
from sklearn_trellis._core.family import ClusterFamily, _FamilyBuilder, item_codes
from sklearn_trellis._core.trees import leaf_order


@pytest.fixture(params=[False, True], ids=["compiled", "interpreted"])
def interpreted(request, monkeypatch):
    """The builder's kernels compiled at every N, or their Python source
    (``INTERPRETED_FAMILY_ITEMS``); both are checked against the Python builder."""
    on = request.param
    monkeypatch.setattr(family_module, "INTERPRETED_FAMILY_ITEMS", 10 ** 9 if on else 0)
    monkeypatch.setattr(family_module, "INTERPRETED_WINDOW_ENTRIES", 10 ** 9 if on else 0)
    monkeypatch.setattr(trees_module, "INTERPRETED_TREE_ITEMS", 10 ** 9 if on else 0)
    monkeypatch.setattr(interpreted_module, "INTERPRETED_BUDGET_SECONDS", np.inf)
    spent = interpreted_module._spent
    yield on
    assert (interpreted_module._spent > spent) == on
from sklearn_trellis.engines.sparse.seeds import linkage_seed_trees, tree_windows


def _hash_of(codes, items):
    with np.errstate(over="ignore"):
        return codes[items].sum(axis=0, dtype=np.uint64)


def _key(hash_pair, size):
    return (int(hash_pair[0]), int(hash_pair[1]), int(size))


class _PythonFamilyBuilder:
    """The former pure-Python builder (one dict entry per cluster): the oracle."""

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




def _build(builder_class, n, trees=(), clusters=(), windows=()):
    builder = builder_class(n)
    for tree in trees:
        builder.add_tree(np.asarray(tree, dtype=np.int64))
    for cluster in clusters:
        builder.add_cluster(cluster)
    for window in windows:
        builder.add_window(window)
    return builder.finish()


def _assert_same(a, b):
    for name in ("items", "starts", "stops", "sizes", "build_left", "build_right", "hashes",
                 "seed_tree_offsets", "vertex_window", "vertex_window_mask", "window_table"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert len(a.seed_tree_vertices) == len(b.seed_tree_vertices)
    for x, y in zip(a.seed_tree_vertices, b.seed_tree_vertices):
        np.testing.assert_array_equal(x, y)


def _random_tree(rng, n):
    nodes = list(range(n))
    children = []
    for k in range(n, 2 * n - 1):
        a, b = rng.choice(len(nodes), 2, replace=False)
        children.append([nodes[a], nodes[b]])
        nodes = [x for i, x in enumerate(nodes) if i not in (a, b)] + [k]
    return np.array(children, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 40, 300])
def test_same_family_as_python_builder(n, interpreted):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 2))
    trees = linkage_seed_trees(X) if n > 1 else []
    trees += [_random_tree(rng, n) for _ in range(2)] if n > 1 else []
    windows = tree_windows(trees[0], n, 5) if n > 1 else []
    clusters = [rng.choice(n, rng.integers(1, n + 1), replace=False) for _ in range(5)]
    clusters += [[0], list(range(n))]
    args = (n, trees, clusters, windows)
    _assert_same(_build(_FamilyBuilder, *args), _build(_PythonFamilyBuilder, *args))


def test_same_family_windows_of_several_trees(interpreted):
    rng = np.random.default_rng(3)
    n = 120
    trees = [_random_tree(rng, n) for _ in range(3)]
    windows = [w for tree in trees for w in tree_windows(tree, n, 6)]
    args = (n, trees, (), windows)
    _assert_same(_build(_FamilyBuilder, *args), _build(_PythonFamilyBuilder, *args))


def test_same_family_from_clusters(interpreted):
    clusters = [[i for i in range(6) if mask >> i & 1] for mask in range(1, 1 << 6)]
    _assert_same(_build(_FamilyBuilder, 6, clusters=clusters),
                 _build(_PythonFamilyBuilder, 6, clusters=clusters))


def test_window_piece_outside_family(interpreted):
    builder = _FamilyBuilder(4)
    builder.add_tree(np.array([[0, 1], [2, 3], [4, 5]]))
    with pytest.raises(ValueError, match="must already be in the family"):
        builder.add_window([np.array([0, 2]), np.array([1])])


def test_leaf_order_matches_recursion(interpreted):
    rng = np.random.default_rng(0)
    n = 50
    children = _random_tree(rng, n)
    order, start, stop = leaf_order(children, n)

    def leaves(node):
        return [node] if node < n else leaves(children[node - n][0]) + \
            leaves(children[node - n][1])

    assert order.tolist() == leaves(2 * n - 2)
    for node in range(2 * n - 1):
        assert sorted(order[start[node]:stop[node]].tolist()) == sorted(leaves(node))
