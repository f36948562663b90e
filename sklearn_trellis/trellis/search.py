"""Approximate MAP baselines (Greenberg et al. 2021, Section 4.2): greedy and beam search.

Both agglomerate bottom-up under the model's own split log-potential and
return a tree with its log-potential, to compare with the exact MAP of the
trellis. They need the model's per-subset statistics (``2**N`` entries), so
they share the exact engine's size limit.
"""

from . import _search_kernels as kernels
from ._specialise import call_specialised
from .hierarchical import tree_from_splits


def _search(kernel, kind, params, stats, *extra):
    full = stats.shape[1] - 1
    parents, lefts, total = call_specialised(kernel, kind, params, stats, full,
                                             full.bit_length(), *extra)
    return tree_from_splits(parents, lefts, full), float(total)


def greedy_tree(kind, params, stats):
    """Greedy agglomeration: merge the pair with the largest split log-potential.

    Returns
    -------
    tree : nested tuples
    log_potential : float
    """
    return _search(kernels.greedy_merges, kind, params, stats)


def beam_search_tree(kind, params, stats, beam_width=None):
    """Beam search over merge sequences (default beam ``N (N - 1) / 2``, as the paper).

    Returns
    -------
    tree : nested tuples
    log_potential : float
    """
    n = stats.shape[1].bit_length() - 1
    width = max(1, n * (n - 1) // 2) if beam_width is None else int(beam_width)
    if width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width!r}.")
    return _search(kernels.beam_merges, kind, params, stats, width)


__all__ = ["greedy_tree", "beam_search_tree"]
