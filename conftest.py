"""pytest configuration at the repository root: the package's docstring examples.

``--doctest-modules`` (pyproject.toml) runs every docstring example of
``sklearn_trellis``. The examples of ``sklearn_trellis/plotting.py`` draw with
matplotlib, an optional dependency (the ``plot`` extra): without it they are not
collected, as ``tests/test_plotting.py`` is skipped.
"""

collect_ignore = []
try:
    import matplotlib  # noqa: F401
except ImportError:
    collect_ignore.append("sklearn_trellis/plotting.py")
