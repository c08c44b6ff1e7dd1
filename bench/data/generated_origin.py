"""Reading the parts of a card that machine-written text needs: a corpus card's ``origin: {kind: generated, ...}``
(`GeneratedOrigin`) and a selection ``{part: i, parts: n}`` (`Selection`), the split of a corpus by a hash of each
text that keeps the texts which prompted a generated corpus out of the human side of its pair (docs/data.md,
"Machine-written text"). The texts themselves are made above the data layer (`textmetric_bench.collections.generated`).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import fields
from typing import Any

from textmetric_bench.data.card_schema import (
    LICENCE_PLACEHOLDER,
    CardReader,
    CorpusCard,
    GeneratedOrigin,
    Normalisation,
    Parser,
    Selection,
)

log = logging.getLogger(__name__)

#: The parser of a generated card, which has no files: its texts come from the language model.
NO_PARSER = Parser("generated", {})

#: The keys of the run's `lm` config a generated card may set for its own model (conf/lm/smollm2.yaml).
LM_KEYS = ("name", "package", "gguf_file", "path")


def read_selection(s: CardReader) -> Selection:
    """``{part: i, parts: n}`` with 0 <= i < n."""
    s.reject_unknown({"part", "parts"})
    parts = s.get("parts", int)
    if parts < 1:
        raise s.fail("parts", f"{parts!r} (the number of parts, at least 1)")
    part = s.get("part", int)
    if not 0 <= part < parts:
        raise s.fail("part", f"{part!r} (0-based: 0 to {parts - 1} of parts: {parts})")
    return Selection(part, parts)


def in_part(text: str, selection: Selection) -> bool:
    """Whether ``text`` lies in part ``selection.part`` of ``selection.parts``: the first 8 bytes of its UTF-8
    SHA-256 as a number, modulo ``parts`` (the same in every process and on every machine)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % selection.parts == selection.part


def read_generated_origin(o: CardReader) -> GeneratedOrigin:
    """The ``origin`` section of a generated card: ``source`` (a human corpus card) and options with defaults
    (`GeneratedOrigin`), each checked here so a bad value fails when the card is read, in one line."""
    defaults = {f.name: f.default for f in fields(GeneratedOrigin) if f.name not in ("source", "lm", "select")}
    o.reject_unknown({"kind", "source", "select", "lm", *defaults})
    values: dict[str, Any] = {"source": o.get("source", str)}
    for name in ("texts", "prompt_tokens", "max_new_tokens", "batch_size", "train_per_step"):
        values[name] = o.get(name, int, defaults[name])
        if values[name] < 1:
            raise o.fail(name, f"{values[name]!r} (a whole number, at least 1)")
    for name in ("seed", "fine_tune_steps"):
        values[name] = o.get(name, int, defaults[name])
        if values[name] < 0:
            raise o.fail(name, f"{values[name]!r} (a whole number, at least 0)")
    number = (int, float)
    for name in ("top_p", "temperature", "learning_rate"):
        if isinstance(o.data.get(name), bool):
            raise o.fail(name, repr(o.data[name]))
    top_p = o.get("top_p", number, defaults["top_p"])
    if not 0 < top_p <= 1:
        raise o.fail("top_p", f"{top_p!r} (the nucleus' probability mass: above 0, at most 1)")
    temperature = o.get("temperature", number, defaults["temperature"])
    if not temperature > 0:
        raise o.fail("temperature", f"{temperature!r} (above 0; 1 samples the model's own probabilities)")
    learning_rate = o.get("learning_rate", number, defaults["learning_rate"])
    if not learning_rate > 0:
        raise o.fail("learning_rate", f"{learning_rate!r} (above 0)")
    values.update(top_p=float(top_p), temperature=float(temperature), learning_rate=float(learning_rate))
    if "select" in o.data:
        values["select"] = read_selection(o.sub("select", o.get("select", dict)))
    lm = o.sub("lm", o.data.get("lm") or {})
    lm.reject_unknown(set(LM_KEYS))
    values["lm"] = {key: lm.get(key, str) for key in LM_KEYS if lm.data.get(key) is not None}
    return GeneratedOrigin(**values)


def read_generated_card(top: CardReader) -> CorpusCard:
    """A corpus card whose origin kind is ``generated``: no files, parser or normalise section (its texts are
    normalised as its source corpus's card says)."""
    top.reject_unknown({"name", "description", "licence", "homepage", "origin", "language", "counts"})
    top.get("language", str, None)
    counts = top.sub("counts", top.get("counts", dict, {}))
    for key in counts.data:
        counts.get(key, int)
    origin = read_generated_origin(top.sub("origin", top.get("origin", dict)))
    name = top.get("name", str)
    if origin.source == name:
        raise top.sub("origin", top.data["origin"]).fail(
            "source", f"{origin.source!r} is this card itself; name the card of the human corpus"
        )
    card = CorpusCard(
        name=name,
        description=top.get("description", str).strip(),
        licence=top.get("licence", str),
        homepage=top.get("homepage", str, ""),
        files=(),
        parser=NO_PARSER,
        normalise=Normalisation(),
        origin="generated",
        path=top.path,
        counts=dict(counts.data),
        generated=origin,
    )
    if card.licence.strip() == LICENCE_PLACEHOLDER:
        log.warning("card %s: its licence is still to be filled in", top.path)
    return card


def read_pair_side(top: CardReader, side: str) -> tuple[str, Selection | None]:
    """One side of a pair card: a corpus name, or a part of one: ``{corpus: NAME, select: {part: i, parts: n}}``."""
    value = top.get(side, (str, dict))
    if isinstance(value, str):
        return value, None
    s = top.sub(side, value)
    s.reject_unknown({"corpus", "select"})
    return s.get("corpus", str), read_selection(s.sub("select", s.get("select", dict)))


def prompts_held_out(top: CardReader, sides: dict[str, tuple[str, Selection | None]], card_of) -> None:
    """ConfigError when a side of a pair is generated from the other side's corpus and that side may hold the
    texts that prompted it: the human side must be another part of the same split (``card_of(name)``: a card)."""
    for side, other in (("a", "b"), ("b", "a")):
        generated = card_of(sides[side][0]).generated
        human, selected = sides[other]
        if generated is None or generated.source != human:
            continue
        prompts = generated.select
        if selected is None or selected.parts != prompts.parts or selected.part == prompts.part:
            fix = next(i for i in range(prompts.parts) if i != prompts.part) if prompts.parts > 1 else None
            hint = (
                f"write {other}: {{corpus: {human}, select: {{part: {fix}, parts: {prompts.parts}}}}}"
                if fix is not None
                else f"give {sides[side][0]!r} a select with parts: 2 or more in its origin"
            )
            raise top.fail(
                other,
                f"{human!r} may hold the texts that prompted {sides[side][0]!r} (part "
                f"{prompts.part} of {prompts.parts} by text hash); {hint}",
            )
