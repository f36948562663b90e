"""Input checks shared by the estimators: clear errors before any heavy work."""

import numbers

import numpy as np
from sklearn.utils import check_random_state as _sklearn_check_random_state
from sklearn.utils.validation import validate_data


def check_scalar_param(value, name, *, kind=numbers.Real, low=None, high=None,
                       include_low=True, allow_none=False):
    """Raise ``TypeError``/``ValueError`` naming ``name`` if ``value`` is invalid."""
    if value is None and allow_none:
        return value
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an integer' if kind is numbers.Integral else 'a number'}, "
                        f"got {value!r} of type {type(value).__name__}.")
    if isinstance(value, numbers.Real) and not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if low is not None and (value < low or (value == low and not include_low)):
        bound = ">=" if include_low else ">"
        raise ValueError(f"{name} must be {bound} {low}, got {value!r}.")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}.")
    return value


def check_random_state(seed):
    """scikit-learn's ``check_random_state``, with a message that names the fix for a Generator.

    As scikit-learn, ``random_state`` is None, an int or a
    ``numpy.random.RandomState``; a ``numpy.random.Generator`` is refused
    (scikit-learn's own message only says it cannot seed a RandomState).

    >>> check_random_state(np.random.default_rng(0))
    Traceback (most recent call last):
    ...
    ValueError: random_state must be None, an int or a numpy.random.RandomState ...: pass an int, ...
    """
    if isinstance(seed, np.random.Generator):
        raise ValueError("random_state must be None, an int or a numpy.random.RandomState "
                         "(scikit-learn's convention), got a numpy.random.Generator: pass an "
                         "int, e.g. random_state=int(rng.integers(2**31)), or "
                         "np.random.RandomState(rng.bit_generator) to share its stream.")
    return _sklearn_check_random_state(seed)


def check_option(value, name, options):
    """Raise ``ValueError`` unless ``value`` is one of ``options``."""
    if not (isinstance(value, str) and value in options):
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}.")
    return value


def check_indices(indices, n_items, name="indices"):
    """Distinct integer item indices in ``[0, n_items)``, as an int64 array (order kept).

    The one validator of every method that takes item indices: floats (even
    whole ones such as ``1.0``), booleans, duplicates, out-of-range and empty
    selections raise ``TypeError`` / ``ValueError`` naming the problem.
    """
    values = np.asarray(indices)
    if values.size == 0:
        raise ValueError(f"{name} must name at least one item.")
    if values.dtype == bool or not (values.dtype.kind in "iu" or values.dtype == object):
        raise TypeError(f"{name} must be integers, got dtype {values.dtype}: "
                        f"{values.ravel().tolist()}.")
    if values.dtype == object and not all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
            for v in values.ravel()):
        raise TypeError(f"{name} must be integers, got {values.ravel().tolist()}.")
    idx = values.astype(np.int64).ravel()
    if idx.min() < 0 or idx.max() >= n_items:
        raise ValueError(f"{name} must lie in [0, {n_items - 1}], got {idx.tolist()}.")
    if np.unique(idx).size != idx.size:
        raise ValueError(f"{name} must be distinct, got {idx.tolist()}.")
    return idx



def check_label_vector(labels, n_items, name="labels"):
    """A partition of ``n_items`` items given by one label per item, checked; as an array.

    Any labels name the clusters (integers with gaps or negative, strings, whole
    or fractional floats: equal labels, one cluster), but NaN and infinity are
    refused: NaN equals no label, so its items would silently belong to no
    cluster. The labels are returned unchanged (not renumbered).

    >>> check_label_vector([3, 3, -1], 3).tolist()
    [3, 3, -1]
    >>> check_label_vector([0.0, float("nan")], 2)
    Traceback (most recent call last):
    ...
    ValueError: labels hold NaN or infinite values (items 1); every item needs a cluster label.
    """
    labels = np.asarray(labels)
    if labels.shape != (n_items,):
        raise ValueError(f"{name} must have shape ({n_items},), got {labels.shape}.")
    if labels.dtype.kind in "fc":
        missing = ~np.isfinite(labels)
    elif labels.dtype == object:
        missing = np.array([isinstance(v, numbers.Number) and not isinstance(v, numbers.Integral)
                            and not np.isfinite(v) for v in labels], dtype=bool)
    else:
        return labels
    if missing.any():
        items = np.flatnonzero(missing)
        shown = ", ".join(map(str, items[:5])) + (", ..." if items.size > 5 else "")
        raise ValueError(f"{name} hold NaN or infinite values (items {shown}); every item "
                         "needs a cluster label.")
    return labels


#: Read-only arrays of at most this many bytes are copied before they reach the
#: numba kernels (:func:`writeable_if_small`): numba types a read-only array apart
#: from a writeable one (``readonly array(...)``) and compiles every kernel a second
#: time for it, which costs seconds, while copying 64 MiB costs milliseconds.
READONLY_COPY_MAX_BYTES = 64 * 2**20


def writeable_if_small(array):
    """A writeable copy of a small read-only ``array``; any other input unchanged.

    Read-only arrays (``np.load(mmap_mode='r')``, scikit-learn's read-only memmap
    checks, ``writeable=False`` views from pandas or Arrow) of at most
    :data:`READONLY_COPY_MAX_BYTES` are copied (memory layout kept), so that the
    kernels run the version compiled for writeable arrays instead of compiling a
    read-only one. Larger read-only arrays are returned as they are (a user's big
    memory map is not duplicated in memory; the kernels compile their read-only
    version once, cached on disk). Writeable arrays and non-arrays are returned
    unchanged: the estimators never write into their input.

    >>> x = np.zeros(3)
    >>> x.setflags(write=False)
    >>> writeable_if_small(x).flags.writeable
    True
    >>> y = np.zeros(3)
    >>> writeable_if_small(y) is y
    True
    """
    if (isinstance(array, np.ndarray) and not array.flags.writeable
            and array.nbytes <= READONLY_COPY_MAX_BYTES):
        return np.array(array, order="K")   # a base ndarray, also of a np.memmap
    return array


def validate_kernel_data(estimator, X, **kwargs):
    """scikit-learn's ``validate_data(estimator, X, **kwargs)``, then :func:`writeable_if_small`.

    The estimators validate every array they hand to numba kernels (features,
    precomputed distances or affinities, label samples) with it. Arrays come
    out C-ordered (``order='C'`` unless given): reductions over a Fortran-ordered
    or strided copy of the same values (a pandas DataFrame's) would round
    differently, so the fitted values would depend on the input's memory layout.
    """
    kwargs.setdefault("order", "C")
    return writeable_if_small(validate_data(estimator, X, **kwargs))


def kernel_data_order(precomputed):
    """``order`` for :func:`validate_kernel_data`: ``'C'`` for a feature matrix, ``None`` (as
    given) for a precomputed ``(n, n)`` matrix, which the estimator's memory check must see
    before any copy of it is made (its kernels copy it elementwise afterwards)."""
    return None if precomputed else "C"


def _map_state_arrays(value, function, seen):
    """``value`` with ``function`` applied to every ndarray in it.

    Walks dicts and lists (changed in place), tuples (rebuilt) and the
    ``__dict__`` of the package's own objects; ``seen`` breaks cycles.
    """
    if isinstance(value, np.ndarray):
        return function(value)
    if id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _map_state_arrays(item, function, seen)
    elif isinstance(value, list):
        value[:] = [_map_state_arrays(item, function, seen) for item in value]
    elif type(value) is tuple:
        return tuple(_map_state_arrays(item, function, seen) for item in value)
    elif (type(value).__module__.startswith("sklearn_trellis.")
          and isinstance(getattr(value, "__dict__", None), dict)):
        _map_state_arrays(vars(value), function, seen)
    return value


class WriteableStateMixin:
    """Unpickling makes a small read-only fitted state writeable (see :func:`writeable_if_small`).

    ``joblib.load(..., mmap_mode='r')`` (and scikit-learn's
    ``check_estimators_pickle(readonly_memmap=True)``) gives the fitted arrays
    as read-only memory maps, for which the kernels of ``predict``,
    ``score_samples``, ... would compile a second version. When the read-only
    arrays of the state total at most :data:`READONLY_COPY_MAX_BYTES` they are
    copied (an array held twice stays shared); a larger state is kept mapped.
    Put the mixin before ``BaseEstimator`` in the bases.
    """

    def __setstate__(self, state):
        super().__setstate__(state)
        read_only = {}

        def collect(array):
            if not array.flags.writeable:
                read_only[id(array)] = array
            return array

        _map_state_arrays(self.__dict__, collect, set())
        if read_only and sum(a.nbytes for a in read_only.values()) <= READONLY_COPY_MAX_BYTES:
            copies = {}

            def copy(array):
                if id(array) in read_only and id(array) not in copies:
                    copies[id(array)] = np.array(array, order="K")
                return copies.get(id(array), array)

            _map_state_arrays(self.__dict__, copy, set())


#: Largest ``max |log phi|`` the engines accept: their sums of log-potentials
#: (over at most a few thousand terms) then stay finite in float64.
MAX_LOG_POTENTIAL = 1e300


def check_log_potential_scale(weights, scale, what="the scaled potentials",
                              remedy="rescale the affinities or lower beta"):
    """Refuse log-potentials ``scale * sum(subset of weights)`` that may overflow float64.

    ``scale * sum |weights|`` bounds every such sum; it is computed without
    overflow (in log space) and must stay below :data:`MAX_LOG_POTENTIAL`.
    Returns the bound (``inf`` never: it raises first). ``remedy`` ends the
    error message.
    """
    weights = np.abs(np.asarray(weights, dtype=np.float64))
    top = float(weights.max()) if weights.size else 0.0
    if top == 0.0 or scale == 0.0:
        return 0.0
    if not np.isfinite(top):
        raise ValueError(f"{what} are not finite.")
    log_bound = (np.log(abs(float(scale))) + np.log(top)
                 + np.log(float(np.sum(weights / top))))
    if log_bound > np.log(MAX_LOG_POTENTIAL):
        raise ValueError(
            f"{what} overflow float64: |log phi| can reach about 10^{log_bound / np.log(10):.4g} "
            f"(more than {MAX_LOG_POTENTIAL:g}); {remedy}.")
    return float(np.exp(log_bound))


class NestedModelParamsMixin:
    """``set_params`` that refuses ``<name>__<param>`` while ``<name>`` is not an estimator.

    An estimator whose parameter ``<name>`` may be a model given by name (a string)
    or a list lists it in ``_nested_models``; scikit-learn's ``set_params`` would
    fail on ``"'str' object has no attribute 'set_params'"``. Put the mixin before
    ``BaseEstimator`` in the bases.
    """

    #: parameter name -> the way out, said to the user (or an example instance, in
    #: ``"Pass a model instance (e.g. <name>=<example>) ..."``)
    _nested_models: dict = {}

    def set_params(self, **params):
        """Set parameters; ``<model>__<name>`` needs ``<model>`` to be a model instance."""
        for name, example in self._nested_models.items():
            model = params.get(name, getattr(self, name, None))
            nested = [key for key in params if key.startswith(f"{name}__")]
            if nested and not hasattr(model, "set_params"):
                way_out = example if example.endswith(".") else (
                    f"Pass a model instance (e.g. {name}={example}) to tune its "
                    f"hyperparameters as {name}__<name>.")
                raise ValueError(
                    f"Invalid parameter {nested[0]!r} for estimator {self}: {name}={model!r} "
                    f"is not an estimator, so it has no parameters to set. {way_out}")
        return super().set_params(**params)
