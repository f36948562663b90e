"""Tree formats shared by every engine and estimator.

A binary hierarchy appears in three encodings:

- nested pairs ``((0, 1), (2, (3, 4)))`` of item indices (``map_tree_``);
- scikit-learn's ``children_`` (``(N - 1, 2)``, node ``N + k`` made at row ``k``);
- scipy's linkage matrix ``Z`` (``(N - 1, 4)``).

This module holds the one checker per format and the converters between them.
"""

import numpy as np


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
