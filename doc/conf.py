"""Sphinx configuration: numpydoc API pages and a sphinx-gallery over examples/."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "sklearn-trellis"
author = "sklearn-trellis developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
numpydoc_show_class_members = False
exclude_patterns = ["_build", "auto_examples/*.ipynb"]
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
}
html_theme = "pydata_sphinx_theme" if __import__("importlib").util.find_spec(
    "pydata_sphinx_theme") else "alabaster"
