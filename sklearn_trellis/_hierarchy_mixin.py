"""``HierarchyMixin``: the fitted tree of the hierarchical estimators and its flat cut.

``TrellisHierarchical``, ``BayesianHierarchicalClustering``,
``EntropyAgglomeration`` and ``DivisiveClustering`` build their trees in
different ways and store them in one: scikit-learn's ``children_`` and
``distances_`` (rows by non-decreasing height), scipy's ``linkage_matrix_``,
``n_leaves_`` and ``n_connected_components_``; ``labels_`` and
``n_clusters_`` are cut from that tree exactly as
:class:`sklearn.cluster.AgglomerativeClustering` cuts its own.
"""

import numpy as np

from ._core.trees import (check_children, check_merge_heights, children_to_linkage,
                          cut_children, threshold_n_clusters)


class HierarchyMixin:
    """Tree attributes and the scikit-learn cut shared by the hierarchical estimators.

    The estimator has an ``n_clusters`` parameter and, if it can cut at a
    height, a ``distance_threshold`` one.
    """

    def _check_cut_parameters(self):
        """Exactly one of ``n_clusters`` and ``distance_threshold`` is set (scikit-learn's rule)."""
        if (self.n_clusters is None) == (self.distance_threshold is None):
            raise ValueError("Exactly one of n_clusters and distance_threshold has to be set, "
                             f"and the other needs to be None; got n_clusters={self.n_clusters!r}"
                             f" and distance_threshold={self.distance_threshold!r}.")

    def _check_n_clusters(self, n_leaves, what="samples"):
        """Refuse, before fitting, an ``n_clusters`` above the number of leaves."""
        if self.n_clusters is not None and self.n_clusters > n_leaves:
            raise ValueError(f"Cannot extract more clusters than {what}: n_clusters="
                             f"{self.n_clusters} exceeds the number of {what} ({n_leaves}).")

    def _set_tree(self, children, heights, *, n_connected_components=1, labels=None):
        """Store a full binary tree and its merge heights (checked first), and cut it.

        Parameters
        ----------
        children : array-like of shape (n_leaves - 1, 2)
            scikit-learn's ``children_``: row ``k`` merges two nodes into node
            ``n_leaves + k``.
        heights : array-like of shape (n_leaves - 1,)
            Height of each merge, non-decreasing.
        n_connected_components : int, default=1
            Components of the connectivity graph before completion.
        labels : array-like of shape (n_leaves,), default=None
            A cut of the estimator's own (BHC's ``r_k < 0.5``), numbered by
            first appearance; ``None`` cuts at ``n_clusters`` or
            ``distance_threshold`` (:meth:`_cut_tree`).
        """
        n_leaves = len(children) + 1
        children = check_children(children, n_leaves, what="tree")
        self.distances_ = check_merge_heights(heights, n_leaves)
        self.children_ = children.astype(np.intp)
        self.linkage_matrix_ = children_to_linkage(children, self.distances_)
        self.n_leaves_ = n_leaves
        self.n_connected_components_ = int(n_connected_components)
        if labels is None:
            self._cut_tree()
        else:
            self.labels_ = np.asarray(labels, dtype=np.intp)
            self.n_clusters_ = int(self.labels_.max()) + 1

    def _cut_tree(self):
        """``labels_`` and ``n_clusters_``, as ``AgglomerativeClustering`` cuts its tree.

        With ``distance_threshold``, the merges lower than it are kept and every
        merge at least that high is undone; with ``n_clusters``, the
        ``n_clusters - 1`` highest merges are undone. Labels are numbered in
        order of first appearance.
        """
        threshold = getattr(self, "distance_threshold", None)
        if threshold is not None:
            self.n_clusters_ = threshold_n_clusters(self.distances_, threshold)
        else:
            self.n_clusters_ = int(self.n_clusters)
        self.labels_ = cut_children(self.children_, self.n_leaves_, self.n_clusters_)


__all__ = ["HierarchyMixin"]
