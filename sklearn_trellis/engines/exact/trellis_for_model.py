"""The exact flat trellis that fits a partition model's prior.

Models with a partition prior (:class:`~sklearn_trellis.models.dp_mixture.MixturePartitionModel`,
:class:`~sklearn_trellis.models.WishartBlockModel`) write the log posterior as
cluster log-potentials plus ``log_count(K)``, a function of the number of
clusters. When ``log_count`` is linear in ``K`` (the CRP: ``K log alpha``) the
model folds it into the clusters (``model.folds_count``) and the plain
:class:`~.flat.ExactFlatTrellis` applies; otherwise the count-resolved
:class:`~.flat_counts.CountWeightedFlatTrellis` adds ``model.log_count_table()``.
"""

from .flat import ExactFlatTrellis
from .flat_counts import CountWeightedFlatTrellis


def trellis_for_model(model, log_potentials=None, *, max_items=12):
    """The fitted exact trellis of a partition model's posterior.

    Parameters
    ----------
    model : fitted flat model with ``folds_count`` and ``log_count_table()``
        E.g. ``MixturePartitionModel`` or ``WishartBlockModel``.
    log_potentials : ndarray of shape (2**n,), default=None
        Cluster log-potentials of all subsets; ``None`` means
        ``model.log_potential_table()`` (pass a modified table, e.g. one
        that forbids some clusters, or one per hyperparameter value).
    max_items : int, default=12
        Size limit of the trellis.

    Returns
    -------
    trellis : ExactFlatTrellis or CountWeightedFlatTrellis
        Fitted; ``log_partition_function + model.log_potential_constant()``
        is the log normaliser of the model's posterior.
    """
    table = model.log_potential_table() if log_potentials is None else log_potentials
    if model.folds_count:
        return ExactFlatTrellis(table, max_items=max_items).fit()
    return CountWeightedFlatTrellis(table, model.log_count_table(), max_items=max_items).fit()


__all__ = ["trellis_for_model"]
