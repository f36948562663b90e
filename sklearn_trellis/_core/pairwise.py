"""Pairwise similarities of the hierarchical energies, from a distance matrix.

The estimators hand distance-based split models an (N, N) distance matrix
``D`` (computed from ``X`` with the estimator's ``metric``, or ``X`` itself
when ``metric='precomputed'``). ``'exp'`` turns it into similarities
``s_ij = exp(-d_ij / scale)`` in ``(0, 1]``, with ``scale`` defaulting to the
median off-diagonal distance (so the result does not depend on the units of
``X``). With ``scale='local'`` the length scale is local to each pair,
``s_ij = exp(-d_ij / sqrt(sigma_i sigma_j))`` with ``sigma_i`` the distance of
item ``i`` to its ``n_neighbors``-th nearest neighbour (Zelnik-Manor & Perona's
self-tuning scale): every item then has similarities of the same order to its
own neighbourhood, so outliers and items of sparse clusters are not set apart
by a low total similarity alone. ``'precomputed'`` uses the matrix given to
the model as the similarities themselves.
"""

import math
import numbers

import numpy as np
from numba import njit, prange

from .budget import check_memory
from .parallel import parallel_kernel, run_beside
from .validation import check_scalar_param

SIMILARITIES = ("exp", "precomputed")

#: Up to this many entries, the checks of a matrix or vector are numpy's: their
#: temporaries are small, and a small fit then compiles no checking kernel
#: (the kernels read large inputs in place, without temporaries).
SMALL_CHECK_ENTRIES = 1_000_000


def scan_pairwise_matrix(matrix):
    """``(all finite, largest |entry|, largest |m_ij - m_ji|)`` of a square matrix.

    float32 and float64 matrices are read in place (no copy) beyond
    ``SMALL_CHECK_ENTRIES`` entries.
    """
    if matrix.dtype not in (np.float32, np.float64):
        matrix = np.asarray(matrix, dtype=np.float64)
    if 0 < matrix.size <= SMALL_CHECK_ENTRIES:
        # Differences in the matrix's own dtype, as the kernel's; not finite: the
        # kernel (its maxima are over the finite pairs).
        if np.isfinite(matrix).all():
            return (True, float(np.abs(matrix).max()),
                    float(np.abs(matrix - matrix.T).max()))
    kernel, n_slots = _scan.with_slots(matrix.size)
    found = kernel(matrix, 64, n_slots)
    # Maxima: the same whichever slot saw which tile.
    return bool(found[:, 0].all()), float(found[:, 1].max()), float(found[:, 2].max())


@parallel_kernel
def _scan(matrix, tile, n_slots):
    """Per slot ``(all finite, largest |entry|, largest |m_ij - m_ji|)`` of the rows of
    tiles ``slot``, ``slot + n_slots``, ... (one tiled pass over the matrix)."""
    n = matrix.shape[0]
    found = np.zeros((n_slots, 3), np.float64)
    n_tiles = (n + tile - 1) // tile
    for slot in prange(n_slots):
        finite = True
        largest = 0.0
        asymmetry = 0.0
        for t in range(slot, n_tiles, n_slots):
            bi = t * tile
            for bj in range(bi, n, tile):
                for i in range(bi, min(bi + tile, n)):
                    for j in range(max(bj, i), min(bj + tile, n)):
                        a = matrix[i, j]
                        b = matrix[j, i]
                        if not (np.isfinite(a) and np.isfinite(b)):
                            finite = False
                        else:
                            largest = max(largest, abs(float(a)), abs(float(b)))
                            asymmetry = max(asymmetry, abs(float(a) - float(b)))
        found[slot, 0] = 1.0 if finite else 0.0
        found[slot, 1] = largest
        found[slot, 2] = asymmetry
    return found


def check_pairwise_matrix(matrix, name):
    """An (N, N) finite symmetric float matrix, or a ValueError naming ``name``.

    Asymmetry up to ``1e-10`` times the largest entry (rounding) is removed by
    averaging with the transpose. The checks allocate nothing of size N x N
    (one tiled pass), so large distance matrices cost no extra memory.
    """
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix, got shape {m.shape}.")
    finite, largest, asymmetry = scan_pairwise_matrix(m)
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite values.")
    if asymmetry > 1e-10 * max(1.0, largest):
        raise ValueError(f"{name} must be symmetric.")
    if asymmetry == 0.0:
        return m
    return _symmetrized(m, 64)


@njit(cache=True)
def _symmetrized(matrix, tile):
    """``(m + m.T) / 2`` as a new array, tile by tile (cache friendly)."""
    n = matrix.shape[0]
    out = np.empty_like(matrix)
    for bi in range(0, n, tile):
        for bj in range(bi, n, tile):
            for i in range(bi, min(bi + tile, n)):
                for j in range(max(bj, i), min(bj + tile, n)):
                    value = 0.5 * (matrix[i, j] + matrix[j, i])
                    out[i, j] = value
                    out[j, i] = value
    return out


#: Metrics :func:`condensed_distances` takes from scipy's ``pdist`` (sklearn name: scipy name).
_PDIST_METRICS = {"euclidean": "euclidean", "l2": "euclidean", "manhattan": "cityblock",
                  "l1": "cityblock", "cityblock": "cityblock", "cosine": "cosine"}


def condensed_distances_bytes(n, metric="euclidean"):
    """Peak bytes of :func:`condensed_distances` for ``n`` rows: the condensed values,
    and for a metric pdist does not compute the blocks of ``pairwise_distances_chunked``
    (rows within scikit-learn's ``working_memory``; 16 bytes per block entry measured,
    12 when one block is the whole matrix)."""
    from sklearn.utils._chunking import get_chunk_n_rows

    condensed = 8 * (n * (n - 1) // 2)
    if isinstance(metric, str) and metric in _PDIST_METRICS:
        return condensed
    return condensed + 16 * get_chunk_n_rows(row_bytes=8 * n, max_n_rows=n) * n


def condensed_distances(X, metric="euclidean"):
    """The distances of the rows of ``X`` in scipy's condensed form, ``N (N - 1) / 2`` values.

    scipy's ``pdist`` for the euclidean, manhattan and cosine metrics (the
    euclidean distances of scipy's and scikit-learn's Ward trees, computed
    exactly, not by the dot-product expansion); any other
    :func:`sklearn.metrics.pairwise_distances` metric row block by row block.
    No N x N array is made.
    """
    from scipy.spatial.distance import pdist
    from sklearn.metrics import pairwise_distances_chunked

    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if isinstance(metric, str) and metric in _PDIST_METRICS:
        if _PDIST_METRICS[metric] == "cosine" and np.any(np.linalg.norm(X, axis=1) == 0):
            raise ValueError("Cosine affinity cannot be used when X contains zero vectors")
        return pdist(X, _PDIST_METRICS[metric])
    out = np.empty(n * (n - 1) // 2, np.float64)
    position, row = 0, 0
    for block in pairwise_distances_chunked(X, metric=metric):
        for values in block:
            tail = values[row + 1:]
            out[position:position + tail.size] = tail
            position += tail.size
            row += 1
    return out


#: Side of the tiles of :func:`euclidean_square` (both tiles of a pair in cache).
_TILE = 64


@parallel_kernel(nogil=True)
def euclidean_square(X, out):
    """Fill ``out`` (N, N) with the euclidean distances of ``X``'s rows, zero diagonal.

    Each distance is scipy's ``pdist`` value bit for bit (the squared
    differences summed feature by feature in order, then the square root), so
    trees built from it are those built from ``pdist``. Tiles of ``_TILE``
    rows against ``_TILE`` rows, both halves of the matrix written at once: a
    row's sums against the tile's columns grow feature by feature over the
    transposed rows (contiguous, so the loop runs in SIMD lanes, each lane one
    pair's sum in pdist's order), about a third of ``pdist``'s time and no
    condensed copy. Run as ``euclidean_square.for_work(N * N * n_features)(X, out)``.
    """
    n, d = X.shape
    columns = np.empty((d, n), np.float64)   # X transposed: a feature's values contiguous
    for i in range(n):
        for k in range(d):
            columns[k, i] = X[i, k]
    blocks = (n + _TILE - 1) // _TILE
    for b in prange(blocks * blocks):
        bi, bj = b // blocks, b % blocks
        if bj < bi:
            continue
        total = np.empty(_TILE, np.float64)
        for i in range(bi * _TILE, min(bi * _TILE + _TILE, n)):
            if bi == bj:
                out[i, i] = 0.0
            first = max(bj * _TILE, i + 1)
            stop = min(bj * _TILE + _TILE, n)
            if first >= stop:
                continue
            width = stop - first
            for j in range(width):
                total[j] = 0.0
            for k in range(d):
                x = X[i, k]
                feature = columns[k]
                for j in range(width):
                    step = x - feature[first + j]
                    total[j] += step * step
            for j in range(width):
                value = math.sqrt(total[j])
                out[i, first + j] = value
                out[first + j, i] = value
    return out


@njit(cache=True)
def square_from_condensed(condensed, out):
    """Fill ``out`` (N, N) with the symmetric matrix of ``condensed``, zero diagonal."""
    n = out.shape[0]
    p = 0
    for i in range(n):
        out[i, i] = 0.0
        for j in range(i + 1, n):
            out[i, j] = condensed[p]
            out[j, i] = condensed[p]
            p += 1
    return out


@njit(cache=True)
def finite_nonnegative(values):
    """``(all finite, all >= 0)`` of a 1-d array, without a temporary of its size."""
    finite, nonnegative = True, True
    for value in values:
        if not np.isfinite(value):
            finite = False
        elif value < 0:
            nonnegative = False
    return finite, nonnegative


def upper_triangle(matrix):
    """The entries above the diagonal, row by row (scipy's condensed form).

    A copy of half the matrix: refused before allocating if it does not fit.
    """
    n = matrix.shape[0]
    check_memory(matrix.dtype.itemsize * (n * (n - 1) // 2),
                 f"a condensed copy of the ({n}, {n}) matrix's upper triangle",
                 way_out="Use fewer samples.")
    out = np.empty(n * (n - 1) // 2, dtype=matrix.dtype)
    position = 0
    for i in range(n - 1):
        row = matrix[i, i + 1:]
        out[position:position + row.size] = row
        position += row.size
    return out


def median_off_diagonal(matrix):
    """Median off-diagonal entry of a symmetric matrix (1.0 if none or not positive)."""
    n = matrix.shape[0]
    if n < 2:
        return 1.0
    # The off-diagonal entries are the upper triangle twice, so its median is theirs;
    # half the memory of masking the full matrix.
    values = upper_triangle(matrix)
    count = values.size
    half = count // 2
    if count % 2:
        values.partition(half)
        value = float(values[half])
    else:
        values.partition([half - 1, half])
        value = 0.5 * (float(values[half - 1]) + float(values[half]))
    return value if value > 0 else 1.0


SCALES = ("median", "local")


def check_scale(scale, n_neighbors=20):
    """Validate a ``scale`` (positive float, None, 'median' or 'local') and ``n_neighbors``."""
    if isinstance(scale, str):
        if scale not in SCALES:
            raise ValueError(f"scale must be a positive float, None, 'median' or 'local', "
                             f"got {scale!r}.")
    else:
        check_scalar_param(scale, "scale", low=0.0, include_low=False, allow_none=True)
    check_scalar_param(n_neighbors, "n_neighbors", kind=numbers.Integral, low=1)


def local_scales(distances, n_neighbors, *, fitted=True):
    """``sigma_i``: each row's distance to its ``n_neighbors``-th nearest item.

    ``fitted=True``: the rows of an (N, N) matrix whose diagonal is the item
    itself (excluded); ``False``: rows of new items against N fitted ones.
    Non-positive values (duplicates) become the smallest positive scale (1.0
    if none), so that every pair has a finite length scale. Row blocks keep the
    extra memory at ``O(N)`` rows of 4,096 floats.
    """
    d = np.asarray(distances, dtype=np.float64)
    n_rows, n_cols = d.shape
    k = min(int(n_neighbors), n_cols - 1) if fitted else min(int(n_neighbors), n_cols) - 1
    k = max(k, 0)
    sigma = np.empty(n_rows, np.float64)
    if d.size > SMALL_CHECK_ENTRIES:
        # One pass over the rows in place, on numba's threads (numpy's partition
        # copies and selects each row: about 1 s serially at N = 10,000).
        _kth_smallest_rows.for_work(d.size)(d, k, sigma)
    else:
        step = max(1, 4096 * 64 // max(n_cols, 1))
        for start in range(0, n_rows, step):
            block = np.array(d[start:start + step])
            block.partition(k, axis=1)
            sigma[start:start + step] = block[:, k]
    positive = sigma[sigma > 0]
    sigma[~(sigma > 0)] = positive.min() if positive.size else 1.0
    return sigma


@parallel_kernel
def _kth_smallest_rows(d, k, out):
    """``out[i]``: the ``k``-th smallest entry of row ``i`` (0-based, ``k < d.shape[1]``),
    the value ``np.partition(d[i], k)[k]`` holds; rows of finite values.

    Each row keeps its ``k + 1`` smallest values so far in ascending order: an
    entry not below the largest of them is passed over after one comparison.
    """
    n_rows, n_cols = d.shape
    for i in prange(n_rows):
        best = np.empty(k + 1, np.float64)
        row = d[i]
        held = 0
        for j in range(n_cols):
            value = row[j]
            if held <= k:
                position = held
                held += 1
            elif value < best[k]:
                position = k
            else:
                continue
            while position > 0 and best[position - 1] > value:
                best[position] = best[position - 1]
                position -= 1
            best[position] = value
        out[i] = best[k]
    return out


def _by_row_halves(task, n_rows, size):
    """``task(rows)`` on two slices of the rows at once (numpy's element-wise ufuncs
    release the GIL), or on all of them for a small matrix (``size`` entries).

    The halves meet at a row that is a multiple of 8: each slice starts at the
    same offset modulo a SIMD register as in the whole matrix, so every entry
    goes through the same code path (the same bits).
    """
    half = (n_rows // 2) & ~7
    if size <= SMALL_CHECK_ENTRIES or half == 0:
        task(slice(0, n_rows))
        return
    run_beside(lambda: task(slice(half, n_rows)), lambda: task(slice(0, half)))


def _divide_by_pair_scales(d, sigma_rows, sigma_cols, out):
    """``out = d / sqrt(sigma_i sigma_j)`` without an (N, N) temporary."""
    np.divide(d, np.sqrt(sigma_rows)[:, None], out=out)
    out /= np.sqrt(sigma_cols)[None, :]
    return out


def similarity_from_distances(distances, kind, scale, return_scale=False, n_neighbors=20,
                              copy=True):
    """Similarity matrix (zero diagonal) from a distance matrix, or the matrix itself.

    Validates the models' ``similarity``, ``scale`` and ``n_neighbors``
    hyperparameters. Makes one (N, N) copy, and never modifies the input,
    unless ``copy=False`` and ``distances`` is a float64 array: it then becomes
    the similarities (one N x N array less; the caller gives it up). With
    ``return_scale``, also returns the length scale used (a float, the
    ``(N,)`` local scales for ``scale='local'``, ``None`` for
    ``'precomputed'``), which :func:`new_item_similarities` needs to place new
    items on the same scale.
    """
    width = None
    check_scale(scale, n_neighbors)
    if kind == "precomputed":
        s = check_pairwise_matrix(distances, "The precomputed similarity matrix")
        if copy and np.may_share_memory(s, distances):  # a view (e.g. of a numba result)
            s = s.copy()
    elif kind == "exp":
        d = check_pairwise_matrix(distances, "The distance matrix")
        if d.size and d.min() < 0:  # a reduction: no (N, N) temporary
            raise ValueError("Distances must be non-negative.")
        # Work in place when the check already made a private copy (or may overwrite).
        s = np.empty_like(d) if copy and np.may_share_memory(d, distances) else d
        if scale == "local":
            width = local_scales(d, n_neighbors)

            def similarities(rows):
                _divide_by_pair_scales(d[rows], width[rows], width, s[rows])
                np.negative(s[rows], out=s[rows])
                np.exp(s[rows], out=s[rows])
        else:
            width = median_off_diagonal(d) if scale in (None, "median") else float(scale)

            def similarities(rows):
                np.divide(d[rows], -width, out=s[rows])
                np.exp(s[rows], out=s[rows])
        _by_row_halves(similarities, d.shape[0], d.size)
    else:
        raise ValueError(f"similarity must be one of {SIMILARITIES}, got {kind!r}.")
    np.fill_diagonal(s, 0.0)
    return (s, width) if return_scale else s


def new_item_similarities(distances, kind, width, n_items, n_neighbors=20):
    """Similarities of new items to ``n_items`` fitted ones, on the fitted scale.

    Parameters
    ----------
    distances : array-like of shape (m, n_items)
        Distances of the new items to the fitted items (``kind='exp'``), or
        the similarities themselves (``kind='precomputed'``).
    kind : {'exp', 'precomputed'}
    width : float, ndarray of shape (n_items,) or None
        The length scale returned by :func:`similarity_from_distances` at fit
        time (held fixed: a new item does not move the fitted similarities);
        local scales give each new item its own, from its ``n_neighbors``-th
        nearest fitted item.
    n_items : int
    n_neighbors : int, default=20

    Returns
    -------
    ndarray of shape (m, n_items)
    """
    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] != n_items:
        raise ValueError(f"New items need one value per fitted item: expected shape "
                         f"(m, {n_items}), got {d.shape}.")
    if not np.all(np.isfinite(d)):
        raise ValueError("The new items' distances contain NaN or infinite values.")
    if kind == "precomputed":
        return d.copy()
    if np.any(d < 0):
        raise ValueError("Distances must be non-negative.")
    if np.ndim(width):
        s = _divide_by_pair_scales(d, local_scales(d, n_neighbors, fitted=False), width,
                                   np.empty_like(d))
        return np.exp(-s)
    return np.exp(d / -float(width))


def check_square_symmetric(matrix, name="X", *, atol=1e-10):
    """Check a precomputed (N, N) matrix: square, finite and symmetric."""
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix when precomputed, "
                         f"got shape {matrix.shape}.")
    # One tiled pass, shared with the energies' pairwise checks (no N x N temporaries).
    _, largest, asym = scan_pairwise_matrix(matrix)
    scale = max(1.0, largest)
    if asym > atol * scale:
        raise ValueError(f"{name} must be symmetric when precomputed; the largest "
                         f"|X - X.T| entry is {asym:.3g}.")
    return matrix
