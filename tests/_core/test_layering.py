"""The package's imports flow one way: _core -> models -> engines -> estimators.

Every ``import`` in every module (including imports inside functions, which
would otherwise hide a cycle) is resolved to the module it names; an import of
a lower layer is fine, of a higher layer is a failure, and so is any cycle.

Private names stay in their package. A name starting with one underscore (a
module ``_x`` or a name ``_x`` defined in a module) belongs to the package
(directory) that contains it, and only modules of that package or of its
subpackages may import it. So ``engines/sparse/sparse_flat.py`` may import
``engines/sparse/_sparse_flat_kernels``, ``engines/bhc/posterior.py`` may not;
``models/dasgupta.py`` may import a private name of ``models/correlation.py``,
an engine may not; and every module may import ``_core`` (a private package of
the package root), while the estimators (private modules of the root) import
only public names of ``models`` and ``engines``. What another package needs is
made public (a public module, a public name, or a re-export in its
``__init__``).
"""

import ast
import functools
from pathlib import Path

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


def home_package(module, path):
    """The package (directory) a module belongs to."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


@functools.lru_cache(maxsize=None)
def _import_nodes(text, filename):
    """The import statements of a source text (parsed once for all the tests)."""
    return tuple(node for node in ast.walk(ast.parse(text, filename=filename))
                 if isinstance(node, (ast.Import, ast.ImportFrom)))


def imports(module, path):
    """``(line, dotted name)`` of every package name ``module`` imports, anywhere in its body.

    ``import a.b`` gives ``a.b``; ``from a import b`` gives ``a.b`` (a submodule
    or a name defined in ``a``); relative imports are resolved.
    """
    base = home_package(module, path).split(".")
    for node in _import_nodes(path.read_text(), str(path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module
            names = [f"{target}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "sklearn_trellis":
                yield node.lineno, name


def imported_modules(module, path, known):
    """Package modules that ``module`` imports, anywhere in its body."""
    found = set()
    for _, name in imports(module, path):
        # "from package import submodule" imports the submodule,
        # "from module import name" the module
        found.add(name if name in known else name.rpartition(".")[0])
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



def is_private(part):
    return part.startswith("_") and not part.startswith("__")


def private_owner(name, packages):
    """The package a private dotted name belongs to, or None if the name is public.

    The first private part of ``name`` decides: a private module or name
    belongs to the package (directory) that contains it.
    """
    parts = name.split(".")
    for k, part in enumerate(parts):
        if is_private(part):
            owner = ".".join(parts[:k])
            while owner not in packages:  # a private name of a module: its module's package
                owner = owner.rpartition(".")[0]
            return owner
    return None


def cross_package_private_imports(module, path, packages):
    """``(line, name)`` of each private name ``module`` imports from outside its package."""
    here = home_package(module, path)
    for line, name in imports(module, path):
        owner = private_owner(name, packages)
        if owner is not None and here != owner and not here.startswith(owner + "."):
            yield line, name


def package_packages(modules):
    return {name for name, path in modules.items() if path.name == "__init__.py"}


def all_cross_package_private_imports():
    modules = package_modules()
    packages = package_packages(modules)
    return [(path.relative_to(PACKAGE).as_posix(), line, name.removeprefix("sklearn_trellis."))
            for module, path in sorted(modules.items())
            for line, name in cross_package_private_imports(module, path, packages)]


def test_no_cross_package_private_import():
    found = all_cross_package_private_imports()
    assert not found, ("private names imported from outside their package (make them public "
                       "in the owning package):\n"
                       + "\n".join(f"sklearn_trellis/{path}:{line}: imports sklearn_trellis.{name}"
                                    for path, line, name in found))


def test_private_rule(tmp_path):
    """Which private imports the rule refuses: outside the owning package only."""
    packages = {"sklearn_trellis", "sklearn_trellis._core", "sklearn_trellis.models",
                "sklearn_trellis.engines", "sklearn_trellis.engines.sparse",
                "sklearn_trellis.engines.bhc"}
    source = ("from ..._core.subsets import popcount\n"          # private package of the root
              "from ..sparse._sparse_flat_kernels import tree_inside\n"   # refused
              "from ...models.correlation import _helper\n"     # refused
              "from .._split_potential import split\n"          # parent package's private module
              "def f():\n"
              "    import sklearn_trellis.engines.sparse._nn_chain\n")  # refused, hidden
    path = tmp_path / "posterior.py"
    path.write_text(source)
    found = list(cross_package_private_imports("sklearn_trellis.engines.bhc.posterior",
                                               path, packages))
    assert found == [(2, "sklearn_trellis.engines.sparse._sparse_flat_kernels.tree_inside"),
                     (3, "sklearn_trellis.models.correlation._helper"),
                     (6, "sklearn_trellis.engines.sparse._nn_chain")]
    sibling = tmp_path / "dasgupta.py"
    sibling.write_text("from .correlation import _helper\nfrom ._flat import FlatModel\n")
    assert not list(cross_package_private_imports("sklearn_trellis.models.dasgupta",
                                                  sibling, packages))
    estimator = tmp_path / "_estimator.py"
    estimator.write_text("from .engines.sparse import SparseFlatTrellis\n"
                         "from ._core.labels import first_appearance_labels\n"
                         "from .engines.sparse._nn_chain import nn_chain\n")
    assert list(cross_package_private_imports("sklearn_trellis._estimator", estimator,
                                              packages)) == [
        (3, "sklearn_trellis.engines.sparse._nn_chain.nn_chain")]
