"""The README's suite section (reports/suite/readme.py) takes its images and numbers from a full suite=all or
suite=paper report, and refuses a reduced one."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from textmetric_bench.reports.suite.readme import END, START, write_readme_example
from textmetric_bench.reports.suite.report import write_suite_report

from test_suite_ranks import write_run

#: Six pairs, two of each length regime, each at k = 7 and 12: twelve KSC settings, as suite=all has at least.
PAIRS = {"s1": "sentence", "s2": "sentence", "p1": "paragraph", "p2": "paragraph", "d1": "document", "d2": "document"}


def all_like(root, repetitions: int, pairs: dict[str, str] = PAIRS):
    """Run directories of a suite=all-like run, written by hand: metric a leads on sentences, b on documents."""
    for i, (pair, regime) in enumerate(pairs.items()):
        for k in (7, 12):
            lead = {"sentence": "a", "paragraph": "c", "document": "b"}[regime]
            values = {
                measure: {
                    m: [
                        0.7 + (0.2 if m == lead else 0.01 * j) + 0.003 * ((r * 7 + i + k) % 5)
                        for r in range(repetitions)
                    ]
                    for j, m in enumerate("abc")
                }
                for measure in ("A", "rho")
            }
            run = write_run(root / pair / f"ksc_k{k}", pair=pair, k=k, n=100, values=values)
            (run / "run.json").write_text(json.dumps({"pair": pair, "task": "ksc", "regime": regime}))
    write_suite_report(root)
    return root


def test_the_readme_section_carries_the_reports_numbers_per_regime_and_its_images(tmp_path):
    suite = all_like(tmp_path / "suite", repetitions=5)
    readme = tmp_path / "README.md"
    readme.write_text("# front\n\n## Documentation\n\nlinks\n")
    write_readme_example(suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results", suite="all")
    ranks = pd.read_csv(suite / "ranks.csv")
    best = ranks[(ranks["measure"] == "rho") & (ranks["place"] == 1)].iloc[0]
    text = readme.read_text()
    assert text.index(START) < text.index(END) < text.index("## Documentation")
    assert "holds 12 KSC settings over 6 pairs (4 sentence, 4 paragraph, 4 document" in text
    assert "robustness" not in text.split("\n\n")[2]  # no robustness run in this suite, none claimed
    assert f"`{best['metric']}` has the best mean rank, {best['mean_rank']:.2f} over 12 settings" in text
    assert f"Friedman χ² = {best['friedman_chi2']:.2f}, p = {best['friedman_p']:.3g}" in text
    regimes = pd.read_csv(suite / "regimes.csv")
    for regime, lead in (("sentence", "a"), ("paragraph", "c"), ("document", "b")):
        rows = regimes[(regimes["regime"] == regime) & (regimes["measure"] == "A")]
        assert set(rows.loc[rows["group"] == 1, "metric"]) == {lead}
        mean = rows.loc[rows["metric"] == lead, "mean"].iloc[0]
        assert f"| {regime} | 4 | A | " in text and f"`{lead}` {mean:.3f}".replace("0.", ".") in text
    assert (tmp_path / "images" / "suite_card.png").read_bytes() == (suite / f"card_{best['metric']}.png").read_bytes()
    assert (tmp_path / "images" / "suite_cd_rho.png").is_file()
    kept = pd.read_csv(tmp_path / "results" / "repetitions.csv")  # what the paired test's groups rest on
    pd.testing.assert_frame_equal(kept, pd.read_csv(suite / "repetitions.csv"))
    assert len(kept) > 0 and "run_dir" not in pd.read_csv(tmp_path / "results" / "settings.csv").columns
    write_readme_example(
        suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results", suite="all"
    )  # again: replaced, not added twice
    assert readme.read_text().count(START) == 1


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("two repetitions", "fewer than 5 repetitions"),
        ("few pairs", "not at least 12 over 6"),
        ("no documents", "not all of"),
    ],
)
def test_a_reduced_suite_cannot_stand_in_for_suite_all(tmp_path, case, message):
    pairs = dict(PAIRS)
    if case == "few pairs":
        pairs = {"s1": "sentence", "p1": "paragraph", "d1": "document"}
    if case == "no documents":
        pairs = {name: "sentence" if regime == "document" else regime for name, regime in PAIRS.items()}
    suite = all_like(tmp_path / "suite", repetitions=2 if case == "two repetitions" else 5, pairs=pairs)
    readme = tmp_path / "README.md"
    readme.write_text("## Documentation\n")
    with pytest.raises(ValueError, match=message):
        write_readme_example(
            suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results", suite="all"
        )
    assert readme.read_text() == "## Documentation\n"


# --- suite=paper's section --------------------------------------------------------------------------------------

PAPER_PAIRS = ("atis_news", "clinc150_banking77")


def paper_like(root, repetitions: int):
    """Run directories at suite=paper's settings, written by hand (three metrics, ρ and S)."""
    for i, pair in enumerate(PAPER_PAIRS):
        for k in (7, 12):
            values = {
                "rho": {
                    "a": [0.9 - 0.01 * r for r in range(repetitions)],
                    "b": [0.5 + 0.1 * i + 0.01 * r for r in range(repetitions)],
                    "c": [0.7 + 0.01 * k for _ in range(repetitions)],
                    "oracle": [1.0] * repetitions,
                }
            }
            write_run(root / pair / f"ksc_k{k}", pair=pair, k=k, n=100, values=values)
        write_run(
            root / pair / "robustness",
            task="robustness",
            pair=pair,
            values={"S": {"a": [0.9] * 2, "b": [0.8] * 2, "c": [0.7] * 2}},
        )
    write_suite_report(root)
    return root


def test_the_readme_section_carries_the_reports_numbers_and_images(tmp_path):
    suite = paper_like(tmp_path / "suite", repetitions=5)
    readme = tmp_path / "README.md"
    readme.write_text("# front\n\n## Documentation\n\nlinks\n")
    write_readme_example(suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results", suite="paper")
    ranks = pd.read_csv(suite / "ranks.csv")
    best = ranks[(ranks["measure"] == "rho") & (ranks["place"] == 1)].iloc[0]
    text = readme.read_text()
    assert text.index(START) < text.index(END) < text.index("## Documentation")
    assert f"`{best['metric']}` has the best mean rank, {best['mean_rank']:.2f} over 4 settings" in text
    assert f"Friedman χ² = {best['friedman_chi2']:.2f}, p = {best['friedman_p']:.3g}" in text
    assert (tmp_path / "images" / "suite_card.png").read_bytes() == (suite / f"card_{best['metric']}.png").read_bytes()
    assert (tmp_path / "images" / "suite_cd_rho.png").is_file()
    kept = pd.read_csv(tmp_path / "results" / "repetitions.csv")  # what the paired test's groups rest on
    pd.testing.assert_frame_equal(kept, pd.read_csv(suite / "repetitions.csv"))
    assert len(kept) > 0
    write_readme_example(
        suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results", suite="paper"
    )  # again: replaced, not added twice
    assert readme.read_text().count(START) == 1


def test_a_reduced_suite_cannot_stand_in_for_the_paper_suite(tmp_path):
    suite = paper_like(tmp_path / "suite", repetitions=2)
    readme = tmp_path / "README.md"
    readme.write_text("## Documentation\n")
    with pytest.raises(ValueError, match="fewer than 5 repetitions"):
        write_readme_example(
            suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results", suite="paper"
        )
    assert readme.read_text() == "## Documentation\n"
