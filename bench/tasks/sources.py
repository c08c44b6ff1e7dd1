"""Which corpora a run reads, from its config: a pair card (`pair=<name>`), two files of the user's
(`pair=files pair.a=texts_a.jsonl pair.b=texts_b.csv`), or the IFC source (`ifc.source=` a card or a file);
cards are looked up in the user's directories (`data.cards`, then $BENCH_CARDS_PATH) before the built-in ones.
Relative paths are relative to the directory the command was started in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from textmetric_bench.data.cards import card_dirs as search_path
from textmetric_bench.data.settings import DataSettings
from textmetric_bench.data.cards import corpus_card, pair_card, pair_names
from textmetric_bench.data.corpora import Generate, Source, disjoint_pair, human_card_of, load_pair, load_source
from textmetric_bench.data.fetch import local_file
from textmetric_bench.data.local_files import file_card, is_corpus_file, load_file
from textmetric_bench.errors import ConfigError, DataError
from textmetric_bench.settings import shown
from textmetric_bench.tasks.skeleton import RunInputs


@dataclass(frozen=True)
class PairSources:
    """The two sources of a run, disjoint, and the label naming the pair in titles and `run.json`."""

    label: str
    a: Source
    b: Source
    files: tuple[str, ...] = ()  # a file pair's two files, resolved

    @property
    def identity(self) -> str:
        """What a run's evaluation log knows the pair by: the card's name, or both files' resolved paths, so that the
        same files given by another path (relative, absolute, as the API gives them) resume the same run."""
        return " vs ".join(self.files) if self.files else self.label

    def record(self) -> dict:
        """Per source: texts used, raw texts, the card, and every file read with its sha256 (for `run.json`)."""
        return {self.a.name: self.a.record(), self.b.name: self.b.record()}


def original_cwd() -> Path:
    """The directory the command was started in (Hydra's, when inside the app), which relative paths start from."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.utils import get_original_cwd

    return Path(get_original_cwd()) if HydraConfig.initialized() else Path.cwd()


def user_path(value: str | Path) -> Path:
    """A path the user gave: ``~`` expanded, relative ones taken from the directory the command was started in."""
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else original_cwd() / path


def card_dirs(cfg: DictConfig) -> tuple[Path, ...]:
    """Where this run looks up cards: ``data.cards``, then $BENCH_CARDS_PATH, then the built-in `datasets/`."""
    return search_path([user_path(d) for d in DataSettings.of(cfg).card_directories])


def is_file_pair(cfg: DictConfig) -> bool:
    """Whether the pair is two files (`pair=files`, or any pair config with keys `a` and `b`) rather than a card."""
    pair = cfg.get("pair")
    return pair is not None and {"a", "b"} <= set(pair.keys())  # keys(): `in` skips a value still ???


def pair_sources(run: RunInputs) -> PairSources:
    """Both sources of the run's pair, normalised, de-duplicated and disjoint, with what they were read from."""
    cfg, cache_dir, mirror = run.cfg, run.cache_dir, run.mirror
    if not is_file_pair(cfg):
        a, b = load_pair(
            str(cfg.pair.name), cache_dir=cache_dir, mirror=mirror, cards=card_dirs(cfg), generate=text_generator(run)
        )
        return PairSources(str(cfg.pair.name), a, b)
    files = _pair_files(cfg)
    a, b = (
        load_file(path, name=given, field=field, field_setting=setting, what=f"pair.{side}")
        for side, given, path, field, setting in files
    )
    a, b = disjoint_pair(a, b, f"pair.a={a.name} and pair.b={b.name}")
    return PairSources(f"{a.name} vs {b.name}", a, b, tuple(str(path.resolve()) for _, _, path, _, _ in files))


def _pair_files(cfg: DictConfig) -> list[tuple[str, str, Path, str, str]]:
    """(side, path as given, path, field, how to set the field) of both files of a file pair; ConfigError if unset."""
    out = []
    for side in ("a", "b"):
        given = OmegaConf.select(cfg, f"pair.{side}", default=None)
        if given is None or OmegaConf.is_missing(cfg.pair, side):
            raise ConfigError(
                f"pair.{side} is not set: give the file of source {side.upper()}, e.g. "
                f"pair.{side}=texts_{side}.jsonl (.jsonl, .csv, .tsv, .txt or .parquet)"
            )
        field = OmegaConf.select(cfg, f"pair.{side}_field", default=None) or OmegaConf.select(
            cfg, "pair.text_field", default=None
        )
        if field is not None and not isinstance(field, str):
            raise ConfigError(
                f"pair.{side}_field={shown(field)} is not valid: give the name of the JSON field or "
                f"CSV/Parquet column of the texts, e.g. pair.{side}_field=body"
            )
        out.append(
            (side, str(given), user_path(given), field, f"pair.{side}_field (or pair.text_field for both files)")
        )
    if out[0][2].resolve() == out[1][2].resolve():
        raise ConfigError(f"pair.a and pair.b are the same file ({out[0][2]}); give two different corpora")
    return out


def ifc_source(run: RunInputs, source: str, text_field: str | None) -> Source:
    """The IFC source: a file (`ifc.source=texts.jsonl`, its field `ifc.text_field`) or a corpus card."""
    if is_corpus_file(source):
        return load_file(
            user_path(source), name=source, field=text_field, field_setting="ifc.text_field", what="ifc.source"
        )
    return load_source(
        source, cache_dir=run.cache_dir, mirror=run.mirror, cards=card_dirs(run.cfg), generate=text_generator(run)
    )


def text_generator(run: RunInputs) -> Generate:
    """What writes a corpus whose card is generated (docs/data.md, "Machine-written text"): the run's `lm`."""
    from textmetric_bench.collections.generated import corpus_generator

    return corpus_generator(run.lm, progress=run.progress)


def check_corpus_card(name: str, cards: tuple[Path, ...]) -> None:
    """Corpus card ``name`` is valid, and, if generated, so is the card of its human corpus."""
    card = corpus_card(name, cards)
    if card.generated is not None:
        human_card_of(card, cards)


def check_pair(cfg: DictConfig) -> None:
    """Before anything loads: the pair's cards exist and are valid, or its two files exist and have a known type."""
    cards = card_dirs(cfg)
    files_under_a_card_problem(cfg, cards)
    if is_file_pair(cfg):
        for side, given, path, field, setting in _pair_files(cfg):
            _check_file(file_card(path, name=given, field=field, field_setting=setting, what=f"pair.{side}"))
    elif OmegaConf.select(cfg, "pair.name") is not None:
        pair = pair_card(str(cfg.pair.name), cards)
        for side in (pair.a, pair.b):
            check_corpus_card(side, cards)


#: The keys of `pair=files` (conf/pair/files.yaml) besides its name.
FILE_PAIR_KEYS = ("a", "b", "text_field", "a_field", "b_field")


def files_under_a_card_problem(cfg: DictConfig, cards: tuple[Path, ...]) -> None:
    """ConfigError when files are given to a pair card (``+pair.a=...`` without ``pair=files``, as Hydra's hint
    for ``pair.a=...`` suggests): the run would read the files but be named, filed and compared with reference
    rows as the card's pair."""
    pair = cfg.get("pair")
    name = OmegaConf.select(cfg, "pair.name", default=None)
    given = [key for key in FILE_PAIR_KEYS if pair is not None and key in pair.keys()]
    if not given or name is None or str(name) not in pair_names(cards):
        return
    keys = ["a", "b", *(key for key in given if key not in ("a", "b"))]
    example = {"a": "texts_a.jsonl", "b": "texts_b.csv"}
    settings = " ".join(f"pair.{key}={_given_value(cfg.pair, key, example.get(key, '...'))}" for key in keys)
    raise ConfigError(
        f"{' and '.join(f'pair.{k}' for k in given)} given to the pair card {name!r}: the run would "
        f"be filed under and compared with {name!r}; for your own files write pair=files {settings}"
    )


def _given_value(pair: DictConfig, key: str, example: str) -> str:
    if key not in pair.keys() or OmegaConf.is_missing(pair, key) or pair[key] is None:
        return example
    return str(pair[key])


def check_ifc_source(cfg: DictConfig) -> None:
    source = str(cfg.ifc.source)
    if is_corpus_file(source):
        _check_file(file_card(user_path(source), name=source, field=cfg.ifc.get("text_field"), what="ifc.source"))
    else:
        check_corpus_card(source, card_dirs(cfg))


def _check_file(card) -> None:
    try:
        local_file(card, card.files[0])
    except DataError as exc:
        raise ConfigError(str(exc)) from exc
