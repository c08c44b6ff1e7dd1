"""The IFC sampler (textmetric_bench.features.lm.sampling): transformers' nucleus, its renormalised probabilities
drawn by proposal and acceptance, the KV cache with rows leaving the batch, prompts and row limits, and the same
texts from the same seed in separate processes."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

# the reference nucleus; imported at collection, it loads no model (the fast tier refuses transformers in tests)
from transformers.generation.logits_process import TopPLogitsWarper

from textmetric_bench.features.lm import sampling as lm_sampling
from textmetric_bench.features.lm.sampling import in_nucleus, nucleus_by_sort, propose, sample_nucleus


def reference_nucleus(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """transformers' top-p: which tokens of each row may be sampled."""
    return torch.isfinite(TopPLogitsWarper(top_p)(None, logits.clone()))


def logit_rows(rows: int, vocab: int, seed: int) -> torch.Tensor:
    """Rows from peaked to flat, some with many exact ties (logits on a coarse grid), one uniform."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, vocab, generator=g) * torch.linspace(0.3, 9.0, rows).unsqueeze(1)
    logits[::3] = torch.round(logits[::3])  # ties
    logits[1] = 0.0  # every token as probable
    return logits


def frequencies_match(draws: torch.Tensor, probs: torch.Tensor, allowed: torch.Tensor) -> float:
    """Total variation between the draws' frequencies and ``probs`` renormalised over ``allowed``."""
    expected = torch.where(allowed, probs.double(), 0.0)
    expected = (expected / expected.sum()).numpy()
    seen = np.bincount(draws.numpy(), minlength=len(probs)) / len(draws)
    return float(np.abs(seen - expected).sum() / 2)


# peaked ... flat: a nucleus of 4, 637, 2,863 and 9,013 of 12,000 tokens
@pytest.mark.parametrize("spread", [8.0, 3.0, 2.0, 0.6])
def test_every_sampled_token_lies_in_transformers_nucleus(spread):
    vocab, rows = 12_000, 400
    logits = (torch.randn(1, vocab, generator=torch.Generator().manual_seed(1)) * spread).expand(rows, vocab)
    allowed = reference_nucleus(logits[:1], 0.9)[0]
    picked = sample_nucleus(logits, top_p=0.9, temperature=1.0, generator=torch.Generator().manual_seed(2))
    assert allowed[picked].all()
    if spread != 8.0:  # a wide nucleus is not collapsed to its top tokens
        assert len(set(picked.tolist())) > rows // 4


def test_the_draws_follow_the_nucleus_renormalised_probabilities():
    """20,000 draws from a nucleus of about 20 tokens (about one draw in ten is rejected and drawn again)."""
    logits = torch.randn(1, 500, generator=torch.Generator().manual_seed(3)) * 3
    probs, allowed = torch.softmax(logits[0], -1), reference_nucleus(logits, 0.9)[0]
    assert 10 < int(allowed.sum()) < 40
    draws = sample_nucleus(
        logits.expand(20_000, -1), top_p=0.9, temperature=1.0, generator=torch.Generator().manual_seed(4)
    )
    assert allowed[draws].all()
    assert frequencies_match(draws, probs, allowed) < 0.03  # the sampling noise alone is about 0.012


def test_the_proposal_follows_the_whole_distribution_across_blocks():
    """The draw before acceptance, 10,000 times: 30 probable tokens spread over a vocabulary of 2.5 blocks (the
    last one padded), the rest nearly impossible."""
    vocab = int(2.5 * lm_sampling.BLOCK)
    g = torch.Generator().manual_seed(5)
    logits = torch.full((vocab,), -40.0)
    logits[torch.randperm(vocab, generator=g)[:30]] = torch.randn(30, generator=g)
    logits[-1] = 0.5  # the padded block's last real token
    probs = torch.softmax(logits, -1)
    u = torch.rand(10_000, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    draws = propose(probs.expand(10_000, -1).contiguous(), u)
    assert frequencies_match(draws, probs, torch.ones(vocab, dtype=torch.bool)) < 0.05  # noise about 0.02
    assert (draws == vocab - 1).any()


def test_the_nucleus_by_sort_is_transformers_nucleus():
    logits = torch.randn(60, 5000, generator=torch.Generator().manual_seed(7)) * torch.linspace(0.5, 6, 60)[:, None]
    for top_p in (0.3, 0.9, 0.95):
        assert torch.equal(nucleus_by_sort(torch.softmax(logits, -1), top_p), reference_nucleus(logits, top_p))


@pytest.mark.parametrize("top_p", [0.05, 0.5, 0.9, 0.95])
def test_every_token_is_accepted_exactly_when_it_lies_in_the_nucleus(top_p):
    """in_nucleus (a float32 sum, again in float64 near the edge or with ties) against the full sort, for every
    token of rows from peaked to flat, with exact ties and a uniform row."""
    probs = torch.softmax(logit_rows(12, 3000, seed=8), -1)
    expected = nucleus_by_sort(probs, top_p)
    for first in range(0, 3000, 250):  # 250 tokens of every row at once
        x = torch.arange(first, first + 250).repeat_interleave(12)
        accepted = in_nucleus(probs.repeat(250, 1), x, top_p).view(250, 12).T
        assert torch.equal(accepted, expected[:, first : first + 250]), first


def test_a_token_whose_mass_ahead_is_top_p_itself_is_left_out():
    """top_p set to the float64 mass of a row's k most probable tokens, for k from 10 to 209: the next token has
    exactly top_p ahead of it, which a float32 sum cannot tell from a little less or more (it rounds either way);
    it is left out and the k-th kept, as the sort decides."""
    probs = torch.softmax(torch.randn(1, 8000, generator=torch.Generator().manual_seed(9)) * 2, -1)
    ordered, ids = torch.sort(probs[0], descending=True, stable=True)
    for k in range(10, 210):
        top_p = float(ordered[:k].double().sum())
        assert int(nucleus_by_sort(probs, top_p).sum()) == k
        assert (
            in_nucleus(probs, ids[k - 1 : k], top_p).item() and not in_nucleus(probs, ids[k : k + 1], top_p).item()
        ), k


def test_ties_at_the_edge_of_the_nucleus_go_to_the_smaller_token_id():
    uniform = torch.zeros(3000, 8)
    draws = sample_nucleus(uniform, top_p=0.3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    # before token 0: 0; before 1: 1/8; before 2: 2/8 < .3; before 3: 3/8: the nucleus is tokens 0, 1 and 2
    assert set(draws.tolist()) == {0, 1, 2}
    assert np.abs(np.bincount(draws.numpy()) / 3000 - 1 / 3).max() < 0.04


def test_a_tiny_top_p_falls_back_to_the_sorted_nucleus(monkeypatch):
    """A draw is kept with probability about top_p: at .002 on a flat row nearly every row exhausts its rounds
    and draws from the nucleus found by sorting, which still gives its tokens with their probabilities."""
    rounds = []
    original = lm_sampling.propose
    monkeypatch.setattr(lm_sampling, "propose", lambda probs, u: rounds.append(len(u)) or original(probs, u))
    logits = torch.zeros(4000, 1000)
    draws = sample_nucleus(logits, top_p=0.002, temperature=1.0, generator=torch.Generator().manual_seed(1))
    # every round, then the draw from the sorted nucleus (the same proposal), which most rows reached
    assert len(rounds) == lm_sampling.MAX_ROUNDS + 1 and rounds[-1] > 3000
    assert set(draws.tolist()) == {0, 1}  # before token 1: .001 < .002; before 2: .002
    assert abs(float((draws == 0).double().mean()) - 0.5) < 0.03


def test_the_nucleus_boundary_is_transformers_and_temperature_flattens():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert reference_nucleus(logits, 0.8).tolist() == [[True, True, False, False]]
    draws = sample_nucleus(
        logits.expand(2000, 4), top_p=0.8, temperature=1.0, generator=torch.Generator().manual_seed(0)
    )
    assert set(draws.tolist()) == {0, 1}
    hot = sample_nucleus(
        logits.expand(2000, 4), top_p=0.999, temperature=5.0, generator=torch.Generator().manual_seed(0)
    )
    assert set(hot.tolist()) == {0, 1, 2, 3}
    everything = sample_nucleus(
        logits.expand(2000, 4), top_p=1.0, temperature=1.0, generator=torch.Generator().manual_seed(0)
    )
    assert frequencies_match(everything, torch.softmax(logits[0], -1), torch.ones(4, dtype=torch.bool)) < 0.05


def test_the_same_generator_seed_draws_the_same_tokens_with_or_without_scratch():
    logits = torch.randn(64, 5000, generator=torch.Generator().manual_seed(3)) * 2
    draw = lambda seed, scratch=None: sample_nucleus(
        logits, top_p=0.95, temperature=1.0, scratch=scratch, generator=torch.Generator().manual_seed(seed)
    )
    assert torch.equal(draw(5), draw(5)) and not torch.equal(draw(5), draw(6))
    assert torch.equal(draw(5), draw(5, torch.empty(64, 5000)))


def test_broken_logits_and_settings_are_refused_by_name():
    logits = torch.randn(4, 100)
    logits[2, 7] = float("nan")
    with pytest.raises(ValueError, match="row 2 are not finite"):
        sample_nucleus(logits, top_p=0.9, temperature=1.0, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="top_p must be in"):
        sample_nucleus(torch.randn(4, 100), top_p=0.0, temperature=1.0, generator=torch.Generator())
    with pytest.raises(ValueError, match="temperature must be positive"):
        sample_nucleus(torch.randn(4, 100), top_p=0.9, temperature=0.0, generator=torch.Generator())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_on_a_gpu_the_draws_lie_in_the_nucleus_and_follow_it():
    logits = torch.randn(1, 3000, generator=torch.Generator().manual_seed(3)) * 4
    allowed = reference_nucleus(logits, 0.9)[0]
    draws = sample_nucleus(
        logits.expand(20_000, -1).cuda(), top_p=0.9, temperature=1.0, generator=torch.Generator().manual_seed(4)
    ).cpu()
    assert allowed[draws].all() and frequencies_match(draws, torch.softmax(logits[0], -1), allowed) < 0.02


def test_rows_that_leave_the_batch_keep_the_others_on_their_own_cache(smollm2):
    """Every token the batched, cached sampler drew lies in the nucleus of a plain forward pass over its row:
    a cache misaligned when finished rows leave the batch would soon draw outside it (top_p .5 is narrow).
    Rows end at the first full stop here (the untuned model seldom says EOS), so they leave at different steps."""
    from textmetric_bench.features.lm.sampling import nucleus_mask_sorted, sample_rows

    model, tokenizer = smollm2
    stop = tokenizer.convert_tokens_to_ids(".")
    rows = sample_rows(
        model,
        n=12,
        start_token=tokenizer.bos_token_id,
        end_token=stop,
        max_new_tokens=24,
        top_p=0.5,
        temperature=1.0,
        batch_size=12,
        generator=torch.Generator().manual_seed(11),
    )
    assert len(rows.tokens) == 12 and any(rows.ended) and not all(rows.ended)  # some rows left early
    assert rows.computed_tokens < 12 * 24
    for tokens, ended in zip(rows.tokens, rows.ended):
        seq = [tokenizer.bos_token_id, *tokens] + ([stop] if ended else [])
        with torch.no_grad():
            probs = torch.softmax(model(input_ids=torch.tensor([seq])).logits[0, :-1].float(), -1)
        sorted_probs, order = torch.sort(probs, -1, descending=True)
        mask = nucleus_mask_sorted(sorted_probs, 0.5)
        for position, token in enumerate(seq[1:]):
            assert mask[position][order[position] == token].item(), (position, tokenizer.decode(seq))


def test_prompts_are_continued_in_the_nucleus_and_each_row_stops_at_its_own_limit(smollm2):
    """Rows continuing prompts of one length (a generated corpus, textmetric_bench.collections.generated): every
    new token lies in the nucleus of a plain forward pass over its prompt and the tokens before it, and a row that
    draws no EOS stops after exactly its own limit, so rows leave the batch at different steps."""
    from textmetric_bench.features.lm.sampling import nucleus_mask_sorted, sample_rows

    model, tokenizer = smollm2
    texts = [
        "How do I top up my card",
        "I would like to cancel a transfer",
        "Why was my payment declined",
        "Where can I see my PIN",
        "My card has not arrived yet",
        "Can I change the currency of my account",
    ]
    prompts = [[tokenizer.bos_token_id, *tokenizer(t, add_special_tokens=False)["input_ids"][:3]] for t in texts]
    limits = [2, 9, 5, 14, 1, 7]
    rows = sample_rows(
        model,
        n=6,
        end_token=tokenizer.eos_token_id,
        max_new_tokens=12,
        top_p=0.5,
        temperature=1.0,
        batch_size=4,
        generator=torch.Generator().manual_seed(3),
        prompts=prompts,
        row_limits=limits,
    )
    for tokens, ended, limit in zip(rows.tokens, rows.ended, limits):
        assert len(tokens) + ended <= min(limit, 12) and (ended or len(tokens) == min(limit, 12))
    assert rows.computed_tokens < 6 * 4 + sum(min(x, 12) for x in limits)  # the prompts pass once each
    for prompt, tokens, ended in zip(prompts, rows.tokens, rows.ended):
        seq = [*prompt, *tokens] + ([tokenizer.eos_token_id] if ended else [])
        with torch.no_grad():
            probs = torch.softmax(model(input_ids=torch.tensor([seq])).logits[0, :-1].float(), -1)
        sorted_probs, order = torch.sort(probs, -1, descending=True)
        mask = nucleus_mask_sorted(sorted_probs, 0.5)
        for position in range(len(prompt) - 1, len(seq) - 1):
            assert mask[position][order[position] == seq[position + 1]].item(), (position, tokenizer.decode(seq))


def test_a_row_alone_stopped_at_its_limit_draws_the_start_of_what_it_draws_unlimited(smollm2):
    """A row limit only stops a row: alone in its batch, a row limited to 6 tokens draws the first 6 of the
    tokens it draws with a limit of 20, from the same seed; one start token and a prompt of it are the same."""
    from textmetric_bench.features.lm.sampling import sample_rows

    model, tokenizer = smollm2
    common = dict(n=1, end_token=tokenizer.eos_token_id, max_new_tokens=20, top_p=0.9, temperature=1.0, batch_size=1)
    drawn = []
    for seed in (8, 9):
        free = sample_rows(
            model, start_token=tokenizer.bos_token_id, generator=torch.Generator().manual_seed(seed), **common
        )
        limited = sample_rows(
            model,
            prompts=[[tokenizer.bos_token_id]],
            row_limits=[6],
            generator=torch.Generator().manual_seed(seed),
            **common,
        )
        assert len(free.tokens[0]) > 6 and free.tokens[0][:6] == limited.tokens[0] and not limited.ended[0]
        drawn.append(free.tokens[0])
    assert drawn[0] != drawn[1]
    with pytest.raises(ValueError, match="prompts of one length"):
        sample_rows(model, prompts=[[1, 2], [3]], generator=torch.Generator(), **{**common, "n": 2})


SAMPLE_IN_A_PROCESS = """if True:
    import json, sys
    import torch
    from textmetric_bench.features.lm.sampling import sample_corpus
    from textmetric_bench.data.card_schema import Normalisation
    from textmetric_bench.features.lm.model import load_causal_lm
    cfg, cache, seed = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    model, tokenizer = load_causal_lm(cfg, cache)
    texts, stats = sample_corpus(model, tokenizer, 16, token_lengths=[6, 9, 12, 15, 20], top_p=0.95,
                                 temperature=1.0, batch_size=8, seed=seed, normalisation=Normalisation(),
                                 length_quantile=0.95, progress=False)
    print(json.dumps(texts))
"""


@pytest.mark.slow  # three processes each load the model: 30 s idle, 100 s on a busy machine
def test_the_same_seed_samples_the_same_texts_in_separate_processes(smollm2, smollm2_cfg, cache_dir):
    def run(seed: int) -> list[str]:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                SAMPLE_IN_A_PROCESS,
                json.dumps({**smollm2_cfg, "device": "cpu"}),
                str(cache_dir),
                str(seed),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, again, other = run(7), run(7), run(8)
    assert len(first) == 16 and first == again
    assert len(set(first) & set(other)) < 4
