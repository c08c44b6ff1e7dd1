"""The regression gate, `task=check`: rerun a small fixed KSC study and compare with a baseline.

The baseline is a small JSON committed in the repository: the study's settings, the numerics it was computed
with, and per metric its declared version, source digest and, per measure, the value in every repetition.
A measure *moves* when its new mean differs from the baseline mean by more than
max(min_tolerance, z * sd / sqrt(n)), where sd is the baseline's spread across its n repetitions.

- A built-in metric is gated both ways: a drop or a rise fails the gate, because either means that what the
  metric computes changed; and where the run's numerics are the baseline's (pinned kernels on the same CPU
  vendor: textmetric_bench.numerics), any change of a value beyond ``exact_tolerance`` fails too, as an
  unchanged metric reproduces its baseline bit for bit. A metric whose declared ``version`` changed is not
  compared: its baseline is regenerated with the rest (``make regenerate``).
- A plugin metric fails only when it drops (``check.two_sided=true``: both ways, as a built-in, but to the tolerance
  only: its numerics are its own).
- A baseline metric that failed in any repetition or did not run fails the gate. Time (T) depends on the machine
  and is never gated.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from textmetric_bench import IN_CHECKOUT, shipped_path
from textmetric_bench.api.registry import available_metrics, get_metric, is_builtin_module
from textmetric_bench.errors import ConfigError
from textmetric_bench.measures import registry
from textmetric_bench.numerics import bit_for_bit, numerics_label
from textmetric_bench.reports.tables.markdown import markdown_table
from textmetric_bench.settings import shown
from textmetric_bench.tasks.ksc import MEASURE_COLUMNS, KSCSettings, KSCTask, reference_accepted
from textmetric_bench.tasks.reference import version_parts
from textmetric_bench.tasks.settings import option, read_settings
from textmetric_bench.tasks.skeleton import RunInputs, TaskResult, run_task, task_runner

log = logging.getLogger(__name__)

SETTINGS = ("pair", "k", "n", "repetitions", "seed")
#: The one command that rewrites the baseline, the reference results and the paper tables from today's code.
REGENERATE = "make regenerate (python -m textmetric_bench.running.regenerate)"
#: The shipped baseline, as the repository names it (``shipped_path`` finds it in a checkout or an installed wheel).
SHIPPED_BASELINE = "reports/baselines/ksc_fortune_computing_people.json"
FAILING = ("DROPPED", "ROSE", "CHANGED", "FAILED", "MISSING")


def numerics() -> dict:
    """What decides whether a rerun reproduces the baseline bit for bit (textmetric_bench.numerics)."""
    return {"label": numerics_label()}


def numerics_difference(baseline: dict) -> str:
    """Why this run does not have the baseline's numerics, in words (``reproducible`` is False)."""
    before, now = (baseline.get("numerics") or {}).get("label", "not recorded"), numerics()["label"]
    if before != now:
        return f"the baseline's numerics are {before}, this run's {now}"
    return "the pinned kernels are not in force in this run"


def reproducible(baseline: dict) -> bool:
    """Whether this run computes with the baseline's numerics: the same label, and the pinned kernels in force
    (on any CPU vendor: the embedder's products are exact, textmetric_bench.numerics)."""
    return (baseline.get("numerics") or {}).get("label") == numerics()["label"] and bit_for_bit()


def metric_versions(names) -> dict:
    """The declared version and source digest of each registered metric in ``names``."""
    out = {}
    for name in names:
        parts = version_parts(get_metric(str(name)).version)
        out[str(name)] = {"version": parts["version"], "source_digest": parts["source_digest"]}
    return out


def source_changes(baseline: dict) -> list[str]:
    """The baseline's metrics, still registered with the version it records, whose source digest is not the one
    it records: edited without a new ``version=``, which the gate does not require (their values decide)."""
    recorded = baseline.get("versions", {})
    changed = []
    for name, entry in sorted(recorded.items()):
        try:
            now = version_parts(get_metric(name).version)
        except ConfigError:  # no longer registered: reported as MISSING
            continue
        if entry.get("version") == now["version"] and entry.get("source_digest") not in (None, now["source_digest"]):
            changed.append(name)
    return changed


#: What the gate can compare: the KSC task's measures but T, which depends on the machine.
GATED_MEASURES = [m for m in MEASURE_COLUMNS[2:] if m != "T"]


@dataclass(frozen=True)
class CheckSettings(KSCSettings):
    k: int = option(5, "corpora per collection of the gate's KSC study")
    n: int = option(40, "texts per corpus")
    repetitions: int = option(4, "independent collections; the tolerance is in standard errors across them", minimum=1)
    reference: str | bool = option(
        False,
        "the gate compares what it computes; no reference rows",
        accepts=reference_accepted,
        advice="auto, false, or a directory of reference files",
    )
    own_noise_seeds: int = option(
        0, "the gate computes no own-noise evaluations", key="own_noise.seeds", accepts=lambda v: v == 0, advice="0"
    )
    update: bool = option(
        False,
        "true: write the baseline from this run instead of comparing (make regenerate "
        "rewrites it with the other shipped results)",
        example=True,
    )
    baseline: str = option(
        "${shipped:" + SHIPPED_BASELINE + "}",
        "the baseline JSON",
        key="check.baseline",
        example="my_baseline.json",
    )
    measures: list[str] = option(
        list(registry.names(quality=True, task="ksc")),
        "the measures compared",
        key="check.measures",
        accepts=lambda v: isinstance(v, list) and 0 < len(v) and set(v) <= set(GATED_MEASURES),
        advice="a non-empty list of the measures rho, omega2, L, A, Aw",
        example=["A", "Aw", "rho"],
    )
    z: float = option(
        2.0,
        "tolerance in standard errors of the baseline mean across repetitions",
        key="check.z",
        minimum=0,
        exclusive=True,
    )
    min_tolerance: float = option(0.02, "never flag a move smaller than this", key="check.min_tolerance", minimum=0)
    exact_tolerance: float = option(
        1e-9,
        "built-in metrics, where the run has the baseline's numerics: any larger change fails",
        key="check.exact_tolerance",
        minimum=0,
    )
    two_sided: bool = option(
        False, "plugin metrics: fail on a rise too (built-in metrics always do)", key="check.two_sided", example=True
    )


def _settings(run: RunInputs) -> dict:
    s = run.settings
    return {"pair": str(run.cfg.pair.name), "k": s.k, "n": s.n, "repetitions": s.repetitions, "seed": run.seed}


def baseline_from_measures(measures: pd.DataFrame, settings: dict, gated: list[str], extra: dict) -> dict:
    """The JSON-ready baseline of one run's measures."""
    table: dict[str, dict] = {}
    for metric, grp in measures.groupby("metric"):
        table[metric] = {}
        by_rep = grp.set_index("repetition")
        for measure in gated:
            x = by_rep[measure].dropna()
            table[metric][measure] = {
                "mean": float(x.mean()) if len(x) else None,
                "values": {str(r): float(v) for r, v in x.items()},
            }
    return {"settings": settings, **extra, "measures": table}


def two_sided(metric: str, plugins_too: bool) -> bool:
    """Built-in metrics are gated both ways; plugins only when asked (``check.two_sided``)."""
    try:
        return plugins_too or is_builtin_module(get_metric(metric).module)
    except ConfigError:  # no longer registered: reported as MISSING
        return plugins_too


def compare(
    baseline: dict,
    measures: pd.DataFrame,
    *,
    z: float,
    min_tolerance: float,
    exact_tolerance: float = 1e-9,
    plugins_two_sided: bool = False,
    advice: str = REGENERATE,
    ran: Collection[str] = (),
) -> pd.DataFrame:
    """One row per (metric, measure) of the baseline: old and new mean, tolerance, status (a metric whose declared
    version changed: not compared, with ``advice`` on writing the baseline afresh).

    Statuses that fail the gate: DROPPED, ROSE (a two-sided metric moved up), CHANGED (a built-in metric's values
    differ beyond ``exact_tolerance`` where the run reproduces the baseline's numerics), FAILED (the metric ran and
    failed in some or all repetitions of the baseline's; ``ran``: the metrics the run computed, besides those with
    a row in ``measures``), MISSING (it did not run)."""
    rows = []
    exact = reproducible(baseline)
    versions = baseline.get("versions", {})
    for metric, by_measure in baseline["measures"].items():
        grp = measures[measures["metric"] == metric].set_index("repetition")
        both_ways = two_sided(metric, plugins_two_sided)
        built_in = two_sided(metric, False)  # held bit for bit where the numerics allow; a plugin, to tolerance only
        declared = versions.get(metric, {}).get("version")
        try:
            declared_now = version_parts(get_metric(metric).version)["version"]
        except ConfigError:
            declared_now = declared
        if declared is not None and declared_now != declared:
            rows.append(
                {
                    "metric": metric,
                    "measure": "*",
                    "status": f"version {declared} -> {declared_now}: not compared; write the baseline afresh: {advice}",
                }
            )
            continue
        for measure, old in by_measure.items():
            new = grp[measure].dropna() if measure in grp else pd.Series(dtype=float)
            row = {"metric": metric, "measure": measure, "baseline": old["mean"]}
            if old["mean"] is None:
                rows.append({**row, "status": "no baseline value"})
                continue
            base = pd.Series(list(old["values"].values()), dtype=float)
            if len(new) < len(base):  # not run (MISSING), or failed in some repetitions (FAILED)
                rows.append(
                    {
                        **row,
                        "new": float(new.mean()) if len(new) else math.nan,
                        "change": math.nan,
                        "tolerance": math.nan,
                        "status": "FAILED" if len(grp) or metric in ran else "MISSING",
                    }
                )
                continue
            se = float(base.std(ddof=1)) / math.sqrt(len(base)) if len(base) > 1 else 0.0
            tol = max(min_tolerance, z * se)
            change = float(new.mean()) - float(base.mean())
            status = "DROPPED" if change < -tol else ("ROSE" if both_ways else "improved") if change > tol else "ok"
            if status == "ok" and exact and built_in:
                old_values = {int(r): v for r, v in old["values"].items()}
                gap = max((abs(float(new[r]) - v) for r, v in old_values.items() if r in new.index), default=0.0)
                status = "CHANGED" if gap > exact_tolerance else status
            rows.append({**row, "new": float(new.mean()), "change": change, "tolerance": tol, "status": status})
    for metric in sorted(set(measures["metric"]) - set(baseline["measures"])):
        rows.append({"metric": metric, "measure": "*", "status": "new metric (not in baseline)"})
    return pd.DataFrame(rows, columns=["metric", "measure", "baseline", "new", "change", "tolerance", "status"])


def regression_lines(failed: pd.DataFrame, baseline: dict, measures: pd.DataFrame, exact_tolerance: float) -> list[str]:
    """One "REGRESSION: ..." line per failing row of ``compare``'s table, saying what happened to the measure."""
    lines = []
    for _, row in failed.iterrows():
        if row["status"] == "MISSING":
            what = "is missing: the run did not compute it (is it in metrics=[...]? is its plugin installed?)"
        elif row["status"] == "FAILED":
            values = measures.loc[measures["metric"] == row["metric"], row["measure"]]
            reps = len(baseline["measures"][row["metric"]][row["measure"]]["values"])
            failed_reps = reps - int(values.notna().sum())
            rest = f"the other {reps - failed_reps} give {row['new']:.4f}" if failed_reps < reps else "no value"
            what = (
                f"failed in {failed_reps} of {reps} repetitions ({rest}; the baseline {row['baseline']:.4f}); "
                "its failures are listed above and in failures.csv"
            )
        elif row["status"] == "CHANGED":
            what = (
                f"changed from {row['baseline']:.6f} to {row['new']:.6f} (mean; values differ beyond "
                f"{exact_tolerance} where an unchanged metric reproduces them exactly)"
            )
        else:
            verb = "dropped" if row["status"] == "DROPPED" else "rose"
            what = f"{verb} from {row['baseline']:.4f} to {row['new']:.4f} (tolerance {row['tolerance']:.4f})"
        lines.append(f"REGRESSION: metric {row['metric']} measure {row['measure']} {what}")
    return lines


class CheckTask(
    KSCTask, name="check", settings=CheckSettings, fields=KSCTask.fields, printed=("table3_md", "check_md")
):
    """Regression gate: rerun a small fixed KSC study and compare its measures with a committed baseline; fails
    when a built-in metric's measure moves beyond tolerance either way (or, with the baseline's numerics,
    changes at all), a plugin's drops, or a metric is missing."""

    @classmethod
    def unnamed_metrics(cls, cfg: DictConfig) -> list[str]:
        """Without ``metrics=``: the baseline's metrics that are registered here (one that is not is reported
        MISSING), so a gate of one's own metrics runs those alone; the default ones to write a baseline
        (``update=true``), or where the baseline cannot be read (the preflight says why) or none of its metrics is
        registered."""
        settings, _, _ = read_settings(cls.settings, cfg)  # None with a bad value: the run's validation names it
        if settings is None or settings.update:
            return ["default"]
        try:
            baseline = read_baseline(Path(settings.baseline).expanduser())
        except ConfigError:
            return ["default"]
        registered = set(available_metrics())
        return [name for name in baseline["measures"] if name in registered] or ["default"]

    def preflight(self, run: RunInputs) -> None:
        super().preflight(run)
        gate_baseline(run)

    def run(self, run: RunInputs) -> TaskResult:
        return run_gate(run)


def gate_baseline(run: RunInputs) -> dict:
    """The baseline the gate compares with, checked before any work (``{}`` with update=true, which writes it):
    one ConfigError line for a file that is not a baseline, settings that differ from the run's, or, from an
    installed package, update=true on the baseline shipped inside it."""
    path = Path(run.settings.baseline).expanduser()
    if run.settings.update:
        if is_shipped(path) and not IN_CHECKOUT:
            raise ConfigError(
                f"check.baseline={shown(str(path))} is the baseline shipped inside the installed package, which "
                "update=true would overwrite; write a baseline of your own, e.g. check.baseline=my_baseline.json"
            )
        return {}
    baseline = read_baseline(path)
    settings = _settings(run)
    differs = {
        k: (baseline["settings"].get(k), settings[k]) for k in SETTINGS if baseline["settings"].get(k) != settings[k]
    }
    if differs:
        raise ConfigError(
            "the run's settings differ from the baseline's, so they cannot be compared: "
            + ", ".join(f"{k}: baseline {a!r} vs run {b!r}" for k, (a, b) in differs.items())
            + f". Use the baseline's settings or write a new baseline ({path}) with update=true"
        )
    return baseline


def is_shipped(path: Path) -> bool:
    """Whether ``path`` is the shipped baseline (in the checkout, or inside the installed package)."""
    return Path(path).expanduser().resolve() == shipped_path(SHIPPED_BASELINE).resolve()


def read_baseline(path: Path) -> dict:
    """The baseline JSON at ``path``, checked for what the gate reads; one ConfigError line naming the problem."""
    stated = f"check.baseline={shown(str(path))} is not valid"
    write = "write one with update=true (python -m textmetric_bench task=check update=true check.baseline=<file>)"
    if path.is_dir():
        raise ConfigError(f"{stated}: it is a directory; point it at a baseline JSON file, or {write}")
    if not path.is_file():
        raise ConfigError(f"{stated}: no such file; point it at a baseline JSON, or {write}")
    try:
        baseline = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise ConfigError(f"{stated}: not JSON ({reason}{where}); {write}") from None
    problem = baseline_problem(baseline)
    if problem:
        raise ConfigError(f"{stated}: not a baseline the gate can read ({problem}); {write}")
    return baseline


def baseline_problem(baseline) -> str | None:
    """What a parsed baseline lacks for the gate (its settings, and per metric and measure a mean and the values of
    the repetitions), or None."""
    if not isinstance(baseline, dict):
        return f"a JSON {type(baseline).__name__}, not an object"
    settings, measures = baseline.get("settings"), baseline.get("measures")
    if not isinstance(settings, dict) or set(SETTINGS) - set(settings):
        return f"'settings' must hold {', '.join(SETTINGS)}"
    if not isinstance(measures, dict) or not measures:
        return "'measures' must hold each metric's measures"
    for metric, by_measure in measures.items():
        if not isinstance(by_measure, dict):
            return f"measures of {metric!r} are not an object"
        for measure, entry in by_measure.items():
            if not isinstance(entry, dict) or "mean" not in entry or not isinstance(entry.get("values"), dict):
                return f"{metric!r} {measure}: needs 'mean' and 'values' (one value per repetition)"
    return None


def param_changes(baseline: dict, metrics) -> dict[str, dict[str, tuple]]:
    """Per metric of both the baseline and the run, the parameters whose value differs from the baseline's
    ``metric_params``: (baseline's, run's). ``metrics``: the run's (MetricInfo, params)."""
    recorded, absent = baseline.get("metric_params") or {}, "(absent)"
    out = {}
    for info, params in metrics:
        before = recorded.get(info.name)
        if info.name not in baseline["measures"] or not isinstance(before, dict):
            continue
        pairs = {key: (before.get(key, absent), params.get(key, absent)) for key in sorted(set(before) | set(params))}
        changed = {key: pair for key, pair in pairs.items() if pair[0] != pair[1]}
        if changed:
            out[info.name] = changed
    return out


#: How to gate against a baseline of one's own (docs/regression-gate.md, "Gating your own metric").
OWN_BASELINE = "gate against one of your own, written by this check with update=true check.baseline=my_baseline.json"


def rewrite_advice(path: Path) -> str:
    """How to write the baseline at ``path`` afresh: the shipped one with the other shipped results, from a checkout
    (from an installed package, which refuses to overwrite it, a baseline of one's own instead); any other by
    rerunning the check with update=true."""
    if is_shipped(path):
        return REGENERATE if IN_CHECKOUT else f"the shipped baseline is the harness's own: {OWN_BASELINE}"
    return f"rerun this check with update=true (it rewrites {path})"


def parameter_advice(names: list[str], path: Path) -> str:
    """What to do when metrics ``names`` moved with parameters other than the baseline's at ``path``."""
    if IN_CHECKOUT and is_shipped(path):
        how = f"make them the defaults and write the shipped baseline afresh ({REGENERATE}), or {OWN_BASELINE}"
    else:
        how = f"write the baseline afresh with them: {rewrite_advice(path)}"
    return f"If the new parameters of {', '.join(names)} are intended, {how}"


def run_gate(run: RunInputs) -> TaskResult:
    """Run the gate (or write a new baseline with ``update=true``): the KSC task, then the comparison.

    The result's ``summary`` is the comparison table (one row per metric and measure) and ``passed``
    says whether the gate holds."""
    out_dir, cfg, check = run.out_dir, run.cfg, run.settings
    path = Path(check.baseline).expanduser()
    gated = list(check.measures)
    settings = _settings(run)
    baseline = gate_baseline(run)  # checked by the preflight too, where a run is validated first (the command line)
    if cfg.get("metrics") is None and not check.update:  # the task's choice: CheckTask.unnamed_metrics
        names = [info.name for info, _ in run.metrics]
        if set(names) <= set(baseline["measures"]):
            log.info("metrics= not given: the gate runs its baseline's metrics, %s", ", ".join(names))
        else:
            log.warning("metrics= not given, and none of the baseline's metrics is registered: the default ones run")
    result = run_task(KSCTask(), run)
    files = dict(result.files)
    if check.update:
        if result.failures:  # a baseline without a failed metric would leave it ungated without a word
            failed_names = ", ".join(sorted(result.failures))
            log.error(
                "baseline %s not written: %s failed (see above); fix or leave out (metrics=[...])", path, failed_names
            )
            return replace(result, summary=pd.DataFrame())
        measured = sorted(set(result.measures["metric"]))
        params = OmegaConf.to_container(cfg.get("metric") or {}, resolve=True)
        extra = {
            "embedding_model": result.info["embedding"]["model"],
            "numerics": numerics(),
            "written_by": REGENERATE if IN_CHECKOUT and is_shipped(path) else "task=check update=true",
            "versions": metric_versions(measured),
            # the parameters of the baseline's metrics, the ones the gate compares (not every registered metric's)
            "metric_params": {name: value for name, value in params.items() if name in measured},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(baseline_from_measures(result.measures, settings, gated, extra), indent=2) + "\n")
        log.info("wrote baseline %s", path)
        return replace(result, summary=pd.DataFrame(), files={**files, "baseline": path})

    model = result.info["embedding"]["model"]  # None: no metric of this run reads embeddings
    if model is not None and baseline.get("embedding_model") not in (None, model):
        log.warning("embedding model changed: baseline %s, now %s", baseline.get("embedding_model"), model)
    table = compare(
        baseline,
        result.measures,
        z=check.z,
        min_tolerance=check.min_tolerance,
        exact_tolerance=check.exact_tolerance,
        plugins_two_sided=check.two_sided,
        advice=rewrite_advice(path),
        ran=result.info.get("metrics_this_run") or (),
    )
    failed = table[table["status"].isin(FAILING)]
    table.to_csv(out_dir / "check.csv", index=False)
    moved = table[(table["status"] != "ok")]
    shown = moved.copy()
    for col in ("baseline", "new", "change", "tolerance"):
        pattern = "{:+.4f}" if col == "change" else "{:.4f}"
        shown[col] = shown[col].map(lambda v, pattern=pattern: "" if pd.isna(v) else pattern.format(v))
    verdict = "FAILED" if len(failed) else "passed"
    now = numerics()
    text = (
        f"# Regression check {verdict}\n\nBaseline: {path}\nSettings: {settings}\n"
        f"Tolerance: max({check.min_tolerance}, {check.z} x the baseline's standard error across repetitions); "
        "built-in metrics both ways"
        + (
            f", and to {check.exact_tolerance} per value (this run has the baseline's numerics: {now['label']})"
            if reproducible(baseline)
            else f" (to tolerance only: {numerics_difference(baseline)}, so values may differ in their last bits)"
        )
        + "\n\n"
        + (markdown_table(shown) if len(moved) else "Nothing moved beyond tolerance.")
        + "\n"
    )
    text += "".join(f"\n{line}" for line in regression_lines(failed, baseline, result.measures, check.exact_tolerance))
    if edited := source_changes(baseline):
        text += (
            f"\n\nThe source of {', '.join(edited)} changed since the baseline was written, its declared version "
            "did not: the gate compared the values only"
        )
    changed_params = param_changes(baseline, run.metrics)
    if changed_params:
        text += (
            "\n\nParameters differ from the baseline's, so a move of these metrics may come from them: "
            + "; ".join(
                f"{metric} " + ", ".join(f"{key} {old!r} -> {new!r}" for key, (old, new) in keys.items())
                for metric, keys in changed_params.items()
            )
        )
        log.warning("metric parameters differ from the baseline's: %s", ", ".join(changed_params))
    moved_metrics = set(failed.loc[failed["status"].isin(["DROPPED", "ROSE", "CHANGED"]), "metric"])
    if moved_metrics - set(changed_params):
        text += (
            f"\n\nIf the change is intended, declare it (@metric(version=...)) and write the baseline afresh: "
            f"{rewrite_advice(path)}"
        )
        if not is_shipped(path) and IN_CHECKOUT and any(two_sided(m, False) for m in moved_metrics):
            text += f"; a built-in metric's change also needs the shipped results regenerated: {REGENERATE}"
    if moved_metrics & set(changed_params):
        text += f"\n\n{parameter_advice(sorted(moved_metrics & set(changed_params)), path)}"
    (out_dir / "check.md").write_text(text + "\n")
    return replace(
        result, task="check", summary=table, files={**files, "check_md": out_dir / "check.md"}, passed=failed.empty
    )


run_check = task_runner(CheckTask)
