"""The IFC sampler (textmetric_bench.features.lm_sampling): transformers' nucleus, drawn by the compiled kernel as
the torch definition draws it, the KV cache with rows leaving the batch, and the same texts from the same seed in
separate processes."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
# the reference nucleus; imported at collection, it loads no model (the fast tier refuses transformers in tests)
from transformers.generation.logits_process import TopPLogitsWarper

from textmetric_bench.features.lm_sampling import draw_in_nucleus, nucleus_edge, sample_nucleus


def reference_nucleus(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """transformers' top-p: which tokens of each row may be sampled."""
    return torch.isfinite(TopPLogitsWarper(top_p)(None, logits.clone()))


def kernel_draws(probs: torch.Tensor, u: torch.Tensor, top_p: float) -> torch.Tensor:
    """The compiled kernel's tokens for the uniform draws ``u``."""
    from textmetric_bench.features.nucleus_kernel import draw_rows

    out = torch.empty(len(probs), dtype=torch.long)
    table = probs.contiguous().numpy()
    assert draw_rows(table, table.view("uint32"), u.numpy(), top_p, out.numpy()) == -1
    return out


def logit_rows(rows: int, vocab: int, seed: int) -> torch.Tensor:
    """Rows from peaked to flat, some with many exact ties (logits on a coarse grid), one uniform."""
    g = torch.Generator().manual_seed(seed)
    spread = torch.linspace(0.3, 9.0, rows).unsqueeze(1)
    logits = torch.randn(rows, vocab, generator=g) * spread
    logits[::3] = torch.round(logits[::3])  # ties
    logits[1] = 0.0  # every token as probable
    return logits


# peaked ... flat: a nucleus of 4, 637, 2,863 and 9,013 of 12,000 tokens
@pytest.mark.parametrize("spread", [8.0, 3.0, 2.0, 0.6])
def test_every_sampled_token_lies_in_transformers_nucleus(spread):
    vocab, rows = 12_000, 400
    logits = (torch.randn(1, vocab, generator=torch.Generator().manual_seed(1)) * spread).expand(rows, vocab)
    allowed = reference_nucleus(logits[:1], 0.9)[0]
    picked = sample_nucleus(logits, top_p=0.9, temperature=1.0, generator=torch.Generator().manual_seed(2))
    assert allowed[picked].all()
    if spread == 8.0:  # a small nucleus: the draws follow its renormalised probabilities
        probs = torch.softmax(logits[0], -1) * allowed
        expected = (probs / probs.sum())[allowed].numpy()
        seen = np.bincount(picked.numpy(), minlength=vocab)[allowed.numpy()] / rows
        assert np.abs(seen - expected).sum() / 2 < 0.1  # total variation, 400 draws
    else:  # a wide nucleus is not collapsed to its top tokens
        assert len(set(picked.tolist())) > rows // 4


def test_the_nucleus_is_transformers_nucleus():
    """nucleus_edge's nucleus (every token above its last one, and the ties up to its id) holds as many tokens
    as TopPLogitsWarper's, and the same ones where no two probabilities tie."""
    logits = torch.randn(60, 5000, generator=torch.Generator().manual_seed(4)) * torch.linspace(0.5, 6, 60)[:, None]
    probs = torch.softmax(logits, -1)
    for top_p in (0.3, 0.9, 0.95):
        last_value, last_id, mass = nucleus_edge(probs, top_p)
        ids = torch.arange(probs.shape[1])
        ours = (probs > last_value[:, None]) | ((probs == last_value[:, None]) & (ids <= last_id[:, None]))
        assert torch.equal(ours, reference_nucleus(logits, top_p))
        assert np.allclose(mass.numpy(), (probs.double() * ours).sum(-1).numpy(), rtol=1e-12, atol=0)
        assert (mass >= top_p).all() and (mass - probs.double().gather(1, last_id[:, None]).squeeze(1) < top_p).all()


@pytest.mark.parametrize("top_p", [0.05, 0.5, 0.9, 0.95, 1.0])
def test_the_compiled_kernel_draws_what_the_torch_definition_draws(top_p):
    """Token for token, on rows from peaked to flat, with exact ties and a uniform row: the kernel (a histogram
    and the sort of one bin) and draw_in_nucleus (a full stable sort) find the same nucleus and walk it alike."""
    probs = torch.softmax(logit_rows(90, 20_000, seed=5), -1)
    for seed in range(4):
        u = torch.rand(len(probs), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        assert torch.equal(kernel_draws(probs, u, top_p), draw_in_nucleus(probs, u, top_p))
    # the ends of the draw: u = 0 takes the nucleus' first token by id, u just below 1 its last
    last_value, last_id, _ = nucleus_edge(probs, top_p)
    ids = torch.arange(probs.shape[1])
    inside = (probs > last_value[:, None]) | ((probs == last_value[:, None]) & (ids <= last_id[:, None]))
    first = torch.where(inside, ids, probs.shape[1]).amin(-1)
    last = torch.where(inside, ids, -1).amax(-1)
    assert torch.equal(kernel_draws(probs, torch.zeros(len(probs), dtype=torch.float64), top_p), first)
    almost_one = torch.full((len(probs),), 1 - 2 ** -53, dtype=torch.float64)
    assert torch.equal(kernel_draws(probs, almost_one, top_p), last)


def test_ties_at_the_edge_of_the_nucleus_go_to_the_smaller_token_id():
    uniform = torch.zeros(3000, 8)
    draws = sample_nucleus(uniform, top_p=0.3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    # before token 0: 0; before 1: 1/8; before 2: 2/8 < .3; before 3: 3/8: the nucleus is tokens 0, 1 and 2
    assert set(draws.tolist()) == {0, 1, 2}
    assert np.abs(np.bincount(draws.numpy()) / 3000 - 1 / 3).max() < 0.04


def test_a_row_is_drawn_the_same_alone_or_in_any_batch():
    probs = torch.softmax(logit_rows(30, 8000, seed=6), -1)
    u = torch.rand(30, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    together = kernel_draws(probs, u, 0.95)
    alone = torch.cat([kernel_draws(probs[i:i + 1], u[i:i + 1], 0.95) for i in range(30)])
    reversed_ = kernel_draws(probs.flip(0), u.flip(0), 0.95).flip(0)
    assert torch.equal(together, alone) and torch.equal(together, reversed_)


def test_the_nucleus_boundary_is_transformers_and_temperature_flattens():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert reference_nucleus(logits, 0.8).tolist() == [[True, True, False, False]]
    draws = sample_nucleus(logits.expand(2000, 4), top_p=0.8, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert set(draws.tolist()) == {0, 1}
    hot = sample_nucleus(logits.expand(2000, 4), top_p=0.999, temperature=5.0, generator=torch.Generator().manual_seed(0))
    assert set(hot.tolist()) == {0, 1, 2, 3}


def test_the_same_generator_seed_draws_the_same_tokens():
    logits = torch.randn(64, 5000, generator=torch.Generator().manual_seed(3)) * 2
    draw = lambda seed: sample_nucleus(logits, top_p=0.95, temperature=1.0, generator=torch.Generator().manual_seed(seed))
    assert torch.equal(draw(5), draw(5)) and not torch.equal(draw(5), draw(6))


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
def test_on_a_gpu_the_torch_definition_draws_what_the_kernel_draws():
    probs = torch.softmax(logit_rows(40, 20_000, seed=8), -1)
    u = torch.rand(40, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    on_gpu = draw_in_nucleus(probs.cuda(), u.cuda(), 0.95).cpu()
    assert (on_gpu == kernel_draws(probs, u, 0.95)).float().mean() > 0.97  # the GPU's scan rounds otherwise


def test_rows_that_leave_the_batch_keep_the_others_on_their_own_cache(smollm2):
    """Every token the batched, cached sampler drew lies in the nucleus of a plain forward pass over its row:
    a cache misaligned when finished rows leave the batch would soon draw outside it (top_p .5 is narrow).
    Rows end at the first full stop here (the untuned model seldom says EOS), so they leave at different steps."""
    from textmetric_bench.features.lm_sampling import nucleus_mask_sorted, sample_rows

    model, tokenizer = smollm2
    stop = tokenizer.convert_tokens_to_ids(".")
    rows = sample_rows(model, n=12, start_token=tokenizer.bos_token_id, end_token=stop,
                       max_new_tokens=24, top_p=0.5, temperature=1.0, batch_size=12,
                       generator=torch.Generator().manual_seed(11))
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


SAMPLE_IN_A_PROCESS = """if True:
    import json, sys
    import torch
    from textmetric_bench.collections.ifc_generate import sample_corpus
    from textmetric_bench.data.card_schema import Normalisation
    from textmetric_bench.features.lm import load_causal_lm
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
        done = subprocess.run([sys.executable, "-c", SAMPLE_IN_A_PROCESS, json.dumps({**smollm2_cfg, "device": "cpu"}),
                               str(cache_dir), str(seed)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, again, other = run(7), run(7), run(8)
    assert len(first) == 16 and first == again
    assert len(set(first) & set(other)) < 4
