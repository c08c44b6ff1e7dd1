"""The plugin package the docs print (docs/plugins.md, "In your own package"), taken literally:
its two code blocks are written to a directory, pip-installed without network into a directory of
their own (the running venv untouched), and run from another directory as a user would."""

import json
import os
import re
import subprocess
import sys
from importlib import metadata

import numpy as np
import pandas as pd
import pytest
from checkout_copy import install_package

from textmetric_bench import PROJECT_ROOT

GUIDE = PROJECT_ROOT / "docs" / "plugins.md"
PART = "## In your own package"
#: A fenced block whose first line is a comment naming its file, e.g. "# pyproject.toml".
FILE_BLOCK = re.compile(r"^```[a-z]*\n(# ([\w.-]+\.(?:toml|py))\n.*?)^```$", re.S | re.M)


def readme_files() -> dict[str, str]:
    """File name -> content of each named block in the plugin guide's "In your own package" part."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(PART) + len(PART)
    end = min(i for i in (text.find("\n## ", start), text.find("\n### ", start), len(text)) if i >= 0)
    return {name: body for body, name in FILE_BLOCK.findall(text[start:end])}


@pytest.fixture(scope="module")
def readme_plugin(tmp_path_factory):
    """(metric name, module name, site directory) of the guide's package, installed into the site directory."""
    files = readme_files()
    assert "pyproject.toml" in files, f"no '# pyproject.toml' block after {PART!r} in {GUIDE}"
    package, site = tmp_path_factory.mktemp("package"), tmp_path_factory.mktemp("site")
    for file, body in files.items():
        (package / file).write_text(body, encoding="utf-8")
    install_package(package, site)
    entry_points = [
        ep
        for dist in metadata.distributions(path=[str(site)])
        for ep in dist.entry_points
        if ep.group == "textmetric_bench.metrics"
    ]
    assert len(entry_points) == 1, f"the installed package declares {entry_points}"
    name, module = entry_points[0].name, entry_points[0].value
    assert set(files) == {"pyproject.toml", f"{module}.py"}, f"blocks of {GUIDE.name}: {sorted(files)}"
    return name, module, site


def user_env(site, cache_dir, mirror_dir) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(PROJECT_ROOT)]),
        "BENCH_CACHE_DIR": str(cache_dir),
        "BENCH_DATA_MIRROR": str(mirror_dir),
    }


def test_the_installed_metric_is_registered(readme_plugin, tmp_path, cache_dir, mirror_dir):
    name, module, site = readme_plugin
    probe = (
        "import json; from textmetric_bench.api.registry import available_metrics, get_metric; "
        f"m = get_metric({name!r}); "
        "print(json.dumps([available_metrics(), m.module, m.params, m.higher_is_more_different]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=user_env(site, cache_dir, mirror_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    names, where, params, distance = json.loads(proc.stdout.splitlines()[-1])
    assert name in names and where == module
    assert params == {"min_count": 1} and distance is False  # the guide's text describes a similarity


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_installed_metric_runs_in_a_ksc_study(readme_plugin, tmp_path, cache_dir, mirror_dir):
    name, _, site = readme_plugin
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "textmetric_bench",
            f"metrics=[{name}]",
            f"metric.{name}.min_count=1",
            "k=3",
            "n=6",
            "repetitions=1",
            "progress=false",
            f"hydra.run.dir={out}",
        ],
        cwd=tmp_path,
        env=user_env(site, cache_dir, mirror_dir),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    distances = pd.read_csv(out / "distances.csv")
    mine = distances[distances["metric"] == name]
    assert len(mine) == 3 and np.isfinite(mine["distance"]).all() and (mine["orientation"] == "similarity").all()
    measures = pd.read_csv(out / "measures.csv")
    assert list(measures["metric"]) == [name] and np.isfinite(measures["A"]).all()
    assert json.loads((out / "run.json").read_text())["orientation"] == {name: "similarity"}
    assert f"| {name} (similarity, negated) |" in (out / "table3.md").read_text()
    assert f"{name} (similarity, negated)" in (out / "report.html").read_text()


def test_the_running_venv_is_untouched(readme_plugin):
    from textmetric_bench.api.registry import available_metrics

    assert readme_plugin[0] not in available_metrics()
