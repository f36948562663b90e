"""Small real datasets and generators used by the demo, examples and tests.

Everything here is built from data that scikit-learn ships, so nothing is
downloaded.
"""

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch, check_random_state


def load_tumour_subset(n_per_class=6, random_state=0):
    """A stratified subset of the Wisconsin breast cancer data, standardised.

    A stand-in for the 11 TCGA patients of Greenberg et al. (2018): a handful
    of tumours described by many features, small enough for the exact trellis.
    Features are standardised on the whole data set and divided by
    ``sqrt(n_features)``, so Euclidean distances are of order one and
    ``exp(-distance)`` similarities are informative.

    Parameters
    ----------
    n_per_class : int, default=6
        Tumours drawn from each class (malignant, benign).
    random_state : int, RandomState instance or None, default=0

    Returns
    -------
    data : Bunch
        ``data`` (2 * n_per_class, 30), ``target`` (0 malignant, 1 benign),
        ``target_names``, ``feature_names``, ``ids`` (row numbers in the full
        data set, used as tumour identifiers).

    Examples
    --------
    >>> from sklearn_trellis.datasets import load_tumour_subset
    >>> data = load_tumour_subset()
    >>> data.data.shape
    (12, 30)
    """
    full = load_breast_cancer()
    rng = check_random_state(random_state)
    X = StandardScaler().fit_transform(full.data) / np.sqrt(full.data.shape[1])
    rows = np.concatenate([
        np.sort(rng.choice(np.flatnonzero(full.target == label), n_per_class, replace=False))
        for label in (0, 1)])
    return Bunch(data=X[rows], target=full.target[rows], target_names=full.target_names,
                 feature_names=full.feature_names, ids=rows)
