"""Tree formats: every converter against the brute-force tree enumeration."""

import numpy as np
import pytest

from oracles import binary_trees, canonical_tree, tree_clusters, tree_leaves
from sklearn_trellis._core.trees import (
    check_children,
    check_tree,
    children_to_tree,
    cut_children,
    leaf_order,
    permute_leaves,
    tree_from_splits,
    tree_masks,
    tree_to_children,
    tree_to_postorder_children,
)


def node_sets(children, n):
    members = [frozenset([i]) for i in range(n)]
    for a, b in children:
        members.append(members[a] | members[b])
    return members


def test_every_tree_of_five_items_round_trips():
    n = 5
    for tree in binary_trees(range(n)):
        clusters = {frozenset(c) for c in tree_clusters(tree)}
        post = tree_to_postorder_children(tree, n)
        children, heights = tree_to_children(tree, n)
        for merges in (post, children):
            assert check_children(merges, n).shape == (n - 1, 2)
            assert set(node_sets(merges, n)) == clusters
            assert canonical_tree(children_to_tree(merges, n)) == canonical_tree(tree)
        # Heights: levels above the leaves, non-decreasing, ties by size then lowest item.
        members = node_sets(children, n)[n:]
        keys = [(h, len(m), min(m)) for h, m in zip(heights, members)]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        assert heights[-1] == max(heights) and heights[0] == 1
        mask, splits = tree_masks(tree)
        assert mask == (1 << n) - 1 and len(splits) == n - 1
        parents, lefts = zip(*splits)
        assert canonical_tree(tree_from_splits(parents, lefts, mask)) == canonical_tree(tree)


def test_deep_trees_convert_without_recursion():
    n = 3000
    chain = 0
    for item in range(1, n):
        chain = (chain, item)
    children, heights = tree_to_children(chain, n)
    assert heights.tolist() == list(range(1, n))
    assert children[0].tolist() == [0, 1] and children[-1].tolist() == [2 * n - 3, n - 1]
    assert np.array_equal(tree_to_postorder_children(chain, n), children)


def union_find_cut(children, n, n_merges):
    """Labels after the first ``n_merges`` merges, in order of first appearance."""
    root = list(range(2 * n - 1))

    def find(x):
        while root[x] != x:
            x = root[x]
        return x

    for step in range(n_merges):
        for child in children[step]:
            root[find(int(child))] = n + step
    labels, seen = [], {}
    for i in range(n):
        labels.append(seen.setdefault(find(i), len(seen)))
    return labels


def test_cut_children_undoes_the_latest_merges():
    rng = np.random.default_rng(0)
    n = 7
    trees = binary_trees(range(n))
    for index in rng.choice(len(trees), 40, replace=False):
        children, _ = tree_to_children(trees[index], n)
        for k in range(1, n + 1):
            labels = cut_children(children, n, k)
            assert labels.tolist() == union_find_cut(children, n, n - k)
            assert labels.max() + 1 == k
    with pytest.raises(ValueError, match="more clusters"):
        cut_children(children, n, n + 1)


def test_leaf_order_ranges_and_permuted_leaves():
    tree = ((3, (0, 4)), (1, 2))
    children = tree_to_postorder_children(tree, 5)
    order, start, stop = leaf_order(children, 5)
    assert order.tolist() == [3, 0, 4, 1, 2]
    for node, members in enumerate(node_sets(children, 5)):
        assert set(order[start[node]:stop[node]].tolist()) == members
    leaf_of = [4, 3, 2, 1, 0]
    moved = children_to_tree(permute_leaves(children, leaf_of), 5)
    assert tree_leaves(moved) == tuple(range(5))
    assert moved == ((1, (4, 0)), (3, 2))


@pytest.mark.parametrize("children, error, match", [
    (np.zeros((3, 2), int), ValueError, "shape"),
    (np.array([[0, 1], [0, 2]]), ValueError, "Invalid seed tree"),
    (np.array([[0, 4], [3, 2]]), ValueError, "Invalid seed tree"),
    (np.array([[3, 1], [4, 2]]), ValueError, "Invalid seed tree"),
    (np.array([[0.5, 1], [3, 2]]), TypeError, "integer"),
])
def test_check_children_refuses_non_trees(children, error, match):
    with pytest.raises(error, match=match):
        check_children(children, 3)


def test_check_tree_refuses_non_trees():
    with pytest.raises(ValueError, match="exactly once"):
        check_tree(((0, 1), 1), 3)
    with pytest.raises(ValueError, match="children"):
        check_tree((0, 1, 2), 3)
    with pytest.raises(TypeError, match="integer"):
        check_tree((0, 1.0), 2)
    assert check_tree([[0, 2], 1], 3) == ((0, 2), 1)
