"""The benchmark's one table: per study, ours and compcor on equal resources, their ratio and peak memory.

Equal resources (so the ratio compares the implementations, not the cores they got) means ours serial (one worker process) against compcor serial (a plain
loop in one process), both pinned to one CPU core with one BLAS/OpenMP thread
(``timed_experiments.pin_to_one_core``): the ratio is compcor's seconds over ours
(> 1 = ours faster). CPU seconds are those of each run's whole process tree, start-up, inputs
and (compcor) loading its tokenizer included. The 2-worker run is shown beside, not in the ratio.
Peak RSS is the summed resident memory of each run's process tree (conftest.py). The table is
printed at the end of ``make benchmark`` and written, with the machine it ran on, to
outputs/benchmark/summary.json.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

#: study -> (label of ours serial, label of ours with 2 workers, label of compcor), as test_experiments.py names them
STUDIES = {
    "ksc": ("ksc/ours-serial", "ksc/ours-2-workers", "ksc/compcor"),
    "robustness": ("robustness/ours-serial", "robustness/ours-2-workers", "robustness/compcor"),
}
COLUMNS = (
    "study",
    "evaluations",
    "ours_s",
    "compcor_s",
    "ratio",
    "ours_cpu_s",
    "compcor_cpu_s",
    "cpu_ratio",
    "ours_2_workers_s",
    "ours_peak_rss_mb",
    "compcor_peak_rss_mb",
    "ours_2_workers_peak_rss_mb",
    "serial_cpus",
    "per_metric",
)


#: The language model's jobs (lm_speed.py), each timed before and after on one pinned core
LM_JOBS = {"sampling": "IFC sampling", "fine_tuning": "IFC fine-tuning", "scoring": "LM scoring (FACE, CTRLEval)"}
LM_BEFORE, LM_AFTER, IFC_RUN = "lm/before", "lm/after", "lm/ifc-default-run"
IFC_RUN_KEPT = "lm/ifc-kept-activations-run"  # the default run with ifc.recompute_activations=false
#: LM scoring through lm.engine=ctranslate2, timed in the after run beside torch's: a row of its own, torch as before
ENGINE_JOB, LM_ENGINE_ROW = "scoring_ctranslate2", "LM scoring, torch->CTranslate2"


def lm_rows(results: dict[str, dict]) -> list[dict]:
    """One row per job of ``LM_JOBS``: tokens per wall and per CPU second before and after, their ratios
    (after / before, > 1 = faster now) and, for fine-tuning, the share of padding in the batches; then, when the
    after run scored with CTranslate2 too, a row of torch's scoring (before) against CTranslate2's (after)."""
    before, after = results.get(LM_BEFORE), results.get(LM_AFTER)
    if not (before or after):
        return []
    rows = [_speed_row(label, *(r.get(job) if r else None for r in (before, after))) for job, label in LM_JOBS.items()]
    if after and after.get(ENGINE_JOB):  # torch (before) against CTranslate2 (after), both timed in the after run
        rows.append(_speed_row(LM_ENGINE_ROW, after.get("scoring"), after[ENGINE_JOB]))
    return rows


def _speed_row(label: str, b: dict | None, a: dict | None) -> dict:
    row = {"job": label}
    for unit in ("tokens_per_s", "tokens_per_cpu_s"):
        row[f"before_{unit}"], row[f"after_{unit}"] = _get(b, unit), _get(a, unit)
        row[f"{unit}_ratio"] = (
            row[f"after_{unit}"] / row[f"before_{unit}"] if row[f"after_{unit}"] and row[f"before_{unit}"] else None
        )
    row["before_padding_share"], row["after_padding_share"] = _get(b, "padding_share"), _get(a, "padding_share")
    return row


def ifc_run_row(results: dict[str, dict], label: str = IFC_RUN) -> dict | None:
    """The default IFC run (``task=ifc``, model converted beforehand): seconds, peak RSS, load average at its start,
    and the machine it ran on (the row can be measured and quoted on its own: ``--part ifc-run``). With
    ``label=IFC_RUN_KEPT``, the same run with ``ifc.recompute_activations=false``."""
    run = results.get(label)
    return (
        None
        if run is None
        else {
            **{
                k: run.get(k)
                for k in ("seconds", "peak_tree_rss_mb", "load_at_start", "generation_threads", "train_s", "sample_s")
            },
            "machine": machine(),
        }
    )


def summary_rows(results: dict[str, dict]) -> list[dict]:
    """One row per study with at least one of its runs in ``results`` (label -> record); None where a run is missing."""
    rows = []
    for study, (serial_label, parallel_label, compcor_label) in STUDIES.items():
        serial, parallel, compcor = (results.get(label) for label in (serial_label, parallel_label, compcor_label))
        if not (serial or parallel or compcor):
            continue
        ours_s, compcor_s = _get(serial, "seconds"), _get(compcor, "seconds")
        ours_cpu, compcor_cpu = _get(serial, "tree_cpu_s"), _get(compcor, "tree_cpu_s")
        rows.append(
            {
                "study": study,
                "evaluations": _get(serial or compcor or parallel, "evaluations"),
                "ours_s": ours_s,
                "compcor_s": compcor_s,
                "ratio": compcor_s / ours_s if ours_s and compcor_s else None,
                "ours_cpu_s": ours_cpu,
                "compcor_cpu_s": compcor_cpu,
                "cpu_ratio": compcor_cpu / ours_cpu if ours_cpu and compcor_cpu else None,
                "ours_2_workers_s": _get(parallel, "seconds"),
                "ours_peak_rss_mb": _get(serial, "peak_tree_rss_mb"),
                "compcor_peak_rss_mb": _get(compcor, "peak_tree_rss_mb"),
                "ours_2_workers_peak_rss_mb": _get(parallel, "peak_tree_rss_mb"),
                "serial_cpus": max((r["cpus"] for r in (serial, compcor) if r and r.get("cpus")), default=None),
                "per_metric": per_metric(serial, compcor),
            }
        )
    return rows


def per_metric(serial: dict | None, compcor: dict | None) -> dict[str, dict]:
    """metric -> {"ours": s, "compcor": s}: each serial run's summed evaluation seconds of that metric."""
    ours, theirs = (_get(r, "seconds_per_metric") or {} for r in (serial, compcor))
    return {m: {"ours": ours.get(m), "compcor": theirs.get(m)} for m in sorted(set(ours) | set(theirs))}


def _get(record: dict | None, key: str):
    return None if record is None else record.get(key)


def machine() -> dict:
    """What the numbers ran on: CPU model and its widest vector instructions, logical cores, memory, Python, load
    average, date."""
    import psutil

    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")), None)
    return {
        "cpu": model or platform.processor() or None,
        "isa": instruction_set(),
        "logical_cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "robustness_grid": os.environ.get("BENCH_ROBUSTNESS_GRID", "full"),
    }


def instruction_set(flags: frozenset[str] | None = None) -> str | None:
    """The CPU's widest vector instructions from its /proc/cpuinfo flags (``textmetric_bench.numerics.cpu_flags``
    unless given): ``AVX-512`` (avx512f), ``AVX2``, or None (neither, or no flags to read). Which of the libraries'
    kernels ran depends on it (docs/reproducibility.md), so a speed is quoted with it."""
    if flags is None:
        from textmetric_bench.numerics import cpu_flags

        flags = cpu_flags()
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None


def cpu_named(about: dict) -> str:
    """The CPU of a record as its pages name it: the model, with its vector instructions where recorded (records
    made up to 2026-12-02 09:54 UTC have none)."""
    return f"{about['cpu']}, {about['isa']}" if about.get("isa") else str(about["cpu"])


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def write_summary(path: Path, rows: list[dict], about: dict, lm: dict | None = None) -> None:
    """``{"machine": ..., "studies": rows}`` as JSON at ``path``, with ``"lm": lm`` (the language model's rows,
    ``{"machine": ..., "jobs": lm_rows(...), "ifc_run": ifc_run_row(...)}``) when given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    content = {"machine": about, "studies": rows, **({"lm": lm} if lm else {})}
    path.write_text(json.dumps(content, indent=2) + "\n")


def table_lines(rows: list[dict]) -> list[str]:
    """The rows as a fixed-width text table."""
    head = (
        f"{'study':<11}{'evals':>7}{'ours s':>10}{'compcor s':>11}{'ratio':>8}{'ours CPU s':>12}"
        f"{'compcor CPU s':>15}{'CPU ratio':>11}{'2 workers s':>13}{'ours RSS MB':>13}{'compcor RSS MB':>16}{'2 workers RSS MB':>18}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['study']:<11}{_num(r['evaluations'], 7, 0)}{_num(r['ours_s'], 10)}{_num(r['compcor_s'], 11)}"
            f"{_num(r['ratio'], 8, 2)}{_num(r['ours_cpu_s'], 12)}{_num(r['compcor_cpu_s'], 15)}"
            f"{_num(r['cpu_ratio'], 11, 2)}"
            f"{_num(r['ours_2_workers_s'], 13)}{_num(r['ours_peak_rss_mb'], 13, 0)}"
            f"{_num(r['compcor_peak_rss_mb'], 16, 0)}{_num(r['ours_2_workers_peak_rss_mb'], 18, 0)}"
        )
    return lines


def _num(value, width: int, digits: int = 1) -> str:
    return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"


#: The performance page (docs/performance.md) includes this file; it is written here, never by hand.
GENERATED = Path(__file__).resolve().parents[2] / "docs" / "generated" / "benchmark.md"
GENERATED_NOTE = (
    "<!-- generated by `python tests/benchmarks/summary.py --docs` from tests/benchmarks/quoted_summary.json; "
    "do not edit -->"
)
QUOTED = Path(__file__).resolve().parent / "quoted_summary.json"  # the run the docs quote


def markdown(summary: dict) -> str:
    """The benchmark table and the machine line, from a summary.json's content."""
    m = summary["machine"]
    about = (
        f"Measured on {m['date']}: {cpu_named(m)}, {m['logical_cores']} logical cores, {m['memory_gib']} GiB, "
        f"Python {m['python']}; load average at the end {', '.join(str(v) for v in m['load_average_at_end'])}; "
        f"size/imbalance grid `{m['robustness_grid']}`."
    )
    head = (
        "| study | evaluations | ours serial | compcor serial | ratio (compcor / ours) | ours CPU | compcor CPU "
        "| CPU ratio | ours, 2 workers | peak RSS ours / compcor / 2 workers |"
    )
    lines = [about, "", head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["studies"]:
        rss = " / ".join(
            f"{v:,.0f} MB" if v is not None else "-"
            for v in (r["ours_peak_rss_mb"], r["compcor_peak_rss_mb"], r["ours_2_workers_peak_rss_mb"])
        )
        cells = [
            r["study"],
            f"{r['evaluations']:,}" if r["evaluations"] is not None else "-",
            *(f"{r[k]:,.1f} s" if r[k] is not None else "-" for k in ("ours_s", "compcor_s")),
            f"{r['ratio']:.2f}" if r["ratio"] is not None else "-",
            *(f"{r[k]:,.1f} s" if r[k] is not None else "-" for k in ("ours_cpu_s", "compcor_cpu_s")),
            f"{r['cpu_ratio']:.2f}" if r["cpu_ratio"] is not None else "-",
            f"{r['ours_2_workers_s']:,.1f} s" if r["ours_2_workers_s"] is not None else "-",
            rss,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    cpus = {r.get("serial_cpus") for r in summary["studies"]} - {None}
    if cpus:
        lines += [
            "",
            f"Serial runs were pinned to {', '.join(map(str, sorted(cpus)))} CPU core(s) each (process "
            "affinity, inherited by every process and thread they start), the 2-worker run had all cores.",
        ]
    for r in summary["studies"]:
        if not r.get("per_metric"):
            continue
        lines += [
            "",
            f"Seconds per metric, {r['study']} (serial; PR and DC each carry their shared computation in "
            "full, as T does, so ours sum to more than the wall time):",
            "",
            "| metric | ours | compcor | ratio |",
            "|---|---|---|---|",
        ]
        for metric, t in r["per_metric"].items():
            cells = [f"{t[k]:,.1f} s" if t[k] is not None else "-" for k in ("ours", "compcor")]
            cells.append(f"{t['compcor'] / t['ours']:.2f}" if t["ours"] and t["compcor"] else "-")
            lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def lm_markdown(lm: dict) -> str:
    """The language model's table: tokens per second before and after, on one pinned core, and the IFC run."""
    m = lm["machine"]
    lines = [
        f"The language model (SmolLM2-135M, `tests/benchmarks/lm_speed.py`), measured on {m['date']}: "
        f"{cpu_named(m)}, {m['logical_cores']} logical cores; load average at the end "
        f"{', '.join(str(v) for v in m['load_average_at_end'])}. Each job runs in a fresh process pinned to one "
        "core with one torch thread; tokens per CPU second are the steadier figure on a busy machine.",
        "",
        "| job | before, tokens/s | after, tokens/s | ratio | before, tokens/CPU s | after, tokens/CPU s "
        "| CPU ratio | padding before / after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fmt = lambda v, f: f.format(v) if v is not None else "-"
    for r in lm["jobs"]:
        padding = (
            f"{fmt(r['before_padding_share'], '{:.0%}')} / {fmt(r['after_padding_share'], '{:.0%}')}"
            if r["before_padding_share"] is not None or r["after_padding_share"] is not None
            else "-"
        )
        lines.append(
            f"| {r['job']} | {fmt(r['before_tokens_per_s'], '{:,.1f}')} | {fmt(r['after_tokens_per_s'], '{:,.1f}')} "
            f"| {fmt(r['tokens_per_s_ratio'], '{:.2f}')} | {fmt(r['before_tokens_per_cpu_s'], '{:,.1f}')} "
            f"| {fmt(r['after_tokens_per_cpu_s'], '{:,.1f}')} | {fmt(r['tokens_per_cpu_s_ratio'], '{:.2f}')} "
            f"| {padding} |"
        )
    for key, what in (
        ("ifc_run", "The default IFC run (`task=ifc`, model converted beforehand)"),
        ("ifc_run_kept", "The same run with `ifc.recompute_activations=false` (activations kept)"),
    ):
        run = lm.get(key)
        if run:
            lines += [
                "",
                f"{what}: {fmt(run['seconds'], '{:,.0f}')} s, "
                f"peak RSS {fmt(run['peak_tree_rss_mb'], '{:,.0f}')} MiB, {run['generation_threads']} torch "
                f"thread(s) for generation"
                + (
                    f" (fine-tuning {run['train_s']:,.0f} s, sampling {run['sample_s']:,.0f} s)"
                    if run.get("train_s") is not None
                    else ""
                )
                + f", load average {fmt(run['load_at_start'], '{:.2f}')} at its start"
                + (
                    f"; measured on {run['machine']['date']} ({cpu_named(run['machine'])}, "
                    f"{run['machine']['logical_cores']} logical cores)."
                    if run.get("machine")
                    else "."
                ),
            ]
    return "\n".join(lines)


README = GENERATED.parents[2] / "README.md"
IFC_START, IFC_END = "<!-- ifc-run:start -->", "<!-- ifc-run:end -->"


def readme_ifc_text(summary: dict) -> str:
    """The README's words on the default IFC run's time and memory, from the quoted summary's ``lm.ifc_run``."""
    run = (summary.get("lm") or {}).get("ifc_run")
    if not run or not run.get("machine"):
        return "the default run's time is in [Performance](docs/performance.md#the-language-model)"
    m = run["machine"]
    idle = run["load_at_start"] < m["logical_cores"] / 2
    return (
        f"the default run took {run['seconds'] / 60:.1f} min at a peak of {run['peak_tree_rss_mb']:,.0f} MiB "
        f"on {'an idle' if idle else 'a busy'} {m['logical_cores']}-core {m['cpu']}"
        f"{' with ' + m['isa'] if m.get('isa') else ''} "
        f"(load {run['load_at_start']:.2f} at its start, {m['date'][:10]}, model converted beforehand)"
    )


def write_readme_ifc(summary: dict, readme: Path = README) -> None:
    """Rewrite the README between IFC_START and IFC_END with ``readme_ifc_text``."""
    text = readme.read_text(encoding="utf-8")
    before, rest = text.split(IFC_START, 1)
    readme.write_text(
        before + IFC_START + readme_ifc_text(summary) + IFC_END + rest.split(IFC_END, 1)[1], encoding="utf-8"
    )


def generated_page(summary: dict) -> str:
    """The content of GENERATED for a summary.json's content: a note that it is generated, then the table."""
    lm = f"\n\n{lm_markdown(summary['lm'])}" if summary.get("lm") else ""
    return f"{GENERATED_NOTE}\n{markdown(summary)}{lm}\n"


def _with_ifc_runs(quoted: dict, new: dict) -> dict:
    lm = new.get("lm") or {}
    run = lm.get("ifc_run")
    if not run:
        raise ValueError("no default IFC run (tests/benchmarks/test_lm_speed.py)")
    # the run keeping activations is measured beside the default one, or else the quoted one is dropped as stale
    runs = {"ifc_run": run, **({"ifc_run_kept": lm["ifc_run_kept"]} if lm.get("ifc_run_kept") else {})}
    kept = {
        k: v
        for k, v in quoted.get("lm", {"machine": run["machine"], "jobs": []}).items()
        if k not in ("ifc_run_kept", "ifc_run_recompute")
    }
    return {**quoted, "lm": {**kept, **runs}}


def _with_studies(quoted: dict, new: dict) -> dict:
    if not new.get("studies"):
        raise ValueError("no study against compcor (tests/benchmarks/test_experiments.py)")
    return {**quoted, "machine": new["machine"], "studies": new["studies"]}


def _with_lm_jobs(quoted: dict, new: dict) -> dict:
    lm = new.get("lm") or {}
    if not lm.get("jobs"):
        raise ValueError("no language-model job (tests/benchmarks/test_lm_speed.py)")
    return {**quoted, "lm": {**quoted.get("lm", {}), "machine": lm["machine"], "jobs": lm["jobs"]}}


#: What ``write_generated(part=...)`` takes from a run into the quoted summary, keeping the rest: the default IFC run
#: (it needs an idle machine, which a whole benchmark run rarely finds), the studies against compcor (a run of
#: test_experiments.py alone), or the language model's jobs (tokens per second before and after, the engine row).
PARTS = {"ifc-run": _with_ifc_runs, "studies": _with_studies, "lm-jobs": _with_lm_jobs}


def write_generated(
    summary_file: Path, target: Path = GENERATED, *, part: str | None = None, readme: Path | None = None
) -> None:
    """Quote ``summary_file`` in ``target`` and the README (and keep a copy as QUOTED, which the tests check them
    against): all of it, or only its ``part`` (``PARTS``) merged into the quoted summary."""
    summary = json.loads(summary_file.read_text())
    if part is not None:
        try:
            summary = PARTS[part](json.loads(QUOTED.read_text()), summary)
        except ValueError as exc:
            raise SystemExit(f"{summary_file} holds {exc}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(generated_page(summary), encoding="utf-8")
    write_readme_ifc(summary, readme or README)
    QUOTED.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    import argparse

    PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this checkout, whichever one the venv installed
    parser = argparse.ArgumentParser(description="Quote outputs/benchmark/summary.json in the docs' performance page.")
    parser.add_argument(
        "--docs", action="store_true", help="rewrite docs/generated/benchmark.md (and quoted_summary.json)"
    )
    parser.add_argument("--summary", type=Path, default=PROJECT_ROOT / "outputs" / "benchmark" / "summary.json")
    parser.add_argument(
        "--part",
        choices=sorted(PARTS),
        help="with --docs: take only this part of --summary, keeping the rest of the quoted summary "
        "(ifc-run: the default IFC run, measured on its own when idle; studies: "
        "test_experiments.py; lm-jobs: the language model's jobs of test_lm_speed.py)",
    )
    args = parser.parse_args()
    if args.docs:
        write_generated(args.summary, part=args.part)
    else:
        print(markdown(json.loads(args.summary.read_text())))
