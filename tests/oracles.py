"""Independent oracles of the test suite, in one module.

Brute-force enumeration of every structure (partitions, binary trees), naive
plain-Python summaries of sample sets, and the reference data the exact engines
are checked against. Deliberately naive and separate from the library's
engines, so the tests compare two unrelated computations.
"""

import functools
import itertools
import math

import numpy as np
from scipy.special import betaln, gammaln, logsumexp


def set_partitions(n):
    """All set partitions of ``n`` items as restricted growth strings, shape (Bell(n), n)."""
    return _set_partitions(n).copy()


@functools.lru_cache(maxsize=None)   # many tests enumerate the same n again and again
def _set_partitions(n):
    out = []

    def grow(prefix, n_blocks):
        if len(prefix) == n:
            out.append(list(prefix))
            return
        for label in range(n_blocks + 1):
            prefix.append(label)
            grow(prefix, max(n_blocks, label + 1))
            prefix.pop()

    grow([], 0)
    return np.array(out, dtype=np.int64)


def correlation_log_potentials(partitions, affinity, beta):
    """``beta * (sum_same w - sum_diff w)`` for each partition (rows)."""
    n = affinity.shape[0]
    iu, ju = np.triu_indices(n, 1)
    w = affinity[iu, ju]
    same = partitions[:, iu] == partitions[:, ju]
    return beta * (same @ w - (~same) @ w)


def flat_summaries(partitions, log_phi):
    """Exact summaries of a distribution given all partitions and their log-potentials."""
    log_z = logsumexp(log_phi)
    probs = np.exp(log_phi - log_z)
    n = partitions.shape[1]
    same = partitions[:, :, None] == partitions[:, None, :]
    pairwise = np.einsum("t,tij->ij", probs, same)
    n_clusters = partitions.max(axis=1) + 1
    k_dist = np.bincount(n_clusters - 1, weights=probs, minlength=n)
    best = int(np.argmax(log_phi))
    return dict(log_z=log_z, probs=probs, pairwise=pairwise, k_dist=k_dist,
                map_index=best, map_log_phi=log_phi[best])


def cluster_probability(partitions, probs, indices):
    """P(exactly ``indices`` is a cluster) by enumeration."""
    indices = np.asarray(indices)
    mask = np.zeros(partitions.shape[1], bool)
    mask[indices] = True
    total = 0.0
    for row, p in zip(partitions, probs):
        label = row[indices[0]]
        if np.array_equal(row == label, mask):
            total += p
    return total


def together_probability(partitions, probs, indices):
    """P(all ``indices`` share a cluster) by enumeration."""
    sub = partitions[:, np.asarray(indices)]
    return float(probs[(sub == sub[:, :1]).all(axis=1)].sum())


def canonical(labels):
    """Relabel in order of first appearance."""
    mapping = {}
    return tuple(mapping.setdefault(v, len(mapping)) for v in labels)


def random_subsets(rng, n, count):
    """A few random non-empty subsets of range(n)."""
    subsets = []
    for _ in range(count):
        size = rng.integers(1, n + 1)
        subsets.append(np.sort(rng.choice(n, size=size, replace=False)))
    return subsets


# -- binary hierarchies -----------------------------------------------------------

def binary_trees(items):
    """Every binary tree over ``items`` (a sorted tuple), as nested tuples.

    A tree is ``(left, right)`` with the left subtree holding the lowest item;
    a leaf is its item. There are ``(2n - 3)!!`` of them.
    """
    items = tuple(items)
    if len(items) == 1:
        return [items[0]]
    first, rest = items[0], items[1:]
    out = []
    n_rest = len(rest)
    for code in range(2 ** n_rest - 1):  # the right child is never empty
        left = (first,) + tuple(rest[i] for i in range(n_rest) if code >> i & 1)
        right = tuple(rest[i] for i in range(n_rest) if not code >> i & 1)
        for tl in binary_trees(left):
            for tr in binary_trees(right):
                out.append((tl, tr))
    return out


def tree_leaves(tree):
    """Sorted item tuple of a nested-tuple tree."""
    if isinstance(tree, tuple):
        return tuple(sorted(tree_leaves(tree[0]) + tree_leaves(tree[1])))
    return (tree,)


def tree_clusters(tree):
    """Set of item tuples of every node of a tree (leaves and root included)."""
    out = set()

    def walk(node):   # each node's sorted leaves from its children's (one pass)
        leaves = (tuple(sorted(walk(node[0]) + walk(node[1]))) if isinstance(node, tuple)
                  else (node,))
        out.add(leaves)
        return leaves

    walk(tree)
    return out


def is_connected(cluster, dense):
    """Whether ``cluster`` (items) is connected in the boolean adjacency matrix ``dense``."""
    cluster = list(cluster)
    reached, stack = {cluster[0]}, [cluster[0]]
    while stack:
        i = stack.pop()
        for j in cluster:
            if dense[i, j] and j not in reached:
                reached.add(j)
                stack.append(j)
    return len(reached) == len(cluster)


def connected_trees(n, dense):
    """Every binary tree on ``n`` items whose clusters are all connected in ``dense``."""
    return [t for t in binary_trees(tuple(range(n)))
            if all(is_connected(c, dense) for c in tree_clusters(t))]


def tree_sibling_pairs(tree):
    """``(left, right)`` item tuples of every internal node (left holds the lowest item)."""
    out = []

    def walk(node):   # the node's sorted leaves; pairs listed parent first
        if not isinstance(node, tuple):
            return (node,)
        slot = len(out)
        out.append(None)
        a, b = walk(node[0]), walk(node[1])
        out[slot] = (a, b) if a[0] < b[0] else (b, a)
        return tuple(sorted(a + b))

    walk(tree)
    return out


def canonical_tree(tree):
    """The same tree with every node's children ordered by their lowest item."""
    def walk(node):   # (canonical subtree, its lowest item)
        if not isinstance(node, tuple):
            return int(node), int(node)
        (a, low_a), (b, low_b) = walk(node[0]), walk(node[1])
        return ((a, b), low_a) if low_a < low_b else ((b, a), low_b)

    return walk(tree)[0]


def tree_log_potential(tree, split_value):
    """``sum of split_value(left, right)`` over the internal nodes of a tree."""
    return float(sum(split_value(l, r) for l, r in tree_sibling_pairs(tree)))


def hierarchy_summaries(trees, log_phi):
    """log Z, MAP, number of allowed trees and tree probabilities by enumeration."""
    log_phi = np.asarray(log_phi, dtype=float)
    finite = np.isfinite(log_phi)
    log_z = logsumexp(log_phi[finite]) if finite.any() else -np.inf
    probs = np.where(finite, np.exp(log_phi - log_z), 0.0)
    best = int(np.argmax(log_phi))
    return dict(log_z=log_z, probs=probs, map_index=best, map_log_phi=log_phi[best],
                map_tree=trees[best], n_allowed=int(finite.sum()))


def cluster_node_probabilities(trees, probs):
    """``{cluster: P(cluster is a node)}`` for every cluster of any tree, by enumeration."""
    out = {}
    for tree, p in zip(trees, probs):
        for cluster in tree_clusters(tree):
            out[cluster] = out.get(cluster, 0.0) + p
    return out


def cluster_node_probability(trees, probs, cluster):
    """P(``cluster`` is a node of the tree) by enumeration."""
    cluster = tuple(sorted(int(i) for i in cluster))
    return float(sum(p for t, p in zip(trees, probs) if cluster in tree_clusters(t)))


# -- sparse families ----------------------------------------------------------------

def family_partitions(n, clusters, cluster_value):
    """Partitions of ``n`` items whose every cluster is in ``clusters`` (frozensets).

    Returns ``(partitions, log_phi)``: restricted growth strings of the allowed
    partitions (all partitions enumerated, then filtered) and the sum of
    ``cluster_value(frozenset)`` over each one's clusters.
    """
    allowed = set(clusters)
    blocks, block_ids, _, _ = _partition_blocks(n)
    blocks = [frozenset(b) for b in blocks]
    is_allowed = [b in allowed for b in blocks]
    value = {}   # cluster_value once per distinct cluster, summed in the same order
    partitions = _set_partitions(n)
    rows, values = [], []
    for labels, ids in zip(partitions, block_ids):
        if all(is_allowed[b] for b in ids):
            for b in ids:
                if b not in value:
                    value[b] = cluster_value(blocks[b])
            rows.append(labels)
            values.append(sum(value[b] for b in ids))
    return np.array(rows, dtype=np.int64), np.array(values)


def family_hierarchy_map(masks, split_value):
    """MAP log-potential and number of trees of a sparse *hierarchical* trellis.

    TEST ORACLE (pure Python over bitmasks, small N): the trees whose every
    node is one of ``masks`` (each node split into two member masks), with
    ``split_value(parent, left)`` the split log-potential (``left`` holds the
    lowest item). Returns ``(map_value, n_trees)``, ``n_trees`` counting the
    trees of finite potential.
    """
    family = set(int(m) for m in masks)
    best, count = {}, {}
    for mask in sorted(family, key=lambda m: bin(m).count("1")):
        if mask & (mask - 1) == 0:
            best[mask], count[mask] = 0.0, 1
            continue
        low = mask & -mask
        rest = mask ^ low
        value, total = -np.inf, 0
        sub = rest
        while True:
            left, right = sub | low, rest ^ sub
            if right and left in best and right in best:
                split = split_value(mask, left)
                if split > -np.inf:      # count the trees of finite potential only
                    total += count[left] * count[right]
                    value = max(value, split + best[left] + best[right])
            if sub == 0:
                break
            sub = (sub - 1) & rest
        best[mask], count[mask] = value, total
    full = max(family)
    return best[full], count[full]


__all__ = ["set_partitions", "correlation_log_potentials", "flat_summaries",
           "cluster_probability", "together_probability", "canonical",
           "random_subsets", "binary_trees", "tree_leaves", "tree_clusters",
           "tree_sibling_pairs", "canonical_tree", "tree_log_potential",
           "hierarchy_summaries", "cluster_node_probability",
           "cluster_node_probabilities", "family_partitions",
           "family_hierarchy_map"]


def all_splits(n):
    """Every split (L, R) of every subset of range(n), L holding the lowest item."""
    for size in range(2, n + 1):
        for parent in itertools.combinations(range(n), size):
            first, rest = parent[0], parent[1:]
            for k in range(0, len(rest)):
                for extra in itertools.combinations(rest, k):
                    left = (first,) + extra
                    right = tuple(i for i in rest if i not in extra)
                    yield left, right


def random_split_table(rng, n, scale=2.0, forbid=0.0):
    """Random split log-potentials; the caterpillar splits (R = {max S}) stay allowed."""
    table = {}
    for left, right in all_splits(n):
        value = scale * rng.standard_normal()
        caterpillar = len(right) == 1 and right[0] > max(left)
        if forbid and not caterpillar and rng.random() < forbid:
            value = -np.inf
        table[left, right] = value
    return table


# --- summaries of sample sets --------------------------------------------------------


def blocks_from_labels(labels):
    """A label vector as a list of sets."""
    blocks = {}
    for i, label in enumerate(labels):
        blocks.setdefault(label, set()).add(i)
    return list(blocks.values())


def as_block_sets(samples):
    """A label array (T, n) or list of lists of blocks as a list of lists of sets."""
    if isinstance(samples, np.ndarray):
        return [blocks_from_labels(row) for row in samples]
    return [[set(block) for block in sample] for sample in samples]


def proj(blocks, subset):
    """Eq. 4: non-empty intersections."""
    subset = set(subset)
    return [block & subset for block in blocks if block & subset]


def phi(blocks, length):
    sizes = [len(block) for block in blocks]
    return [sum(size >= k for size in sizes) for k in range(1, length + 1)]


def entropy(blocks, m):
    """Per-element-information entropy of blocks of a set of size m (Eq. 11)."""
    return sum(len(b) / m * math.log(m / len(b)) for b in blocks)


def expected_projection_entropy(block_sets, subset):
    return float(np.mean([entropy(proj(blocks, subset), len(subset)) for blocks in block_sets]))


def cod(block_sets, order):
    m = len(order)
    out = np.zeros((m, m))
    for blocks in block_sets:
        for i in range(1, m + 1):
            out[i - 1] += phi(proj(blocks, order[:i]), m)
    return out / len(block_sets)


def entropy_agglomeration(block_sets, n, decimals=10):
    """EA by evaluating every pair at every step; ties: smallest (entropy, slot a, slot b)."""
    slots = [[i] for i in range(n)]
    ids = list(range(n))
    children, distances = [], []
    for step in range(n - 1):
        best = None
        for a in range(n):
            if slots[a] is None:
                continue
            for b in range(a + 1, n):
                if slots[b] is None:
                    continue
                h = round(expected_projection_entropy(block_sets, slots[a] + slots[b]), decimals)
                if best is None or h < best[0]:
                    best = (h, a, b)
        h, a, b = best
        children.append(sorted((ids[a], ids[b])))
        distances.append(h)
        slots[a] = slots[a] + slots[b]
        slots[b] = None
        ids[a] = n + step
    return np.array(children), np.array(distances)


def random_partition_samples(rng, n_samples, n, noise=0.3, n_base=3):
    """Noisy copies of a random base partition, as labels (T, n)."""
    base = rng.integers(0, n_base, n)
    noisy = rng.random((n_samples, n)) < noise
    return np.where(noisy, rng.integers(0, n_base + 2, (n_samples, n)), base)


def random_feature_allocations(rng, n_samples, n, max_blocks=4):
    """Random feature allocations as lists of blocks (overlapping, omitting elements)."""
    samples = []
    for _ in range(n_samples):
        blocks = []
        for _ in range(rng.integers(1, max_blocks + 1)):
            members = np.flatnonzero(rng.random(n) < 0.4)
            if members.size:
                blocks.append([int(e) for e in members])
        if not blocks:
            blocks.append([int(rng.integers(n))])
        samples.append(blocks)
    # make sure the last element appears so that n is inferred
    samples[0].append([n - 1])
    return samples


# --- reference data --------------------------------------------------------------------


def small_ginkgo_jets():
    """The 9 reference jets (4 to 6 leaves) with the public ClusterTrellis values."""
    from sklearn_trellis.datasets import load_ginkgo_jets
    return load_ginkgo_jets("reference").jets


def ginkgo_energy(jet):
    """The (unfitted) public Ginkgo likelihood with a jet's parameters (reference values)."""
    from sklearn_trellis.models import GinkgoEnergy
    return GinkgoEnergy(lam=jet["lam"], lam_root=jet["lam_root"], t_cut=jet["t_cut"],
                        likelihood="ginkgo")


def ginkgo_split_by_definition(p_left, p_right, lam, t_cut, likelihood):
    """Ginkgo's split log-likelihood from its definition, one split of 4-momenta.

    ``lam`` is the rate of this split (``lam_root`` at the jet's). ``'ginkgo'``:
    the public likelihood (light children's masses censored at ``t_cut``);
    ``'momenta'``: every child's mass density plus the two-body Jacobian
    ``4 sqrt(t_P) / p*`` from (t_L, t_R, direction) to the left child's 4-momentum.
    """

    def mass2(p):
        return p[0] ** 2 - p[1] ** 2 - p[2] ** 2 - p[3] ** 2

    def log_f(t, t_max):
        norm = 1.0 - math.exp(-(1.0 - 1e-3) * lam)
        if likelihood == "ginkgo" and t <= t_cut:
            return math.log((1.0 - math.exp(-lam * min(t_max, t_cut) / t_max)) / norm)
        if t < 0 or t >= (1.0 - 1e-3) * t_max:
            return -math.inf
        return math.log(lam / t_max / norm) - lam * t / t_max

    p_left, p_right = np.asarray(p_left, float), np.asarray(p_right, float)
    t_p, t_l, t_r = mass2(p_left + p_right), mass2(p_left), mass2(p_right)
    if t_p <= t_cut or max(t_l, t_r) >= (1.0 - 1e-3) * t_p:
        return -math.inf
    root = math.sqrt(t_p)
    s_l, s_r = math.sqrt(max(t_l, 0.0)), math.sqrt(max(t_r, 0.0))
    if s_l + s_r > root:
        return -math.inf
    terms = [log_f(t_l, t_p) + log_f(t_r, (root - s_l) ** 2),
             log_f(t_r, t_p) + log_f(t_l, (root - s_r) ** 2)]
    value = logsumexp(terms) + math.log(0.5 / (4.0 * math.pi))
    if likelihood == "momenta":
        p_star = math.sqrt((t_p - t_l - t_r) ** 2 - 4 * t_l * t_r) / (2.0 * root)
        value += math.log(4.0 * root / p_star)
    return value


def partition_losses(estimates, references, loss, a=1.0, b=1.0):
    """(E, R) matrix of ``loss(reference, estimate)`` from the joint counts, by definition.

    Binder(a, b): ``a`` per pair together in the reference and split by the
    estimate, ``b`` per pair apart in the reference and joined; VI_a =
    ``2 H(J) - a H(ref) - (2 - a) H(est)``; NVI = ``VI / H(J)``; NID =
    ``1 - I / max(H)``; omARI = ``1 - ARI`` (Hubert & Arabie). Natural logs.
    """
    estimates = np.asarray(estimates)
    references = np.asarray(references)
    n = estimates.shape[1]
    iu, ju = np.triu_indices(n, 1)
    same_e = (estimates[:, iu] == estimates[:, ju]).astype(float)
    same_r = (references[:, iu] == references[:, ju]).astype(float)
    if loss == "binder":
        return a * (1 - same_e) @ same_r.T + b * same_e @ (1 - same_r).T
    if loss == "omari":
        both = same_e @ same_r.T
        in_e = same_e.sum(axis=1)[:, None]
        in_r = same_r.sum(axis=1)[None, :]
        expected = in_e * in_r / len(iu)
        maximum = (in_e + in_r) / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            ari = np.where(maximum == expected, 1.0, (both - expected) / (maximum - expected))
        return 1 - ari

    def entropy(codes):
        counts = np.stack([np.bincount(row, minlength=n * n) for row in codes])
        p = counts / n
        return -(p * np.log(np.where(p > 0, p, 1))).sum(axis=1)

    base = np.max(references) + 1
    h_e = entropy(estimates)[:, None]
    h_r = entropy(references)[None, :]
    joint = np.array([[entropy((e * base + r)[None])[0] for r in references]
                      for e in estimates])
    if loss == "vi":
        return 2 * joint - a * h_r - (2 - a) * h_e
    info = h_e + h_r - joint
    with np.errstate(invalid="ignore", divide="ignore"):
        if loss == "nvi":
            return np.where(joint > 1e-15, 1 - info / joint, 0.0)
        top = np.maximum(h_e, h_r)
        return np.where(top > 1e-15, 1 - info / top, 0.0)


def pairwise_losses(estimates, pairwise, loss, a=1.0, b=1.0):
    """Pairwise losses of each estimate from ``P`` by their formulas.

    Binder(a, b) ``= sum_{i<j} [a P_ij (1 - c_ij) + b (1 - P_ij) c_ij]``;
    omARI.approx ``= 1 - PEAR`` (Fritsch & Ickstadt 2009); VI.lb (Wade &
    Ghahramani 2018, natural log) ``= (1/n) sum_i [log sum_j c_ij + log sum_j
    P_ij - 2 log sum_j c_ij P_ij]`` (``c_ii = 1``, ``P_ii = 1``).
    """
    estimates = np.asarray(estimates)
    n = estimates.shape[1]
    upper = np.triu(np.ones((n, n)), 1) > 0
    if loss == "binder":   # every estimate at once: same[e, i, j] = c_ij of estimate e
        same = (estimates[:, :, None] == estimates[:, None, :]).astype(float)
        return np.sum(upper * (a * pairwise * (1 - same) + b * (1 - pairwise) * same),
                      axis=(1, 2))
    out = []
    for c in estimates:
        same = (c[:, None] == c[None, :]).astype(float)
        if loss == "omari_approx":
            together, prob, both = same[upper].sum(), pairwise[upper].sum(), (
                same * pairwise)[upper].sum()
            expected = together * prob / upper.sum()
            maximum = (together + prob) / 2
            # 0/0 (e.g. P and the estimate both all-together): perfect agreement, as omari
            out.append(0.0 if maximum == expected else
                       1 - (both - expected) / (maximum - expected))
        else:
            out.append(np.mean(np.log(same.sum(axis=1)) + np.log(pairwise.sum(axis=1))
                               - 2 * np.log((same * pairwise).sum(axis=1))))
    return np.array(out)


def all_partitions_binder_losses(pairwise, a=1.0, b=1.0):
    """``(partitions, losses)``: the expected Binder loss of every set partition."""
    partitions = set_partitions(pairwise.shape[0])
    return partitions, pairwise_losses(partitions, pairwise, "binder", a=a, b=b)


def conjugate_log_marginal(lik, X):
    """``log m(X)`` of a fitted conjugate likelihood from its textbook formula (no kernel)."""
    from sklearn_trellis.models.conjugate import BetaBernoulli, DirichletMultinomial
    if isinstance(lik, BetaBernoulli):
        ones = X.sum(axis=0)
        zeros = X.shape[0] - ones
        return float(np.sum(betaln(lik.a_ + ones, lik.b_ + zeros) - betaln(lik.a_, lik.b_)))
    if isinstance(lik, DirichletMultinomial):
        beta = lik.concentration_
        counts = X.sum(axis=0)
        coefficients = np.sum(gammaln(X.sum(axis=1) + 1) - gammaln(X + 1).sum(axis=1))
        return float(coefficients + gammaln(beta.sum()) - gammaln(beta.sum() + counts.sum())
                     + np.sum(gammaln(beta + counts) - gammaln(beta)))
    return lik.log_marginal_closed_form(X)   # NormalInverseWishart, NormalGamma


# -- partition posteriors, pair marginals, subset tables --------------------------------

def partition_log_joints(n, log_prior, log_cluster):
    """``log p(C) + sum_{B in C} log m(B)`` of every set partition ``C`` of ``n`` items.

    ``log_prior(counts)`` takes the cluster sizes in label order,
    ``log_cluster(members)`` the sorted item indices of one cluster (cached).
    Returns ``(partitions, log_joint)``.
    """
    blocks, block_ids, counts, count_ids = _partition_blocks(n)
    log_m = [log_cluster(np.array(members, dtype=np.intp)) for members in blocks]
    log_p = [log_prior(np.array(sizes, dtype=np.int64)) for sizes in counts]
    # the same sums in the same order as summing over each row's clusters in label order
    log_joint = np.array([log_p[c] + sum(log_m[b] for b in ids)
                          for c, ids in zip(count_ids, block_ids)])
    return set_partitions(n), log_joint


@functools.lru_cache(maxsize=None)   # called once per grid point or setting with the same n
def _partition_blocks(n):
    """The clusters and cluster sizes of every set partition of ``n`` items, each listed once.

    Returns ``(blocks, block_ids, counts, count_ids)``: ``blocks`` the distinct clusters as
    sorted index tuples, ``block_ids[t]`` the clusters of partition ``t`` in label order,
    ``counts`` the distinct size vectors, ``count_ids[t]`` partition ``t``'s.
    """
    blocks, counts = {}, {}
    block_ids, count_ids = [], []
    for row in _set_partitions(n).tolist():
        members = {}
        for i, label in enumerate(row):
            members.setdefault(label, []).append(i)
        ids = tuple(blocks.setdefault(tuple(members[c]), len(blocks)) for c in range(len(members)))
        sizes = tuple(len(members[c]) for c in range(len(members)))
        block_ids.append(ids)
        count_ids.append(counts.setdefault(sizes, len(counts)))
    return list(blocks), block_ids, list(counts), count_ids


def correlation_pairwise_by_enumeration(w, beta):
    """Pairwise marginals of correlation clustering by enumeration.

    Each log-potential is summed exactly (math.fsum).
    """
    n = w.shape[0]
    labelings, logs = [], []
    for labels in itertools.product(range(n), repeat=n):
        if any(labels[i] > max(labels[:i], default=-1) + 1 for i in range(n)):
            continue  # not in canonical form
        terms = [beta * (w[i, j] if labels[i] == labels[j] else -w[i, j])
                 for i in range(n) for j in range(i + 1, n)]
        labelings.append(labels)
        logs.append(math.fsum(terms))
    logs = np.array(logs)
    p = np.exp(logs - logs.max())
    p /= p.sum()
    lab = np.array(labelings)
    return np.einsum("t,tij->ij", p, lab[:, :, None] == lab[:, None, :])


def subset_convolution(a, b, n_bits, op):
    """Subset convolution: ``out[j]`` is the sum (``op=np.multiply``) or the maximum
    (``op=np.add``) over the subsets ``t`` of ``j`` of ``op(a[t], b[j ^ t])``."""
    out = np.empty(1 << n_bits)
    for j in range(1 << n_bits):
        values = [op(a[t], b[j ^ t]) for t in range(1 << n_bits) if t & j == t]
        out[j] = sum(values) if op is np.multiply else max(values)
    return out


def flat_log_z_table(table, n):
    """log Z of every subset by the lowest-item recursion, summing every term."""
    log_z = np.zeros(1 << n)
    for subset in range(1, 1 << n):
        low = subset & -subset
        rest = subset ^ low
        terms, sub = [], rest
        while True:
            terms.append(table[sub | low] + log_z[rest ^ sub])
            if sub == 0:
                break
            sub = (sub - 1) & rest
        log_z[subset] = logsumexp(terms)
    return log_z


def min_over_bipartitions(m, score):
    """Smallest ``score(mask)`` over all ``2^(m-1) - 1`` bipartitions of ``m`` items (itertools)."""
    best = np.inf
    for size in range(1, m):
        for left in itertools.combinations(range(m), size):
            mask = np.zeros(m, bool)
            mask[list(left)] = True
            best = min(best, score(mask))
    return best


def family_log_sum(items, allowed, value):
    """``log sum`` over the partitions of ``items`` into allowed clusters of ``sum value(B)``."""
    items = sorted(items)
    local = {frozenset(items.index(i) for i in b) for b in allowed if b <= set(items)}
    _, log_phi = family_partitions(len(items), local,
                                   lambda b: value(frozenset(items[i] for i in b)))
    return logsumexp(log_phi)


# -- tree counts and split edges ----------------------------------------------------------

def allowed_tree_count(n, allowed):
    """Binary trees over ``n`` items whose every split ``allowed(left, right)`` (bitmasks), counted
    by a plain big-integer recursion over subsets."""
    count = {1 << i: 1 for i in range(n)}
    for parent in range(1, 1 << n):
        if parent & (parent - 1) == 0:
            continue
        low = parent & -parent
        rest = parent ^ low
        total = 0
        sub = (rest - 1) & rest
        while True:
            left = sub | low
            if allowed(left, parent ^ left):
                total += count[left] * count[parent ^ left]
            if sub == 0:
                break
            sub = (sub - 1) & rest
        count[parent] = total
    return count[(1 << n) - 1]


def family_split_edges(members):
    """``(S, L, S - L)`` vertex triples of every split within a family (frozensets ``members``)
    with ``L`` holding the lowest item of ``S``."""
    index = {m: v for v, m in enumerate(members)}
    edges = set()
    for s, S in enumerate(members):
        low = min(S)
        for L in members:
            if low in L and L < S and (S - L) in index:
                edges.add((s, index[L], index[S - L]))
    return edges


def family_tree_counts(members):
    """Number of binary trees of each vertex whose nodes are all vertices (members in
    children-before-parents order)."""
    index = {m: v for v, m in enumerate(members)}
    count = {}
    for v, S in enumerate(members):
        if len(S) == 1:
            count[v] = 1
            continue
        low = min(S)
        count[v] = sum(count[index[L]] * count[index[S - L]] for L in members
                       if low in L and L < S and (S - L) in index)
    return count


# -- expected losses of every partition ---------------------------------------------------

def _entropies(counts):
    """Entropy (nats) of each row of a count array (last axis)."""
    counts = counts.astype(float)
    total = counts.sum(axis=-1, keepdims=True)
    p = np.where(counts > 0, counts / total, 1.0)
    return -(np.where(counts > 0, counts / total, 0.0) * np.log(p)).sum(axis=-1)


def expected_losses_by_enumeration(samples, loss, weights=None):
    """Expected Binder (``loss="binder"``) or VI loss of every set partition against samples
    (their mean, or with ``weights`` their weighted sum: e.g. every partition, weighted by
    its posterior probability)."""
    n = samples.shape[1]
    partitions = set_partitions(n)
    if loss == "binder":
        iu, ju = np.triu_indices(n, 1)
        same_c = (partitions[:, iu] == partitions[:, ju]).astype(float)
        same_s = (samples[:, iu] == samples[:, ju]).astype(float)
        disagreements = same_c @ (1 - same_s).T + (1 - same_c) @ same_s.T
        return partitions, (disagreements.mean(axis=1) if weights is None
                            else disagreements @ weights)
    # VI = 2 H(C, S) - H(C) - H(S) from the joint label counts of every (partition, sample)
    codes = partitions[:, None, :] * n + samples[None, :, :]
    joint = np.zeros(codes.shape[:2] + (n * n,))
    b_idx, t_idx = np.indices(codes.shape[:2])
    for i in range(n):
        np.add.at(joint, (b_idx, t_idx, codes[:, :, i]), 1)
    h_joint = _entropies(joint)
    h_c = _entropies(joint.reshape(joint.shape[:2] + (n, n)).sum(axis=3))
    h_s = _entropies(joint.reshape(joint.shape[:2] + (n, n)).sum(axis=2))
    vi = 2 * h_joint - h_c - h_s
    return partitions, vi.mean(axis=1) if weights is None else vi @ weights


# -- exchangeable partition priors, Wishart block model, biclustering -------------------

def log_eppf(sizes, alpha, n_blocks=None):
    """Textbook log prior probability of one partition with these cluster sizes.

    Ewens / CRP(``alpha``) when ``n_blocks`` is None:
    ``K log alpha + log Gamma(alpha) - log Gamma(alpha + n) + sum_b log Gamma(n_b)``;
    else a symmetric Dirichlet(``alpha / k``)-multinomial over ``k = n_blocks``
    components with the labels forgotten (``-inf`` beyond ``k`` clusters).
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    n, n_clusters = sizes.sum(), sizes.size
    normaliser = gammaln(alpha) - gammaln(alpha + n)
    if n_blocks is None:
        return float(n_clusters * math.log(alpha) + normaliser + np.sum(gammaln(sizes)))
    if n_clusters > n_blocks:
        return -np.inf
    a = alpha / n_blocks
    return float(normaliser + gammaln(n_blocks + 1.0) - gammaln(n_blocks - n_clusters + 1.0)
                 + np.sum(gammaln(sizes + a) - gammaln(a)))


def dense_wishart_loglik(S, labels, scale, theta, dof):
    """``(d/2) log det Psi - (d/2) tr(Psi S)``, ``Psi = (scale (I + theta B))^{-1}``, densely.

    The Wishart log-likelihood of fastTIWD up to terms free of the partition
    ``B``, ``scale`` and ``theta``, by dense linear algebra (no block formula).
    """
    labels = np.asarray(labels)
    sigma = scale * (np.eye(len(labels)) + theta * (labels[:, None] == labels[None, :]))
    psi = np.linalg.inv(sigma)
    return 0.5 * dof * np.linalg.slogdet(psi)[1] - 0.5 * dof * np.trace(psi @ S)


def wishart_log_posteriors(S, partitions, scale, theta, dof, alpha, n_blocks=None):
    """``log p(B) + log L(B)`` of each partition (rows of ``partitions``), scale and theta fixed.

    The unnormalised log posterior of the Wishart block model: :func:`log_eppf`
    plus :func:`dense_wishart_loglik`.
    """
    return np.array([log_eppf(np.bincount(p), alpha, n_blocks)
                     + dense_wishart_loglik(S, p, scale, theta, dof) for p in partitions])


def wishart_posterior_summaries(S, scale, theta, dof, alpha, n_blocks=None, known=None):
    """:func:`flat_summaries` of the Wishart block posterior by enumerating every partition.

    ``known`` (labels, ``-1`` unknown) keeps the partitions that hold each
    known class whole and the classes apart (semi-supervised mode).
    """
    partitions = set_partitions(S.shape[0])
    if known is not None:
        classes = np.unique(known[known >= 0])
        keep = []
        for p in partitions:
            whole = all(np.unique(p[known == c]).size == 1 for c in classes)
            blocks = [p[known == c][0] for c in classes]
            keep.append(whole and len(set(blocks)) == len(blocks))
        partitions = partitions[np.array(keep)]
    values = wishart_log_posteriors(S, partitions, scale, theta, dof, alpha, n_blocks)
    finite = np.isfinite(values)
    return flat_summaries(partitions[finite], values[finite])


def new_item_predictive_by_enumeration(samples, labels, n_clusters, enlarged, log_joint):
    """Predictive of new items averaged over partition samples, by enumerating their placements.

    For each sample ``z`` (relabelled ``0..k-1``) and each new item with
    ``enlarged`` inner-product matrix ``S_x`` (fitted items, then the new one),
    the item joins each of ``z``'s ``k`` clusters or a new one:
    ``v_c = log_joint(S_x, z + [c]) - log_joint(S_x[:-1, :-1], z)``.

    Returns ``(proba, log_density)``: ``proba`` of shape (m, n_clusters + 1),
    each sample's cluster probabilities shared out over the point estimate
    ``labels`` by overlap (last column: a new cluster), averaged over the
    samples weighted by each one's predictive density of the item,
    ``sum_c exp(v_c)`` (the posterior given the new item too); ``log_density``
    the log of the samples' mean ``sum_c exp(v_c)``.
    """
    probas, densities = [], []
    for z in samples:
        z = np.unique(z, return_inverse=True)[1]
        k_s = z.max() + 1
        rows_p, rows_d = [], []
        for S_big in enlarged:
            values = np.array([log_joint(S_big, np.append(z, c)) for c in range(k_s + 1)])
            values -= log_joint(S_big[:-1, :-1], z)
            rows_d.append(logsumexp(values))
            p = np.exp(values - logsumexp(values))
            mapped = np.zeros(n_clusters + 1)
            for c in range(k_s):
                share = np.bincount(labels[z == c], minlength=n_clusters) / np.sum(z == c)
                mapped[:n_clusters] += p[c] * share
            mapped[n_clusters] = p[k_s]
            rows_p.append(mapped)
        probas.append(rows_p)
        densities.append(rows_d)
    densities = np.array(densities)                       # (samples, items)
    weights = np.exp(densities - logsumexp(densities, axis=0))
    return (np.einsum("si,sik->ik", weights, np.array(probas)),
            logsumexp(densities, axis=0) - np.log(len(densities)))


def cell_block_log_marginal(kind, values, p):
    """Textbook closed forms on the observed values of one block, at every grid row of ``p``.

    ``kind`` is ``'normal'`` (Normal-Gamma, rows ``m0, kappa0, a0, b0, 1 / unit,
    log(1 / unit)`` with ``b0`` in units of ``unit**2``, the cell kernels' layout),
    ``'bernoulli'`` (Beta, rows ``a, b``) or ``'poisson'`` (Gamma(shape, rate),
    rows ``a0, b0``); NaN entries are missing and skipped.
    """
    x = values[~np.isnan(values)]
    n = x.size
    if n == 0:
        return np.zeros(len(p))
    if kind == "normal":
        m0, kappa0, a0, b0, inverse_unit, _ = p.T
        b0 = b0 / inverse_unit ** 2   # in the data's units
        mean = x.mean()
        kappa_n, a_n = kappa0 + n, a0 + n / 2
        b_n = b0 + 0.5 * np.sum((x - mean) ** 2) + kappa0 * n * (mean - m0) ** 2 / (2 * kappa_n)
        return (gammaln(a_n) - gammaln(a0) + a0 * np.log(b0) - a_n * np.log(b_n)
                + 0.5 * np.log(kappa0 / kappa_n) - 0.5 * n * math.log(2 * math.pi))
    if kind == "bernoulli":
        a, b = p.T
        return betaln(a + x.sum(), b + n - x.sum()) - betaln(a, b)
    a0, b0 = p.T   # poisson, Gamma(shape a0, rate b0)
    return (a0 * np.log(b0) - gammaln(a0) + gammaln(a0 + x.sum())
            - (a0 + x.sum()) * np.log(b0 + n) - np.sum(gammaln(x + 1)))


def biclustering_by_enumeration(kind, X, cells, alpha_rows, alpha_columns,
                                return_probabilities=False):
    """The infinite biclustering posterior by enumerating every pair of row and column partitions.

    CRP priors on both axes, :func:`cell_block_log_marginal` per block,
    summed over the cell model's hyperparameter grid (``cells``: a fitted cell
    model, read through ``hyperparameter_grid()`` and ``kernel_params()``).
    Returns ``(log_z, row_pairwise, column_pairwise, map_rows, map_columns)``, then
    with ``return_probabilities`` the row partitions, their posterior probabilities,
    the column partitions and theirs.
    """
    grid = cells.hyperparameter_grid()
    params, log_prior = (cells.kernel_params()[None], np.zeros(1)) if grid is None else grid
    rows, columns = set_partitions(X.shape[0]), set_partitions(X.shape[1])
    joint = np.empty((len(rows), len(columns)))
    for a, r in enumerate(rows):
        for b, c in enumerate(columns):
            per_grid = log_prior + sum(
                cell_block_log_marginal(kind, X[np.ix_(r == u, c == v)].ravel(), params)
                for u in range(r.max() + 1) for v in range(c.max() + 1))
            joint[a, b] = (logsumexp(per_grid) + log_eppf(np.bincount(r), alpha_rows)
                           + log_eppf(np.bincount(c), alpha_columns))
    log_z = logsumexp(joint)
    prob = np.exp(joint - log_z)
    row_pairwise = np.einsum("p,pij->ij", prob.sum(1), rows[:, :, None] == rows[:, None, :])
    column_pairwise = np.einsum("p,pij->ij", prob.sum(0),
                                columns[:, :, None] == columns[:, None, :])
    a, b = np.unravel_index(np.argmax(joint), joint.shape)
    out = (log_z, row_pairwise, column_pairwise, rows[a], columns[b])
    return out + (rows, prob.sum(1), columns, prob.sum(0)) if return_probabilities else out


# -- divisive trees ------------------------------------------------------------
def tree_splits_with_heights(children, heights, n):
    """``{(parent, left, right): height}`` of a ``children_`` tree (frozensets)."""
    sets = [frozenset([i]) for i in range(n)]
    out = {}
    for (a, b), height in zip(children, heights):
        sets.append(sets[a] | sets[b])
        out[(sets[-1], sets[a], sets[b])] = height
    return out


def assert_merges_match_r(merge, r_merge, heights):
    """Same clusters as R's ``merge`` at every height no other merge has.

    R reads its banner without knowing which of two tied splits came first, so
    at tied heights it may join neighbours that never formed a cluster (issue
    31); every merge at an untied height joins the same clusters in both.
    """
    n = len(heights) + 1
    values, counts = np.unique(heights, return_counts=True)
    untied = set(values[counts == 1].tolist())

    def clusters(children):
        sets = [frozenset([i]) for i in range(n)]
        for a, b in children:
            sets.append(sets[a] | sets[b])
        return {(s, h) for s, h in zip(sets[n:], heights) if h in untied}

    def children(merge):
        merge = np.asarray(merge)
        return np.where(merge < 0, -merge - 1, n + merge - 1)

    assert clusters(children(merge)) == clusters(children(r_merge))
    if len(untied) == n - 1:
        np.testing.assert_array_equal(merge, r_merge)


def crp_log_evidence_by_enumeration(n, alpha, cluster_log_marginal):
    """``log p(X)`` of a CRP(alpha) mixture by enumerating every partition of ``n`` items.

    ``cluster_log_marginal(indices)`` is ``log m`` of the items at ``indices`` as one
    cluster. The CRP normaliser ``log G(alpha) - log G(alpha + n)`` is taken as
    ``-sum_{j<n} log(alpha + j)`` (the rising factorial, term by term), which stays
    exact where the two log-gammas cancel (``alpha >> n``).
    """
    log_normaliser = -math.fsum(math.log(alpha + j) for j in range(n))
    terms = []
    for labels in set_partitions(n):
        blocks = [np.flatnonzero(labels == b) for b in range(labels.max() + 1)]
        terms.append(sum(math.log(alpha) + math.lgamma(len(b)) + cluster_log_marginal(b)
                         for b in blocks))
    return float(logsumexp(terms)) + log_normaliser


def gaussian_pair_log_priors(partitions, alpha):
    """Log prior of each partition: uniform over all (``alpha=None``) or Ewens(``alpha``)."""
    if alpha is None:
        return np.full(len(partitions), -math.log(len(partitions)))
    return np.array([log_eppf(np.bincount(p), alpha) for p in partitions])


def gaussian_pair_log_joint(partitions, w, mu_same, mu_diff, variance, alpha, n_scored=None):
    """``log p(pi) + log p(W | pi)`` of each partition under the Gaussian pair model,
    straight from the Gaussian densities of every pair (the pairs among the first
    ``n_scored`` items only, when given: the marginal density of those items' pairs)."""
    n = partitions.shape[1]
    m = n if n_scored is None else n_scored
    iu, ju = np.triu_indices(m, 1)
    values = w[iu, ju]
    same = partitions[:, iu] == partitions[:, ju]
    means = np.where(same, mu_same, mu_diff)
    log_lik = (-0.5 * np.log(2 * np.pi * variance)
               - (values[None, :] - means) ** 2 / (2 * variance)).sum(axis=1)
    return gaussian_pair_log_priors(partitions, alpha) + log_lik


def gaussian_pair_log_evidence(w, mu_same, mu_diff, variance, alpha=None):
    """``log p(W)`` by summing over every partition."""
    parts = set_partitions(w.shape[0])
    return float(logsumexp(gaussian_pair_log_joint(parts, w, mu_same, mu_diff, variance,
                                                   alpha)))


def gaussian_pair_log_predictive(w, mu_same, mu_diff, variance, alpha=None):
    """``log p(w_{N, :N} | W_N)`` of the last item of ``w`` (N + 1 items) given the others:
    ``log p(W_{N+1}) - log p(W_N)``, both over the partitions of the N + 1 items (the
    second is the marginal density of the first N items' pairs)."""
    parts = set_partitions(w.shape[0])
    joint = gaussian_pair_log_joint(parts, w, mu_same, mu_diff, variance, alpha)
    marginal = gaussian_pair_log_joint(parts, w, mu_same, mu_diff, variance, alpha,
                                       n_scored=w.shape[0] - 1)
    return float(logsumexp(joint) - logsumexp(marginal))


def gaussian_pair_beta_grid_log_joints(partitions, w, betas, alpha=None, n_scored=None):
    """``log p(pi) + log p(W | pi, beta_k)`` on a grid of ``beta`` (rows) x partitions
    (columns), each ``beta_k`` at its profile noise variance
    ``s2 = 2 (D2 / P) / (1 + sqrt(1 + b**2 D2 / P))`` (``b = 2 beta``, ``c = 0``), computed
    over the pairs of the first ``n_scored`` items (all when None), written out here from
    the maximiser of ``-P/2 log s2 - D2 / (2 s2) - P b**2 s2 / 8``."""
    m = w.shape[0] if n_scored is None else n_scored
    values = w[np.triu_indices(m, 1)]
    mean_sq = float(np.mean(values ** 2))
    rows = []
    for beta in betas:
        b = 2.0 * beta
        variance = 2.0 * mean_sq / (1.0 + math.sqrt(1.0 + b * b * mean_sq))
        half_gap = beta * variance
        rows.append(gaussian_pair_log_joint(partitions, w, half_gap, -half_gap, variance,
                                            alpha, n_scored=n_scored))
    return np.array(rows)


def insertions(tree, item):
    """Every tree made of ``tree`` with ``item`` inserted above one of its nodes (2n - 1)."""
    out = [(tree, item)]
    if isinstance(tree, tuple):
        left, right = tree
        out += [(t, right) for t in insertions(left, item)]
        out += [(left, t) for t in insertions(right, item)]
    return out


def translation_invariant_wishart_log_likelihood(D, labels, theta, *, dof, scale=None, r0=0.01,
                                                 s0=0.01):
    """Dense brute force of the translation-invariant (TIWD) log-likelihood of distances ``D``.

    ``Sigma = I + theta B`` (``scale`` fixed multiplies it), ``Psi~ = Psi - Psi 1 1^T Psi /
    (1^T Psi 1)`` with explicit ``n x n`` matrices, its pseudo-determinant from the
    eigenvalues, ``S = -D / 2`` (any ``S`` with distances ``D`` gives the same value).
    ``scale=None`` integrates ``scale ~ Inv-Gamma(r0 d / 2, s0 d / 2)`` out numerically
    (``scipy.integrate.quad`` over ``log scale``). Returns the log-likelihood up to the
    Wishart terms of ``D`` alone.
    """
    from scipy.integrate import quad

    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    labels = np.asarray(labels)
    B = (labels[:, None] == labels[None, :]).astype(np.float64)
    psi = np.linalg.inv(np.eye(n) + theta * B)
    one = np.ones(n)
    tilde = psi - np.outer(psi @ one, psi @ one) / (one @ psi @ one)
    values = np.linalg.eigvalsh(tilde)
    values = np.sort(values)[1:]              # the null direction 1
    log_pdet = float(np.sum(np.log(values)))
    trace = float(np.trace(tilde @ (-0.5 * D)))
    d = float(dof)
    if scale is not None:
        return (0.5 * d * (log_pdet - (n - 1) * np.log(scale)) - 0.5 * d * trace / scale)
    a0, b0 = 0.5 * r0 * d, 0.5 * s0 * d

    def log_integrand(u):  # u = log scale; Inv-Gamma density times the Jacobian
        return (a0 * np.log(b0) - gammaln(a0) - a0 * u - b0 * np.exp(-u)
                + 0.5 * d * (log_pdet - (n - 1) * u) - 0.5 * d * trace * np.exp(-u))

    grid = np.linspace(-30, 30, 6001)
    peak = max(log_integrand(u) for u in grid)
    centre = grid[np.argmax([log_integrand(u) for u in grid])]
    value, _ = quad(lambda u: np.exp(log_integrand(u) - peak), centre - 20, centre + 20,
                    points=[centre], limit=400, epsabs=0, epsrel=1e-12)
    return float(peak + np.log(value))


def wishart_complete_log_density(S, labels, theta, *, dof, scale=None, r0=0.01, s0=0.01,
                                 translation_invariant=False):
    """Dense brute force of the complete ``log p(S | B, theta, dof)``, every term included.

    ``d S ~ W_d(scale (I + theta B))`` (``scipy.stats.wishart`` on explicit matrices, the
    Jacobian ``d**(r (r + 1) / 2)`` of ``S = W / d`` added); ``translation_invariant``: the
    density of ``L S L^T`` for an explicit contrast ``L`` (orthonormal rows orthogonal to
    ``1``) under ``W_d(scale L (I + theta B) L^T)``. ``scale=None`` integrates ``scale ~
    Inv-Gamma(r0 d / 2, s0 d / 2)`` out numerically (``scipy.integrate.quad`` over ``log
    scale``).
    """
    from scipy.integrate import quad
    from scipy.stats import wishart

    S = np.asarray(S, dtype=np.float64)
    n = S.shape[0]
    labels = np.asarray(labels)
    sigma = np.eye(n) + theta * (labels[:, None] == labels[None, :])
    if translation_invariant:
        q, _ = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, :n - 1]]))
        contrast = q[:, 1:].T
        S, sigma = contrast @ S @ contrast.T, contrast @ sigma @ contrast.T
    r = S.shape[0]
    d = float(dof)

    def log_density(log_scale):
        return (wishart(df=d, scale=np.exp(log_scale) * sigma).logpdf(d * S)
                + 0.5 * r * (r + 1) * np.log(d))

    if scale is not None:
        return float(log_density(np.log(scale)))
    a0, b0 = 0.5 * r0 * d, 0.5 * s0 * d

    def log_integrand(u):  # u = log scale; Inv-Gamma density times the Jacobian
        return log_density(u) + a0 * np.log(b0) - gammaln(a0) - a0 * u - b0 * np.exp(-u)

    grid = np.linspace(-15, 15, 601)
    values = [log_integrand(u) for u in grid]
    centre, peak = grid[int(np.argmax(values))], max(values)
    value, _ = quad(lambda u: np.exp(log_integrand(u) - peak), centre - 8, centre + 8,
                    points=[centre], limit=400, epsabs=0, epsrel=1e-11)
    return float(peak + np.log(value))


def translation_invariant_posterior_summaries(D, theta, dof, alpha, *, scale, known=None):
    """:func:`flat_summaries` of the translation-invariant Wishart posterior (CRP prior,
    ``scale`` and ``theta`` fixed) by enumerating every partition with the dense
    :func:`translation_invariant_wishart_log_likelihood`; ``known`` as in
    :func:`wishart_posterior_summaries`."""
    n = D.shape[0]
    partitions = set_partitions(n)
    if known is not None:
        classes = np.unique(known[known >= 0])
        keep = [all(np.unique(p[known == c]).size == 1 for c in classes)
                and len({p[known == c][0] for c in classes}) == len(classes)
                for p in partitions]
        partitions = partitions[np.array(keep)]
    values = []
    for p in partitions:
        sizes = np.bincount(p)
        log_prior = (sizes.size * np.log(alpha) + gammaln(alpha) + np.sum(gammaln(sizes))
                     - gammaln(n + alpha))
        values.append(log_prior + translation_invariant_wishart_log_likelihood(
            D, p, theta, dof=dof, scale=scale))
    return flat_summaries(partitions, np.array(values))


def constrained_linkage_by_scan(n, edges, complete):
    """scikit-learn's connectivity-constrained average/complete ``children_``, by scanning
    every current edge at each merge (no heap).

    ``edges``: dict ``{(a, b): distance}`` with ``a < b``, a connected graph. A new
    cluster ``k`` (ids as scikit-learn's) is at the distance ``(n_i d(i, c) + n_j d(j, c))
    / (n_i + n_j)`` (average, ``i`` the newer of the two) or ``max`` (complete) from a
    neighbour ``c`` of both, and at the same distance from a neighbour of one side.
    Returns ``None`` when two current edges share the smallest distance at some merge
    (scikit-learn's heap layout decides those).
    """
    current = {frozenset(pair): float(d) for pair, d in edges.items()}
    sizes = dict.fromkeys(range(n), 1)
    children = []
    for k in range(n, 2 * n - 1):
        smallest = min(current.values())
        closest = [pair for pair, d in current.items() if d == smallest]
        if len(closest) > 1:
            return None
        j, i = sorted(closest[0])
        children.append((j, i))
        del current[closest[0]]
        side = {i: {}, j: {}}
        for pair in list(current):
            for end in (i, j):
                if end in pair:
                    (other,) = pair - {end}
                    side[end][other] = current.pop(pair)
        for c in set(side[i]) | set(side[j]):
            if c in side[i] and c in side[j]:
                d_i, d_j = side[i][c], side[j][c]
                d = max(d_i, d_j) if complete else ((sizes[i] * d_i + sizes[j] * d_j)
                                                    / float(sizes[i] + sizes[j]))
            else:
                d = side[i].get(c, side[j].get(c))
            current[frozenset((k, c))] = d
        sizes[k] = sizes.pop(i) + sizes.pop(j)
    return np.array(children, dtype=np.int64).reshape(-1, 2)
