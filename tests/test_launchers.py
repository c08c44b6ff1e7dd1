"""Sweeps through Hydra's launchers give the same tables as the basic one (issue: scaling out).

The same small KSC sweep (embedded pair, k = 3 and 4, n = 12, CHI and FID) runs with the basic
launcher, joblib, submitit's local executor, a Ray cluster the launcher starts, and a Ray cluster
started beforehand by ``ray start --head`` on loopback; every launcher must write identical
distance and measure tables (timings aside). Each sweep is a real subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.tasks.config import CONF_DIR
from textmetric_bench.running.registry import compose_config

SWEEP = ["k=3,4", "n=12", "repetitions=1", "metrics=[chi,fid]", "progress=false"]
LAUNCHERS = sorted(p.stem for p in (CONF_DIR / "hydra" / "launcher").glob("*.yaml"))


def plugin_available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


needs_ray = pytest.mark.skipif(
    not plugin_available("hydra_plugins.hydra_ray_launcher"), reason="pip install 'textmetric-bench[ray]'"
)
needs_submitit = pytest.mark.skipif(
    not plugin_available("hydra_plugins.hydra_submitit_launcher"), reason="pip install 'textmetric-bench[slurm]'"
)
needs_joblib = pytest.mark.skipif(
    not plugin_available("hydra_plugins.hydra_joblib_launcher"), reason="pip install hydra-joblib-launcher"
)


def sweep(launcher: str, out: Path, cache_dir: Path, *extra: str, env: dict | None = None, timeout=600):
    """Run the sweep with ``hydra/launcher=<launcher>`` into ``out``; return the finished process."""
    full_env = {
        **os.environ,
        "BENCH_CACHE_DIR": str(cache_dir),
        "RAY_USAGE_STATS_ENABLED": "0",
        "BENCH_RAY_CPUS": "2",
        **(env or {}),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "textmetric_bench",
            "-m",
            f"hydra/launcher={launcher}",
            *SWEEP,
            *extra,
            f"hydra.sweep.dir={out}",
        ],
        cwd=PROJECT_ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tables(out: Path) -> dict[int, tuple[pd.DataFrame, pd.DataFrame]]:
    """Per job number: (distances, measures) without the timing columns."""
    found = {}
    for job in (0, 1):
        info = json.loads((out / str(job) / "run.json").read_text())
        assert info["k"] == 3 + job  # the sweeper numbers jobs in override order
        d = pd.read_csv(out / str(job) / "distances.csv", keep_default_na=False).drop(columns="seconds")
        m = pd.read_csv(out / str(job) / "measures.csv").drop(columns="T")
        found[job] = (d, m)
    return found


def assert_same_tables(out: Path, reference: dict) -> None:
    for job, (d, m) in tables(out).items():
        assert (d["error"] == "").all(), d["error"].unique()
        pd.testing.assert_frame_equal(d, reference[job][0], check_exact=True)
        pd.testing.assert_frame_equal(m, reference[job][1], check_exact=True)


@pytest.fixture(scope="module")
def basic_tables(tmp_path_factory, cache_dir):
    out = tmp_path_factory.mktemp("basic")
    proc = sweep("basic", out, cache_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tables(out)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_every_launcher_config_composes_on_its_plugin(launcher):
    if not plugin_available(
        "hydra_plugins.hydra_ray_launcher" if launcher.startswith("ray") else "hydra_plugins.hydra_submitit_launcher"
    ):
        pytest.skip("launcher plugin not installed")
    cfg = compose_config([f"hydra/launcher={launcher}"], return_hydra_config=True)
    target = cfg.hydra.launcher._target_
    if launcher.startswith("ray"):
        assert target.endswith("RayLauncher") and "address" in cfg.hydra.launcher.ray.init
    else:
        assert target.endswith("SlurmLauncher") and cfg.hydra.launcher.timeout_min > 0
    assert cfg.task.name == "ksc"  # the app's own config is untouched


@pytest.mark.parametrize(
    "launcher",
    [
        pytest.param("joblib", marks=needs_joblib),
        pytest.param("submitit_local", marks=needs_submitit),
        pytest.param("ray_local", marks=needs_ray),
    ],
)
@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_sweep_gives_the_same_tables_on_every_launcher(launcher, basic_tables, tmp_path, cache_dir):
    extra = ["hydra.launcher.n_jobs=2"] if launcher == "joblib" else []
    proc = sweep(launcher, tmp_path, cache_dir, *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_tables(tmp_path, basic_tables)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # ~30-60 s: in `make test-slow`, keeping the default suite under 15 min
@needs_ray
def test_a_sweep_runs_on_a_ray_cluster_started_beforehand(basic_tables, tmp_path, cache_dir):
    """``ray start --head`` on loopback, then ``hydra/launcher=ray_cluster`` with RAY_ADDRESS."""
    port = free_port()
    # Ray >= 2.5x starts clusters with token authentication; a per-test token keeps ~/.ray untouched.
    auth = {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
        "RAY_USAGE_STATS_ENABLED": "0",
        "BENCH_CACHE_DIR": str(cache_dir),
    }
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    ray_bin = Path(sys.executable).with_name("ray")
    log = tmp_path / "ray_head.log"
    with open(log, "w") as sink:
        head = subprocess.Popen(
            [
                str(ray_bin),
                "start",
                "--head",
                "--block",
                f"--port={port}",
                "--node-ip-address=127.0.0.1",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={temp_dir}",
                f"--ray-client-server-port={free_port()}",
                f"--dashboard-agent-listen-port={free_port()}",
            ],
            cwd=PROJECT_ROOT,
            env={**os.environ, **auth},
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while "--block" not in log.read_text() and head.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)  # ray start prints "--block" once every process of the head is up
        assert head.poll() is None, log.read_text()[-3000:]
        proc = sweep("ray_cluster", tmp_path / "sweep", cache_dir, env={**auth, "RAY_ADDRESS": f"127.0.0.1:{port}"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert_same_tables(tmp_path / "sweep", basic_tables)
    finally:
        # Stop only the cluster this test started (its own session), never `ray stop` (every cluster).
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        head.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)
