"""Markdown of a run's pages: pipe tables, the sections on failed metrics and reversed orientations, and the
same pages as plain text for the terminal."""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Mapping

import pandas as pd


def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame`` (index dropped; reset it first to keep it); cells are written as given."""

    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    header = "| " + " | ".join(cell(c) for c in frame.columns) + " |"
    rule = "|" + "|".join(" --- " for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def failures_from_distances(distances: pd.DataFrame) -> dict[str, str]:
    """Metrics whose every pair evaluation failed, mapped to their first error text."""
    if distances.empty or "error" not in distances.columns:
        return {}
    failed = {}
    for metric, group in distances.groupby("metric", sort=True):
        if group["distance"].isna().all():
            errors = group["error"].dropna().astype(str)
            errors = errors[errors.str.strip() != ""]
            failed[str(metric)] = errors.iloc[0] if len(errors) else "no distance computed"
    return failed


def failures_markdown(failures: Mapping[str, str] | None) -> list[str]:
    """A "Failed metrics" section (every failing repetition and its reasons), or nothing when none failed."""
    if not failures:
        return []
    lines = ["## Failed metrics", ""]
    for metric, error in sorted(failures.items()):
        first = str(error).strip().splitlines()[0] if str(error).strip() else "unknown error"
        lines.append(f"- `{metric}`: {first[:4000]}")
    return lines + [""]


def orientation_markdown(warnings: Mapping[str, str] | None) -> list[str]:
    """An "Orientation" section: metrics whose declared direction looks reversed, or nothing."""
    if not warnings:
        return []
    lines = [
        "## Orientation",
        "",
        (
            "These metrics' values run against their declared direction "
            "(mean ρ clearly negative), so their measures may be upside down:"
        ),
        "",
    ]
    return lines + [f"- `{metric}`: {text}" for metric, text in sorted(warnings.items())] + [""]


def _is_table_line(line: str) -> bool:
    return line.startswith("|") and line.rstrip().endswith("|")


def _cells(line: str) -> list[str]:
    """The cells of a pipe-table row, its escaped pipes restored."""
    parts = re.split(r"(?<!\\)\|", line.strip()[1:-1])
    return [p.strip().replace("\\|", "|") for p in parts]


#: What a bold table cell becomes on the terminal, which shows no bold in a log or a pipe: a mark after the value.
TERMINAL_BOLD_MARK = "*"


def _plain(text: str, *, in_table: bool = False) -> str:
    """A markdown fragment without its markup: code marks and the HTML tags a page uses dropped, their text kept;
    bold dropped in prose and, in a table cell, written as the value followed by ``TERMINAL_BOLD_MARK``."""
    text = re.sub(r"\*\*(.+?)\*\*", r"\1" + (TERMINAL_BOLD_MARK if in_table else ""), text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return re.sub(r"</?(?:sup|sub|b|i|em|strong|span|br)\b[^>]*>", "", text)  # not <measure> of a file pattern


def _prose(line: str, width: int) -> list[str]:
    """A prose line wrapped to ``width``, a legend's "bold = ..." saying what the terminal shows instead; a list
    item keeps its bullet and indents its continuation lines."""
    text = re.sub(r"\bbold = ", f"{TERMINAL_BOLD_MARK} after a value = ", _plain(line))
    if len(text) <= width:
        return [text]
    bullet = re.match(r"(\s*(?:[-*]|\d+\.)\s+)", text)
    indent = " " * len(bullet.group(1)) if bullet else ""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)


def _key_columns(header: list[str]) -> int:
    """How many leading columns name a table's row: through its ``metric`` column (a sweep table's pair, k, n and
    metric), or the first column when it has none."""
    names = [name.strip().lower() for name in header]
    return names.index("metric") + 1 if "metric" in names else 1


def _column_groups(widths: list[int], keys: int, width: int) -> list[list[int]]:
    """The columns after the ``keys`` leading ones in consecutive groups, each as many as fit in ``width`` beside
    the key columns (two spaces between columns) and at least one: a wide table is shown as blocks one under the
    other, each repeating the rows' names, as a terminal cannot scroll sideways."""
    start = sum(widths[:keys]) + 2 * (keys - 1)
    groups: list[list[int]] = []
    used = start
    for column in range(keys, len(widths)):
        if not groups or used + 2 + widths[column] > width:
            groups.append([])
            used = start
        groups[-1].append(column)
        used += 2 + widths[column]
    return groups or [[]]


def terminal_text(markdown: str, width: int | None = None) -> str:
    """A run's markdown page as a terminal shows it: pipe tables as aligned columns (a bold cell marked
    ``TERMINAL_BOLD_MARK``), no markup (``**``, `` ` ``, HTML tags), headings underlined, prose wrapped to
    ``width`` (the terminal's width, 100 columns when there is none) and a table wider than that split into blocks
    of its columns, one under the other, each led by the columns that name the rows. The page on disk keeps its
    markdown."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    lines = markdown.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _is_table_line(lines[i]):
            block = []
            while i < len(lines) and _is_table_line(lines[i]):
                block.append(lines[i])
                i += 1
            rows = [
                [_plain(c, in_table=True) for c in _cells(line)]
                for line in block
                if not re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+", line.strip())
            ]
            widths = [max(len(row[c]) if c < len(row) else 0 for row in rows) for c in range(max(map(len, rows)))]
            keys = _key_columns(rows[0])
            for number, group in enumerate(_column_groups(widths, keys, width)):
                columns = [*range(keys), *group]
                shown = [
                    "  ".join((row[c] if c < len(row) else "").ljust(widths[c]) for c in columns).rstrip()
                    for row in rows
                ]
                out += [""] * (number > 0) + [shown[0], "  ".join("-" * widths[c] for c in columns), *shown[1:]]
            continue
        heading = re.match(r"(#+)\s+(.*)", lines[i])
        if heading:
            title = _plain(heading.group(2))
            out += [title, ("=" if len(heading.group(1)) == 1 else "-") * len(title)]
        else:
            out += _prose(lines[i], width)
        i += 1
    return "\n".join(out)
