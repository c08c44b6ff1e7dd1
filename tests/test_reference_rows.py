"""Reference results: a run of one new metric puts the built-in metrics' shipped measures beside it,
marked as reference, without computing them; a reference row equals a fresh run."""

import json
import logging

import numpy as np
import pandas as pd
import pytest

from textmetric_bench import __version__
from textmetric_bench.api.registry import default_metrics, get_metric, metric, unregister
from textmetric_bench.engine import params_digest
from textmetric_bench.measures.intervals import mean_ci
from textmetric_bench.numerics import bit_for_bit
from textmetric_bench.reports.html.report import build_report
from textmetric_bench.reports.reference_rows import REFERENCE_NOTE
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ksc import run_ksc
from textmetric_bench.tasks.reference import REFERENCE_DIR, main as reference_main, version_parts, write_reference

#: The settings of the shipped reference files: the KSC task's defaults (KSCSettings, bench/tasks/ksc.py).
REFERENCE_SETTINGS = ("k=7", "n=100", "repetitions=5", "seed=0")
FORTUNE = REFERENCE_DIR / "fortune_computing_people_k7_n100_r5_s0.json"
SHIPPED = sorted(REFERENCE_DIR.glob("*.json"))
QUALITY = ["rho", "omega2", "L", "A", "Aw"]
SMALL = ("k=4", "n=20", "repetitions=2")


def ksc_config(cache_dir, *overrides):
    return compose_config(["progress=false", f"data.cache_dir={cache_dir}", *overrides])


def register_length_gap(version: str) -> str:
    """A new metric as a user writes one: the gap in mean words per text, declaring ``version``."""

    @metric("length_gap", inputs="texts", symmetric=True, version=version)
    def length_gap(p, q, *, seed: int = 0) -> float:
        def mean_words(corpus):
            return sum(len(text.split()) for text in corpus) / len(corpus)

        return abs(mean_words(p) - mean_words(q))

    return "length_gap"


@pytest.fixture
def length_gap():
    yield register_length_gap("1")
    unregister("length_gap")


def reference_measures(reference: dict, name: str) -> pd.DataFrame:
    return pd.DataFrame(reference["metrics"][name]["measures"]).set_index("repetition").sort_index()


def run_measures(measures: pd.DataFrame, name: str) -> pd.DataFrame:
    return measures[measures["metric"] == name].set_index("repetition").sort_index()


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_reference_files_hold_every_default_metric_as_registered_now(path):
    reference = json.loads(path.read_text())
    assert reference["project_version"] == __version__
    assert reference["settings"] == {
        "task": "ksc",
        "pair": path.stem.split("_k")[0],
        "k": 7,
        "n": 100,
        "repetitions": 5,
        "seed": 0,
    }
    assert set(reference["metrics"]) <= set(default_metrics())  # a metric added since is computed in every run
    for name, entry in reference["metrics"].items():
        info = get_metric(name)
        assert entry["version"] == version_parts(info.version)["version"], name
        assert entry["params_digest"] == params_digest(info.params), name  # the signature's defaults
        assert sorted(row["repetition"] for row in entry["measures"]) == list(range(5)), name
    assert {p.stem.split("_k")[0] for p in SHIPPED} >= {"fortune_computing_people", "clinc150_banking77", "atis_news"}


def test_reference_rows_of_text_metrics_equal_a_fresh_run(tmp_path, cache_dir):
    result = run_ksc(
        ksc_config(cache_dir, "metrics=[chi,zipf]", "reference=false", *REFERENCE_SETTINGS), tmp_path / "fresh"
    )
    reference = json.loads(FORTUNE.read_text())
    assert set(result.measures["source"]) == {"run"}
    for name in ("chi", "zipf"):
        fresh, expected = run_measures(result.measures, name), reference_measures(reference, name)
        assert list(fresh.index) == list(expected.index) == list(range(5))
        # A and A^w count judgements: exact. rho, omega2 and L pass through BLAS (statsmodels' OLS), whose
        # kernels differ by CPU (AVX2 vs AVX-512), moving the last bits on another machine.
        pd.testing.assert_frame_equal(fresh[["A", "Aw"]], expected[["A", "Aw"]], check_exact=True, obj=name)
        pd.testing.assert_frame_equal(
            fresh[QUALITY], expected[QUALITY], check_exact=False, rtol=1e-12, atol=1e-15, obj=name
        )


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_new_metric_alone_gets_every_reference_metric_beside_it(tmp_path, cache_dir, length_gap):
    out = tmp_path / "run"
    result = run_ksc(ksc_config(cache_dir, f"metrics=[{length_gap}]", *REFERENCE_SETTINGS), out)
    reference = json.loads(FORTUNE.read_text())
    shipped = sorted(reference["metrics"])

    logged = [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()[1:]]
    assert {row["key"][0] for row in logged} == {length_gap} and len(logged) == 5 * 21  # only the new one computed
    measures = pd.read_csv(out / "measures.csv")
    assert set(measures.loc[measures["source"] == "run", "metric"]) == {length_gap}
    assert sorted(set(measures.loc[measures["source"] == "reference", "metric"])) == shipped
    for name in ("chi", "mauve"):  # the rows are the file's, T included
        pd.testing.assert_frame_equal(
            run_measures(measures, name)[[*QUALITY, "T"]],
            reference_measures(reference, name)[[*QUALITY, "T"]],
            obj=name,
        )

    table = pd.read_csv(out / "table3.csv")
    assert set(table["metric"]) == {length_gap} | {f"{name} (reference)" for name in shipped}
    text = (out / "table3.md").read_text()
    assert "| chi (reference) |" in text and f"| {length_gap} |" in text and REFERENCE_NOTE in text
    assert sorted(p.name for p in out.glob("scatter_*.png")) == ["scatter_all.png", f"scatter_{length_gap}.png"]
    assert (out / "radar.png").stat().st_size > 0
    run = json.loads((out / "run.json").read_text())
    assert run["reference"] == {
        "file": "reports/reference/fortune_computing_people_k7_n100_r5_s0.json",
        "metrics": shipped,
        "skipped": {},
    }
    assert run["metrics"] == [length_gap] and result.failures == {}

    page = build_report([out], out)["report_html"].read_text()
    assert "<th>mauve (reference)</th>" in page and "reports/reference/" in page


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_settings_that_do_not_match_merge_nothing(tmp_path, cache_dir, length_gap, caplog):
    other_n = run_ksc(
        ksc_config(cache_dir, f"metrics=[{length_gap}]", "k=7", "n=50", "repetitions=5"), tmp_path / "n50"
    )
    assert set(other_n.measures["metric"]) == {length_gap} and "reference" not in other_n.info

    switched_off = run_ksc(
        ksc_config(cache_dir, f"metrics=[{length_gap}]", "reference=false", *REFERENCE_SETTINGS), tmp_path / "off"
    )
    assert set(switched_off.measures["metric"]) == {length_gap} and "reference" not in switched_off.info

    # A file under this run's name that was made with other settings is refused, saying which.
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    (renamed / "fortune_computing_people_k7_n50_r5_s0.json").write_text(FORTUNE.read_text())
    with caplog.at_level(logging.WARNING, logger="textmetric_bench.tasks.reference"):
        refused = run_ksc(
            ksc_config(cache_dir, f"metrics=[{length_gap}]", f"reference={renamed}", "k=7", "n=50", "repetitions=5"),
            tmp_path / "renamed_run",
        )
    assert set(refused.measures["metric"]) == {length_gap}
    assert "n 100 (this run 50)" in refused.info["reference"]["not_used"] and "n 100 (this run 50)" in caplog.text


def test_an_unreadable_reference_file_leaves_the_run_its_own_rows(tmp_path, cache_dir):
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "fortune_computing_people_k4_n20_r2_s0.json").write_text('{"format": 1, "settings": ')  # cut short
    result = run_ksc(ksc_config(cache_dir, "metrics=[chi]", f"reference={refs}", *SMALL), tmp_path / "run")
    assert set(result.measures["metric"]) == {"chi"} and result.failures == {}
    assert "cannot be read (JSONDecodeError" in result.info["reference"]["not_used"]


def test_a_metric_whose_declared_version_differs_is_not_merged(tmp_path, cache_dir, caplog, capsys):
    register_length_gap("1")
    try:
        run_ksc(ksc_config(cache_dir, "metrics=[length_gap]", *SMALL), tmp_path / "v1")
        written = write_reference(tmp_path / "v1", tmp_path / "refs")
        assert written.name == "fortune_computing_people_k4_n20_r2_s0.json"
        merged = run_ksc(
            ksc_config(cache_dir, "metrics=[chi]", f"reference={tmp_path / 'refs'}", *SMALL), tmp_path / "same_version"
        )
        assert set(merged.measures.loc[merged.measures["source"] == "reference", "metric"]) == {"length_gap"}

        register_length_gap("2")  # the metric changed what it computes
        with caplog.at_level(logging.WARNING, logger="textmetric_bench.tasks.reference"):
            result = run_ksc(
                ksc_config(cache_dir, "metrics=[chi]", f"reference={tmp_path / 'refs'}", *SMALL), tmp_path / "v2"
            )
        assert set(result.measures["metric"]) == {"chi"}
        reason = result.info["reference"]["skipped"]["length_gap"]
        assert "declared version '1'" in reason and "declares version '2'" in reason
        assert f"reference metric length_gap not merged: {reason}" in caplog.text
        # The registry no longer says what made that run, so the command refuses to write its reference.
        assert reference_main([str(tmp_path / "v1"), "--out", str(tmp_path / "refs")]) == 1
        error = capsys.readouterr().err
        assert "metric length_gap with parameters {} was evaluated as version(s) ['1+" in error
        assert "run the same command in that directory again" in error
    finally:
        unregister("length_gap")


def test_merge_replaces_only_the_metrics_the_run_computed(tmp_path, cache_dir, length_gap, capsys):
    refs = tmp_path / "refs"
    run_ksc(ksc_config(cache_dir, "metrics=[chi,zipf]", "reference=false", *SMALL), tmp_path / "both")
    first = json.loads(write_reference(tmp_path / "both", refs).read_text())
    run_ksc(ksc_config(cache_dir, f"metrics=[{length_gap}]", "reference=false", *SMALL), tmp_path / "new")
    assert reference_main([str(tmp_path / "new"), "--out", str(refs), "--merge"]) == 0
    merged = json.loads((refs / "fortune_computing_people_k4_n20_r2_s0.json").read_text())
    assert sorted(merged["metrics"]) == ["chi", length_gap, "zipf"]
    assert merged["metrics"]["chi"] == first["metrics"]["chi"]
    assert reference_main([str(tmp_path / "new"), "--out", str(refs)]) == 0  # without --merge: the run's alone
    assert sorted(json.loads((refs / "fortune_computing_people_k4_n20_r2_s0.json").read_text())["metrics"]) == [
        length_gap
    ]
    # a file of other settings under the same name is refused, naming what differs
    other = json.loads(FORTUNE.read_text())
    (refs / "fortune_computing_people_k4_n20_r2_s0.json").write_text(json.dumps(other))
    capsys.readouterr()
    assert reference_main([str(tmp_path / "new"), "--out", str(refs), "--merge"]) == 1
    assert "its settings is" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_reference_row_equals_a_fresh_run(path, tmp_path, cache_dir):
    """Each shipped reference file is what today's code computes: every measure of every metric in every
    repetition, bit for bit where the numerics are the shipped ones (pinned kernels and exact products, on any
    CPU with AVX2); elsewhere (native numerics) the BLAS moves embeddings by ~1e-7, so smooth metrics hold to
    1e-6 and MAUVE, CLASSIFIER and the cluster divergences, which amplify such differences, to the reference's
    95% interval."""
    settings = json.loads(path.read_text())["settings"]
    result = run_ksc(
        ksc_config(
            cache_dir,
            "metrics=default",
            "reference=false",
            "engine.workers=2",
            f"pair={settings['pair']}",
            *REFERENCE_SETTINGS,
        ),
        tmp_path / "fresh",
    )
    reference = json.loads(path.read_text())
    assert result.failures == {} and sorted(set(result.measures["metric"])) == sorted(reference["metrics"])
    amplifying = {"mauve", "classifier"} | {name for name in reference["metrics"] if name.startswith("cluster_")}
    for name in reference["metrics"]:
        fresh, expected = run_measures(result.measures, name), reference_measures(reference, name)
        for measure in QUALITY:
            values, shipped = fresh[measure].to_numpy(), expected[measure].to_numpy()
            if bit_for_bit():
                assert np.array_equal(values, shipped, equal_nan=True), (name, measure, values, shipped)
            elif name in amplifying:
                _, _, _, low, high = mean_ci(shipped)
                assert low - 1e-9 <= values.mean() <= high + 1e-9, (name, measure, low, high)
            else:
                assert values == pytest.approx(shipped, abs=1e-6, nan_ok=True), (name, measure)


def test_shipped_reference_rows_come_from_todays_metric_modules_and_embedder():
    """A built-in metric's module or the embedder changed since the files were written: `make regenerate`."""
    from textmetric_bench.tasks.config import build_embedder

    embedder = build_embedder(compose_config([])).model_id
    for path in SHIPPED:
        reference = json.loads(path.read_text())
        assert reference["embedder"] == embedder, f"{path.name} was embedded otherwise: run `make regenerate`"
        stale = sorted(
            name
            for name, entry in reference["metrics"].items()
            if entry["source_digest"] != version_parts(get_metric(name).version)["source_digest"]
        )
        assert stale == [], f"{path.name}: modules of {stale} changed since it was written: run `make regenerate`"
