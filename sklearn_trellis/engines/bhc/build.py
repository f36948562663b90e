"""Tree construction of Bayesian hierarchical clustering: greedy (binary or rose) and randomized.

Every builder returns a binary ``children_`` array (children before parents,
node ``n + t`` made by row ``t``) and a boolean ``is_cluster`` per row. A
rose-tree node with ``m`` children is written as a chain of ``m - 1`` binary
merges whose first ``m - 2`` are *virtual*: ``is_cluster`` is False, they are
not clusters of the model (zero potential in the trellis recursion), so
the tree-consistent partitions of the binary tree are those of the rose tree.
"""

import numbers

import numpy as np

from ..._core.progress import SILENT, run_in_chunks
from ...models.likelihood import protocol_bindings
from . import _bhc_kernels

#: Default sample size of randomized BHC (Heller & Ghahramani 2005b's ``m``).
DEFAULT_SUBSAMPLE_SIZE = 100

#: Smallest share of the sample on the smaller side of randomized BHC's split.
MIN_SPLIT_FRACTION = 0.1


def bhc_kernels(likelihood, rose=False):
    """The BHC kernel templates compiled for a fitted likelihood (and binary or rose trees)."""
    return _bhc_kernels.specialise(protocol_bindings(likelihood.kernels),
                                   _bhc_kernels.ROSE if rose else _bhc_kernels.BINARY)


def kernel_params(likelihood, params=None):
    """The kernel parameter vector: ``params``, or the likelihood's own."""
    return np.ascontiguousarray(likelihood.kernel_params() if params is None else params,
                                dtype=np.float64)


def _sizes(likelihood):
    return likelihood.n_stats, likelihood.work_size(1)


#: Rows (pair scores) or merges of the greedy search's first chunk (see
#: :func:`~sklearn_trellis._core.progress.run_in_chunks`).
FIRST_CHUNK = 64


def greedy_merges(kernels, params, data, n_stats, work_size, log_alpha, progress=SILENT):
    """``(merges, kinds)`` of the greedy search over the rows of ``data`` (see
    :func:`._bhc_kernels.greedy_search`), run in chunks so ``progress`` can report."""
    n = data.shape[0]
    state = _bhc_kernels.greedy_state(n, n_stats, work_size)
    merges = np.empty((n - 1, 2), np.int64)
    kinds = np.zeros(n - 1, np.int64)
    n_pairs = n * (n - 1) // 2
    start = 0

    def pairs(n_rows):
        nonlocal start
        stop = min(n, start + n_rows)
        kernels.greedy_search(params, data, log_alpha, state, start, stop, merges, kinds, 0)
        start = stop
        done = n_pairs - (n - stop) * (n - stop - 1) // 2
        progress.update(done, n_pairs, "pair scores")
        return stop

    run_in_chunks(pairs, n, FIRST_CHUNK)

    def more_merges(count):
        made = kernels.greedy_search(params, data, log_alpha, state, n, n, merges, kinds, count)
        progress.update(made, n - 1, "merges")
        return made

    run_in_chunks(more_merges, n - 1, FIRST_CHUNK)
    return merges, kinds


def greedy_tree(likelihood, data, alpha, *, rose=False, params=None, progress=SILENT):
    """Greedy BHC over the rows of ``data`` (``kernel_data``), binary or rose tree.

    Parameters
    ----------
    likelihood : ClusterLikelihood
        Fitted, factorising.
    data : ndarray of shape (n, ...)
    alpha : float
        DP concentration.
    rose : bool, default=False
        Bayesian rose trees (join / absorb / collapse, Blundell, Teh & Heller
        2010) instead of binary trees.
    params : ndarray, default=None
        Kernel parameters of the likelihood; ``None``: ``kernel_params()``.
    progress : Progress, default=SILENT
        Reporter of a fit with ``verbose``: pair scores and merges done, at most
        every 10 s.

    Returns
    -------
    children : ndarray of int64, shape (n - 1, 2)
    is_cluster : ndarray of bool, shape (n - 1,)
    """
    n = data.shape[0]
    n_stats, work = _sizes(likelihood)
    merges, kinds = greedy_merges(bhc_kernels(likelihood, rose),
                                  kernel_params(likelihood, params), data, n_stats, work,
                                  float(np.log(alpha)), progress)
    if not rose:
        return merges, np.ones(n - 1, dtype=bool)
    return binarize_rose(rose_children(merges, kinds, n), n)


def rose_children(merges, kinds, n):
    """Children lists of the surviving rose-tree nodes from a greedy merge log.

    Returns a dict ``node -> list of children`` (leaves have none), nodes
    numbered by creation (``n + t`` for merge ``t``).
    """
    children = {}
    for t, ((a, b), kind) in enumerate(zip(merges.tolist(), kinds.tolist())):
        if kind == _bhc_kernels.JOIN:
            members = [a, b]
        elif kind == _bhc_kernels.ABSORB:
            members = children.pop(a)
            members.append(b)
        elif kind == _bhc_kernels.ABSORBED:
            members = children.pop(b)
            members.append(a)
        else:
            members = children.pop(a)
            members.extend(children.pop(b))
        children[n + t] = members
    return children


def binarize_rose(children, n):
    """``(children_, is_cluster)`` of a rose tree: each node a chain of binary merges."""
    rows, flags = [], []
    binary_id = {}
    for node in sorted(children):
        members = [binary_id.get(c, c) for c in children[node]]
        current = members[0]
        for position, other in enumerate(members[1:]):
            rows.append([current, other])
            flags.append(position == len(members) - 2)
            current = n + len(rows) - 1
        binary_id[node] = current
    return np.array(rows, dtype=np.int64).reshape(-1, 2), np.array(flags, dtype=bool)


def randomized_tree(likelihood, data, alpha, *, subsample_size=DEFAULT_SUBSAMPLE_SIZE,
                    random_state, min_fraction=MIN_SPLIT_FRACTION, params=None,
                    progress=SILENT):
    """Randomized BHC (Heller & Ghahramani 2005b, Algorithm 2): ``O(n log n)`` expected.

    A set larger than ``subsample_size`` is split by running greedy BHC on
    ``subsample_size`` of its items drawn at random and sending every item to
    the top-level subtree of that tree under which its predictive density is
    highest (sampled items stay in theirs); each part is split the same way,
    down to sets of at most ``subsample_size`` items, which greedy BHC builds
    exactly.

    The top-level subtrees are not always the root's two children: greedy
    BHC merges its least certain points last, so the root of a sample tree
    mostly splits off one outlier, and the recursion would then peel the data
    one item at a time (``O(n^2)``). The split used is the highest node of
    the sample tree whose smaller child holds at least ``min_fraction`` of the
    sample; the subtrees peeled off above it are parts of their own, nested
    as in the sample tree.

    ``progress`` (a :class:`~sklearn_trellis._core.progress.Progress`) hears
    the number of items placed in finished subtrees, at most every 10 s.

    Returns
    -------
    children : ndarray of int64, shape (n - 1, 2)
        Children before parents.
    is_cluster : ndarray of bool, all True.
    """
    if (isinstance(subsample_size, (bool, np.bool_))
            or not isinstance(subsample_size, numbers.Integral) or subsample_size < 2):
        raise ValueError(f"subsample_size must be an int >= 2, got {subsample_size!r}.")
    n = data.shape[0]
    kernels = bhc_kernels(likelihood)
    n_stats, work = _sizes(likelihood)
    params = kernel_params(likelihood, params)
    log_alpha = float(np.log(alpha))
    rows = []
    # Explicit stack (the recursion can be deep): a task is ('build', items) or
    # ('chain', k): join the last k built subtrees, first two first, then the others.
    stack = [("build", np.arange(n, dtype=np.int64))]
    done = []
    n_placed = 0
    while stack:
        task, items = stack.pop()
        if task == "chain":
            parts = done[len(done) - items:]
            del done[len(done) - items:]
            current = parts[0]
            for other in parts[1:]:
                rows.append([current, other])
                current = n + len(rows) - 1
            done.append(current)
            continue
        if items.size <= subsample_size:
            if items.size == 1:
                done.append(int(items[0]))
            else:
                merges, _ = greedy_merges(kernels, params, np.ascontiguousarray(data[items]),
                                          n_stats, work, log_alpha)
                done.append(_append_local(rows, merges, items, n))
            n_placed += items.size
            progress.update(n_placed, n, "items in finished subtrees")
            continue
        sample = np.sort(random_state.choice(items, size=subsample_size, replace=False))
        merges, _ = greedy_merges(kernels, params, np.ascontiguousarray(data[sample]), n_stats,
                                  work, log_alpha)
        parts = [sample[local] for local in _top_parts(merges, subsample_size, min_fraction)]
        starts = np.cumsum([0] + [p.size for p in parts]).astype(np.int64)
        part_items = np.concatenate(parts)
        part = kernels.filter_items(params, data, items, part_items, starts, n_stats, work)
        for p, members in enumerate(parts):
            part[np.searchsorted(items, members)] = p
        stack.append(("chain", len(parts)))
        for p in range(len(parts) - 1, -1, -1):
            stack.append(("build", items[part == p]))
    return np.array(rows, dtype=np.int64).reshape(-1, 2), np.ones(n - 1, dtype=bool)


def _top_parts(merges, m, min_fraction):
    """Local leaves of the parts of a sample tree: the split's two sides, then the peeled subtrees.

    Descends from the root into the larger child while the smaller child
    holds fewer than ``min_fraction * m`` leaves; returns the two children of
    the node reached, then the peeled subtrees from the deepest to the root's.
    """
    sizes = np.ones(2 * m - 1, dtype=np.int64)
    for t, (a, b) in enumerate(merges.tolist()):
        sizes[m + t] = sizes[a] + sizes[b]
    node = 2 * m - 2
    peeled = []
    while node >= m:
        a, b = (int(c) for c in merges[node - m])
        if sizes[a] < sizes[b]:
            a, b = b, a
        if sizes[b] >= min_fraction * m or a < m:
            break
        peeled.append(b)
        node = a
    if node < m:   # pragma: no cover - the loop stops at a merge
        raise AssertionError("descent reached a leaf")
    tops = [int(c) for c in merges[node - m]] + peeled[::-1]
    return [_leaves(merges, m, top) for top in tops]


def _leaves(merges, m, node):
    stack, leaves = [node], []
    while stack:
        v = stack.pop()
        if v < m:
            leaves.append(v)
        else:
            stack.extend(int(c) for c in merges[v - m])
    return np.array(leaves, dtype=np.int64)


def _append_local(rows, merges, items, n):
    """Append a subset's merges (local ids) to ``rows`` in global ids; return its root id."""
    m = items.size
    ids = np.empty(2 * m - 1, dtype=np.int64)
    ids[:m] = items
    for t, (a, b) in enumerate(merges.tolist()):
        rows.append([int(ids[a]), int(ids[b])])
        ids[m + t] = n + len(rows) - 1
    return int(ids[-1])


__all__ = ["kernel_params", "greedy_tree", "randomized_tree", "rose_children", "binarize_rose", "bhc_kernels",
           "DEFAULT_SUBSAMPLE_SIZE"]


def approximation_notes(n, *, method, rose, subsample_size, selection_items=None):
    """What a BHC fit does not compute exactly, in words (the estimator's ``approximation_``).

    Parameters
    ----------
    n : int
        Rows of the fit.
    method : {'greedy', 'randomized'}
    rose : bool
    subsample_size : int
        Sample size of randomized BHC.
    selection_items : int or None
        Rows on which the hyperparameters were chosen when that was a random
        subset (``None``: all rows, or no choice made).

    Returns
    -------
    str
    """
    kind = "rose tree" if rose else "binary tree"
    if method == "randomized":
        notes = [f"randomized BHC {kind}: each split decided by greedy BHC on "
                 f"{subsample_size} random rows"]
    else:
        notes = [f"greedy BHC {kind} (merges by the highest r_k, not the most probable tree)"]
    notes.append("log_evidence_lower_bound_ bounds the DP-mixture evidence from below "
                 "(tree-consistent partitions only)")
    if selection_items is not None and selection_items < n:
        notes.append(f"hyperparameters chosen on {selection_items} random rows of {n}")
    return "; ".join(notes) + "."
