"""The README's suite example (reports/suite/readme.py) takes its images and numbers from a full suite=paper report,
and refuses a reduced one."""

from __future__ import annotations

import pandas as pd
import pytest

from textmetric_bench.reports.suite.readme import END, START, write_readme_example
from textmetric_bench.reports.suite.report import write_suite_report

from test_suite_ranks import write_run

PAIRS = ("atis_news", "clinc150_banking77")


def paper_like(root, repetitions: int):
    """Run directories at suite=paper's settings, written by hand (three metrics, ρ and S)."""
    for i, pair in enumerate(PAIRS):
        for k in (7, 12):
            values = {"rho": {"a": [0.9 - 0.01 * r for r in range(repetitions)],
                              "b": [0.5 + 0.1 * i + 0.01 * r for r in range(repetitions)],
                              "c": [0.7 + 0.01 * k for _ in range(repetitions)], "oracle": [1.0] * repetitions}}
            write_run(root / pair / f"ksc_k{k}", pair=pair, k=k, n=100, values=values)
        write_run(root / pair / "robustness", task="robustness", pair=pair,
                  values={"S": {"a": [0.9] * 2, "b": [0.8] * 2, "c": [0.7] * 2}})
    write_suite_report(root)
    return root


def test_the_readme_section_carries_the_reports_numbers_and_images(tmp_path):
    suite = paper_like(tmp_path / "suite", repetitions=5)
    readme = tmp_path / "README.md"
    readme.write_text("# front\n\n## Documentation\n\nlinks\n")
    write_readme_example(suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results")
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
    write_readme_example(suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results")  # again: replaced, not added twice
    assert readme.read_text().count(START) == 1


def test_a_reduced_suite_cannot_stand_in_for_the_paper_suite(tmp_path):
    suite = paper_like(tmp_path / "suite", repetitions=2)
    readme = tmp_path / "README.md"
    readme.write_text("## Documentation\n")
    with pytest.raises(ValueError, match="fewer than 5 repetitions"):
        write_readme_example(suite, readme=readme, images=tmp_path / "images", results=tmp_path / "results")
    assert readme.read_text() == "## Documentation\n"
