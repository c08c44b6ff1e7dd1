"""The warnings of a run (bench/measures/run_warnings.py) that every view of a result carries, and the caution beside
each paired verdict below 5 repetitions (bench/measures/paired.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from test_figures import rendered

from textmetric_bench.measures.paired import paired_comparisons
from textmetric_bench.measures.run_warnings import REASON_CHARS, run_warnings, unstated_warnings
from textmetric_bench.reports.figures.drawing import CAPTION_GID

LONG = {
    "embedder": {
        "limit": 256,
        "unit": "word pieces",
        "done": "cut to its first 256 word pieces",
        "cuts": True,
        "corpora": {
            "bbc_news": {"texts": 2125, "over_limit": 1400, "share": 0.659, "longest": 5000},
            "shakespeare_passages": {"texts": 2703, "over_limit": 0},
        },
    }
}


def test_each_kind_of_trouble_is_one_sentence_and_a_clean_run_has_none():
    info = {
        "repetitions": 5,
        "long_texts": LONG,
        "failures": {"mauve": "ValueError: NaN in\n  embeddings"},
        "orientation_warnings": {"zipf": "reversed on 3 of 5 repetitions"},
        "reference": {"file": "reports/reference/x.json", "not_used": "its corpora digest differs"},
        "grid": {"truncated": ["n_ref capped from 3000 to 900"]},
    }
    found = run_warnings(info)
    assert len(found) == 5 and not any("repetitions (fewer" in w for w in found)
    assert (
        "bbc_news: 1400 of the 2125 texts the run uses (65.9%)" in found[0] and "shakespeare_passages" not in found[0]
    )
    assert found[1] == "Metric mauve failed: ValueError: NaN in embeddings"
    assert found[2].startswith("Orientation of zipf") and "digest differs" in found[3] and "900" in found[4]
    assert run_warnings({"repetitions": 5, "long_texts": {}, "failures": {}}) == []


def test_a_long_failure_reason_is_cut_at_a_word_and_the_cut_is_marked():
    reasons = "; ".join(f"repetition {r}: ValueError: total length {1000 + r} divisible by 3" for r in range(12))
    (found,) = run_warnings({"repetitions": 5, "failures": {"flaky": reasons}})
    assert len(found) <= len("Metric flaky failed: ") + REASON_CHARS
    kept = found.removeprefix("Metric flaky failed: ").removesuffix(" … (in full in table3.md)")
    assert kept != found and reasons.startswith(kept) and reasons[len(kept)] == " "  # cut between words, said so


def test_the_warnings_no_table_states_are_the_plugins_and_the_merges_in_the_runs_order():
    info = {
        "repetitions": 2,
        "long_texts": LONG,
        "plugin_failures": {"broken": {"plugin": "b", "error": "RuntimeError: x", "withdrawn": ["gap"]}},
        "failures": {"mauve": "ValueError"},
        "earlier_metrics": ["chi"],
        "metrics_this_run": ["zipf"],
        "grid": {"truncated": ["n_ref capped"]},
    }
    unstated = unstated_warnings(info)
    assert unstated == [
        "Metric plugin b (broken) failed to import: RuntimeError: x; its metric gap did not run",
        "Merged from an earlier run in this directory: chi (this run computed zipf); a new directory keeps a run's "
        "metrics alone",
        "Grid truncated: n_ref capped",
    ]
    every = run_warnings(info)
    assert [w for w in every if w in unstated] == unstated and len(every) == len(unstated) + 3
    assert unstated_warnings({"repetitions": 2, "long_texts": LONG, "failures": {"mauve": "ValueError"}}) == []


def test_fewer_than_five_completed_repetitions_warn_whatever_the_setting_asked():
    assert run_warnings({"repetitions": 2})[0].startswith("Only 2 repetitions (fewer than 5)")
    assert run_warnings({"repetitions": 5}, repetitions=3)[0].startswith("Only 3 repetitions")
    windows = {"embedder": {**LONG["embedder"], "cuts": False, "done": "embedded whole as windows"}}
    assert run_warnings({"repetitions": 5, "long_texts": windows}) == []  # read whole: a note, not a warning


def test_a_verdict_on_few_repetitions_carries_its_caution():
    rng = np.random.default_rng(0)
    for reps, cautioned in ((3, True), (5, False)):
        measures = pd.DataFrame(
            [
                {"metric": m, "repetition": r, "A": base + rng.normal(0, 0.001)}
                for m, base in (("good", 0.9), ("bad", 0.5))
                for r in range(reps)
            ]
        )
        frame = paired_comparisons(measures, "A")
        assert frame["better"].tolist() == ["good"]  # the difference is plain either way
        assert bool(frame["caution"].iloc[0]) is cautioned
        assert not cautioned or frame["caution"].iloc[0].startswith("only 3 paired repetitions")


def test_the_completed_repetitions_a_task_warns_on_are_the_summarys_largest_n():
    from textmetric_bench.measures.summaries import most_repetitions, summarise_measures

    computed = pd.DataFrame(
        {
            "metric": ["fid"] * 4 + ["chi"] * 4,
            "repetition": [0, 1, 2, 3] * 2,
            "rho": [0.9, np.nan, 0.8, np.inf, 0.5, 0.4, np.nan, np.nan],
            "omega2": [np.nan, 0.7, np.nan, np.nan, 0.3, 0.2, 0.1, np.nan],
            "source": "computed",
        }
    )
    reference = pd.DataFrame(
        {"metric": ["fid"], "repetition": [0], "rho": [0.9], "omega2": [0.9], "source": "reference"}
    )
    measures = pd.concat([computed, reference], ignore_index=True)
    summary = summarise_measures(measures)
    assert most_repetitions(measures) == int(summary["n"].max()) == 3  # chi's omega2: three finite values
    assert most_repetitions(measures[measures["metric"] == "fid"]) == int(summary.query("metric == 'fid'")["n"].max())
    assert most_repetitions(measures.iloc[:0]) is None


def test_a_figures_caption_carries_the_runs_warnings_below_what_it_draws():
    from test_reports import simulated_distances

    from textmetric_bench.reports.figures.ksc import SCATTER_CAPTION, scatter_figures

    warnings = run_warnings({"repetitions": 2, "failures": {"mauve": "ValueError: NaN in embeddings"}})
    figures = scatter_figures(simulated_distances(), "a setting", warnings=warnings)
    assert len(figures) > 2
    for name, fig in figures.items():
        captions = [t for t in fig.texts if t.get_gid() == CAPTION_GID]
        assert len(captions) == 1, name
        renderer = rendered(fig)
        drawn = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes if ax.get_visible())
        assert captions[0].get_window_extent(renderer).y1 <= drawn, f"{name}: the caption is not below the panels"
        what, _, below = captions[0].get_text().partition("\n⚠ ")  # what is drawn, then the warnings
        assert " ".join(what.split()) == SCATTER_CAPTION, name
        assert below.startswith("Only 2 repetitions") and "⚠ Metric mauve failed: ValueError" in below
    bare = scatter_figures(simulated_distances(), "a setting")
    assert not any("⚠" in t.get_text() for fig in bare.values() for t in fig.texts)
    bare_captions = [t for fig in bare.values() for t in fig.texts if t.get_gid() == CAPTION_GID]
    assert len(bare_captions) == len(bare) and all(
        " ".join(t.get_text().split()) == SCATTER_CAPTION for t in bare_captions
    )


def test_a_figure_of_one_metric_carries_the_warnings_about_the_run_and_about_that_metric():
    from textmetric_bench.measures.run_warnings import warnings_by_metric

    faces = {"limit": 1024, "unit": "tokens", "param": "max_len", "done": "read on its first 1024 tokens", "cuts": True}
    faces["corpora"] = {"bbc_news": {"texts": 10, "over_limit": 2, "share": 0.2, "longest": 3000}}
    info = {
        "repetitions": 3,
        "metric_inputs": {"mauve": "embeddings", "zipf": "texts", "face_so": "texts", "face_cd": "texts"},
        "long_texts": {**LONG, "face_so, face_cd": faces},
        "plugin_failures": {"broken": {"plugin": "b", "error": "RuntimeError: x", "withdrawn": ["gap"]}},
        "failures": {"mauve": "ValueError: NaN"},
        "orientation_warnings": {"zipf": "reversed on 3 of 5 repetitions"},
        "reference": {"file": "reports/reference/x.json", "not_used": "its corpora digest differs"},
        "earlier_metrics": ["chi"],
        "metrics_this_run": ["mauve", "zipf", "face_so", "face_cd"],
        "grid": {"truncated": ["n_ref capped"]},
    }
    every = run_warnings(info)
    assert len(every) == 9  # every figure of all metrics carries them all
    own = warnings_by_metric(info, ["mauve", "zipf", "face_so", "chi"])
    assert own == {m: run_warnings(info, metric=m) for m in own}
    starts = {m: [w.split(":")[0] for w in warnings] for m, warnings in own.items()}
    run_wide = ["Only 3 repetitions (fewer than 5)", "Grid truncated"]
    assert starts["mauve"] == [run_wide[0], "Long texts cut", "Metric mauve failed", run_wide[1]]
    assert "the embedder" in own["mauve"][1]  # mauve reads embeddings: the embedder's cuts are about it
    assert starts["zipf"] == [run_wide[0], "Orientation of zipf", run_wide[1]]  # texts: the embedder's are not
    assert starts["face_so"] == [run_wide[0], "Long texts cut", run_wide[1]] and "face_so, face_cd" in own["face_so"][1]
    # chi merged from an earlier run: its inputs unknown here, so the embedder's cuts may concern it
    assert starts["chi"] == [run_wide[0], "Long texts cut", "Merged from an earlier run in this directory", run_wide[1]]
    assert all([w for w in every if w in warnings] == warnings for warnings in own.values())  # in the run's order
    assert not any("failed to import" in w or "Reference rows" in w for ws in own.values() for w in ws)
    old_run = {key: value for key, value in info.items() if key != "metric_inputs"}  # before inputs were recorded
    assert any("the embedder" in w for w in run_warnings(old_run, metric="zipf"))


def test_each_metrics_own_scatter_speaks_only_of_what_it_draws():
    from test_reports import simulated_distances

    from textmetric_bench.measures.run_warnings import warnings_by_metric
    from textmetric_bench.reports.figures.ksc import scatter_figures

    distances = simulated_distances()
    metrics = sorted(set(distances["metric"]))
    failed = metrics[0]
    info = {"repetitions": 2, "failures": {failed: "ValueError: NaN in embeddings"}}
    figures = scatter_figures(
        distances,
        "a setting",
        warnings=run_warnings(info),
        metric_warnings=warnings_by_metric(info, metrics),
    )
    for name, fig in figures.items():
        below = " ".join(t.get_text() for t in fig.texts if t.get_gid() == CAPTION_GID).partition("⚠ ")[2]
        assert below.startswith("Only 2 repetitions"), name
        assert (f"Metric {failed} failed" in below) == (name in ("scatter_all", f"scatter_{failed}")), name


def test_a_failed_plugin_names_its_one_metric_or_its_metrics():
    from textmetric_bench.measures.run_warnings import plugin_warnings

    def said(withdrawn):
        failure = {"plugin": "b", "error": "RuntimeError: x", "withdrawn": withdrawn}
        return plugin_warnings({"plugin_failures": {"broken": failure}})

    assert said(["gap"]) == ["Metric plugin b (broken) failed to import: RuntimeError: x; its metric gap did not run"]
    assert said(["gap", "gulf"])[0].endswith("; its metrics gap, gulf did not run")
    assert said([]) == ["Metric plugin b (broken) failed to import: RuntimeError: x"]
