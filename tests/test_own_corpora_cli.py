"""Your own corpora end to end, as a user starts the app: `python -m textmetric_bench` in a directory of their own (not the
checkout), with files of real texts (the fortune pair) that the test writes there."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_own_corpora import write_texts

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.data.corpora import load_pair

QUICK = ["k=3", "n=10", "repetitions=1", "metrics=[chi,zipf]", "progress=false"]


@pytest.fixture(scope="module")
def fortune():
    a, b = load_pair("fortune_computing_people")
    return list(a.texts), list(b.texts)


def run_in(directory: Path, *args: str, cache_dir: Path, module: str = "textmetric_bench", env: dict | None = None):
    """``python -m <module> args`` started in ``directory``, importing this checkout's code."""
    inherited = {k: v for k, v in os.environ.items() if k != "BENCH_CARDS_PATH"}
    env = {**inherited, "PYTHONPATH": str(PROJECT_ROOT), "BENCH_CACHE_DIR": str(cache_dir), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=directory, env=env, capture_output=True, text=True, timeout=600
    )


def run_json(directory: Path) -> dict:
    """The run.json of the one run under ``directory``/outputs."""
    (found,) = (directory / "outputs").rglob("run.json")
    return json.loads(found.read_text())


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_pair_files_runs_a_jsonl_against_a_csv_and_records_both(fortune, tmp_path, cache_dir):
    a = write_texts(tmp_path / "texts_a.jsonl", fortune[0][:40] + fortune[0][:5])  # 5 duplicates
    b = write_texts(tmp_path / "texts_b.csv", fortune[1][:40])
    proc = run_in(tmp_path, "pair=files", "pair.a=texts_a.jsonl", "pair.b=texts_b.csv", *QUICK, cache_dir=cache_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "KSC on texts_a.jsonl vs texts_b.csv" in proc.stdout and re.search(r"^chi ", proc.stdout, re.M)
    info = run_json(tmp_path)
    assert info["pair"] == "texts_a.jsonl vs texts_b.csv"
    (run_dir,) = (tmp_path / "outputs").rglob("run.json")
    assert run_dir.parent.parent.relative_to(tmp_path).as_posix() == "outputs/ksc/texts_a_vs_texts_b"
    assert "reference rows of" not in proc.stdout + proc.stderr  # own files never have reference rows
    assert info["sources"] == {
        "texts_a.jsonl": {
            "texts": 40,
            "raw_texts": 45,
            "card": None,
            "files": [{"path": str(a), "sha256": sha256_of(a), "raw_texts": 45}],
        },
        "texts_b.csv": {
            "texts": 40,
            "raw_texts": 40,
            "card": None,
            "files": [{"path": str(b), "sha256": sha256_of(b), "raw_texts": 40}],
        },
    }


def test_user_cards_and_a_pair_config_on_the_search_path_run(fortune, tmp_path, cache_dir):
    """Local cards (no url, no sha256; a .txt and a .parquet file) and a pair config from the user's directories."""
    (tmp_path / "data").mkdir()
    write_texts(tmp_path / "data" / "computing.txt", fortune[0][:40])
    write_texts(tmp_path / "data" / "people.parquet", fortune[1][:40], field="body")
    for name, file, parser in (
        ("computing", "computing.txt", "format: txt"),
        ("people", "people.parquet", "format: parquet\n  text_column: body"),
    ):
        card = tmp_path / "my_cards" / "corpora" / f"{name}.yaml"
        card.parent.mkdir(parents=True, exist_ok=True)
        card.write_text(
            f"name: {name}\ndescription: mine\nlicence: CC0\nfiles:\n  - path: ../../data/{file}\nparser:\n  {parser}\n"
        )
    (tmp_path / "my_cards" / "pairs").mkdir()
    (tmp_path / "my_cards" / "pairs" / "mine.yaml").write_text("name: mine\ndescription: d\na: computing\nb: people\n")
    (tmp_path / "my_conf" / "pair").mkdir(parents=True)
    (tmp_path / "my_conf" / "pair" / "mine.yaml").write_text("name: mine\n")
    proc = run_in(
        tmp_path,
        "hydra.searchpath=[file://./my_conf]",
        "pair=mine",
        "data.cards=[./my_cards]",
        *QUICK,
        cache_dir=cache_dir,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = run_json(tmp_path)
    assert info["pair"] == "mine" and (tmp_path / "outputs" / "ksc" / "mine").is_dir()
    assert info["sources"]["people"]["card"] == str(tmp_path / "my_cards" / "corpora" / "people.yaml")
    assert info["sources"]["people"]["files"][0]["sha256"] == sha256_of(tmp_path / "data" / "people.parquet")
    assert info["sources"]["computing"]["texts"] == info["sources"]["people"]["texts"] == 40


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_card_command_writes_cards_that_run(fortune, tmp_path, cache_dir):
    write_texts(tmp_path / "ours.csv", fortune[0][:40])
    write_texts(tmp_path / "theirs.jsonl", fortune[1][:40], field="body")
    written = run_in(
        tmp_path, "ours.csv", "--out", "cards", cache_dir=cache_dir, module="textmetric_bench.data.make_card"
    )
    assert written.returncode == 0 and "wrote cards/corpora/ours.yaml: 40 texts" in written.stdout, written.stderr
    written = run_in(
        tmp_path,
        "theirs.jsonl",
        "--field",
        "body",
        "--out",
        "cards",
        cache_dir=cache_dir,
        module="textmetric_bench.data.make_card",
    )
    assert written.returncode == 0, written.stderr
    (tmp_path / "cards" / "pairs").mkdir()
    (tmp_path / "cards" / "pairs" / "both.yaml").write_text("name: both\ndescription: d\na: ours\nb: theirs\n")
    proc = run_in(
        tmp_path, "pair.name=both", *QUICK, cache_dir=cache_dir, env={"BENCH_CARDS_PATH": str(tmp_path / "cards")}
    )  # the cards path from the environment
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "its licence is still to be filled in" in proc.stdout + proc.stderr
    assert run_json(tmp_path)["sources"]["theirs"]["files"][0]["sha256"] == sha256_of(tmp_path / "theirs.jsonl")


def test_a_missing_file_fails_at_once_with_one_line_naming_it(fortune, tmp_path, cache_dir):
    write_texts(tmp_path / "b.csv", fortune[1][:40])
    proc = run_in(tmp_path, "pair=files", "pair.a=typo.jsonl", "pair.b=b.csv", *QUICK, cache_dir=cache_dir)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert (
        f"error: corpus 'typo.jsonl': file {tmp_path / 'typo.jsonl'} does not exist; give the path of an "
        f"existing file in pair.a" in proc.stderr
    ), proc.stderr[-2000:]
    assert not (tmp_path / "outputs").exists() or not list((tmp_path / "outputs").rglob("run.json"))


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_same_files_by_another_path_resume_the_run_and_a_refused_call_starts_no_log_there(
    fortune, tmp_path, cache_dir, monkeypatch
):
    """The evaluation log knows a file pair by its resolved files, not by the paths as typed: the command line with
    absolute paths, and the API (which makes every path absolute), go on with a run started with relative ones. A
    call refused there (other settings) leaves the directory as it was: no session.log of its own."""
    import textmetric_bench
    from textmetric_bench.errors import ConfigError

    a = write_texts(tmp_path / "texts_a.txt", fortune[0][:40])
    b = write_texts(tmp_path / "texts_b.txt", fortune[1][:40])
    run_dir = tmp_path / "run"
    first = run_in(
        tmp_path,
        "pair=files",
        "pair.a=texts_a.txt",
        "pair.b=texts_b.txt",
        *QUICK,
        f"hydra.run.dir={run_dir}",
        cache_dir=cache_dir,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    again = run_in(
        tmp_path, "pair=files", f"pair.a={a}", f"pair.b={b}", *QUICK, f"hydra.run.dir={run_dir}", cache_dir=cache_dir
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert re.search(r"resuming: (\d+) of \1 evaluations already done", again.stderr), again.stderr[-3000:]
    monkeypatch.setenv("BENCH_CACHE_DIR", str(cache_dir))
    monkeypatch.chdir(tmp_path / "run")  # the API from another directory, with relative paths from there
    small = {"pair": ("../texts_a.txt", "../texts_b.txt"), "n": 10, "repetitions": 1, "progress": False}
    with pytest.raises(ConfigError, match="another configuration"):
        textmetric_bench.evaluate(["chi", "zipf"], k=4, out_dir=run_dir, **small)
    assert not (run_dir / "session.log").exists()
    result = textmetric_bench.evaluate(["chi", "zipf"], k=3, out_dir=run_dir, **small)
    assert result.exit_status == 0 and set(result.summary["metric"]) == {"chi", "zipf"}
    assert "resuming: " in (run_dir / "session.log").read_text()


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_an_earlier_metric_logged_for_part_of_the_evaluations_is_not_merged_but_named(fortune, tmp_path, cache_dir):
    """An earlier metric whose logged evaluations cover only part of this run's (the earlier run ended early, or a
    file was edited since and only the corpora that did not change match): merged, its row would stand on part of
    them (its measures "–", its T from what is left), so it is left out of the tables, and the run says which and
    how many of its evaluations were logged."""
    write_texts(tmp_path / "texts_a.txt", fortune[0][:40])
    write_texts(tmp_path / "texts_b.txt", fortune[1][:40])
    files = ["pair=files", "pair.a=texts_a.txt", "pair.b=texts_b.txt", f"hydra.run.dir={tmp_path / 'run'}"]
    two = [a if not a.startswith("repetitions=") else "repetitions=2" for a in QUICK]
    first = run_in(tmp_path, *files, *two, cache_dir=cache_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    log = tmp_path / "run" / "evaluations.jsonl"
    header, *rows = log.read_text().splitlines()
    kept = [r for r in rows if not (json.loads(r)["key"][0] == "zipf" and json.loads(r)["key"][2] == 1)]
    assert 0 < len(rows) - len(kept) < len(rows) / 2  # zipf's repetition 1: as if the run had ended before it
    log.write_text("\n".join([header, *kept]) + "\n")
    only_chi = [a if not a.startswith("metrics=") else "metrics=[chi]" for a in two]
    again = run_in(tmp_path, *files, *only_chi, cache_dir=cache_dir)
    assert again.returncode == 0, again.stderr[-3000:]
    said = " ".join(again.stderr.split())
    found = re.search(r"Not merged from an earlier run in this directory: zipf \((\d+) of (\d+) of this run's", said)
    assert found and int(found[1]) * 2 == int(found[2]), said[-3000:]
    assert "held results of zipf" not in said  # not said to be merged
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["metrics"] == ["chi"] and info["earlier_metrics"] == [] and "zipf" in info["earlier_not_merged"]
    assert "Not merged from an earlier run" in (tmp_path / "run" / "table3.md").read_text()


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_file_edited_since_the_earlier_run_is_named_when_the_run_goes_on(fortune, tmp_path, cache_dir):
    """A run in a directory whose earlier run read a file that has changed since says which file changed (its
    sha256 then and now) before it goes on, so that evaluations done again (or "resuming: 3 of 6 evaluations already
    done") are not read as the earlier run having ended early; run.json keeps it (``files_changed``)."""
    write_texts(tmp_path / "texts_a.txt", fortune[0][:40])
    b = write_texts(tmp_path / "texts_b.txt", fortune[1][:40])
    files = ["pair=files", "pair.a=texts_a.txt", "pair.b=texts_b.txt", f"hydra.run.dir={tmp_path / 'run'}"]
    first = run_in(tmp_path, *files, *QUICK, cache_dir=cache_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    before = sha256_of(b)
    assert "Files changed since" not in first.stderr  # nothing changed, nothing said: test_changed_files_... below
    write_texts(b, fortune[1][1:41])  # one text out, another in
    edited = run_in(tmp_path, *files, *QUICK, cache_dir=cache_dir)
    assert edited.returncode == 0, edited.stderr[-3000:]
    said = " ".join(edited.stderr.split())
    assert (
        f"Files changed since the earlier run in this directory: texts_b.txt ({b}: sha256 {before[:12]} then, "
        f"{sha256_of(b)[:12]} now). Evaluations of corpora holding texts that changed are computed again" in said
    ), said[-3000:]
    assert "texts_a.txt (" not in said and not re.search(r"resuming: (\d+) of \1 ", said)
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert list(info["files_changed"]) == ["texts_b.txt"]


def test_changed_files_matches_files_by_path_or_place_and_sources_by_name_or_place():
    from textmetric_bench.tasks.skeleton import changed_files

    def sources(**files):
        return {
            "sources": {name: {"files": [{"path": p, "sha256": s} for p, s in pairs]} for name, pairs in files.items()}
        }

    then = sources(a=[("a.txt", "1" * 64)], b=[("b.txt", "2" * 64)])
    assert changed_files({}, then) == {}  # a first run
    assert changed_files(then, then) == {}
    assert changed_files(then, sources(a=[("a.txt", "1" * 64)], b=[("b.txt", "3" * 64)])) == {
        "b": f"b.txt: sha256 {'2' * 12} then, {'3' * 12} now"
    }
    # the same files by other paths: unchanged; edited: matched by place
    assert changed_files(then, sources(x=[("/d/a.txt", "1" * 64)], y=[("/d/b.txt", "2" * 64)])) == {}
    assert changed_files(then, sources(x=[("/d/a.txt", "4" * 64)], y=[("/d/b.txt", "2" * 64)])) == {
        "x": f"/d/a.txt: sha256 {'1' * 12} then, {'4' * 12} now"
    }
    # a card's directory now one file fewer
    cards = sources(a=[("p/1", "1" * 64), ("p/2", "5" * 64)], b=[("b.txt", "2" * 64)])
    assert changed_files(cards, then) == {"a": "2 files then, 1 now"}
