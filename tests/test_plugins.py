"""Third-party metrics: the registry's rules hold, and a plugin's own tests run the public contract checks.
(A separately installed package joining the results: tests/test_readme_plugin.py, with the package the plugin
guide, docs/plugins.md, prints.)"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from checkout_copy import install_package

from textmetric_bench.api.registry import get_metric, metric, unregister
from textmetric_bench.errors import ConfigError


def test_duplicate_name_from_another_function_is_rejected():
    @metric("tmp_dup_metric", inputs="texts", symmetric=True)
    def first(p, q, *, seed: int = 0) -> float:
        return 0.0

    try:
        with pytest.raises(ValueError, match="already registered"):

            @metric("tmp_dup_metric", inputs="texts", symmetric=True)
            def second(p, q, *, seed: int = 0) -> float:
                return 1.0
    finally:
        unregister("tmp_dup_metric")


@pytest.mark.parametrize(
    "source,problem",
    [
        ("def f(p, q, *, seed=0, **kw): return 0.0", r"\*\*kwargs"),
        ("def f(p, q, *, seed=0, top): return 0.0", "needs a default"),
        ("def f(p, q): return 0.0", "seed"),
        ("def f(p, *, seed=0): return 0.0", "two positional"),
    ],
)
def test_malformed_plugin_signatures_are_rejected(source, problem):
    namespace = {}
    exec(source, namespace)
    with pytest.raises(TypeError, match=problem):
        metric("tmp_bad_metric", inputs="texts", symmetric=True)(namespace["f"])
    unregister("tmp_bad_metric")


def test_unknown_metric_raises_with_suggestions():
    with pytest.raises(ConfigError, match="Did you mean chi"):
        get_metric("chii")


def fake_plugin_function(p, q, *, seed: int = 0) -> float:
    return 0.0


@pytest.mark.parametrize(
    "arguments,problem",
    [
        ({"inputs": "texts"}, "argument 'symmetric' is missing"),
        ({"symmetric": True}, "argument 'inputs' is missing"),
        ({"inputs": "texts", "symmetric": "yes"}, "argument symmetric='yes' is not valid: give True or False"),
        (
            {"inputs": "sentences", "symmetric": True},
            "argument inputs='sentences' is not valid: give 'texts' or 'embeddings'",
        ),
        ({"inputs": "texts", "symmetric": True, "version": 2}, "argument version=2 is not valid: give a str"),
        ({"inputs": "texts", "symmetric": True, "needs": "tokens"}, "argument needs='tokens' is not valid"),
        (
            {"inputs": "texts", "symmetric": True, "symetric": True},
            "unknown argument 'symetric' .did you mean 'symmetric'",
        ),
    ],
)
def test_a_bad_decorator_call_names_the_function_its_module_and_the_argument(arguments, problem):
    with pytest.raises(TypeError) as raised:
        metric("tmp_bad_decorator", **arguments)(fake_plugin_function)
    message = str(raised.value)
    assert "function fake_plugin_function in module test_plugins" in message and "tmp_bad_decorator" in message
    assert re.search(problem, message), message
    with pytest.raises(ConfigError):
        get_metric("tmp_bad_decorator")  # nothing was registered


def test_a_bare_decorator_says_how_to_call_it():
    with pytest.raises(
        TypeError,
        match=r"function fake_plugin_function in module test_plugins .*@metric\('fake_plugin_function', inputs=",
    ):
        metric(fake_plugin_function)


def test_the_plugin_guide_rules_list_every_required_decorator_argument():
    from textmetric_bench import PROJECT_ROOT

    guide = (PROJECT_ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    rules = guide[guide.index("Rules:") : guide.index("## In your own package")]
    for argument in ("name", "inputs", "symmetric"):
        assert f"`{argument}`" in rules


def test_the_example_plugin_runs_the_contract_checks_in_its_own_tests(tmp_path):
    """tests/plugin_example installed apart, and its test file run by pytest from outside this repository."""
    example = Path(__file__).parent / "plugin_example"
    site = install_package(example, tmp_path / "site")
    tests = tmp_path / "plugin-tests"
    tests.mkdir()
    test_file = tests / "test_length_gap_metric.py"
    test_file.write_text((example / test_file.name).read_text(encoding="utf-8"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", str(test_file)],
        cwd=tests,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"\b12 passed\b", proc.stdout), proc.stdout[-2000:]  # 6 checks, synthetic and own corpora


def _write_package(root: Path, helper_body: str) -> None:
    """A plugin package of three modules: ``gapmetrics.metric`` imports ``helpers`` at its top and ``lazy`` in a
    function (relative), and never ``unused``; it imports a package that is not installed only in a function."""
    package = root / "gapmetrics"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(helper_body)
    (package / "lazy.py").write_text("FACTOR = 2.0\n")
    (package / "unused.py").write_text("NOTHING = None\n")
    (package / "metric.py").write_text(
        "from gapmetrics.helpers import gap\n"
        "from textmetric_bench.api.registry import metric\n\n"
        "@metric('gap_test_metric', inputs='texts', symmetric=True)\n"
        "def gap_test_metric(p, q, *, seed=0):\n"
        "    from . import lazy\n"
        "    if seed < 0:\n"
        "        import not_an_installed_package_xyz  # noqa: F401\n"
        "    return lazy.FACTOR * gap(p, q)\n"
    )


def _version_of_fresh_import(root: Path) -> str:
    from textmetric_bench.api.registry import helper_modules

    for name in [m for m in sys.modules if m == "gapmetrics" or m.startswith("gapmetrics.")]:
        del sys.modules[name]
    helper_modules.cache_clear()
    unregister("gap_test_metric")
    import importlib

    importlib.invalidate_caches()
    importlib.import_module("gapmetrics.metric")
    return get_metric("gap_test_metric").version


def test_a_metric_version_digests_the_modules_of_its_package_it_imports(tmp_path, monkeypatch):
    """A change in a helper module the metric imports (at its top or in a function) moves the metric's version;
    a module of the package it does not import does not, and no other package is imported to find out."""
    from textmetric_bench.api.registry import helper_modules

    _write_package(tmp_path, "def gap(p, q):\n    return abs(len(p) - len(q))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        first = _version_of_fresh_import(tmp_path)
        assert [name for name, _ in helper_modules("gapmetrics.metric")] == ["gapmetrics.helpers", "gapmetrics.lazy"]
        assert "not_an_installed_package_xyz" not in sys.modules
        (tmp_path / "gapmetrics" / "unused.py").write_text("NOTHING = 1\n")
        assert _version_of_fresh_import(tmp_path) == first
        _write_package(tmp_path, "def gap(p, q):\n    return abs(len(p) - len(q)) / 2\n")
        moved = _version_of_fresh_import(tmp_path)
        assert moved != first and moved.split("+")[:2] == first.split("+")[:2]
        (tmp_path / "gapmetrics" / "lazy.py").write_text("FACTOR = 3.0\n")
        assert _version_of_fresh_import(tmp_path) != moved
    finally:
        unregister("gap_test_metric")
        helper_modules.cache_clear()


def test_a_metric_module_without_helpers_keeps_the_digest_of_its_source_alone():
    """Metrics that import no module of their own package keep the version they had before helpers counted."""
    import hashlib
    import inspect

    from textmetric_bench.api.registry import helper_modules, load_plugins
    from textmetric_bench.metrics import chi

    load_plugins()
    assert helper_modules(chi.__name__) == ()
    digest = hashlib.sha256(inspect.getsource(chi).encode()).hexdigest()[:10]
    assert get_metric("chi").version.endswith("+" + digest)
    divergences = {name for name, _ in helper_modules(get_metric("cluster_js").module)}
    assert "textmetric_bench.metrics.divergences" in divergences
