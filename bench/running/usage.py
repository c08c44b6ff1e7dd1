"""What ``python -m textmetric_bench --help`` prints: the harness's own usage (its tasks, the common options,
where the docs are), in place of Hydra's generic page. Hydra's flags stay one ``--hydra-help`` away."""

from __future__ import annotations

import textwrap

from omegaconf import OmegaConf

from textmetric_bench.errors import EXIT_BAD_INPUT, EXIT_METRIC_FAILED, EXIT_OK, EXIT_REGRESSION
from textmetric_bench.running.metric_configs import ALL_OPTION

DOCS = (
    "docs/ of the textmetric-bench source tree, docs/index.md first (an installed wheel holds no docs; `make docs` in",
    "  the checkout builds them as a site); docs/running.md lists every setting",
)
#: The papers the usage cites by number (the numbers the docs use).
PAPERS = (
    '004: Kour, Ackerman et al., "Measuring the Measuring Tools"; 000: Pimentel, Meister, Cotterell,',
    '  "Cluster-based Evaluation of Automatically Generated Text" (all: docs/metrics.md)',
)

#: (option, what it does): the settings a first run changes; every setting is in docs/running.md and docs/tasks.md.
COMMON = (
    ("task=<name>", "what to run (below; default ksc)"),
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


def _rows(pairs, width: int = 100) -> list[str]:
    left = max(len(option) for option, _ in pairs) + 2
    lines = []
    for option, text in pairs:
        wrapped = textwrap.wrap(text, max(30, width - left - 2)) or [""]
        lines.append(f"  {option.ljust(left)}{wrapped[0]}")
        lines += [f"  {' ' * left}{more}" for more in wrapped[1:]]
    return lines


def usage_text() -> str:
    """The ``--help`` page. ``$APP_CONFIG_GROUPS`` is Hydra's list of config groups and their options, filled in by
    Hydra; a literal dollar sign would have to be written twice."""
    from textmetric_bench.running.registry import available_tasks

    tasks = available_tasks()
    lines = [
        "textmetric-bench: how well does a text-similarity metric measure what it claims? It mixes two corpora in",
        "known proportions (KSC), fine-tunes a language model step by step (IFC), runs every metric on them and",
        'scores each metric (004, "Measuring the Measuring Tools").',
        "",
        "Usage: python -m textmetric_bench [key=value ...]    (or the console script textmetric-bench)",
        "  python -m textmetric_bench                               KSC on the default pair, every default metric",
        "  python -m textmetric_bench pair=atis_news metrics=[fid,mauve] k=7",
        "",
        "Tasks (task=<name>):",
        *_rows(
            [
                (name, " ".join((task.__doc__ or "").split()).split(": ")[0].split(". ")[0].rstrip("."))
                for name, task in tasks.items()
            ]
        ),
        "",
        "Common options:",
        *_rows(COMMON),
        "",
        "More:",
        *_rows(MORE),
        "",
        "Config groups (group=option):",
        "$APP_CONFIG_GROUPS",
        f"(metric: each metric's parameters, set as metric.<name>.<parameter>=value; its option {ALL_OPTION}, the",
        "default, holds every metric's. Choose the metrics to run with metrics=[...].)",
        "",
        f"Docs: {DOCS[0]}",
        *DOCS[1:],
        f"Papers: {PAPERS[0]}",
        *PAPERS[1:],
        f"Exit status: {EXIT_OK} every metric ran; {EXIT_METRIC_FAILED} a metric failed some evaluations or a metric "
        f"plugin failed to import;",
        f"  {EXIT_REGRESSION} task=check's gate failed; {EXIT_BAD_INPUT} bad settings or input; 1 an unexpected error "
        "(a bug: its traceback",
        "  is printed) (docs/reliability.md, Exit status).",
    ]
    return "\n".join(lines) + "\n"


# ${harness_usage:} in conf/config.yaml's hydra.help.template; the command line imports this module.
if not OmegaConf.has_resolver("harness_usage"):
    OmegaConf.register_new_resolver("harness_usage", usage_text)
