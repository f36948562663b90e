"""Call a numba kernel compiled for one literal value of its first argument.

The hierarchical kernels take the split-function ``kind`` first; compiling
them with ``kind`` as a literal lets LLVM drop the dispatch and inline the
split arithmetic. ``numba.literally`` would do this too, but its dispatch
re-runs type inference on every call (milliseconds); here the specialised
entry point is looked up once (from numba's on-disk cache after the first
run) and memoised, so a call costs microseconds.
"""

from numba import typeof
from numba.core import types

_ENTRY_POINTS = {}


def call_specialised(kernel, kind, *args):
    """``kernel(kind, *args)`` with ``kind`` compiled in as a literal int."""
    arg_types = tuple(typeof(a) for a in args)
    key = (kernel, int(kind), arg_types)
    entry = _ENTRY_POINTS.get(key)
    if entry is None:
        entry = kernel.compile((types.literal(int(kind)),) + arg_types)
        _ENTRY_POINTS[key] = entry
    return entry(int(kind), *args)
