"""Third-party metrics: the registry's rules hold. (A separately installed package joining the
results: tests/test_readme_plugin.py, with the package the README prints.)"""

import pytest

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


@pytest.mark.parametrize("source,problem", [
    ("def f(p, q, *, seed=0, **kw): return 0.0", r"\*\*kwargs"),
    ("def f(p, q, *, seed=0, top): return 0.0", "needs a default"),
    ("def f(p, q): return 0.0", "seed"),
    ("def f(p, *, seed=0): return 0.0", "two positional"),
])
def test_malformed_plugin_signatures_are_rejected(source, problem):
    namespace = {}
    exec(source, namespace)
    with pytest.raises(TypeError, match=problem):
        metric("tmp_bad_metric", inputs="texts", symmetric=True)(namespace["f"])
    unregister("tmp_bad_metric")


def test_unknown_metric_raises_with_suggestions():
    with pytest.raises(ConfigError, match="Did you mean chi"):
        get_metric("chii")
