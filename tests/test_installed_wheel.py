"""The installed tool works anywhere: a wheel built from the checkout, installed into a fresh virtual environment,
runs from an empty directory with the configs and cards it ships, and writes its outputs there.

No network: the wheel is built with this venv's setuptools, and the new venv sees this venv's dependencies through
a .pth line. A directory added that way has its own .pth files left unprocessed, so the project's editable install
(a .pth file here) stays off and ``bench`` comes from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from checkout_copy import copy_checkout

from textmetric_bench import PACKAGED_AS, PROJECT_ROOT


def run(cmd: list, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``cmd`` from ``cwd`` as a user starts it: no PYTHONPATH, no mirror, offline, failing with its output."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENCH_DATA_MIRROR")}
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env={**clean, "HF_HUB_OFFLINE": "1", **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the checkout (building writes build/ and *.egg-info into its source)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = copy_checkout(tmp / "source")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--wheel-dir",
            tmp / "dist",
            source,
        ],
        cwd=tmp,
    )
    (built,) = (tmp / "dist").glob("textmetric_bench-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel, with this venv's dependencies visible but not its editable install."""
    root = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", "--without-pip", root], cwd=root)
    python = root / "bin" / "python"
    site = Path(
        run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root).stdout.strip()
    )
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "textmetric_bench_dependencies.pth").write_text("\n".join(ours) + "\n")
    # --ignore-installed: pip sees this venv's editable textmetric-bench through the .pth and must leave it alone
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "--quiet", wheel], cwd=root)
    return root


@pytest.fixture(scope="module")
def ksc_run(venv, tmp_path_factory) -> Path:
    """An empty directory where the installed `textmetric-bench` ran a small KSC study on the fortune pair."""
    here = tmp_path_factory.mktemp("anywhere")
    run(
        [venv / "bin" / "textmetric-bench", "k=3", "n=6", "repetitions=1", "metrics=[chi]", "progress=false"],
        cwd=here,
        BENCH_CACHE_DIR=str(here / ".cache"),
    )
    return here


def test_the_wheel_holds_every_module_config_and_card_of_the_checkout(wheel):
    """A subpackage missing from [tool.setuptools] packages in pyproject.toml would be left out of the wheel."""
    inside = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"textmetric_bench/{p.relative_to(PROJECT_ROOT / 'bench').as_posix()}"
        for p in (PROJECT_ROOT / "bench").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    expected |= {
        f"textmetric_bench/{PACKAGED_AS[top]}/{p.relative_to(PROJECT_ROOT / top).as_posix()}"
        for top in ("metrics", "reports")
        for p in (PROJECT_ROOT / top).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    expected |= {
        f"textmetric_bench/{PACKAGED_AS[top]}/{p.relative_to(PROJECT_ROOT / top).as_posix()}"
        for top in ("conf", "datasets")
        for p in (PROJECT_ROOT / top).rglob("*.yaml")
    }
    expected |= {
        f"textmetric_bench/reports/{p.relative_to(PROJECT_ROOT / 'reports').as_posix()}"
        for folder in ("baselines", "reference")
        for p in (PROJECT_ROOT / "reports" / folder).glob("*.json")
    }
    missing = sorted(expected - inside)
    assert missing == [], f"not in the wheel (add their package to [tool.setuptools] packages): {missing}"
    # exactly one top-level import package: nothing a user's metrics.py, reports/ or bench.py could shadow
    tops = {name.split("/")[0] for name in inside if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"textmetric_bench"}, tops


def test_the_package_is_imported_from_the_wheel_not_the_checkout(venv, tmp_path):
    code = (
        "import textmetric_bench as b, textmetric_bench.metrics as m, textmetric_bench.reports as r; "
        "print(b.IN_CHECKOUT); [print(x.__file__) for x in (b, m, r)]; print(b.shipped_path('conf')); "
        "print(b.shipped_path('datasets')); print(b.shipped_path('reports/reference'))"
    )
    in_checkout, *paths = run([venv / "bin" / "python", "-c", code], cwd=tmp_path).stdout.split()
    assert in_checkout == "False"
    assert all(Path(p).is_relative_to(venv) for p in paths), paths
    assert (Path(paths[-3]) / "config.yaml").is_file() and (Path(paths[-2]) / "pairs").is_dir()
    assert any(Path(paths[-1]).glob("*.json"))


def test_the_installed_command_runs_from_any_directory_and_writes_there(ksc_run, venv):
    (out,) = (ksc_run / "outputs" / "ksc" / "fortune_computing_people").iterdir()
    for name in ("table3.md", "distances.csv", "report.html", ".hydra/config.yaml", "__main__.log"):
        assert (out / name).is_file(), name
    assert "chi" in (out / "table3.md").read_text()
    hydra = yaml.safe_load((out / ".hydra" / "hydra.yaml").read_text())["hydra"]
    sources = [s["path"] for s in hydra["runtime"]["config_sources"] if s["provider"] == "main"]
    assert len(sources) == 1 and Path(sources[0]).is_relative_to(venv), sources  # the wheel's configs


SHADOWS = {
    "metrics.py": "def fid(p, q):\n    return 0.0\n",
    "bench.py": "raise SystemExit('shadowed')\n",
    "reports/__init__.py": "raise ImportError('shadowed')\n",
    "conf/config.yaml": "defaults: []\nk: 99\n",
}


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_files_in_the_working_directory_do_not_shadow_the_installed_harness(ksc_run, venv, tmp_path):
    """A researcher's metrics.py, a reports/ folder, a bench.py and a conf/ beside them change nothing,
    also in the engine's worker processes, and the run exits 0 with the same table as in an empty directory."""
    for name, text in SHADOWS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    run(
        [
            venv / "bin" / "textmetric-bench",
            "k=3",
            "n=6",
            "repetitions=1",
            "metrics=[chi,fid]",
            "progress=false",
            "engine.workers=2",
            "hydra.run.dir=shadowed",
        ],
        cwd=tmp_path,
        BENCH_CACHE_DIR=str(ksc_run / ".cache"),
    )
    (plain,) = (ksc_run / "outputs" / "ksc" / "fortune_computing_people").iterdir()
    ours = pd.read_csv(tmp_path / "shadowed" / "distances.csv", keep_default_na=False)
    assert (ours["error"] == "").all() and set(ours["metric"]) == {"chi", "fid"}
    before = pd.read_csv(plain / "distances.csv", keep_default_na=False)
    chi = lambda frame: frame[frame["metric"] == "chi"].sort_values(["repetition", "i", "j"])["distance"].tolist()  # noqa: E731
    assert chi(ours) == chi(before)


def test_every_task_composes_from_the_installed_configs(venv, tmp_path):
    command = venv / "bin" / "textmetric-bench"
    assert "name: ksc" in run([command, "--cfg", "job"], cwd=tmp_path).stdout
    assert "name: robustness" in run([command, "task=robustness", "--cfg", "job"], cwd=tmp_path).stdout
    code = """if True:
        from omegaconf import OmegaConf
        from textmetric_bench.tasks.config import data_locations
        from textmetric_bench.running.registry import available_tasks, compose_config
        for task in available_tasks():
            cfg = compose_config([f"task={task}"])
            OmegaConf.resolve(cfg)
            print(task, cfg.data.mirror_fallbacks[0], data_locations(cfg)[1], cfg.get("check", {}).get("baseline"))
    """
    lines = run([venv / "bin" / "python", "-c", code], cwd=tmp_path).stdout.splitlines()
    tasks = {line.split()[0]: line.split()[1:] for line in lines}
    assert set(tasks) == {"check", "ifc", "ksc", "perturb", "robustness"}
    assert all(fallback == mirror == "None" for fallback, mirror, _ in tasks.values())  # no mirror beside a venv
    assert Path(tasks["check"][2]).is_file() and Path(tasks["check"][2]).is_relative_to(venv)  # the shipped baseline
    assert list(tmp_path.iterdir()) == []  # composing writes nothing


def test_the_installed_report_commands_read_the_run(ksc_run, venv):
    bin_dir = venv / "bin"
    run([bin_dir / "textmetric-bench-report", "outputs/ksc", "--out", "report"], cwd=ksc_run)
    assert (ksc_run / "report" / "report.html").stat().st_size > 0
    run([bin_dir / "textmetric-bench-aggregate", "outputs/ksc", "--out", "sweep"], cwd=ksc_run)
    assert "chi" in (ksc_run / "sweep" / "sweep_table.md").read_text()


MY_METRIC_SCRIPT = '''
import sys
import textmetric_bench as tb
from textmetric_bench.api import metric


@metric("length_gap", inputs="texts", symmetric=True)
def length_gap(p, q, *, seed=0):
    """Difference of the corpora's mean text lengths: defined in this script's __main__, sent to the workers."""
    return abs(sum(map(len, p)) / len(p) - sum(map(len, q)) / len(q))


if __name__ == "__main__":
    result = tb.evaluate([length_gap, "chi"], k=3, n=6, repetitions=1, progress=False, out_dir=sys.argv[1])
    print(tb.__file__)
    print(result.passed, sorted(result.measures["metric"]))
'''


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_installed_python_api_evaluates_a_metric_of_a_script_as_the_command_line_does(ksc_run, venv, tmp_path):
    """A user's script with its own metric, run by the installed wheel from another directory: the metric is
    evaluated in the worker processes, and the built-in one gets the command line's values on the same setting."""
    from textmetric_bench.session import load_run

    (tmp_path / "mine.py").write_text(MY_METRIC_SCRIPT, encoding="utf-8")
    out = run(
        [venv / "bin" / "python", "mine.py", "api_run"], cwd=tmp_path, BENCH_CACHE_DIR=str(ksc_run / ".cache")
    ).stdout.splitlines()
    assert Path(out[0]).is_relative_to(venv), out  # the wheel's package, not the checkout's
    assert out[1] == "True ['chi', 'length_gap']"
    (cli_dir,) = (ksc_run / "outputs" / "ksc" / "fortune_computing_people").iterdir()
    api, cli = load_run(tmp_path / "api_run"), load_run(cli_dir)
    chi = [
        frame[frame["metric"] == "chi"].drop(columns=["T", "source"], errors="ignore").reset_index(drop=True)
        for frame in (api.measures, cli.measures)
    ]
    pd.testing.assert_frame_equal(*chi)


def test_the_installed_suites_compose_and_the_suite_report_reads_runs(ksc_run, venv):
    command = venv / "bin" / "textmetric-bench"
    for suite in ("paper", "all"):
        assert f"name: {suite}" in run([command, f"suite={suite}", "--cfg", "job"], cwd=ksc_run).stdout
    run([venv / "bin" / "textmetric-bench-suite-report", "outputs/ksc"], cwd=ksc_run)
    assert (ksc_run / "outputs" / "ksc" / "card_chi.png").stat().st_size > 0
    assert "chi" in (ksc_run / "outputs" / "ksc" / "metric_catalogue.csv").read_text()
