"""Sphinx configuration: the pydata theme, numpydoc API pages and a sphinx-gallery over examples/.

Offline: MathJax is copied into the site (sphinx-mathjax-offline); no intersphinx; references to numpy, scipy, scikit-learn and matplotlib
objects are plain text (see ``nitpick_ignore_regex``). ``doc/check.sh`` builds
with ``-n -W`` (nitpicky, warnings are errors).
"""

import os
import re
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "sklearn-trellis"
author = "sklearn-trellis developers"
copyright = "2026, sklearn-trellis developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax served from _static: equations render offline
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
exclude_patterns = [
    "_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
    # sections of guide/choosing.rst, read by its ``.. include::`` directives
    "choosing/*",
]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["custom.css"]

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "show_memory": False,
    # Backreferences: each API page lists the examples that use it.
    "doc_module": ("sklearn_trellis",),
    "backreferences_dir": "generated/backreferences",
}

html_theme = "pydata_sphinx_theme"
html_title = "sklearn-trellis"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": [],
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "changelog": []}
html_show_sourcelink = False
# "fit()" rather than "TrellisHierarchical.fit()" in the page tables of contents.
toc_object_entries_show_parents = "hide"

# Names outside this package: documented elsewhere, not linked (offline build).
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|scipy|sklearn|matplotlib|joblib|numba|pandas)(\..*)?"),
    (r"py:.*", r"(ndarray|array-like|array_like|callable|optional|default.*|int|float|str|"
               r"bool|dict|list|tuple|object|None|True|False|iterable|generator|"
               r"RandomState|Bunch|BaseEstimator|sparse matrix)"),
    # Private helpers and inherited methods that docstrings name for the reader
    # of the source; they have no page of their own.
    (r"py:.*", r"(sklearn_trellis\.)?.*\._\w+"),
    (r"py:.*", r"(InsertionInputs|STRENGTH_GRID|NormalInverseWishart\.SCALE_GRID|cell_kernels|cell_loops|cell_types|"
               r"CellKernels|SplitModel\.(insertion_inputs|split_log_potential|with_new_item))"),
    (r"py:.*", r"(item_codes|record_params|sampler\.record_params|sampler\.set_params|sampler|"
               r"MilpMapSolver|resample_params|hyperparameter_grid|fit|template|LOSSES|"
               r"distance_normalization|sklearn_trellis\.models\.priors\.PartitionPrior|"
               r"sklearn_trellis\.models\.wishart\.estimate_dof|"
               r"sklearn_trellis\.models\.likelihood\.(no_prepare|zero_global|no_refresh)|"
               r"sklearn_trellis\.engines\.exact\.grid_marginal\.GridMarginalPosterior|"
               r"sklearn_trellis\.engines\.exact\.(binder\.)?binder_point_estimate)"),
]


def _escape_shape_names(app, what, name, obj, options, lines):
    """``ndarray of shape (n_features_in_,)``: a trailing underscore makes a docutils
    reference; inside such shapes, quote attribute names as literals."""
    def quote(match):
        inner = re.sub(r"\b([A-Za-z]\w*_)(?=[,)\s]|$)", r"``\1``", match.group(1))
        return f"shape ({inner})"
    for i, line in enumerate(lines):
        if "``" not in line:
            lines[i] = re.sub(r"shape \(([^)`]*)\)", quote, line)


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """scikit-learn's generated ``set_*_request`` methods link to its own glossary."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _escape_shape_names)
    app.connect("autodoc-skip-member", _skip_metadata_requests)
