"""The flat model abstraction: a clustering's log-potential is a sum over clusters.

``log phi(C) = log_potential_constant + sum_{B in C} e(B)``, where ``e`` is the
*cluster log-potential*. Engines only ever see the table of ``e`` over subsets
(:meth:`FlatModel.log_potential_table`) or single clusters
(:meth:`FlatModel.cluster_log_potential`); they never know which model made it.
"""

import numpy as np
from sklearn.base import BaseEstimator

from .._core.validation import check_label_vector



class FlatModel(BaseEstimator):
    """Base class of flat models.

    A flat model is a small scikit-learn style object: its hyperparameters are
    constructor arguments (so ``set_params`` and ``GridSearchCV`` reach them
    through nested names), and ``fit(data)`` binds it to ``n_items_`` items and
    their sufficient statistics. Subclasses implement
    :meth:`cluster_log_potential` and usually a fast :meth:`log_potential_table`.
    """

    def cluster_log_potential(self, indices):
        """Cluster log-potential ``e(B)`` of the cluster made of ``indices``."""
        raise NotImplementedError

    def log_potential_constant(self):
        """Additive constant of ``log phi`` (the same for every clustering)."""
        return 0.0

    def log_potential_table(self):
        """``e(B)`` for every bitmask ``B`` of the ``n_items`` items (entry 0 is 0)."""
        n = self.n_items_
        table = np.zeros(1 << n)
        for mask in range(1, 1 << n):
            table[mask] = self.cluster_log_potential(
                [i for i in range(n) if mask >> i & 1])
        return table

    def family_log_potentials(self, family):
        """``e(B)`` of every vertex of a :class:`~sklearn_trellis._core.family.ClusterFamily`.

        The generic version calls :meth:`cluster_log_potential` on each vertex's
        members (``O(sum of cluster sizes)`` Python calls); models with
        additive statistics override it with a pass over the construction
        splits.

        Returns
        -------
        ndarray of shape (family.n_vertices,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_trellis.models import CorrelationClusteringModel
        >>> from sklearn_trellis._core.family import ClusterFamily
        >>> w = np.array([[0., 1., -1.], [1., 0., -1.], [-1., -1., 0.]])
        >>> model = CorrelationClusteringModel(beta=1.0).fit(w)
        >>> family = ClusterFamily.from_trees([np.array([[0, 1], [2, 3]])], n_items=3)
        >>> model.family_log_potentials(family).tolist()  # {0}, {1}, {2}, {0,1}, all
        [0.0, 0.0, 0.0, 2.0, -2.0]
        """
        if family.n_items != self.n_items_:
            raise ValueError(f"The family is over {family.n_items} items, the model over "
                             f"{self.n_items_}.")
        return np.array([self.cluster_log_potential(family.members(v))
                         for v in range(family.n_vertices)], dtype=np.float64)

    def log_potential(self, labels):
        """``log phi(C)`` of the clustering given by a label vector."""
        labels = check_label_vector(labels, self.n_items_)
        total = self.log_potential_constant()
        for value in np.unique(labels):
            total += self.cluster_log_potential(np.flatnonzero(labels == value))
        return float(total)


__all__ = ["FlatModel"]
