"""Tree formats shared by every engine and estimator.

A binary hierarchy appears in these encodings:

- nested pairs ``((0, 1), (2, (3, 4)))`` of item indices (``map_tree_``);
- scikit-learn's ``children_`` (``(N - 1, 2)``, node ``N + k`` made at row ``k``);
- scipy's linkage matrix ``Z`` (``(N - 1, 4)``);
- bit masks: an internal node is ``(parent, left)`` masks (exact engines, N <= 62);
- R's divisive *banner* (objects in order, the height between neighbours) and
  R's ``merge`` matrix (1-based, negative = object), as ``cluster::diana`` returns.

This module holds the one checker per format (:func:`check_tree`,
:func:`check_children`, :func:`check_merge_heights`), the converters between
them and the flat cut of a ``children_`` tree with scikit-learn's semantics
(:func:`threshold_n_clusters`, :func:`cut_children`).
"""

import heapq

import numpy as np
from numba import njit

from .interpreted import call
from .labels import first_appearance_labels

#: Up to this many items :func:`leaf_order` runs its kernel's own Python source
#: (:mod:`~sklearn_trellis._core.interpreted`: ``O(N)`` steps, about 2 ms at 1,000
#: items) instead of compiling it (0.3 s in a first fit).
INTERPRETED_TREE_ITEMS = 1_000


def _fold_tree(tree, leaf, node, *, node_types=(tuple,)):
    """Bottom-up fold of nested pairs without recursion (trees of any depth).

    ``leaf(x)`` maps a leaf, ``node(original, left_value, right_value)`` an
    internal node; internal nodes are instances of ``node_types`` and must
    have exactly two children.
    """
    values = []
    stack = [(tree, False)]
    while stack:
        current, expanded = stack.pop()
        if not isinstance(current, node_types):
            values.append(leaf(current))
        elif expanded:
            right = values.pop()
            left = values.pop()
            values.append(node(current, left, right))
        else:
            if len(current) != 2:
                raise ValueError("A tree is nested pairs (left, right) of item indices; "
                                 f"found a node with {len(current)} children.")
            stack.append((current, True))
            stack.append((current[1], False))
            stack.append((current[0], False))
    return values[0]


def tree_splits(tree):
    """List of ``(left, right)`` item lists of every internal node of a nested-tuple tree
    (children before parents)."""
    out = []

    def node(_, left, right):
        out.append((left, right))
        return left + right

    _fold_tree(tree, lambda x: [int(x)], node)
    return out


def _check_leaf(x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"Tree leaves must be integer item indices, got {x!r}.")
    return int(x)


def check_tree(tree, n_items):
    """Raise ``ValueError`` unless ``tree`` is a binary tree over exactly ``0..n_items-1``.

    Returns the tree as nested tuples of Python ints (lists accepted as nodes).
    """
    items = []

    def leaf(x):
        items.append(_check_leaf(x))
        return items[-1]

    tuples = _fold_tree(tree, leaf, lambda _, left, right: (left, right),
                        node_types=(tuple, list))
    if sorted(items) != list(range(n_items)):
        raise ValueError(f"The tree must contain every item 0..{n_items - 1} exactly once; "
                         f"its leaves are {sorted(items)}.")
    return tuples


# -- scikit-learn children_ -------------------------------------------------
def check_children(children, n_items, *, what="seed tree"):
    """Validate a scikit-learn ``children_`` tree over ``n_items`` leaves; int64 copy.

    Row ``k`` merges two nodes into node ``n_items + k``; each node (a leaf
    ``0..n_items-1`` or an earlier merge) is merged exactly once. ``what``
    names the tree in the error messages.
    """
    children = np.asarray(children)
    if children.ndim != 2 or children.shape != (n_items - 1, 2):
        raise ValueError(f"A {what} must be a scikit-learn `children_` array of shape "
                         f"({n_items - 1}, 2) for {n_items} items, got shape {children.shape}.")
    if not np.issubdtype(children.dtype, np.integer):
        if not np.all(np.equal(np.mod(children, 1), 0)):
            raise TypeError(f"A {what}'s `children_` must hold integer node ids.")
    children = children.astype(np.int64)
    # Nodes are numbered like scikit-learn: leaves 0..N-1, merge k is N + k; in
    # row order, every child must exist already and not have been merged before.
    flat = children.ravel()
    bad = (flat < 0) | (flat >= n_items + np.arange(flat.size) // 2)
    order = np.argsort(flat, kind="stable")
    bad[order[1:]] |= flat[order[1:]] == flat[order[:-1]]    # a later use of a node
    if bad.any():
        first = int(np.argmax(bad))
        raise ValueError(
            f"Invalid {what}: merge {first // 2} uses node {flat[first]}, which is not a "
            "leaf or an earlier merge, or was already merged.")
    return children


def check_merge_heights(heights, n_items):
    """Validate the heights (``distances_``) of the ``n_items - 1`` merges; float64 copy.

    Heights must not decrease from one row to the next (``+inf`` allowed, NaN
    not), so that a threshold cuts the tree as scikit-learn cuts its own.
    """
    heights = np.asarray(heights, dtype=np.float64)
    if heights.shape != (n_items - 1,):
        raise ValueError(f"A tree over {n_items} items has {n_items - 1} merge heights, got "
                         f"shape {heights.shape}.")
    if np.isnan(heights).any() or np.any(np.diff(heights) < 0):
        raise ValueError("Merge heights must be non-decreasing from the first merge to the "
                         "last (and not NaN).")
    return heights.copy()


def tree_to_postorder_children(tree, n_items):
    """``children_`` of a nested-tuple tree, merges in post-order (iterative: any depth).

    The order in which a depth-first walk (left child first) completes the
    internal nodes; :func:`tree_to_children` orders them by height instead.
    """
    tree = check_tree(tree, n_items)
    children = []
    ids = {}
    stack = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, tuple):
            continue
        if expanded:
            left, right = node
            ids[id(node)] = n_items + len(children)
            children.append([left if not isinstance(left, tuple) else ids[id(left)],
                             right if not isinstance(right, tuple) else ids[id(right)]])
        else:
            stack.append((node, True))
            stack.append((node[1], False))
            stack.append((node[0], False))
    return np.array(children, dtype=np.int64).reshape(-1, 2)


def tree_to_children(tree, n_leaves):
    """scikit-learn's ``children_`` and ``distances_`` of a nested-tuple tree.

    The height of a node is its number of levels: leaves are at 0 and a node
    sits one above its higher child. Nodes are listed by increasing height
    (ties: smaller clusters, then lower first item; no two nodes tie on all
    three), so ``distances_`` is non-decreasing and every child appears before
    its parent.
    """
    merges = tree_to_postorder_children(tree, n_leaves)
    n, m = int(n_leaves), len(merges)
    height = np.zeros(n + m, dtype=np.int64)
    size = np.ones(n + m, dtype=np.int64)
    lowest = np.arange(n + m, dtype=np.int64)
    for row, (a, b) in enumerate(merges.tolist()):   # children precede parents
        node = n + row
        height[node] = 1 + max(height[a], height[b])
        size[node] = size[a] + size[b]
        lowest[node] = min(lowest[a], lowest[b])
    order = np.lexsort((lowest[n:], size[n:], height[n:]))
    new_id = np.arange(n + m, dtype=np.int64)
    new_id[n + order] = n + np.arange(m)
    children = new_id[merges[order]].astype(np.intp).reshape(-1, 2)
    return children, height[n:][order].astype(np.float64)


def children_to_tree(children, n_leaves):
    """Nested tuples of a scikit-learn ``children_`` array."""
    nodes = list(range(n_leaves))
    for a, b in children:
        nodes.append((nodes[int(a)], nodes[int(b)]))
    return nodes[-1]


def threshold_n_clusters(heights, distance_threshold):
    """Number of clusters of a cut at ``distance_threshold``, as scikit-learn's.

    ``AgglomerativeClustering`` keeps the merges lower than the threshold and
    undoes every merge at least that high (ties at the threshold are undone).
    ``heights`` are non-decreasing merge heights.
    """
    return int(np.count_nonzero(np.asarray(heights) >= distance_threshold)) + 1


def cut_children(children, n_leaves, n_clusters):
    """Flat labels from the top ``n_clusters - 1`` merges (labels by first appearance).

    The clusters of scikit-learn's ``_hc_cut``: the merges with the largest
    node ids are undone first, so ties in height are undone latest-row first.
    """
    if n_clusters > n_leaves:
        raise ValueError(f"Cannot extract more clusters ({n_clusters}) than samples "
                         f"({n_leaves}).")
    # Undo the latest merges first: a max-heap of node ids (heapq is a min-heap).
    heap = [-(n_leaves + len(children) - 1)] if len(children) else [0]
    while len(heap) < n_clusters:
        node = -heapq.heappop(heap)
        for child in children[node - n_leaves]:
            heapq.heappush(heap, -int(child))
    labels = np.empty(n_leaves, dtype=np.intp)
    for label, root in enumerate(-node for node in heap):
        stack = [root]
        while stack:
            node = stack.pop()
            if node < n_leaves:
                labels[node] = label
            else:
                stack.extend(int(c) for c in children[node - n_leaves])
    return first_appearance_labels(labels).astype(np.intp)


def leaf_order(children, n_items):
    """Leaf order of a ``children_`` tree (depth-first, left child first).

    Returns ``(order, start, stop)``: every node ``k`` (scikit-learn
    numbering) is the range ``order[start[k]:stop[k]]``.
    """
    arguments = (np.ascontiguousarray(children, dtype=np.int64).reshape(-1, 2), int(n_items))
    return call(_leaf_order, *arguments, small=n_items <= INTERPRETED_TREE_ITEMS)


@njit(cache=True)
def _leaf_order(children, n):
    n_nodes = 2 * n - 1
    order = np.empty(n, dtype=np.int64)
    start = np.empty(n_nodes, dtype=np.int64)
    stop = np.empty(n_nodes, dtype=np.int64)
    position = 0
    stack = np.empty(n_nodes, dtype=np.int64)
    stack[0] = n_nodes - 1 if n > 1 else 0
    depth = 1
    while depth:
        depth -= 1
        node = stack[depth]
        if node < n:
            order[position] = node
            start[node] = position
            stop[node] = position + 1
            position += 1
        else:
            stack[depth] = children[node - n, 1]
            stack[depth + 1] = children[node - n, 0]
            depth += 2
    for node in range(n, n_nodes):
        a, b = children[node - n, 0], children[node - n, 1]
        start[node] = min(start[a], start[b])
        stop[node] = max(stop[a], stop[b])
    return order, start, stop


def permute_leaves(children, leaf_of):
    """A ``children_`` tree with leaf ``i`` renamed ``leaf_of[i]`` (merges unchanged).

    Moves seed trees between datasets of the same size: e.g. trees built on
    other jets, with leaves ranked by momentum, mapped onto a new jet's leaves
    of the same ranks (Greenberg et al. 2021, Section 3.1 and Figure 7).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_trellis._core.trees import permute_leaves
    >>> permute_leaves(np.array([[0, 1], [2, 3]]), [2, 0, 1]).tolist()
    [[2, 0], [1, 3]]
    """
    children = np.asarray(children, dtype=np.int64)
    leaf_of = np.asarray(leaf_of, dtype=np.int64)
    n = children.shape[0] + 1
    if leaf_of.shape != (n,) or not np.array_equal(np.sort(leaf_of), np.arange(n)):
        raise ValueError(f"leaf_of must be a permutation of 0..{n - 1}.")
    return np.where(children < n, leaf_of[np.minimum(children, n - 1)], children)


# -- scipy linkage matrices and bit masks -----------------------------------
def children_to_linkage(children, heights):
    """scipy's linkage matrix ``[a, b, height, size]`` of a full ``children_`` tree.

    Examples
    --------
    >>> from sklearn_trellis._core.trees import children_to_linkage
    >>> children_to_linkage([[0, 1], [2, 3]], [0.5, 2.0]).tolist()
    [[0.0, 1.0, 0.5, 2.0], [2.0, 3.0, 2.0, 3.0]]
    """
    children = np.asarray(children, dtype=np.int64).reshape(-1, 2)
    n = children.shape[0] + 1
    sizes = np.ones(2 * n - 1, np.float64)
    for row, (a, b) in enumerate(children.tolist()):
        sizes[n + row] = sizes[a] + sizes[b]
    return np.column_stack([children.astype(np.float64), np.asarray(heights, np.float64),
                            sizes[n:]])


def scipy_to_children(linkage_matrix):
    """scikit-learn ``children_`` (int64, ``(N - 1, 2)``) of a scipy linkage matrix.

    scipy numbers nodes as scikit-learn does (leaves ``0..N-1``, row ``k``
    creates node ``N + k``), so the first two columns are the ``children_``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.cluster.hierarchy import linkage
    >>> from sklearn_trellis._core.trees import scipy_to_children
    >>> Z = linkage(np.array([[0.0], [0.1], [5.0]]), method="single")
    >>> scipy_to_children(Z).tolist()
    [[0, 1], [2, 3]]
    """
    Z = np.asarray(linkage_matrix)
    if Z.ndim != 2 or Z.shape[1] != 4:
        raise ValueError(f"A scipy linkage matrix has shape (N - 1, 4), got {Z.shape}.")
    children = Z[:, :2]
    if not np.all(children == np.round(children)):
        raise ValueError("The first two columns of a linkage matrix must hold node ids.")
    return np.ascontiguousarray(children, dtype=np.int64)


def tree_from_splits(parents, lefts, full):
    """Nested tuples of item indices from the internal nodes' ``(parent, left)`` masks.

    Each internal node is ``(left_subtree, right_subtree)``, the left child
    holding the node's lowest item; a leaf is its item index.
    """
    left_of = dict(zip((int(p) for p in parents), (int(x) for x in lefts)))

    def build(mask):
        if mask & (mask - 1) == 0:
            return mask.bit_length() - 1
        left = left_of[mask]
        return (build(left), build(mask ^ left))

    return build(int(full))


def tree_masks(tree):
    """``(mask, [(parent, left), ...])`` of a nested-tuple tree (left = lowest-item child)."""
    splits = []

    def walk(node):
        if isinstance(node, tuple):
            a = walk(node[0])
            b = walk(node[1])
            parent = a | b
            left = a if (a & -a) < (b & -b) else b
            splits.append((parent, left))
            return parent
        return 1 << int(node)

    return walk(tree), splits


# -- R: banners and merge matrices -------------------------------------------
def banner_to_merge(order, banner, split_order):
    """R's ``merge`` matrix (1-based, negative = object) and the merge heights.

    A divisive tree over ``n`` objects is described by its *banner*
    (Rousseeuw 1986): the objects in the order ``order`` in which the splits
    leave them, and for every position ``k >= 1`` the height ``banner[k]`` at
    which position ``k - 1`` was separated from position ``k``. Heights alone
    are ambiguous when a cluster and one of its parts have the same diameter
    (``a |2| b |2| c`` is ``(a, (b, c))`` or ``((a, b), c)``), so ``split_order``
    says which split came first: R's ``cluster::diana`` reads the banner
    without it (``twins.c``, step 500) and, in that case, joins neighbours that
    never formed a cluster.

    The merges are the splits, bottom-up: among the merges whose parts are
    already formed, the lowest first and, among equal heights, the rightmost
    position first (R's rule, so the matrix is R's wherever R's reading is a
    valid tree).

    Parameters
    ----------
    order : ndarray of int, shape (n,)
        Objects (0-based) in banner order.
    banner : ndarray of float, shape (n,)
        ``banner[k]`` for ``k >= 1`` as above; ``banner[0]`` is ignored.
    split_order : ndarray of int, shape (n,)
        ``split_order[k]`` for ``k >= 1``: when the split at position ``k`` was
        made, in any numbering in which a cluster is split before its parts
        (``split_order[0]`` is ignored).

    Returns
    -------
    merge : ndarray of int64, shape (n - 1, 2)
        R's encoding: ``-j`` is object ``j - 1``, ``r > 0`` the cluster of row ``r``.
    heights : ndarray of float64, shape (n - 1,)
        Height of each merge (non-decreasing).

    Examples
    --------
    >>> from sklearn_trellis._core.trees import banner_to_merge
    >>> merge, heights = banner_to_merge([0, 1, 2], [0.0, 2.0, 2.0], [0, 1, 0])
    >>> merge.tolist(), heights.tolist()
    ([[-1, -2], [1, -3]], [2.0, 2.0])
    """
    order = np.asarray(order, dtype=np.int64)
    banner = np.asarray(banner, dtype=np.float64)
    split_order = np.asarray(split_order, dtype=np.int64)
    n = order.size
    positions = np.arange(1, n)
    # The tree: the split at k joins the maximal runs around k already joined
    # when splits are undone lowest first, later splits first among equal heights.
    parent = np.arange(n)
    node_of_root = -1 - np.arange(n)  # leaf at position p: -1 - p; split at k: k
    left_of = np.zeros(n, dtype=np.int64)
    right_of = np.zeros(n, dtype=np.int64)
    above = np.full(n, -1, dtype=np.int64)  # the split whose part a split is

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for k in positions[np.lexsort((-split_order[1:], banner[1:]))]:
        left, right = find(k - 1), find(k)
        left_of[k], right_of[k] = node_of_root[left], node_of_root[right]
        for child in (left_of[k], right_of[k]):
            if child > 0:
                above[child] = k
        parent[right] = left
        node_of_root[left] = k
    # Bottom-up by R's rule among the merges whose parts exist.
    waiting = ((left_of > 0).astype(np.int64) + (right_of > 0))
    ready = [(banner[k], -k) for k in positions if waiting[k] == 0]
    heapq.heapify(ready)
    code = np.zeros(n, dtype=np.int64)
    merge = np.empty((max(n - 1, 0), 2), dtype=np.int64)
    heights = np.empty(max(n - 1, 0), np.float64)
    for row in range(n - 1):
        height, k = heapq.heappop(ready)
        k = -k
        code[k] = row + 1
        merge[row] = [code[c] if c > 0 else -(order[-1 - c] + 1)
                      for c in (left_of[k], right_of[k])]
        heights[row] = height
        up = above[k]
        if up > 0:
            waiting[up] -= 1
            if waiting[up] == 0:
                heapq.heappush(ready, (banner[up], -up))
    return merge, heights


def merge_to_children(merge):
    """scikit-learn ``children_`` (int64) of an R ``merge`` matrix."""
    merge = np.asarray(merge, dtype=np.int64)
    n = merge.shape[0] + 1
    return np.where(merge < 0, -merge - 1, n + merge - 1).astype(np.int64)


__all__ = ["banner_to_merge", "check_children", "check_merge_heights", "check_tree", "children_to_linkage",
           "children_to_tree", "cut_children", "leaf_order", "merge_to_children",
           "permute_leaves", "scipy_to_children", "threshold_n_clusters", "tree_from_splits", "tree_masks",
           "tree_splits", "tree_to_children", "tree_to_postorder_children"]
