"""Numba kernels of the approximate MAP baselines: greedy and beam-search agglomeration.

Both build a tree bottom-up by merging two current clusters ``A`` and ``B``;
the merge adds ``psi(A, B)`` (the split of ``A | B``, the child holding the
lowest item first) to the tree's log-potential. Like the trellis kernels they
are templates that call the energy's split function (through
``engines._split_potential.split_log_potential``), compiled per energy by
:func:`specialise`.
"""

import numpy as np
from numba import njit

from ..._core.specialise import specialise as _specialise, template
from .._split_potential import split_bindings, split_log_potential


@template(inline="always")
def _merge_value(params, stats, full, a, b):
    parent = a | b
    if (a & -a) < (b & -b):
        value = split_log_potential(params, stats, full, parent, a, b)
    else:
        value = split_log_potential(params, stats, full, parent, b, a)
    if not value < np.inf:
        value = -np.inf
    return value


@template
def greedy_merges(params, stats, full, n_items):
    """Merge, at each step, the pair with the largest ``psi`` (first one on ties).

    Returns ``(parents, lefts, log_potential)``; the log-potential is ``-inf``
    if the greedy path was forced through a forbidden split.
    """
    clusters = np.empty(n_items, np.int64)
    for i in range(n_items):
        clusters[i] = 1 << i
    parents = np.empty(max(n_items - 1, 0), np.int64)
    lefts = np.empty(max(n_items - 1, 0), np.int64)
    total = 0.0
    k = n_items
    for step in range(n_items - 1):
        best = -np.inf
        bi = 0
        bj = 1
        for i in range(k):
            for j in range(i + 1, k):
                value = _merge_value(params, stats, full, clusters[i], clusters[j])
                if value > best:
                    best = value
                    bi = i
                    bj = j
        a = clusters[bi]
        b = clusters[bj]
        parents[step] = a | b
        lefts[step] = a if (a & -a) < (b & -b) else b
        total += best
        clusters[bi] = a | b
        clusters[bj] = clusters[k - 1]
        k -= 1
    return parents, lefts, total


@njit(cache=True, inline="always")
def _mix(mask):
    """A 64-bit hash of a bitmask (splitmix64 finaliser)."""
    z = np.uint64(mask) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@template
def beam_merges(params, stats, full, n_items, beam_width):
    """Beam search over merge sequences, keeping ``beam_width`` distinct forests.

    A candidate is a forest (set of current clusters) with the summed
    ``psi`` of its merges; at each step every pair of every kept forest is
    merged, and the ``beam_width`` best *distinct* forests are kept (two merge
    orders reaching the same forest count once, which is what the paper's
    deduplication by equal likelihood aims at).

    The last merge is not deduplicated (every candidate then reaches the same
    one-cluster forest, but candidates of different two-cluster forests are
    different trees): the final beam holds up to ``beam_width`` distinct
    complete trees, best first. Returns ``(parents, lefts, log_potentials)``
    of shapes ``(n_trees, N - 1)``, ``(n_trees, N - 1)``, ``(n_trees,)``.
    """
    n_nodes = max(n_items - 1, 0)
    width = max(beam_width, 1)
    clusters = np.empty((width, n_items), np.int64)
    history = np.empty((width, n_nodes, 2), np.int64)
    scores = np.full(width, -np.inf)
    keys = np.zeros(width, np.uint64)
    for i in range(n_items):
        clusters[0, i] = 1 << i
        keys[0] += _mix(1 << i)
    scores[0] = 0.0
    n_states = 1
    k = n_items
    for step in range(n_nodes):
        n_pairs = k * (k - 1) // 2
        n_cand = n_states * n_pairs
        cand_score = np.empty(n_cand)
        cand_state = np.empty(n_cand, np.int64)
        cand_i = np.empty(n_cand, np.int64)
        cand_j = np.empty(n_cand, np.int64)
        c = 0
        for s in range(n_states):
            for i in range(k):
                for j in range(i + 1, k):
                    a = clusters[s, i]
                    b = clusters[s, j]
                    cand_score[c] = scores[s] + _merge_value(params, stats, full, a, b)
                    cand_state[c] = s
                    cand_i[c] = i
                    cand_j[c] = j
                    c += 1
        order = np.argsort(-cand_score, kind="mergesort")
        new_clusters = np.empty((width, n_items), np.int64)
        new_history = np.empty((width, n_nodes, 2), np.int64)
        new_scores = np.full(width, -np.inf)
        new_keys = np.zeros(width, np.uint64)
        n_new = 0
        for r in range(n_cand):
            if n_new == width:
                break
            idx = order[r]
            s = cand_state[idx]
            a = clusters[s, cand_i[idx]]
            b = clusters[s, cand_j[idx]]
            key = keys[s] - _mix(a) - _mix(b) + _mix(a | b)
            seen = False
            # k == 2: the last merge; each state gives one distinct tree.
            for q in range(n_new if k > 2 else 0):
                if new_keys[q] == key:
                    seen = True
                    break
            if seen:
                continue
            for i in range(k):
                new_clusters[n_new, i] = clusters[s, i]
            new_clusters[n_new, cand_i[idx]] = a | b
            new_clusters[n_new, cand_j[idx]] = clusters[s, k - 1]
            for t in range(step):
                new_history[n_new, t, 0] = history[s, t, 0]
                new_history[n_new, t, 1] = history[s, t, 1]
            new_history[n_new, step, 0] = a | b
            new_history[n_new, step, 1] = a if (a & -a) < (b & -b) else b
            new_scores[n_new] = cand_score[idx]
            new_keys[n_new] = key
            n_new += 1
        clusters = new_clusters
        history = new_history
        scores = new_scores
        keys = new_keys
        n_states = n_new
        k -= 1
    return (history[:n_states, :, 0].copy(), history[:n_states, :, 1].copy(),
            scores[:n_states].copy())


def specialise(split):
    """The kernels of this module compiled for one energy's numba split function."""
    return _specialise(globals(), split_bindings(split))
