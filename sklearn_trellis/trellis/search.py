"""Approximate MAP baselines (Greenberg et al. 2021, Section 4.2): greedy and beam search.

Both agglomerate bottom-up under the model's own split log-potential and
return a tree with its log-potential, to compare with the exact MAP of the
trellis. They need the model's per-subset statistics (``2**N`` entries), so
they share the exact engine's size limit.
"""

import numpy as np

from . import _search_kernels as kernels
from ._specialise import call_specialised
from .hierarchical import tree_from_splits


def _full(stats):
    return stats.shape[1] - 1


def greedy_tree(kind, params, stats):
    """Greedy agglomeration: merge the pair with the largest split log-potential.

    Returns
    -------
    tree : nested tuples
    log_potential : float
    """
    full = _full(stats)
    n = full.bit_length()
    parents, lefts, total = call_specialised(kernels.greedy_merges, kind, params, stats,
                                             full, n)
    return tree_from_splits(parents, lefts, full), float(total)


def beam_search_tree(kind, params, stats, beam_width=None):
    """Beam search over merge sequences (default beam ``N (N - 1) / 2``, as the paper).

    Returns
    -------
    tree : nested tuples
    log_potential : float
    """
    full = _full(stats)
    n = full.bit_length()
    width = max(1, n * (n - 1) // 2) if beam_width is None else int(beam_width)
    if width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width!r}.")
    parents, lefts, total = call_specialised(kernels.beam_merges, kind, params, stats,
                                             full, n, width)
    return tree_from_splits(parents, lefts, full), float(total)


__all__ = ["greedy_tree", "beam_search_tree"]
