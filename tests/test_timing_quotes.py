"""The measurements quoted per CPU in docs/reproducibility.md: each page (docs/generated/cold_run.md,
docs/generated/embedding_speed.md) is the one its script in tests/benchmarks/ makes from its quote, unedited, and is
included; every record names its CPU and holds whole measurements; what the docs say of the numbers holds."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmark_scripts import benchmark_script
from textmetric_bench import PROJECT_ROOT

SCRIPTS = ("cold_run", "embedding_speed")
#: The last record made before records named the CPU's vector instructions (docs/reproducibility.md says so).
LAST_WITHOUT_ISA = "2026-12-02 09:54 UTC"


@pytest.fixture(scope="module")
def cold_run():
    return benchmark_script("cold_run")


@pytest.fixture(scope="module")
def embedding_speed():
    return benchmark_script("embedding_speed")


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_page_is_generated_from_the_quote_and_included(name):
    quote = benchmark_script(name)
    quoted = json.loads(quote.QUOTED.read_text(encoding="utf-8"))
    assert quoted["records"], "the quote holds no measurement"
    assert quote.PAGE.read_text(encoding="utf-8") == quote.page(quoted)
    included = f'--8<-- "docs/generated/{name}.md"'
    assert included in (PROJECT_ROOT / "docs/reproducibility.md").read_text(encoding="utf-8")


def test_every_record_names_its_cpu_and_holds_whole_runs(cold_run):
    for record in json.loads(cold_run.QUOTED.read_text(encoding="utf-8"))["records"]:
        assert record["cpu"] and record["logical_cores"] >= 1 and record["commit"]
        assert record["runs"]
        assert record.get("isa") in {"AVX2", "AVX-512"} if record["date"] > LAST_WITHOUT_ISA else "isa" not in record
        for run in record["runs"]:
            assert 0 < run["embedding_seconds"] < run["seconds"]
            assert run["texts"] > 0


def test_the_page_says_from_when_records_name_the_vector_instructions():
    assert f"records made after {LAST_WITHOUT_ISA}" in (PROJECT_ROOT / "docs/reproducibility.md").read_text(
        encoding="utf-8"
    ).replace("\n", " ")


def test_the_page_counts_the_runs_under_the_goal(cold_run):
    record = {
        "cpu": "Some CPU",
        "logical_cores": 2,
        "date": "2026-01-01 00:00 UTC",
        "load_average_before": [0.1, 0.1, 0.1],
        "commit": "abc1234",
        "runs": [
            {"seconds": 59.9, "embedding_seconds": 30.0, "texts": 2570},
            {"seconds": 60.0, "embedding_seconds": 31.0, "texts": 2570},
            {"seconds": 45.0, "embedding_seconds": 29.0, "texts": 2570},
        ],
    }
    row = cold_run.page({"records": [record]}).splitlines()[-1]
    assert "59.9, 60.0, 45.0 s" in row and "| 59.9 s |" in row  # the median
    assert row.endswith("| 2 of 3 |")  # 60.0 is not under 60 s
    assert "Some CPU (2)" in row and "2,570 texts" in row
    # A record made since the field exists names the CPU's widest vector instructions too.
    assert "| Some CPU, AVX2 (2) |" in cold_run.page({"records": [{**record, "isa": "AVX2"}]}).splitlines()[-1]


def test_every_record_names_its_cpu_and_measures_every_kind_of_text(embedding_speed):
    kinds = [label for label, _, _ in embedding_speed.KINDS]
    for record in json.loads(embedding_speed.QUOTED.read_text(encoding="utf-8"))["records"]:
        assert record["cpu"] and record["logical_cores"] >= 1 and record["commit"]
        assert [kind["kind"] for kind in record["kinds"]] == kinds
        assert record.get("isa") in {"AVX2", "AVX-512"} if record["date"] > LAST_WITHOUT_ISA else "isa" not in record
        for kind in record["kinds"]:
            assert kind["texts"] > 0 and kind["mean_word_pieces"] > 2  # [CLS] and [SEP] at least
            assert kind["rounds"] and all(r["library"] > 0 and r["harness"] > 0 for r in kind["rounds"])
        assert 0 < record["product_ms"]["float32"] and 0 < record["product_ms"]["float64"]


def test_the_page_states_the_ratio_of_the_medians_against_the_goal(embedding_speed):
    record = {
        "cpu": "Some CPU",
        "logical_cores": 2,
        "date": "2026-01-01 00:00 UTC",
        "load_average_before": [0.1, 0.1, 0.1],
        "commit": "abc1234",
        "product_ms": {"float32": 4.0, "float64": 8.0},
        "kinds": [
            {
                "kind": "intents",
                "pair": "p",
                "texts": 3000,
                "mean_word_pieces": 13.4,
                "rounds": [{"library": 100.0, "harness": 70.0}, {"library": 300.0, "harness": 90.0}],
            },
            {
                "kind": "paragraphs",
                "pair": "q",
                "texts": 200,
                "mean_word_pieces": 135.0,
                "rounds": [{"library": 10.0, "harness": 8.0}],
            },
        ],
    }
    first, second = embedding_speed.page({"records": [record]}).splitlines()[-2:]
    assert "| 100.0, 300.0 | 70.0, 90.0 | 0.40 | no |" in first  # 80 / 200, not a mean of the two rounds' ratios
    assert "| 10.0 | 8.0 | 0.80 | yes |" in second  # the goal is at least 0.8
    assert "Some CPU (2)" in first and "3,000 intents (`p`, 13 word pieces on average)" in first
    assert first.endswith("| 4.0 / 8.0 ms (0.50) |") and second.endswith("| 4.0 / 8.0 ms (0.50) |")


def test_what_the_page_says_of_the_quote_holds_for_every_record(embedding_speed):
    """docs/reproducibility.md ("Why not the library's speed"): the float64 product takes about twice as long as the
    float32 one; the harness's ratio is within 0.12 of theirs on paragraphs and above it on intents, on every
    machine quoted."""
    for record in json.loads(embedding_speed.QUOTED.read_text(encoding="utf-8"))["records"]:
        product = record["product_ms"]["float32"] / record["product_ms"]["float64"]
        assert 0.35 <= product <= 0.7, (record["cpu"], product)
        kinds = {kind["kind"]: embedding_speed.ratio(kind) for kind in record["kinds"]}
        assert abs(kinds["paragraphs"] - product) <= 0.12, (record["cpu"], kinds, product)
        assert kinds["intents"] > product, (record["cpu"], kinds, product)


def test_what_the_page_says_of_the_slower_host_holds(cold_run, embedding_speed):
    """docs/reproducibility.md: the cold runs of 2026-12-02 are slower than those of the day before, and in the
    embedder's row of that day both plain sentence-transformers and the harness were slower than on 2026-11-30."""
    text = (PROJECT_ROOT / "docs/reproducibility.md").read_text(encoding="utf-8")
    assert "the rows of 2026-12-02 are slower than those of the day before" in text
    runs = json.loads(cold_run.QUOTED.read_text(encoding="utf-8"))["records"]
    on = {
        day: [r for r in runs if r["date"].startswith(day) and r["cpu"] == "AMD EPYC"]
        for day in ("2026-12-01", "2026-12-02")
    }
    assert on["2026-12-01"] and on["2026-12-02"]
    fastest_on_12_02 = min(run["seconds"] for record in on["2026-12-02"] for run in record["runs"])
    assert fastest_on_12_02 > max(run["seconds"] for record in on["2026-12-01"] for run in record["runs"])

    records = json.loads(embedding_speed.QUOTED.read_text(encoding="utf-8"))["records"]
    before, after = (
        [r for r in records if r["date"].startswith(day) and r["cpu"] == "AMD EPYC"]
        for day in ("2026-11-30", "2026-12-02")
    )
    assert before and after

    def medians(record: dict) -> dict[str, tuple[float, float]]:
        return {
            kind["kind"]: tuple(statistics.median(r[path] for r in kind["rounds"]) for path in ("library", "harness"))
            for kind in record["kinds"]
        }

    for kind, (library, harness) in medians(after[-1]).items():
        then_library, then_harness = medians(before[-1])[kind]
        assert library < then_library and harness < then_harness, kind
