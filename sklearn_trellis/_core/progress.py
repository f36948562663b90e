"""``Progress``: the time-throttled progress lines of a fit with ``verbose``.

One reporter for every estimator and engine: a stage line when a stage
starts (always printed with ``verbose``), and progress lines within a long
stage at most every ``interval`` seconds (10 s by default), so that a long fit
shows where it is without flooding a short one. Compiled loops cannot print:
the engines run them in chunks and call :meth:`Progress.update` between
chunks (or hand :meth:`Progress.callback` to a pure-Python loop).
"""

import sys
import time

#: Seconds between two progress lines of one stage (stage lines are never held back).
DEFAULT_INTERVAL = 10.0


class Progress:
    """Stage and progress lines, prefixed ``[name]``, printed only when ``verbose``.

    Parameters
    ----------
    name : str
        The prefix, e.g. the estimator's class name.
    verbose : int
        0: silent; 1 or more: stage lines and throttled progress lines.
    interval : float, default=10.0
        Least time between two progress lines (seconds); 0 prints every update.
    clock : callable, default=time.perf_counter
        Seconds as a float (tests pass a fake clock).
    stream : file-like, default=None
        Where to print; ``None``: ``sys.stdout`` at print time.

    Examples
    --------
    >>> ticks = iter([0.0, 0.5, 4.0, 12.0, 13.0])
    >>> progress = Progress("Fit", verbose=1, interval=10.0, clock=lambda: next(ticks))
    >>> progress.stage("seed trees")
    [Fit] seed trees (0.5 s)
    >>> progress.update(1, 4, "linkages")      # 4 s: too soon after the stage line
    >>> progress.update(2, 4, "linkages")
    [Fit] seed trees: 2/4 linkages (12.0 s)
    >>> progress.update(3, 4, "linkages")
    """

    def __init__(self, name, verbose, *, interval=DEFAULT_INTERVAL, clock=time.perf_counter,
                 stream=None):
        self.name = name
        self.verbose = verbose
        self.interval = float(interval)
        self.clock = clock
        self.stream = stream
        self.stage_name = ""
        if verbose:
            self.start = self.last = clock()

    def _print(self, message, now):
        self.last = now
        print(f"[{self.name}] {message} ({now - self.start:.1f} s)",
              file=self.stream if self.stream is not None else sys.stdout, flush=True)

    def stage(self, message):
        """Start a stage: print its line now (elapsed time since the reporter began)."""
        if self.verbose:
            self.stage_name = message
            self._print(message, self.clock())

    def update(self, done, total=None, what="steps"):
        """Report ``done`` (of ``total``) units of the current stage, if ``interval`` passed."""
        if not self.verbose:
            return
        now = self.clock()
        if now - self.last < self.interval:
            return
        amount = f"{done:,}" if total is None else f"{done:,}/{total:,}"
        prefix = f"{self.stage_name}: " if self.stage_name else ""
        self._print(f"{prefix}{amount} {what}", now)

    def note(self, message):
        """Print ``message`` now (a line of the current stage), restarting the interval."""
        if self.verbose:
            self._print(message, self.clock())

    def due(self):
        """Whether an :meth:`update` now would print (to skip building its message)."""
        return bool(self.verbose) and self.clock() - self.last >= self.interval

    def callback(self, total=None, what="steps"):
        """``f(done)`` calling :meth:`update`, for an engine's loop."""
        return lambda done: self.update(done, total, what)


#: A reporter that never prints (the default of engines called without one).
SILENT = Progress("", 0)

#: Seconds a chunk of :func:`run_in_chunks` aims at.
CHUNK_SECONDS = 0.5


def run_in_chunks(run, total, first):
    """Do ``total`` units of compiled work in chunks, so that progress can be reported.

    ``run(size)`` does up to ``size`` more units and returns how many are done
    in all; chunks start at ``first`` units and double until one takes
    :data:`CHUNK_SECONDS` (a Python call per half second costs nothing, and a
    kernel cannot print).

    Examples
    --------
    >>> done = []
    >>> def run(size):
    ...     done.append(min(size, 10 - sum(done)))
    ...     return sum(done)
    >>> run_in_chunks(run, 10, 4)
    >>> done
    [4, 6]
    """
    size = first
    done = 0
    while done < total:
        started = time.perf_counter()
        done = run(size)
        if time.perf_counter() - started < CHUNK_SECONDS:
            size *= 2

__all__ = ["CHUNK_SECONDS", "DEFAULT_INTERVAL", "Progress", "SILENT", "run_in_chunks"]
