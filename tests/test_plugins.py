"""Third-party metrics: a separately installed package joins the results; registry rules hold."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bench import PROJECT_ROOT
from bench.api.registry import get_metric, metric, unregister
from bench.errors import ConfigError

EXAMPLE = Path(__file__).parent / "plugin_example"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    """The example package pip-installed into its own directory, outside this repository."""
    site = tmp_path_factory.mktemp("site")
    source = shutil.copytree(EXAMPLE, tmp_path_factory.mktemp("src") / "plugin")  # keep builds out of the repo
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(source)],
        check=True, cwd=site,
    )
    assert list(site.glob("length_gap_metric-*.dist-info"))
    return site


def test_installed_plugin_metric_appears_in_the_results(plugin_site, tmp_path, cache_dir):
    env = {**os.environ, "PYTHONPATH": str(plugin_site), "BENCH_CACHE_DIR": str(cache_dir)}
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "metrics=[chi,length_gap]", "k=3", "n=12", "repetitions=2",
         "progress=false", f"hydra.run.dir={out}"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    measures = pd.read_csv(out / "measures.csv")
    assert set(measures["metric"]) == {"chi", "length_gap"}
    assert "length_gap" in (out / "table3.md").read_text()


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
