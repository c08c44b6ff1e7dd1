"""The README is the front page and the docs site builds: every relative link of the README reaches a file of the
checkout, and `mkdocs build --strict` (what `make docs` runs in CI) passes, so no page links to a missing page or
anchor and every included generated table exists."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from textmetric_bench import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
#: The target of a Markdown link or image, without its title: [text](target) or ![alt](target "title").
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def relative_links(text: str) -> list[str]:
    """Targets of the links and images in ``text`` that are neither absolute URLs nor fenced code."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [target for target in LINK.findall(prose) if not re.match(r"[a-z][a-z0-9+.-]*:|/", target)]


def headings_slugs(markdown_file: Path) -> set[str]:
    """The anchors Python-Markdown's toc gives the headings of ``markdown_file`` (as on the docs site)."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"^```.*?^```", "", markdown_file.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, flags=re.M)}


def test_every_relative_link_of_the_readme_reaches_a_file():
    links = relative_links(README.read_text(encoding="utf-8"))
    assert any(link.startswith("docs/") for link in links), "the README links into docs/"
    missing = [link for link in links if not (PROJECT_ROOT / link.split("#")[0]).exists()]
    assert missing == [], f"README.md links to files that do not exist: {missing}"


def test_the_readme_anchors_into_the_docs_exist():
    pytest.importorskip("markdown")
    broken = []
    for link in relative_links(README.read_text(encoding="utf-8")):
        path, _, anchor = link.partition("#")
        if anchor and path.endswith(".md") and anchor not in headings_slugs(PROJECT_ROOT / path):
            broken.append(link)
    assert broken == [], f"README.md links to anchors that do not exist: {broken}"


def test_the_readme_stays_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the detail into a page of docs/"


def test_generated_tables_are_included_not_pasted():
    includes = {
        "catalogue.md": "metrics/README.md",
        "paper-table3.md": "reports/paper_table3/README.md",
        "performance.md": "docs/generated/benchmark.md",
    }
    for page, generated in includes.items():
        assert f'--8<-- "{generated}"' in (DOCS / page).read_text(encoding="utf-8"), (page, generated)
        assert (PROJECT_ROOT / generated).is_file(), generated


#: A metric's parameter set by its dotted key, as the docs and docstrings show it: ``metric.mauve.kmeans_num_redo``.
METRIC_PARAMETER = re.compile(r"(?<![\w.])metric\.(\w+)\.(\w+)")


def test_every_metric_parameter_the_docs_and_docstrings_set_exists():
    """``metric.<name>.<key>`` in the README, docs, code and configs names a parameter the metric takes: a built-in's
    declared parameters, or a parameter in the signature of a plugin the docs define (evaluate's docstring once showed
    ``metric.mauve.scaling``, which the config refuses)."""
    from textmetric_bench.api.registry import available_metrics, get_metric

    files = [README, *DOCS.rglob("*.md")]
    files += [
        path for top in ("bench", "metrics", "conf") for path in (PROJECT_ROOT / top).rglob("*") if path.is_file()
    ]
    files = [path for path in files if path.suffix in (".md", ".py", ".yaml")]
    docs_text = "\n".join(path.read_text(encoding="utf-8") for path in DOCS.rglob("*.md"))
    checked, wrong = 0, []
    for path in files:
        for name, key in METRIC_PARAMETER.findall(path.read_text(encoding="utf-8")):
            if name in available_metrics():
                takes = set(get_metric(name).params)
            else:  # a plugin of the docs: its decorator, then the function's signature
                defined = re.findall(rf"@\w+\(\"{name}\"[^\n]*\)\s*\ndef \w+\(([^)]*)\)", docs_text)
                takes = {p.split(":")[0].split("=")[0].strip(" *") for sig in defined for p in sig.split(",")}
            checked += 1
            if key not in takes:
                wrong.append(f"{path.relative_to(PROJECT_ROOT)}: metric.{name}.{key} (takes {sorted(takes)})")
    assert checked >= 15
    assert wrong == []


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_docs_site_builds_strictly(tmp_path):
    """As `make docs` does, from another directory: a broken link, anchor, include or docstring fails the build."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(PROJECT_ROOT / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("metric", "MetricInfo", "per_text_metric", "per_corpus", "as_texts"):
        assert f'id="textmetric_bench.api.{name}"' in api, f"the API reference lacks {name}"
    assert "<table>" in (site / "catalogue" / "index.html").read_text(encoding="utf-8")
    assert "compcor serial" in (site / "performance" / "index.html").read_text(encoding="utf-8")
