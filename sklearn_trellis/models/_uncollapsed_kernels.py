"""Numba kernels of the conjugate likelihoods for *uncollapsed* samplers (cluster parameters drawn).

The sub-cluster sampler (:mod:`sklearn_trellis.engines.gibbs.subcluster`) keeps, per
cluster, additive sufficient statistics (``suff`` rows: sums over the cluster's rows, so
the statistics of row blocks, threads or Dask shards add), draws the cluster parameters
``theta`` from their conjugate posterior and scores rows by ``log f(x | theta)``. Six
functions per likelihood (see :class:`sklearn_trellis.models.likelihood.UncollapsedKernels`):

``suff_add_rows(params, data, rows, suff, c)``
    Add the rows ``data[rows]`` to ``suff[c]`` (``data`` float32 or float64).
``suff_to_stats(params, suff, stats, c)``
    Row ``c`` of the collapsed ``stats`` table (the layout of :mod:`._conjugate_kernels`)
    from ``suff[c]``: the collapsed kernels (``log_cluster``, the hyperparameter grid)
    then apply unchanged.
``draw_theta(params, stats, c, theta)``
    ``theta[c]`` ~ the posterior of the cluster parameters given ``stats[c]`` (numba's
    generator, seeded by the caller).
``log_density_rows(params, theta, c, data, rows, out)``
    ``out[t] = log f(data[rows[t]] | theta[c])`` up to a function of the row alone (the
    multinomial coefficient of count data is left out).
``log_density_block(params, theta, n_clusters, data, rows, out)``
    ``out[c, t] = log f(data[rows[t]] | theta[c])`` for every ``c < n_clusters``: a block
    of rows against all clusters at once, the label pass's hot loop. The Gaussians write
    it as one matrix product through BLAS (:data:`DENSITY_BLOCK`); a likelihood without
    one gets :func:`log_density_block_by_rows` (its ``log_density_rows`` per cluster).
``log_density_screen(params, theta, n_clusters, data, rows, log_pi, window, out)``
    ``log_density_block``'s entries where they can matter to a draw from ``log_pi[c] +
    out[c, t]``, ``-inf`` for the entries certainly more than ``window`` nats below the
    row's largest (the label pass's draw; the Normal-Gamma screens in float32, with a
    bound on its error, :func:`ng_log_density_screen`); without one, every entry
    (:func:`log_density_screen_by_block`).

Layouts (``d`` features; sums are of ``y = x - m0``, the prior mean, which keeps the sums
of squares free of cancellation):

- NIW: suff ``[n, sum y (d), sum y y^T (d*d)]``; theta ``[mu (d), R^T (d*d), c]`` with
  ``Sigma^-1 = R R^T`` (``R`` lower Cholesky) and ``c = -d/2 log 2 pi + sum log R_kk``.
- Normal-Gamma: suff ``[n, sum y (d), sum y^2 (d)]``; theta ``[mu (d), tau (d), c]``.
- Beta-Bernoulli: suff ``[n, n1 (d)]``; theta ``[log p/(1-p) (d), sum log(1-p)]``.
- Dirichlet-multinomial: suff = the collapsed stats row; theta ``[log p (d)]``.
"""

import math

import numpy as np
from numba import njit

from .._core.specialise import template
from ._conjugate_kernels import _bb_cache, _ng_c_pred, _niw_c_pred

_LOG_2PI = math.log(2.0 * math.pi)


# ---------------------------------------------------------------- NIW (full covariance)
@njit(cache=True)
def _centred_rows(params, data, rows):
    d = int(params[0])
    out = np.empty((rows.size, d))
    for t in range(rows.size):
        i = rows[t]
        for k in range(d):
            out[t, k] = data[i, k] - params[3 + k]
    return out


@njit(cache=True)
def niw_suff_add_rows(params, data, rows, suff, c):
    d = int(params[0])
    if rows.size == 0:
        return
    y = _centred_rows(params, data, rows)
    suff[c, 0] += rows.size
    for t in range(rows.size):
        for k in range(d):
            suff[c, 1 + k] += y[t, k]
    scatter = np.dot(y.T, y)
    for a in range(d):
        for b in range(d):
            suff[c, 1 + d + a * d + b] += scatter[a, b]


@njit(cache=True)
def _cholesky_into(matrix, out, row, base, d):
    """Lower Cholesky factor of ``matrix`` into ``out[row, base:base+d*d]`` (row-major);
    a pivot lost to rounding is floored at a tiny positive value."""
    for j in range(d):
        s = matrix[j, j]
        for k in range(j):
            s -= out[row, base + j * d + k] ** 2
        pivot = math.sqrt(s) if s > 1e-300 else 1e-150
        out[row, base + j * d + j] = pivot
        for i in range(j + 1, d):
            s = matrix[i, j]
            for k in range(j):
                s -= out[row, base + i * d + k] * out[row, base + j * d + k]
            out[row, base + i * d + j] = s / pivot
        for i in range(j):
            out[row, base + i * d + j] = 0.0


@njit(cache=True)
def niw_suff_to_stats(params, suff, stats, c):
    d = int(params[0])
    n = suff[c, 0]
    kappa = params[1] + n
    psi = np.empty((d, d))
    for a in range(d):
        stats[c, 1 + a] = params[3 + a] + suff[c, 1 + a] / kappa
        for b in range(d):
            prior = 0.0
            for k in range(d):
                prior += params[3 + d + a * d + k] * params[3 + d + b * d + k]
            psi[a, b] = (prior + suff[c, 1 + d + a * d + b]
                         - suff[c, 1 + a] * suff[c, 1 + b] / kappa)
    stats[c, 0] = n
    _cholesky_into(psi, stats, c, 1 + d, d)
    _niw_c_pred(params, stats, c)


@njit(cache=True)
def niw_draw_theta(params, stats, c, theta):
    """``Sigma^-1 ~ Wishart(nu_n, Psi_n^-1)`` (Bartlett), ``mu ~ N(mu_n, Sigma / kappa_n)``."""
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    nu = params[2] + n
    base = 1 + d
    # Bartlett factor A (lower): A_kk^2 ~ chi2(nu - k), A_ik ~ N(0, 1) below the diagonal
    a = np.zeros((d, d))
    for k in range(d):
        a[k, k] = math.sqrt(2.0 * np.random.gamma(0.5 * (nu - k), 1.0))
        for i in range(k + 1, d):
            a[i, k] = np.random.standard_normal()
    # W = L^-T A (L: Cholesky of Psi_n), so that W W^T ~ Wishart(nu, Psi_n^-1)
    w = np.empty((d, d))
    for col in range(d):
        for i in range(d - 1, -1, -1):
            s = a[i, col]
            for k in range(i + 1, d):
                s -= stats[c, base + k * d + i] * w[k, col]
            w[i, col] = s / stats[c, base + i * d + i]
    precision = np.dot(w, w.T)
    r = np.zeros((1, d * d))
    _cholesky_into(precision, r, 0, 0, d)
    # mu = mu_n + R^-T z / sqrt(kappa): back substitution with R^T (upper)
    z = np.empty(d)
    for k in range(d):
        z[k] = np.random.standard_normal() / math.sqrt(kappa)
    mu = np.empty(d)
    for i in range(d - 1, -1, -1):
        s = z[i]
        for k in range(i + 1, d):
            s -= r[0, k * d + i] * mu[k]
        mu[i] = s / r[0, i * d + i]
    const = -0.5 * d * _LOG_2PI
    for k in range(d):
        theta[c, k] = stats[c, 1 + k] + mu[k]
        const += math.log(r[0, k * d + k])
    # store R^T row-major: (x - mu)^T Sigma^-1 (x - mu) = |R^T (x - mu)|^2
    for i in range(d):
        for k in range(d):
            theta[c, d + i * d + k] = r[0, k * d + i]
    theta[c, d + d * d] = const


#: Up to this many features the NIW density is a triangular loop; above, a GEMM.
NIW_LOOP_FEATURES = 24

#: Rows scored together by the density kernels: features outer, rows inner, so that the
#: inner loops run over contiguous scratch and vectorise (and the scratch stays in L1).
DENSITY_CHUNK = 128


@njit(cache=True)
def niw_log_density_rows(params, theta, c, data, rows, out):
    d = int(params[0])
    const = theta[c, d + d * d]
    m = rows.size
    if d <= NIW_LOOP_FEATURES:  # R^T is upper triangular: d (d + 1) / 2 multiply-adds
        width = min(m, DENSITY_CHUNK)
        y = np.empty((d, width))
        acc = np.empty(width)
        q = np.empty(width)
        for start in range(0, m, DENSITY_CHUNK):
            size = min(m, start + DENSITY_CHUNK) - start
            for k in range(d):
                mu = theta[c, k]
                for t in range(size):
                    y[k, t] = data[rows[start + t], k] - mu
            q[:size] = 0.0
            for a in range(d):
                acc[:size] = 0.0
                row = d + a * d
                for k in range(a, d):
                    r = theta[c, row + k]
                    for t in range(size):
                        acc[t] += r * y[k, t]
                for t in range(size):
                    q[t] += acc[t] * acc[t]
            for t in range(size):
                out[start + t] = const - 0.5 * q[t]
        return
    y = np.empty((m, d))
    for t in range(m):
        i = rows[t]
        for k in range(d):
            y[t, k] = data[i, k] - theta[c, k]
    factor = np.ascontiguousarray(theta[c, d:d + d * d]).reshape((d, d))
    z = np.dot(y, factor.T)
    for t in range(m):
        q = 0.0
        for k in range(d):
            q += z[t, k] * z[t, k]
        out[t] = const - 0.5 * q


#: Rows per matrix product of the block kernels. Every product has exactly this many
#: columns (the last rows padded with zeros): a row's log density is then computed by the
#: same BLAS code path wherever it falls, bit for bit whatever rows are scored with it
#: (the chain does not depend on blocks, shards or threads).
DENSITY_BLOCK = 256


@njit(cache=True)
def _centred_columns(params, data, rows, start, size, out):
    """``out[k, t] = x_k - m0_k`` for the rows ``rows[start:start + size]`` (float64 whatever
    the data's dtype: no copy of the data); the columns past ``size`` are zeroed (padding)."""
    d = int(params[0])
    for t in range(size):
        i = rows[start + t]
        for k in range(d):
            out[k, t] = data[i, k] - params[3 + k]
    for k in range(d):
        for t in range(size, out.shape[1]):
            out[k, t] = 0.0


@njit(cache=True)
def niw_log_density_block(params, theta, n_clusters, data, rows, out):
    """``|R_c^T (y - nu_c)|^2 = |R_c^T y - R_c^T nu_c|^2`` (``y = x - m0``, ``nu_c = mu_c
    - m0``): the factors of all clusters stacked, one product ``(K d, d) x (d, rows)``; the
    shift ``R_c^T nu_c`` is subtracted before squaring (no cancellation of large squares)."""
    d = int(params[0])
    m = rows.size
    stacked = np.empty((n_clusters * d, d))
    shift = np.empty(n_clusters * d)
    for c in range(n_clusters):
        for i in range(d):
            s = 0.0
            for k in range(d):
                r = theta[c, d + i * d + k]
                stacked[c * d + i, k] = r
                s += r * (theta[c, k] - params[3 + k])
            shift[c * d + i] = s
    y = np.empty((d, DENSITY_BLOCK))
    q = np.empty(DENSITY_BLOCK)
    for start in range(0, m, DENSITY_BLOCK):
        size = min(m, start + DENSITY_BLOCK) - start
        _centred_columns(params, data, rows, start, size, y)
        z = np.dot(stacked, y)
        for c in range(n_clusters):
            q[:] = 0.0
            for i in range(c * d, c * d + d):
                b = shift[i]
                for t in range(size):
                    v = z[i, t] - b
                    q[t] += v * v
            const = theta[c, d + d * d]
            for t in range(size):
                out[c, t + start] = const - 0.5 * q[t]


# ---------------------------------------------------------------- Normal-Gamma (diagonal)
@njit(cache=True)
def ng_suff_add_rows(params, data, rows, suff, c):
    d = int(params[0])
    suff[c, 0] += rows.size
    for t in range(rows.size):
        i = rows[t]
        for k in range(d):
            y = data[i, k] - params[3 + k]
            suff[c, 1 + k] += y
            suff[c, 1 + d + k] += y * y


@njit(cache=True)
def ng_suff_to_stats(params, suff, stats, c):
    d = int(params[0])
    n = suff[c, 0]
    kappa = params[1] + n
    stats[c, 0] = n
    for k in range(d):
        s1 = suff[c, 1 + k]
        stats[c, 1 + k] = params[3 + k] + s1 / kappa
        b = params[3 + d + k] + 0.5 * (suff[c, 1 + d + k] - s1 * s1 / kappa)
        stats[c, 1 + d + k] = max(b, 1e-300)
    _ng_c_pred(params, stats, c)


@njit(cache=True)
def ng_draw_theta(params, stats, c, theta):
    """Per feature ``tau ~ Gamma(a_n, rate b_n)``, ``mu ~ N(mu_n, 1 / (kappa_n tau))``."""
    d = int(params[0])
    n = stats[c, 0]
    kappa = params[1] + n
    a = params[2] + 0.5 * n
    const = -0.5 * d * _LOG_2PI
    for k in range(d):
        tau = max(np.random.gamma(a, 1.0) / stats[c, 1 + d + k], 1e-300)
        theta[c, k] = stats[c, 1 + k] + np.random.standard_normal() / math.sqrt(kappa * tau)
        theta[c, d + k] = tau
        const += 0.5 * math.log(tau)
    theta[c, 2 * d] = const


@njit(cache=True)
def ng_log_density_rows(params, theta, c, data, rows, out):
    d = int(params[0])
    const = theta[c, 2 * d]
    m = rows.size
    q = np.empty(min(m, DENSITY_CHUNK))
    for start in range(0, m, DENSITY_CHUNK):
        size = min(m, start + DENSITY_CHUNK) - start
        q[:size] = 0.0
        for k in range(d):
            mu = theta[c, k]
            tau = theta[c, d + k]
            for t in range(size):
                delta = data[rows[start + t], k] - mu
                q[t] += tau * delta * delta
        for t in range(size):
            out[start + t] = const - 0.5 * q[t]


@njit(cache=True)
def _ng_weights(params, theta, n_clusters):
    """The Normal-Gamma label pass's ``(K, 2d)`` weights ``[-tau / 2, tau nu]`` and ``(K,)``
    constants ``theta_c[2d] - 1/2 sum_k tau_k nu_k^2`` (``nu = mu - m0``)."""
    d = int(params[0])
    weights = np.empty((n_clusters, 2 * d))
    const = np.empty(n_clusters)
    for c in range(n_clusters):
        s = theta[c, 2 * d]
        for k in range(d):
            tau = theta[c, d + k]
            nu = theta[c, k] - params[3 + k]
            weights[c, k] = -0.5 * tau
            weights[c, d + k] = tau * nu
            s -= 0.5 * tau * nu * nu
        const[c] = s
    return weights, const


@njit(cache=True)
def ng_log_density_block(params, theta, n_clusters, data, rows, out):
    """``-1/2 sum_k tau_k (y_k - nu_k)^2 = [y^2, y] . [-tau / 2, tau nu] - 1/2 sum_k tau_k
    nu_k^2`` (``y = x - m0``, ``nu = mu - m0``): one product ``(K, 2d) x (2d, rows)``."""
    d = int(params[0])
    m = rows.size
    weights, const = _ng_weights(params, theta, n_clusters)
    features = np.empty((2 * d, DENSITY_BLOCK))
    for start in range(0, m, DENSITY_BLOCK):
        size = min(m, start + DENSITY_BLOCK) - start
        # y and y^2 in one pass over the rows (each row's features read once)
        for t in range(size):
            i = rows[start + t]
            for k in range(d):
                y = data[i, k] - params[3 + k]
                features[d + k, t] = y
                features[k, t] = y * y
        for k in range(2 * d):
            for t in range(size, DENSITY_BLOCK):
                features[k, t] = 0.0
        product = np.dot(weights, features)
        for c in range(n_clusters):
            for t in range(size):
                out[c, t + start] = const[c] + product[c, t]


#: Unit roundoff of float32: the screened scores' error bound (:func:`ng_log_density_screen`).
FLOAT32_UNIT = 2.0 ** -24

#: Weights or features above this are not screened in float32 (their squares or
#: products could overflow it): the block is scored in float64.
FLOAT32_SAFE = 1e15


@njit(cache=True)
def ng_log_density_screen(params, theta, n_clusters, data, rows, log_pi, window, out):
    """:func:`ng_log_density_block`'s ``out[c, t]`` where it can matter, ``-inf`` elsewhere:
    for every ``c`` whose ``log_pi[c] + out[c, t]`` may lie within ``window`` nats of the
    row's largest.

    Every entry is first scored in float32 (one ``sgemm``, twice the speed of the float64
    product), with a rigorous bound on its error: ``gamma_{2d+2} sum_k |w_ck| |f_kt| <=
    gamma_{2d+2} |w_c|_1 max_k |f_kt|`` (``gamma_n = n u / (1 - n u)``, ``u = 2^-24``: a
    sum of ``2d`` products, in any order, of operands rounded to float32). The entries that
    may lie within ``window`` of the row's largest, given the bound, are then computed in
    float64 from the row (a plain sum; typically one entry per row).
    """
    d = int(params[0])
    m = rows.size
    weights, const = _ng_weights(params, theta, n_clusters)
    norm1 = np.zeros(n_clusters)
    largest = 0.0
    for c in range(n_clusters):
        for k in range(2 * d):
            norm1[c] += abs(weights[c, k])
            largest = max(largest, abs(weights[c, k]))
    if not largest < FLOAT32_SAFE:
        ng_log_density_block(params, theta, n_clusters, data, rows, out)
        return
    n_terms = 2 * d + 2
    gamma = n_terms * FLOAT32_UNIT / (1.0 - n_terms * FLOAT32_UNIT)
    weights32 = weights.astype(np.float32)
    slack = gamma * norm1   # times a row's largest feature: its scores' error bound
    # row t's features [y^2, y] in float32 in row t (written along the row); the product
    # takes them transposed (F-ordered: no copy)
    features32 = np.zeros((DENSITY_BLOCK, 2 * d), np.float32)
    feature_max = np.empty(DENSITY_BLOCK)
    low = np.empty(n_clusters)
    for start in range(0, m, DENSITY_BLOCK):
        size = min(m, start + DENSITY_BLOCK) - start
        safe = True
        for t in range(size):
            i = rows[start + t]
            top = 0.0
            for k in range(d):
                y = data[i, k] - params[3 + k]
                features32[t, d + k] = y
                features32[t, k] = y * y
                top = max(top, y * y, abs(y))
            feature_max[t] = top
            safe = safe and top < FLOAT32_SAFE
        for t in range(size, DENSITY_BLOCK):
            for k in range(2 * d):
                features32[t, k] = 0.0
        if not safe:
            ng_log_density_block(params, theta, n_clusters, data, rows[start:start + size],
                                 out[:, start:start + size])
            continue
        screen = np.dot(weights32, features32.T)
        for t in range(size):
            best = -np.inf
            for c in range(n_clusters):
                low[c] = log_pi[c] + const[c] + float(screen[c, t])
                best = max(best, low[c] - slack[c] * feature_max[t])
            i = rows[start + t]
            for c in range(n_clusters):
                if low[c] + slack[c] * feature_max[t] >= best - window:
                    value = const[c]
                    for k in range(d):
                        y = data[i, k] - params[3 + k]
                        value += weights[c, k] * (y * y) + weights[c, d + k] * y
                    out[c, start + t] = value
                else:
                    out[c, start + t] = -np.inf


# ---------------------------------------------------------------- Beta-Bernoulli
@njit(cache=True)
def bb_suff_add_rows(params, data, rows, suff, c):
    d = int(params[0])
    suff[c, 0] += rows.size
    for t in range(rows.size):
        i = rows[t]
        for k in range(d):
            suff[c, 1 + k] += data[i, k]


@njit(cache=True)
def bb_suff_to_stats(params, suff, stats, c):
    d = int(params[0])
    for k in range(d + 1):
        stats[c, k] = suff[c, k]
    _bb_cache(params, stats, c)


@njit(cache=True)
def bb_draw_theta(params, stats, c, theta):
    """Per feature ``p ~ Beta(a + n1, b + n - n1)``."""
    d = int(params[0])
    n = stats[c, 0]
    total = 0.0
    for k in range(d):
        n1 = stats[c, 1 + k]
        g1 = np.random.gamma(params[1 + k] + n1, 1.0)
        g0 = np.random.gamma(params[1 + d + k] + n - n1, 1.0)
        # log p and log(1 - p) from the two gamma draws (no 1 - p cancellation)
        log_sum = math.log(g1 + g0)
        log_p = math.log(max(g1, 1e-300)) - log_sum
        log_q = math.log(max(g0, 1e-300)) - log_sum
        theta[c, k] = log_p - log_q
        total += log_q
    theta[c, d] = total


@njit(cache=True)
def bb_log_density_rows(params, theta, c, data, rows, out):
    d = int(params[0])
    for t in range(rows.size):
        i = rows[t]
        value = theta[c, d]
        for k in range(d):
            if data[i, k] != 0:
                value += theta[c, k]
        out[t] = value


# ---------------------------------------------------------------- Dirichlet-multinomial
@njit(cache=True)
def dm_suff_add_rows(params, data, rows, suff, c):
    d = int(params[0])
    for t in range(rows.size):
        i = rows[t]
        suff[c, 0] += 1.0
        total = 0.0
        log_coefficient = 0.0
        for k in range(d):
            x = data[i, k]
            suff[c, 2 + k] += x
            total += x
            if x > 0:
                log_coefficient -= math.lgamma(x + 1.0)
        suff[c, 1] += total
        suff[c, 2 + d] += log_coefficient + math.lgamma(total + 1.0)


@njit(cache=True)
def dm_suff_to_stats(params, suff, stats, c):
    for k in range(suff.shape[1]):
        stats[c, k] = suff[c, k]


@njit(cache=True)
def dm_draw_theta(params, stats, c, theta):
    """``p ~ Dirichlet(beta + counts)``."""
    d = int(params[0])
    total = 0.0
    for k in range(d):
        g = max(np.random.gamma(params[1 + k] + stats[c, 2 + k], 1.0), 1e-300)
        theta[c, k] = g
        total += g
    for k in range(d):
        theta[c, k] = math.log(theta[c, k] / total)


@njit(cache=True)
def dm_log_density_rows(params, theta, c, data, rows, out):
    d = int(params[0])
    for t in range(rows.size):
        i = rows[t]
        value = 0.0
        for k in range(d):
            if data[i, k] != 0:
                value += data[i, k] * theta[c, k]
        out[t] = value


# ---------------------------------------------------------------- any likelihood
@template
def log_density_screen_by_block(params, theta, n_clusters, data, rows, log_pi, window, out):
    """The generic screened kernel: every entry, ``lik_log_density_block``."""
    lik_log_density_block(params, theta, n_clusters, data, rows, out)


@template
def log_density_block_by_rows(params, theta, n_clusters, data, rows, out):
    """The generic block kernel: ``lik_log_density_rows`` once per cluster."""
    for c in range(n_clusters):
        lik_log_density_rows(params, theta, c, data, rows, out[c])
