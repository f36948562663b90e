"""Numba kernel of the collapsed Gibbs sweep of the Wishart block model (spec §c), ``O(n^2)``.

Block bookkeeping uses ``n`` slots: ``z[i]`` is the slot of item ``i``;
``slots`` is a permutation of ``0..n-1`` whose first ``K`` entries are the
occupied slots (``pos`` is its inverse), so opening and closing a block is
``O(1)``. Per slot ``s``: ``sizes[s] = n_b`` and ``sbars[s] = Sbar_b``.

For each free item the row block sums ``r_b = sum_{j in b, j != i} S_ij`` cost
``O(n)``; removing the item, scoring the ``K + 1`` candidates from the running
sums ``T_B`` and ``L_B`` and adding it back cost ``O(K)``.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _f(m, s, theta):
    return theta * s / (1.0 + m * theta)


@njit(cache=True)
def gibbs_sweep(S, z, sizes, sbars, slots, pos, n_clusters, order, uniforms, trace, theta,
                dof, exponent, s0, inv_alpha, xi, inv_k, row, logits):
    """One sweep over the items in ``order``; returns the new number of blocks.

    ``inv_alpha = 0`` integrates ``alpha`` out (score ``-a log(T + s0)``, ``a =
    exponent``); ``inv_alpha > 0`` holds ``alpha = 1 / inv_alpha`` fixed (score
    ``-d T / (2 alpha)``). ``inv_k = 1 / k`` (0 for the Ewens limit ``k = inf``).
    ``row`` (n) and ``logits`` (n + 1) are work arrays.
    """
    n = S.shape[0]
    half_d = 0.5 * dof
    k_count = n_clusters
    for t in range(order.shape[0]):
        i = order[t]
        for p in range(k_count):
            row[slots[p]] = 0.0
        for j in range(n):
            row[z[j]] += S[i, j]
        s_ii = float(S[i, i])
        c0 = z[i]
        row[c0] -= s_ii
        # remove i from its block
        sizes[c0] -= 1.0
        sbars[c0] -= 2.0 * row[c0] + s_ii
        if sizes[c0] == 0.0:
            sbars[c0] = 0.0
            last = slots[k_count - 1]
            p0 = pos[c0]
            slots[p0] = last
            pos[last] = p0
            slots[k_count - 1] = c0
            pos[c0] = k_count - 1
            k_count -= 1
        t_minus = trace
        l_minus = 0.0
        for p in range(k_count):
            s = slots[p]
            t_minus -= _f(sizes[s], sbars[s], theta)
            l_minus += math.log1p(sizes[s] * theta)
        best = -np.inf
        for p in range(k_count + 1):
            if p < k_count:
                s = slots[p]
                m = sizes[s]
                new_sbar = sbars[s] + 2.0 * row[s] + s_ii
                t_c = t_minus + _f(m, sbars[s], theta) - _f(m + 1.0, new_sbar, theta)
                l_c = l_minus - math.log1p(m * theta) + math.log1p((m + 1.0) * theta)
                prior = math.log(m + xi * inv_k)
            else:
                t_c = t_minus - _f(1.0, s_ii, theta)
                l_c = l_minus + math.log1p(theta)
                room = 1.0 - k_count * inv_k
                prior = math.log(xi * room) if room > 0.0 else -np.inf
            if inv_alpha > 0.0:
                score = prior - half_d * l_c - half_d * inv_alpha * t_c
            else:
                score = prior - half_d * l_c - exponent * math.log(t_c + s0)
            logits[p] = score
            if score > best:
                best = score
        total = 0.0
        for p in range(k_count + 1):
            logits[p] = math.exp(logits[p] - best)
            total += logits[p]
        target = uniforms[t] * total
        chosen = k_count
        acc = 0.0
        for p in range(k_count + 1):
            acc += logits[p]
            if target < acc and logits[p] > 0.0:
                chosen = p
                break
        if chosen == k_count:
            if logits[k_count] == 0.0:  # rounding pushed the draw past the last mass
                chosen = 0
                for p in range(k_count + 1):
                    if logits[p] > logits[chosen]:
                        chosen = p
        if chosen == k_count:
            s = slots[k_count]
            k_count += 1
            sizes[s] = 1.0
            sbars[s] = s_ii
        else:
            s = slots[chosen]
            sbars[s] += 2.0 * row[s] + s_ii
            sizes[s] += 1.0
        z[i] = s
    return k_count
