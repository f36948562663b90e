"""R's divisive coefficient of a banner (Rousseeuw 1986; ``bncoef`` in ``twins.c``).

The banner itself and R's ``merge`` matrix are tree formats: their converters
are :func:`sklearn_trellis._core.trees.banner_to_merge` and
:func:`~sklearn_trellis._core.trees.merge_to_children`.
"""

import numpy as np


def divisive_coefficient(banner):
    """R's divisive coefficient ``dc`` (``bncoef`` in ``twins.c``) of a banner.

    For each object, ``d(i)`` is the diameter of the last cluster it belonged to
    before being split off alone, over the diameter of the data; ``dc`` is the
    mean of ``1 - d(i)``. It is 0 when the banner is flat (all heights zero).
    """
    ban = np.asarray(banner, dtype=np.float64)
    n = ban.size
    if n < 2:
        return 0.0
    sup = float(ban[1:].max())
    if sup <= 0.0:
        return 0.0  # R divides 0 by 0 here (NaN); no height, no structure
    total = 0.0
    for k in range(n):
        early = k if k > 0 else 1
        after = k + 1 if k + 1 < n else n - 1
        total += 1.0 - min(ban[early], ban[after]) / sup
    return float(total / n)
