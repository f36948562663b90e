"""The package's imports flow one way: _core -> models -> engines -> estimators.

Every ``import`` in every module (including imports inside functions, which
would otherwise hide a cycle) is resolved to the module it names; an import of
a lower layer is fine, of a higher layer is a failure, and so is any cycle.
"""

import ast
import os
from pathlib import Path

import pytest

import sklearn_trellis

PACKAGE = Path(sklearn_trellis.__file__).parent

#: Layer of each top-level part of the package (estimators are the private
#: top-level modules, plus ``plotting`` and the package root).
LAYERS = {
    "_core": 0,
    "summaries": 1,
    "datasets": 1,
    "preprocessing": 1,
    "models": 2,
    "engines": 3,
}
ESTIMATOR_LAYER = 4

def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_modules():
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        if "__pycache__" not in path.parts:
            modules[module_name(path)] = path
    return modules


def layer(module):
    parts = module.split(".")
    if len(parts) == 1:
        return ESTIMATOR_LAYER  # sklearn_trellis/__init__.py
    return LAYERS.get(parts[1], ESTIMATOR_LAYER)


def imported_modules(module, path, known):
    """Package modules that ``module`` imports, anywhere in its body."""
    is_package = path.name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module
            # "from package import submodule" imports the submodule
            names = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target
                     for alias in node.names]
        else:
            continue
        found.update(name for name in names if name.split(".")[0] == "sklearn_trellis")
    found.discard(module)
    return found


def import_graph():
    modules = package_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def test_every_layer_is_known():
    top_level = {name.split(".")[1] for name in package_modules() if "." in name}
    unknown = {part for part in top_level
               if part not in LAYERS and not (PACKAGE / f"{part}.py").exists()}
    assert not unknown, f"sub-packages without a layer: {sorted(unknown)}"


def test_no_upward_import():
    upward = sorted(f"{importer} (layer {layer(importer)}) imports {target} (layer {layer(target)})"
                    for importer, targets in import_graph().items()
                    for target in targets if layer(target) > layer(importer))
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_summaries_depend_only_on_core():
    graph = import_graph()
    bad = sorted(f"{m} imports {t}" for m, ts in graph.items() if m.startswith("sklearn_trellis.summaries")
                 for t in ts if not t.startswith(("sklearn_trellis._core", "sklearn_trellis.summaries")))
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    graph = import_graph()
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_violations(tmp_path):
    """The parser resolves relative imports, function-local imports and submodules."""
    source = ("from ..engines.exact import flat\n"
              "def f():\n    from ...sklearn_trellis import engines\n")
    path = tmp_path / "mod.py"
    path.write_text(source)
    known = {"sklearn_trellis.engines.exact.flat"}
    found = imported_modules("sklearn_trellis.models.mod", path, known)
    assert "sklearn_trellis.engines.exact.flat" in found
    assert layer("sklearn_trellis.engines.exact.flat") > layer("sklearn_trellis.models.mod")
