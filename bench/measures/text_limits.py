"""How a run's record of texts longer than what reads them (``run.json``'s ``long_texts``) is told: one sentence per
reader, the same in the log and in the report."""

from __future__ import annotations

from typing import Mapping


def reader_name(key: str, record: Mapping) -> str:
    """How the log and the report name a reader of ``long_texts``: the embedder, or the metrics and their limit."""
    return "the embedder" if key == "embedder" else f"metric {key} ({record.get('param')}={record['limit']})"


def over_limit_sentence(reader: str, record: Mapping) -> str | None:
    """One sentence on the texts longer than ``reader`` reads (a ``long_texts`` entry of ``run.json``), per
    source, and what each got; None when every text is within the limit or the limit is not known."""
    over = {name: c for name, c in record["corpora"].items() if c.get("over_limit")}
    if record.get("limit") is None or not over:
        return None
    counts = "; ".join(
        f"{name}: {c['over_limit']} of the {c['texts']} texts the run uses ({c['share']:.1%}), longest {c['longest']}"
        for name, c in over.items()
    )
    return (
        f"{reader} reads at most {record['limit']} {record['unit']}. Longer texts: {counts}. Each is {record['done']}"
    )
