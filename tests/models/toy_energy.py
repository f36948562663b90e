"""A toy split energy: everything a new hierarchical energy needs, in one module.

Each item ``i`` has a weight ``w_i`` (the first feature of ``X``), and a split
of a cluster ``S`` into children ``L`` and ``R`` costs its squared imbalance::

    psi(L, R) = -(w(L) - w(R))**2,    w(X) = sum of w_i over the items of X

so the most likely trees split every cluster into halves of equal weight.
An energy is two pieces:

- a **split function**, compiled with ``numba.njit``, that the engines call for
  every split ``(L, R)`` of a parent ``S``: it reads per-subset statistics
  ``stats[:, X]`` computed once by the model, here the weights ``w(X)``;
- a :class:`~sklearn_trellis.models.SplitModel` that fits to the data and
  hands the engines its split function with its ``params`` and ``stats``.

Registering it by name is one line, after which ``TrellisHierarchical(energy=
"toy")`` works with every engine (exact, sparse, greedy and beam search)::

    from sklearn_trellis.models import ENERGIES
    ENERGIES["toy"] = ToyEnergy

No engine file changes: the engines compile their kernels with the split
function bound in, and cache them on disk.
"""

import numpy as np
from numba import njit

from sklearn_trellis.models import SplitKernelInputs, SplitModel


@njit(cache=True, inline="always")
def toy_split(params, stats, full, parent, left, right):
    """``psi(L, R) = -(w(L) - w(R))**2``, with ``stats[0, X] = w(X)``.

    Every split function has this signature. ``parent``, ``left`` and
    ``right`` index the columns of ``stats`` (subset bitmasks in the exact
    trellis, vertex ids in a sparse one) and ``full`` is the column of all
    items. ``params[0]`` is the inverse temperature ``beta``, which the engines
    apply: return ``psi`` itself, or ``-inf`` to forbid the split.
    """
    gap = stats[0, left] - stats[0, right]
    return -gap * gap


class ToyEnergy(SplitModel):
    """Squared weight imbalance of each split, ``psi(L, R) = -(w(L) - w(R))**2``.

    Attributes
    ----------
    weights_ : ndarray of shape (N,)
        The item weights ``w`` (first column of the data given to :meth:`fit`).
    n_items_ : int

    Examples
    --------
    >>> import numpy as np
    >>> energy = ToyEnergy().fit(np.ones((4, 1)))
    >>> energy.log_potential(((0, 1), (2, 3)))        # balanced: every gap is 0
    0.0
    >>> energy.log_potential((((0, 1), 2), 3))        # gaps 2, 1 and 0
    -5.0
    """

    input_kind = "features"

    def fit(self, data, y=None):
        """Bind the energy to the items, the rows of ``data`` (weights: first column)."""
        self.weights_ = np.asarray(data, dtype=np.float64).reshape(len(data), -1)[:, 0]
        self.n_items_ = self.weights_.size
        return self

    def split_log_potential(self, left, right):
        """``psi(left, right)`` of one split (the slow path, and the tests' reference)."""
        gap = self.weights_[np.asarray(left)].sum() - self.weights_[np.asarray(right)].sum()
        return -float(gap * gap)

    def kernel_inputs(self, beta=1.0):
        """The split function, ``[beta]`` and ``stats[0, X] = w(X)`` for every bitmask ``X``."""
        masks = np.arange(1 << self.n_items_)
        sums = np.zeros(masks.size)
        for i, weight in enumerate(self.weights_):
            sums += weight * ((masks >> i) & 1)
        return SplitKernelInputs(toy_split, np.array([float(beta)]), sums[None, :])

    def family_kernel_inputs(self, family, beta=1.0):
        """The same over the vertices of a cluster family (``stats[0, v] = w(v)``)."""
        self._check_family(family)
        sums = np.array([self.weights_[family.members(v)].sum()
                         for v in range(family.n_vertices)])
        return SplitKernelInputs(toy_split, np.array([float(beta)]), sums[None, :])
