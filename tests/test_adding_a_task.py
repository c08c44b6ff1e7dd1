"""Adding a task from the guide alone: docs/tasks.md's example file, dropped into a copy of the checkout, is a task
the command line runs, sweeps, checks and lists, with nothing else changed."""

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
from checkout_copy import copy_checkout, installed_layout, installed_metadata

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.running.registry import available_tasks, compose_config, settings_markdown
from textmetric_bench.tasks.settings import config_node, read_settings
from textmetric_bench.running.validate import validate_config

GUIDE = PROJECT_ROOT / "docs" / "tasks.md"


def guide_task_file() -> tuple[str, str]:
    """(path, code) of the one code block of docs/tasks.md that names a file."""
    ((path, code),) = re.findall(r'```python title="([^"]+)"\n(.*?)```', GUIDE.read_text(encoding="utf-8"), re.S)
    return path, code


def guide_entry_point() -> tuple[str, str]:
    """(group header, entry line) of the guide's one toml block."""
    ((block,),) = [re.findall(r"```toml\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)]
    header, entry = block.strip().splitlines()
    return header, entry


def with_guide_task(copy) -> None:
    """docs/tasks.md followed in the checkout copy ``copy``: its one new file and its entry-point line."""
    path, code = guide_task_file()
    assert path == "bench/tasks/halves.py"
    (copy / path).write_text(code)
    group, entry = guide_entry_point()
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text()
    assert group in text
    pyproject.write_text(text.replace(group, f"{group}\n{entry}", 1))  # the guide's line, under its group


@pytest.fixture(scope="module")
def checkout_with_toy_task(tmp_path_factory):
    base = tmp_path_factory.mktemp("toy_task")
    copy = copy_checkout(base / "checkout")
    with_guide_task(copy)
    layout = installed_layout(copy, base / "importable")
    installed_metadata(copy, layout)  # what installing the copy again writes (make venv, pip install -e .)
    return copy, layout


def cli(checkout, importable, cache_dir, *args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(importable), "BENCH_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-m", "textmetric_bench", *args],
        cwd=cwd or checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_guides_task_runs_from_one_new_file(checkout_with_toy_task, tmp_path, cache_dir):
    checkout, importable = checkout_with_toy_task
    out = tmp_path / "run"
    proc = cli(
        checkout,
        importable,
        cache_dir,
        "task=halves",
        "metrics=[fid]",
        "n=40",
        "repetitions=2",
        "progress=false",
        f"hydra.run.dir={out}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    measures = pd.read_csv(out / "measures.csv")
    assert list(measures["repetition"]) == [0, 1]
    assert (measures["separated"] == 1.0).all()  # fortune cookies are closer to fortune cookies than to computing
    distances = pd.read_csv(out / "distances.csv")
    assert sorted(distances["sample"].unique()) == ["other", "same"] and len(distances) == 4
    assert "separated A from B in 100% of the repetitions" in proc.stdout  # its printed file
    run = json.loads((out / "run.json").read_text())
    assert run["task"] == "halves" and run["n"] == 40


def test_the_guides_task_refuses_a_bad_setting_in_one_line(checkout_with_toy_task, tmp_path, cache_dir):
    checkout, importable = checkout_with_toy_task
    proc = cli(checkout, importable, cache_dir, "task=halves", "n=1", f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: n=1 is not valid: give a whole number >= 2, e.g. n=50"]


def test_the_guides_task_is_listed_with_its_settings(checkout_with_toy_task, cache_dir):
    checkout, importable = checkout_with_toy_task
    env = {**os.environ, "PYTHONPATH": str(importable)}
    listed = subprocess.run(
        [sys.executable, "-m", "textmetric_bench.running.registry"],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "halves: Halves: d(A1, A2)" in listed and "ksc: Known-Similarity Corpora" in listed
    shown = cli(checkout, importable, cache_dir, "task=halves", "--cfg", "job").stdout
    assert "'n': 50" in shown and "repetitions: 3" in shown and "name: halves" in shown


# --- the shipped tasks -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(available_tasks()))
def test_every_task_composes_to_its_settings_defaults(name, tmp_path):
    """The Hydra option task=<name> is the settings' defaults, read back into the same typed values."""
    task = available_tasks()[name]
    cfg = compose_config([f"task={name}", f"data.cache_dir={tmp_path / 'cache'}"])
    settings, problems, _ = read_settings(task.settings, cfg)
    assert problems == [] and settings == validate_config(cfg, tmp_path / "run").settings
    assert cfg.task.name == name == config_node(name, task.settings)["task"]["name"]


def test_the_generated_settings_reference_is_todays():
    shipped = (PROJECT_ROOT / "docs" / "generated" / "tasks.md").read_text(encoding="utf-8")
    assert shipped == settings_markdown() + "\n", "run `python -m textmetric_bench.running.registry --docs`"


def test_the_registrys_imports_by_name_are_the_task_modules_and_none_imports_it_back(tmp_path):
    """The registry imports the task modules by name, which the import graph cannot see: those must be exactly the
    modules declaring a task, and none of them may reach the registry, directly or through others."""
    import grimp
    from test_layers import PACKAGE, ROOT_EXPORTS, package_found_at

    from textmetric_bench.running.registry import task_modules

    layout = installed_layout(PROJECT_ROOT, tmp_path / "layout")
    with package_found_at(layout):
        graph = grimp.build_graph(PACKAGE, cache_dir=None)
    for importer, imported in ROOT_EXPORTS:  # the root's lazy re-export of the Python API, never run at import
        graph.remove_import(importer=importer, imported=imported)
    registry = "textmetric_bench.running.registry"
    declared = {
        m
        for m in graph.modules
        if m.startswith("textmetric_bench.tasks.")
        and re.search(
            r"^class \w+\(\s*(\w+,\s*)*\w*Task\b[^)]*name=",  # the header on one line or several
            (layout / (m.replace(".", "/") + ".py")).read_text(encoding="utf-8"),
            re.M,
        )
    }
    assert (
        set(task_modules())
        == declared
        == {f"textmetric_bench.tasks.{t}" for t in ("check", "ifc", "ksc", "perturb", "robustness")}
    )
    assert [m for m in declared if graph.find_shortest_chain(importer=m, imported=registry)] == []


def test_a_task_plugin_that_fails_to_import_is_left_out_with_its_error(tmp_path):
    """A fake task plugin: an installed package's entry in the task group whose module raises at import. The built-in
    tasks are still listed, and the warning names the entry, its module and the error."""
    site = tmp_path / "site"
    info = site / "fake_broken_task-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-broken-task\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[textmetric_bench.tasks]\nbroken = fake_broken_task\n")
    (site / "fake_broken_task.py").write_text('raise RuntimeError("fake task plugin broken at import")\n')
    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench.running.registry"],
        env={**os.environ, "PYTHONPATH": str(site)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ksc: Known-Similarity Corpora" in proc.stdout and "broken" not in proc.stdout
    assert "task plugin broken (fake_broken_task) failed to import" in proc.stderr
    assert "fake task plugin broken at import" in proc.stderr
