"""A suite: many settings run by one command through the configured Hydra launcher, ending in one report.

``conf/suite/<name>.yaml`` names the settings as a sweep (``hydra.sweeper.params``: pairs × ``conf/setting/``
options such as ``ksc_k7`` or ``robustness``) in a fixed directory, ``multirun/suite/<name>/<pair>/<setting>``,
so that running the same command again resumes it:

- a setting whose directory already holds a successful run of the very same overrides is skipped
  (``skipped_setting``, called by the app before a job starts; ``suite.skip_done=false`` runs it again, which
  then recomputes nothing its evaluation log holds);
- a setting killed half way resumes from its evaluation log, as any run does.

After the last job, :class:`SuiteReport` (a Hydra callback of the suite's config, called in the process that
launched the sweep, whichever launcher ran the jobs) records the catalogue facts of the metrics the settings hold
(``metric_catalogue.csv``: the report layer reads results only) and writes the cross-setting report
(``textmetric_bench.reports.suite.report``). ``textmetric-bench-suite-report DIR`` does the same for any directory.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd
import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from textmetric_bench.errors import EXIT_OK
from textmetric_bench.measures.orientation import orientation_of
from textmetric_bench.running.exit_status import STATUS_FILE

log = logging.getLogger(__name__)

CATALOGUE_COLUMNS = ["metric", "orientation", "range", "stochastic", "source", "failure_modes"]


def skipped_setting(cfg: DictConfig, out_dir: Path, overrides: Sequence[str]) -> str | None:
    """Why the job of a suite in ``out_dir`` need not run (its last run there succeeded with the same
    ``overrides`` and left its measures), or None: not in a suite, ``suite.skip_done`` false, or not done."""
    if not OmegaConf.select(cfg, "suite.skip_done", default=False):
        return None
    try:
        status = json.loads((Path(out_dir) / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(status, dict) or status.get("exit_status") != EXIT_OK:
        return None
    if sorted(map(str, status.get("overrides") or [])) != sorted(map(str, overrides)):
        return None
    if not (Path(out_dir) / "measures.csv").is_file():
        return None
    return f"setting already done in {out_dir} (same overrides, exit status 0); suite.skip_done=false runs it again"


def setting_not_for_pair(cfg: DictConfig) -> str | None:
    """Why a suite's setting does not run on its pair, or None. A pair config may name the suite settings it
    takes part in (``suite_settings: [ksc_k7, ksc_k12_n50]`` in ``conf/pair/<name>.yaml``): a corpus of 400
    articles fits KSC at k = 7 and n = 100 but not at k = 12 (600 texts a side), nor the robustness task's
    samples of 3000. A pair without the key takes part in every setting; outside a suite nothing is skipped."""
    setting = OmegaConf.select(cfg, "setting.name", default=None)
    allowed = OmegaConf.select(cfg, "pair.suite_settings", default=None)
    if setting is None or allowed is None or str(setting) in {str(a) for a in allowed}:
        return None
    pair = OmegaConf.select(cfg, "pair.name", default="?")
    return (
        f"setting {setting} skipped: pair {pair} takes part in the suite settings {', '.join(map(str, allowed))} "
        f"only (suite_settings in its pair config)"
    )


def suite_override_problems(overrides: Sequence[str]) -> list[str]:
    """One line per override of a suite's command line that sets a key of some of its settings' tasks only
    (``n=20``: KSC's, not robustness's) without ``++``; Hydra would refuse it in the other task's jobs with a
    hint (``+n=20``) that fails in these. [] when the command runs no suite."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from textmetric_bench.tasks.config import CONF_DIR
    from textmetric_bench.running.registry import available_tasks
    from textmetric_bench.settings import key_of

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # noqa: BLE001 - Hydra reports overrides it cannot parse itself
        return []
    if not any(o.key_or_group == "suite" for o in parsed):
        return []
    tasks = set()
    for path in (CONF_DIR / "setting").glob("*.yaml"):
        for entry in yaml.safe_load(path.read_text()).get("defaults") or []:
            if isinstance(entry, dict) and "override /task" in entry:
                tasks.add(entry["override /task"])
    keys = {
        t: {key_of(f) for f in dataclasses.fields(available_tasks()[t].settings)}
        for t in tasks
        if t in available_tasks()
    }
    problems = []
    for o in parsed:
        owners = sorted(t for t, k in keys.items() if o.key_or_group in k)
        if o.is_add() or o.is_force_add() or o.is_delete() or not owners or len(owners) == len(keys):
            continue
        problems.append(
            f"{o.input_line}: {o.key_or_group} is a setting of the {', '.join(owners)} task only; in a "
            f"suite write ++{o.input_line} (set where it exists, added and unused in the other settings)"
        )
    return problems


def metric_facts(names: Iterable[str]) -> pd.DataFrame:
    """The catalogue facts of each metric (``textmetric_bench.running.catalogue``'s columns); a metric no longer
    registered (its plugin uninstalled) reads "not registered"."""
    from textmetric_bench.api.registry import NOT_DECLARED, available_metrics, get_metric
    from textmetric_bench.running.catalogue import shown_number

    registered, rows = set(available_metrics()), []
    for name in sorted(set(map(str, names))):
        if name not in registered:
            rows.append([name, "", "", "", "not registered in this environment", "not registered"])
            continue
        info = get_metric(name)
        low_high = NOT_DECLARED if info.value_range is None else " to ".join(map(shown_number, info.value_range))
        rows.append(
            [
                name,
                orientation_of(info),
                low_high,
                "yes" if info.stochastic else "no",
                info.source,
                "; ".join(info.failure_modes) or NOT_DECLARED,
            ]
        )
    return pd.DataFrame(rows, columns=CATALOGUE_COLUMNS)


def write_catalogue(root: Path) -> Path:
    """``<root>/metric_catalogue.csv`` for every metric of every run below ``root``."""
    from textmetric_bench.measures.summaries import REFERENCE_MARK
    from textmetric_bench.reports.suite.settings import CATALOGUE_FILE, load_settings

    names = {str(m).removesuffix(REFERENCE_MARK) for run in load_settings(root) for m in run.measures["metric"]}
    path = Path(root) / CATALOGUE_FILE
    metric_facts(names).to_csv(path, index=False)
    return path


def suite_report(root: Path) -> Path:
    """Record the catalogue and write the suite report of ``root``; returns ``suite_report.md``."""
    from textmetric_bench.reports.suite.report import write_suite_report

    root = Path(root)
    write_catalogue(root)
    return write_suite_report(root)["suite_report"]


class SuiteReport(Callback):
    """After the last job of a suite: its cross-setting report, in the sweep directory."""

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        root = Path(str(config.hydra.sweep.dir)).absolute()
        try:
            path = suite_report(root)
        except FileNotFoundError as exc:
            print(f"suite: no report: {exc}", file=sys.stderr, flush=True)
            return
        print(f"suite report: {path} (cd_<measure>.png, card_<metric>.png and ranks.csv beside it)", flush=True)


def main(argv: list[str] | None = None) -> int:
    """``textmetric-bench-suite-report DIR``: the suite report of the runs below DIR (a suite or any sweep)."""
    parser = argparse.ArgumentParser(
        prog="textmetric-bench-suite-report",
        description="Rank the metrics of every run below DIR across settings (Friedman, Wilcoxon-Holm, "
        "critical-difference diagrams) and write one card per metric, into DIR.",
    )
    parser.add_argument("root", type=Path, help="a suite's directory (multirun/suite/<name>) or any directory of runs")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        raise SystemExit(f"textmetric-bench-suite-report: {args.root} is not a directory")
    try:
        path = suite_report(args.root)
    except FileNotFoundError as exc:
        raise SystemExit(f"textmetric-bench-suite-report: {exc}; has the suite finished any setting?") from None
    print(f"suite report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
