"""`python -m textmetric_bench.reports DIR [DIR ...]` / `textmetric-bench-report`: build the HTML report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="textmetric-bench-report",
        description="Turn run directories or a multirun sweep directory into one self-contained "
                    "HTML report (report.html) plus Table 3 CSVs.")
    parser.add_argument("dirs", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write (default: the first directory given)")
    args = parser.parse_args(argv)
    from textmetric_bench.reports.html.report import build_report

    missing = [str(d) for d in args.dirs if not d.is_dir()]
    if missing:
        print(f"error: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        files = build_report(args.dirs, args.out)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {files['report_html']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
