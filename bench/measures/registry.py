"""Every measure of the harness, defined once: its name, how it is written, where the paper defines it, which way is
better, its range and unit, and which task produces it.

Tables, figures, cards, a suite's ranks, the regression gate and the Python API read their names, symbols, directions
and scales from here (``MEASURES``); a view keeps only its own choice of which measures it shows and in what order,
checked against this registry. Adding a measure: docs/measures.md, "Adding a measure".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    """One measure, as a task's ``measures.csv`` names it (``name``) and as every view writes it.

    ``symbol`` is the plain-text symbol (``A^w``), ``math`` the matplotlib one (``$A^w$``), ``html`` the HTML one.
    ``title`` is a figure panel's few words, ``legend`` a table legend's line after ``<name>: `` (with the paper's
    section). ``shown_scale`` divides a value for display, in ``shown_unit`` (T in 004's [100 op/s]); such a measure
    has its own table column, ``column``. ``quality`` marks a score on the 0..1 "higher is better" scale (004
    Figure 4's), ``chance`` a score's value for a metric that guesses.
    """

    name: str
    symbol: str
    math: str
    html: str
    title: str
    legend: str
    section: str
    tasks: tuple[str, ...]
    higher_is_better: bool = True
    bounds: tuple[float, float] | None = (0.0, 1.0)
    unit: str = ""
    shown_scale: float = 1.0
    shown_unit: str = ""
    quality: bool = True
    chance: float | None = None

    @property
    def scaled(self) -> bool:
        """Whether the value is shown in another unit than it is recorded in (T)."""
        return self.shown_scale != 1.0

    @property
    def column(self) -> str:
        """The summary's and Table 3's column: the name, or ``<name><scale>`` where the value is shown scaled."""
        return f"{self.name}{self.shown_scale:g}" if self.scaled else self.name


#: In 004 Table 3's column order.
MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure(
            "A",
            "A",
            "A",
            "A",
            "judgement accuracy",
            "judgement accuracy (004 §4.5, eq. 6)",
            "004 §4.5, eq. 6",
            ("ksc",),
            chance=0.5,
        ),
        Measure(
            "Aw",
            "A^w",
            "$A^w$",
            "A<sup>w</sup>",
            "weighted accuracy",
            "hardness-weighted accuracy (eq. 7)",
            "004 §4.5, eq. 7",
            ("ksc",),
            chance=0.5,
        ),
        Measure(
            "T",
            "T",
            "T",
            "T",
            "speed",
            "speed in [100 op/s], embedding excluded (§4.4)",
            "004 §4.4",
            ("ksc",),
            bounds=(0.0, float("inf")),
            unit="pair evaluations per second",
            shown_scale=100.0,
            shown_unit="[100 op/s]",
            quality=False,
        ),
        Measure(
            "rho",
            "ρ",
            "ρ",
            "ρ",
            "monotonicity",
            "Spearman monotonicity (§4.1)",
            "004 §4.1",
            ("ksc",),
            bounds=(-1.0, 1.0),
        ),
        Measure(
            "omega2",
            "ω²",
            "ω²",
            "ω²",
            "separability",
            "separability, ANOVA ω² (eq. 4)",
            "004 §4.2, eq. 4",
            ("ksc",),
            bounds=(-1.0, 1.0),
        ),
        Measure("L", "L", "L", "L", "linearity", "linearity R² (§4.3)", "004 §4.3", ("ksc",)),
        Measure("S", "S", "S", "S", "size robustness", "size robustness (eq. 8)", "004 §4.6, eq. 8", ("robustness",)),
        Measure("I", "I", "I", "I", "imbalance robustness", "imbalance robustness (§4.7)", "004 §4.7", ("robustness",)),
        Measure(
            "IFC",
            "IFC",
            "IFC",
            "IFC",
            "fine-tuning trend",
            "−Spearman of distance with fine-tuning iteration (§5)",
            "004 §5",
            ("ifc",),
            bounds=(-1.0, 1.0),
        ),
    )
}
#: The tasks in the order their measures are shown after each other (a card's panels).
TASK_ORDER = ("ksc", "robustness", "ifc")


def measure(name: str) -> Measure:
    """The measure named ``name`` or shown as the column ``name`` (``T100``); KeyError naming the known ones."""
    for m in MEASURES.values():
        if name in (m.name, m.column):
            return m
    raise KeyError(f"unknown measure {name!r}; known: {', '.join(MEASURES)}")


def names(*, quality: bool | None = None, task: str | None = None) -> tuple[str, ...]:
    """The measures' names in Table 3's order, only the quality scores (``quality=True``) or the others (``False``),
    only those ``task`` produces."""
    return tuple(
        m.name
        for m in MEASURES.values()
        if (quality is None or m.quality == quality) and (task is None or task in m.tasks)
    )


def table_columns() -> tuple[str, ...]:
    """Table 3's columns: every measure in its shown unit (``T100`` for T)."""
    return tuple(m.column for m in MEASURES.values())


def by_task() -> tuple[str, ...]:
    """The measures task by task (``TASK_ORDER``, then any other task in the registry's order), each task's quality
    scores first, then the others."""
    tasks = dict.fromkeys([*TASK_ORDER, *(task for m in MEASURES.values() for task in m.tasks)])
    found = (name for task in tasks for quality in (True, False) for name in names(quality=quality, task=task))
    return tuple(dict.fromkeys(found))


def quality_then_others() -> tuple[str, ...]:
    """The quality scores, then the other measures (T): the order a suite ranks them in."""
    return names(quality=True) + names(quality=False)


def markdown() -> str:
    """The registry as a markdown table (docs/generated/measures.md, included by docs/measures.md)."""
    lines = [
        "<!-- generated by `python -m textmetric_bench.measures.registry --docs`; do not edit -->",
        "",
        "| name | symbol | what it is | defined in | produced by | better | range | unit shown |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in MEASURES.values():
        bounds = "–" if m.bounds is None else f"[{m.bounds[0]:g}, {m.bounds[1]:g}]".replace("inf", "∞")
        unit = f"{m.shown_unit} ({m.unit} / {m.shown_scale:g})" if m.scaled else (m.unit or "–")
        lines.append(
            f"| `{m.name}` | {m.html} | {m.legend} | {m.section} | {', '.join(f'`{t}`' for t in m.tasks)} "
            f"| {'higher' if m.higher_is_better else 'lower'} | {bounds} | {unit} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(description="List the measures, or write their table for the docs.")
    parser.add_argument("--docs", action="store_true", help="write docs/generated/measures.md of the checkout")
    args = parser.parse_args(argv)
    if args.docs:
        target = Path(__file__).resolve().parents[2] / "docs" / "generated" / "measures.md"  # the checkout's
        target.write_text(markdown() + "\n", encoding="utf-8")
        print(f"wrote {target}")
    else:
        for m in MEASURES.values():
            print(f"{m.name}: {m.symbol}, {m.title} ({m.section}; {', '.join(m.tasks)})")


if __name__ == "__main__":
    main()
