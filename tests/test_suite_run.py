"""A small real suite from the command line, as a user runs it: killed after its first setting, run again with the
same command (the done setting is skipped, the others run), and ending in one cross-setting report whose ranks
are those of the settings' own tables. Slow: three runs and a rerun in subprocesses (about two minutes here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

pytestmark = pytest.mark.slow

#: The embedded pair (no mirror, no model: text metrics only), small corpora, two repetitions.
COMMAND = [
    "suite=paper",
    "pair=fortune_computing_people",
    "metrics=[zipf,chi,ngram_js,oracle,chance]",
    "++n=20",
    "repetitions=2",
    "++own_noise.seeds=0",
    "++n_ref=100",
    "++sizes=[20,40]",
    "++imbalance_total=100",
    "progress=false",
]


def suite(out: Path, cache: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "textmetric_bench", *COMMAND, f"hydra.sweep.dir={out}"],
        cwd=out.parent,
        env={**os.environ, "BENCH_CACHE_DIR": str(cache)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def test_a_suite_killed_after_its_first_setting_resumes_and_ends_in_one_report(tmp_path):
    out, cache = tmp_path / "suite", tmp_path / "cache"
    first = out / "fortune_computing_people" / "ksc_k7"
    killed = suite(out, cache, start_new_session=True)
    deadline = time.monotonic() + 600
    while not (first / "exit_status.json").is_file() and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    os.killpg(killed.pid, signal.SIGKILL)  # the suite's own process group: this test started it
    killed.communicate()
    assert (first / "measures.csv").is_file() and not (out / "suite_report.md").exists()
    done_at = (first / "measures.csv").stat().st_mtime

    rerun = suite(out, cache)
    output, _ = rerun.communicate(timeout=900)
    assert rerun.returncode == 0, output
    assert f"setting already done in {first}" in output
    assert (first / "measures.csv").stat().st_mtime == done_at
    assert "suite report: " in output and "sweep: all 3 jobs succeeded" in output

    ranks = pd.read_csv(out / "ranks.csv")
    assert set(ranks["metric"]) == {"zipf", "chi", "ngram_js"}  # the bounds are reference lines only
    rho = ranks[ranks["measure"] == "rho"].set_index("metric")
    assert set(rho["settings"]) == {2}
    # recomputed from the two KSC settings' own tables: mean over repetitions, rank within the setting
    means = pd.DataFrame(
        {
            k: pd.read_csv(out / "fortune_computing_people" / f"ksc_k{k}" / "measures.csv")
            .groupby("metric")["rho"]
            .mean()
            for k in (7, 12)
        }
    ).T[["chi", "ngram_js", "zipf"]]
    mean_ranks = pd.Series(stats.rankdata(-means.to_numpy(), axis=1).mean(axis=0), index=means.columns)
    assert rho["mean_rank"].to_dict() == pytest.approx(mean_ranks.to_dict())
    expected = stats.friedmanchisquare(*(means[c] for c in means.columns))
    assert rho["friedman_chi2"].iloc[0] == pytest.approx(expected.statistic, nan_ok=True)
    assert np.isnan(expected.pvalue) or rho["friedman_p"].iloc[0] == pytest.approx(expected.pvalue)
    assert "rest on 2 settings" in rho["warning"].iloc[0]
    for name in ("cd_rho.png", "cd_S.png", "card_zipf.png", "card_ngram_js.png", "metric_catalogue.csv"):
        assert (out / name).is_file(), name
    assert not (out / "card_oracle.png").exists()


def test_suite_all_runs_through_the_ray_launcher_and_skips_what_a_pair_does_not_name(tmp_path):
    """A suite is what a user takes to a cluster: ``suite=all`` on Hydra's Ray launcher (a local Ray cluster the
    launcher starts), on the embedded pair. The pair names its suite settings (k = 7, k = 12, robustness), so the
    job of ``ksc_k12_n50`` is skipped with a line, and the report is written in the launching process."""
    import importlib.util

    if importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None:
        pytest.skip("pip install 'textmetric-bench[ray]'")
    out, cache = tmp_path / "suite", tmp_path / "cache"
    command = ["suite=all" if c == "suite=paper" else c for c in COMMAND]
    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench", *command, "hydra/launcher=ray_local", f"hydra.sweep.dir={out}"],
        cwd=tmp_path,
        env={**os.environ, "BENCH_CACHE_DIR": str(cache), "RAY_USAGE_STATS_ENABLED": "0", "BENCH_RAY_CPUS": "2"},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "setting ksc_k12_n50 skipped: pair fortune_computing_people" in output
    assert "suite report: " in output
    pair_dir = out / "fortune_computing_people"
    assert {p.name for p in pair_dir.iterdir() if (p / "measures.csv").is_file()} == {"ksc_k7", "ksc_k12", "robustness"}
    assert not (pair_dir / "ksc_k12_n50" / "measures.csv").exists()
    ranks = pd.read_csv(out / "ranks.csv")
    assert set(ranks["metric"]) == {"zipf", "chi", "ngram_js"}
    assert set(ranks.loc[ranks["measure"] == "rho", "settings"]) == {2}
