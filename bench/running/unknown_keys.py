"""A command-line key the config does not have (``repetiton=2``), said in one line with a "did you mean".

Hydra refuses such a key with "Could not override 'repetiton'. To append to your config use +repetiton=2" and a
"Key not in struct" error, and suggests nothing. ``unknown_key_problems`` composes the config as Hydra will, before
Hydra starts, and names each unknown key with the closest keys at its level (difflib): at the top level those are the
shared settings, the config groups and the selected task's settings (``k``, ``repetitions``...). A config group's
choice that does not exist (``pair=nosuch``, ``task=kscc``: Hydra's "Could not find 'pair/nosuch'", its options and
search path over many lines) is one line too, with the closest choices or all of them. A file of the user's
given to a pair card (``pair.a=...`` without ``pair=files``) gets the line that says to write ``pair=files``.
A swept key (``-m repetiton=2,3``) is checked with its first value; a swept config group (``-m pair=a,nosuch``) with
every value, before any job runs. Anything else Hydra refuses is left to Hydra.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

#: Keys whose overrides other checks own: the metrics' parameters (``metric_configs``) and Hydra's own.
OWNED_ELSEWHERE = ("metric", "hydra")
#: A choice no config group has, composed to learn a swept group's choices from Hydra's refusal.
NO_SUCH_CHOICE = "__no_such_choice__"


def unknown_key_problems(overrides: Sequence[str]) -> list[str]:
    """One line per override whose key the composed config lacks, or [] (also when Hydra refuses something else)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import ConfigCompositionException, HydraException, MissingConfigException

    from textmetric_bench.running.registry import compose_config

    try:
        kept = [(first_value(o), o) for o in OverridesParser.create().parse_overrides(list(overrides))]
    except HydraException:
        return []
    kept = [(line, o) for line, o in kept if line is not None]
    unknown, choices = [], []
    for _ in range(len(kept) + 1):  # drop each unknown key or choice in turn until the rest composes
        try:
            cfg = compose_config([line for line, _ in kept])
            break
        except MissingConfigException as exc:  # a config group's choice that does not exist (pair=nosuch)
            group, _, choice = str(exc.missing_cfg_file or "").partition("/")
            refused = [o for _, o in kept if o.key_or_group.lstrip("+~") == group]
            if not group or not choice or not refused or not exc.options:
                return []  # something else is missing: Hydra says what
            choices += [
                line for o in refused for line in missing_choice_lines(group, list(exc.options), o, first=choice)
            ]
            kept = [(line, o) for line, o in kept if o not in refused]
        except ConfigCompositionException as exc:
            key = getattr(exc.__cause__, "full_key", None)
            refused = [o for _, o in kept if o.key_or_group == key and not o.is_add()]
            if not key or not refused or str(key).split(".")[0] in OWNED_ELSEWHERE:
                return []  # something else is wrong: Hydra says what
            unknown += refused
            kept = [(line, o) for line, o in kept if o not in refused]
        except Exception as exc:  # noqa: BLE001 - Hydra reports it
            log.debug("keys not checked before Hydra: %s", exc)
            return []
    else:
        return []
    for line, o in kept:  # the other values of a swept config group (-m pair=atis_news,nosuch)
        if o.is_sweep_override() and len(values := swept_values(o)) > 1:
            probe = [other for other, _ in kept if other != line] + [f"{o.key_or_group}={NO_SUCH_CHOICE}"]
            try:
                compose_config(probe)
            except MissingConfigException as exc:
                if exc.options and str(exc.missing_cfg_file).endswith(f"/{NO_SUCH_CHOICE}"):
                    group = str(exc.missing_cfg_file).rpartition("/")[0]
                    choices += missing_choice_lines(group, list(exc.options), o, values=values)
            except Exception as exc:  # noqa: BLE001 - not a config group, or Hydra reports it
                log.debug("swept values of %s not checked: %s", o.input_line, exc)
    if any(line.startswith(("task=", "+task=")) for line in choices):
        return choices  # the settings a task takes are unknown until the task is: none is judged
    files = [o.input_line for o in unknown if is_pair_file_key(o.key_or_group)]
    lines = choices + ([files_to_a_card_line(cfg, files)] if files else [])
    return lines + [
        unknown_key_line(cfg, o.key_or_group, o.input_line) for o in unknown if not is_pair_file_key(o.key_or_group)
    ]


def first_value(override) -> str | None:
    """The override as one job of a sweep would have it (its first value), so a swept key is checked too; None
    when the values cannot be listed here (``glob``)."""
    if not override.is_sweep_override():
        return override.input_line
    try:
        return f"{override.get_key_element()}={next(iter(override.sweep_string_iterator()))}"
    except Exception:  # noqa: BLE001 - left to Hydra
        return None


def is_pair_file_key(key: str) -> bool:
    from textmetric_bench.tasks.sources import FILE_PAIR_KEYS

    return key.startswith("pair.") and key[len("pair.") :] in FILE_PAIR_KEYS


def files_to_a_card_line(cfg: DictConfig, given: list[str]) -> str:
    """``pair.a=...`` while ``pair`` is a card (the default): the user means ``pair=files``."""
    sides = {line.split("=", 1)[0] for line in given}
    missing = [f"pair.{side}=texts_{side}.jsonl" for side in ("a", "b") if f"pair.{side}" not in sides]
    return (
        f"{' '.join(given)}: pair={OmegaConf.select(cfg, 'pair.name')} is a pair card and takes no files; for your "
        f"own files write pair=files {' '.join([*given, *missing])}"
    )


def swept_values(override) -> list[str]:
    """The values of a swept override (``pair=a,b``), or [] where they cannot be listed here (``glob``)."""
    try:
        return [str(v) for v in override.sweep_string_iterator()]
    except Exception:  # noqa: BLE001 - left to Hydra
        return []


def missing_choice_lines(
    group: str, options: list[str], override, *, first: str | None = None, values: list[str] | None = None
) -> list[str]:
    """``unknown_choice_line`` for each value of ``override`` (a config group's) not among ``options``: ``first``
    (the one Hydra refused) and, of a sweep, every other."""
    wanted = values if values is not None else [first, *swept_values(override)[1:]] if first else []
    return [
        unknown_choice_line(group, value, options, override.input_line)
        for value in dict.fromkeys(wanted)
        if value is not None and value not in options
    ]


def unknown_choice_line(group: str, choice: str, options: list[str], given: str) -> str:
    """``pair=nosuch: there is no pair 'nosuch'; the choices of pair are ...`` (Hydra lists them over several lines
    with its search path), or a "did you mean" naming those close to it."""
    close = difflib.get_close_matches(choice, options, n=3, cutoff=0.6)
    if close:
        return f"{given}: there is no {group} {choice!r}; did you mean {' or '.join(f'{group}={c}' for c in close)}?"
    return f"{given}: there is no {group} {choice!r}; the choices of {group} are {', '.join(sorted(options))}"


def unknown_key_line(cfg: DictConfig, key: str, given: str) -> str:
    """``repetiton=2: there is no setting 'repetiton'; did you mean repetitions=2?`` (closest keys at its level)."""
    parent, _, name = key.rpartition(".")
    value = given.split("=", 1)[1] if "=" in given else ""
    node = OmegaConf.select(cfg, parent) if parent else cfg
    valid = [str(k) for k in node.keys()] if isinstance(node, DictConfig) else []
    where = f"in {parent}" if parent else "at the top level"
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.6)
    if close:
        options = " or ".join(f"{parent + '.' if parent else ''}{c}={value}" for c in close)
        return f"{given}: there is no setting {key!r}; did you mean {options}?"
    return (
        f"{given}: there is no setting {key!r}; the settings {where} are {', '.join(sorted(valid))} "
        f"(to add a key of your own, write +{given})"
    )
