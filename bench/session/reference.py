"""Reference rows from Python: the shipped measures of the built-in metrics (``reports/reference/``), and a run's
metrics ranked among them (the same files ``reference: auto`` merges into a KSC run's table)."""

from __future__ import annotations

import json

import pandas as pd

from textmetric_bench.errors import ConfigError
from textmetric_bench.measures import registry
from textmetric_bench.tasks.reference import REFERENCE, REFERENCE_DIR, RUN, reference_name


def reference_rows(
    pair: str = "fortune_computing_people", *, k: int = 7, n: int = 100, repetitions: int = 5, seed: int = 0
) -> pd.DataFrame:
    """The shipped reference measures of every built-in metric on ``pair`` at these KSC settings: one row per
    (metric, repetition), ``source`` = reference; ConfigError naming the shipped settings if there is no such file."""
    settings = {"pair": pair, "k": k, "n": n, "repetitions": repetitions, "seed": seed}
    path = REFERENCE_DIR / reference_name(settings)
    if not path.is_file():
        shipped = ", ".join(sorted(p.stem for p in REFERENCE_DIR.glob("*.json"))) or "none"
        raise ConfigError(
            f"no reference rows for {pair} at k={k}, n={n}, repetitions={repetitions}, seed={seed} "
            f"({path.name}); shipped: {shipped} (<pair>_k<k>_n<n>_r<repetitions>_s<seed>)"
        )
    metrics = json.loads(path.read_text(encoding="utf-8"))["metrics"]
    rows = [
        {"metric": name, **row, "source": REFERENCE} for name, entry in metrics.items() for row in entry["measures"]
    ]
    return pd.DataFrame(rows)


def ranked_among_reference(measures: pd.DataFrame, settings: dict) -> pd.DataFrame:
    """Mean of every measure per metric, this run's metrics and the reference rows at the run's ``settings``
    (pair, k, n, repetitions, seed), sorted by A; ``rank_<measure>`` is each metric's rank (1 = best) among all.
    Each measure in Table 3's column and unit (T as ``T100``, in [100 op/s]); ``attrs["warnings"]`` says that
    the T of rows not computed here was measured on the machine that made them."""
    from textmetric_bench.measures.summaries import summarise_measures

    own = measures if "source" in measures.columns else measures.assign(source=RUN)
    computed = set(own.loc[own["source"] == RUN, "metric"])
    if not (own["source"] == REFERENCE).any():
        reference = reference_rows(**settings)
        own = pd.concat([own, reference[~reference["metric"].isin(computed)]], ignore_index=True)
    summary = summarise_measures(own.drop(columns="source"))
    means = summary.pivot(index="metric", columns="measure", values="mean")
    ksc = registry.names(quality=True, task="ksc") + registry.names(quality=False, task="ksc")  # T last
    columns = [m for m in ksc if m in means.columns]
    table = means[columns].rename_axis(columns=None)
    shown = {name: registry.measure(name) for name in columns}
    table = pd.DataFrame({m.column: table[name] / m.shown_scale for name, m in shown.items()}, index=table.index)
    for m in shown.values():
        table[f"rank_{m.column}"] = table[m.column].rank(ascending=False, method="min").astype("Int64")
    table.insert(0, "computed_here", table.index.isin(computed))
    timed = [m.column for m in shown.values() if not m.quality]
    if timed and not table["computed_here"].all():
        table.attrs["warnings"] = [
            f"{', '.join(timed)} of the rows not computed here (computed_here False) was measured on the machine "
            "that made the reference files, not on this one: rank_" + ", rank_".join(timed) + " compares machines"
        ]
    return table.sort_values("A", ascending=False) if "A" in table.columns else table
