"""Small real datasets and generators used by the demo, examples and tests.

Everything here is built from data that scikit-learn ships, so nothing is
downloaded.
"""

import numbers

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch

from .._core.validation import check_random_state, check_scalar_param


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
    check_scalar_param(n_per_class, "n_per_class", kind=numbers.Integral, low=0,
                       high=int(np.bincount(full.target).min()))
    rng = check_random_state(random_state)
    X = StandardScaler().fit_transform(full.data) / np.sqrt(full.data.shape[1])
    rows = np.concatenate([
        np.sort(rng.choice(np.flatnonzero(full.target == label), n_per_class, replace=False))
        for label in (0, 1)])
    return Bunch(data=X[rows], target=full.target[rows], target_names=full.target_names,
                 feature_names=full.feature_names, ids=rows)


def make_wishart_blocks(n_samples=200, n_blocks=3, dof=300, scale=2.0, theta=0.05,
                        proportions="dirichlet", offset=40.0, dtype=np.float64,
                        return_features=False, labels=None, random_state=None):
    """Squared distances of the "normal clusters" benchmark of Adametz & Roth (2011, §4).

    Rows of ``X = offset + sqrt(scale) (E + sqrt(theta) U[z])`` with ``E`` and
    ``U`` standard normal, i.e. ``X ~ N(offset, Sigma_B (x) I_d)`` with block
    covariance ``Sigma_B = scale (I + theta B)``; the distances are those of
    ``S = X X^T / d``: ``D_ij = ||x_i - x_j||^2 / d``. Mean within-block
    distance ``2 scale``, between blocks ``2 scale (1 + theta)``.

    The blocks are drawn with ``Dirichlet(1, ..., 1)`` proportions, which is
    :class:`~sklearn_trellis.FastTIWD`'s prior with ``n_blocks=k, alpha=k``,
    or uniformly; ``labels`` gives them instead (for instance a CRP(1)
    partition, :class:`~sklearn_trellis.FastTIWD`'s default prior, to draw
    data from the model the defaults assume).

    Parameters
    ----------
    n_samples : int, default=200
    n_blocks : int, default=3
        Ignored when ``labels`` is given.
    dof : int, default=300
        Dimension ``d`` (the Wishart degrees of freedom).
    scale : float, default=2.0
        The within-block variance (the Wishart scale of ``Sigma_B``).
    theta : float, default=0.05
        The paper's ``15 / d``.
    proportions : {'dirichlet', 'uniform'}, default='dirichlet'
        Block labels drawn with ``Dirichlet(1, ..., 1)`` proportions (unequal
        blocks) or uniformly. Ignored when ``labels`` is given.
    offset : float, default=40.0
        Common mean, which the distances do not see.
    dtype : {np.float64, np.float32}, default=np.float64
        Precision of the returned distances.
    return_features : bool, default=False
        Also return ``features``: the rows ``sqrt(scale) (E + sqrt(theta) U[z]) / sqrt(d)``
        before the offset, whose inner products ``S = features features^T`` are exactly
        ``W_d(Sigma_B) / d``, the Wishart block model of
        :class:`~sklearn_trellis.FastTIWD` with no translation to undo (fit them with
        ``metric='sqeuclidean', normalization='none'``). A copy of ``n x d`` floats.
    labels : array-like of shape (n_samples,) of int, default=None
        The block of each object (any integers: equal values share a block),
        instead of drawing them; ``target`` is then these blocks numbered
        ``0..K-1``. The rest of the draw uses ``random_state`` as without it.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    data : Bunch
        ``distances`` (n, n), ``target`` (n,) true blocks, ``theta``, ``scale``, ``dof``;
        ``features`` (n, d) if ``return_features``.

    Examples
    --------
    >>> from sklearn_trellis.datasets import make_wishart_blocks
    >>> data = make_wishart_blocks(n_samples=50, random_state=0)
    >>> data.distances.shape, data.target.shape
    ((50, 50), (50,))
    """
    check_scalar_param(n_samples, "n_samples", kind=numbers.Integral, low=0)
    check_scalar_param(n_blocks, "n_blocks", kind=numbers.Integral, low=1)
    check_scalar_param(dof, "dof", kind=numbers.Integral, low=1)
    check_scalar_param(scale, "scale", low=0, include_low=False)
    check_scalar_param(theta, "theta", low=0)
    check_scalar_param(offset, "offset")
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be np.float32 or np.float64, got {dtype!r}.")
    rng = check_random_state(random_state)
    if proportions not in ("dirichlet", "uniform"):
        raise ValueError(f"proportions must be 'dirichlet' or 'uniform', got {proportions!r}.")
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (n_samples,) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"labels must hold {n_samples} integers (one block per object), "
                             f"got an array of shape {labels.shape} and dtype {labels.dtype}.")
        target = np.unique(labels, return_inverse=True)[1].ravel()
        n_blocks = int(target.max()) + 1 if n_samples else 0
    else:
        weights = (rng.dirichlet(np.ones(n_blocks)) if proportions == "dirichlet"
                   else np.full(n_blocks, 1.0 / n_blocks))
        target = rng.choice(n_blocks, size=n_samples, p=weights)
    centres = rng.standard_normal((n_blocks, dof))
    X = offset + np.sqrt(scale) * (rng.standard_normal((n_samples, dof))
                                   + np.sqrt(theta) * centres[target])
    features = (X - offset) / np.sqrt(dof) if return_features else None
    X -= X.mean(axis=0)  # distances are translation invariant; centring helps rounding
    sq = np.einsum("ij,ij->i", X, X)
    dist = X @ X.T  # one n x n buffer, updated in place
    dist *= -2.0
    dist += sq[:, None]
    dist += sq[None, :]
    dist /= dof
    np.fill_diagonal(dist, 0.0)
    np.maximum(dist, 0.0, out=dist)
    data = Bunch(distances=dist.astype(dtype, copy=False), target=target, theta=theta,
                 scale=scale, dof=dof)
    if return_features:
        data.features = features.astype(dtype, copy=False)
    return data
