"""What ``python -m textmetric_bench --help`` prints: the harness's own usage (its tasks, the common options,
where the docs are), in place of Hydra's generic page. Hydra's flags stay one ``--hydra-help`` away."""

from __future__ import annotations

import shutil
import textwrap

from omegaconf import OmegaConf

from textmetric_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_METRIC_FAILED, EXIT_OK, EXIT_REGRESSION
from textmetric_bench.running.metric_configs import ALL_OPTION

#: The widest and narrowest the page is wrapped to (the terminal's width in between).
MAX_WIDTH, MIN_WIDTH = 100, 60

INTRO = (
    "textmetric-bench: how well does a text-similarity metric measure what it claims? It mixes two corpora in "
    "known proportions (KSC), fine-tunes a language model step by step (IFC), runs every metric on them and "
    'scores each metric (004, "Measuring the Measuring Tools").'
)
EXAMPLES = (
    ("python -m textmetric_bench", "KSC on the default pair, every default metric"),
    ("python -m textmetric_bench pair=atis_news metrics=[fid,mauve] k=7", ""),
)
DOCS = (
    "docs/ of the textmetric-bench source tree, docs/index.md first (an installed wheel holds no docs; `make docs` "
    "in the checkout builds them as a site); docs/running.md lists every setting"
)
#: The papers the usage cites by number (the numbers the docs use).
PAPERS = (
    '004: Kour, Ackerman et al., "Measuring the Measuring Tools"; 000: Pimentel, Meister, Cotterell, '
    '"Cluster-based Evaluation of Automatically Generated Text" (all: docs/metrics.md)'
)

#: (option, what it does): the settings a first run changes; every setting is in docs/running.md and docs/tasks.md.
COMMON = (
    ("task=<name>", "what to run (the tasks above; default ksc)"),
    ("pair=<name>", "two corpora from the shipped cards or yours (the pair group below; docs/data.md)"),
    ("pair=files pair.a=A.jsonl pair.b=B.csv", "your own two files: .jsonl, .csv, .tsv, .txt or .parquet"),
    ("metrics=[fid,mauve] | default | all", "the metrics (docs/metrics.md); yours through a plugin (docs/plugins.md)"),
    ("k=7 n=100 repetitions=5 seed=0", "KSC: k corpora of n texts, drawn anew per repetition"),
    ("engine.workers=auto", "worker processes for the evaluations (docs/scaling.md)"),
    ("suite=paper | suite=all", "many settings and one cross-setting report (docs/suites.md)"),
    ("-m key=a,b", "a sweep over the values (Hydra multirun; launchers in docs/scaling.md)"),
    ("data.cache_dir=DIR data.mirror=DIR", "where corpora and embeddings are cached; a local copy of the corpora"),
    ("progress=auto|true|false", "progress bars"),
)

MORE = (
    ("--cfg job", "print the composed settings of this command and stop"),
    ("--hydra-help", "Hydra's own flags (--multirun, --config-dir, --info, ...)"),
    ("python -m textmetric_bench.running.registry", "the tasks with their descriptions"),
)


def page_width() -> int:
    """The terminal's width (``COLUMNS`` if set), kept between ``MIN_WIDTH`` and ``MAX_WIDTH``."""
    return min(MAX_WIDTH, max(MIN_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns - 1))


def _rows(pairs, width: int) -> list[str]:
    """Two columns, the second wrapped; an option too long for a column of its own on a narrow page puts its text
    on the lines below it."""
    left = min(max(len(option) for option, _ in pairs) + 2, width // 2)
    lines = []
    for option, text in pairs:
        wrapped = textwrap.wrap(text, max(20, width - left - 2)) or [""]
        if len(option) + 2 > left:
            lines.append(f"  {option}")
            wrapped = wrapped if text else []
        else:
            lines.append(f"  {option.ljust(left)}{wrapped.pop(0)}".rstrip())
        lines += [f"  {' ' * left}{more}" for more in wrapped]
    return lines


def _paragraph(text: str, width: int, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False)


def group_lines(width: int) -> list[str]:
    """Each config group and its choices (``registry.config_groups``), wrapped."""
    from textmetric_bench.running.registry import config_groups

    return [
        line
        for group, choices in config_groups().items()
        for line in _paragraph(f"{group}: {', '.join(choices)}", width, " " * 4)
    ]


def usage_text(width: int | None = None) -> str:
    """The ``--help`` page, wrapped to ``width`` (by default the terminal's, ``page_width``). A literal dollar sign
    would have to be written twice (Hydra fills in ``$APP_NAME`` and the like)."""
    from textmetric_bench.running.registry import available_tasks

    width = width or page_width()
    tasks = available_tasks()
    exit_status = (
        f"Exit status: {EXIT_OK} every metric ran; {EXIT_METRIC_FAILED} a metric failed some evaluations or a metric "
        f"plugin failed to import; {EXIT_REGRESSION} task=check's gate failed; {EXIT_BAD_INPUT} bad settings or "
        f"input; {EXIT_INTERRUPTED} interrupted (Ctrl-C; what finished is kept); 1 an unexpected error (a bug: its "
        "traceback is printed) (docs/reliability.md, Exit status)."
    )
    lines = [
        *_paragraph(INTRO, width, ""),
        "",
        *_paragraph(
            "Usage: python -m textmetric_bench [key=value ...]  (or the console script textmetric-bench)", width
        ),
        *_rows(EXAMPLES, width),
        "",
        "Tasks (task=<name>):",
        *_rows(
            [
                (name, " ".join((task.__doc__ or "").split()).split(": ")[0].split(". ")[0].rstrip("."))
                for name, task in tasks.items()
            ],
            width,
        ),
        "",
        "Common options:",
        *_rows(COMMON, width),
        "",
        "More:",
        *_rows(MORE, width),
        "",
        "Config groups (group=option):",
        *group_lines(width),
        *_paragraph(
            f"(metric: each metric's parameters, set as metric.<name>.<parameter>=value; its option {ALL_OPTION}, "
            "the default, holds every metric's. Choose the metrics to run with metrics=[...].)",
            width,
            "",
        ),
        "",
        *_paragraph(f"Docs: {DOCS}", width),
        *_paragraph(f"Papers: {PAPERS}", width),
        *_paragraph(exit_status, width),
    ]
    return "\n".join(lines) + "\n"


# ${harness_usage:} in conf/config.yaml's hydra.help.template; the command line imports this module.
if not OmegaConf.has_resolver("harness_usage"):
    OmegaConf.register_new_resolver("harness_usage", usage_text)
