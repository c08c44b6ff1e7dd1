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
from textmetric_bench.settings import shown


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
    # the move came with a parameter the baseline did not have: said so, and no advice to bump the version
    assert (
        f"Parameters differ from the baseline's, so a move of these metrics may come from them: {fake_degradable_chi} noise 0.0 -> 0.5"
        in report
    )
    assert f"If the new parameters of {fake_degradable_chi} are intended, write the baseline afresh" in report
    assert "@metric(version=...)" not in report

    gone = run_check(check_config(tmp_path, cache_dir, "metrics=[chi]"), tmp_path / "gone")
    assert not gone.passed
    assert set(gone.summary.loc[gone.summary["status"] == "MISSING", "metric"]) == {fake_degradable_chi}


def test_gate_refuses_to_compare_different_settings(tmp_path, cache_dir):
    run_check(check_config(tmp_path, cache_dir, "metrics=[chi]", "update=true"), tmp_path / "base")
    with pytest.raises(ConfigError, match="k: baseline 4 vs run 5"):
        run_check(check_config(tmp_path, cache_dir, "metrics=[chi]", "k=5"), tmp_path / "other")


def test_the_gate_without_metrics_runs_its_baselines_metrics(tmp_path, cache_dir):
    """A baseline of one's own metrics, gated without metrics=: those metrics run, not every default one."""
    run_check(check_config(tmp_path, cache_dir, "metrics=[chi,zipf]", "update=true"), tmp_path / "base")
    written = json.loads((tmp_path / "baseline.json").read_text())
    assert set(written["metric_params"]) == set(written["versions"]) == {"chi", "zipf"}  # its metrics' only
    gate = run_check(check_config(tmp_path, cache_dir), tmp_path / "gate")
    assert gate.passed and set(gate.measures["metric"]) == {"chi", "zipf"}
    assert set(gate.summary["metric"]) == {"chi", "zipf"} and set(gate.summary["status"]) == {"ok"}


def test_which_metrics_the_gate_runs_when_none_is_named(tmp_path):
    """The baseline's registered metrics (one not registered here is left to be reported MISSING); the default ones
    when writing a baseline, when the baseline cannot be read, or when metrics=default is given."""
    from textmetric_bench.api.registry import default_metrics
    from textmetric_bench.tasks.check import CheckTask
    from textmetric_bench.tasks.config import selected_metrics

    def chosen(*overrides):
        cfg = check_config(tmp_path, tmp_path / "cache", *overrides)
        return [info.name for info, _ in selected_metrics(cfg, CheckTask.unnamed_metrics(cfg))]

    assert chosen() == default_metrics()  # no baseline file yet: the preflight refuses it in one line
    baseline = _baseline_of({"zipf": [0.8, 0.9], "chi": [0.7, 0.8], "a_plugin_not_installed": [0.5, 0.6]})
    settings = {"pair": "fortune_computing_people", "k": 4, "n": 60, "repetitions": 3, "seed": 0}
    (tmp_path / "baseline.json").write_text(json.dumps({"settings": settings, **baseline}))
    assert chosen() == ["zipf", "chi"]
    assert chosen("metrics=default") == chosen("update=true") == default_metrics()
    assert chosen("metrics=[fid]") == ["fid"]
    (tmp_path / "baseline.json").write_text(json.dumps({"settings": settings, **_baseline_of({"gone": [0.5, 0.6]})}))
    assert chosen() == default_metrics()


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


def test_a_plugin_gated_both_ways_is_held_to_the_tolerance_not_bit_for_bit(fake_degradable_chi):
    """check.two_sided gates a plugin's rise as a built-in's, but a plugin's numerics are its own: a change within
    the tolerance passes, where the same nudge fails a built-in that has the baseline's numerics."""
    from textmetric_bench.tasks.check import numerics, reproducible

    before = {"chi": [0.80, 0.82, 0.81], fake_degradable_chi: [0.80, 0.82, 0.81]}
    nudged = _measures({name: [0.80, 0.82 + 1e-6, 0.81] for name in before})
    baseline = _baseline_of(before, numerics=numerics())
    if not reproducible(baseline):
        pytest.skip(f"numerics {numerics()} are not guaranteed bit for bit: the gate holds to tolerance only here")
    table = compare(baseline, nudged, z=2.0, min_tolerance=0.02, plugins_two_sided=True).set_index("metric")
    assert table.loc["chi", "status"] == "CHANGED" and table.loc[fake_degradable_chi, "status"] == "ok"
    risen = _measures({name: [x + 0.1 for x in values] for name, values in before.items()})
    risen_table = compare(baseline, risen, z=2.0, min_tolerance=0.02, plugins_two_sided=True)
    assert set(risen_table["status"]) == {"ROSE"}


def test_a_baseline_metric_that_failed_in_some_repetitions_is_told_from_one_that_did_not_run():
    from textmetric_bench.tasks.check import FAILING, regression_lines

    baseline = _baseline_of({"chi": [0.80, 0.82, 0.81], "zipf": [0.6, 0.6, 0.6], "fid": [0.9, 0.9, 0.9]})
    measures = _measures({"chi": [0.80, np.nan, 0.81]})  # chi failed in repetition 1; zipf and fid did not run
    table = compare(baseline, measures, z=2.0, min_tolerance=0.02, ran=["chi", "fid"]).set_index("metric")
    assert table["status"].to_dict() == {"chi": "FAILED", "zipf": "MISSING", "fid": "FAILED"}  # fid ran, no value
    assert set(table["status"]) <= set(FAILING)
    lines = dict(zip(table.index, regression_lines(table.reset_index(), baseline, measures, 1e-9)))
    assert lines["chi"] == (
        "REGRESSION: metric chi measure A failed in 1 of 3 repetitions (the other 2 give 0.8050; the baseline "
        "0.8100); its failures are listed above and in failures.csv"
    )
    assert lines["fid"].startswith("REGRESSION: metric fid measure A failed in 3 of 3 repetitions (no value;")
    assert lines["zipf"].startswith("REGRESSION: metric zipf measure A is missing: the run did not compute it")


def test_a_metric_whose_declared_version_changed_is_not_compared():
    baseline = _baseline_of({"chi": [0.8, 0.8, 0.8]}, versions={"chi": {"version": "0-old", "source_digest": "x"}})
    table = compare(baseline, _measures({"chi": [0.2, 0.2, 0.2]}), z=2.0, min_tolerance=0.02)
    assert len(table) == 1 and table.loc[0, "status"].startswith("version 0-old -> ")
    assert "make regenerate" in table.loc[0, "status"]


def test_a_metric_edited_without_a_new_version_is_named():
    from textmetric_bench.tasks.check import metric_versions, source_changes

    now = metric_versions(["chi", "zipf", "fid"])
    edited = {
        **now,
        "chi": {**now["chi"], "source_digest": "0" * 12},
        "zipf": {"version": "0-old", "source_digest": "x"},
    }
    assert source_changes({"versions": edited}) == ["chi"]  # zipf's version changed: not compared, said elsewhere
    assert source_changes({"versions": now}) == [] and source_changes({}) == []


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
    # the gate without metrics= runs the baseline's metrics: a default built-in missing from it would go ungated
    from textmetric_bench.api.registry import builtin_metrics, get_metric

    defaults = {name for name in builtin_metrics() if not get_metric(name).opt_in}
    assert set(baseline["measures"]) == defaults, "the baseline is not of the default built-ins: run `make regenerate`"
    assert set(baseline["metric_params"]) == defaults  # the parameters of its own metrics, as the gate writes them


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
    # a baseline of one's own is written afresh by rerunning; a built-in's change needs the shipped results too
    assert "embedding model changed" not in proc.stderr  # chi reads no embeddings: nothing to compare
    said = " ".join(proc.stdout.split())  # the console wraps long lines
    assert f"rerun this check with update=true (it rewrites {tmp_path / 'lowered.json'})" in said
    assert "also needs the shipped results regenerated: make regenerate" in said


@pytest.mark.slow
def test_the_shipped_baseline_is_what_todays_code_computes(tmp_path, cache_dir):
    """The gate's own run against the shipped baseline, from the session's cache: every measure of every metric
    reproduces it (bit for bit, to check.exact_tolerance, where the numerics are the baseline's)."""
    result = run_check(compose_config(["task=check", "progress=false", f"data.cache_dir={cache_dir}"]), tmp_path)
    moved = result.summary[result.summary["status"] != "ok"]
    assert result.passed and moved.empty, moved.to_string()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"settings": {"pair": "x", "k": 5', "not JSON (Expecting"),  # truncated
        ("", "not JSON (Expecting value at line 1 column 1)"),
        ("metric,measure,baseline\nchi,A,0.9\n", "not JSON"),  # the gate's check.csv
        ("[1, 2]", "a JSON list, not an object"),
        ("{}", "'settings' must hold pair, k, n, repetitions, seed"),
        (
            json.dumps({"settings": dict.fromkeys(("pair", "k", "n", "repetitions", "seed"), 1), "measures": {}}),
            "'measures' must hold each metric's measures",
        ),
        (
            json.dumps(
                {
                    "settings": dict.fromkeys(("pair", "k", "n", "repetitions", "seed"), 1),
                    "measures": {"chi": {"A": {"mean": 0.9}}},
                }
            ),
            "'chi' A: needs 'mean' and 'values'",
        ),
    ],
)
def test_a_file_that_is_not_a_baseline_is_refused_in_one_line_before_the_run(tmp_path, content, says):
    from textmetric_bench.tasks.check import read_baseline

    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as refused:
        read_baseline(path)
    message = str(refused.value)
    assert message.startswith(f"check.baseline={shown(str(path))} is not valid: ") and says in message
    assert "\n" not in message
    assert "update=true" in message  # how to write one
    with pytest.raises(ConfigError, match="it is a directory"):
        read_baseline(tmp_path)


def test_the_advice_rewrites_the_baseline_the_gate_read(tmp_path, monkeypatch):
    from textmetric_bench import shipped_path
    from textmetric_bench.tasks import check

    assert (
        check.rewrite_advice(tmp_path / "mine.json")
        == f"rerun this check with update=true (it rewrites {tmp_path / 'mine.json'})"
    )
    assert check.rewrite_advice(shipped_path(check.SHIPPED_BASELINE)) == check.REGENERATE  # from this checkout
    monkeypatch.setattr(check, "IN_CHECKOUT", False)  # installed: update=true refuses the shipped baseline
    assert check.rewrite_advice(shipped_path(check.SHIPPED_BASELINE)) == (
        "the shipped baseline is the harness's own: gate against one of your own, written by this check with "
        "update=true check.baseline=my_baseline.json"
    )
    monkeypatch.setattr(check, "IN_CHECKOUT", True)
    # parameters given on the command line against the shipped baseline: regenerating it would not keep them
    shipped_advice = check.parameter_advice(["chi"], shipped_path(check.SHIPPED_BASELINE))
    assert shipped_advice.startswith("If the new parameters of chi are intended, make them the defaults and write")
    assert shipped_advice.endswith(
        "or gate against one of your own, written by this check with update=true check.baseline=my_baseline.json"
    )
    assert check.parameter_advice(["chi", "fid"], tmp_path / "mine.json") == (
        f"If the new parameters of chi, fid are intended, write the baseline afresh with them: rerun this check with "
        f"update=true (it rewrites {tmp_path / 'mine.json'})"
    )
    table = compare(
        _baseline_of({"chi": [0.8, 0.8, 0.8]}, versions={"chi": {"version": "0-old"}}),
        _measures({"chi": [0.2, 0.2, 0.2]}),
        z=2.0,
        min_tolerance=0.02,
        advice=check.rewrite_advice(tmp_path / "mine.json"),
    )
    assert table.loc[0, "status"].endswith(
        f"write the baseline afresh: rerun this check with update=true (it rewrites {tmp_path / 'mine.json'})"
    )


def test_installed_the_shipped_baseline_is_not_overwritten(tmp_path, cache_dir, monkeypatch):
    from textmetric_bench.tasks import check

    monkeypatch.setattr(check, "IN_CHECKOUT", False)  # as from an installed wheel
    with pytest.raises(ConfigError, match="is the baseline shipped inside the installed package, which update=true"):
        run_check(compose_config(["task=check", "update=true", f"data.cache_dir={cache_dir}"]), tmp_path / "run")
    assert not (tmp_path / "run" / "measures.csv").exists()


def test_parameters_that_differ_from_the_baselines_are_named():
    from textmetric_bench.api.registry import get_metric
    from textmetric_bench.tasks.check import param_changes

    baseline = _baseline_of(
        {"chi": [0.8] * 3, "zipf": [0.7] * 3}, metric_params={"chi": {"top": 5000, "normalise": "dof"}}
    )
    chi, zipf = get_metric("chi"), get_metric("zipf")
    assert param_changes(baseline, [(chi, {"top": 5000, "normalise": "dof"})]) == {}
    assert param_changes(baseline, [(chi, {"top": 50, "normalise": "dof"}), (zipf, {"top": 9})]) == {
        "chi": {"top": (5000, 50)}  # zipf: no parameters recorded, nothing to compare
    }


@pytest.mark.slow  # a KSC run of the gate
def test_a_baseline_is_not_written_from_a_run_where_a_metric_failed(tmp_path, cache_dir, caplog):
    """A baseline without the failed metric would leave it ungated without a word (the run still exits 3)."""
    from fake_metrics import registered

    with registered("fake_raises"):
        result = run_check(
            check_config(tmp_path, cache_dir, "metrics=[chi,fake_raises]", "update=true"), tmp_path / "r"
        )
    assert "fake_raises" in result.failures and not (tmp_path / "baseline.json").exists()
    assert f"baseline {tmp_path / 'baseline.json'} not written: fake_raises failed (see above)" in caplog.text
