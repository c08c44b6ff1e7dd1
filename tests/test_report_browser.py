"""Every page and figure of a report, opened in headless Chromium as a reader opens it, so a broken
link, figure or script shows as a reader would meet it.

The report comes from a real two-run sweep of every default metric (`python -m textmetric_bench -m ...`), built by the public entry point
`python -m textmetric_bench.reports SWEEP --out DIR` (docs/report.md). Each page reachable from report.html
by a local link is checked on a 1280 px wide viewport: no console error or uncaught exception, no failed
request, no horizontal overflow of the page (a wide table may scroll inside its own box), every image
loaded. Each figure file the report wrote is opened on its own as well. At 1280 and 1920 px, with every folded
significance matrix opened, the report fits: no content clipped without a scrollbar, every table inside the
window or in a box that scrolls, every column reachable by scrolling that box, and the metric column staying.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from textmetric_bench import PROJECT_ROOT

CHROMIUM = next(
    (
        path
        for path in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
        if path and Path(path).is_file()
    ),
    None,
)
pytestmark = [
    pytest.mark.slow,  # two runs of every default metric: about 3 minutes
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium found (chromium, chromium-browser or /usr/bin/chromium); Debian: apt-get install chromium",
    ),
]
VIEWPORT = {"width": 1280, "height": 800}
FIGURES = (".png", ".svg")


def run(*args: str, env: dict) -> None:
    proc = subprocess.run(
        [sys.executable, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory, cache_dir) -> Path:
    root = tmp_path_factory.mktemp("browser")
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache_dir)}
    # every default metric, as the layout must hold at that many rows, columns and radar axes
    run(
        "-m",
        "textmetric_bench",
        "-m",
        "k=4,5",
        "n=12",
        "repetitions=2",
        "metrics=default",
        "progress=false",
        f"hydra.sweep.dir={root / 'sweep'}",
        env=env,
    )
    run("-m", "textmetric_bench.reports", str(root / "sweep"), "--out", str(root / "report"), env=env)
    return root / "report"


@pytest.fixture(scope="module")
def browser():
    # the dev extra; it drives the system Chromium and downloads no browser
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


def open_page(browser, url: str):
    """(page, problems): the page loaded at ``url`` and the console errors, exceptions and failed requests met."""
    page = browser.new_page(viewport=VIEWPORT)
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url[:120]} ({req.failure})"))
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, problems


def local_pages(page, report: Path) -> list[Path]:
    """The HTML files under ``report`` that ``page`` links to."""
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    out = []
    for href in hrefs:
        url = urlparse(href)
        path = Path(unquote(url.path))
        if url.scheme == "file" and path.suffix == ".html" and path.is_relative_to(report) and path.is_file():
            out.append(path)
    return out


def test_every_page_loads_without_errors_overflow_or_broken_images(browser, report_dir):
    start = report_dir / "report.html"
    assert start.is_file(), f"python -m textmetric_bench.reports wrote no {start}"
    todo, seen, checked_images = [start], set(), 0
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        page, problems = open_page(browser, path.as_uri())
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        images = page.evaluate(
            "Array.from(document.images).map(i => [i.alt || i.src.slice(0, 60), i.complete, i.naturalWidth])"
        )
        assert problems == [], f"{path.name}: {problems}"
        assert width[0] <= width[1], f"{path.name} overflows a {VIEWPORT['width']} px viewport: scrollWidth {width}"
        broken = [name for name, complete, natural in images if not complete or natural == 0]
        assert broken == [], f"{path.name}: images that did not load: {broken}"
        checked_images += len(images)
        todo.extend(local_pages(page, report_dir))
        page.close()
    assert checked_images > 0, "the report shows no figure at all"


def test_every_figure_file_of_the_report_opens(browser, report_dir):
    figures = sorted(p for p in report_dir.rglob("*") if p.suffix in FIGURES)
    assert figures, f"the report wrote no figure file under {report_dir}"
    for figure in figures:
        page, problems = open_page(browser, figure.as_uri())
        if figure.suffix == ".png":  # Chromium shows an image file as a page holding one <img>
            size = page.evaluate("(() => { const i = document.images[0]; return i ? i.naturalWidth : 0; })()")
        else:
            size = page.evaluate("document.documentElement.getBoundingClientRect().width")
        assert problems == [] and size > 0, f"{figure.relative_to(report_dir)}: {problems or 'nothing drawn'}"
        page.close()


#: Run in the page, every folded matrix opened: what does not fit, as sentences (empty when the page fits).
FIT_PROBLEMS = """() => {
  const problems = [], doc = document.documentElement, right = doc.clientWidth + 1;
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  if (doc.scrollWidth > doc.clientWidth) problems.push(`the page is ${doc.scrollWidth} px wide in ${doc.clientWidth}`);
  document.querySelectorAll('table').forEach((table, n) => {
    const name = `table ${n} (${(table.rows[0].cells[0].textContent || '').trim().slice(0, 30)})`;
    let box = table.parentElement;
    while (box !== document.body && !scrolls(box)) box = box.parentElement;
    if (box === document.body) {
      if (table.getBoundingClientRect().right > right) problems.push(`${name} is cut, in no box that scrolls`);
      return;
    }
    const edge = box.getBoundingClientRect();
    if (edge.right > right || edge.left < -1) problems.push(`the box of ${name} leaves the window`);
    if (box.scrollWidth > box.clientWidth + 1 && !box.classList.contains('overflowing'))
      problems.push(`${name} scrolls without saying so`);
    box.scrollLeft = box.scrollWidth;
    for (const row of table.rows) {
      const cells = row.cells, last = cells[cells.length - 1].getBoundingClientRect();
      if (last.right > edge.right + 1) { problems.push(`the last column of ${name} cannot be reached`); break; }
      if (cells[0].getBoundingClientRect().left < edge.left - 1) {
        problems.push(`the metric column of ${name} scrolls away`); break; }
    }
    box.scrollLeft = 0;
  });
  for (const el of document.querySelectorAll('body *')) {
    const style = getComputedStyle(el);
    if (['hidden', 'clip'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1)
      problems.push(`${el.tagName.toLowerCase()}.${el.className} clips its content`);
  }
  for (const img of document.images)
    if (img.getBoundingClientRect().right > right) problems.push(`figure ${img.alt} is cut`);
  return problems;
}"""


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_report_fits_the_window_with_every_column_reachable(browser, report_dir, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto((report_dir / "report.html").as_uri(), wait_until="load")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.wait_for_timeout(200)  # the toggle events mark the boxes that now overflow
    matrices = page.evaluate("document.querySelectorAll('table.matrix').length")
    assert matrices > 0, "the report shows no significance matrix"
    assert page.evaluate(FIT_PROBLEMS) == []
    page.close()


#: Run in the page: the Table 3 headers, the figure captions and the notes a reader sees.
SEEN = """() => ({
  headers: Array.from(document.querySelectorAll('table.table3 thead th')).map(th => th.textContent.trim()),
  captions: Array.from(document.querySelectorAll('figcaption')).map(c => c.textContent),
  legends: Array.from(document.querySelectorAll('p.legend')).map(p => p.textContent),
  alts: Array.from(document.images).map(i => i.alt),
})"""


def test_a_ksc_only_report_shows_what_was_run_and_captions_only_what_is_drawn(browser, report_dir):
    """KSC only, no bounds run: no S, I or IFC column (one note names them), no caption speaks of the ceiling
    or floor, and the heatmap's caption names its colour scales."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto((report_dir / "report.html").as_uri(), wait_until="load")
    seen = page.evaluate(SEEN)
    page.close()
    assert seen["headers"] and not {"S", "I", "IFC"} & set(seen["headers"])
    assert any("Not in this table, as no run in this report measured them: S" in text for text in seen["legends"])
    assert seen["captions"] and not any("ceiling" in c or "floor" in c for c in seen["captions"])
    assert any("share one colour scale" in c and "its own colour bar" in c for c in seen["captions"])
