"""report.html reads like aggregate: runs never pooled, every interval the same, a pair's tasks joined
into one profile with unmeasured axes marked, symbols, significance, warnings and own noise."""

from __future__ import annotations

import json
import re
import shutil
from html import escape

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from textmetric_bench.reports.html.report import build_report
from textmetric_bench.reports.tables.significance import HINT_NOTE
from textmetric_bench.reports.html.tables import negative_divergence_html, table3_html
from textmetric_bench.reports.sweep.aggregate import aggregate_sweep, write_sweep_tables
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ksc import run_ksc
from textmetric_bench.tasks.robustness import run_robustness

PAIR_SOURCES = ("fortune_computing", "fortune_people")  # the default pair, conf/config.yaml


def saved(cfg, out_dir):
    (out_dir / ".hydra").mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, out_dir / ".hydra" / "config.yaml")
    return out_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cache_dir):
    """Two KSC runs of one setting (seeds 0 and 1, 5 repetitions), one with 3 repetitions, one robustness run."""
    root = tmp_path_factory.mktemp("runs")
    for name, seed, reps in (("ksc_seed0", 0, 5), ("ksc_seed1", 1, 5), ("ksc_k5", 0, 3)):
        k = 5 if name == "ksc_k5" else 4
        cfg = compose_config(
            [
                f"k={k}",
                "n=12",
                f"repetitions={reps}",
                f"seed={seed}",
                "progress=false",
                "metrics=[chi,zipf]",
                f"data.cache_dir={cache_dir}",
            ]
        )
        run_ksc(cfg, root / name)
        saved(cfg, root / name)
    cfg = compose_config(
        [
            "task=robustness",
            "sizes=[20,40,80]",
            "n_ref=100",
            "imbalance_total=100",
            "repetitions=2",
            "progress=false",
            "metrics=[chi,zipf]",
            f"data.cache_dir={cache_dir}",
        ]
    )
    run_robustness(cfg, root / "robustness")
    saved(cfg, root / "robustness")
    return root


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    page = build_report([runs], out)["report_html"].read_text()
    return out, page


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_report_and_aggregate_agree_on_every_interval(runs, report):
    out, _ = report
    long = aggregate_sweep(runs).set_index(["run_dir", "metric", "measure"])
    tables = sorted(out.glob("table3_*.csv"))
    assert len(tables) == 3  # one per KSC run, the robustness run joined to each
    checked = 0
    for path in tables:
        table = pd.read_csv(path, index_col="metric")
        members = table["runs"].iloc[0].split(";")
        assert len(members) == 2 and members[1].endswith("robustness")
        for metric in table.index:
            for measure in ("A", "Aw", "rho", "omega2", "L", "S", "I", "T100"):
                rows = [long.loc[(r, metric, measure)] for r in members if (r, metric, measure) in long.index]
                assert len(rows) == 1, (path, metric, measure)
                for column in ("mean", "ci_low", "ci_high"):
                    suffix = "" if column == "mean" else f"_{column}"
                    assert table.at[metric, f"{measure}{suffix}"] == pytest.approx(rows[0][column], nan_ok=True)
                    checked += 1
    assert checked == 3 * 2 * 8 * 3


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_two_runs_of_one_setting_are_labelled_and_not_pooled(report):
    _, page = report
    section = page[page.index("KSC k=4") : page.index("KSC k=5")]
    assert "2 separate runs of this setting" in section
    assert re.search(r"Run ksc_seed0 · seed 0 · \d{4}-\d\d-\d\d", section)
    assert re.search(r"Run ksc_seed1 · seed 1 · \d{4}-\d\d-\d\d", section)
    assert "(generated)" not in page and "robustness</h2>" not in page  # robustness joined, not a section


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_pairs_tasks_join_one_profile_and_unmeasured_axes_are_marked(report, runs, tmp_path):
    _, page = report
    head = re.search(r"<table class=table3><thead><tr>(.*?)</tr>", page).group(1)
    assert [re.sub("<.*?>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", head)] == [
        "metric",
        "A",
        "Aw",
        "T [100&nbsp;op/s]",
        "ρ",
        "ω²",
        "L",
        "S",
        "I",
    ]  # no column for a measure not run
    assert "A<sup>w</sup>" in head and ">rho<" not in page and ">omega2<" not in page
    assert (
        "Not in this table, as no run in this report measured them: IFC (no ifc run on a source corpus of this "
        "pair; task=ifc adds it)"
    ) in page
    # an IFC run on one of the pair's sources joins the same table (its measures.csv and config as run_ifc
    # writes them: generating with the LM takes minutes)
    ifc = tmp_path / "runs"
    shutil.copytree(runs, ifc)
    rng = np.random.default_rng(0)
    ifc_dir = saved(OmegaConf.create({"task": "ifc", "ifc": {"source": PAIR_SOURCES[0]}}), ifc / "ifc")
    pd.DataFrame(
        {"metric": ["chi"] * 3 + ["zipf"] * 3, "repetition": [0, 1, 2] * 2, "IFC": rng.uniform(0.5, 1, 6)}
    ).to_csv(ifc_dir / "measures.csv", index=False)
    (ifc_dir / "run.json").write_text(json.dumps({"task": "ifc", "joins_ksc": True, "sources": {PAIR_SOURCES[0]: {}}}))
    joined = build_report([ifc], tmp_path / "out")["report_html"].read_text()
    assert "Not in this table" not in joined and joined.count("Joined: robustness") == 3
    table = pd.read_csv(min((tmp_path / "out").glob("table3_*.csv")), index_col="metric")
    assert table["IFC"].notna().all() and table["runs"].iloc[0].count(";") == 2


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_significance_matrix_warning_and_symbols(report):
    _, page = report
    assert page.count("<h4>Which metric is better</h4>") == 3
    assert "white-space:nowrap" in page and "overflow-x:auto" in page
    k5 = page[page.index("KSC k=5") :]
    assert re.search(r"Warning \(ksc run ksc_k5 · [^)]*\): only 3 repetitions", k5)
    assert "Warning (robustness run robustness" in k5  # the joined run has 2
    assert "Warning (ksc run" not in page[: page.index("KSC k=5")]
    # per run block: 8 measures, chi and zipf compared both ways, no repeats. A cell of fewer than 5 paired
    # repetitions is striped and says so: every cell of the k=5 block (3 repetitions), S and I everywhere (the
    # joined robustness run has 2); the seed blocks' KSC measures (5) are plain.
    plain = r"<td class=(?:better|worse|tie) title='Holm p = [\d.]+'>"
    hint = r"<td class='(?:better|worse|tie) hint' title='Holm p = [\d.]+; [23] paired repetitions: a hint, not a finding'>"
    starts = [m.end() for m in re.finditer("<h4>Which metric is better</h4>", page)]
    for start, end in zip(starts, [*starts[1:], len(page)]):
        block, k5_block = page[start:end], start > page.index("KSC k=5")
        assert block.count(escape(HINT_NOTE)) == 1
        matrices = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", block)
        assert len(matrices) == 8
        for symbol, matrix in matrices:
            few = k5_block or symbol in ("S", "I")
            assert len(re.findall(hint if few else plain, matrix)) == 2, (symbol, matrix)
            assert not re.findall(plain if few else hint, matrix), (symbol, matrix)
    assert "percentile bootstrap interval over repetitions" in page and "pooled" in page


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_report_of_several_runs_never_replaces_a_runs_own_page(runs, tmp_path, monkeypatch, capsys):
    from textmetric_bench.reports.__main__ import main as report_main

    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    own = {name: (copy / name / "report.html") for name in ("ksc_seed0", "ksc_seed1")}
    for name, page in own.items():
        page.write_text(f"the page of {name}")
    monkeypatch.chdir(tmp_path)
    assert report_main([str(copy / "ksc_seed0"), str(copy / "ksc_seed1")]) == 0
    written = sorted((tmp_path / "combined_reports").glob("*/report.html"))
    assert len(written) == 1 and f"wrote {written[0]}" in capsys.readouterr().out
    assert "ksc_seed0" in written[0].read_text() and "ksc_seed1" in written[0].read_text()
    assert all(page.read_text() == f"the page of {name}" for name, page in own.items())
    assert report_main([str(copy / "ksc_seed0"), str(copy / "ksc_seed1"), "--out", str(copy / "ksc_seed1")]) == 2
    assert "is a run's directory" in capsys.readouterr().err and own["ksc_seed1"].read_text() == "the page of ksc_seed1"


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_own_noise_table_is_shown_when_the_run_has_one(runs, tmp_path):
    copy = tmp_path / "runs"
    shutil.copytree(runs / "ksc_seed0", copy / "ksc_seed0")
    pd.DataFrame({"metric": ["chi"], "seeds": [4], "own_sd": [0.002], "data_sd": [0.01], "ratio": [0.2]}).to_csv(
        copy / "ksc_seed0" / "own_noise.csv", index=False
    )
    page = build_report([copy])["report_html"].read_text()
    assert "A metric's own noise" in page and "<td>.200</td>" in page


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_aggregate_warns_and_writes_significance(runs, tmp_path):
    paths = write_sweep_tables(runs, tmp_path)
    summary = pd.read_csv(paths["sweep_summary"])
    flagged = summary.loc[summary["warning"].notna(), "run_dir"].unique()
    assert {p.split("/")[-1] for p in flagged} == {"ksc_k5", "robustness"}  # 3 and 2 repetitions
    table = paths["sweep_table"].read_text()
    assert "**Warning (1 of 4 jobs: ksc_k5): only 3 repetitions" in table  # each warning once, naming its jobs
    assert table.count("Warning") == 2, table  # ksc_k5's and the robustness run's
    rho = pd.read_csv(paths["significance_rho"])
    assert set(rho["run_dir"].map(lambda p: p.split("/")[-1])) == {"ksc_seed0", "ksc_seed1", "ksc_k5"}
    assert ((rho["metric_a"] == "chi") & (rho["metric_b"] == "zipf")).sum() == 3


def test_bounds_rows_come_first_and_last_in_italic_rows():
    summary = pd.DataFrame(
        [(m, "A", v, 0.0, 5, v, v) for m, v in (("chance", 0.5), ("zeta", 0.8), ("oracle", 1.0))],
        columns=["metric", "measure", "mean", "std", "n", "ci_low", "ci_high"],
    )
    page = table3_html(summary, {}, {})
    assert page.index("ceiling (oracle)") < page.index("zeta") < page.index("floor (chance)")
    assert "<tr class=bound-ceiling>" in page and "<tr class=bound-floor>" in page


def test_negative_divergences_are_explained_and_similarities_ignored():
    distances = pd.DataFrame(
        {
            "metric": ["kl", "kl", "sim"],
            "orientation": ["distance", "distance", "similarity"],
            "distance": [-0.01, 0.3, -0.5],
        }
    )
    note = negative_divergence_html(distances)
    assert "estimator bias" in note and "<b>kl</b>: 1 of 2" in note and "<b>sim</b>" not in note
    assert negative_divergence_html(distances.iloc[1:2]) == ""


def test_a_run_on_a_file_of_the_same_name_but_other_texts_does_not_join(tmp_path):
    """Runs of one file pair join by the sources' names only while the files hold the same texts: a file edited
    between a robustness run and a KSC run gives a robustness run of other corpora, kept in a section of its own."""
    from textmetric_bench.reports.sweep.runs import Run, joins

    def run(task: str, digest_a: str) -> Run:
        sources = {
            "a.txt": {"texts": 40, "files": [{"path": "/x/a.txt", "sha256": digest_a, "raw_texts": 40}]},
            "b.txt": {"texts": 40, "files": [{"path": "/x/b.txt", "sha256": "b" * 64, "raw_texts": 40}]},
        }
        return Run(tmp_path / task, {"task": task}, pd.DataFrame(), manifest={"joins_ksc": True, "sources": sources})

    ksc = run("ksc", "a" * 64)
    assert joins(run("robustness", "a" * 64), ksc)
    assert not joins(run("robustness", "c" * 64), ksc)  # a.txt edited in between
    unrecorded = run("robustness", "c" * 64)
    unrecorded.manifest["sources"] = {name: {"texts": 40} for name in unrecorded.manifest["sources"]}
    assert joins(unrecorded, ksc)  # an older run.json without the files: by name, as before
