"""numba kernels of DIANA (Kaufman & Rousseeuw 1990, ch. 6), bit for bit as R's ``cluster``.

R's ``diana`` (``splyt`` in ``twins.c``) keeps the objects in one array ``ner``
(the banner order): every cluster is a run ``ner[ja..jb]`` and is split in place.
The kernels below repeat its index arithmetic exactly, so orders, tie rules and
heights come out identical. Only the sums differ in *how* they are computed:
R recomputes every average dissimilarity from scratch after each move
(``O(m^2)`` per move, ``O(m^3)`` per split); here the sums are updated by one
row per move (``O(m)``) and R's own floating-point value is recomputed, in R's
order of summation, only for the objects whose updated value lies within a
rigorous rounding bound of the best one. The choice is therefore R's choice,
ties included, at ``O(m^2)`` per split on data without exact ties.
"""

import math

import numpy as np
from numba import njit, prange

from ..._core.parallel import parallel_kernel

#: Unit roundoff of float64.
_EPS = 2.220446049250313e-16


@parallel_kernel
def r_dissimilarities(X, manhattan, squared):
    """R's ``dysta`` (and ``daisy`` for numeric data): full (n, n) dissimilarities.

    Euclidean ``sqrt(sum_k (x_ik - x_jk)^2)`` or Manhattan ``sum_k |x_ik - x_jk|``,
    summed over the features in order (so the values are R's to the last bit).
    Features missing (NaN) in either row are skipped and the sum is rescaled by
    ``p / n_present``. ``squared`` returns the rescaled sum of squares without the
    root. Returns ``(D, ok)``; ``ok`` is False if some pair shares no feature.
    Run as ``r_dissimilarities.for_work(X.size * X.shape[0])(X, ...)`` (serial
    on small inputs).
    """
    n, p = X.shape
    D = np.zeros((n, n))
    pp = float(p)
    bad = np.zeros(n, np.bool_)
    for i in prange(n):
        for j in range(i):
            acc = 0.0
            present = 0
            for k in range(p):
                a = X[i, k]
                b = X[j, k]
                if np.isnan(a) or np.isnan(b):
                    continue
                present += 1
                if manhattan:
                    acc += abs(a - b)
                else:
                    acc += (a - b) * (a - b)
            if present == 0:
                bad[i] = True
                value = 0.0
            else:
                if present < p:
                    acc = acc * (pp / present)
                value = acc if (manhattan or squared) else math.sqrt(acc)
            D[i, j] = value
            D[j, i] = value
    return D, not bad.any()


@njit(cache=True, inline="always")
def _sum_over(D, o, ner, start, stop):
    """``sum_{ja <= j <= jb} D[o, ner[j]]`` in position order (R's summation order)."""
    total = 0.0
    for j in range(start, stop + 1):
        total += D[o, ner[j]]
    return total


@njit(cache=True, inline="always")
def cluster_diameter(D, ner, ja, jb):
    """Largest dissimilarity within ``ner[ja..jb]`` (R's ``min_dis``, despite its name)."""
    dm = 0.0
    for k in range(ja, jb):
        row = ner[k]
        for j in range(k + 1, jb + 1):
            value = D[row, ner[j]]
            if dm < value:
                dm = value
    return dm


@njit(cache=True)
def diana_split(D, ner, ja, jb, sum_a, sum_b):
    """Split the run ``ner[ja..jb]`` (at least 3 objects) in place as R's ``splyt`` does.

    ``sum_a`` and ``sum_b`` are length-n work arrays. Returns ``jmb``, the first
    position of the second part (the parts are ``ja..jmb-1`` and ``jmb..jb``).
    """
    # First object: the largest total dissimilarity to its cluster (first wins ties).
    bygsd = -1.0
    lndsd = -1
    largest_row = 0.0
    for l in range(ja, jb + 1):
        o = ner[l]
        sd = _sum_over(D, o, ner, ja, jb)
        sum_a[o] = sd
        if largest_row < sd:
            largest_row = sd
        if bygsd < sd:
            bygsd = sd
            lndsd = l
    # Shift it to the end of the run; the others keep their order.
    if jb != lndsd:
        chan = ner[lndsd]
        for lmma in range(lndsd, jb):
            ner[lmma] = ner[lmma + 1]
        ner[jb] = chan
    first = ner[jb]
    for l in range(ja, jb):
        o = ner[l]
        sum_a[o] -= D[o, first]
        sum_b[o] = D[o, first]
    m = jb - ja + 1
    splyn = 0
    jma = jb - 1
    while True:
        splyn += 1
        rest = jma - ja
        # Updated sums: find the best value and every object that R might prefer.
        best_approx = -np.inf
        for l in range(ja, jma + 1):
            o = ner[l]
            value = sum_a[o] / rest - sum_b[o] / splyn
            if value > best_approx:
                best_approx = value
        # Each running sum saw at most 2m additions of terms whose absolute total
        # is at most 2 * largest_row; R's sums at most m terms of that total.
        bound = 8.0 * (m + 1) * _EPS * largest_row * (1.0 / rest + 1.0 / splyn) + 1e-300
        threshold = best_approx - 2.0 * bound
        bdyff = -1.0
        jaway = -1
        for l in range(ja, jma + 1):
            o = ner[l]
            if sum_a[o] / rest - sum_b[o] / splyn < threshold:
                continue
            # R's value: both averages recomputed in position order.
            da = _sum_over(D, o, ner, ja, jma) / rest
            db = _sum_over(D, o, ner, jma + 1, jb) / splyn
            dyff = da - db
            if bdyff < dyff:
                bdyff = dyff
                jaway = l
        jmb = jma + 1
        if bdyff <= 0.0:
            break
        moved = ner[jaway]
        for lxx in range(jaway, jma):
            ner[lxx] = ner[lxx + 1]
        ner[jma] = moved
        # Keep the splinter group sorted by object number (R's bubble step).
        for lxx in range(jmb, jb + 1):
            if ner[lxx - 1] < ner[lxx]:
                break
            chan = ner[lxx - 1]
            ner[lxx - 1] = ner[lxx]
            ner[lxx] = chan
        jma -= 1
        jmb = jma + 1
        for l in range(ja, jma + 1):
            o = ner[l]
            d = D[o, moved]
            sum_a[o] -= d
            sum_b[o] += d
        if jma == ja:
            break
    # Put the part with the smaller leading object number first (R's step 200).
    if ner[ja] >= ner[jmb]:
        rotated = np.empty(jb - ja + 1, ner.dtype)
        k = 0
        for l in range(jmb, jb + 1):
            rotated[k] = ner[l]
            k += 1
        for l in range(ja, jmb):
            rotated[k] = ner[l]
            k += 1
        for l in range(jb - ja + 1):
            ner[ja + l] = rotated[l]
        jmb = ja + (jb - jmb + 1)
    return jmb
