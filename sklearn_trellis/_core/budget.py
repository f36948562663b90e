"""Size limits of the exact engines: refuse work before allocating it.

Every exact engine declares the bytes it keeps per subset and its cost per
``3**N`` step; :func:`check_exact_budget` turns those into a clear error that
states the memory and time a request would need.
"""

import os

#: Largest N the exact engines accept at all (2**30 subsets already need 24 GiB).
HARD_MAX_ITEMS = 28

#: Measured CPU cost of ``ExactFlatTrellis.fit`` (log Z, MAP, pairwise marginals)
#: per ``3**N`` step on one core (ns), with its layers in linear space
#: (``benchmarks/bench_flat_trellis.py``: 0.36 ns at N=18). Layers that need
#: log space (very large ``beta``) cost about 10 times more. Engines with other
#: kernels pass their own ``ns_per_step``.
NS_PER_STEP = 0.4


class BudgetExceeded(ValueError):
    """A sparse engine stopped because a problem outgrew its budget.

    Raised (instead of a bare ``ValueError``) when a sparse trellis needs more
    remainder states or transitions than allowed, so that a search over seed
    families can drop the offending union and go on, without reading messages.

    Parameters
    ----------
    message : str
        What was exceeded and how to avoid it.
    resource : str
        What ran out, e.g. ``'states'`` or ``'transitions'``.
    limit : int
        The cap that was reached.
    reached : int, optional
        How many had been produced when the engine stopped.
    """

    def __init__(self, message, *, resource, limit, reached=None):
        super().__init__(message)
        self.resource = resource
        self.limit = limit
        self.reached = reached


def available_memory_bytes():
    """Memory the OS reports as available, or ``None`` if it cannot tell."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def rows_or_zero(X):
    """Number of rows of an array-like, read without converting it (0 if it has none).

    Lets an estimator estimate its allocations before validation copies ``X``;
    the validation itself reports malformed input.
    """
    shape = getattr(X, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else 0
    try:
        return len(X)
    except TypeError:
        return 0


def format_bytes(n_bytes):
    """Human readable size, e.g. ``'1.5 GiB'``."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} PiB"  # pragma: no cover


def check_memory(n_bytes, what, way_out=None):
    """Raise ``ValueError`` if ``what`` would need more than 80% of the available memory.

    The one memory check of the package: called with the estimate of the
    largest allocation *before* allocating it, so a refusal costs nothing.
    The available memory is read from the OS at the time of the call
    (:func:`available_memory_bytes`). The message gives the memory needed, the
    memory available and ``way_out`` (how to need less), if given.
    """
    available = available_memory_bytes()
    if available is not None and n_bytes > 0.8 * available:
        hint = f" {way_out}" if way_out else ""
        raise ValueError(f"Not enough memory: {what} needs about {format_bytes(n_bytes)}, "
                         f"but only {format_bytes(available)} is available.{hint}")


def memory_cap(item_bytes, share=0.4):
    """How many items of ``item_bytes`` fit in ``share`` of the available memory.

    The cap of a table whose size is known only as it grows (a sparse trellis's
    remainder states): the engine stops at it and says so. Returns
    ``(count, available)``; ``(None, None)`` when the OS cannot tell. Read at the
    time of the call, as :func:`check_memory` does.
    """
    available = available_memory_bytes()
    if available is None:
        return None, None
    return int(share * available // item_bytes), available


def format_seconds(seconds):
    """Human readable duration."""
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    if seconds < 2 * 365 * 86400:
        return f"{seconds / 86400:.3g} days"
    return f"{seconds / (365 * 86400):.3g} years"


def exact_cost(n_items, bytes_per_subset, steps_base=3, ns_per_step=None):
    """Return ``(bytes, seconds)`` an exact trellis over ``n_items`` would need."""
    if ns_per_step is None:
        ns_per_step = NS_PER_STEP
    n_bytes = bytes_per_subset * (2 ** n_items)
    seconds = ns_per_step * 1e-9 * float(steps_base) ** n_items
    return n_bytes, seconds


def check_exact_budget(n_items, bytes_per_subset, *, max_items, what="exact trellis",
                       way_out=None, ns_per_step=None):
    """Raise ``ValueError`` if an exact trellis over ``n_items`` is out of reach.

    Parameters
    ----------
    n_items : int
        Number of items N.
    bytes_per_subset : float
        Memory the engine keeps per subset (the tables have ``2**N`` entries).
    max_items : int
        The caller's limit (e.g. an estimator's ``max_exact_size``).
    what : str
        Name of the computation, for the message.
    way_out : str, optional
        What lifts the refusal, in the caller's parameters; default: fewer
        items, or a higher ``max_items`` when that is below the hard limit.
    ns_per_step : float, optional
        The engine's cost per ``3**N`` step on one core; default ``NS_PER_STEP``.
    """
    n_bytes, seconds = exact_cost(n_items, bytes_per_subset, ns_per_step=ns_per_step)
    cost = (f"an {what} over N={n_items} items would need about "
            f"{format_bytes(n_bytes)} of memory and {format_seconds(seconds)} "
            f"of CPU time (O(3^N))")
    limit = min(max_items, HARD_MAX_ITEMS)
    if way_out is None:
        way_out = ("Use fewer items." if n_items > HARD_MAX_ITEMS or n_items <= max_items
                   else f"Use fewer items, or raise max_items to {n_items} if you can afford it.")
    if n_items > limit:
        raise ValueError(f"N={n_items} is above the exact limit of {limit} items: {cost}. "
                         f"{way_out}")
    available = available_memory_bytes()
    if available is not None and n_bytes > 0.8 * available:
        raise ValueError(
            f"Not enough memory: {cost}, but only {format_bytes(available)} "
            f"is available. {way_out}")
    return n_bytes, seconds
