"""The IFC sampler (textmetric_bench.features.lm_sampling): transformers' nucleus, the KV cache with rows leaving
the batch, and the same texts from the same seed in separate processes."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
# the reference nucleus; imported at collection, it loads no model (the fast tier refuses transformers in tests)
from transformers.generation.logits_process import TopPLogitsWarper

from textmetric_bench.features.lm_sampling import NUCLEUS_CANDIDATES, sample_nucleus


def reference_nucleus(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """transformers' top-p: which tokens of each row may be sampled."""
    return torch.isfinite(TopPLogitsWarper(top_p)(None, logits.clone()))


# peaked ... flat: a nucleus of 4, 637, 2,863 and 9,013 of 12,000 tokens, found in every search tier and by the sort
@pytest.mark.parametrize("spread, tier", [(8.0, 0), (3.0, 0), (2.0, 1), (0.6, 2)])
def test_every_sampled_token_lies_in_transformers_nucleus(spread, tier):
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
    assert np.searchsorted(NUCLEUS_CANDIDATES, int(allowed.sum())) == tier


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
