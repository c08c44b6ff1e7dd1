"""The regression gate, `task=check`: rerun a small fixed KSC study and compare with a baseline.

The baseline is a small JSON committed in the repository: the study's settings and, per
metric and measure, the value in every repetition. A measure *drops* when its new mean
is below the baseline mean by more than max(min_tolerance, z * sd / sqrt(n)), where sd
is the baseline's spread across its n repetitions: a change smaller than the sampling
uncertainty of the baseline itself is not called a regression. (Runs are deterministic
from their seed, so an unchanged metric reproduces its baseline exactly.) A drop, or a
baseline metric that is missing or failed, fails the gate. Time (T) depends on the
machine and is never gated.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from textmetric_bench.errors import ConfigError
from textmetric_bench.tasks.ksc import run_ksc
from textmetric_bench.tasks.skeleton import TaskResult
from textmetric_bench.reports.tables import markdown_table

log = logging.getLogger(__name__)

SETTINGS = ("pair", "k", "n", "repetitions", "seed")


def _settings(cfg: DictConfig) -> dict:
    return {"pair": str(cfg.pair.name), "k": int(cfg.k), "n": int(cfg.n),
            "repetitions": int(cfg.repetitions), "seed": int(cfg.seed)}


def baseline_from_measures(measures: pd.DataFrame, settings: dict, gated: list[str], extra: dict) -> dict:
    """The JSON-ready baseline of one run's measures."""
    table: dict[str, dict] = {}
    for metric, grp in measures.groupby("metric"):
        table[metric] = {}
        by_rep = grp.set_index("repetition")
        for measure in gated:
            x = by_rep[measure].dropna()
            table[metric][measure] = {"mean": float(x.mean()) if len(x) else None,
                                      "values": {str(r): float(v) for r, v in x.items()}}
    return {"settings": settings, **extra, "measures": table}


def compare(baseline: dict, measures: pd.DataFrame, *, z: float, min_tolerance: float) -> pd.DataFrame:
    """One row per (metric, measure) of the baseline: old and new mean, tolerance, status."""
    rows = []
    for metric, by_measure in baseline["measures"].items():
        grp = measures[measures["metric"] == metric].set_index("repetition")
        for measure, old in by_measure.items():
            new = grp[measure].dropna() if measure in grp else pd.Series(dtype=float)
            row = {"metric": metric, "measure": measure, "baseline": old["mean"]}
            if old["mean"] is None:
                rows.append({**row, "status": "no baseline value"})
                continue
            base = pd.Series(list(old["values"].values()), dtype=float)
            if len(new) < len(base):
                rows.append({**row, "new": float(new.mean()) if len(new) else math.nan, "change": math.nan,
                             "tolerance": math.nan, "status": "MISSING"})
                continue
            se = float(base.std(ddof=1)) / math.sqrt(len(base)) if len(base) > 1 else 0.0
            tol = max(min_tolerance, z * se)
            change = float(new.mean()) - float(base.mean())
            status = "DROPPED" if change < -tol else "improved" if change > tol else "ok"
            rows.append({**row, "new": float(new.mean()), "change": change, "tolerance": tol, "status": status})
    for metric in sorted(set(measures["metric"]) - set(baseline["measures"])):
        rows.append({"metric": metric, "measure": "*", "status": "new metric (not in baseline)"})
    return pd.DataFrame(rows, columns=["metric", "measure", "baseline", "new", "change", "tolerance", "status"])


def run_check(cfg: DictConfig, out_dir: Path | str) -> TaskResult:
    """Run the gate (or write a new baseline with ``update=true``): the KSC task, then the comparison.

    The result's ``summary`` is the comparison table (one row per metric and measure) and ``passed``
    says whether the gate holds."""
    out_dir = Path(out_dir)
    check = cfg.check
    path = Path(str(check.baseline)).expanduser()
    gated = list(check.measures)
    settings = _settings(cfg)
    if not cfg.get("update", False):
        if not path.exists():
            raise ConfigError(f"no baseline at {path}; create one with `python -m textmetric_bench task=check update=true`")
        baseline = json.loads(path.read_text())
        differs = {k: (baseline["settings"].get(k), settings[k]) for k in SETTINGS
                   if baseline["settings"].get(k) != settings[k]}
        if differs:
            raise ConfigError(
                "the run's settings differ from the baseline's, so they cannot be compared: "
                + ", ".join(f"{k}: baseline {a!r} vs run {b!r}" for k, (a, b) in differs.items())
                + f". Use the baseline's settings or write a new baseline ({path}) with update=true")
    result = run_ksc(cfg, out_dir)
    files = dict(result.files)
    if cfg.get("update", False):
        extra = {"embedding_model": result.info["embedding"]["model"],
                 "metric_params": OmegaConf.to_container(cfg.get("metric") or {}, resolve=True)}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(baseline_from_measures(result.measures, settings, gated, extra), indent=2) + "\n")
        log.info("wrote baseline %s", path)
        return replace(result, summary=pd.DataFrame(), files={**files, "baseline": path})

    if baseline.get("embedding_model") not in (None, result.info["embedding"]["model"]):
        log.warning("embedding model changed: baseline %s, now %s",
                    baseline.get("embedding_model"), result.info["embedding"]["model"])
    table = compare(baseline, result.measures, z=float(check.z), min_tolerance=float(check.min_tolerance))
    failed = table[table["status"].isin(["DROPPED", "MISSING"])]
    table.to_csv(out_dir / "check.csv", index=False)
    moved = table[(table["status"] != "ok")]
    shown = moved.copy()
    for col in ("baseline", "new", "change", "tolerance"):
        shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:+.4f}" if col == "change" else f"{v:.4f}")
    verdict = "FAILED" if len(failed) else "passed"
    text = (f"# Regression check {verdict}\n\nBaseline: {path}\nSettings: {settings}\n"
            f"Tolerance: max({check.min_tolerance}, {check.z} x the baseline's standard error across repetitions)\n\n"
            + (markdown_table(shown) if len(moved) else "Nothing moved beyond tolerance.")
            + "\n")
    for _, row in failed.iterrows():
        what = "is missing or failed" if row["status"] == "MISSING" else \
            f"dropped from {row['baseline']:.4f} to {row['new']:.4f} (tolerance {row['tolerance']:.4f})"
        text += f"\nREGRESSION: metric {row['metric']} measure {row['measure']} {what}"
    (out_dir / "check.md").write_text(text + "\n")
    return replace(result, task="check", summary=table, files={**files, "check_md": out_dir / "check.md"},
                   passed=failed.empty)
