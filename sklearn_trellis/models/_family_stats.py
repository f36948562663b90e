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
from numba import njit


@njit(cache=True, inline="always")
def _part(value, sign):
    if sign > 0:
        return max(value, 0.0)
    if sign < 0:
        return max(-value, 0.0)
    return value


@njit(cache=True)
def _pair_sums(matrix, items, starts, stops, build_left, build_right, sign):
    n_vertices = starts.size
    out = np.zeros(n_vertices)
    for v in range(n_vertices):
        size = stops[v] - starts[v]
        if size < 2:
            continue
        left = build_left[v]
        acc = 0.0
        if left >= 0:
            right = build_right[v]
            for a in range(starts[left], stops[left]):
                row = items[a]
                for b in range(starts[right], stops[right]):
                    acc += _part(matrix[row, items[b]], sign)
            out[v] = out[left] + out[right] + acc
        else:
            # No construction split: sum over the pairs directly.
            for a in range(starts[v], stops[v]):
                row = items[a]
                for b in range(a + 1, stops[v]):
                    acc += _part(matrix[row, items[b]], sign)
            out[v] = acc
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
    return _pair_sums(matrix, family.items, family.starts, family.stops,
                      family.build_left, family.build_right, signs[part])


@njit(cache=True)
def _item_sums(values, items, starts, stops, build_left, build_right):
    n_vertices = starts.size
    k = values.shape[1]
    out = np.zeros((k, n_vertices))
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


@njit(cache=True)
def _item_sums_per_row(values, items, starts, stops, build_left, build_right):
    m = values.shape[0]
    n_vertices = starts.size
    out = np.zeros((m, n_vertices))
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


__all__ = ["family_pair_sums", "family_item_sums", "family_item_sums_per_row"]
