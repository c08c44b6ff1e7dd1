"""Turn result tables into the paper's tables and charts (004 Table 3, Figures 2 and 4).

Names are loaded on first use, so ``python -m textmetric_bench.reports.aggregate`` does not import its own
module twice and the aggregate CLI does not pay for matplotlib.
"""

from importlib import import_module

_EXPORTS = {
    "summarise_measures": "textmetric_bench.reports.tables",
    "table3": "textmetric_bench.reports.tables",
    "table3_markdown_cells": "textmetric_bench.reports.tables",
    "write_tables": "textmetric_bench.reports.table_files",
    "failures_from_distances": "textmetric_bench.reports.tables",
    "radar_chart": "textmetric_bench.reports.figures",
    "distance_scatter": "textmetric_bench.reports.figures",
    "aggregate_sweep": "textmetric_bench.reports.aggregate",
    "write_sweep_tables": "textmetric_bench.reports.aggregate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'reports' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
