"""End-to-end runs of the Hydra app as a user starts it (subprocess, real model, real corpora)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.api.registry import default_metrics

PAPER_METRICS = ["chi", "classifier", "dc", "fid", "irpr", "mauve", "pr", "zipf"]  # 004 §2


def run_bench(*args, cache_dir, mirror=None, timeout=900):
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache_dir)}
    if mirror is not None:
        env["BENCH_DATA_MIRROR"] = str(mirror)
    return subprocess.run(
        [sys.executable, "-m", "textmetric_bench", *args, "progress=false"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def console_columns(text: str) -> list[str]:
    """The column names after ``metric`` of the first table a run printed on the console as plain aligned text,
    read across the blocks a table wider than the terminal is split into: each block's header starts with metric,
    and one blank line parts the blocks."""
    lines, names = text.splitlines(), []
    i = next((i for i, line in enumerate(lines) if re.match(r"metric +\S", line)), len(lines))
    while i < len(lines) and re.match(r"metric +\S", lines[i]):
        names += lines[i].split()[1:]
        while i < len(lines) and lines[i]:  # the header, its rule and its rows
            i += 1
        i += 1  # the blank line after the block
    return names


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_embedded_pair_run_writes_every_output_and_reruns_identically(tmp_path, cache_dir):
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        proc = run_bench(
            "k=4", "n=20", "repetitions=2", "metrics=[chi,fid]", f"hydra.run.dir={out}", cache_dir=cache_dir
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        # the console shows Table 3 as plain text: the markdown page's bold and no HTML tag
        assert "metric " in proc.stdout and "**" not in proc.stdout and "<sup" not in proc.stdout, proc.stdout[-2000:]
    for name in (
        "distances.csv",
        "measures.csv",
        "table3.md",
        "table3.csv",
        "radar.png",
        "radar.svg",
        "scatter_fid.png",
        "scatter_chi.png",
        "run.json",
        ".hydra/config.yaml",
    ):
        assert (first / name).stat().st_size > 0, name
    distances = pd.read_csv(first / "distances.csv", keep_default_na=False)
    assert len(distances) == 2 * 2 * 6 and set(distances["metric"]) == {"chi", "fid"}
    assert (distances["ell"] == distances["j"] - distances["i"]).all()
    measures = pd.read_csv(first / "measures.csv")
    assert len(measures) == 4 and measures[["A", "Aw"]].stack().between(0, 1).all()
    # The same config and seed give the same distances; the second run embeds nothing.
    again = pd.read_csv(second / "distances.csv", keep_default_na=False)
    pd.testing.assert_series_equal(distances["distance"], again["distance"])
    assert json.loads((second / "run.json").read_text())["embedding"]["encoded"] == 0


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_paper_pair_runs_via_the_mirror(tmp_path, cache_dir, mirror_dir):
    out = tmp_path / "clinc"
    proc = run_bench(
        "pair=clinc150_banking77",
        "k=4",
        "n=20",
        "repetitions=1",
        f"hydra.run.dir={out}",
        cache_dir=cache_dir,
        mirror=mirror_dir,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads((out / "run.json").read_text())
    assert info["sources"]["clinc150"]["texts"] > 20000 and info["sources"]["banking77"]["texts"] > 9000
    assert info["regime"] == "sentence"  # both sides' median words a text (bench/data/lengths.py)
    measures = pd.read_csv(out / "measures.csv").set_index("metric")
    assert set(measures.index) == set(default_metrics()) and measures["A"].notna().all()
    # Even tiny corpora separate these domains: each of 004's eight metrics orders most judgements right.
    # (Not a claim about every metric: the unigram n-gram divergences, for one, are weak at n = 20.)
    assert (measures.loc[PAPER_METRICS, "A"] > 0.6).all()


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_multirun_sweep_and_its_aggregate(tmp_path, cache_dir):
    sweep = tmp_path / "sweep"
    proc = run_bench(
        "-m", "k=3,4", "n=12", "repetitions=1", "metrics=chi", f"hydra.sweep.dir={sweep}", cache_dir=cache_dir
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    agg = subprocess.run(
        [sys.executable, "-m", "textmetric_bench.reports.sweep.aggregate", str(sweep)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert agg.returncode == 0, agg.stderr[-3000:]
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert set(table["k"]) == {3, 4}


@pytest.mark.parametrize(
    "override,message",
    [
        ("k=2", "KSC needs k >= 3"),
        ("n=3", "n >= k - 1"),
        ("metrics=[nosuch]", "unknown metric"),
        ("pair.name=nosuch", "nosuch"),
        ("n=5000", "needs"),
    ],
)
def test_bad_configuration_fails_fast_with_a_clear_message(override, message, tmp_path, cache_dir):
    extra = [] if override.startswith("metrics") else ["metrics=[chi]"]
    proc = run_bench(override, *extra, f"hydra.run.dir={tmp_path}", cache_dir=cache_dir, timeout=120)
    assert proc.returncode != 0
    assert message in proc.stderr + proc.stdout


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_run_killed_mid_way_resumes_to_the_same_tables(tmp_path, cache_dir):
    import signal
    import time

    args = ["k=8", "n=30", "repetitions=3", "metrics=[chi,fid,mauve]", "own_noise.seeds=2"]
    total = 3 * 3 * 28 + 2 * 2  # and the own-noise evaluations: 2 pairs x 2 seeds of the stochastic mauve
    killed = tmp_path / "killed"
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "textmetric_bench", *args, "progress=false", f"hydra.run.dir={killed}"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = killed / "evaluations.jsonl"
    deadline = time.monotonic() + 600
    # killed at its first logged evaluation: once the embeddings are cached, all 256 are logged within ~0.2 s on a
    # fast machine (an AMD EPYC), so a later threshold or a slower poll can miss the middle of the run
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) > 1:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    logged = len(log.read_text().splitlines()) - 1
    assert 1 <= logged < total, "the run was not interrupted mid-way"
    assert not (killed / "measures.csv").exists()

    resumed = run_bench(*args, f"hydra.run.dir={killed}", cache_dir=cache_dir)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    lines = log.read_text().splitlines()
    assert len(lines) - 1 == total  # every evaluation logged once: nothing was computed twice
    straight = run_bench(*args, f"hydra.run.dir={tmp_path / 'straight'}", cache_dir=cache_dir)
    assert straight.returncode == 0, straight.stderr[-3000:]
    a = pd.read_csv(killed / "distances.csv", keep_default_na=False)
    b = pd.read_csv(tmp_path / "straight" / "distances.csv", keep_default_na=False)
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))
    ma, mb = pd.read_csv(killed / "measures.csv"), pd.read_csv(tmp_path / "straight" / "measures.csv")
    pd.testing.assert_frame_equal(ma.drop(columns="T"), mb.drop(columns="T"))


def test_the_console_script_finds_its_configs_from_another_directory(tmp_path):
    script = Path(sys.executable).parent / "textmetric-bench"
    if not script.exists():
        pytest.skip(f"{script} is not installed in this environment")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [str(script), "--cfg", "job"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )  # this checkout's code, as an editable install of it runs
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "name: ksc" in proc.stdout and "pair:" in proc.stdout
    assert "  chi:\n    top: 5000\n" in proc.stdout  # the metrics' nodes, generated from their signatures
