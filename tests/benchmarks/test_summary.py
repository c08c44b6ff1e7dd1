"""The benchmark table (summary.py): ratios on equal resources, missing runs, the JSON file.

The records are built here in the shape ``run_experiment`` returns; the numbers are arbitrary, so
what is checked is the arithmetic and the layout, not any measurement.
"""

import json

import pytest
from summary import COLUMNS, STUDIES, machine, summary_rows, table_lines, write_summary


def _record(seconds, rss, cpu=None, evaluations=10, per_metric=None, cpus=None):
    return {
        "seconds": seconds,
        "tree_cpu_s": cpu,
        "peak_tree_rss_mb": rss,
        "evaluations": evaluations,
        "seconds_per_metric": per_metric or {},
        "cpus": cpus,
    }


def test_per_metric_seconds_and_the_pinned_cores_reach_the_docs_table():
    from summary import markdown

    results = {
        "ksc/ours-serial": _record(10.0, 1.0, per_metric={"fid": 2.0, "mauve": 8.0}, cpus=1),
        "ksc/compcor": _record(40.0, 1.0, per_metric={"fid": 30.0, "mauve": 10.0}, cpus=1),
    }
    [row] = summary_rows(results)
    assert row["serial_cpus"] == 1
    assert row["per_metric"] == {"fid": {"ours": 2.0, "compcor": 30.0}, "mauve": {"ours": 8.0, "compcor": 10.0}}
    text = markdown({"machine": machine(), "studies": [row]})
    assert "| fid | 2.0 s | 30.0 s | 15.00 |" in text and "| mauve | 8.0 s | 10.0 s | 1.25 |" in text
    assert "pinned to 1 CPU core(s)" in text
    results["ksc/ours-serial"]["seconds_per_metric"]["irpr"] = 0.5  # compcor has no irpr: ours kept, no ratio
    [row] = summary_rows(results)
    assert "| irpr | 0.5 s | - | - |" in markdown({"machine": machine(), "studies": [row]})


def test_a_record_names_the_cpus_widest_vector_instructions_and_pages_show_them_where_recorded():
    from summary import cpu_named, instruction_set

    from textmetric_bench.numerics import cpu_flags

    flags = frozenset({"fpu", "sse2", "avx", "avx2", "fma"})
    assert instruction_set(flags) == "AVX2"
    assert instruction_set(flags | {"avx512f", "avx512dq"}) == "AVX-512"
    assert instruction_set(frozenset({"fpu", "sse2", "avx"})) is None and instruction_set(frozenset()) is None
    here = machine()["isa"]
    assert here == ("AVX-512" if "avx512f" in cpu_flags() else "AVX2" if "avx2" in cpu_flags() else None)
    assert cpu_named({"cpu": "AMD EPYC", "isa": "AVX-512"}) == "AMD EPYC, AVX-512"
    assert cpu_named({"cpu": "AMD EPYC"}) == "AMD EPYC"  # a record from before the field
    assert cpu_named({"cpu": "AMD EPYC", "isa": None}) == "AMD EPYC"  # neither AVX2 nor AVX-512


def test_ratio_is_compcor_over_ours_serial_not_the_parallel_run():
    results = {
        "robustness/ours-serial": _record(50.0, 900.0, cpu=48.0),
        "robustness/ours-2-workers": _record(20.0, 1500.0),
        "robustness/compcor": _record(200.0, 1000.0, cpu=190.0),
    }
    [row] = summary_rows(results)
    assert set(row) == set(COLUMNS)
    assert row["study"] == "robustness"
    assert row["ratio"] == pytest.approx(4.0)  # 200 / 50: the 2-worker 20 s takes no part
    assert (row["ours_2_workers_s"], row["ours_2_workers_peak_rss_mb"]) == (20.0, 1500.0)
    assert (row["ours_cpu_s"], row["compcor_cpu_s"]) == (48.0, 190.0)
    assert row["cpu_ratio"] == pytest.approx(190.0 / 48.0)


def test_a_missing_run_gives_no_ratio_and_a_dash():
    rows = summary_rows({"ksc/compcor": _record(300.0, 600.0)})
    assert [r["study"] for r in rows] == ["ksc"]
    assert rows[0]["ratio"] is None and rows[0]["ours_s"] is None
    lines = table_lines(rows)
    assert len(lines) == 2 and lines[1].split()[:5] == ["ksc", "10", "-", "300.0", "-"]
    assert summary_rows({}) == []


def test_summary_json_holds_the_rows_and_the_machine(tmp_path):
    results = {
        f"{study}/{impl}": _record(10.0 * (i + 1), 100.0)
        for study in STUDIES
        for i, impl in enumerate(["ours-serial", "compcor"])
    }
    rows, about = summary_rows(results), machine()
    write_summary(tmp_path / "summary.json", rows, about)
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert [r["study"] for r in saved["studies"]] == list(STUDIES)
    assert all(r["ratio"] == pytest.approx(2.0) for r in saved["studies"])
    assert saved["machine"]["logical_cores"] >= 1 and saved["machine"]["memory_gib"] > 0


def test_the_docs_quote_the_committed_summary():
    """docs/generated/benchmark.md is the table generated from tests/benchmarks/quoted_summary.json, unedited, and the
    performance page includes it."""
    from summary import GENERATED, QUOTED, generated_page

    quoted = json.loads(QUOTED.read_text())
    assert GENERATED.read_text(encoding="utf-8") == generated_page(quoted), (
        "run python tests/benchmarks/summary.py --docs (with the quoted summary)"
    )
    assert {r["study"] for r in quoted["studies"]} <= set(STUDIES)
    page = (QUOTED.parents[2] / "docs" / "performance.md").read_text(encoding="utf-8")
    assert '--8<-- "docs/generated/benchmark.md"' in page


def test_write_generated_writes_the_page_and_keeps_the_quoted_copy(tmp_path, monkeypatch):
    import summary

    quoted = json.loads(summary.QUOTED.read_text())
    (tmp_path / "summary.json").write_text(json.dumps(quoted))
    monkeypatch.setattr(summary, "QUOTED", tmp_path / "quoted.json")
    readme = tmp_path / "README.md"
    readme.write_text(f"front {summary.IFC_START}old{summary.IFC_END} back")
    summary.write_generated(tmp_path / "summary.json", tmp_path / "generated" / "benchmark.md", readme=readme)
    assert readme.read_text() == f"front {summary.IFC_START}{summary.readme_ifc_text(quoted)}{summary.IFC_END} back"
    assert (tmp_path / "generated" / "benchmark.md").read_text(encoding="utf-8") == summary.generated_page(quoted)
    assert json.loads((tmp_path / "quoted.json").read_text()) == quoted


def test_the_readme_quotes_the_default_ifc_run_of_the_quoted_summary():
    from summary import IFC_END, IFC_START, QUOTED, README, readme_ifc_text

    text = README.read_text(encoding="utf-8")
    assert text.count(IFC_START) == 1
    assert text.split(IFC_START, 1)[1].split(IFC_END, 1)[0] == readme_ifc_text(json.loads(QUOTED.read_text())), (
        "run python tests/benchmarks/summary.py --docs"
    )


def test_an_ifc_run_measured_alone_replaces_only_that_row(tmp_path, monkeypatch):
    import summary

    quoted = json.loads(summary.QUOTED.read_text())
    monkeypatch.setattr(summary, "QUOTED", tmp_path / "quoted.json")
    summary.QUOTED.write_text(json.dumps(quoted))
    about = {**summary.machine(), "logical_cores": 2, "cpu": "Some CPU", "isa": "AVX2", "date": "2030-01-02 03:04 UTC"}
    run = {
        "seconds": 201.0,
        "peak_tree_rss_mb": 2900.0,
        "load_at_start": 0.1,
        "generation_threads": 2,
        "machine": about,
    }
    (tmp_path / "alone.json").write_text(
        json.dumps({"machine": about, "studies": [], "lm": {"machine": about, "jobs": [], "ifc_run": run}})
    )
    readme = tmp_path / "README.md"
    readme.write_text(f"{summary.IFC_START}{summary.IFC_END}")
    summary.write_generated(tmp_path / "alone.json", tmp_path / "benchmark.md", part="ifc-run", readme=readme)
    merged = json.loads(summary.QUOTED.read_text())
    assert merged["studies"] == quoted["studies"] and merged["lm"]["jobs"] == quoted["lm"]["jobs"]
    assert merged["lm"]["ifc_run"] == run
    assert (
        "the default run took 3.4 min at a peak of 2,900 MiB on an idle 2-core Some CPU with AVX2 ("
        in readme.read_text()
    )
    assert (
        "measured on 2030-01-02 03:04 UTC (Some CPU, AVX2, 2 logical cores)" in (tmp_path / "benchmark.md").read_text()
    )
    (tmp_path / "empty.json").write_text(json.dumps({"machine": about, "studies": []}))
    with pytest.raises(SystemExit, match="no default IFC run"):
        summary.write_generated(tmp_path / "empty.json", tmp_path / "benchmark.md", part="ifc-run", readme=readme)


def test_studies_measured_alone_replace_only_the_studies(tmp_path, monkeypatch):
    """``--part studies``: a run of test_experiments.py alone brings its studies and their machine; the quoted language-model
    table stays, and a summary without studies is refused."""
    import summary

    quoted = json.loads(summary.QUOTED.read_text())
    monkeypatch.setattr(summary, "QUOTED", tmp_path / "quoted.json")
    summary.QUOTED.write_text(json.dumps(quoted))
    about = {**summary.machine(), "cpu": "Other CPU", "date": "2030-01-02 03:04 UTC"}
    study = {**quoted["studies"][0], "ours_s": 10.0, "compcor_s": 150.0, "ratio": 15.0}
    (tmp_path / "alone.json").write_text(json.dumps({"machine": about, "studies": [study]}))
    readme = tmp_path / "README.md"
    readme.write_text(f"{summary.IFC_START}{summary.IFC_END}")
    summary.write_generated(tmp_path / "alone.json", tmp_path / "benchmark.md", part="studies", readme=readme)
    merged = json.loads(summary.QUOTED.read_text())
    assert merged["studies"] == [study] and merged["machine"] == about and merged["lm"] == quoted["lm"]
    page = (tmp_path / "benchmark.md").read_text()
    assert "15.00" in page and "Other CPU" in page
    (tmp_path / "empty.json").write_text(json.dumps({"machine": about, "studies": []}))
    with pytest.raises(SystemExit, match="no study against compcor"):
        summary.write_generated(tmp_path / "empty.json", tmp_path / "benchmark.md", part="studies", readme=readme)


def test_lm_jobs_measured_alone_replace_only_the_jobs(tmp_path, monkeypatch):
    """``--part lm-jobs``: the language model's tokens-per-second rows and their machine come from the new run; the quoted
    IFC runs and studies stay."""
    import summary

    quoted = json.loads(summary.QUOTED.read_text())
    monkeypatch.setattr(summary, "QUOTED", tmp_path / "quoted.json")
    summary.QUOTED.write_text(json.dumps(quoted))
    about = {**summary.machine(), "cpu": "Other CPU", "date": "2030-01-02 03:04 UTC"}
    jobs = summary.lm_rows(
        {
            summary.LM_AFTER: {
                "scoring": {"tokens_per_s": 200.0, "tokens_per_cpu_s": 210.0},
                summary.ENGINE_JOB: {"tokens_per_s": 250.0, "tokens_per_cpu_s": 260.0},
            }
        }
    )
    (tmp_path / "alone.json").write_text(
        json.dumps({"machine": about, "studies": [], "lm": {"machine": about, "jobs": jobs}})
    )
    readme = tmp_path / "README.md"
    readme.write_text(f"{summary.IFC_START}{summary.IFC_END}")
    summary.write_generated(tmp_path / "alone.json", tmp_path / "benchmark.md", part="lm-jobs", readme=readme)
    merged = json.loads(summary.QUOTED.read_text())
    assert merged["studies"] == quoted["studies"] and merged["lm"]["ifc_run"] == quoted["lm"]["ifc_run"]
    assert merged["lm"]["jobs"] == jobs and merged["lm"]["machine"] == about
    assert f"| {summary.LM_ENGINE_ROW} | 200.0 | 250.0 | 1.25 |" in (tmp_path / "benchmark.md").read_text()
    (tmp_path / "empty.json").write_text(json.dumps({"machine": about, "studies": []}))
    with pytest.raises(SystemExit, match="no language-model job"):
        summary.write_generated(tmp_path / "empty.json", tmp_path / "benchmark.md", part="lm-jobs", readme=readme)


def test_the_engine_row_compares_ctranslate2_with_torch_in_the_after_run():
    from summary import ENGINE_JOB, LM_AFTER, LM_BEFORE, LM_ENGINE_ROW, lm_markdown, lm_rows

    speed = lambda wall, cpu: {"tokens_per_s": wall, "tokens_per_cpu_s": cpu}
    results = {
        LM_BEFORE: {"scoring": speed(100.0, 110.0)},
        LM_AFTER: {"scoring": speed(200.0, 220.0), ENGINE_JOB: speed(260.0, 330.0)},
    }
    rows = lm_rows(results)
    [engine] = [r for r in rows if r["job"] == LM_ENGINE_ROW]
    assert (engine["before_tokens_per_s"], engine["after_tokens_per_s"]) == (200.0, 260.0)  # not the before run's
    assert engine["tokens_per_s_ratio"] == pytest.approx(1.3) and engine["tokens_per_cpu_s_ratio"] == pytest.approx(1.5)
    text = lm_markdown({"machine": machine(), "jobs": rows, "ifc_run": None})
    assert f"| {LM_ENGINE_ROW} | 200.0 | 260.0 | 1.30 | 220.0 | 330.0 | 1.50 | - |" in text
    del results[LM_AFTER][ENGINE_JOB]  # an after run without CTranslate2: no such row
    assert LM_ENGINE_ROW not in [r["job"] for r in lm_rows(results)]
