"""docs/generated/cold_run.md is the page tests/benchmarks/cold_run.py makes from its quote, unedited, and
docs/reproducibility.md includes it."""

from __future__ import annotations

import importlib.util
import json

import pytest

from textmetric_bench import PROJECT_ROOT


@pytest.fixture(scope="module")
def quote():
    spec = importlib.util.spec_from_file_location("cold_run_quote", PROJECT_ROOT / "tests/benchmarks/cold_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_generated_from_the_quote_and_included(quote):
    quoted = json.loads(quote.QUOTED.read_text(encoding="utf-8"))
    assert quoted["records"], "the quote holds no measurement"
    assert quote.PAGE.read_text(encoding="utf-8") == quote.page(quoted)
    assert '--8<-- "docs/generated/cold_run.md"' in (PROJECT_ROOT / "docs/reproducibility.md").read_text(
        encoding="utf-8"
    )


def test_every_record_names_its_cpu_and_holds_whole_runs(quote):
    for record in json.loads(quote.QUOTED.read_text(encoding="utf-8"))["records"]:
        assert record["cpu"] and record["logical_cores"] >= 1 and record["commit"]
        assert record["runs"]
        for run in record["runs"]:
            assert 0 < run["embedding_seconds"] < run["seconds"]
            assert run["texts"] > 0


def test_the_page_counts_the_runs_under_the_goal(quote):
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
    row = quote.page({"records": [record]}).splitlines()[-1]
    assert "59.9, 60.0, 45.0 s" in row and "| 59.9 s |" in row  # the median
    assert row.endswith("| 2 of 3 |")  # 60.0 is not under 60 s
    assert "Some CPU (2)" in row and "2,570 texts" in row
