"""A command-line key the config does not have (``repetiton=2``), said in one line with a "did you mean".

Hydra refuses such a key with "Could not override 'repetiton'. To append to your config use +repetiton=2" and a
"Key not in struct" error, and suggests nothing. ``unknown_key_problems`` composes the config as Hydra will, before
Hydra starts, and names each unknown key with the closest keys at its level (difflib): at the top level those are the
shared settings, the config groups and the selected task's settings (``k``, ``repetitions``...). A config group's
choice that does not exist (``pair=nosuch``, ``task=kscc``: Hydra's "Could not find 'pair/nosuch'", its options and
search path over many lines) is one line too, with the closest choices or all of them. A file of the user's
given to a pair card (``pair.a=...`` without ``pair=files``) gets the line that says to write ``pair=files``.
An override the shell split at its spaces (``metrics=[chi, zipf]`` unquoted, which Hydra refuses with "no viable
alternative at input") is told how to write it. A sweep in a call that runs one job (``metrics=chi,zipf`` without
``-m``: Hydra's "Ambiguous value") is told how to sweep, and how to give a list to one run. A swept key
(``-m repetiton=2,3``) is checked with its first value; a swept config group (``-m pair=a,nosuch``) with every
value, before any job runs. Anything else Hydra refuses is left to Hydra.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

#: Keys whose overrides other checks own: the metrics' parameters (``metric_configs``) and Hydra's own.
OWNED_ELSEWHERE = ("metric", "hydra")


def unknown_key_problems(
    overrides: Sequence[str], *, own_configs: bool = True, sweep_advice: str | None = None
) -> list[str]:
    """One line per override whose key the composed config lacks, or [] (also when Hydra refuses something else).
    ``own_configs=False``: the configs come (also) from elsewhere (``--config-dir``), whose groups and choices are
    not known here: choices are left to Hydra. ``sweep_advice``: what to say to a sweep (``k=3,4``) in a call that
    runs one job (``sweep_lines``); None where sweeps run."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:
        return split_override_lines(overrides)  # else Hydra says what
    sweeps = []
    if sweep_advice is not None and own_configs and not any(o.key_or_group in MULTIRUN_KEYS for o in parsed):
        if swept := [o for o in parsed if o.is_sweep_override()]:
            sweeps = sweep_lines(swept, [o.input_line for o in parsed if not o.is_sweep_override()], sweep_advice)
    return sweeps + key_problems(parsed, overrides, own_configs=own_configs)


def key_problems(parsed, overrides: Sequence[str], *, own_configs: bool) -> list[str]:
    """``unknown_key_problems`` of the parsed overrides, a sweep checked with its first value."""
    from hydra.errors import ConfigCompositionException

    from textmetric_bench.running.registry import compose_config

    missing = missing_choices(parsed, overrides) if own_configs else []  # a group's choice that does not exist
    choices = [line for _, line in missing]
    if any(o.key_or_group == "task" for o, _ in missing):
        return choices  # the settings a task takes are unknown until the task is: none is judged
    refused = {id(o) for o, _ in missing}
    kept = [(first_value(o), o) for o in parsed if id(o) not in refused]
    kept = [(line, o) for line, o in kept if line is not None]
    unknown = []
    absent: dict[int, str] = {}  # the first level of each unknown key that the config lacks
    for _ in range(len(kept) + 1):  # drop each unknown key in turn until the rest composes
        try:
            cfg = compose_config([line for line, _ in kept])
            break
        except ConfigCompositionException as exc:
            key = getattr(exc.__cause__, "full_key", None)
            # the key itself, or a level above it that does not exist (``embeder.x=1``: Hydra names ``embeder``)
            refused_keys = [o for _, o in kept if is_under(o.key_or_group, str(key)) and not o.is_add()]
            if not key or not refused_keys or str(key).split(".")[0] in OWNED_ELSEWHERE:
                return choices  # something else is wrong: Hydra says what
            unknown += refused_keys
            absent.update({id(o): str(key) for o in refused_keys})
            kept = [(line, o) for line, o in kept if o not in refused_keys]
        except Exception as exc:  # noqa: BLE001 - Hydra reports it
            log.debug("keys not checked before Hydra: %s", exc)
            return choices
    else:
        return choices
    files = [o.input_line for o in unknown if is_pair_file_key(o.key_or_group)]
    lines = choices + ([files_to_a_card_line(cfg, files)] if files else [])
    return lines + [
        unknown_key_line(cfg, o.key_or_group, o.input_line, absent[id(o)])
        for o in unknown
        if not is_pair_file_key(o.key_or_group)
    ]


#: Settings that take a list though their default is not one (conf/config.yaml: ``metrics: null``, a name or a list).
LIST_KEYS = ("metrics",)

#: Overrides that can make a command line a sweep without ``-m`` (a suite's config sets ``hydra.mode``).
MULTIRUN_KEYS = ("suite", "hydra.mode")


def sweep_lines(swept, others: Sequence[str], advice: str) -> list[str]:
    """One line per sweep (``k=3,4``, ``metrics=fid,mauve``) in a call that runs one job, where Hydra says "Ambiguous
    value" over four lines and offers a quoted string, which no setting here takes. A key that holds a list
    (``metrics``, or a list in the config composed with the ``others`` overrides: ``sizes`` of task=robustness) is
    also told how to give all the values to one run."""
    from omegaconf import ListConfig

    from textmetric_bench.running.registry import compose_config

    try:
        cfg = compose_config(list(others))  # without the sweeps: each swept key keeps its default's type
    except Exception:  # noqa: BLE001 - then only LIST_KEYS are known to hold a list
        cfg = None
    lines = []
    for o in swept:
        values = override_values(o)
        key = o.get_key_element()
        as_list = (
            values
            and not any(v.startswith("[") for v in values)
            and (
                o.key_or_group in LIST_KEYS
                or (cfg is not None and isinstance(OmegaConf.select(cfg, o.key_or_group), ListConfig))
            )
        )
        lines.append(
            f"{o.input_line} is a sweep, one run per value of {o.key_or_group}; "
            + (f"to give them all to one run write {key}=[{','.join(values)}]; " if as_list else "")
            + advice
        )
    return lines


def split_override_lines(overrides: Sequence[str]) -> list[str]:
    """One line per override the shell split at its spaces (``metrics=[chi, zipf]`` unquoted arrives as
    ``metrics=[chi,`` and ``zipf]``, which Hydra refuses with "no viable alternative at input"), saying how to write
    it; [] when something else does not parse."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()

    def parses(line: str) -> bool:
        try:
            parser.parse_overrides([line])
        except HydraException:
            return False
        return True

    items, lines, i, done = list(overrides), [], 0, 0  # items before ``done`` belong to an override already told
    while i < len(items):
        if parses(items[i]):
            i += 1
            continue
        # the shortest run of items around this one that parses: it starts here (``metrics=[chi,`` ``zipf]``) or
        # at an item before it that parsed alone (``pair.a=my`` ``file.txt``)
        spans = sorted(
            ((start, end) for start in range(done, i + 1) for end in range(i, len(items)) if end > start),
            key=lambda span: (span[1] - span[0], -span[0]),
        )
        found = next((span for span in spans if parses(" ".join(items[span[0] : span[1] + 1]))), None)
        if found is None:
            return []
        start, end = found
        joined = " ".join(items[start : end + 1])
        compact = re.sub(r"\s*([,\[\]{}:])\s*", r"\1", joined)
        plain = compact if " " not in compact and "'" not in joined and '"' not in joined and parses(compact) else None
        lines.append(
            f"{joined}: the shell split this override at its spaces; write it "
            + (f"without them, {compact}, or " if plain else "")
            + f"in quotes, '{joined}'"
        )
        i = done = end + 1
    return lines


def is_under(key: str, level: str) -> bool:
    """Whether ``key`` is ``level`` or a key below it (``embeder.x`` under ``embeder``)."""
    return key == level or key.startswith(level + ".")


def first_value(override) -> str | None:
    """The override as one job of a sweep would have it (its first value), so a swept key is checked too; None
    when the values cannot be listed here (``glob``)."""
    if not override.is_sweep_override():
        return override.input_line
    values = override_values(override)
    return f"{override.get_key_element()}={values[0]}" if values else None


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


def override_values(override) -> list[str]:
    """The values an override gives, as written: one, or each of a sweep's (``pair=a,b``); [] where they cannot be
    listed here (``glob``)."""
    try:
        if override.is_sweep_override():
            return [str(v) for v in override.sweep_string_iterator()]
        return [override.get_value_element_as_str()]
    except Exception:  # noqa: BLE001 - left to Hydra
        return []


def missing_choices(parsed, overrides: Sequence[str]) -> list[tuple[Any, str]]:
    """(override, ``unknown_choice_line``) for each value of an override of a config group (Hydra's own left to
    Hydra) that is not among the group's choices (``registry.config_groups``)."""
    from textmetric_bench.running.registry import config_groups

    groups = config_groups(overrides, among={o.key_or_group for o in parsed})
    return [
        (o, unknown_choice_line(o.key_or_group, value, groups[o.key_or_group], o.input_line))
        for o in parsed
        if o.key_or_group in groups and not o.is_delete()
        for value in dict.fromkeys(override_values(o))
        if value not in groups[o.key_or_group]
    ]


def unknown_choice_line(group: str, choice: str, options: list[str], given: str) -> str:
    """``pair=nosuch: there is no pair 'nosuch'; the choices of pair are ...`` (Hydra lists them over several lines
    with its search path), or a "did you mean" naming those close to it."""
    close = difflib.get_close_matches(choice, options, n=3, cutoff=0.6)
    if close:
        return f"{given}: there is no {group} {choice!r}; did you mean {' or '.join(f'{group}={c}' for c in close)}?"
    return f"{given}: there is no {group} {choice!r}; the choices of {group} are {', '.join(sorted(options))}"


def unknown_key_line(cfg: DictConfig, key: str, given: str, absent: str | None = None) -> str:
    """``repetiton=2: there is no setting 'repetiton'; did you mean repetitions=2?`` (closest keys at its level).
    ``absent``: the first level of ``key`` the config lacks, when that is above the key (``embeder`` of
    ``embeder.x=1``: "did you mean embedder.x=1?")."""
    missing = absent if absent and is_under(key, absent) else key
    below = key[len(missing) :]  # what follows the level that is missing (".x"), kept in the suggestion
    parent, _, name = missing.rpartition(".")
    value = given.split("=", 1)[1] if "=" in given else ""
    node = OmegaConf.select(cfg, parent) if parent else cfg
    valid = [str(k) for k in node.keys()] if isinstance(node, DictConfig) else []
    where = f"in {parent}" if parent else "at the top level"
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.6)
    if close:
        options = " or ".join(f"{parent + '.' if parent else ''}{c}{below}={value}" for c in close)
        return f"{given}: there is no setting {missing!r}; did you mean {options}?"
    return (
        f"{given}: there is no setting {missing!r}; the settings {where} are {', '.join(sorted(valid))} "
        f"(to add a key of your own, write +{given})"
    )
