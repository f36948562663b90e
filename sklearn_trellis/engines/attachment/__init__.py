"""The attachment posterior: where a new item belongs in a fitted binary tree.

For a fitted tree ``H`` over ``N`` items and an energy (a
:class:`~sklearn_trellis.models.SplitModel`), a new item ``x`` can be
inserted above any of the ``2N - 1`` nodes ``v`` (a leaf, an internal node or
the root): the new node ``v + {x}`` gets the children ``v`` and ``{x}``, and
``x`` joins every ancestor of ``v``. Its log-potential changes by::

    delta(v) = beta * [psi(v, {x}) + sum_{a ancestor of v} (psi(c_a + {x}, s_a) - psi(c_a, s_a))]

(``c_a`` the child of ``a`` on the path to ``v``, ``s_a`` its sibling; above
the root, the old root's split no longer splits the whole set, which matters
for energies with a root term, e.g. Ginkgo's ``lam_root``), and the
posterior over positions given ``H`` is ``softmax(delta)``. The model is the
fitted one: data-derived constants (length scale, centring) are held fixed,
so ``delta`` equals the change of ``log_potential`` of the enlarged tree
under the model refitted on the enlarged data with those constants.

Energies with vectorised statistics (:meth:`SplitModel.insertion_inputs`)
run one numba kernel, specialised per energy like the other hierarchical
engines, in ``O(N)`` per new item after an ``O(N)`` statistics pass; others
(a callable energy) evaluate :meth:`SplitModel.split_log_potential` of the
model enlarged by :meth:`SplitModel.with_new_item`, split by split.

``DivisiveClustering`` does not use it: its tree is grown greedily top-down
(DIANA, bisection, or the best split of each cluster given its parent), not
as the mode of a distribution over trees, and its split criteria carry no
inverse temperature, so a softmax of criterion changes would depend on the
units of the distances; with ``criterion='dasgupta'`` the fitted tree can be
given to :class:`AttachmentTree` with a ``DasguptaEnergy`` at a chosen ``beta``.
"""

import hashlib
import weakref

import numpy as np

from ..._core.family import ClusterFamily
from ..._core.trees import check_children
from . import _kernels

#: Largest stats block (floats) of new items handled at once by the kernel path.
CHUNK_FLOATS = 1 << 20


class AttachmentTree:
    """A fitted binary tree prepared for inserting new items.

    Parameters
    ----------
    children : array-like of shape (N - 1, 2)
        The tree in scikit-learn's ``children_`` encoding (node ``N + k`` is
        made at row ``k``).
    n_items : int

    Attributes
    ----------
    family : ClusterFamily
        The tree's ``2N - 1`` nodes as vertices (parents after children).
    node_vertex : ndarray of shape (2N - 1,)
        The vertex of each node (scikit-learn numbering).
    left_of, right_of : ndarray of shape (2N - 1,)
        Children of each vertex, the one holding its lowest item first
        (``-1`` for leaves).
    members : list of ndarray
        Items of each node (scikit-learn numbering), built on first use by
        the split-by-split path.
    """

    def __init__(self, children, n_items):
        n = int(n_items)
        children = check_children(children, n)
        self.n_items = n
        self.children = children
        self.family = ClusterFamily.from_trees([children], n)
        self.node_vertex = np.asarray(self.family.seed_tree_vertices[0], dtype=np.int64)
        self.vertex_node = np.empty_like(self.node_vertex)
        self.vertex_node[self.node_vertex] = np.arange(self.node_vertex.size)
        n_nodes = 2 * n - 1
        lowest = np.empty(n_nodes, dtype=np.int64)
        lowest[:n] = np.arange(n)
        if n > 1:
            for k, (a, b) in enumerate(children):
                lowest[n + k] = min(lowest[a], lowest[b])
        self.left_of = np.full(n_nodes, -1, dtype=np.int64)
        self.right_of = np.full(n_nodes, -1, dtype=np.int64)
        for k, (a, b) in enumerate(children):
            if lowest[b] < lowest[a]:
                a, b = b, a
            v = self.node_vertex[n + k]
            self.left_of[v] = self.node_vertex[a]
            self.right_of[v] = self.node_vertex[b]
        self.root_vertex = int(self.family.root)
        self._members = None
        self._fitted = {}    # (id(model), beta) -> the fitted tree's statistics and splits

    @property
    def members(self):
        if self._members is None:
            n = self.n_items
            members = [np.array([i]) for i in range(n)]
            for a, b in self.children:
                members.append(np.concatenate([members[a], members[b]]))
            self._members = members
        return self._members

    def insertion_log_potentials(self, model, new_data, beta=1.0):
        """``delta[j, v]``: change of ``log phi`` when new item ``j`` is inserted above node ``v``.

        Parameters
        ----------
        model : SplitModel
            Fitted on the tree's ``N`` items.
        new_data : ndarray of shape (m, N) or (m, n_features)
            As :meth:`SplitModel.insertion_inputs` takes it (distances of the
            new items to the fitted ones, or their feature rows).
        beta : float, default=1.0

        Returns
        -------
        delta : ndarray of shape (m, 2N - 1)
            Columns in scikit-learn node numbering (leaves ``0..N-1``, merge
            ``k`` is node ``N + k``; the last is the root).
        """
        if model.n_items_ != self.n_items:
            raise ValueError(f"The model was fitted on {model.n_items_} items, the tree has "
                             f"{self.n_items}.")
        new_data = np.asarray(new_data)
        if new_data.ndim != 2:
            raise ValueError(f"new_data must be 2-d (one row per new item), got shape "
                             f"{new_data.shape}.")
        # the fitted statistics of one (model, beta) at a time; the weak reference
        # tells a new model from a dead one that had the same id
        key = (id(model), float(beta))
        owner = self._fitted.get("model")
        if key not in self._fitted or owner is None or owner() is not model:
            try:
                fitted = model.family_kernel_inputs(self.family, float(beta))
                model.insertion_inputs(self.family, fitted, new_data[:0])
            except NotImplementedError:
                fitted = None
            self._fitted = {key: None if fitted is None else (fitted, self._split_values(model, fitted)),
                            "model": weakref.ref(model)}
        if self._fitted[key] is None:
            return self._split_by_split(model, new_data, float(beta))
        return self._kernel(model, *self._fitted[key], new_data)

    def _split_values(self, model, fitted):
        """``beta psi`` of the fitted tree's splits per vertex (one ``O(N)`` pass), under
        the parameters of the model enlarged by a new item (:meth:`SplitModel.enlarged_params`):
        a new item's position changes some splits and keeps the others as they are there."""
        enlarged = model.enlarged_params(fitted.params)
        values = _kernels.specialise(fitted.split).fitted_split_values(
            fitted.params if enlarged is None else enlarged, fitted.stats, self.left_of,
            self.right_of, self.root_vertex)
        if not np.all(np.isfinite(values)):
            raise ValueError("The fitted tree has a forbidden split (-inf log-potential): "
                             "no insertion posterior.")
        return values

    def _kernel(self, model, fitted, values, new_data):
        kernels = _kernels.specialise(fitted.split)
        m = new_data.shape[0]
        n_vertices = self.family.n_vertices
        out = np.empty((m, n_vertices))
        chunk = max(1, CHUNK_FLOATS // (fitted.stats.shape[0] * n_vertices))
        for start in range(0, m, chunk):
            block = model.insertion_inputs(self.family, fitted, new_data[start:start + chunk])
            kernels.insertion_deltas(fitted.stats, values, block.params, block.joined,
                                     block.alone, self.left_of, self.right_of,
                                     self.root_vertex, self.vertex_node, out[start:start + chunk])
        return out

    def _split_by_split(self, model, new_data, beta):
        """Slow path: ``split_log_potential`` of the model enlarged by each new item."""
        n = self.n_items
        members = self.members
        root = 2 * n - 2

        def ordered(a, b):
            return (a, b) if a.min() < b.min() else (b, a)

        fitted = np.zeros(2 * n - 1)
        for k, (a, b) in enumerate(self.children):
            fitted[n + k] = model.split_log_potential(*ordered(members[a], members[b]))
        if not np.all(np.isfinite(fitted)):
            raise ValueError("The fitted tree has a forbidden split (-inf log-potential): "
                             "no insertion posterior.")
        out = np.empty((new_data.shape[0], 2 * n - 1))
        x = np.array([n])
        for j, row in enumerate(new_data):
            enlarged = model.with_new_item(row)
            path = np.zeros(2 * n - 1)
            for k in range(n - 2, -1, -1):     # parents before children
                node = n + k
                a, b = self.children[k]
                for child, sibling in ((a, b), (b, a)):
                    joined = np.concatenate([members[child], x])
                    path[child] = path[node] - fitted[node] + enlarged.split_log_potential(
                        *ordered(joined, members[sibling]))
            for v in range(2 * n - 1):
                out[j, v] = path[v] + enlarged.split_log_potential(members[v], x)
            if n > 1:
                a, b = self.children[-1]
                out[j, root] += (enlarged.split_log_potential(*ordered(members[a], members[b]))
                                 - fitted[root])
        return beta * out


#: Prepared trees, per fitted model (dropped with it) and tree.
_TREES = weakref.WeakKeyDictionary()


def attachment_tree(model, children, n_items):
    """The :class:`AttachmentTree` of ``children``, memoised per fitted ``model``.

    Building the tree's family and the fitted model's statistics over it costs
    ``O(N)`` Python steps and an ``O(N^2)`` pass for pairwise energies; an
    estimator's successive ``predict`` calls share them. The memo is keyed on
    the model object (weakly: it goes with the model) and the tree's bytes.
    """
    children = np.ascontiguousarray(children, dtype=np.int64)
    digest = hashlib.sha1(children.tobytes()).hexdigest()
    trees = _TREES.setdefault(model, {})
    tree = trees.get((digest, int(n_items)))
    if tree is None:
        trees.clear()   # one tree per model: the estimator's MAP tree
        tree = trees[(digest, int(n_items))] = AttachmentTree(children, n_items)
    return tree


def _raise_if_empty(empty):
    bad = np.flatnonzero(empty)
    if bad.size:
        raise ValueError(f"New item(s) {bad[:10].tolist()} cannot be inserted anywhere in the "
                         "tree: every position has a forbidden split (-inf).")


def log_normalize(log_weights):
    """Rows of log weights normalised to log probabilities (in place); all ``-inf`` rows raise."""
    log_weights = np.ascontiguousarray(log_weights, dtype=np.float64)
    _raise_if_empty(_kernels.log_normalize_rows(log_weights))
    return log_weights


def cluster_attachment_proba(children, labels, log_weights):
    """Posterior of the cluster of the cut a new item joins, from its position log weights.

    The positions' weights are normalised (``softmax`` of each row). A
    position inside a cluster's subtree (above any of its nodes, its root
    included) belongs to that cluster. A position above the cut (above a
    node that joins several clusters, or above the root) places the item
    outside every cluster; its mass is shared among the clusters below that
    node in proportion to the mass of their own positions (the item is no
    closer to any one of them; among them it goes where it fits best). The
    columns sum to one.

    Parameters
    ----------
    children : ndarray of shape (N - 1, 2)
    labels : ndarray of shape (N,)
        Labels ``0..K-1`` of a cut of the tree (every cluster a subtree).
    log_weights : ndarray of shape (m, 2N - 1)
        Position log weights (normalised or not) in scikit-learn node numbering.

    Returns
    -------
    ndarray of shape (m, K)
    """
    labels = np.asarray(labels, dtype=np.int64)
    n = labels.size
    n_clusters = int(labels.max()) + 1
    node_label = np.empty(2 * n - 1, dtype=np.int64)
    node_label[:n] = labels
    parent = np.full(2 * n - 1, -1, dtype=np.int64)
    for k, (a, b) in enumerate(children):
        node_label[n + k] = node_label[a] if node_label[a] == node_label[b] else -1
        parent[a] = parent[b] = n + k
    inside = node_label >= 0
    above = np.flatnonzero(~inside)            # the nodes above the cut (increasing id)
    above_index = np.full(2 * n - 1, -1, dtype=np.int64)
    above_index[above] = np.arange(above.size)
    masses, above_mass, empty = _kernels.position_masses(
        np.ascontiguousarray(log_weights, dtype=np.float64), node_label, above_index,
        n_clusters, above.size)
    _raise_if_empty(empty)
    if above.size == 0:
        return masses
    roots = np.flatnonzero(inside & ((parent < 0) | ~inside[np.maximum(parent, 0)]))
    # mass of the cluster positions below each node above the cut, bottom-up
    below = {}
    for node in above:
        a, b = children[node - n]
        below[node] = sum(masses[:, node_label[c]] if inside[c] else below[c] for c in (a, b))
    share = {}                                 # sum over above-cut ancestors of p_u / below_u
    for node in above[::-1]:                   # top-down
        own = np.divide(above_mass[:, above_index[node]], below[node],
                        out=np.zeros(masses.shape[0]), where=below[node] > 0)
        share[node] = own + (share[parent[node]] if parent[node] >= 0 else 0.0)
    out = masses.copy()
    for r in roots:
        out[:, node_label[r]] *= 1.0 + share[parent[r]]
    # rows whose below-cut mass underflowed to 0 under some node: that mass is spread evenly
    lost = 1.0 - out.sum(axis=1)
    if np.any(lost > 1e-12):
        out += np.clip(lost, 0, None)[:, None] / n_clusters
    return out


from .evidence import new_item_evidence  # noqa: E402 (it builds on the engines above)

__all__ = ["AttachmentTree", "attachment_tree", "log_normalize", "cluster_attachment_proba",
           "new_item_evidence"]
