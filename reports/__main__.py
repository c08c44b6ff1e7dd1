"""`python -m textmetric_bench.reports DIR [DIR ...]` / `textmetric-bench-report`: build the HTML report.

One directory (a run or a sweep) gets its report written into it. Several are joined into a new page, which never
replaces a run's own `report.html`: without `--out` it goes to a new directory `combined_reports/<time>/` under the
current directory, and `--out` may not be a run's directory."""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

#: Where a report of several directories goes without --out, under the current directory.
COMBINED_DIR = "combined_reports"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="textmetric-bench-report",
        description="Turn run directories or a multirun sweep directory into one self-contained "
        "HTML report (report.html) plus Table 3 CSVs.",
    )
    parser.add_argument("dirs", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"where to write (default: the directory given, or for several a new directory "
        f"{COMBINED_DIR}/<time> here; never a run's own directory)",
    )
    args = parser.parse_args(argv)
    from textmetric_bench.reports.html.report import build_report

    missing = [str(d) for d in args.dirs if not d.is_dir()]
    if missing:
        print(f"error: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    out, problem = report_dir(args.dirs, args.out)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        files = build_report(args.dirs, out)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {Path(files['report_html']).absolute()}")
    return 0


def report_dir(dirs: list[Path], out: Path | None) -> tuple[Path, str | None]:
    """(where the report goes, or why it cannot go there): a run's own page is only ever its own report."""
    own = len(dirs) == 1 and (out is None or out.resolve() == dirs[0].resolve())
    if own:
        return dirs[0], None
    if out is None:
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")  # a new directory: a second report that second gets _2
        names = (stamp if n == 1 else f"{stamp}_{n}" for n in itertools.count(1))
        return next(Path(COMBINED_DIR) / name for name in names if not (Path(COMBINED_DIR) / name).exists()), None
    if (out / "measures.csv").is_file():
        return out, (
            f"--out {out} is a run's directory and its report.html that run's own page; give another "
            f"directory for the joined report, e.g. --out {COMBINED_DIR}/mine (or leave --out out)"
        )
    return out, None


if __name__ == "__main__":
    sys.exit(main())
