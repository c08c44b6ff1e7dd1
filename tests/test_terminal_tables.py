"""What the terminal shows of a run's markdown pages (reports/tables/markdown.py ``terminal_text``): the same
table as aligned plain text, without markdown or HTML markup."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from textmetric_bench.reports.tables.files import write_tables
from textmetric_bench.reports.tables.markdown import terminal_text


def measures(count: int = 18, repetitions: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        [
            {
                "metric": f"m{i:02d}",
                "repetition": r,
                "A": 0.95 - 0.01 * i + rng.normal(0, 0.01),
                "rho": 0.9 - 0.02 * i + rng.normal(0, 0.01),
                "T": 100.0 * (i + 1),
            }
            for i in range(count)
            for r in range(repetitions)
        ]
    )


def test_the_terminal_table_has_no_markup_and_aligned_columns(tmp_path):
    page = write_tables(measures(), tmp_path)["table3_md"].read_text()
    assert "**" in page  # the markdown page keeps its bold
    text = terminal_text(page)
    assert "**" not in text and not re.search(r"</?(sup|b|span)\b", text) and "|" not in text
    assert "significance_<measure>.csv" in text  # a file pattern is not a tag
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("metric "))
    rule, rows = lines[header + 1], lines[header + 2 : header + 20]
    assert set(rule) <= {"-", " "} and len(rows) == 18 and all(r.startswith("m") for r in rows)
    starts = [m.start() for m in re.finditer(r"(?<=  )-", rule)]  # where each column after the first begins
    for row in rows:
        assert all(row[s - 2 : s] == "  " and row[s] != " " for s in starts), row


def test_a_heading_is_underlined_not_marked():
    assert terminal_text("# KSC on p\n\nplain `code`") == "KSC on p\n========\n\nplain code"


def test_the_terminal_marks_the_bold_cells_and_its_legend_says_so(tmp_path):
    page = write_tables(measures(), tmp_path)["table3_md"].read_text()
    bold_in_page = len(re.findall(r"\*\*[^*]+\*\*", page))
    text = terminal_text(page, width=100)
    assert bold_in_page > 0 and "bold" not in text.lower()  # no claim of a bold the terminal cannot show
    assert "* after a value = column best" in text
    table = [line for line in text.splitlines() if line.startswith("m") and line[1:3].isdigit()]
    marked = sum(len(re.findall(r"\d\*", line)) for line in table)
    assert marked == bold_in_page  # every bold cell of the page, and nothing else, carries the mark


def test_prose_is_wrapped_to_the_terminal(tmp_path):
    page = write_tables(measures(), tmp_path)["table3_md"].read_text()
    assert max(len(line) for line in page.splitlines() if not line.startswith("|")) > 300  # one long legend line
    text = terminal_text(page, width=80)
    prose = [line for line in text.splitlines() if not re.match(r"(m\d\d|metric|-+ )", line)]
    assert max(map(len, prose)) <= 80
    assert terminal_text("- " + "word " * 40, width=30).splitlines()[1].startswith("  word")  # a list item's indent


def table_blocks(text: str) -> list[list[str]]:
    """The aligned tables of a terminal page: each a header, its rule and its rows."""
    lines, blocks = text.splitlines(), []
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and line and set(lines[i + 1]) == {"-", " "} and lines[i + 1].startswith("--"):
            end = next((j for j in range(i + 2, len(lines)) if not lines[j]), len(lines))
            blocks.append(lines[i:end])
    return blocks


def cells(block: list[str]) -> dict[tuple[str, str], str]:
    """A block's cells by (row name, column name), cut where its rule's dashes say."""
    spans = [m.span() for m in re.finditer(r"-+", block[1])]
    spans = [(start, spans[i + 1][0] if i + 1 < len(spans) else None) for i, (start, _) in enumerate(spans)]
    rows = [[line[a:b].strip() for a, b in spans] for line in [block[0], *block[2:]]]
    return {(row[0], name): value for row in rows[1:] for name, value in zip(rows[0][1:], row[1:])}


def test_a_table_wider_than_the_terminal_is_split_into_blocks_that_each_name_the_rows(tmp_path):
    page = write_tables(measures(), tmp_path)["table3_md"].read_text()
    (whole,) = table_blocks(terminal_text(page, width=1000))
    assert len(whole[0]) > 60  # the table is wider than the narrow terminal below
    blocks = table_blocks(terminal_text(page, width=60))
    assert len(blocks) > 1 and all(len(line) <= 60 for block in blocks for line in block)
    assert all(block[0].startswith("metric ") and len(block) == 2 + 18 for block in blocks)
    assert all([line.split()[0] for line in block[2:]] == [f"m{i:02d}" for i in range(18)] for block in blocks)
    split = {key: value for block in blocks for key, value in cells(block).items()}
    assert split == cells(whole)  # every cell once, under its own column and in its own row


def test_a_sweep_table_repeats_its_key_columns_in_every_block():
    header = "| pair | k | n | metric | " + " | ".join(f"measure{i}" for i in range(8)) + " |"
    rows = [f"| p | {k} | 30 | chi | " + " | ".join(f"{k}.{i}00000" for i in range(8)) + " |" for k in (3, 4)]
    page = "\n".join([header, "|" + " --- |" * 12, *rows])
    blocks = table_blocks(terminal_text(page, width=50))
    assert len(blocks) > 1 and all(block[0].split()[:4] == ["pair", "k", "n", "metric"] for block in blocks)
    assert all(
        [line.split()[:4] for line in block[2:]] == [["p", "3", "30", "chi"], ["p", "4", "30", "chi"]]
        for block in blocks
    )
    shown = [name for block in blocks for name in block[0].split()[4:]]
    assert shown == [f"measure{i}" for i in range(8)]
