"""A numba kernel's own Python source, for inputs too small to pay for its compilation.

Numba compiles a kernel on its first call, about 0.1 s for the smallest and
seconds for a large one; on a small input, the same steps run by the Python
interpreter take milliseconds. :func:`interpreted` returns the kernel's
``py_func`` rebound so that the kernels it calls are their Python source too
(calling a numba kernel from Python compiles it): nothing is compiled.

A process that keeps fitting small inputs would pay the interpreter's
milliseconds on every fit, long after a compilation (or a load from numba's
disk cache, a few milliseconds) would have paid off: once its interpreted runs
have taken :data:`INTERPRETED_BUDGET_SECONDS` of CPU, :func:`interpreting` is
false and call sites run the compiled kernels. Both give the same values, so
only the time depends on this history.

Only for kernels whose every value is an integer, a bit pattern or a
comparison (no ``exp``, ``log`` or other library float functions, which numba
and NumPy may round differently): numba's and NumPy's integer scalars wrap
alike, so both give the same arrays bit for bit. Call it through
:func:`run_interpreted`, which silences NumPy's overflow warnings (uint64
hashes wrap around on purpose, silently in numba). Each call site decides
what is small, tests the interpreted run against the compiled one, and
tests the compiled kernel at every size (a threshold set to 0).

``compiled_callees=True`` runs only the kernel's own source and calls the
compiled kernels it calls: for an engine kernel whose own steps are integer
bookkeeping and float sums in the kernel's order (Python's float additions are
numba's), the library float functions being in its callees, which compile anyway.
"""

import threading
import time
import types

import numpy as np
from numba.core.registry import CPUDispatcher

#: CPU seconds of interpreted runs after which a process compiles its kernels.
INTERPRETED_BUDGET_SECONDS = 1.0

_TWINS = {}
_spent = 0.0
_lock = threading.Lock()


def interpreting():
    """Whether small inputs still run interpreted in this process (the budget is not spent)."""
    return _spent < INTERPRETED_BUDGET_SECONDS


def interpreted(kernel):
    """``kernel``'s Python source, calling the Python source of the kernels it calls.

    Parameters
    ----------
    kernel : numba dispatcher (``njit``)

    Returns
    -------
    function
        A plain function with the kernel's code; its module globals that are
        numba kernels are replaced by their own interpreted twins.
    """
    twin = _TWINS.get(kernel)
    if twin is None:
        function = kernel.py_func
        bound = dict(function.__globals__)
        twin = types.FunctionType(function.__code__, bound, function.__name__,
                                  function.__defaults__, function.__closure__)
        _TWINS[kernel] = twin       # before its callees: a recursive kernel ends here
        for name in function.__code__.co_names:
            value = bound.get(name)
            if isinstance(value, CPUDispatcher):
                bound[name] = interpreted(value)
    return twin


def run_interpreted(kernel, *args, compiled_callees=False):
    """``interpreted(kernel)(*args)``, NumPy's integer overflow warnings silenced; its CPU
    time (this thread's) counts against :data:`INTERPRETED_BUDGET_SECONDS`.

    ``compiled_callees``: ``kernel.py_func(*args)``, not counted (its own steps take
    microseconds; the time of its callees, their compilation included, is not
    interpretation).
    """
    global _spent
    if compiled_callees:
        return kernel.py_func(*args)
    start = time.thread_time()
    try:
        with np.errstate(over="ignore"):
            return interpreted(kernel)(*args)
    finally:
        with _lock:
            _spent += time.thread_time() - start


def call(kernel, *args, small, compiled_callees=False):
    """``kernel(*args)``: interpreted if the input is ``small`` and the process still
    interprets (:func:`interpreting`), else compiled."""
    if small and interpreting():
        return run_interpreted(kernel, *args, compiled_callees=compiled_callees)
    return kernel(*args)


__all__ = ["INTERPRETED_BUDGET_SECONDS", "call", "interpreted", "interpreting",
           "run_interpreted"]
