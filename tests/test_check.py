"""The regression gate: passes on an unchanged rerun, fails naming the metric and measure."""

import json

import numpy as np
import pandas as pd
import pytest

from textmetric_bench.api.registry import metric, unregister
from textmetric_bench.errors import EXIT_REGRESSION, ConfigError
from textmetric_bench.tasks.check import compare, run_check
from textmetric_bench.running.registry import compose_config
from textmetric_bench.metrics.chi import chi


@pytest.fixture
def fake_degradable_chi():
    """CHI plus seeded noise of a chosen size: the stand-in for a change that degrades a metric."""

    @metric("fake_degradable_chi", inputs="texts", symmetric=True)
    def fake_degradable_chi(p, q, *, seed: int = 0, noise: float = 0.0) -> float:
        jitter = np.random.default_rng([seed, len(p[0]), len(q[-1])]).normal(0.0, noise)
        return chi(p, q, seed=seed) + float(jitter)

    yield "fake_degradable_chi"
    unregister("fake_degradable_chi")


def check_config(tmp_path, cache_dir, *overrides):
    return compose_config(
        [
            "task=check",
            "k=4",
            "n=60",
            "repetitions=3",
            "progress=false",
            f"data.cache_dir={cache_dir}",
            f"check.baseline={tmp_path / 'baseline.json'}",
            *overrides,
        ]
    )


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_gate_passes_unchanged_and_fails_on_degradation(tmp_path, cache_dir, fake_degradable_chi):
    metrics = f"metrics=[chi,{fake_degradable_chi}]"
    run_check(check_config(tmp_path, cache_dir, metrics, "update=true"), tmp_path / "base")
    baseline = json.loads((tmp_path / "baseline.json").read_text())
    assert set(baseline["measures"]) == {"chi", fake_degradable_chi}

    same = run_check(check_config(tmp_path, cache_dir, metrics), tmp_path / "same")
    assert same.passed and (same.summary["change"].abs() < 1e-12).all()

    worse = run_check(
        check_config(tmp_path, cache_dir, metrics, f"metric.{fake_degradable_chi}.noise=0.5"), tmp_path / "worse"
    )
    assert not worse.passed
    dropped = worse.summary[worse.summary["status"] == "DROPPED"]
    assert set(dropped["metric"]) == {fake_degradable_chi}
    report = (tmp_path / "worse" / "check.md").read_text()
    assert f"REGRESSION: metric {fake_degradable_chi} measure" in report
    assert f"| {fake_degradable_chi} |" in report  # the table of what moved names the metric

    gone = run_check(check_config(tmp_path, cache_dir, "metrics=[chi]"), tmp_path / "gone")
    assert not gone.passed
    assert set(gone.summary.loc[gone.summary["status"] == "MISSING", "metric"]) == {fake_degradable_chi}


def test_gate_refuses_to_compare_different_settings(tmp_path, cache_dir):
    run_check(check_config(tmp_path, cache_dir, "metrics=[chi]", "update=true"), tmp_path / "base")
    with pytest.raises(ConfigError, match="k: baseline 4 vs run 5"):
        run_check(check_config(tmp_path, cache_dir, "metrics=[chi]", "k=5"), tmp_path / "other")


def test_tolerance_by_hand():
    values = [0.9, 0.8, 1.0]
    baseline = {"measures": {"m": {"A": {"mean": 0.9, "values": dict(zip("012", values))}}}}
    se = np.std(values, ddof=1) / np.sqrt(3)  # 0.0577
    slightly = pd.DataFrame({"metric": "m", "repetition": [0, 1, 2], "A": [0.85, 0.75, 0.95]})
    table = compare(baseline, slightly, z=2.0, min_tolerance=0.02)
    assert table.loc[0, "tolerance"] == pytest.approx(2 * se) and table.loc[0, "status"] == "ok"
    clearly = pd.DataFrame({"metric": "m", "repetition": [0, 1, 2], "A": [0.75, 0.70, 0.85]})
    assert compare(baseline, clearly, z=2.0, min_tolerance=0.02).loc[0, "status"] == "DROPPED"
    steady = {"measures": {"m": {"A": {"mean": 1.0, "values": {"0": 1.0, "1": 1.0, "2": 1.0}}}}}
    tiny_drop = pd.DataFrame({"metric": "m", "repetition": [0, 1, 2], "A": [0.97, 0.97, 0.97]})
    table = compare(steady, tiny_drop, z=2.0, min_tolerance=0.02)
    assert table.loc[0, "tolerance"] == 0.02 and table.loc[0, "status"] == "DROPPED"


def test_committed_baseline_matches_the_check_config():
    cfg = compose_config(["task=check"])
    baseline = json.loads(open(cfg.check.baseline).read())
    assert baseline["settings"] == {
        "pair": cfg.pair.name,
        "k": cfg.k,
        "n": cfg.n,
        "repetitions": cfg.repetitions,
        "seed": cfg.seed,
    }


def _baseline_of(values: dict[str, list[float]], **extra) -> dict:
    return {
        "measures": {
            metric: {"A": {"mean": float(np.mean(v)), "values": {str(r): x for r, x in enumerate(v)}}}
            for metric, v in values.items()
        },
        **extra,
    }


def _measures(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"metric": m, "repetition": r, "A": x} for m, v in values.items() for r, x in enumerate(v)])


def test_built_in_metrics_are_gated_both_ways_plugins_on_request(fake_degradable_chi):
    before = {"chi": [0.80, 0.82, 0.81], fake_degradable_chi: [0.80, 0.82, 0.81]}
    after = {name: [x + 0.1 for x in values] for name, values in before.items()}
    table = compare(_baseline_of(before), _measures(after), z=2.0, min_tolerance=0.02).set_index("metric")
    assert table.loc["chi", "status"] == "ROSE" and table.loc[fake_degradable_chi, "status"] == "improved"
    both = compare(_baseline_of(before), _measures(after), z=2.0, min_tolerance=0.02, plugins_two_sided=True)
    assert set(both["status"]) == {"ROSE"}


def test_a_built_in_metric_that_changes_at_all_fails_where_the_numerics_are_the_baselines():
    from textmetric_bench.tasks.check import numerics, reproducible

    before = {"chi": [0.80, 0.82, 0.81]}
    nudged = _measures({"chi": [0.80, 0.82 + 1e-6, 0.81]})
    same_numerics = _baseline_of(before, numerics=numerics())
    other_numerics = _baseline_of(before, numerics={"label": "native", "cpu_vendor": "SomeOtherCPU"})
    assert compare(other_numerics, nudged, z=2.0, min_tolerance=0.02).loc[0, "status"] == "ok"
    if not reproducible(same_numerics):
        pytest.skip(f"numerics {numerics()} are not guaranteed bit for bit: the gate holds to tolerance only here")
    assert compare(same_numerics, nudged, z=2.0, min_tolerance=0.02).loc[0, "status"] == "CHANGED"
    assert compare(same_numerics, _measures(before), z=2.0, min_tolerance=0.02).loc[0, "status"] == "ok"


def test_a_metric_whose_declared_version_changed_is_not_compared():
    baseline = _baseline_of({"chi": [0.8, 0.8, 0.8]}, versions={"chi": {"version": "0-old", "source_digest": "x"}})
    table = compare(baseline, _measures({"chi": [0.2, 0.2, 0.2]}), z=2.0, min_tolerance=0.02)
    assert len(table) == 1 and table.loc[0, "status"].startswith("version 0-old -> ")
    assert "make regenerate" in table.loc[0, "status"]


def test_the_committed_baseline_was_written_by_todays_metrics():
    """Its versions and source digests are the registered built-ins': regenerate it when a metric module changes."""
    from textmetric_bench.tasks.check import metric_versions

    cfg = compose_config(["task=check"])
    baseline = json.loads(open(cfg.check.baseline).read())
    stale = {
        name: (entry, now)
        for name, now in metric_versions(baseline["measures"]).items()
        if (entry := baseline["versions"].get(name)) != now
    }
    assert stale == {}, f"the baseline is stale for {sorted(stale)}: run `make regenerate`"


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_make_check_fails_when_a_built_in_metric_rises_and_names_the_command(tmp_path, cache_dir):
    """Through the CLI, as CI runs it: the committed baseline with CHI's values lowered is a CHI that now rises."""
    import subprocess
    import sys

    cfg = compose_config(["task=check"])
    baseline = json.loads(open(cfg.check.baseline).read())
    baseline["measures"] = {"chi": baseline["measures"]["chi"]}
    for measure in baseline["measures"]["chi"].values():
        measure["values"] = {r: v - 0.1 for r, v in measure["values"].items()}
        measure["mean"] -= 0.1
    (tmp_path / "lowered.json").write_text(json.dumps(baseline))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "textmetric_bench",
            "task=check",
            "metrics=[chi]",
            "progress=false",
            f"check.baseline={tmp_path / 'lowered.json'}",
            f"hydra.run.dir={tmp_path / 'run'}",
            f"data.cache_dir={cache_dir}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == EXIT_REGRESSION, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "REGRESSION: metric chi measure A rose from" in proc.stdout
    assert "make regenerate" in proc.stdout


@pytest.mark.slow
def test_the_shipped_baseline_is_what_todays_code_computes(tmp_path, cache_dir):
    """The gate's own run against the shipped baseline, from the session's cache: every measure of every metric
    reproduces it (bit for bit, to check.exact_tolerance, where the numerics are the baseline's)."""
    result = run_check(compose_config(["task=check", "progress=false", f"data.cache_dir={cache_dir}"]), tmp_path)
    moved = result.summary[result.summary["status"] != "ok"]
    assert result.passed and moved.empty, moved.to_string()
