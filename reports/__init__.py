"""Turn result tables into the paper's tables and charts (004 Table 3, Figures 2 and 4).

Names are loaded on first use, so ``python -m reports.aggregate`` does not import its own
module twice and the aggregate CLI does not pay for matplotlib.
"""

from importlib import import_module

_EXPORTS = {
    "summarise_measures": "reports.tables",
    "table3": "reports.tables",
    "table3_markdown_cells": "reports.tables",
    "write_tables": "reports.tables",
    "failures_from_distances": "reports.tables",
    "radar_chart": "reports.figures",
    "distance_scatter": "reports.figures",
    "aggregate_sweep": "reports.aggregate",
    "write_sweep_tables": "reports.aggregate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'reports' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
