"""docs/generated/embedding_speed.md is the page tests/benchmarks/embedding_speed.py makes from its quote, unedited,
and docs/reproducibility.md includes it."""

from __future__ import annotations

import importlib.util
import json

import pytest

from textmetric_bench import PROJECT_ROOT


@pytest.fixture(scope="module")
def quote():
    path = PROJECT_ROOT / "tests/benchmarks/embedding_speed.py"
    spec = importlib.util.spec_from_file_location("embedding_speed_quote", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_generated_from_the_quote_and_included(quote):
    quoted = json.loads(quote.QUOTED.read_text(encoding="utf-8"))
    assert quoted["records"], "the quote holds no measurement"
    assert quote.PAGE.read_text(encoding="utf-8") == quote.page(quoted)
    assert '--8<-- "docs/generated/embedding_speed.md"' in (PROJECT_ROOT / "docs/reproducibility.md").read_text(
        encoding="utf-8"
    )


def test_every_record_names_its_cpu_and_measures_every_kind_of_text(quote):
    kinds = [label for label, _, _ in quote.KINDS]
    for record in json.loads(quote.QUOTED.read_text(encoding="utf-8"))["records"]:
        assert record["cpu"] and record["logical_cores"] >= 1 and record["commit"]
        assert [kind["kind"] for kind in record["kinds"]] == kinds
        for kind in record["kinds"]:
            assert kind["texts"] > 0 and kind["mean_word_pieces"] > 2  # [CLS] and [SEP] at least
            assert kind["rounds"] and all(r["library"] > 0 and r["harness"] > 0 for r in kind["rounds"])
        assert 0 < record["product_ms"]["float32"] and 0 < record["product_ms"]["float64"]


def test_the_page_states_the_ratio_of_the_medians_against_the_goal(quote):
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
    first, second = quote.page({"records": [record]}).splitlines()[-2:]
    assert "| 100.0, 300.0 | 70.0, 90.0 | 0.40 | no |" in first  # 80 / 200, not a mean of the two rounds' ratios
    assert "| 10.0 | 8.0 | 0.80 | yes |" in second  # the goal is at least 0.8
    assert "Some CPU (2)" in first and "3,000 intents (`p`, 13 word pieces on average)" in first
    assert first.endswith("| 4.0 / 8.0 ms (0.50) |") and second.endswith("| 4.0 / 8.0 ms (0.50) |")


def test_what_the_page_says_of_the_quote_holds_for_every_record(quote):
    """docs/reproducibility.md ("Why not the library's speed"): the float64 product takes about twice as long as the
    float32 one; the harness's ratio is within 0.12 of theirs on paragraphs and above it on intents, on every
    machine quoted."""
    for record in json.loads(quote.QUOTED.read_text(encoding="utf-8"))["records"]:
        product = record["product_ms"]["float32"] / record["product_ms"]["float64"]
        assert 0.35 <= product <= 0.7, (record["cpu"], product)
        kinds = {kind["kind"]: quote.ratio(kind) for kind in record["kinds"]}
        assert abs(kinds["paragraphs"] - product) <= 0.12, (record["cpu"], kinds, product)
        assert kinds["intents"] > product, (record["cpu"], kinds, product)
