"""The one plug-in mechanism: engine kernels compiled for a model's numba functions.

Engines are written as *templates*: plain Python functions, marked with
:func:`template`, that call a model's functions by global names their module
does not define: the Gibbs kernels call a likelihood's ``lik_add``,
``lik_log_predictive``, ...; the hierarchical kernels (exact, sparse, greedy
and beam search) call an energy's split function ``split_fn``.
:func:`specialise` compiles a copy of every template of a module with those
names bound to one model's ``numba.njit`` functions in the copy's globals, the
way pynndescent passes a distance into its kernels, except that the calls are
direct: numba inlines them and no dispatch runs in the loops. So a new model
is its own module and touches no engine file.

The copies are cached on disk (``cache=True``) under a name derived from the
bound functions and the size and modification time of their source files, so
editing a model's module recompiles its engine kernels, and a new process (a
joblib worker) loads them from the cache instead of compiling again. (Passing
the functions as first-class numba dispatcher *arguments* is as fast, but
numba cannot cache such kernels: ~15 s of compilation per model in every new
process.)

A template calls other templates of its module by name: inside a copy those
names are the copies compiled for the same model. A template may also be
imported from another module (a helper shared by several kernel modules); it
is then compiled with the importing module's templates, and the templates it
calls must be imported as well.
"""

import hashlib
import inspect
import os
import types

from numba import njit

from .parallel import ParallelKernel

_SPECIALISED = {}


def template(function=None, **options):
    """Mark ``function`` as a kernel template, compiled per model with ``njit(cache=True, **options)``.

    Use as ``@template`` or ``@template(parallel=True)``; a parallel template
    is compiled as a :class:`~sklearn_trellis._core.parallel.ParallelKernel`
    (``kernels.name.for_work(n)(...)`` runs its serial twin on small inputs).
    """
    def mark(f):
        f._template_options = options
        return f
    return mark(function) if function is not None else mark


def is_specialisation_of(kernel, template_function):
    """Whether ``kernel`` is a copy of ``template_function`` compiled by :func:`specialise`
    (for any model): the copies run the template's own code."""
    py_func = getattr(kernel, "py_func", None)
    return getattr(py_func, "__code__", None) is template_function.__code__


def templates_of(namespace):
    """Names of the templates defined in (or imported into) a module's ``namespace``."""
    return tuple(name for name, value in namespace.items()
                 if isinstance(value, types.FunctionType) and hasattr(value, "_template_options"))


def _source_stamp(function):
    if isinstance(function, (bool, int)):  # a constant the templates branch on
        return repr(function)
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
        The ``globals()`` of the module that defines (or imports) the templates.
    bindings : dict of str to numba dispatcher or int
        The model's functions, under the names the templates call; or integer
        constants the templates branch on (``if KIND == VI:``): numba prunes the
        branches of the other values before typing, so each copy compiles only its
        own code.

    Returns
    -------
    kernels : types.SimpleNamespace
        One compiled function per template, by the template's name; memoised
        per ``(module, bindings)``.
    """
    module = namespace["__name__"]
    key = (module,) + tuple(sorted(bindings.items(), key=lambda kv: kv[0]))
    found = _SPECIALISED.get(key)
    if found is not None:
        return found
    names = templates_of(namespace)
    # Numba's cache of a kernel does not see edits of the functions it inlines:
    # the stamps of the bound functions and of templates imported from another
    # module go into the kernels' names instead.
    imported = sorted(_source_stamp(namespace[name]) for name in names
                      if namespace[name].__module__ != module)
    stamps = "|".join([module] + [f"{name}={_source_stamp(f)}" for name, f in key[1:]]
                      + imported)
    digest = hashlib.sha1(stamps.encode()).hexdigest()[:12]
    # One globals dict per module the templates come from, so that an imported
    # template resolves its own module's names.
    scopes = {}
    compiled = {}
    for name in names:
        original = namespace[name]
        scope = scopes.get(id(original.__globals__))
        if scope is None:
            scope = scopes[id(original.__globals__)] = dict(original.__globals__)
        copy = types.FunctionType(original.__code__, scope, name, original.__defaults__)
        copy.__qualname__ = f"{name}_{digest}"
        copy.__doc__ = original.__doc__
        options = dict(original._template_options)
        if options.pop("parallel", False):
            compiled[name] = ParallelKernel(copy, options)
        else:
            compiled[name] = njit(cache=True, **options)(copy)
    # Numba resolves globals when it compiles (on first call): bind them now,
    # each template also under its own name in its module's scope (a parallel
    # template called from a kernel runs its parallel twin).
    in_kernels = {name: getattr(kernel, "parallel", kernel) for name, kernel in compiled.items()}
    for scope in scopes.values():
        scope.update(bindings)
        scope.update(in_kernels)
    for name in names:
        scopes[id(namespace[name].__globals__)][namespace[name].__name__] = in_kernels[name]
    result = types.SimpleNamespace(**compiled)
    _SPECIALISED[key] = result
    return result
