"""What a BHC tree says about the data: ``p(D|T)``, merge posteriors, DP bounds, predictive.

A tree's Dirichlet-process quantities are the flat sparse trellis's tree
recursion (``sparse_flat.tree_log_partition_functions``)
over the tree's nodes with the DP cluster potential
``e(B) = log alpha + log Gamma(|B|) + log m(X_B)``:

- ``log S(k)``: the inside value with ``e``, the sum over the partitions of
  node ``k`` consistent with the tree of ``prod exp(e)``;
- ``log d(k)``: the same with ``m = 1`` (Heller & Ghahramani's
  ``d_k = alpha Gamma(n_k) + d_i d_j``);
- ``p(D_k | T_k) = S(k) / d(k)`` and ``r_k = exp(e(k)) / S(k)``;
- the DP-mixture evidence lower bound ``S(root) Gamma(alpha) / Gamma(n + alpha)``,
  the DP marginal restricted to the tree-consistent partitions.
"""

import math

import numpy as np
from scipy.special import gammaln

from ..._core.budget import check_memory
from ..._core.family import ClusterFamily
from ..._core.labels import first_appearance_labels
from ...models.dp_mixture import MixturePartitionModel
from ...models.prior_kernels import log_rising_factorial
from ...models.priors import CRP
from ..exact.trellis_for_model import trellis_for_model
from ..sparse.seeds import linkage_seed_trees
from ..sparse.sparse_flat import SparseFlatTrellis, tree_log_partition_functions
from ._bhc_kernels import bottom_up_state
from .build import bhc_kernels, kernel_params

#: Largest ``n`` for which the exact DP-mixture marginal is computed (flat trellis).
MAX_EXACT_DP_ITEMS = 12

_LOG_HALF = math.log(0.5)


def _node_arrays(children, n):
    n_nodes = 2 * n - 1
    left = np.full(n_nodes, -1, dtype=np.int64)
    right = np.full(n_nodes, -1, dtype=np.int64)
    left[n:] = children[:, 0]
    right[n:] = children[:, 1]
    sizes = np.ones(n_nodes, dtype=np.int64)
    for t, (a, b) in enumerate(children.tolist()):
        sizes[n + t] = sizes[a] + sizes[b]
    return left, right, sizes


def node_log_marginals(likelihood, data, children, params=None):
    """``log m(X_k)`` of every node (leaves ``0..n-1``, then the merges)."""
    kernels = bhc_kernels(likelihood)
    params = kernel_params(likelihood, params)
    n = children.shape[0] + 1
    out = np.empty(2 * n - 1, np.float64)
    kernels.tree_node_log_marginals(params, data, np.ascontiguousarray(children),
                                    bottom_up_state(n, likelihood.n_stats,
                                                    likelihood.work_size(1)), out)
    return out


class TreePosterior:
    """The DP quantities of one BHC tree (binary, possibly with virtual rose-tree merges).

    Parameters
    ----------
    children : ndarray of int64, shape (n - 1, 2)
        Children before parents.
    is_cluster : ndarray of bool, shape (n - 1,)
        False for the virtual merges of a binarized rose tree.
    log_marginals : ndarray of shape (2 n - 1,)
        ``log m(X_k)`` of every node.
    alpha : float

    Attributes
    ----------
    log_s, log_d, log_r : ndarray of shape (2 n - 1,)
        ``log S``, ``log d`` and ``log r`` per node (``log r = -inf`` on virtual merges).
    log_marginal_likelihood : float
        ``log p(D | T) = log S(root) - log d(root)``.
    log_evidence_lower_bound : float
        ``log S(root) + log Gamma(alpha) - log Gamma(n + alpha)``.
    """

    def __init__(self, children, is_cluster, log_marginals, alpha):
        n = children.shape[0] + 1
        self.n_items = n
        self.children = children
        self.is_cluster = np.concatenate([np.ones(n, dtype=bool), is_cluster])
        left, right, self.sizes = _node_arrays(children, n)
        log_alpha = math.log(alpha)
        e_prior = np.where(self.is_cluster, log_alpha + gammaln(self.sizes), -np.inf)
        e = e_prior + log_marginals
        self.log_potentials = e
        self.log_s = tree_log_partition_functions(e, left, right)
        self.log_d = tree_log_partition_functions(e_prior, left, right)
        with np.errstate(invalid="ignore"):
            self.log_r = np.where(self.is_cluster, e - self.log_s, -np.inf)
        root = 2 * n - 2
        self.log_marginal_likelihood = float(self.log_s[root] - self.log_d[root])
        self.log_evidence_lower_bound = float(
            self.log_s[root] - log_rising_factorial(alpha, float(n)))

    def heights(self):
        """Height of every merge: the largest ``-log r`` in its subtree (rose chains share one)."""
        n = self.n_items
        h = np.zeros(2 * n - 1)
        for t, (a, b) in enumerate(self.children.tolist()):
            k = n + t
            own = -self.log_r[k] if self.is_cluster[k] else 0.0
            h[k] = max(own, h[a], h[b], 0.0)
        for t in range(n - 2, -1, -1):   # virtual merges sit at their rose node's height
            k = n + t
            for c in self.children[t]:
                if not self.is_cluster[c]:
                    h[c] = h[k]
        return h[n:]

    def cut_labels(self):
        """Top-down cut: a node is a cluster when ``r_k >= 0.5`` (leaves always are)."""
        n = self.n_items
        labels = np.empty(n, dtype=np.intp)
        stack = [2 * n - 2]
        k = 0
        while stack:
            node = stack.pop()
            if node < n or (self.is_cluster[node] and self.log_r[node] >= _LOG_HALF):
                members = [node]
                while members:
                    m = members.pop()
                    if m < n:
                        labels[m] = k
                    else:
                        members.extend(self.children[m - n].tolist())
                k += 1
            else:
                stack.extend(self.children[node - n][::-1].tolist())
        return first_appearance_labels(labels)

    def predictive_log_weights(self):
        """``log w_k`` of the predictive ``p(x | D) = sum_k w_k p(x | D_k)`` (paper Section 4).

        ``w_k = r_k prod_{ancestors a} (1 - r_a) n_c / n_a``, ``c`` the child of
        ``a`` on the path to ``k``: at each node the new point stops with
        probability ``r``, otherwise goes down to a child in proportion to its
        size (as a CRP seat), so the weights sum to one.
        """
        n = self.n_items
        log_w = np.full(2 * n - 1, -np.inf)
        above = np.zeros(2 * n - 1)       # log of the probability of reaching the node
        log_sizes = np.log(self.sizes)
        for k in range(2 * n - 2, -1, -1):
            if self.is_cluster[k]:
                log_w[k] = self.log_r[k] + above[k]
                r = math.exp(self.log_r[k])
                below = above[k] + (math.log1p(-r) if r < 1.0 else -np.inf)
            else:
                below = above[k]
            if k >= n:
                for c in self.children[k - n]:
                    above[c] = below + log_sizes[c] - log_sizes[k]
        return log_w


def node_groups(children, labels, n_clusters):
    """Group of every node for the predictive: its cluster, or its own column above the cut.

    Returns ``(group, fractions)``: ``group`` of shape ``(2 n - 1,)``, clusters
    ``0..K-1`` and the nodes that span several clusters ``K, K+1, ...``;
    ``fractions[g - K]`` is the share of each cluster in such a node.
    """
    n = labels.size
    sizes = _node_arrays(children, n)[2]
    label = np.concatenate([labels, np.full(n - 1, -2)]).astype(np.int64)
    counts = {}
    for t, (a, b) in enumerate(children.tolist()):
        k = n + t
        if label[a] >= 0 and label[a] == label[b]:
            label[k] = label[a]
            continue
        label[k] = -1
        total = np.zeros(n_clusters)
        for c in (a, b):
            if label[c] >= 0:
                total[label[c]] += sizes[c]
            else:
                total += counts[c]
        counts[k] = total
    group = label.copy()
    spanning = np.flatnonzero(label < 0)
    group[spanning] = n_clusters + np.arange(spanning.size)
    fractions = np.array([counts[k] / counts[k].sum() for k in spanning.tolist()]).reshape(
        -1, n_clusters)
    return group, fractions


def grouped_log_predictive(likelihood, data, new_data, children, log_weight, group, n_groups,
                           params=None):
    """``log sum_{k in g} w_k p(x | X_k)``, shape ``(n_new, n_groups)``."""
    check_memory(8 * new_data.shape[0] * n_groups, "the BHC predictive")
    kernels = bhc_kernels(likelihood)
    return kernels.grouped_log_predictives(
        kernel_params(likelihood, params), data, new_data,
        np.ascontiguousarray(children), log_weight, group.astype(np.int64), int(n_groups),
        bottom_up_state(children.shape[0] + 1, likelihood.n_stats, likelihood.work_size(1),
                        extra_rows=1))


def exact_dp_log_marginal(likelihood, data, alpha, params=None):
    """``log p(X)`` of the DP mixture, exactly (flat trellis), at the kernel parameters ``params``."""
    model = MixturePartitionModel(CRP(alpha), likelihood).fit(data)
    table = model.log_potential_table(kernel_params(likelihood, params))
    trellis = trellis_for_model(model, table, max_items=MAX_EXACT_DP_ITEMS)
    return float(trellis.log_partition_function + model.log_potential_constant())


def family_lower_bound(likelihood, data, X, alpha, trees, linkage="all", params=None):
    """The DP evidence bound over the union of the BHC tree and linkage seed trees.

    Every cluster of the family gets its DP potential; the sparse flat
    trellis sums exactly over the partitions made of family clusters, a
    superset of the BHC tree's consistent partitions, so the bound is at least
    the tree's and at most the exact DP marginal.

    Returns
    -------
    bound : float
    family : ClusterFamily
    trellis : SparseFlatTrellis
    """
    n = data.shape[0]
    trees = list(trees) + linkage_seed_trees(X, linkage=linkage)
    family = ClusterFamily.from_trees(trees, n_items=n)
    log_alpha = math.log(alpha)
    e = np.full(family.n_vertices, np.nan)
    for t, tree in enumerate(trees):
        e[family.seed_tree_vertices[t]] = node_log_marginals(likelihood, data, tree, params)
    e = e + log_alpha + gammaln(family.sizes)
    trellis = SparseFlatTrellis(family, e).fit()
    bound = trellis.log_partition_function - log_rising_factorial(alpha, float(n))
    return float(bound), family, trellis


__all__ = ["TreePosterior", "node_log_marginals", "node_groups", "grouped_log_predictive",
           "exact_dp_log_marginal", "family_lower_bound", "MAX_EXACT_DP_ITEMS", "canonical"]
