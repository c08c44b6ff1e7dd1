"""IFC fine-tuning without waste: length-bucketed batches, the padding they leave, and threads that change no bit."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch  # at collection: a fast test below uses it, and the fast tier refuses a first import of torch in a test

from textmetric_bench.features.lm.training import TrainingStep, length_bucketed_batches
from textmetric_bench.features.lm.model import auto_threads, generation_threads


def padding_share(lengths, batches) -> float:
    return 1 - sum(lengths) / sum(max(lengths[i] for i in b) * len(b) for b in batches)


def test_bucketed_batches_hold_every_text_once_in_batches_of_similar_length():
    lengths = np.random.default_rng(0).lognormal(2.5, 0.5, 200).astype(int) + 2  # banking77-like token lengths
    batches = length_bucketed_batches(lengths, 16, np.random.default_rng(1))
    assert sorted(i for b in batches for i in b) == list(range(200))
    assert sorted(map(len, batches)) == [8] + [16] * 12
    in_order = [list(range(s, min(s + 16, 200))) for s in range(0, 200, 16)]
    assert padding_share(lengths, batches) < 0.15 < 0.4 < padding_share(lengths, in_order)
    spans = sorted((min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in batches)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(spans, spans[1:]))  # batches do not overlap
    again = length_bucketed_batches(lengths, 16, np.random.default_rng(1))
    other = length_bucketed_batches(lengths, 16, np.random.default_rng(2))
    assert again == batches and other != batches and sorted(other) == sorted(batches)  # only the order is random


def test_the_padding_share_is_what_the_positions_held_besides_tokens():
    assert TrainingStep(2.0, tokens=900, positions=1000, seconds=1.0, token_loss=1.9).padding_share == pytest.approx(
        0.1
    )
    assert TrainingStep(2.0, tokens=0, positions=0, seconds=0.0).padding_share == 0.0


@pytest.mark.parametrize("busy, expected", [(0.3, 4), (1.9, 4), (2.0, 1), (3.5, 1)])
def test_generation_threads_use_every_core_only_while_others_leave_half_of_them_free(busy, expected):
    assert auto_threads(busy, 4, 1) == expected  # busy: the cores other processes keep busy (a probe, tests/test_lm.py)
    assert auto_threads(busy, 4, None) in (4, None)
    assert generation_threads({"generation_threads": 3, "threads": 1}) == 3
    assert generation_threads({"generation_threads": None, "threads": 1}) is None


ONE_STEP = """if True:
    import hashlib, json, sys
    import torch
    from textmetric_bench.features.lm.training import fine_tune_step
    from textmetric_bench.features.lm.model import load_causal_lm
    cfg, cache, threads = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    model, tokenizer = load_causal_lm({**cfg, "threads": threads}, cache)
    texts = [f"how do I {w} my card {i}?" for i, w in enumerate(["activate", "top up", "cancel", "freeze"] * 6)]
    step = fine_tune_step(model, tokenizer, texts, learning_rate=1e-4, batch_size=8, seed=5, progress=False)
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    print(json.dumps([step.loss, digest, torch.get_num_threads()]))
"""


@pytest.mark.slow  # two processes each train a step: 40 s idle, minutes on a busy machine
def test_a_fine_tuning_step_is_bit_identical_with_one_and_two_threads(smollm2, smollm2_cfg, cache_dir):

    def run(threads):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                ONE_STEP,
                json.dumps({**smollm2_cfg, "device": "cpu"}),
                str(cache_dir),
                str(threads),
            ],
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    one, two = run(1), run(2)
    assert one[2] == 1 and two[2] == 2
    assert one[:2] == two[:2] and np.isfinite(one[0])


def test_micro_batches_stay_within_the_budget_and_keep_the_order():
    from textmetric_bench.features.lm.training import micro_batches

    lengths = [3, 4, 4, 5, 9, 9, 30]
    parts = micro_batches(range(7), lengths, budget=16)
    assert [r for part in parts for r in part] == list(range(7))
    assert parts == [[0, 1, 2], [3], [4], [5], [6]]  # 3 x 4 = 12 <= 16; then 2 x 5 > 16 ... a 30 alone
    assert micro_batches(range(7), lengths, budget=1000) == [list(range(7))]


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_batch_in_parts_gives_the_gradient_of_one_pass(smollm2, monkeypatch):
    """Fine-tuning in parts of TRAIN_POSITIONS: the gradient of one pass over the batch, to float32 rounding.
    Compared through plain SGD steps: Adam's first step divides a gradient by its own size, which turns rounding
    in near-zero gradients into whole steps of the learning rate."""
    import torch

    from textmetric_bench.features.lm import training

    monkeypatch.setattr(training, "FUSED_ADAMW", False)  # so that the step makes its optimiser below
    monkeypatch.setattr(torch.optim, "AdamW", lambda params, lr, weight_decay, **kw: torch.optim.SGD(params, lr=lr))

    model, tokenizer = smollm2
    texts = [
        "how do I top up my card?",
        "my card payment was declined twice today, why?",
        "cancel it",
        "where is the new card I ordered last week and when will it arrive at my address?",
    ]

    def one_step(budget):
        monkeypatch.setattr(training, "TRAIN_POSITIONS", budget)
        start = {k: v.clone() for k, v in model.state_dict().items()}
        try:
            step = training.fine_tune_step(
                model, tokenizer, texts, learning_rate=1.0, batch_size=4, seed=0, progress=False
            )
            return step, {k: (v - start[k]).clone() for k, v in model.state_dict().items()}
        finally:
            model.load_state_dict(start)

    whole, parts = one_step(10_000), one_step(24)
    assert whole[0].positions > parts[0].positions  # the parts were padded less, so it did split
    assert whole[0].token_loss == pytest.approx(parts[0].token_loss, rel=1e-5)
    assert whole[0].loss == pytest.approx(parts[0].loss, rel=1e-5)
    for name, delta in whole[1].items():
        torch.testing.assert_close(
            parts[1][name],
            delta,
            rtol=1e-3,
            atol=1e-3 * float(delta.abs().max()) + 1e-12,
            msg=lambda m, name=name: f"{name}: {m}",
        )


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_recomputing_activations_changes_no_bit_fused_adamw_only_rounding_and_the_model_is_left_as_it_was(
    smollm2, monkeypatch
):
    """ifc.recompute_activations trades memory for time only: the weights after a step equal those of keeping the
    activations, bit for bit. FUSED_ADAMW rounds otherwise than the multi-tensor AdamW on some CPUs (our AMD EPYC;
    bit for bit on our Intel Xeon): the same update to float32 rounding. Afterwards the model is in eval mode with
    its cache setting, without checkpointing and with its own embedding forward."""
    import torch

    from textmetric_bench.features.lm import training

    model, tokenizer = smollm2
    texts = [
        "how do I top up my card?",
        "my card payment was declined twice today, why?",
        "cancel it",
        "where is the new card I ordered last week and when will it arrive at my address?",
    ] * 2
    use_cache = model.config.use_cache
    made = []
    adamw = torch.optim.AdamW
    monkeypatch.setattr(
        torch.optim,
        "AdamW",
        lambda params, **kw: made.append("fused" if kw.get("fused") else "multi-tensor") or adamw(params, **kw),
    )

    def one_step(recompute, fused):
        monkeypatch.setattr(training, "FUSED_ADAMW", fused)
        start = {k: v.clone() for k, v in model.state_dict().items()}
        try:
            step = training.fine_tune_step(
                model,
                tokenizer,
                texts,
                learning_rate=1e-4,
                batch_size=4,
                seed=0,
                recompute_activations=recompute,
                progress=False,
            )
            return step, {k: v.clone() for k, v in model.state_dict().items()}
        finally:
            model.load_state_dict(start)

    kept, recomputed, multi_tensor = one_step(False, True), one_step(True, True), one_step(False, False)
    assert made == ["fused", "fused", "multi-tensor"]
    name = "activation" if hasattr(type(model), "is_activation_checkpointing") else "gradient"  # the old name warns
    assert not model.training and not getattr(model, f"is_{name}_checkpointing") and model.config.use_cache == use_cache
    assert "forward" not in vars(model.get_input_embeddings())  # the sparse-gradient forward was for the step only
    assert recomputed[0].token_loss == kept[0].token_loss and recomputed[0].loss == kept[0].loss
    assert [name for name, value in kept[1].items() if not torch.equal(value, recomputed[1][name])] == []
    assert multi_tensor[0].token_loss == pytest.approx(kept[0].token_loss, rel=1e-6)
    start = model.state_dict()
    for name, value in kept[1].items():  # each tensor's update equal to within 1% of its largest element
        update, other = value - start[name], multi_tensor[1][name] - start[name]
        assert float((update - other).abs().max()) <= 0.01 * float(update.abs().max()) + 1e-12, name
    assert any(not torch.equal(v, model.state_dict()[k]) for k, v in kept[1].items())  # the step did train


@pytest.mark.slow  # 3 s alone but 6-22 s within the default suite (after an in-process run, e.g. test_fair_time.py);
# the mechanism on a small tied model stays in the default suite (the next test)
def test_a_tied_embedding_gets_sparse_rows_that_add_up_to_the_dense_gradient(smollm2):
    """The input embedding tied to the output layer gets a sparse gradient during fine-tuning: the shared weight's
    gradient is the dense one to float32 rounding (the same sum in another order; padded batches, so the padding
    row is left out as the dense gradient leaves it out), every other gradient is the same bit for bit, the model's
    own forward is back after the block, and an untied model keeps its dense gradient."""
    import torch

    from textmetric_bench.features.lm import training
    from textmetric_bench.features.lm.model import padded_batch, text_token_ids

    model, tokenizer = smollm2
    embedding = training.sparse_tied_embedding(model)
    assert embedding is model.get_input_embeddings() and embedding.weight is model.get_output_embeddings().weight
    texts = ["how do I top up my card?", "my card my card my card", "cancel it"]
    ids, mask, labels = padded_batch(
        [text_token_ids(tokenizer, t, add_eos=True) for t in texts], tokenizer.pad_token_id
    )
    assert (ids == embedding.padding_idx).any()  # padded, so the padding row is exercised

    def gradients():
        model.zero_grad(set_to_none=True)
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        return grads

    dense = gradients()
    with training.sparse_tied_gradient(model) as tied:
        assert tied is embedding
        sparse = gradients()
    assert "forward" not in vars(embedding)
    shared = "model.embed_tokens.weight"
    assert sparse[shared].layout == torch.strided and sparse[shared].shape == dense[shared].shape
    torch.testing.assert_close(sparse[shared], dense[shared], rtol=1e-5, atol=1e-7)
    assert float(sparse[shared].abs().sum()) > 0
    assert [name for name in dense if name != shared and not torch.equal(dense[name], sparse[name])] == []

    untied = torch.nn.Module()
    untied.get_input_embeddings = lambda: torch.nn.Embedding(4, 2)
    untied.get_output_embeddings = lambda: torch.nn.Linear(2, 4, bias=False)
    assert training.sparse_tied_embedding(untied) is None


class TiedLM(torch.nn.Module):
    """A small causal LM in plain torch whose input embedding is its output layer's weight, as in SmolLM2."""

    def __init__(self, vocab: int = 4096, hidden: int = 64):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(vocab, hidden, padding_idx=0)
        self.mix = torch.nn.Linear(hidden, hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.embed.weight

    def get_input_embeddings(self):
        return self.embed

    def get_output_embeddings(self):
        return self.head

    def loss(self, ids):
        logits = self.head(torch.tanh(self.mix(self.embed(ids[:, :-1]))))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def test_the_tied_embeddings_rows_go_into_the_output_layers_gradient_without_a_second_vocabulary_sized_tensor():
    """Autograd accumulates the output layer's gradient of the shared weight alone, and the embedding's rows are
    added into that same tensor in place afterwards: autograd's own sum of the two made a second tensor the size of
    the vocabulary (108 MiB for SmolLM2) at the end of every backward pass. The gradient is the dense one to float32
    rounding, padding rows get nothing, and rows that arrive first (an embedding not used by the loss's output
    layer) start the gradient."""
    from textmetric_bench.features.lm.training import sparse_tied_gradient

    model = TiedLM()
    weight = model.embed.weight
    ids = torch.randint(1, 4096, (4, 12), generator=torch.Generator().manual_seed(1))
    ids[0, -3:] = 0  # padding

    model.loss(ids).backward()
    dense, weight.grad = weight.grad.clone(), None
    with sparse_tied_gradient(model) as tied:
        assert tied is model.embed
        loss = model.loss(ids)
        accumulated = []  # what autograd accumulates for the shared weight: a copy, and where it lies (a reference
        # to the tensor itself would keep autograd from taking it over)
        hook = weight.register_hook(lambda grad: accumulated.append((grad.clone(), grad.data_ptr())))
        loss.backward()
        hook.remove()
        same_tensor = weight.grad.data_ptr() == accumulated[0][1]
        tied_grad, weight.grad = weight.grad.clone(), None
        model.embed(ids).sum().backward()
        rows = weight.grad.clone()
    assert len(accumulated) == 1 and same_tensor
    added = torch.nonzero((tied_grad != accumulated[0][0]).any(dim=1)).reshape(-1).tolist()
    tokens = set(ids[ids > 0].tolist())
    assert set(added) <= tokens and len(added) >= 0.9 * len(tokens)  # only the rows of the batch's tokens
    np.testing.assert_allclose(tied_grad.numpy(), dense.numpy(), rtol=1e-5, atol=1e-7)
    assert float(tied_grad[ids[ids > 0]].abs().sum()) > 0
    counts = torch.bincount(ids.reshape(-1), minlength=weight.shape[0]).float()
    counts[0] = 0
    np.testing.assert_array_equal(rows.numpy(), counts[:, None].expand_as(weight).numpy())


def default_plan():
    from textmetric_bench.collections.ifc_generate import GenerationPlan

    return GenerationPlan(
        source="banking77",
        lm="m",
        seed=0,
        iterations=4,
        train_per_step=200,
        corpus_size=200,
        learning_rate=1e-4,
        train_batch_size=16,
        top_p=0.95,
        temperature=1.0,
        sample_batch_size=256,
        length_quantile=0.95,
        max_sample_rounds=4,
    )


def test_the_embedding_gradient_the_loss_head_and_the_sampler_are_part_of_what_a_saved_corpus_must_share():
    from textmetric_bench.collections.ifc_generate import GenerationPlan
    from textmetric_bench.features.lm.sampling import SAMPLER
    from textmetric_bench.features.lm.training import EMBEDDING_GRADIENT, LOSS_HEAD

    plan = default_plan()
    assert plan.fingerprint()["embedding_gradient"] == EMBEDDING_GRADIENT
    assert plan.fingerprint()["loss_head"] == LOSS_HEAD
    assert plan.fingerprint()["sampler"] == SAMPLER == "kv-cache-nucleus/2"
    assert GenerationPlan(**{**plan.__dict__, "sampler": "kv-cache-nucleus/1"}).fingerprint() != plan.fingerprint()
    assert GenerationPlan(**{**plan.__dict__, "embedding_gradient": "dense"}).fingerprint() != plan.fingerprint()
    assert GenerationPlan(**{**plan.__dict__, "loss_head": "own"}).fingerprint() != plan.fingerprint()


def test_recomputing_activations_is_not_part_of_what_a_saved_corpus_must_share():
    from textmetric_bench.collections.ifc_generate import GenerationPlan

    plan = default_plan()
    other = GenerationPlan(
        **{**plan.__dict__, "recompute_activations": not plan.recompute_activations, "iterations": 6}
    )
    assert other.fingerprint() == plan.fingerprint()
    assert GenerationPlan(**{**plan.__dict__, "learning_rate": 2e-4}).fingerprint() != plan.fingerprint()


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_loss_in_parts_is_the_models_own_loss_and_adds_the_output_gradient_in_place(smollm2):
    """``head_loss`` (the output layer's loss 64 positions at a time, ``chunked_head_loss``) gives the model's own
    loss and gradients to float32 rounding (measured: 2.5e-6 of the loss, 1.4e-5 of a gradient's largest element),
    over a first part of a batch and a second one that adds to its gradients."""
    import torch

    from textmetric_bench.features.lm import training
    from textmetric_bench.features.lm.model import padded_batch, text_token_ids

    model, tokenizer = smollm2
    texts = [
        "how do I top up my card?",
        "my card payment was declined twice today, why?",
        "cancel it",
        "where is the new card I ordered last week and when will it arrive at my address?",
    ] * 20
    batch = padded_batch([text_token_ids(tokenizer, t, add_eos=True) for t in texts], tokenizer.pad_token_id)
    assert int((batch[2][:, 1:] != -100).sum()) > 3 * training.LOSS_POSITIONS  # several parts
    ours = training.head_loss(model, tuple(t[:2] for t in batch))

    def gradients(loss_of):
        model.zero_grad(set_to_none=True)
        first = loss_of(*batch)
        first.backward()
        second = loss_of(*(t[:3] for t in batch))
        second.backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        return float(first.detach()), float(second.detach()), grads

    model.train()
    try:
        own, chunked = gradients(training.own_loss(model)), gradients(ours)
    finally:
        model.eval()
    assert chunked[0] == pytest.approx(own[0], rel=1e-5) and chunked[1] == pytest.approx(own[1], rel=1e-5)
    assert chunked[:2] != own[:2]  # the loss in parts did run (other sums, other bits)
    for name, grad in own[2].items():
        torch.testing.assert_close(
            chunked[2][name], grad, rtol=0, atol=1e-4 * float(grad.abs().max()), msg=lambda m, name=name: f"{name}: {m}"
        )


@pytest.mark.parametrize("keep_bytes", [64 * 2**20, 0], ids=["probabilities kept", "logits again"])
def test_the_loss_in_parts_is_cross_entropy_and_adds_to_a_gradient_already_there_in_place(keep_bytes):
    """``chunked_head_loss`` against torch's cross-entropy in float64, in parts that do not divide the positions;
    with no gradient yet the output weight gets a dense one through autograd, and with one there the backward pass
    adds into it and hands autograd nothing for the weight (no second vocabulary-sized tensor). The same whether
    the forward pass keeps the probabilities or the backward pass computes the logits again."""
    import torch

    from textmetric_bench.features.lm.training import chunked_head_loss

    rng = torch.Generator().manual_seed(0)
    hidden = torch.randn(23, 8, generator=rng, dtype=torch.float64)
    weight = torch.randn(50, 8, generator=rng, dtype=torch.float64)
    targets = torch.randint(0, 50, (23,), generator=rng)

    def run(loss_of, start=None):
        h, w = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        w.grad = None if start is None else start.clone()
        arrived = []
        w.register_hook(lambda g: arrived.append(g))
        loss = loss_of(h, w)
        (3 * loss).backward()
        return loss.detach(), h.grad, w.grad, arrived

    reference = lambda h, w: torch.nn.functional.cross_entropy(h @ w.T, targets)
    chunked = lambda h, w: chunked_head_loss(h, w, targets, chunk=5, keep_bytes=keep_bytes)
    start = torch.randn(50, 8, generator=rng, dtype=torch.float64)
    for given in (None, start):
        want, got = run(reference, given), run(chunked, given)
        assert got[0].dtype == torch.float32  # the loss is handed back in float32
        np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=1e-7)
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[2].numpy(), want[2].numpy(), rtol=1e-10, atol=1e-12)
        assert len(want[3]) == len(got[3]) == 1 and want[3][0] is not None
        assert (got[3][0] is None) is (given is not None)  # nothing handed to autograd: added in place


def test_the_loss_in_parts_keeps_the_probabilities_only_within_its_budget_and_gives_the_same_bits_either_way():
    """Keeping the probabilities from the forward pass saves computing the logits again in the backward pass (a
    third of the output layer's products); the gradients are the same bits as with the logits computed again."""
    import torch

    from textmetric_bench.features.lm import training

    rng = torch.Generator().manual_seed(0)
    hidden, weight = torch.randn(37, 16, generator=rng), torch.randn(300, 16, generator=rng)
    targets = torch.randint(0, 300, (37,), generator=rng)

    def gradients(keep_bytes):
        h, w = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        loss = training.chunked_head_loss(h, w, targets, chunk=8, keep_bytes=keep_bytes)
        saved = [tuple(t.shape) for t in loss.grad_fn.saved_tensors]
        loss.backward()
        return saved, (loss.detach(), h.grad, w.grad)

    (saved_kept, kept), (saved_again, again) = gradients(37 * 300 * 4), gradients(37 * 300 * 4 - 1)
    assert saved_kept == [(37, 16), (300, 16), (37, 300)] and saved_again == [(37, 16), (300, 16)]
    for a, b in zip(kept, again):
        assert torch.equal(a, b)
    assert training.KEPT_PROBABILITIES_BYTES >= training.TRAIN_POSITIONS * 49152 * 4  # SmolLM2's pass fits


def test_a_model_whose_logits_are_more_than_a_linear_map_keeps_its_own_loss(smollm2, caplog):
    """A model that scales its logits (here a fake: a forward hook doubling SmolLM2's) fails the check on the
    sample and keeps its own loss, with a warning; an output layer with a bias is not tried."""
    from types import SimpleNamespace

    import torch

    from textmetric_bench.features.lm import training
    from textmetric_bench.features.lm.model import padded_batch, text_token_ids

    model, tokenizer = smollm2
    sample = padded_batch(
        [text_token_ids(tokenizer, t, add_eos=True) for t in ["cancel it", "my card"]], tokenizer.pad_token_id
    )
    head = model.get_output_embeddings()
    hook = head.register_forward_hook(lambda module, args, out: out * 2)  # the fake
    try:
        with torch.no_grad():
            loss_of = training.head_loss(model, sample)
            assert float(loss_of(*sample)) == float(
                model(input_ids=sample[0], attention_mask=sample[1], labels=sample[2]).loss
            )
    finally:
        hook.remove()
    assert "own loss" in caplog.text

    biased = torch.nn.Module()
    biased.get_output_embeddings = lambda: torch.nn.Linear(2, 4, bias=True)
    biased.get_decoder = lambda: torch.nn.Identity()
    calls = []
    biased.forward = lambda **kw: calls.append(kw) or SimpleNamespace(loss=0.0)
    training.head_loss(biased, sample)(*sample)
    assert calls and set(calls[0]) == {"input_ids", "attention_mask", "labels"}
