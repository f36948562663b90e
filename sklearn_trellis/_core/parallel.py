"""Parallel kernels with a serial twin: small inputs do not pay numba's parallel compilation.

Compiling a ``parallel=True`` kernel takes several times longer than the same
loop compiled serially (numba outlines every ``prange`` loop into a gufunc),
and on a small input the threads gain nothing. :func:`parallel_kernel`
compiles one source twice, lazily: ``kernel.parallel`` (``prange`` loops run
on all threads) and ``kernel.serial`` (``prange`` is ``range``); each is
compiled on its first call and cached on disk under its own name.
``kernel.for_work(n)`` picks the serial one below :data:`PARALLEL_MIN_WORK`
inner iterations, so a first fit on a small problem compiles only the serial
twin.

Only for kernels whose ``prange`` iterations write disjoint outputs (no
reduction across iterations): both twins then compute bit-for-bit the same
result, whichever runs.

:func:`run_beside` runs two independent serial tasks at once (one in a
background thread: it should spend its time in a ``nogil`` kernel), within the
same thread budget (``numba.get_num_threads()``).
"""

import types
from concurrent.futures import ThreadPoolExecutor

import numba
from numba import njit

#: Inner iterations below which a kernel runs serially: about a millisecond of
#: work, less than the threads' start-up gains (and than the parallel compilation
#: a first fit would pay).
PARALLEL_MIN_WORK = 1 << 20

#: Items per chunk of a slotted kernel: chunks are dealt round-robin to the
#: slots (one per thread) and their outputs gathered in chunk order, so the
#: result does not depend on the number of threads.
SLOT_CHUNK = 256

#: Most slots of a slotted kernel (each holds its own scratch, e.g. stamps).
MAX_SLOTS = 8


class ParallelKernel:
    """One ``prange`` kernel source compiled as ``parallel`` and ``serial`` dispatchers."""

    def __init__(self, function, options):
        self.__wrapped__ = function
        self.__doc__ = function.__doc__
        self.__name__ = function.__name__
        self.parallel = njit(cache=True, parallel=True, **options)(function)
        # A copy under its own name: numba's disk cache is keyed by the
        # function's qualified name, not by the compilation flags.
        twin = types.FunctionType(function.__code__, function.__globals__,
                                  f"{function.__name__}_serial", function.__defaults__)
        twin.__qualname__ = f"{function.__qualname__}_serial"
        twin.__module__ = function.__module__
        twin.__doc__ = function.__doc__
        self.serial = njit(cache=True, **options)(twin)

    def __reduce__(self):
        # numba's dispatchers pickle their functions by value; the plain source
        # function (a specialised copy, not reachable by name) does not.
        return (_from_dispatchers, (self.parallel, self.serial))

    def for_work(self, work):
        """The twin to run for ``work`` inner iterations."""
        if work < PARALLEL_MIN_WORK or numba.get_num_threads() == 1:
            return self.serial
        return self.parallel

    def with_slots(self, work):
        """``(twin, n_slots)`` for ``work`` inner iterations: the serial twin with
        one slot, or the parallel one with a slot per thread (at most :data:`MAX_SLOTS`)."""
        twin = self.for_work(work)
        if twin is self.serial:
            return twin, 1
        return twin, max(1, min(numba.get_num_threads(), MAX_SLOTS))

    def __call__(self, *args):
        """Run the parallel twin (callers that know the work use :meth:`for_work`)."""
        return self.parallel(*args)


def _from_dispatchers(parallel, serial):
    """A :class:`ParallelKernel` rebuilt from its two unpickled dispatchers."""
    kernel = ParallelKernel.__new__(ParallelKernel)
    kernel.parallel, kernel.serial = parallel, serial
    kernel.__wrapped__ = parallel.py_func
    kernel.__doc__ = parallel.py_func.__doc__
    kernel.__name__ = parallel.py_func.__name__
    return kernel


def run_beside(background, foreground):
    """``(background(), foreground())``, the two run at once when numba may use two threads.

    ``background`` runs in a second thread (its work should be a ``nogil``
    kernel, or the two take turns on the GIL); with one thread allowed
    (``numba.get_num_threads() == 1``) the two run one after the other. Each
    computes what it would alone: for independent tasks the results do not
    depend on which way they ran.

    Examples
    --------
    >>> run_beside(lambda: 1 + 1, lambda: "foreground")
    (2, 'foreground')
    """
    if numba.get_num_threads() < 2:
        return background(), foreground()
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(background)
        ahead = foreground()
        return pending.result(), ahead


def parallel_kernel(function=None, **options):
    """Decorate a ``prange`` kernel: ``njit(cache=True, parallel=True)`` plus a serial twin.

    Use as ``@parallel_kernel`` or ``@parallel_kernel(fastmath=...)``; call
    ``kernel.for_work(n_iterations)(*args)``.
    """
    def wrap(f):
        return ParallelKernel(f, options)
    return wrap(function) if function is not None else wrap
