"""Layer contracts: imports flow one way through bench's subpackages (README "Architecture").

Read on grimp's import graph of the source (imports inside functions count too), so a lazy
import cannot hide a dependency that runs the wrong way.
"""

from __future__ import annotations

import grimp
import pytest

#: bench's layers, top first: a module imports only from its own layer, the layers above it and BASE.
LAYERS = ["bench.api", "bench.data", "bench.features", "bench.collections", "bench.measures", "bench.engine",
          "bench.tasks", "bench.__main__"]
#: Leaf modules every layer may use: the package root (version, paths), the error types, atomic files,
#: the console (logging routes and progress bars).
BASE = {"bench", "bench.errors", "bench.files", "bench.console"}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("bench", "metrics", "reports", cache_dir=None)


def layer_of(module: str) -> int | None:
    for index, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return index
    return None


def test_every_bench_module_belongs_to_a_layer_or_the_base(graph):
    loose = sorted(m for m in graph.modules if m.startswith("bench") and m not in BASE and layer_of(m) is None)
    assert loose == [], f"modules outside every layer (move them into one): {loose}"


def test_base_modules_import_nothing_of_the_layers(graph):
    bad = [(m, i) for m in BASE for i in graph.find_modules_directly_imported_by(m)
           if i.startswith("bench") and i not in BASE]
    assert bad == []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_above_it(graph, layer):
    index = LAYERS.index(layer)
    bad = []
    for module in sorted(m for m in graph.modules if layer_of(m) == index):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith("metrics") or imported.startswith("reports"):
                if index < LAYERS.index("bench.tasks"):
                    bad.append((module, imported))
                continue
            if not imported.startswith("bench") or imported in BASE:
                continue
            if layer_of(imported) > index:
                bad.append((module, imported))
    assert bad == [], f"imports that run against the layer order {LAYERS}: {bad}"


def test_the_plugin_api_imports_nothing_of_the_application(graph):
    outside = sorted({i for m in graph.modules if layer_of(m) == 0 for i in graph.find_modules_directly_imported_by(m)
                      if (i.startswith("bench") and i not in BASE and layer_of(i) != 0) or i.split(".")[0] in
                      ("metrics", "reports")})
    assert outside == []


def test_built_in_metrics_use_only_the_plugin_api(graph):
    """What the built-ins import is what a plugin author can import: bench.api (and the error types)."""
    bad = sorted((m, i) for m in graph.modules if m.split(".")[0] == "metrics"
                 for i in graph.find_modules_directly_imported_by(m)
                 if i.startswith("bench") and not (layer_of(i) == 0 or i == "bench.errors"))
    assert bad == []


def test_reports_read_result_tables_without_the_harness(graph):
    bad = sorted((m, i) for m in graph.modules if m.split(".")[0] == "reports"
                 for i in graph.find_modules_directly_imported_by(m) if i.split(".")[0] in ("bench", "metrics"))
    assert bad == []


def test_no_import_cycle_between_packages(graph):
    packages = ["bench.api", "bench.data", "bench.features", "bench.collections", "bench.measures",
                "bench.engine", "bench.tasks", "metrics", "reports"]
    cycles = [(a, b) for a in packages for b in packages if a < b
              and graph.chain_exists(importer=a, imported=b, as_packages=True)
              and graph.chain_exists(importer=b, imported=a, as_packages=True)]
    assert cycles == []
