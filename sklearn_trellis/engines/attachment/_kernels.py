"""Numba kernels of the attachment posterior: a new leaf inserted above each node of a tree.

Templates (:mod:`sklearn_trellis._core.specialise`) that call the energy's
split function through ``engines._split_potential.split_log_potential``,
compiled per energy by :func:`specialise`. The stats table they read has
``2 V + 1`` columns: the fitted tree's ``V`` vertices ``S``, then ``S + {x}``
for each of them, then ``{x}`` (see :class:`~sklearn_trellis.models._split.InsertionInputs`).
"""

import numpy as np
from numba import njit

from ..._core.specialise import specialise as _specialise, template
from ..._core.subsets import logaddexp
from .._split_potential import split_bindings, split_log_potential


@njit(cache=True, inline="always")
def enlarged_stats(fit_stats):
    """The ``2 V + 1``-column stats table with the fitted vertices' columns filled."""
    k, n_vertices = fit_stats.shape
    stats = np.empty((k, 2 * n_vertices + 1))
    for c in range(k):
        for v in range(n_vertices):
            stats[c, v] = fit_stats[c, v]
    return stats


@njit(cache=True, inline="always")
def set_new_item(stats, joined, alone):
    """Columns ``S + {x}`` (``joined``, one per vertex) and ``{x}`` (``alone``) of one new item."""
    n_vertices = joined.shape[1]
    for c in range(joined.shape[0]):
        for v in range(n_vertices):
            stats[c, n_vertices + v] = joined[c, v]
        stats[c, 2 * n_vertices] = alone[c]


@template
def fitted_split_values(params, stats, left_of, right_of, root):
    """``beta psi`` of every internal vertex's split in the fitted tree (0 at leaves)."""
    n_vertices = left_of.shape[0]
    out = np.zeros(n_vertices)
    for v in range(n_vertices):
        if left_of[v] >= 0:
            out[v] = split_log_potential(params, stats, root, v, left_of[v], right_of[v])
    return out


@template
def insertion_deltas(fit_stats, fitted, new_params, joined, alone, left_of, right_of, root,
                     node_of, out):
    """``out[j, node_of[v]]``: change of ``log phi`` when new item ``j`` goes above vertex ``v``.

    Vertices are numbered so that a parent comes after its children
    (:class:`~sklearn_trellis._core.family.ClusterFamily` numbers them by
    size). Inserting ``x`` above ``v`` adds the split ``(v, x)`` and adds
    ``x`` to one child of every ancestor of ``v``: a top-down pass
    accumulates those changes, so all ``V`` positions cost ``O(V)``.
    """
    n_vertices = fit_stats.shape[1]
    stats = enlarged_stats(fit_stats)
    x = 2 * n_vertices
    full = n_vertices + root        # the enlarged tree's whole set: root + x
    path = np.empty(n_vertices)     # sum over the ancestors of v of their change
    for j in range(joined.shape[0]):
        p = new_params[j]
        set_new_item(stats, joined[j], alone[j])
        # Above the root, the old root's split stays but no longer splits the whole set.
        path[root] = (split_log_potential(p, stats, full, root, left_of[root], right_of[root])
                      - fitted[root]) if left_of[root] >= 0 else 0.0
        above_root = path[root]
        path[root] = 0.0
        for v in range(n_vertices - 1, -1, -1):
            left = left_of[v]
            if left >= 0:
                right = right_of[v]
                # x joins the left child, or the right one; the lowest item stays on the left
                path[left] = path[v] - fitted[v] + split_log_potential(
                    p, stats, full, n_vertices + v, n_vertices + left, right)
                path[right] = path[v] - fitted[v] + split_log_potential(
                    p, stats, full, n_vertices + v, left, n_vertices + right)
            out[j, node_of[v]] = path[v] + split_log_potential(p, stats, full, n_vertices + v,
                                                               v, x)
        out[j, node_of[root]] += above_root
    return out


@template
def insertion_evidence(fit_stats, new_params, joined, alone, ptr, left, right, psi, log_z,
                       root, targets, log_ratio, log_inside):
    """Log evidence of a new item over every tree of a trellis family, each position.

    For new item ``j``, ``log_ratio[j] = log Y(root) - log Z(root)`` where
    ``Y(S)`` sums ``phi`` of every tree over ``S + {x}`` that is a tree over
    ``S`` realised by the family with ``x`` inserted above one of its nodes::

        Y(S) = phi(S + x -> S, x) Z(S)
               + sum_{S -> (L, R)} [phi(S + x -> L + x, R) Y(L) Z(R)
                                    + phi(S + x -> L, R + x) Z(L) Y(R)]

    (vertices numbered children first; ``psi`` the fitted edges' log-potentials,
    ``-inf`` where forbidden). The enlarged whole set is ``root + x``, so the
    root's own splits are evaluated again with it. A top-down pass gives
    ``out_x(S)``, the completions around ``S + x``, and
    ``log_inside[j, t] = log Y(v) + log out_x(v) - log Y(root)`` is the log
    posterior probability that ``v = targets[t] + {x}`` is a node: that ``v``
    is a node and ``x`` is inserted at or below it.
    """
    n_vertices = fit_stats.shape[1]
    stats = enlarged_stats(fit_stats)
    x = 2 * n_vertices
    full = n_vertices + root
    log_y = np.empty(n_vertices)
    log_out = np.empty(n_vertices)
    for j in range(joined.shape[0]):
        p = new_params[j]
        set_new_item(stats, joined[j], alone[j])
        for s in range(n_vertices):
            below = log_z[s]
            if s == root:   # the old root no longer splits the whole set
                below = -np.inf
                for e in range(ptr[s], ptr[s + 1]):
                    if psi[e] > -np.inf:
                        below = logaddexp(below, split_log_potential(
                            p, stats, full, s, left[e], right[e]) + log_z[left[e]]
                            + log_z[right[e]])
            acc = split_log_potential(p, stats, full, n_vertices + s, s, x) + below
            for e in range(ptr[s], ptr[s + 1]):
                if psi[e] == -np.inf:
                    continue
                a = left[e]
                b = right[e]
                acc = logaddexp(acc, split_log_potential(p, stats, full, n_vertices + s,
                                                         n_vertices + a, b)
                                + log_y[a] + log_z[b])
                acc = logaddexp(acc, split_log_potential(p, stats, full, n_vertices + s,
                                                         a, n_vertices + b)
                                + log_z[a] + log_y[b])
            log_y[s] = acc
        log_ratio[j] = log_y[root] - log_z[root]
        if targets.shape[0] == 0:
            continue
        for s in range(n_vertices):
            log_out[s] = -np.inf
        log_out[root] = 0.0
        for s in range(n_vertices - 1, -1, -1):
            outer = log_out[s]
            if outer == -np.inf:
                continue
            for e in range(ptr[s], ptr[s + 1]):
                if psi[e] == -np.inf:
                    continue
                a = left[e]
                b = right[e]
                log_out[a] = logaddexp(log_out[a], outer + split_log_potential(
                    p, stats, full, n_vertices + s, n_vertices + a, b) + log_z[b])
                log_out[b] = logaddexp(log_out[b], outer + split_log_potential(
                    p, stats, full, n_vertices + s, a, n_vertices + b) + log_z[a])
        for t in range(targets.shape[0]):
            v = targets[t]
            log_inside[j, t] = log_y[v] + log_out[v] - log_y[root]


def specialise(split):
    """The kernels of this module compiled for one energy's numba split function."""
    return _specialise(globals(), split_bindings(split))


#: Below this log weight relative to the row's largest, ``exp`` is under 1e-307: it cannot
#: change a sum that holds 1, so it is skipped (most positions of a large tree).
_NEGLIGIBLE = -707.0


@njit(cache=True)
def log_normalize_rows(log_weights):
    """Each row minus its log-sum-exp, in place; returns the rows whose weights are all 0."""
    m, n = log_weights.shape
    empty = np.zeros(m, dtype=np.bool_)
    for j in range(m):
        row = log_weights[j]
        top = -np.inf
        for v in range(n):
            top = max(top, row[v])
        if top == -np.inf:
            empty[j] = True
            continue
        total = 0.0
        for v in range(n):
            if row[v] - top > _NEGLIGIBLE:
                total += np.exp(row[v] - top)
        shift = top + np.log(total)
        for v in range(n):
            row[v] -= shift
    return empty


@njit(cache=True)
def position_masses(log_weights, node_label, above_index, n_clusters, n_above):
    """Normalised position probabilities summed per cluster (``node_label >= 0``) and kept
    per above-cut node (``above_index``); returns ``(masses, above, empty rows)``."""
    m, n = log_weights.shape
    masses = np.zeros((m, n_clusters))
    above = np.zeros((m, n_above))
    empty = np.zeros(m, dtype=np.bool_)
    for j in range(m):
        row = log_weights[j]
        top = -np.inf
        for v in range(n):
            top = max(top, row[v])
        if top == -np.inf:
            empty[j] = True
            continue
        total = 0.0
        for v in range(n):
            if not row[v] - top > _NEGLIGIBLE:
                continue
            weight = np.exp(row[v] - top)
            total += weight
            label = node_label[v]
            if label >= 0:
                masses[j, label] += weight
            else:
                above[j, above_index[v]] += weight
        for c in range(n_clusters):
            masses[j, c] /= total
        for a in range(n_above):
            above[j, a] /= total
    return masses, above, empty
