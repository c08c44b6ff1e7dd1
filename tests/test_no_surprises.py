"""No silent surprises in the shell (docs/running.md): each mistake a user makes on the command line gets one line
saying what to write instead, a failed attempt leaves no run directory, a sweep names its directory and the command
that summarises it, and the card command writes all its cards or none.

The logic is tested on the functions directly (fast); the tests named ``test_the_command_line_...`` run the installed
console scripts in a subprocess from a directory outside the checkout, as a user would, each failing before any
evaluation so they stay quick.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from textmetric_bench.data.corpora import load_pair
from textmetric_bench.data.make_card import write_cards
from textmetric_bench.errors import EXIT_BAD_INPUT, ConfigError, DataError
from textmetric_bench.reports.__main__ import report_dir
from textmetric_bench.reports.sweep.aggregate import sweep_markdown
from textmetric_bench.running.directories import remove_unused_run_dir
from textmetric_bench.running.metric_configs import metric_override_problems
from textmetric_bench.running.registry import compose_config
from textmetric_bench.running.sweep_end import sweep_end_lines
from textmetric_bench.running.unknown_keys import unknown_key_problems
from textmetric_bench.running.validate import validate_config

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def fortune():
    """Real texts: the two sides of the built-in fortune pair (shipped in a package, no mirror)."""
    a, b = load_pair("fortune_computing_people")
    return list(a.texts), list(b.texts)


def write_jsonl(path: Path, texts: list[str], field: str = "text") -> Path:
    path.write_text("".join(json.dumps({field: t}) + "\n" for t in texts), encoding="utf-8")
    return path


# --- a config group where the metric list is meant -------------------------------------------------------------


@pytest.mark.parametrize(
    "override,listed", [("metric=fid", "fid"), ("metric=[chi,fid]", "chi,fid"), ("metric=chi,fid", "chi,fid")]
)
def test_a_metric_group_without_a_metric_list_says_to_write_metrics(override, listed):
    problems = metric_override_problems([override])
    assert len(problems) == 1 and problems[0].startswith(override), problems
    assert problems[0].endswith(f"write metrics=[{listed}]") and "every default metric would still run" in problems[0]


@pytest.mark.parametrize("overrides", [["metric=fid", "metrics=[fid]"], ["metric=registered"], ["metrics=[fid]"]])
def test_a_metric_group_with_the_metric_list_is_accepted(overrides):
    assert metric_override_problems(overrides) == []


# --- a misspelt key ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides,line",
    [
        (["repetiton=2"], "repetiton=2: there is no setting 'repetiton'; did you mean repetitions=2?"),
        (["engine.worker=2"], "engine.worker=2: there is no setting 'engine.worker'; did you mean engine.workers=2?"),
        (["task=robustness", "n_rf=50"], "n_rf=50: there is no setting 'n_rf'; did you mean n_ref=50?"),  # a task's own
        (["xyzzy=1"], "(to add a key of your own, write +xyzzy=1)"),
        (["repetiton=2,3"], "repetiton=2,3: there is no setting 'repetiton'; did you mean repetitions=2,3?"),  # swept
        # a misspelt level above the key (Hydra names the level, "Key 'embeder' is not in struct", and says to use +)
        (
            ["embeder.batch_size=8"],
            "embeder.batch_size=8: there is no setting 'embeder'; did you mean embedder.batch_size=8?",
        ),
        (["engine.pool.size=2"], "engine.pool.size=2: there is no setting 'engine.pool'; the settings in engine are "),
    ],
)
def test_a_misspelt_key_gets_one_line_with_the_closest_keys(overrides, line):
    problems = unknown_key_problems(overrides)
    assert len(problems) == 1 and line in problems[0], problems


@pytest.mark.parametrize(
    "overrides,lines",
    [
        (
            ["k=3", "metrics=[chi,", "fid,", "zipf]", "n=10"],
            [
                "metrics=[chi, fid, zipf]: the shell split this override at its spaces; write it without them, "
                "metrics=[chi,fid,zipf], or in quotes, 'metrics=[chi, fid, zipf]'"
            ],
        ),
        (  # split after an item that parses alone: the override starts there
            ["pair=files", "pair.a=my", "file.txt", "pair.b=b.csv"],
            [
                "pair.a=my file.txt: the shell split this override at its spaces; write it in quotes, "
                "'pair.a=my file.txt'"
            ],
        ),
        (["metrics=[chi,", "zipf]", "-m=[a,"], []),  # something else that does not parse: left to Hydra
        (["k=3", "metrics=[chi,"], []),
    ],
)
def test_an_override_the_shell_split_at_its_spaces_is_told_how_to_write_it(overrides, lines):
    assert unknown_key_problems(overrides) == lines


@pytest.mark.parametrize(
    "overrides,lines",
    [
        (
            ["metrics=fid,mauve", "k=3"],
            [
                "metrics=fid,mauve is a sweep, one run per value of metrics; to give them all to one run write "
                "metrics=[fid,mauve]; to sweep, add -m"
            ],
        ),
        (["k=3,4"], ["k=3,4 is a sweep, one run per value of k; to sweep, add -m"]),
        (["k=range(3,5)"], ["k=range(3,5) is a sweep, one run per value of k; to sweep, add -m"]),
        (  # a list of the composed config (not of the sweep's first value)
            ["task=robustness", "sizes=50,100"],
            [
                "sizes=50,100 is a sweep, one run per value of sizes; to give them all to one run write "
                "sizes=[50,100]; to sweep, add -m"
            ],
        ),
        (
            ["pair=fortune_computing_people,clinc150_banking77"],
            [
                "pair=fortune_computing_people,clinc150_banking77 is a sweep, one run per value of pair; to sweep, add -m"
            ],
        ),
        (  # a misspelt swept key gets both lines at once
            ["repetiton=2,3"],
            [
                "repetiton=2,3 is a sweep, one run per value of repetiton; to sweep, add -m",
                "repetiton=2,3: there is no setting 'repetiton'; did you mean repetitions=2,3?",
            ],
        ),
        (["suite=paper", "seed=1,2"], []),  # a suite's config sweeps by itself
        (["hydra.mode=MULTIRUN", "k=3,4"], []),
    ],
)
def test_a_sweep_in_a_call_that_runs_one_job_is_told_how_to_sweep_and_how_to_list(overrides, lines):
    """Hydra says "Ambiguous value" over four lines and offers a quoted string, which no setting takes."""
    assert unknown_key_problems(overrides, sweep_advice="to sweep, add -m") == lines
    assert [line for line in unknown_key_problems(overrides) if " is a sweep" in line] == []  # -m given


def test_two_misspelt_keys_get_a_line_each_and_good_ones_none():
    assert [p.split(":")[0] for p in unknown_key_problems(["k=5", "repetiton=2", "seedd=1"])] == [
        "repetiton=2",
        "seedd=1",
    ]
    assert [p.split(":")[0] for p in unknown_key_problems(["embeder.a=1", "k=5", "embeder.b=2"])] == [
        "embeder.a=1",
        "embeder.b=2",
    ]
    assert unknown_key_problems(["k=5", "repetitions=2", "+my_note=x", "metric.chi.top=3", "n=10,20"]) == []


@pytest.mark.parametrize(
    "overrides,lines",
    [
        (["task=kscc", "n_rf=5"], ["task=kscc: there is no task 'kscc'; did you mean task=ksc?"]),  # no key judged
        (["embedder=minlm"], ["embedder=minlm: there is no embedder 'minlm'; did you mean embedder=minilm?"]),
        (
            ["pair=fortune_computing_peopl", "repetiton=3"],
            [
                "pair=fortune_computing_peopl: there is no pair 'fortune_computing_peopl'; "
                "did you mean pair=fortune_computing_people?",
                "repetiton=3: there is no setting 'repetiton'; did you mean repetitions=3?",
            ],
        ),
        (  # every value of a sweep, not only its first
            ["k=3", "pair=atis_news,fortune_computing_peopl"],
            [
                "pair=atis_news,fortune_computing_peopl: there is no pair 'fortune_computing_peopl'; "
                "did you mean pair=fortune_computing_people?"
            ],
        ),
    ],
)
def test_a_misspelt_choice_of_a_config_group_gets_one_line_with_the_closest_choices(overrides, lines):
    assert unknown_key_problems(overrides) == lines


def test_a_choice_with_none_close_lists_the_groups_choices_and_good_sweeps_pass():
    (line,) = unknown_key_problems(["pair=nosuch"])
    assert line.startswith("pair=nosuch: there is no pair 'nosuch'; the choices of pair are atis_news, ")
    assert "fortune_computing_people" in line and "\n" not in line
    assert unknown_key_problems(["pair=atis_news,fortune_computing_people", "metrics=zipf,chi", "k=3,4"]) == []


def test_the_groups_listed_for_a_check_are_the_ones_it_names_with_all_their_choices():
    """Each run's check lists only the groups its overrides name (not every group's choices, about 0.1 s a run)."""
    from textmetric_bench.running.registry import config_groups

    every = config_groups()
    assert {"pair", "task", "embedder"} <= set(every)
    assert config_groups(among={"pair", "k", "repetitions"}) == {"pair": every["pair"]}
    assert config_groups(among=set()) == {}


def test_a_users_config_directory_adds_choices_and_one_given_by_config_dir_is_left_to_hydra(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_conf" / "pair").mkdir(parents=True)
    (tmp_path / "my_conf" / "pair" / "mine.yaml").write_text("name: mine\n")
    searchpath = "hydra.searchpath=[file://./my_conf]"
    assert unknown_key_problems([searchpath, "pair=mine"]) == []
    assert unknown_key_problems([searchpath, "pair=mien"]) == [
        "pair=mien: there is no pair 'mien'; did you mean pair=mine?"
    ]
    assert unknown_key_problems(["pair=mine"]) != []  # without the search path: no such pair
    assert unknown_key_problems(["pair=mine"], own_configs=False) == []  # --config-dir my_conf: Hydra knows
    shown = cli(tmp_path, "textmetric-bench", "--config-dir", "my_conf", "pair=mine", "--cfg", "job")
    assert shown.returncode == 0 and "name: mine" in shown.stdout, shown.stderr[-2000:]


# --- the user's files given to a pair card -----------------------------------------------------------------------


def test_pair_files_without_pair_files_say_to_write_it():
    line = (
        "pair.a=x.jsonl pair.b=y.csv: pair=fortune_computing_people is a pair card and takes no files; "
        "for your own files write pair=files pair.a=x.jsonl pair.b=y.csv"
    )
    assert unknown_key_problems(["pair.a=x.jsonl", "pair.b=y.csv"]) == [line]
    assert unknown_key_problems(["pair.a=x.jsonl"])[0].endswith("pair=files pair.a=x.jsonl pair.b=texts_b.jsonl")


def test_hydras_hint_plus_pair_a_is_refused_by_the_validation(tmp_path):
    cfg = compose_config(
        ["+pair.a=mine.jsonl", "+pair.b=theirs.csv", "+pair.b_field=body", f"data.cache_dir={tmp_path}"]
    )
    with pytest.raises(ConfigError) as refused:
        validate_config(cfg, tmp_path / "run")
    assert (
        "given to the pair card 'fortune_computing_people': the run would be filed under and compared with "
        "'fortune_computing_people'; for your own files write pair=files pair.a=mine.jsonl pair.b=theirs.csv "
        "pair.b_field=body"
    ) in str(refused.value)


# --- failed attempts leave no run directory ----------------------------------------------------------------------


def hydra_entered(run_dir: Path) -> Path:
    """What Hydra writes when it enters a run: its config files and the log."""
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "config.yaml").write_text("seed: -1\n")
    (run_dir / "__main__.log").write_text("[...] seed=-1 is not valid\n")
    return run_dir


def test_a_run_directory_holding_only_hydras_files_is_removed_with_its_empty_parents(tmp_path):
    (tmp_path / "outputs" / "ksc" / "other").mkdir(parents=True)
    run_dir = hydra_entered(tmp_path / "outputs" / "ksc" / "fortune" / "2026-01-01_00-00-00")
    assert remove_unused_run_dir(run_dir, tmp_path)
    assert not (tmp_path / "outputs" / "ksc" / "fortune").exists()
    assert (tmp_path / "outputs" / "ksc" / "other").is_dir()  # not empty: kept, with its parents


def test_a_run_directory_with_results_or_holding_the_start_directory_is_kept(tmp_path):
    run_dir = hydra_entered(tmp_path / "outputs" / "run")
    (run_dir / "evaluations.jsonl").write_text("{}\n")  # an earlier attempt's evaluations, to resume
    assert not remove_unused_run_dir(run_dir, tmp_path) and (run_dir / "evaluations.jsonl").exists()
    here = hydra_entered(tmp_path / "here")
    assert not remove_unused_run_dir(here, here) and not remove_unused_run_dir(tmp_path, here)
    assert (here / ".hydra").is_dir()


# --- the report of several runs, a sweep's end and its table ----------------------------------------------------


def test_a_report_of_several_runs_goes_to_a_new_directory_never_a_runs_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        run.mkdir()
        (run / "measures.csv").write_text("metric,repetition\n")
    assert report_dir([a], None) == (a, None)
    first, problem = report_dir([a, b], None)
    assert problem is None and first.parent == Path("combined_reports")
    first.mkdir(parents=True)
    assert report_dir([a, b], None)[0] == first.with_name(first.name + "_2")  # the same second: a fresh directory
    for out in (a, b):
        assert "is a run's directory" in report_dir([a, b], out)[1]
    assert "is a run's directory" in report_dir([a], b)[1]
    assert report_dir([a, b], tmp_path / "mine") == (tmp_path / "mine", None)


def test_sweep_table_gives_each_warning_once_with_the_jobs_it_applies_to(tmp_path):
    few = "only 2 repetitions (fewer than 5): intervals are rough"
    long = pd.DataFrame(
        [
            {
                "pair": "p",
                "k": k,
                "n": 12,
                "task": "ksc",
                "run_dir": str(tmp_path / str(job)),
                "metric": m,
                "measure": "A",
                "mean": 0.7,
                "warning": few if job < 3 else "",
            }
            for job, k in enumerate((4, 5, 6, 7))
            for m in ("chi", "fid")
        ]
    )
    table = sweep_markdown(long, tmp_path)
    assert table.count("Warning") == 1 and f"**Warning (3 of 4 jobs: 0, 1, 2): {few}.**" in table
    long["warning"] = few
    assert f"**Warning (all 4 jobs in the table): {few}.**" in sweep_markdown(long, tmp_path)


def test_sweep_table_names_what_sets_apart_jobs_of_one_setting(tmp_path):
    """Two jobs of one (pair, k, n) that differ in a metric's parameter stay apart, each named by its job and the
    overrides the other job does not share, not by a bare job number."""
    long = pd.DataFrame(
        [
            {
                "pair": "p",
                "k": 3,
                "n": 30,
                "task": "ksc",
                "run_dir": str(tmp_path / str(job)),
                "overrides": f"k=3 n=30 metrics=[chi] metric.chi.top={top}",
                "metric": "chi",
                "measure": "A",
                "mean": mean,
                "warning": "",
            }
            for job, top, mean in ((0, 50, 0.75), (1, 5000, 1.0))
        ]
    )
    table = sweep_markdown(long, tmp_path)
    assert "| p | 3 | 30 | 0: metric.chi.top=50 | chi | **.750** |" in table, table  # each its own block
    assert "| p | 3 | 30 | 1: metric.chi.top=5000 | chi | **1.000** |" in table, table
    assert "bold = best within each (pair, k, n, run) block" in table
    unrecorded = sweep_markdown(long.drop(columns="overrides"), tmp_path)
    assert "| p | 3 | 30 | 0 | chi |" in unrecorded and "| p | 3 | 30 | 1 | chi |" in unrecorded, unrecorded


def test_sweep_table_and_report_name_the_jobs_and_metrics_they_leave_out(tmp_path):
    from textmetric_bench.reports.html.report import build_report
    from textmetric_bench.reports.sweep.aggregate import aggregate_sweep

    shared = ["metrics=[zipf,chi]", "repetitions=2"]
    for job, (n, top, code, reason) in enumerate(
        [(20, 500, 0, ""), (20, 0, 3, "metric chi failed"), (4000, 500, 2, "source 'atis' has 4634 texts but ...")]
    ):
        directory = tmp_path / str(job)
        (directory / ".hydra").mkdir(parents=True)
        overrides = [f"n={n}", f"metric.chi.top={top}", *shared]
        (directory / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
        status = {"exit_status": code, "reason": reason, "overrides": overrides}
        (directory / "exit_status.json").write_text(json.dumps(status))
        if n == 20:  # a job with measures: zipf in both, chi only where it did not fail
            metrics = ["zipf", "chi"] if top else ["zipf"]
            rows = [{"metric": m, "repetition": r, "A": 0.6 + 0.1 * r} for m in metrics for r in range(2)]
            pd.DataFrame(rows).to_csv(directory / "measures.csv", index=False)
            failures = {} if top else {"chi": "6 of 6 evaluations failed: MetricError: CHI: top must be ..."}
            (directory / "run.json").write_text(json.dumps({"failures": failures}))
    table = sweep_markdown(aggregate_sweep(tmp_path), tmp_path)
    assert "**Not in the table: 1 of 3 jobs left no measures.**" in table
    assert "- job 2 (n=4000 metric.chi.top=500): exit status 2, source 'atis' has 4634 texts but ..." in table
    assert "- job 1 (n=20 metric.chi.top=0): metric chi failed: 6 of 6 evaluations failed" in table
    page = build_report([tmp_path], tmp_path / "report")["report_html"].read_text()
    assert "Jobs without results (not in this report)" in page and "job 2 (n=4000 metric.chi.top=500)" in page
    headings = re.findall(r"<h3 class=run>(.*?)</h3>", page)  # two runs of one setting: what sets each apart
    assert [h.split(" · ")[0] + " · " + h.split(" · ")[-1] for h in headings] == [
        "Run 0 · metric.chi.top=500",
        "Run 1 · metric.chi.top=0",
    ]


@pytest.mark.parametrize(
    "argv0,aggregate",
    [
        ("/venv/bin/textmetric-bench", "textmetric-bench-aggregate"),
        ("/checkout/bench/__main__.py", "python -m textmetric_bench.reports.sweep.aggregate"),
    ],
)
def test_a_sweep_ends_naming_its_directory_and_the_aggregate_command(tmp_path, monkeypatch, argv0, aggregate):
    monkeypatch.setattr(sys, "argv", [argv0, "-m", "k=4,5"])
    assert sweep_end_lines(tmp_path) == [
        f"sweep directory: {tmp_path}",
        f"summarise its jobs (sweep_table.md, sweep_summary.csv): {aggregate} {tmp_path}",
    ]


# --- the card command --------------------------------------------------------------------------------------------


def test_the_card_command_takes_a_field_per_file(fortune, tmp_path, caplog):
    a = write_jsonl(tmp_path / "a.jsonl", fortune[0][:20], field="text")
    b = write_jsonl(tmp_path / "b.jsonl", fortune[1][:25], field="body")
    out = tmp_path / "cards"
    written = write_cards([a, b], name=None, field=["text", "body"], out=out, pair="mine", force=False)
    assert written[:2] == [
        f"wrote {out / 'corpora' / 'a.yaml'}: 20 texts",
        f"wrote {out / 'corpora' / 'b.yaml'}: 25 texts",
    ]
    assert 'text_field: "body"' in (out / "corpora" / "b.yaml").read_text()
    assert f"card {out / 'corpora' / 'b.yaml'}: its licence is still to be filled in" in caplog.text
    assert ".part" not in caplog.text  # the cards checked before they were moved in are not named
    with pytest.raises(
        ConfigError,
        match=r"--field is given 3 times for 2 FILEs: give it once \(every file\) or once "
        r"per FILE in their order, e.g. a.jsonl b.jsonl --field text --field body",
    ):
        write_cards([a, b], name=None, field=["text", "body", "x"], out=None, pair=None, force=False)


def test_the_card_command_writes_nothing_unless_every_file_succeeds(fortune, tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", fortune[0][:20])
    b = write_jsonl(tmp_path / "b.jsonl", fortune[1][:20], field="body")  # no field `text`
    out = tmp_path / "cards"
    with pytest.raises(
        DataError,
        match=r"line 1 has no field 'text' \(its fields: \['body'\]\); name the text field "
        r"in --field \(once per FILE, in their order, if the files differ\)",
    ):
        write_cards([a, b], name=None, field=None, out=out, pair="mine", force=False)
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]
    (out / "pairs").mkdir(parents=True)
    (out / "pairs" / "mine.yaml").write_text("name: mine\n")  # one target exists: refused before any is written
    with pytest.raises(ConfigError, match="pass --force to replace it \\(nothing was written\\)"):
        write_cards([a, b], name=None, field=["text", "body"], out=out, pair="mine", force=False)
    assert [p.name for p in out.rglob("*") if p.is_file()] == ["mine.yaml"]


@pytest.mark.parametrize(
    "argv0,run",
    [
        ("/venv/bin/textmetric-bench-card", "textmetric-bench"),
        ("/checkout/bench/data/make_card.py", "python -m textmetric_bench"),
    ],
)
def test_the_card_command_names_the_program_the_way_the_user_ran_it(fortune, tmp_path, monkeypatch, argv0, run):
    monkeypatch.setattr(sys, "argv", [argv0])
    a = write_jsonl(tmp_path / "a.jsonl", fortune[0][:20])
    b = write_jsonl(tmp_path / "b.jsonl", fortune[1][:20])
    written = write_cards([a, b], name=None, field=None, out=tmp_path / "cards", pair="mine", force=False)
    assert written[-1].endswith(f"run it: {run} data.cards=[{tmp_path / 'cards'}] pair.name=mine")


# --- the command line, as a user runs it -------------------------------------------------------------------------


def cli(cwd: Path, program: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCH_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run(
        [str(BIN / program), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize(
    "args,line",
    [
        (["metric=fid"], "error: metric=fid chooses which metrics' parameters are composed"),
        (["repetiton=2"], "error: repetiton=2: there is no setting 'repetiton'; did you mean repetitions=2?"),
        (["pair.a=mine.jsonl", "pair.b=theirs.jsonl"], "for your own files write pair=files pair.a=mine.jsonl"),
        (["+pair.a=mine.jsonl", "+pair.b=theirs.jsonl"], "for your own files write pair=files pair.a=mine.jsonl"),
        (["seed=-1"], "error: seed=-1 is not valid"),  # refused inside the app, after Hydra made the run directory
        (  # unquoted in a shell: two arguments, which Hydra refused with "no viable alternative at input '[chi,'"
            ["metrics=[chi,", "zipf]"],
            "error: metrics=[chi, zipf]: the shell split this override at its spaces; write it without them, "
            "metrics=[chi,zipf], or in quotes, 'metrics=[chi, zipf]'",
        ),
        (  # without -m, which Hydra refused with "Ambiguous value" over four lines
            ["metrics=chi,zipf"],
            "error: metrics=chi,zipf is a sweep, one run per value of metrics; to give them all to one run write "
            "metrics=[chi,zipf]; to sweep, add -m",
        ),
    ],
)
def test_the_command_line_refuses_a_surprise_in_one_line_and_leaves_no_run_directory(fortune, tmp_path, args, line):
    write_jsonl(tmp_path / "mine.jsonl", fortune[0][:30])
    write_jsonl(tmp_path / "theirs.jsonl", fortune[1][:30])
    proc = cli(tmp_path, "textmetric-bench", *args, "progress=false")
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and line in lines[0], proc.stderr[-2000:]
    assert not (tmp_path / "outputs").exists()


def test_the_command_line_sweep_names_its_directory_and_the_aggregate_command(tmp_path):
    proc = cli(tmp_path, "textmetric-bench", "-m", "seed=-1,-2", "hydra.sweep.dir=sweep", "progress=false")
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr[-2000:]
    assert f"sweep directory: {tmp_path / 'sweep'}\n" in proc.stdout
    assert f"textmetric-bench-aggregate {tmp_path / 'sweep'}\n" in proc.stdout, proc.stdout


def test_the_command_line_card_command_writes_all_or_nothing_and_names_itself(fortune, tmp_path):
    write_jsonl(tmp_path / "a.jsonl", fortune[0][:20])
    write_jsonl(tmp_path / "b.jsonl", fortune[1][:20], field="body")
    failed = cli(tmp_path, "textmetric-bench-card", "a.jsonl", "b.jsonl", "--out", "cards", "--pair", "mine")
    assert failed.returncode != 0 and failed.stderr.startswith("error: ") and not (tmp_path / "cards").exists()
    done = cli(
        tmp_path,
        "textmetric-bench-card",
        "a.jsonl",
        "b.jsonl",
        "--field",
        "text",
        "--field",
        "body",
        "--out",
        "cards",
        "--pair",
        "mine",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "run it: textmetric-bench data.cards=[cards] pair.name=mine"
