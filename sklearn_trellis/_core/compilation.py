"""A one-line notice when a fit spends more than a second compiling numba kernels.

The package's kernels are compiled by numba on first use and cached on disk
(``cache=True``): in a fresh environment (after installing or upgrading, or
with an empty ``NUMBA_CACHE_DIR``) the first fit of an estimator compiles
them, later processes load them. :func:`announces_compilation` wraps an
estimator's ``fit``: while it runs, a listener on numba's ``numba:compile``
events (fired by real compilations only, not by loads from the cache) adds up
the time spent compiling, and once it passes :data:`NOTICE_AFTER_SECONDS` one
line goes to standard error, at most once per estimator class and process.
A warm run compiles nothing and prints nothing.
"""

import functools
import sys
import threading
import time

from numba.core import event

#: Seconds of compilation within one fit after which the notice is printed.
NOTICE_AFTER_SECONDS = 1.0

#: numba options of a kernel only ever called by other kernels (``@njit(cache=True,
#: **CALLEE_ONLY)``, ``@template(**CALLEE_ONLY)``): numba then compiles no CPython entry point
#: and no C-callable wrapper for it, a third to a half of a small kernel's compilation.
#: Python cannot call such a kernel (its ``py_func`` still runs).
CALLEE_ONLY = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}

_announced = set()
_lock = threading.Lock()


class _CompileClock(event.Listener):
    """Time spent in (outermost) numba compilations; prints the notice once past the limit."""

    def __init__(self, name):
        self.name = name
        self.depth = 0
        self.started = 0.0
        self.seconds = 0.0
        self.timer = None  # checks during one long compilation, between events

    def _check(self):
        running = time.perf_counter() - self.started if self.depth else 0.0
        if self.seconds + running <= NOTICE_AFTER_SECONDS:
            return
        with _lock:
            if self.name in _announced:
                return
            _announced.add(self.name)
        print(f"sklearn_trellis: compiling {self.name}'s numba kernels (first use in this "
              "environment; can take a minute; cached on disk for later runs)",
              file=sys.stderr, flush=True)

    def on_start(self, ev):
        if self.depth == 0:
            self.started = time.perf_counter()
            if self.name not in _announced:
                self.timer = threading.Timer(NOTICE_AFTER_SECONDS - self.seconds, self._check)
                self.timer.daemon = True
                self.timer.start()
        self.depth += 1
        self._check()

    def on_end(self, ev):
        self._check()
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.perf_counter() - self.started
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None


_active = threading.local()


def announces_compilation(fit):
    """Decorate an estimator's ``fit`` with the compilation notice (see the module).

    A fit inside another one (a meta-estimator's) is covered by the outer notice.
    """
    @functools.wraps(fit)
    def wrapper(estimator, *args, **kwargs):
        name = type(estimator).__name__
        if name in _announced or getattr(_active, "fit", False):
            return fit(estimator, *args, **kwargs)
        _active.fit = True
        try:
            with event.install_listener("numba:compile", _CompileClock(name)):
                return fit(estimator, *args, **kwargs)
        finally:
            _active.fit = False
    wrapper.announces_compilation = True
    return wrapper
