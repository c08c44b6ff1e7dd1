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


def test_prose_is_wrapped_to_the_terminal_and_tables_are_not(tmp_path):
    page = write_tables(measures(), tmp_path)["table3_md"].read_text()
    assert max(len(line) for line in page.splitlines() if not line.startswith("|")) > 300  # one long legend line
    text = terminal_text(page, width=80)
    prose = [line for line in text.splitlines() if not re.match(r"(m\d\d|metric|-+ )", line)]
    assert max(map(len, prose)) <= 80
    assert terminal_text("- " + "word " * 40, width=30).splitlines()[1].startswith("  word")  # a list item's indent
