"""Tests that run numba's kernels on a given number of threads."""

import contextlib

import numba


@contextlib.contextmanager
def numba_threads(count):
    """Run the block on ``count`` of numba's threads (at most its pool), then restore."""
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(count, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
