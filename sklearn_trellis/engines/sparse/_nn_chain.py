"""scipy's nearest-neighbour-chain linkages, compiled without the GIL.

:func:`scipy.cluster.hierarchy.linkage` runs average, complete and Ward
linkage by the nearest-neighbour chain (``_hierarchy.nn_chain``) while
holding the GIL: the four seed linkages of a sparse trellis then run one
after the other (about 10 s at N = 10,000). :func:`nn_chain_linkage` is the
same algorithm, step for step (the same chain, the same strict comparisons,
the same Lance-Williams updates in the same floating-point order, then the
same stable sort by height and relabelling), compiled, on a square working
copy when it fits (contiguous row scans: about twice scipy's speed) and
without the GIL, so that scipy's single linkage runs in a thread meanwhile
(:func:`linkage_matrices`). The scans and updates visit only the live
clusters, in scipy's order (a sorted list: a third less CPU time). With a
second working array (:data:`SECOND_CHAIN_BYTES`), two chains run at once:
each then takes about the CPU time it takes alone (0.90 against 0.88 s at
N = 10,000: not bound by memory bandwidth), but the second array's first
touch costs about a CPU second. Tests check equality with scipy's linkage
matrices, ties included. Up to :data:`SCIPY_LINKAGE_ITEMS` items the entry points call scipy
itself: the same matrices, in milliseconds, where compiling the chains would
cost seconds of a first fit.
"""

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from ..._core.budget import check_memory
from ..._core.pairwise import euclidean_square, finite_nonnegative, square_from_condensed
from ..._core.parallel import run_beside
from ..._core.union_find import find_root

#: Linkage codes of :func:`nn_chain_linkage`.
NN_CHAIN_METHODS = {"average": 0, "complete": 1, "ward": 2}

#: Up to this N, :func:`linkage_matrices` and :func:`euclidean_linkage_matrices`
#: return scipy's own linkages (the same matrices; a few milliseconds each here,
#: while compiling the chains and their distance fill costs seconds once per
#: environment). Tests lower it to 0 to run the compiled chains at small N.
SCIPY_LINKAGE_ITEMS = 1_000


@njit(cache=True, inline="always")
def _condensed_index(n, i, j):
    if i < j:
        return n * i - (i * (i + 1)) // 2 + (j - i - 1)
    return n * j - (j * (j + 1)) // 2 + (i - j - 1)


@njit(cache=True, inline="always")
def _new_distance(method, d_xi, d_yi, d_xy, size_x, size_y, size_i):
    """scipy's ``_average``, ``_complete`` and ``_ward`` (same operation order)."""
    if method == 0:
        return (size_x * d_xi + size_y * d_yi) / (size_x + size_y)
    if method == 1:
        return d_xi if d_xi > d_yi else d_yi
    t = 1.0 / (size_x + size_y + size_i)
    return math.sqrt((size_i + size_x) * t * d_xi * d_xi
                     + (size_i + size_y) * t * d_yi * d_yi
                     - size_i * t * d_xy * d_xy)


#: Merges per compiled call of the chain (progress is reported between calls).
_CHUNKS = 50


def nn_chain_linkage(dists, n, method, square=None, progress=None, work=None):
    """scipy's ``nn_chain`` then ``label``: the linkage matrix ``(n - 1, 4)``.

    ``dists`` (condensed, not modified) and ``method`` one of
    :data:`NN_CHAIN_METHODS`' codes. The chain scans a row of the distances
    per step: on a square copy (``8 N**2`` bytes) the rows are contiguous and
    it runs about twice as fast as on a condensed copy (``4 N**2`` bytes,
    every other entry a cache miss). ``square=None`` takes the square copy when
    it fits in memory (:func:`~sklearn_trellis._core.budget.check_memory`).
    Both give scipy's matrix. The merges run in about 50 compiled chunks;
    ``progress`` (a :class:`~sklearn_trellis._core.progress.Progress`) hears
    of each. ``work``: an ``(n, n)`` float64 array to hold the square copy
    (its content is overwritten; nothing of size N x N is allocated).
    """
    if work is not None:
        square = True
    elif square is None:
        try:
            check_memory(8 * n * n, "a square working copy of the distances")
            square = True
        except ValueError:
            square = False
    dists = np.ascontiguousarray(dists, dtype=np.float64)
    n, method = int(n), int(method)
    if square:
        D = square_from_condensed(dists, np.empty((n, n)) if work is None else work)
    else:
        D = dists.copy()
    return _run_chain(D, n, method, _square_steps if square else _condensed_steps, progress)


def _run_chain(D, n, method, steps, progress, what="merges"):
    """The chain's merges on the working copy ``D`` (overwritten), in chunks, then
    scipy's sort and labels (``progress`` hears of the ``what`` done)."""
    Z = np.empty((n - 1, 4))
    size = np.ones(n, np.int64)
    chain = np.empty(n, np.int64)
    active = np.arange(n, dtype=np.int64)
    state = np.array([0, 0, n], np.int64)          # chain length, y, live clusters
    chunk = max(1, (n - 1) // _CHUNKS)
    for k in range(0, n - 1, chunk):
        steps(D, n, method, Z, size, chain, active, state, k, min(k + chunk, n - 1))
        if progress is not None:
            progress.update(min(k + chunk, n - 1), n - 1, what)
    return _sorted_labelled(Z, n)


#: Largest second ``(N, N)`` working array (bytes) of :func:`euclidean_linkage_matrices`:
#: with one, two chains run at once. 1 GiB (N <= 11,585): at N = 20,000 a second
#: copy (3.2 GB) would take the fit's peak memory past 1.5 times scikit-learn's
#: Ward tree's (issue 29's target), so larger inputs run the chains in turn.
SECOND_CHAIN_BYTES = 1 << 30


def euclidean_linkage_matrices(methods, X, work, progress=None):
    """scipy's linkage matrices of the euclidean distances of ``X``'s rows, in order.

    The same matrices as :func:`linkage_matrices` on ``pdist(X)``, from one
    ``(N, N)`` float64 array ``work`` (overwritten) and no condensed copy:
    :func:`~sklearn_trellis._core.pairwise.euclidean_square` fills it with
    ``pdist``'s values (bit for bit), single linkage (scipy's minimum spanning
    tree) reads it, and each chain (average, complete, Ward) works on a fresh
    fill. A fill (about half ``pdist``'s CPU time: 0.66 s against 1.17 s at
    N = 10,000 in 10-d) stands in for the copy from a condensed vector, and no
    condensed vector is held: ``8 N**2`` bytes at the peak instead of ``12 N**2``.
    With two chains or more, two numba threads and a second array of at most
    :data:`SECOND_CHAIN_BYTES` that fits in memory, two lanes (one per array)
    take the chains in turn, longest first (:func:`_two_lanes`): the same
    matrices. Up to :data:`SCIPY_LINKAGE_ITEMS` items: scipy's linkages of
    ``pdist(X)`` (``work`` unused).

    Parameters
    ----------
    methods : list of str
        Names among ``'single'`` and :data:`NN_CHAIN_METHODS`.
    X : ndarray of shape (N, n_features)
        Finite float64 rows.
    work : ndarray of shape (N, N)
        float64 scratch space.
    progress : Progress, optional
        A stage line per linkage, throttled progress lines within each chain.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    if n <= SCIPY_LINKAGE_ITEMS:     # scipy's linkages of pdist: the same matrices
        from scipy.spatial.distance import pdist

        condensed = pdist(X)
        return [_scipy_linkage(condensed, method, progress) for method in methods]
    chains = [method for method in methods if method != "single"]
    if len(chains) >= 2 and _second_array_fits(n):
        found = _two_lanes(methods, chains, X, work, progress)
        return [found[method] for method in methods]
    fill = euclidean_square.for_work(n * n * max(X.shape[1], 1))
    found = {}
    filled = False
    if "single" in methods:
        if progress is not None:
            progress.stage(f"single linkage of {n:,} items")
        fill(X, work)
        filled = True
        found["single"] = _sorted_labelled(_mst_single_square(work), n)
    for method in chains:
        if progress is not None:
            progress.stage(f"{method} linkage of {n:,} items")
        if not filled:
            fill(X, work)
        filled = False
        found[method] = _run_chain(work, n, NN_CHAIN_METHODS[method], _square_steps, progress)
    return [found[method] for method in methods]


def _second_array_fits(n):
    """Whether a second ``(n, n)`` working array is allowed: two numba threads,
    at most :data:`SECOND_CHAIN_BYTES`, and free memory for it."""
    if numba.get_num_threads() < 2 or 8 * n * n > SECOND_CHAIN_BYTES:
        return False
    try:
        check_memory(8 * n * n, "a second working copy of the distances")
    except ValueError:
        return False
    return True


#: Order in which :func:`_two_lanes` hands out the chains: complete linkage's chain
#: is the longest, average linkage's the shortest (at N = 10,000 on blobs:
#: about 1.2, 1.0 and 0.8 CPU s).
_CHAIN_ORDER = ("complete", "ward", "average")


def _two_lanes(methods, chains, X, work, progress):
    """The linkages of ``methods`` on two threads, one ``(N, N)`` array each.

    Each lane fills its array (the serial fill: the other thread is busy) and
    runs the next chain of a shared queue (longest first) until none is left;
    single linkage reads the first fill of the foreground lane. Every matrix
    is what it would be alone. ``progress`` hears each chain's stage line and
    the foreground lane's progress lines (naming their chain: the latest stage
    line may be the other lane's).
    """
    n = X.shape[0]
    queue = sorted(chains, key=lambda m: _CHAIN_ORDER.index(m) if m in _CHAIN_ORDER else 0)
    lock = threading.Lock()
    found = {}

    def lane(array, single, reporter):
        filled = single
        if single:
            if progress is not None:
                progress.stage(f"single linkage of {n:,} items")
            euclidean_square.serial(X, array)
            found["single"] = _sorted_labelled(_mst_single_square(array), n)
        while True:
            with lock:
                if not queue:
                    return
                method = queue.pop(0)
            if progress is not None:
                progress.stage(f"{method} linkage of {n:,} items")
            if not filled:
                euclidean_square.serial(X, array)
            filled = False
            found[method] = _run_chain(array, n, NN_CHAIN_METHODS[method], _square_steps,
                                       reporter, f"merges of {method} linkage")

    second = np.empty_like(work)
    try:
        run_beside(lambda: lane(second, False, None),
                   lambda: lane(work, "single" in methods, progress))
    finally:
        del second
    return found


@njit(cache=True, nogil=True)
def _mst_single_square(D):
    """scipy's ``mst_single_linkage`` (Prim's tree, same comparisons) reading the rows
    of a square distance matrix (not modified); the merges before sorting."""
    n = D.shape[0]
    Z = np.empty((n - 1, 4))
    merged = np.zeros(n, np.bool_)
    nearest = np.full(n, np.inf)
    x, y = 0, 0
    for k in range(n - 1):
        current_min = np.inf
        merged[x] = True
        row = D[x]
        for i in range(n):
            if merged[i]:
                continue
            if nearest[i] > row[i]:
                nearest[i] = row[i]
            if nearest[i] < current_min:
                y = i
                current_min = nearest[i]
        Z[k, 0], Z[k, 1], Z[k, 2] = x, y, current_min
        x = y
    return Z


@njit(cache=True, inline="always")
def _drop_active(active, n_active, x):
    """Remove ``x`` from ``active[:n_active]`` (increasing); the new count."""
    p = np.searchsorted(active[:n_active], x)
    for j in range(p, n_active - 1):
        active[j] = active[j + 1]
    return n_active - 1


@njit(cache=True, nogil=True)
def _square_steps(D, n, method, Z, size, chain, active, state, k_start, k_stop):
    """Merges ``k_start .. k_stop - 1`` of the chain on a square symmetric copy
    (row scans are contiguous); ``state`` carries the chain between calls.

    ``active[:state[2]]`` lists the live clusters in increasing order: the scans
    and updates visit them in scipy's order, skipping the merged ones (half the
    reads over a whole linkage).
    """
    chain_length, y, n_active = state[0], state[1], state[2]
    for k in range(k_start, k_stop):
        if chain_length == 0:
            chain_length = 1
            chain[0] = active[0]
        while True:
            x = chain[chain_length - 1]
            if chain_length > 1:
                y = chain[chain_length - 2]
                current_min = D[x, y]
            else:
                current_min = np.inf
            row = D[x]
            for j in range(n_active):
                i = active[j]
                if x == i:
                    continue
                if row[i] < current_min:
                    current_min = row[i]
                    y = i
            if chain_length > 1 and y == chain[chain_length - 2]:
                break
            chain[chain_length] = y
            chain_length += 1
        chain_length -= 2
        if x > y:
            x, y = y, x
        nx, ny = size[x], size[y]
        Z[k, 0], Z[k, 1], Z[k, 2], Z[k, 3] = x, y, current_min, nx + ny
        size[x] = 0
        size[y] = nx + ny
        n_active = _drop_active(active, n_active, x)
        row_x, row_y = D[x], D[y]
        for j in range(n_active):
            i = active[j]
            if i == y:
                continue
            row_y[i] = _new_distance(method, row_x[i], row_y[i], current_min, nx, ny,
                                     size[i])
        for j in range(n_active):           # keep the copy symmetric
            i = active[j]
            if i != y:
                D[i, y] = row_y[i]
    state[0], state[1], state[2] = chain_length, y, n_active


@njit(cache=True, nogil=True)
def _condensed_steps(D, n, method, Z, size, chain, active, state, k_start, k_stop):
    """Merges ``k_start .. k_stop - 1`` of the chain on a condensed copy, exactly as
    scipy's ``nn_chain``; ``state`` carries the chain between calls and
    ``active[:state[2]]`` the live clusters (as :func:`_square_steps`)."""
    chain_length, y, n_active = state[0], state[1], state[2]
    for k in range(k_start, k_stop):
        if chain_length == 0:
            chain_length = 1
            chain[0] = active[0]
        while True:
            x = chain[chain_length - 1]
            # Prefer the previous element of the chain (no cycles).
            if chain_length > 1:
                y = chain[chain_length - 2]
                current_min = D[_condensed_index(n, x, y)]
            else:
                current_min = np.inf
            for j in range(n_active):
                i = active[j]
                if x == i:
                    continue
                dist = D[_condensed_index(n, x, i)]
                if dist < current_min:
                    current_min = dist
                    y = i
            if chain_length > 1 and y == chain[chain_length - 2]:
                break
            chain[chain_length] = y
            chain_length += 1
        chain_length -= 2
        if x > y:
            x, y = y, x
        nx, ny = size[x], size[y]
        Z[k, 0], Z[k, 1], Z[k, 2], Z[k, 3] = x, y, current_min, nx + ny
        size[x] = 0
        size[y] = nx + ny
        n_active = _drop_active(active, n_active, x)
        for j in range(n_active):
            i = active[j]
            if i == y:
                continue
            D[_condensed_index(n, i, y)] = _new_distance(
                method, D[_condensed_index(n, i, x)], D[_condensed_index(n, i, y)],
                current_min, nx, ny, size[i])
    state[0], state[1], state[2] = chain_length, y, n_active


def _sorted_labelled(Z, n):
    """scipy's last steps: merges by height (stable), then cluster ids (``label``).

    numpy's stable sort, not a compiled one: the same order (a stable sort of
    the same keys is unique) without compiling numba's mergesort.
    """
    Z = Z[np.argsort(Z[:, 2], kind="mergesort")]
    _label(Z, n)
    return Z


@njit(cache=True)
def _label(Z, n):
    """scipy's ``label``: cluster ids of the sorted merges (union-find)."""
    parent = np.arange(2 * n - 1)
    size = np.zeros(2 * n - 1, np.int64)
    size[:n] = 1
    next_label = n
    for i in range(n - 1):
        x_root = find_root(parent, np.int64(Z[i, 0]))
        y_root = find_root(parent, np.int64(Z[i, 1]))
        if x_root < y_root:
            Z[i, 0], Z[i, 1] = x_root, y_root
        else:
            Z[i, 0], Z[i, 1] = y_root, x_root
        parent[x_root] = next_label
        parent[y_root] = next_label
        size[next_label] = size[x_root] + size[y_root]
        Z[i, 3] = size[next_label]
        next_label += 1


def condensed_items(size):
    """``N`` of a condensed distance vector of ``size = N (N - 1) / 2`` entries."""
    return int(round((1 + math.sqrt(1 + 8 * size)) / 2))


def _scipy_linkage(condensed, method, progress):
    """scipy's own linkage matrix (small N: the matrices the compiled chains give)."""
    from scipy.cluster.hierarchy import linkage

    if progress is not None:
        progress.stage(f"{method} linkage of {condensed_items(np.size(condensed)):,} items")
    return linkage(condensed, method=method)


def linkage_matrices(jobs, n_threads=2, progress=None, work=None):
    """scipy linkage matrices of ``jobs`` = ``[(method, condensed), ...]``, in order.

    Average, complete and Ward run :func:`nn_chain_linkage` (no GIL) one
    after the other, each on its own working copy; other methods (single
    linkage: scipy's minimum spanning tree, no copy) call
    :func:`scipy.cluster.hierarchy.linkage` in a background thread meanwhile
    when ``n_threads >= 2``. No two working copies exist at once. ``progress``
    (a :class:`~sklearn_trellis._core.progress.Progress`) gets a stage line per
    chain and throttled progress lines within it. ``work``: an ``(N, N)``
    float64 array each chain uses in turn as its square working copy. Up to
    :data:`SCIPY_LINKAGE_ITEMS` items, all are scipy's linkages, in this thread.
    """
    from scipy.cluster.hierarchy import linkage

    def chain(condensed, method):
        condensed = np.ascontiguousarray(condensed, dtype=np.float64)
        if not finite_nonnegative(condensed)[0]:     # no N**2 / 2 temporary
            raise ValueError("The condensed distance matrix must contain only "
                             "finite values.")
        n = condensed_items(condensed.size)
        if progress is not None:
            progress.stage(f"{method} linkage of {n:,} items")
        return nn_chain_linkage(condensed, n, NN_CHAIN_METHODS[method], progress=progress,
                                work=work)

    jobs = list(jobs)
    if all(np.size(condensed) <= SCIPY_LINKAGE_ITEMS * (SCIPY_LINKAGE_ITEMS - 1) // 2
           for _, condensed in jobs):       # small: scipy's own (the same matrices)
        return [_scipy_linkage(condensed, method, progress) for method, condensed in jobs]
    others = [k for k, (method, _) in enumerate(jobs) if method not in NN_CHAIN_METHODS]
    out = [None] * len(jobs)
    pool = ThreadPoolExecutor(1) if n_threads >= 2 and others else None
    try:
        pending = {k: (pool.submit(linkage, jobs[k][1], method=jobs[k][0]) if pool else None)
                   for k in others}
        for k, (method, condensed) in enumerate(jobs):
            if k not in pending:
                out[k] = chain(condensed, method)
        for k, future in pending.items():
            out[k] = future.result() if future is not None else \
                linkage(jobs[k][1], method=jobs[k][0])
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return out


__all__ = ["NN_CHAIN_METHODS", "SCIPY_LINKAGE_ITEMS", "SECOND_CHAIN_BYTES", "condensed_items",
           "euclidean_linkage_matrices", "linkage_matrices", "nn_chain_linkage"]
