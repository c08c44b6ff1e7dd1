"""The bound metrics: ``oracle`` (a ceiling, as good as a metric can be) and ``chance`` (a floor).

Tables show them as the first and last rows, labelled and set apart, and leave them out of
rankings and of the rank groups of the significance matrix; figures may mark them the same way.
This module is the one place that knows them by name.
"""

from __future__ import annotations

#: Metric name -> which bound it is.
BOUNDS = {"oracle": "ceiling", "chance": "floor"}


def bound_of(metric) -> str | None:
    """ "ceiling", "floor" or None for an ordinary metric; also for a shown name such as "oracle (reference)"
    or "ceiling (oracle)"."""
    text = str(metric)
    for name, kind in BOUNDS.items():
        if text == name or text.startswith((f"{name} (", f"{kind} ({name})")):
            return kind
    return None


def bound_label(metric) -> str:
    """How a table names a metric: "ceiling (oracle)" / "floor (chance)"; other names unchanged."""
    kind = bound_of(metric)
    return f"{kind} ({metric})" if kind and not str(metric).startswith(kind) else str(metric)


def ranked(metrics) -> list:
    """The metrics that take part in a ranking: all but the bounds, in the given order."""
    return [m for m in metrics if bound_of(m) is None]


def table_order(metrics) -> list:
    """Rows in table order: the ceiling first, ordinary metrics as given, the floor last."""
    metrics = list(metrics)
    return (
        [m for m in metrics if bound_of(m) == "ceiling"]
        + ranked(metrics)
        + [m for m in metrics if bound_of(m) == "floor"]
    )
