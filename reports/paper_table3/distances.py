"""Collect the per-repetition distances of KSC runs into one compact file for the paper comparison.

`python -m textmetric_bench.reports.paper_table3.distances reports/paper_table3/distances.csv.gz RUN_DIR [RUN_DIR ...]`
reads each run's `run.json` (pair, k) and `distances.csv`, keeps pair, k, metric, repetition,
i, j and distance, and writes them gzip-compressed (read by `textmetric_bench.reports.paper_table3.agreement`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

COLUMNS = ["pair", "k", "metric", "repetition", "i", "j", "distance"]


def run_distances(run_dir: Path) -> pd.DataFrame:
    """The distances of one KSC run directory, with its pair and k; refuses failed or similarity rows."""
    run_dir = Path(run_dir)
    info_path, table_path = run_dir / "run.json", run_dir / "distances.csv"
    for path in (info_path, table_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist: pass the directory of a finished KSC run")
    info = json.loads(info_path.read_text())
    if info.get("task") != "ksc":
        raise ValueError(f"{run_dir} is a {info.get('task')!r} run; the paper comparison needs KSC runs")
    table = pd.read_csv(table_path)
    failed = table["error"].notna() & (table["error"].astype(str) != "")
    if failed.any():
        raise ValueError(
            f"{table_path} has {int(failed.sum())} failed evaluations "
            f"(e.g. {table.loc[failed, 'metric'].iloc[0]}); re-run it to completion first"
        )
    similar = table["orientation"] != "distance"
    if similar.any():
        raise ValueError(
            f"{table_path}: {sorted(table.loc[similar, 'metric'].unique())} are similarities; "
            "this file holds distances only"
        )
    table["pair"], table["k"] = info["pair"], int(info["k"])
    return table[COLUMNS]


def collect(out: Path, run_dirs: list[Path]) -> pd.DataFrame:
    """Concatenate the runs' distances, check no (pair, k) appears twice, and write ``out``."""
    frame = pd.concat([run_distances(d) for d in run_dirs], ignore_index=True)
    doubled = frame.duplicated(["pair", "k", "metric", "repetition", "i", "j"])
    if doubled.any():
        first = frame.loc[doubled].iloc[0]
        raise ValueError(f"two runs give distances for {first['pair']} k={first['k']}: pass each setting once")
    frame = frame.sort_values(COLUMNS[:6]).reset_index(drop=True)
    frame.to_csv(out, index=False, float_format="%.17g")
    return frame


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        raise SystemExit(
            "usage: python -m textmetric_bench.reports.paper_table3.distances OUT.csv.gz RUN_DIR [RUN_DIR ...]"
        )
    frame = collect(Path(args[0]), [Path(a) for a in args[1:]])
    print(f"{len(frame)} distances of {frame.groupby(['pair', 'k']).ngroups} settings written to {args[0]}")


if __name__ == "__main__":
    main()
