"""Small real datasets and generators used by the demo, examples, tests and benchmarks.

Everything ships with the package or is built from data scikit-learn ships:
nothing is downloaded.
"""

from ._base import load_tumour_subset, make_wishart_blocks
from ._gaussian_pairs import make_gaussian_pairs
from ._jets import load_ginkgo_jets, make_ginkgo_jets

__all__ = ["load_tumour_subset", "make_wishart_blocks", "make_gaussian_pairs",
           "load_ginkgo_jets", "make_ginkgo_jets"]
