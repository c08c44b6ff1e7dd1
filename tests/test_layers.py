"""Layer contracts: imports flow one way through bench's subpackages (docs/development.md, "Architecture").

Read on grimp's import graph of the source (imports inside functions count too), so a lazy
import cannot hide a dependency that runs the wrong way.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import tomllib
from contextlib import contextmanager
from pathlib import Path

import grimp
import pytest
from checkout_copy import installed_layout

from textmetric_bench import PROJECT_ROOT

#: bench's layers, top first: a module imports only from its own layer, the layers above it and BASE.
PACKAGE = "textmetric_bench"
METRICS, REPORTS, MEASURES = f"{PACKAGE}.metrics", f"{PACKAGE}.reports", f"{PACKAGE}.measures"
#: ``session`` is the Python API (``textmetric_bench.evaluate``): it runs tasks and reads their tables back, as
#: ``__main__`` does for the command line, so it sits above the tasks, beside the command line.
LAYERS = [
    f"{PACKAGE}.{layer}"
    for layer in (
        "api",
        "data",
        "features",
        "collections",
        "measures",
        "engine",
        "tasks",
        "running",
        "session",
        "__main__",
    )
]
#: Leaf modules every layer may use: the package root (version, paths), the error types, atomic files,
#: the console (logging routes and progress bars), typed settings.
BASE = {
    PACKAGE,
    "textmetric_bench.errors",
    "textmetric_bench.files",
    "textmetric_bench.console",
    "textmetric_bench.numerics",
    "textmetric_bench.settings",
}


#: The package root re-exports the Python API for ``textmetric_bench.evaluate(...)``: imported inside its module
#: ``__getattr__`` on first use, never at ``import textmetric_bench``
#: (tests/test_session.py::test_importing_the_package_stays_cheap), so it is no import of the base.
ROOT_EXPORTS = {(PACKAGE, f"{PACKAGE}.session")}


@contextmanager
def package_found_at(directory: Path):
    """grimp finds the package through importlib: point it at ``directory`` while the graph is built."""
    loaded = sys.modules.pop(PACKAGE)
    sys.path.insert(0, str(directory))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(directory))
        sys.modules[PACKAGE] = loaded


#: Strings of the package that name a module of it without importing it, and why.
NAMED_NOT_IMPORTED = {
    (
        "textmetric_bench.api.registry",
        "textmetric_bench.metrics",
    ): "the plugin group is named after the built-in package, and a metric's module tells a built-in from a plugin; "
    "the built-ins are imported through their entry point (pyproject.toml), as a plugin is",
}
#: How a module of the package is named in a string: "textmetric_bench.x.y", or "textmetric_bench.x.y:attribute"
#: (import_module, a forkserver's preload and ``python -m`` take such names).
MODULE_NAME = re.compile(rf"{PACKAGE}(\.[A-Za-z_]\w*)+(:[\w.]+)?")


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    """The package as the wheel lays it out (metrics/ and reports/ inside it)."""
    return installed_layout(PROJECT_ROOT, tmp_path_factory.mktemp("layout"))


@pytest.fixture(scope="module")
def graph(layout) -> grimp.ImportGraph:
    """The import graph of the package, with the imports by string added (imports_by_string)."""
    with package_found_at(layout):
        graph = grimp.build_graph(PACKAGE, cache_dir=None)
    for importer, imported in sorted(imports_by_string(layout).keys() - NAMED_NOT_IMPORTED.keys()):
        graph.add_import(importer=importer, imported=imported)
    for importer, imported in ROOT_EXPORTS:
        assert imported in graph.find_modules_directly_imported_by(importer), f"stale ROOT_EXPORTS: {imported}"
        graph.remove_import(importer=importer, imported=imported)
    return graph


def modules_of(root: Path):
    """(module name, path) of every module of the package under ``root``."""
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def is_module(root: Path, name: str) -> bool:
    """Whether ``name`` is a module or package of the layout under ``root``."""
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_by_string(root: Path) -> dict[tuple[str, str], str]:
    """(module, named module) -> the string, for every string constant of a module under ``root`` that names another
    module of the package: an import that no import statement shows, so the layer tests see it as an edge."""
    found = {}
    for module, path in modules_of(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.fullmatch(node.value):
                named = node.value.partition(":")[0]
                if is_module(root, named) and named != module:
                    found[(module, named)] = node.value
    return found


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def harness(module: str) -> bool:
    """A module of the harness proper: the package, but not its built-in metrics or its reports."""
    return in_package(module, PACKAGE) and not in_package(module, METRICS) and not in_package(module, REPORTS)


def layer_of(module: str) -> int | None:
    for index, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return index
    return None


def test_every_bench_module_belongs_to_a_layer_or_the_base(graph):
    loose = sorted(m for m in graph.modules if harness(m) and m not in BASE and layer_of(m) is None)
    assert loose == [], f"modules outside every layer (move them into one): {loose}"


def test_base_modules_import_nothing_of_the_layers(graph):
    bad = [(m, i) for m in BASE for i in graph.find_modules_directly_imported_by(m) if harness(i) and i not in BASE]
    assert bad == []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_above_it(graph, layer):
    index = LAYERS.index(layer)
    bad = []
    for module in sorted(m for m in graph.modules if layer_of(m) == index):
        for imported in graph.find_modules_directly_imported_by(module):
            if in_package(imported, METRICS) or in_package(imported, REPORTS):
                if index < LAYERS.index("textmetric_bench.tasks"):
                    bad.append((module, imported))
                continue
            if not harness(imported) or imported in BASE:
                continue
            if layer_of(imported) > index:
                bad.append((module, imported))
    assert bad == [], f"imports that run against the layer order {LAYERS}: {bad}"


def test_the_plugin_api_imports_nothing_of_the_application(graph):
    outside = sorted(
        {
            i
            for m in graph.modules
            if layer_of(m) == 0
            for i in graph.find_modules_directly_imported_by(m)
            if (harness(i) and i not in BASE and layer_of(i) != 0) or in_package(i, METRICS) or in_package(i, REPORTS)
        }
    )
    assert outside == []


def test_built_in_metrics_use_only_the_plugin_api(graph):
    """What the built-ins import is what a plugin author can import: textmetric_bench.api (and the error types)."""
    bad = sorted(
        (m, i)
        for m in graph.modules
        if in_package(m, METRICS)
        for i in graph.find_modules_directly_imported_by(m)
        if harness(i) and not (layer_of(i) == 0 or i == "textmetric_bench.errors")
    )
    assert bad == []


def pure_statistics(graph) -> set[str]:
    """The modules of textmetric_bench.measures whose imports, followed all the way, stay inside measures or outside
    the package: statistics on tables (intervals, summaries, paired tests)."""
    return {
        m
        for m in graph.modules
        if in_package(m, MEASURES)
        and m != MEASURES
        and all(in_package(d, MEASURES) or not harness(d) for d in graph.find_upstream_modules(m))
    }


def test_reports_read_result_tables_without_the_harness(graph):
    """Reports import nothing of the harness but its pure statistics. The numbers a task needs (intervals, summaries,
    paired tests) live below the tasks, in measures; reports show the same numbers, so they import those modules
    rather than keep a copy, and no more: a report never needs a corpus, a model or the engine."""
    allowed = pure_statistics(graph)
    bad = sorted(
        (m, i)
        for m in graph.modules
        if in_package(m, REPORTS)
        for i in graph.find_modules_directly_imported_by(m)
        if (harness(i) and i not in allowed) or in_package(i, METRICS)
    )
    assert bad == []
    # importing a module of measures runs measures/__init__.py first: it must not pull the harness in
    assert [i for i in graph.find_modules_directly_imported_by(MEASURES) if harness(i)] == []


def test_no_import_cycle_between_packages(graph):
    packages = [
        "textmetric_bench.api",
        "textmetric_bench.data",
        "textmetric_bench.features",
        "textmetric_bench.collections",
        "textmetric_bench.measures",
        "textmetric_bench.engine",
        "textmetric_bench.tasks",
        METRICS,
        REPORTS,
    ]
    cycles = [
        (a, b)
        for a in packages
        for b in packages
        if a < b
        and graph.chain_exists(importer=a, imported=b, as_packages=True)
        and graph.chain_exists(importer=b, imported=a, as_packages=True)
    ]
    assert cycles == []


def test_no_import_circle_between_modules(graph):
    """No module imports another that imports it back, directly or through others (imports inside functions
    count): each module can be read after the modules it imports."""
    circles = sorted(
        {
            tuple(sorted((module, imported)))
            for module in graph.modules
            for imported in graph.find_modules_directly_imported_by(module)
            if graph.find_shortest_chain(importer=imported, imported=module)
        }
    )
    assert circles == [], f"modules in an import circle: {circles}"


def private_imports(root: Path) -> list[tuple[str, str]]:
    """(module, name) for every name starting with ``_`` that a module of the package under ``root`` takes from
    another module of it: by ``from ... import _name``, or as ``module._name`` of a module it imported."""
    found = []
    for module, path in modules_of(root):
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()  # local names bound to a module of the package
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if in_package(alias.name, PACKAGE):
                        modules.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                source = (
                    (node.module or "")
                    if not node.level
                    else ".".join(
                        [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [node.module])]
                    )
                )
                if not in_package(source, PACKAGE):
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.endswith("__"):
                        found.append((module, f"{source}.{alias.name}"))
                    elif is_module(root, f"{source}.{alias.name}"):
                        modules.add(alias.asname or alias.name)
        found += [
            (module, f"{node.value.id}.{node.attr}")
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.endswith("__")
        ]
    return sorted(set(found))


def test_no_private_name_crosses_modules(layout):
    """A name starting with ``_`` is its module's own: another module that needs it needs a public name."""
    assert private_imports(layout) == []


def test_the_layer_tests_see_the_imports_by_string(layout, graph):
    """Every module named in a string is an edge of the graph the layer tests read, unless NAMED_NOT_IMPORTED says
    why it is only a name (an entry there that no longer matches a string fails too)."""
    named = imports_by_string(layout)
    assert NAMED_NOT_IMPORTED.keys() <= named.keys(), "stale entries in NAMED_NOT_IMPORTED"
    unseen = [
        pair
        for pair in named.keys() - NAMED_NOT_IMPORTED.keys()
        if pair[1] not in graph.find_modules_directly_imported_by(pair[0])
    ]
    assert unseen == []


def test_every_entry_point_names_a_module_and_function_that_exist(layout):
    """The console scripts and the entry points (the built-in metrics, the LM scorer) of pyproject.toml, checked in
    the layout of the wheel: a module moved or renamed without them fails here, not in a user's installation."""
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    targets = [*project["scripts"].values(), *(v for group in project["entry-points"].values() for v in group.values())]
    missing = []
    for target in targets:
        module, _, attribute = target.partition(":")
        if not is_module(layout, module):
            missing.append(target)
        elif attribute:
            path = layout.joinpath(*module.split("."))
            source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text(encoding="utf-8")
            defined = {n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            if attribute not in defined:
                missing.append(target)
    assert missing == [], f"entry points of pyproject.toml naming nothing: {missing}"
