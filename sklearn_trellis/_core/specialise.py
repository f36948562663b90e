"""The one plug-in mechanism: engine kernels compiled for a model's numba functions.

Engines are written as *templates*: plain Python functions, marked with
:func:`template`, that call a model's functions by global names their module
does not define (``lik_add``, ``split_fn``, ...). :func:`specialise` compiles a
copy of every template of a module with those names bound to one model's
``numba.njit`` functions in the copy's globals, the way pynndescent passes a
distance into its kernels, except that the calls are direct: numba inlines
them and no dispatch runs in the loops. The copies are cached on disk
(``cache=True``) under a name derived from the bound functions and the size
and modification time of their source files, so editing a model's module
recompiles its engine kernels, and a new process (a joblib worker) loads them
from the cache instead of compiling again. (Passing the functions as
first-class numba dispatcher *arguments* is as fast, but numba cannot cache
such kernels: ~15 s of compilation per model in every new process.)

A template calls other templates of its module by name: inside a copy those
names are the copies compiled for the same model.
"""

import hashlib
import inspect
import os
import types

from numba import njit

_SPECIALISED = {}


def template(function=None, **options):
    """Mark ``function`` as a kernel template, compiled per model with ``njit(cache=True, **options)``.

    Use as ``@template`` or ``@template(parallel=True)``.
    """
    def mark(f):
        f._template_options = options
        return f
    return mark(function) if function is not None else mark


def templates_of(namespace):
    """Names of the templates defined in a module's ``namespace`` (its ``globals()``)."""
    return tuple(name for name, value in namespace.items()
                 if isinstance(value, types.FunctionType) and hasattr(value, "_template_options"))


def _source_stamp(function):
    py_func = getattr(function, "py_func", function)
    try:
        path = inspect.getfile(py_func)
        stat = os.stat(path)
        stamp = f"{stat.st_mtime_ns}:{stat.st_size}"
    except (TypeError, OSError):
        stamp = "?"
    return f"{py_func.__module__}.{py_func.__qualname__}@{stamp}"


def specialise(namespace, bindings):
    """The templates of ``namespace`` compiled with ``bindings`` (name -> njit function).

    Parameters
    ----------
    namespace : dict
        The ``globals()`` of the module that defines the templates.
    bindings : dict of str to numba dispatcher
        The model's functions, under the names the templates call.

    Returns
    -------
    kernels : types.SimpleNamespace
        One compiled function per template, by the template's name; memoised
        per ``(module, bindings)``.
    """
    key = (namespace["__name__"],) + tuple(sorted(bindings.items(), key=lambda kv: kv[0]))
    found = _SPECIALISED.get(key)
    if found is not None:
        return found
    stamps = "|".join(f"{name}={_source_stamp(f)}" for name, f in key[1:])
    digest = hashlib.sha1(stamps.encode()).hexdigest()[:12]
    copy_globals = dict(namespace)
    copy_globals.update(bindings)
    compiled = {}
    for name in templates_of(namespace):
        original = namespace[name]
        copy = types.FunctionType(original.__code__, copy_globals, name, original.__defaults__)
        copy.__qualname__ = f"{name}_{digest}"
        copy.__doc__ = original.__doc__
        compiled[name] = njit(cache=True, **original._template_options)(copy)
        copy_globals[name] = compiled[name]
    result = types.SimpleNamespace(**compiled)
    _SPECIALISED[key] = result
    return result


# Transitional: the hierarchical kernels still dispatch on a literal ``kind``.
from numba import typeof
from numba.core import types as numba_types

_ENTRY_POINTS = {}


def call_specialised(kernel, kind, *args):
    """``kernel(kind, *args)`` with ``kind`` compiled in as a literal int."""
    arg_types = tuple(typeof(a) for a in args)
    key = (kernel, int(kind), arg_types)
    entry = _ENTRY_POINTS.get(key)
    if entry is None:
        entry = kernel.compile((numba_types.literal(int(kind)),) + arg_types)
        _ENTRY_POINTS[key] = entry
    return entry(int(kind), *args)
