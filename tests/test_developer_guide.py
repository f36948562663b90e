"""The architecture map of ``doc/developer.rst`` names every part of the package.

A new subpackage of ``engines/`` or module of ``models/`` or ``_core/`` that
the map does not name fails here, so the guide cannot go stale silently.
"""

import re
from pathlib import Path

import pytest

import sklearn_trellis

PACKAGE = Path(sklearn_trellis.__file__).parent
GUIDE = PACKAGE.parent / "doc" / "developer.rst"


def architecture_map():
    """The ``code-block:: text`` tree of the Architecture section."""
    text = GUIDE.read_text()
    match = re.search(r"\.\. code-block:: text\n\n(    sklearn_trellis/\n(?:(?: .*)?\n)+)", text)
    assert match, "doc/developer.rst has no architecture map (a code-block starting sklearn_trellis/)"
    return match.group(1)


def engine_subpackages():
    return sorted(path.parent.name for path in (PACKAGE / "engines").glob("*/__init__.py"))


def modules(subpackage):
    return sorted(path.name for path in (PACKAGE / subpackage).glob("*.py")
                  if path.name != "__init__.py")


@pytest.mark.parametrize("name", engine_subpackages())
def test_every_engine_is_mapped(name):
    assert re.search(rf"(?<![\w/]){name}/", architecture_map()), (
        f"engines/{name}/ is missing from the architecture map of doc/developer.rst")


@pytest.mark.parametrize("subpackage, name",
                         [(sub, name) for sub in ("models", "_core") for name in modules(sub)])
def test_every_model_and_core_module_is_mapped(subpackage, name):
    assert re.search(rf"(?<![\w/]){re.escape(name)}", architecture_map()), (
        f"{subpackage}/{name} is missing from the architecture map of doc/developer.rst")


def test_the_map_is_read():
    """The check reads the map, not the whole guide: a module named elsewhere does not count."""
    text = architecture_map()
    assert text.startswith("    sklearn_trellis/\n")
    assert "_core/" in text and "thin estimators" in text
    assert "Adding an energy" not in text
