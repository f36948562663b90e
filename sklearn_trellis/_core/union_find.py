"""Union-find (disjoint sets) in numba: the one ``find_root`` the kernels share.

A forest is an int array ``parent`` with ``parent[r] == r`` at the roots; the
callers do their own unions (which root becomes the parent decides what they
reproduce, e.g. scipy's cluster ids), so only the lookup lives here.
"""

from numba import njit


@njit(cache=True)
def find_root(parent, x):
    """Root of ``x``'s set, compressing the path from ``x`` to it (every node then points at it)."""
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


__all__ = ["find_root"]
