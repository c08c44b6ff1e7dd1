"""The HTML report: self-contained, every figure decodes in a real headless Chromium."""

import re
from pathlib import Path
import shutil
import subprocess

import pytest

from textmetric_bench.reports.__main__ import main as report_main
from textmetric_bench.reports.figures.heatmap import HEATMAP_CAPTION
from textmetric_bench.reports.figures.radar import SMALL_MULTIPLES_CAPTION
from textmetric_bench.reports.html.report import build_report
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ksc import run_ksc

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def small_run(cache_dir, out_dir, *overrides):
    cfg = compose_config(
        ["k=4", "n=12", "repetitions=3", "progress=false", "metrics=[chi]", f"data.cache_dir={cache_dir}", *overrides]
    )
    run_ksc(cfg, out_dir)
    (out_dir / ".hydra").mkdir(exist_ok=True)
    from omegaconf import OmegaConf

    OmegaConf.save(cfg, out_dir / ".hydra" / "config.yaml")
    return out_dir


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, cache_dir):
    root = tmp_path_factory.mktemp("sweep")
    small_run(cache_dir, root / "0", "k=4")
    small_run(cache_dir, root / "1", "k=5")
    return root


@pytest.fixture(scope="module")
def report(sweep):
    """The sweep's report as ``textmetric_bench.reports`` builds it (into the sweep's directory), built once for the
    tests that only read it."""
    return build_report([sweep])


@pytest.fixture(scope="module")
def drawn(sweep, tmp_path_factory):
    """Each figure of the sweep's report caught as it is saved, drawn in this process where the patch is: its file
    name to its titles (suptitle and every axes' title) and its caption (the figure's texts)."""
    from matplotlib.figure import Figure

    from textmetric_bench.reports.figures import parallel

    figures, save = {}, Figure.savefig

    def read(fig, path, *args, **kwargs):
        titles = [fig.get_suptitle()] + [ax.get_title(loc) for ax in fig.axes for loc in ("center", "left", "right")]
        figures[Path(path).name] = (" ".join(titles), " ".join(t.get_text() for t in fig.texts))
        return save(fig, path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", read)
        patch.setattr(parallel, "PROCESSES", 1)
        build_report([sweep], tmp_path_factory.mktemp("drawn"))
    return figures


def test_report_is_self_contained_with_captioned_figures(report):
    page = report["report_html"].read_text()
    assert not re.search(r"""(src|href)=["']?(https?:|file:|/)""", page)
    images = re.findall(r'<img src="data:image/(png|svg\+xml);base64,', page)
    # per section: heatmap, small-multiple radars, overlaid radar, boxplots, scatter; plus the sweep trends
    assert len(images) == 2 * 5 + 1
    assert page.count(HEATMAP_CAPTION[:60]) == 2 and page.count(SMALL_MULTIPLES_CAPTION[:60]) == 2
    assert page.count("<figcaption>") == len(images)
    assert "KSC k=4" in page and "KSC k=5" in page and "Good:" in page


def test_report_cli_rejects_a_directory_without_runs(tmp_path, capsys):
    assert report_main([str(tmp_path)]) == 2
    assert "no run directory" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_every_figure_loads_in_headless_chromium(report, tmp_path):
    page = report["report_html"]
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    loaded = re.search(r'data-figures-loaded="(\d+)/(\d+)"', dom)
    assert loaded, "the page's load check did not run"
    ok, total = map(int, loaded.groups())
    assert total == 11 and ok == total


def test_every_figure_title_names_the_pair_k_n_and_repetitions(drawn):
    assert len(drawn) >= 10
    for text, _ in drawn.values():
        if "against k" in text:  # the sweep's trend figure: k is its axis
            assert "fortune_computing_people" in text and "n=12" in text and "3 repetitions" in text, text
            continue
        assert "fortune_computing_people" in text and "n=12" in text and "3 repetitions" in text, text
        assert "k=4" in text or "k=5" in text, text


def test_the_report_shows_the_runs_own_scatter_grid_unless_the_distances_are_newer(sweep, tmp_path):
    """The grid of z-scored distances is the task's scatter_all.png, not drawn a second time; drawn afresh (with the
    report's title) where the distances were written after it."""
    import base64
    import os

    run = tmp_path / "run"
    shutil.copytree(sweep / "0", run)
    grid = (run / "scatter_all.png").read_bytes()
    embedded = base64.b64encode(grid).decode("ascii")
    assert embedded in build_report([run], tmp_path / "report")["report_html"].read_text()
    later = (run / "scatter_all.png").stat().st_mtime + 10
    os.utime(run / "distances.csv", (later, later))
    page = build_report([run], tmp_path / "report-2")["report_html"].read_text()
    assert embedded not in page and page.count('<img src="data:image/png;base64,') == 5


def test_the_table_and_the_scatter_name_their_two_rho(report):
    page = report["report_html"].read_text()
    assert "pooled ρ (z)" in page and "averaged over repetitions" in page


def test_the_scatter_s_rho_is_the_table_s_rho(sweep):
    """The ρ a scatter names "as the table" is the table's number, from the same distances."""
    import pandas as pd

    from textmetric_bench.reports.figures.ksc import mean_rho

    for run in ("0", "1"):
        distances = pd.read_csv(
            sweep / run / "distances.csv",
            keep_default_na=False,
            na_values={"distance": ["", "nan", "NaN"], "z": ["", "nan", "NaN"]},
        )
        table = pd.read_csv(sweep / run / "measures.csv").groupby("metric")["rho"].mean()
        assert mean_rho(distances, "chi", negate=False) == pytest.approx(table["chi"], abs=1e-12)


def test_every_figure_the_report_draws_carries_the_runs_warnings_below_it(sweep, tmp_path, monkeypatch):
    """3 repetitions: each figure of the run's block says so in its caption, the scatter grid drawn afresh too."""
    import os

    from matplotlib.figure import Figure

    from textmetric_bench.reports.figures import parallel

    run = tmp_path / "run"
    shutil.copytree(sweep / "0", run)
    later = (run / "scatter_all.png").stat().st_mtime + 10
    os.utime(run / "distances.csv", (later, later))  # the report draws the grid itself
    captions, save = {}, Figure.savefig

    def read_captions(fig, path, *args, **kwargs):
        captions[Path(path).name] = " ".join(t.get_text() for t in fig.texts)
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", read_captions)
    monkeypatch.setattr(parallel, "PROCESSES", 1)  # every figure drawn in this process, where the patch is
    build_report([run], tmp_path / "report")
    stems = {name.split("_")[0] for name in captions}
    assert {"heatmap", "radars", "radar", "boxplots", "scatter"} <= stems, sorted(captions)
    for name, text in captions.items():
        assert "⚠ Only 3 repetitions (fewer than 5)" in text, name


def test_a_blocks_warnings_name_the_joined_run_they_come_from(sweep):
    import pandas as pd

    from textmetric_bench.reports.html.report import block_warnings
    from textmetric_bench.reports.sweep.runs import Run, load_run

    ksc = load_run(sweep / "0")
    robustness = Run(
        sweep / "robustness",
        {"task": "robustness"},
        pd.DataFrame({"metric": ["chi"] * 5, "repetition": range(5), "S": 0.9}),
        None,
        {"grid": {"truncated": ["sizes 5000 left out: the sources have 2,000 texts"]}},
    )
    alone = block_warnings([ksc])
    assert alone[0].startswith("Only 3 repetitions") and len(alone) == 1
    joined = block_warnings([ksc, robustness])
    assert joined == [
        f"ksc run: {alone[0]}",
        "robustness run: Grid truncated: sizes 5000 left out: the sources have 2,000 texts",
    ]


def test_the_sweeps_trend_figure_says_how_many_runs_each_warning_concerns(sweep, drawn):
    from textmetric_bench.reports.html.report import SWEEP_WARNINGS_SHOWN, sweep_warnings
    from textmetric_bench.reports.sweep.runs import load_run

    assert "⚠ 2 of 2 runs: Only 3 repetitions (fewer than 5)" in drawn["trends.png"][1]

    runs = [load_run(sweep / "0"), load_run(sweep / "1")]
    runs[1].manifest["failures"] = {f"m{i}": f"ValueError: {i}" for i in range(SWEEP_WARNINGS_SHOWN + 1)}
    said = sweep_warnings(runs)
    assert (
        said[0].startswith("2 of 2 runs: Only 3 repetitions")
        and said[1] == "1 of 2 runs: Metric m0 failed: ValueError: 0"
    )
    assert len(said) == SWEEP_WARNINGS_SHOWN + 1 and said[-1] == "2 more warnings: each run's block above says its own"


def test_each_run_block_says_which_corpora_it_read_and_how_many_texts(sweep, report):
    """The console's per-corpus counts and run.json's file digests, in the report too: a reader of the page can
    tell which texts (and how many of those read) the numbers stand on."""
    import json

    from textmetric_bench.reports.html.report import corpora_line
    from textmetric_bench.reports.sweep.runs import load_run

    run = load_run(sweep / "0")
    sources = json.loads((sweep / "0" / "run.json").read_text())["sources"]
    line = corpora_line(run)
    for name, record in sources.items():
        digests = ", ".join(f["sha256"][:12] for f in record["files"])
        assert f"{name}: {record['texts']:,} texts to draw from" in line
        assert (f"({record['raw_texts']:,} read)" in line) == (record["raw_texts"] > record["texts"])
        if len(record["files"]) <= 3:
            assert f"sha256 {digests}" in line
    page = report["report_html"].read_text()
    assert page.count("<p class=runs>Corpora: ") == 2  # one per run block


def test_a_metric_keeps_its_colour_across_the_runs_of_a_sweep_over_metrics(tmp_path, cache_dir, monkeypatch):
    """A sweep over ``metrics=``: one run of zipf alone, one of chi and zipf. Each figure numbered its own metrics,
    so zipf took the first colour in one block and the second in the other; the page now numbers every metric it
    shows at once (``metric_order``), so every figure of the page draws zipf alike, the scatter grid the run wrote
    (with zipf alone) drawn afresh."""
    from textmetric_bench.reports.figures import ksc, overview, radar

    root = tmp_path / "sweep"
    for job, metrics in (("0", "[zipf]"), ("1", "[chi,zipf]")):
        cfg = compose_config(
            ["k=4", "n=12", "repetitions=3", "progress=false", f"metrics={metrics}", f"data.cache_dir={cache_dir}"]
        )
        run_ksc(cfg, root / job)
    looks: dict[str, set] = {}
    for module in (ksc, overview, radar):
        original = module.metric_styles

        def recording(metrics, original=original):
            styles = original(metrics)
            for name, style in styles.items():
                looks.setdefault(name, set()).add((style.colour, style.marker))
            return styles

        monkeypatch.setattr(module, "metric_styles", recording)
    page = build_report([root])["report_html"].read_text()
    assert set(looks) == {"chi", "zipf"} and all(len(seen) == 1 for seen in looks.values()), looks
    assert looks["zipf"] != looks["chi"]
    # the same k and n in both runs: no trend to draw, and the page says so instead of an empty section
    assert "<h2>Across the sweep</h2><p class=note>No trend figure: k and n are the same in every KSC run" in page
    assert "grey dashed" not in page.lower() and "grey dotted" not in page.lower(), "no bound was run, none named"


def test_the_captions_name_the_bounds_lines_where_the_run_has_bounds(tmp_path, cache_dir):
    out = small_run(cache_dir, tmp_path / "run", "metrics=[chi,oracle,chance]")
    page = " ".join(build_report([out])["report_html"].read_text().split())
    assert "Grey dashed line and points: the ceiling (oracle); grey dotted line and points: the floor (chance)." in page
    assert "Grey dashed line: the ceiling (oracle); grey dotted line: the floor (chance): at the median" in page
