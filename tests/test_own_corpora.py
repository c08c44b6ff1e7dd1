"""Your own corpora without a file in the checkout, in process: files of every format,
local cards in user directories, the card command, the language guess, the IFC source, and every data error
naming the file, the line or field and what to do. Texts are real (the fortune pair); the files are written
by the tests into tmp_path. End-to-end runs from another directory: test_own_corpora_cli.py.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from textmetric_bench.data.cards import CARDS_ENV, DATASETS_DIR, card_dirs, corpus_card, corpus_names, read_corpus_card
from textmetric_bench.data.corpora import load_pair, load_source, normalise_texts
from textmetric_bench.data.language import guess_language
from textmetric_bench.data.local_files import load_file
from textmetric_bench.data.make_card import write_cards
from textmetric_bench.errors import ConfigError, DataError
from textmetric_bench.running.registry import compose_config
from textmetric_bench.running.validate import validate_config


@pytest.fixture(scope="module")
def fortune():
    """Real texts: the two sides of the built-in fortune pair."""
    a, b = load_pair("fortune_computing_people")
    return list(a.texts), list(b.texts)


def write_texts(path: Path, texts: list[str], field: str = "text") -> Path:
    """``texts`` in the format ``path``'s extension names, under ``field`` where the format has fields."""
    suffix = path.suffix
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps({"id": i, field: t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    elif suffix in (".csv", ".tsv"):
        with open(path, "w", newline="", encoding="utf-8") as f:
            rows = csv.writer(f, delimiter="\t" if suffix == ".tsv" else ",")
            rows.writerow(["id", field])
            rows.writerows(enumerate(texts))
    elif suffix == ".txt":
        path.write_text("".join(t.replace("\n", " ") + "\n" for t in texts), encoding="utf-8")
    elif suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"id": list(range(len(texts))), field: texts}), path)
    return path


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- files of every format ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv", ".txt", ".parquet"])
def test_each_format_gives_normalised_unique_texts_and_records_its_file(suffix, fortune, tmp_path):
    texts = fortune[0][:40]
    raw = [*texts, texts[0], "  " + texts[1].replace(" ", "   ") + " "]  # a duplicate, and one after normalising
    path = write_texts(tmp_path / f"mine{suffix}", raw)
    source = load_file(path, name="mine")
    assert list(source.texts) == texts == normalise_texts(raw, source.normalise)
    record = source.record()
    assert record["texts"] == 40 and record["raw_texts"] == 42 and record["card"] is None
    assert record["files"] == [{"path": str(path), "sha256": sha256_of(path), "raw_texts": 42}]


def test_a_text_file_has_one_text_a_line_whatever_separators_the_lines_hold(fortune, tmp_path):
    """A line ends at \\n, \\r\\n or \\r (as open() reads a file); a form feed, U+2028, U+0085 or a record
    separator inside a line is part of its text (str.splitlines split there, and a .jsonl line holding U+2028
    unescaped, as JSON allows, no longer parsed)."""
    texts = fortune[0][:6]
    inside = ["\x0c", "\u2028", "\x85", "\x1e", "\x0b", "\u2029"]
    lines = [f"{t[:10]}{sep}{t[10:]}" for t, sep in zip(texts, inside)]
    txt = tmp_path / "separators.txt"
    txt.write_bytes(("\r\n".join(lines[:3]) + "\n" + "\r".join(lines[3:]) + "\n").encode("utf-8"))
    got = load_file(txt, name="separators")
    assert got.record()["raw_texts"] == 6 and len(got.texts) == 6, got.texts
    assert list(got.texts) == normalise_texts(lines, got.normalise)
    jsonl = tmp_path / "separators.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in lines), encoding="utf-8")
    assert list(load_file(jsonl, name="separators").texts) == list(got.texts)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_another_field_or_column_is_named_by_an_option(suffix, fortune, tmp_path):
    path = write_texts(tmp_path / f"bodies{suffix}", fortune[1][:20], field="body")
    assert list(load_file(path, name="bodies", field="body").texts) == fortune[1][:20]


# --- local cards in the user's directories -----------------------------------------------------------------


def local_card(cards: Path, name: str, file: str, *, fmt: str = "jsonl", extra: str = "") -> Path:
    (cards / "corpora").mkdir(parents=True, exist_ok=True)
    option = {"jsonl": "  text_field: text\n", "csv": "  text_column: text\n", "txt": ""}[fmt]
    path = cards / "corpora" / f"{name}.yaml"
    path.write_text(
        f"name: {name}\ndescription: my texts\nlicence: CC0\nfiles:\n  - path: {file}\n{extra}"
        f"parser:\n  format: {fmt}\n{option}",
        encoding="utf-8",
    )
    return path


def test_a_local_card_needs_no_url_nor_checksum_and_reads_relative_to_its_directory(fortune, tmp_path):
    (tmp_path / "data").mkdir()
    data = write_texts(tmp_path / "data" / "computing.jsonl", fortune[0][:50])
    card_path = local_card(tmp_path / "my_cards", "computing", "../../data/computing.jsonl")
    dirs = card_dirs([tmp_path / "my_cards"])
    assert dirs == (tmp_path / "my_cards", DATASETS_DIR)
    card = corpus_card("computing", dirs)
    assert card.origin == "local" and card.files[0].sha256 is None and card.path == card_path
    source = load_source("computing", cards=dirs)
    assert list(source.texts) == fortune[0][:50]
    assert source.record()["files"][0] == {"path": str(data), "sha256": sha256_of(data), "raw_texts": 50}
    assert source.record()["card"] == str(card_path)


def test_user_cards_come_first_then_the_environment_then_the_built_in_ones(fortune, tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    write_texts(tmp_path / "atis.txt", fortune[0][:30])
    local_card(first, "atis", str(tmp_path / "atis.txt"), fmt="txt")  # shadows the built-in atis card
    local_card(second, "people", str(write_texts(tmp_path / "people.csv", fortune[1][:30])), fmt="csv")
    (second / "pairs").mkdir()
    (second / "pairs" / "mine.yaml").write_text("name: mine\ndescription: d\na: atis\nb: fortune_people\n")
    monkeypatch.setenv(CARDS_ENV, str(second))
    dirs = card_dirs([first])
    assert dirs == (first, second, DATASETS_DIR)
    assert corpus_card("atis", dirs).origin == "local" and corpus_card("atis").origin == "download"
    assert {"atis", "people", "banking77"} <= set(corpus_names(dirs))
    a, b = load_pair("mine", cards=dirs)  # a user corpus against a built-in one
    assert list(a.texts) == fortune[0][:30] and b.name == "fortune_people" and len(b.texts) > 1000


@pytest.mark.parametrize(
    "make, parts",
    [
        (lambda d: d / "nowhere", ["cards directory", "nowhere", "does not exist", "data.cards"]),
        (lambda d: d, ["has no corpora/ or pairs/ folder", "corpora/<name>.yaml"]),
    ],
    ids=["missing", "flat"],
)
def test_a_cards_directory_that_cannot_hold_cards_is_refused(make, parts, tmp_path):
    (tmp_path / "loose.yaml").write_text("name: loose\n")
    with pytest.raises(ConfigError) as err:
        card_dirs([make(tmp_path)])
    assert all(part in str(err.value) for part in parts), err.value


@pytest.mark.parametrize(
    "extra, fmt_options, field",
    [
        ("    url: https://example.org/x.jsonl\norigin:\n  kind: local\n", "", "files[0].url"),
        ("    sha256: 12ab\n", "", "files[0].sha256"),
        ("", "  text_feld: body\n", "parser.text_feld"),
        ("", "  encoding: utf-99\n", "parser.encoding"),
    ],
    ids=["url-on-a-local-card", "short-sha256", "misspelt-option", "unknown-encoding"],
)
def test_a_card_with_a_bad_option_names_the_card_and_the_field(extra, fmt_options, field, tmp_path):
    path = local_card(tmp_path, "bad", "bad.jsonl", extra=extra)
    path.write_text(path.read_text() + fmt_options)
    with pytest.raises(ConfigError) as err:
        read_corpus_card(path)
    assert str(path) in str(err.value) and field in str(err.value), err.value


def test_a_local_file_changed_since_its_card_was_written_is_refused(fortune, tmp_path):
    data = write_texts(tmp_path / "texts.jsonl", fortune[0][:20])
    local_card(tmp_path / "cards", "texts", str(data), extra=f"    sha256: {sha256_of(data)}\n")
    assert len(load_source("texts", cards=[tmp_path / "cards"]).texts) == 20
    write_texts(data, fortune[0][:21])
    with pytest.raises(DataError) as err:
        load_source("texts", cards=[tmp_path / "cards"])
    assert all(p in str(err.value) for p in (str(data), sha256_of(data), "put its new sha256 into the card"))


# --- every data error names the file, the line or field, and what to do ------------------------------------


def pair_problem(tmp_path: Path, monkeypatch, a: str, b: str = "b.csv", *overrides: str) -> str:
    """What a user meets for `pair=files pair.a=A pair.b=B` started in tmp_path: the config check's message,
    else the run's (the files are parsed only then)."""
    from textmetric_bench.tasks.ksc import run_ksc

    monkeypatch.chdir(tmp_path)
    cfg = compose_config(
        [
            "pair=files",
            f"pair.a={a}",
            f"pair.b={b}",
            "k=3",
            "n=10",
            "repetitions=1",
            "metrics=[chi]",
            "progress=false",
            *overrides,
        ]
    )
    try:
        validate_config(cfg)
        run_ksc(cfg, tmp_path / "run")
    except (ConfigError, DataError) as exc:
        return str(exc)
    raise AssertionError("no error")


@pytest.mark.parametrize(
    "name, content, parts",
    [
        ("a.jsonl", None, ["a.jsonl", "does not exist", "pair.a", "directory the command was started in"]),
        ("a.xlsx", b"x", ["a.xlsx", "(pair.a)", "unknown file type '.xlsx'", ".jsonl, .csv, .tsv, .txt, .parquet"]),
        (
            "a.jsonl",
            b'{"text": "one"}\n{"text": "two"}\n{"text": "three"\n',
            ["a.jsonl: line 3 is not valid JSON", "fix the file"],
        ),
        (
            "a.jsonl",
            b'{"body": "one", "id": 1}\n',
            [
                "a.jsonl: line 1 has no field 'text'",
                "['body', 'id']",
                "pair.a_field (or pair.text_field for both files)",
            ],
        ),
        (
            "a.csv",
            b"id,body\n1,one\n",
            ["a.csv: line 1 (the header) has columns ['id', 'body'] but no 'text'", "pair.a_field"],
        ),
        ("a.jsonl", b'{"text": 17}\n', ["a.jsonl: line 1 ['text'] holds int 17, not a text", "pair.a_field"]),
        ("a.txt", b"\n \n", ["a.txt is empty", "put texts in it"]),
        ("a.csv", b"text\n", ["a.csv holds no record", "only a header"]),
    ],
    ids=[
        "missing",
        "unknown-extension",
        "jsonl-line-not-json",
        "jsonl-missing-field",
        "csv-missing-column",
        "jsonl-not-a-text",
        "empty",
        "header-only",
    ],
)
def test_a_bad_file_names_itself_the_line_or_field_and_the_fix(name, content, parts, fortune, tmp_path, monkeypatch):
    write_texts(tmp_path / "b.csv", fortune[1][:30])
    if content is not None:
        (tmp_path / name).write_bytes(content)
    message = pair_problem(tmp_path, monkeypatch, name)
    assert all(part in message for part in parts), message


def test_a_parquet_file_without_the_column_lists_the_columns(fortune, tmp_path, monkeypatch):
    write_texts(tmp_path / "a.parquet", fortune[0][:30], field="body")
    write_texts(tmp_path / "b.csv", fortune[1][:30])
    message = pair_problem(tmp_path, monkeypatch, "a.parquet")
    assert all(p in message for p in ("a.parquet", "has columns ['id', 'body'] but no 'text'", "pair.a_field")), message
    assert pair_problem(tmp_path, monkeypatch, "a.parquet", "b.csv", "pair.a_field=other").count("no 'other'") == 1


def test_too_few_texts_for_k_and_n_names_the_file_and_the_count_needed(fortune, tmp_path, monkeypatch):
    write_texts(tmp_path / "a.jsonl", fortune[0][:12] + fortune[0][:3])  # 12 distinct texts; k=3, n=10 needs 15
    write_texts(tmp_path / "b.csv", fortune[1][:30])
    message = pair_problem(tmp_path, monkeypatch, "a.jsonl")
    assert "source 'a.jsonl' has 12 texts but a KSC collection with k=3, n=10 needs 15" in message, message
    assert "lower n or k" in message


@pytest.mark.parametrize(
    "overrides, parts",
    [
        (["pair=files", "pair.b=b.csv"], ["pair.a is not set", "e.g. pair.a=texts_a.jsonl"]),
        (["pair=files", "pair.a=b.csv", "pair.b=./b.csv"], ["pair.a and pair.b are the same file"]),
        (["pair.name=mine", "data.cards=[nowhere]"], ["cards directory", "nowhere", "data.cards"]),
        (["pair.name=mine"], ["unknown pair 'mine'", "data.cards=[DIR]", CARDS_ENV]),
    ],
    ids=["a-unset", "same-file", "cards-dir-missing", "unknown-pair"],
)
def test_a_pair_config_that_cannot_work_fails_before_loading(overrides, parts, fortune, tmp_path, monkeypatch):
    write_texts(tmp_path / "b.csv", fortune[1][:30])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        validate_config(compose_config(overrides))
    assert all(part in str(err.value) for part in parts), err.value


# --- other tasks, and the IFC source ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "task, overrides",
    [
        ("robustness", ["n_ref=20", "sizes=[10,20]", "imbalance_total=30", "repetitions=1"]),
        ("perturb", ["n=10", "repetitions=1", "perturbations=[truncate]"]),
    ],
)
def test_robustness_and_perturb_read_a_file_pair_and_record_it(
    task, overrides, fortune, tmp_path, monkeypatch, cache_dir
):
    from textmetric_bench.tasks.perturb import run_perturb
    from textmetric_bench.tasks.robustness import run_robustness

    a = write_texts(tmp_path / "a.txt", fortune[0][:60])
    b = write_texts(tmp_path / "b.parquet", fortune[1][:60])
    monkeypatch.chdir(tmp_path)
    cfg = compose_config(
        [
            f"task={task}",
            "pair=files",
            "pair.a=a.txt",
            "pair.b=b.parquet",
            "metrics=[chi]",
            "progress=false",
            f"data.cache_dir={cache_dir}",
            *overrides,
        ]
    )
    validate_config(cfg)
    result = {"robustness": run_robustness, "perturb": run_perturb}[task](cfg, tmp_path / "run")
    sources = json.loads((tmp_path / "run" / "run.json").read_text())["sources"]
    assert result.info["pair"] == "a.txt vs b.parquet" and not result.failures
    assert {name: s["files"][0]["sha256"] for name, s in sources.items()} == {
        "a.txt": sha256_of(a),
        "b.parquet": sha256_of(b),
    }


def test_the_ifc_source_can_be_a_file_or_a_user_card(fortune, tmp_path, monkeypatch):
    from textmetric_bench.tasks.ifc import run_ifc
    from textmetric_bench.tasks.sources import ifc_source

    path = write_texts(tmp_path / "mine.csv", fortune[0][:80])
    local_card(tmp_path / "cards", "carded", str(path), fmt="csv")
    monkeypatch.chdir(tmp_path)
    cfg = compose_config(
        [
            "task=ifc",
            "ifc.source=mine.csv",
            "ifc.train_per_step=10",
            "ifc.corpus_size=10",
            "ifc.repetitions=1",
            "ifc.generate=false",
            "progress=false",
        ],
        return_hydra_config=True,
    )
    assert "/ifc/mine/" in str(cfg.hydra.run.dir)  # the run directory is named after the file, not its path
    run = validate_config(cfg)
    assert ifc_source(run, "mine.csv", "text").record()["files"][0]["sha256"] == sha256_of(path)
    with pytest.raises(DataError, match="no generated corpora"):  # the source loaded; nothing generated yet
        run_ifc(cfg, tmp_path / "run")
    carded = compose_config(["task=ifc", "ifc.source=carded", f"data.cards=[{tmp_path / 'cards'}]"])
    assert list(ifc_source(validate_config(carded), "carded", None).texts) == fortune[0][:80]
    with pytest.raises(ConfigError, match=r"nope\.jsonl does not exist; give the path of an existing file in ifc"):
        validate_config(compose_config(["task=ifc", "ifc.source=nope.jsonl"]))


# --- the card command and the language guess ---------------------------------------------------------------


def test_the_card_command_writes_a_card_that_reads_back_with_counts_and_checksum(fortune, tmp_path):
    path = write_texts(tmp_path / "My Texts.jsonl", [*fortune[0][:30], fortune[0][0], " ", fortune[0][1]])
    printed = write_cards([path], name=None, field=None, out=None, pair=None, force=False)[0]
    assert str(path) in printed and "TO FILL IN" in printed  # without --out: the card, with an absolute path
    out = tmp_path / "cards"
    written = write_cards([path], name=None, field=None, out=out, pair=None, force=False)
    assert written[0] == f"wrote {out / 'corpora' / 'My_Texts.yaml'}: 30 texts"
    text = (out / "corpora" / "My_Texts.yaml").read_text()
    for line in (
        "raw_texts: 33",
        "texts: 30",
        "duplicates: 2",
        "empty: 1",
        f"sha256: {sha256_of(path)}",
        'path: "../../My Texts.jsonl"',
        'format: "jsonl"',
        'text_field: "text"',
        "language: en",
    ):
        assert line in text, line
    card = read_corpus_card(out / "corpora" / "My_Texts.yaml")
    assert card.origin == "local" and card.files[0].sha256 == sha256_of(path)
    assert list(load_source("My_Texts", cards=[out]).texts) == fortune[0][:30]
    with pytest.raises(ConfigError, match="exists; remove it, or pass --force"):
        write_cards([path], name=None, field=None, out=out, pair=None, force=False)
    with pytest.raises(ConfigError, match="--pair writes a pair card of two corpora"):
        write_cards([path], name=None, field=None, out=out, pair="mine", force=True)


def test_the_language_guess_names_the_language_or_says_it_cannot(fortune):
    assert guess_language(fortune[0])[0] == "en" and "English" in guess_language(fortune[0])[1]
    german = ["Der Hund ist nicht mit dem Ball auf die Straße gelaufen.", "Ich weiß es nicht, und das ist gut."]
    french = ["Le chat est sur la table et il ne veut pas descendre.", "Je pense que les enfants sont au jardin."]
    assert guess_language(german)[0] == "de" and guess_language(french)[0] == "fr"
    assert guess_language(["Καλημέρα σας, τι κάνετε σήμερα;"]) == ("el", "100% of the letters are Greek")
    code, why = guess_language(["Привет, как дела?", "Всё хорошо, спасибо."])
    assert code == "und" and "Cyrillic" in why
    assert guess_language(["12345", "!!!"]) == ("und", "the texts hold no letters")


@pytest.mark.parametrize("name", ["texts", "texts.txt"])
def test_a_directory_given_as_a_file_is_called_a_directory(name, tmp_path):
    """Not "unknown file type (the name has no extension)" for a directory without one."""
    (tmp_path / name).mkdir()
    with pytest.raises((ConfigError, DataError), match=f"{tmp_path / name} .*is a directory, not a file"):
        load_file(tmp_path / name, name=name, what="pair.a")
