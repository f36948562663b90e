"""Approximate MAP baselines (Greenberg et al. 2021, Section 4.2): greedy and beam search.

Both agglomerate bottom-up under the model's own split log-potential and
return a tree with its log-potential, to compare with the exact MAP of the
trellis. They need the model's per-subset statistics (``2**N`` entries), so
they share the exact engine's size limit.
"""

from ..._core.trees import tree_from_splits
from . import _search_kernels as kernels


def _search(name, split, params, stats, *extra):
    full = stats.shape[1] - 1
    kernel = getattr(kernels.specialise(split), name)
    parents, lefts, total = kernel(params, stats, full, full.bit_length(), *extra)
    if parents.ndim == 2:      # the beam's trees, best first: keep the best
        parents, lefts, total = parents[0], lefts[0], total[0]
    return tree_from_splits(parents, lefts, full), float(total)


def _beam_width(stats, beam_width):
    n = stats.shape[1].bit_length() - 1
    width = max(1, n * (n - 1) // 2) if beam_width is None else int(beam_width)
    if width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width!r}.")
    return width


def greedy_tree(split, params, stats):
    """Greedy agglomeration: merge the pair with the largest split log-potential.

    Parameters
    ----------
    split, params, stats
        The model's :class:`~sklearn_trellis.models.SplitKernelInputs`.

    Returns
    -------
    tree : nested tuples
    log_potential : float
    """
    return _search("greedy_merges", split, params, stats)


def beam_search_tree(split, params, stats, beam_width=None):
    """Beam search over merge sequences (default beam ``N (N - 1) / 2``, as the paper).

    Parameters
    ----------
    split, params, stats
        The model's :class:`~sklearn_trellis.models.SplitKernelInputs`.
    beam_width : int, optional
        Default ``N (N - 1) / 2``, as the paper.

    Returns
    -------
    tree : nested tuples
    log_potential : float
    """
    return _search("beam_merges", split, params, stats, _beam_width(stats, beam_width))


def beam_search_trees(split, params, stats, beam_width=None, n_trees=None):
    """The distinct complete trees of the beam search's final beam, best first.

    The beam keeps one merge history per distinct forest, and the last merge
    turns each two-cluster forest into a different tree, so the final beam
    holds up to ``beam_width`` distinct trees (the seeds of the paper's Beam
    Search trellis, Section 3.1). The first is :func:`beam_search_tree`'s.

    Parameters
    ----------
    split, params, stats
        The model's :class:`~sklearn_trellis.models.SplitKernelInputs`.
    beam_width : int, optional
        Default ``N (N - 1) / 2``, as the paper.
    n_trees : int, optional
        Keep at most this many (default: all of the final beam).

    Returns
    -------
    list of (tree, log_potential)
        Nested-tuple trees and their log-potentials, best first.
    """
    full = stats.shape[1] - 1
    parents, lefts, totals = kernels.specialise(split).beam_merges(
        params, stats, full, full.bit_length(), _beam_width(stats, beam_width))
    count = len(totals) if n_trees is None else min(int(n_trees), len(totals))
    return [(tree_from_splits(parents[t], lefts[t], full), float(totals[t]))
            for t in range(count) if totals[t] > -float("inf") or t == 0]


__all__ = ["greedy_tree", "beam_search_tree", "beam_search_trees"]
