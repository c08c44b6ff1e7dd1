"""The plain-torch Llama of IFC's fine-tuning and sampling (textmetric_bench.features.lm.llama): transformers' bits,
without transformers' modelling stack in the process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch  # at collection: the fast tier refuses a first import of torch in a test

from textmetric_bench.features.lm.llama import LlamaLM, load_llama, read_config, unsupported
from textmetric_bench.features.lm.adapter import keep_cache_rows

TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 48,
    "intermediate_size": 96,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_hidden_layers": 3,
    "vocab_size": 101,
    "rms_norm_eps": 1e-5,
    "pad_token_id": 2,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "mlp_bias": False,
    "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
    "max_position_embeddings": 64,
}


def tiny_model(seed: int = 0, **changes) -> LlamaLM:
    torch.manual_seed(seed)
    model = LlamaLM({**TINY, **changes})
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.2)  # norms too, so that no weight is a neutral one
    return model.eval()


def padded(rows, pad=2):
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), pad)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for r, row in enumerate(rows):
        ids[r, : len(row)], mask[r, : len(row)] = torch.tensor(row), 1
    return ids, mask


ROWS = [[1, 5, 9, 14, 33, 70, 8], [1, 40, 41], [1, 99, 3, 3, 17]]


def test_a_padded_row_has_the_logits_it_has_alone():
    model = tiny_model()
    ids, mask = padded(ROWS)
    with torch.no_grad():
        together = model(ids, attention_mask=mask).logits
        for r, row in enumerate(ROWS):
            alone = model(torch.tensor([row]), attention_mask=torch.ones(1, len(row), dtype=torch.long)).logits[0]
            assert torch.allclose(together[r, : len(row)], alone, rtol=1e-5, atol=1e-5)
            assert not torch.allclose(together[r, : len(row)], model(torch.tensor([row[::-1]])).logits[0], atol=1e-3)


def test_decoding_with_the_cache_gives_the_logits_of_the_whole_sequence_and_rows_can_leave_it():
    model = tiny_model(1)
    rows = torch.tensor([[1, 7, 8, 9, 10, 11], [1, 20, 21, 22, 23, 24], [1, 30, 31, 32, 33, 34]])
    with torch.no_grad():
        whole = model(rows).logits
        cache = model.new_cache()
        alive = torch.arange(3)
        for t in range(rows.shape[1]):
            if t == 3:  # the middle row ends: it leaves the cache
                alive = torch.tensor([0, 2])
                cache.keep_rows(alive)
            step = model(rows[alive, t : t + 1], cache=cache, use_cache=True, logits_to_keep=1).logits
            assert torch.allclose(step[:, -1], whole[alive, t], rtol=1e-5, atol=1e-5)
        assert cache.get_seq_length() == rows.shape[1] and cache.keys[0].shape[0] == 2


def test_recomputing_activations_changes_no_bit_of_the_gradients():
    ids, mask = padded(ROWS)
    labels = ids.masked_fill(mask == 0, -100)
    grads = []
    for recompute in (False, True):
        model = tiny_model(2).train()
        if recompute:
            model.gradient_checkpointing_enable()
        model(ids, attention_mask=mask, labels=labels).loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*grads))
    assert any(g.abs().sum() > 0 for g in grads[0])


def test_the_loss_is_the_mean_cross_entropy_of_the_next_tokens():
    model = tiny_model(3)
    ids, mask = padded(ROWS)
    labels = ids.masked_fill(mask == 0, -100)
    with torch.no_grad():
        out = model(ids, attention_mask=mask, labels=labels)
    logp = torch.log_softmax(out.logits.double(), dim=-1)
    picked = [logp[r, t, ids[r, t + 1]] for r, row in enumerate(ROWS) for t in range(len(row) - 1)]
    assert float(out.loss) == pytest.approx(-float(torch.stack(picked).mean()), rel=1e-5)


def test_saved_weights_load_back_bit_for_bit_with_the_output_layer_tied(tmp_path):
    model = tiny_model(4)
    model.save_pretrained(tmp_path)
    from safetensors import safe_open

    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        names = set(f.keys())
    assert "lm_head.weight" not in names and "model.embed_tokens.weight" in names  # as transformers saves it
    assert read_config(tmp_path) == TINY
    loaded = load_llama(tmp_path)
    assert loaded.lm_head.weight is loaded.model.embed_tokens.weight
    assert [n for n, _ in loaded.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert all(torch.equal(a, b) for a, b in zip(loaded.parameters(), model.parameters()))
    assert torch.equal(loaded.model.inv_freq, model.model.inv_freq) and not loaded.training


def test_an_untied_output_layer_is_saved_and_loaded_as_its_own_weight(tmp_path):
    model = tiny_model(6, tie_word_embeddings=False)
    model.save_pretrained(tmp_path)
    loaded = load_llama(tmp_path)
    assert loaded.lm_head.weight is not loaded.model.embed_tokens.weight
    assert torch.equal(loaded.lm_head.weight, model.lm_head.weight)
    assert not torch.equal(loaded.lm_head.weight, loaded.model.embed_tokens.weight)


def test_weights_that_are_not_the_models_are_refused_by_name(tmp_path):
    tiny_model(5).save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "num_hidden_layers": 4}))
    with pytest.raises(ValueError, match=r"does not hold this model's weights: missing \['model.layers.3"):
        load_llama(tmp_path)


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"architectures": ["MistralForCausalLM"]}, "architecture"),
        ({"hidden_act": "gelu"}, "activation is 'gelu'"),
        ({"attention_bias": True}, "biases"),
        (
            {"rope_parameters": {"rope_theta": 5e5, "rope_type": "llama3", "factor": 8.0}},
            "rotary embedding is 'llama3'",
        ),
        ({"rope_parameters": None, "rope_theta": 1e4, "rope_scaling": {"type": "linear", "factor": 2.0}}, "'linear'"),
        ({"attention_dropout": 0.1}, "dropout"),
    ],
)
def test_a_model_this_module_cannot_run_is_named_with_the_reason(change, reason):
    assert reason in unsupported({**TINY, **change})
    with pytest.raises(ValueError, match="not a plain Llama model"):
        LlamaLM({**TINY, **change})


def test_a_transformers_4_config_with_rope_theta_is_plain_llama():
    config = {**TINY, "rope_theta": 500.0, "rope_scaling": None}
    del config["rope_parameters"]
    assert unsupported(config) is None and LlamaLM(config).config.rope_theta == 500.0


def test_what_a_config_leaves_out_is_what_transformers_assumes():
    """transformers' LlamaConfig: as many kv heads as heads, eps 1e-6, the output layer not tied."""
    config = {k: v for k, v in TINY.items() if k not in ("num_key_value_heads", "rms_norm_eps", "tie_word_embeddings")}
    model = LlamaLM(config)
    assert model.model.layers[0].self_attn.groups == 1 and model.model.norm.eps == 1e-6
    assert model.lm_head.weight is not model.model.embed_tokens.weight
    assert model.lm_head.weight.shape == (TINY["vocab_size"], TINY["hidden_size"])


# --- against transformers, on SmolLM2 (loads the model: not in the fast tier) ------------------------------------

TEXTS = [f"how do I {w} my card {i}?" for i, w in enumerate(["activate", "top up", "cancel", "freeze", "order"] * 4)]


def test_smollm2_gives_transformers_bits_forward_decoding_and_a_fine_tuning_step(smollm2_cfg, cache_dir):
    from transformers import DynamicCache

    from textmetric_bench.features.lm.training import fine_tune_step
    from textmetric_bench.features.lm.model import load_causal_lm, padded_batch, text_token_ids

    cfg = {**smollm2_cfg, "device": "cpu", "threads": 2}
    theirs, tokenizer = load_causal_lm(cfg, cache_dir)
    ours, _ = load_causal_lm(cfg, cache_dir, plain=True)
    assert isinstance(ours, LlamaLM) and not isinstance(theirs, LlamaLM)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    seqs = [text_token_ids(tokenizer, t, add_eos=True) for t in TEXTS[:6]]
    for batch in (seqs[:3], [seqs[0], seqs[0]]):  # padded (SDPA's mask), then not (its causal flag)
        ids, mask, _ = padded_batch(batch, tokenizer.pad_token_id)
        with torch.no_grad():
            a = theirs.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            b = ours.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        assert torch.equal(a, b)
    with torch.inference_mode():
        caches, step_ids, same = (DynamicCache(), ours.new_cache()), torch.full((4, 1), tokenizer.bos_token_id), True
        for t in range(6):
            la, lb = (
                m(input_ids=step_ids, cache=c, use_cache=True, logits_to_keep=1).logits
                for m, c in zip((theirs, ours), caches)
            )
            same &= torch.equal(la, lb)
            step_ids = la[:, -1].topk(4).indices[:, t % 4 : t % 4 + 1]
            if t == 2:
                for c in caches:
                    keep_cache_rows(c, torch.tensor([0, 3]))
                step_ids = step_ids[[0, 3]]
    assert same
    steps = [
        fine_tune_step(
            m, tokenizer, TEXTS, learning_rate=1e-4, batch_size=8, seed=7, progress=False, recompute_activations=True
        )
        for m in (theirs, ours)
    ]
    assert steps[0].token_loss == steps[1].token_loss
    assert all(torch.equal(a, b) for a, b in zip(theirs.parameters(), ours.parameters()))


GENERATE = """if True:
    import json, sys
    import torch
    from textmetric_bench.features.lm.sampling import sample_corpus
    from textmetric_bench.features.lm.training import fine_tune_step
    from textmetric_bench.features.lm.model import load_causal_lm
    from textmetric_bench.data.card_schema import Normalisation
    cfg, cache = json.loads(sys.argv[1]), sys.argv[2]
    model, tokenizer = load_causal_lm(cfg, cache, plain=True)
    fine_tune_step(model, tokenizer, ["how do I top up my card?"] * 4, learning_rate=1e-4, batch_size=2, seed=1,
                   progress=False, recompute_activations=True)
    texts, _ = sample_corpus(model, tokenizer, 4, token_lengths=[8] * 10, top_p=0.9, temperature=1.0, batch_size=4,
                             seed=3, normalisation=Normalisation(), progress=False)
    heavy = ("transformers.modeling_utils", "transformers.models.llama.modeling_llama", "accelerate", "sympy")
    print(json.dumps([type(model).__name__, len(texts), sorted(m for m in heavy if m in sys.modules)]))
"""


def test_fine_tuning_and_sampling_never_import_transformers_modelling_stack(smollm2_cfg, cache_dir):
    from textmetric_bench.features.lm.model import checkpoint_path

    checkpoint_path(smollm2_cfg, cache_dir)  # converted (that imports transformers' models) outside the process
    done = subprocess.run(
        [sys.executable, "-c", GENERATE, json.dumps({**smollm2_cfg, "device": "cpu"}), str(cache_dir)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    name, texts, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert (name, texts) == ("LlamaLM", 4)
    assert imported == [], imported


def test_a_checkpoint_saved_from_the_plain_model_loads_in_transformers_with_the_same_logits(
    smollm2_cfg, cache_dir, tmp_path
):
    """The IFC checkpoint (``generated/checkpoint``) written from the plain model is a transformers checkpoint: a run
    with ``lm.generation_model=transformers`` resumes from it, and the plain model reads it back bit for bit."""
    from transformers import AutoModelForCausalLM

    from textmetric_bench.features.lm.model import load_causal_lm, padded_batch, save_causal_lm, text_token_ids

    cfg = {**smollm2_cfg, "device": "cpu", "threads": 2}
    ours, tokenizer = load_causal_lm(cfg, cache_dir, plain=True)
    with torch.no_grad():
        ours.model.norm.weight.mul_(1.5)  # weights of its own, not the converted checkpoint's
    save_causal_lm(ours, tokenizer, tmp_path / "checkpoint")
    theirs = AutoModelForCausalLM.from_pretrained(str(tmp_path / "checkpoint"), dtype=torch.float32).eval()
    again, _ = load_causal_lm(cfg, cache_dir, path=tmp_path / "checkpoint", plain=True)
    ids, mask, _ = padded_batch([text_token_ids(tokenizer, t, add_eos=True) for t in TEXTS[:3]], tokenizer.pad_token_id)
    with torch.no_grad():
        logits = [m(input_ids=ids, attention_mask=mask).logits for m in (ours, theirs, again)]
    assert torch.equal(logits[0], logits[1]) and torch.equal(logits[0], logits[2])
    assert all(torch.equal(a, b) for a, b in zip(ours.parameters(), again.parameters()))


def test_a_model_that_is_not_plain_llama_loads_through_transformers_and_says_why(
    smollm2_cfg, cache_dir, tmp_path, caplog
):
    from transformers import GPT2Config, GPT2LMHeadModel

    from textmetric_bench.features.lm.model import load_causal_lm, load_tokenizer

    tokenizer = load_tokenizer(smollm2_cfg, cache_dir)
    torch.manual_seed(0)
    GPT2LMHeadModel(
        GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2)
    ).save_pretrained(tmp_path / "gpt2")
    tokenizer.save_pretrained(tmp_path / "gpt2")
    with caplog.at_level("INFO", logger="textmetric_bench.features.lm.model"):
        model, _ = load_causal_lm(
            {"name": "tiny-gpt2", "path": str(tmp_path / "gpt2"), "device": "cpu"}, cache_dir, plain=True
        )
    assert isinstance(model, GPT2LMHeadModel) and not model.training
    assert (
        "loads through transformers, not as a plain Llama model: its architecture is ['GPT2LMHeadModel']" in caplog.text
    )
