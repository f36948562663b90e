"""Column types of a mixed table: inference, validation and encoding for CrossCat.

A table (numpy array or pandas DataFrame) becomes a float64 matrix with NaN
for missing cells and one cell model per column (:mod:`.cells`):

- ``'normal'`` (Normal-Gamma): any finite real values;
- ``'bernoulli'`` (Beta-Bernoulli): values in {0, 1} (or booleans);
- ``'poisson'`` (Poisson-Gamma): non-negative integers;
- ``'categorical'`` (Dirichlet-categorical): any labels; they are coded
  ``0..k-1`` in sorted order (a pandas ``category`` column keeps its
  categories and their order). A column given a
  :class:`~.cells.CategoricalCells` *instance* holds the codes themselves,
  as in ``InfiniteBiclustering``: integers in ``[0, n_categories)`` (``n_categories``
  the instance's, or one more than the largest code), used as given, so the
  instance's ``mean`` refers to them.

``'auto'`` infers per column: pandas ``category`` / boolean dtype ->
categorical / bernoulli; numbers whose observed values are all in {0, 1} ->
bernoulli; non-negative integers below :data:`MAX_AUTO_CATEGORIES` ->
categorical; other numbers -> normal. Strings must be declared: a string
column is categorical only by a pandas ``category`` dtype or an explicit
``'categorical'`` type.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from . import CELL_MODELS
from .cells import MAX_CATEGORIES, CategoricalCells

#: 'auto' codes non-negative integer columns with values below this as categorical.
MAX_AUTO_CATEGORIES = 10


def _column_name(names, j):
    return repr(names[j]) if names is not None else str(j)


def _raw_columns(X):
    """List of 1-d columns, column names (or None) and whether each column is pandas 'category'."""
    if hasattr(X, "iloc") and hasattr(X, "columns"):
        names = [str(c) for c in X.columns]
        columns, is_category = [], []
        for c in X.columns:
            series = X[c]
            category = str(series.dtype) == "category"
            if category:
                columns.append(np.asarray(series.astype(object)))
            elif str(series.dtype) == "boolean" or series.dtype == bool:
                columns.append(np.asarray(series.astype("float64")))
            else:
                columns.append(np.asarray(series.to_numpy()))
            is_category.append(category)
        return columns, names, is_category, [
            list(X[c].cat.categories) if str(X[c].dtype) == "category" else None
            for c in X.columns]
    if sp.issparse(X):
        raise TypeError("Sparse input is not supported by CrossCat (missing cells are NaN, not "
                        "implicit zeros); pass a dense array or a DataFrame.")
    if hasattr(X, "__array__") or isinstance(X, (list, tuple)):
        array = np.asarray(X)
    else:
        raise TypeError(f"Expected a 2-d array-like or a pandas DataFrame, got {type(X).__name__}.")
    if array.ndim != 2:
        raise ValueError(f"Expected a 2-d table, got an array of shape {array.shape}. "
                         "Reshape a single column with X.reshape(-1, 1).")
    if np.iscomplexobj(array):
        raise ValueError("Complex data not supported.")
    return ([array[:, j] for j in range(array.shape[1])], None,
            [False] * array.shape[1], [None] * array.shape[1])


def _missing(values):
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind in "iub":
        return np.zeros(values.shape, bool)
    return np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in values], bool)


def _as_numbers(values, name):
    """Float copy of a column (NaN for missing); TypeError for strings."""
    if values.dtype.kind in "fiub":
        out = values.astype(np.float64)
    else:
        out = np.empty(values.shape, np.float64)
        for i, v in enumerate(values):
            if v is None:
                out[i] = np.nan
            elif isinstance(v, (numbers.Real, np.bool_)):
                out[i] = float(v)
            elif not isinstance(v, str):
                raise TypeError(f"Column {name} holds {v!r} of type {type(v).__name__}: the "
                                "argument must be a string (categorical column) or a number.")
            else:
                raise TypeError(
                    f"Column {name} holds non-numeric values (e.g. {v!r}); declare it "
                    "categorical (likelihood=[..., 'categorical', ...] or a pandas "
                    "'category' dtype).")
    if np.isinf(out).any():
        raise ValueError(f"Column {name} holds infinite values; CrossCat accepts finite "
                         "numbers and NaN (missing) only.")
    return out


def infer_cell_type(values):
    """The cell type ``'auto'`` gives numeric values (any shape, NaN missing).

    Values all in {0, 1} -> ``'bernoulli'``; non-negative integers below
    :data:`MAX_AUTO_CATEGORIES` -> ``'categorical'``; other numbers -> ``'normal'``.
    The one inference of CrossCat's columns and InfiniteBiclustering's matrix.
    """
    return _infer(np.asarray(values, dtype=np.float64).ravel(), False)


def _infer(numbers_, is_category):
    if is_category:
        return "categorical"
    observed = numbers_[~np.isnan(numbers_)]
    if np.all((observed == 0) | (observed == 1)):
        return "bernoulli"
    if (np.all(observed == np.round(observed)) and observed.min() >= 0
            and observed.max() < MAX_AUTO_CATEGORIES):
        return "categorical"
    return "normal"


def _model_name(model):
    if isinstance(model, str):
        return model
    for name, cls in CELL_MODELS.items():
        if isinstance(model, cls):
            return name
    raise TypeError(f"likelihood entries are names in {sorted(CELL_MODELS)} or cell "
                    f"model instances, got {model!r}.")


class TableEncoder:
    """Encode tables with the column types and categories learned by :meth:`fit`."""

    def __init__(self, column_types="auto"):
        self.column_types = column_types

    def fit(self, X):
        columns, names, is_category, declared = _raw_columns(X)
        n = columns[0].shape[0] if columns else np.asarray(X).shape[0]
        if len(columns) == 0:
            raise ValueError(f"0 feature(s) (shape=({n}, 0)) while a minimum of 1 is required "
                             "by CrossCat.")
        if n == 0:
            raise ValueError(f"0 sample(s) (shape=(0, {len(columns)})) while a minimum of 1 is "
                             "required by CrossCat.")
        d = len(columns)
        if isinstance(self.column_types, str):
            if self.column_types != "auto":
                raise ValueError(f"likelihood must be 'auto' or a list of {d} types, "
                                 f"got {self.column_types!r}.")
            requested = [None] * d
        else:
            requested = list(self.column_types)
            if len(requested) != d:
                raise ValueError(f"likelihood has {len(requested)} entries for {d} columns.")
        self.names_ = names
        self.types_, self.categories_, self.models_, self.codes_ = [], [], [], []
        self.inferred_ = []  # per column: type inferred from the values (not declared)
        for j in range(d):
            name = _column_name(names, j)
            values = columns[j]
            missing = _missing(values)
            if missing.all():
                raise ValueError(f"Column {name} has no observed value (all NaN); drop it.")
            kind = None if requested[j] is None else _model_name(requested[j])
            inferred = kind is None and not is_category[j]
            if kind is not None and kind not in CELL_MODELS:
                raise ValueError(f"Unknown column type {kind!r} for column {name}; "
                                 f"expected one of {sorted(CELL_MODELS)}.")
            categories = None
            codes = isinstance(requested[j], CategoricalCells)
            if codes:
                if is_category[j]:
                    raise ValueError(f"Column {name} has a pandas 'category' dtype: give it "
                                     "the type 'categorical' (its categories are coded in "
                                     "their order), not a CategoricalCells instance (codes).")
                categories = _check_codes(_as_numbers(values, name), requested[j], name)
            elif is_category[j] or kind == "categorical":
                if kind not in (None, "categorical"):
                    raise ValueError(f"Column {name} has a pandas 'category' dtype but was "
                                     f"declared {kind!r}.")
                kind = "categorical"
                if declared[j] is not None:
                    categories = list(declared[j])
                else:
                    observed = values[~missing]
                    if observed.dtype.kind not in "fiub":
                        _check_no_infinite(observed, name)
                    categories = sorted(set(observed.tolist()), key=_sort_key)
            else:
                numbers_ = _as_numbers(values, name)
                if kind is None:
                    kind = _infer(numbers_, False)
                    if kind == "categorical":
                        categories = sorted(set(numbers_[~np.isnan(numbers_)].tolist()))
                _check_values(numbers_, kind, name)
            self.types_.append(kind)
            self.inferred_.append(inferred)
            self.categories_.append(categories)
            self.codes_.append(codes)
            model = requested[j] if (requested[j] is not None
                                     and not isinstance(requested[j], str)) else None
            self.models_.append(model)
        self.n_features_in_ = d
        return self

    def transform(self, X):
        """Float64 matrix (NaN = missing), categorical cells as codes ``0..k-1``."""
        columns, names, _, _ = _raw_columns(X)
        if len(columns) != len(self.types_):
            raise ValueError(f"X has {len(columns)} features, but CrossCat is expecting "
                             f"{len(self.types_)} features as input.")
        n = columns[0].shape[0] if columns else 0
        out = np.empty((n, len(columns)))
        for j, values in enumerate(columns):
            out[:, j] = self.transform_column(j, values)
        return out

    def transform_column(self, j, values):
        """Codes (categorical) or float values of column ``j`` (1-d array-like), NaN = missing."""
        values = np.asarray(values)
        name = _column_name(self.names_, j)
        missing = _missing(values)
        if self.types_[j] != "categorical":
            numbers_ = _as_numbers(values, name)
            _check_values(numbers_, self.types_[j], name, self.inferred_[j])
            return numbers_
        index = {_key(c): k for k, c in enumerate(self.categories_[j])}
        column = np.full(values.shape[0], np.nan)
        for i in np.flatnonzero(~missing):
            key = _key(values[i])
            if key not in index:
                what = (f"the value {values[i]!r}, not one of the categories seen in fit "
                        f"({self.categories_[j]})")
                if self.inferred_[j]:
                    _refuse_values(name, "categorical", what, True)
                raise ValueError(f"Column {name}: value {values[i]!r} is not one of "
                                 f"the categories seen in fit ({self.categories_[j]}).")
            column[i] = index[key]
        return column

    def inverse_column(self, j, codes):
        """Category labels of codes of column ``j`` (object array); other columns unchanged."""
        if self.types_[j] != "categorical":
            return codes
        if self.codes_[j]:
            return np.asarray(codes, dtype=np.float64)
        categories = np.array(self.categories_[j], dtype=object)
        return categories[np.asarray(codes, dtype=int)]


def _key(value):
    """Dictionary key of a category (1 and 1.0 are the same category)."""
    if isinstance(value, (numbers.Real, np.bool_)) and not isinstance(value, bool):
        value = float(value)
        return int(value) if value == int(value) else value
    return value


def _sort_key(value):
    return (0, float(value), "") if isinstance(value, numbers.Real) else (1, 0.0, str(value))


def _check_no_infinite(observed, name):
    for v in observed:
        if isinstance(v, float) and np.isinf(v):
            raise ValueError(f"Column {name} holds infinite values; CrossCat accepts finite "
                             "numbers and NaN (missing) only.")


def _check_codes(numbers_, cell, name):
    """The categories ``0..k-1`` of a column of codes given a CategoricalCells instance."""
    observed = numbers_[~np.isnan(numbers_)]
    k = cell.n_categories
    if k is None:
        k = int(min(observed.max(), MAX_CATEGORIES)) + 1 if observed.size else 1
    if not (isinstance(k, numbers.Integral) and 1 <= k <= MAX_CATEGORIES):
        raise ValueError(f"Column {name}: n_categories must be an integer in [1, "
                         f"{MAX_CATEGORIES}], got {cell.n_categories!r}.")
    bad = observed[(observed < 0) | (observed >= k) | (observed != np.round(observed))]
    if bad.size:
        raise ValueError(f"Column {name}: a CategoricalCells instance takes integer codes in "
                         f"[0, {k}) (its n_categories, or one more than the largest code), "
                         f"got {bad[0]!r}. Declare the column 'categorical' instead to have "
                         "any labels coded in sorted order.")
    return list(range(k))


def _refuse_values(name, kind, what, inferred):
    """Refuse values of a column outside its type; say how that type was chosen."""
    if inferred:
        raise ValueError(f"Column {name} holds {what}, but its type {kind!r} was inferred "
                         "from the values seen in fit; declare the column's type (e.g. "
                         "likelihood=[..., 'normal', ...]) if it may hold other values.")
    raise ValueError(f"Column {name} is declared {kind!r} but holds {what}.")


def _check_values(numbers_, kind, name, inferred=False):
    observed = numbers_[~np.isnan(numbers_)]
    if kind == "bernoulli" and not np.all((observed == 0) | (observed == 1)):
        _refuse_values(name, kind, "values other than 0 and 1", inferred)
    if kind == "poisson" and not (np.all(observed >= 0)
                                  and np.all(observed == np.round(observed))):
        _refuse_values(name, kind, "values that are not non-negative integers", inferred)


__all__ = ["TableEncoder", "MAX_AUTO_CATEGORIES", "infer_cell_type"]
