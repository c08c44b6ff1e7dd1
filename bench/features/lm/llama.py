"""A Llama decoder in plain torch, for IFC's fine-tuning and sampling.

It runs the operations of transformers' ``LlamaForCausalLM`` with SDPA attention (transformers 5.24), in
the same order and on tensors of the same layout, so its logits, gradients and sampled tokens are the same
bits (tested against transformers on SmolLM2: tests/test_llama.py). What it saves is the import:
transformers' modelling stack (``transformers.modeling_utils``) pulls in ``torch.distributed.tensor`` with
sympy, accelerate with boto3, and scipy, about 130 MiB of every process that loads a model that way, which a
fine-tuning step's peak (weights, gradients and AdamW's two moments: 2 GiB before any activation) cannot
afford under the run's 3 GB goal.

It covers the configurations transformers' Llama code runs as plain Llama: SiLU, no biases, the default
rotary embedding, no attention dropout. ``unsupported(config)`` names what else a config asks for, and
``textmetric_bench.features.lm.model.load_causal_lm`` then loads the model through transformers.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

import torch
from torch import nn
from torch.nn import functional as F

ARCHITECTURE = "LlamaForCausalLM"


def _rope(config: Mapping[str, Any]) -> tuple[str, float | None]:
    """(rope type, theta) from a transformers 5 config (``rope_parameters``) or a 4.x one (``rope_theta``)."""
    params = config.get("rope_parameters") or {}
    scaling = config.get("rope_scaling") or {}
    kind = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    return str(kind), params.get("rope_theta", config.get("rope_theta"))


def unsupported(config: Mapping[str, Any]) -> str | None:
    """Why this module cannot run the model of ``config`` (a parsed config.json), or None when it can."""
    kind, theta = _rope(config)
    checks = (
        (
            config.get("architectures") == [ARCHITECTURE] and config.get("model_type") == "llama",
            f"its architecture is {config.get('architectures')}, not [{ARCHITECTURE!r}]",
        ),
        (config.get("hidden_act", "silu") == "silu", f"its activation is {config.get('hidden_act')!r}"),
        (not config.get("attention_bias") and not config.get("mlp_bias"), "it has biases"),
        (kind == "default" and theta is not None, f"its rotary embedding is {kind!r}"),
        (not config.get("attention_dropout"), "it has attention dropout"),
        (config.get("pretraining_tp", 1) == 1, "it sets pretraining_tp"),
    )
    return next((why for ok, why in checks if not ok), None)


class Linear(nn.Linear):
    """``nn.Linear`` whose weight is left uninitialised: it is loaded (or set) after construction. (Initialising it,
    or building the model on the meta device instead, costs time, or imports torch's dynamo compiler for the meta
    kernels.)"""

    def reset_parameters(self) -> None:
        pass


class Embedding(nn.Embedding):
    """``nn.Embedding`` left uninitialised, as ``Linear``."""

    def reset_parameters(self) -> None:
        pass


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, groups: int):
    """(batch, kv heads, positions, dim) -> (batch, kv heads x groups, positions, dim), each kv head repeated."""
    batch, heads, positions, dim = x.shape
    if groups == 1:
        return x
    return x[:, :, None].expand(batch, heads, groups, positions, dim).reshape(batch, heads * groups, positions, dim)


class KVCache:
    """Keys and values of the positions seen so far, one pair per layer, grown by concatenation; rows of the
    batch that end leave it (``keep_rows``)."""

    def __init__(self, layers: int):
        self.keys: list = [None] * layers
        self.values: list = [None] * layers

    def update(self, layer: int, key, value):
        if self.keys[layer] is None:
            self.keys[layer] = torch.tensor([], dtype=key.dtype, device=key.device)
            self.values[layer] = torch.tensor([], dtype=value.dtype, device=value.device)
        self.keys[layer] = torch.cat([self.keys[layer], key], dim=-2)
        self.values[layer] = torch.cat([self.values[layer], value], dim=-2)
        return self.keys[layer], self.values[layer]

    def get_seq_length(self) -> int:
        keys = self.keys[0]
        return 0 if keys is None or keys.numel() == 0 else keys.shape[-2]

    def keep_rows(self, indices) -> None:
        if self.get_seq_length() > 0:
            self.keys = [k[indices, ...] for k in self.keys]
            self.values = [v[indices, ...] for v in self.values]


class Attention(nn.Module):
    def __init__(self, c: SimpleNamespace, layer: int):
        super().__init__()
        self.layer, self.head_dim = layer, c.head_dim
        self.groups = c.num_attention_heads // c.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask, cache):
        shape = (*x.shape[:-1], -1, self.head_dim)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.k_proj(x).view(shape).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        if cache is not None:
            k, v = cache.update(self.layer, k, v)
        q_len, extra = q.shape[2], {}
        if self.groups > 1:
            if mask is None and k.shape[-1] == v.shape[-1] <= 256:
                extra["enable_gqa"] = True
            elif q_len == 1:  # one query: the heads sharing a kv head become its queries
                q = q.reshape(q.shape[0], q.shape[1] // self.groups, self.groups, q.shape[-1])
                if mask.shape[1] != 1:
                    mask = mask.reshape(mask.shape[0], mask.shape[1] // self.groups, self.groups, mask.shape[-1])
            else:
                k, v = repeat_kv(k, self.groups), repeat_kv(v, self.groups)
        is_causal = q_len > 1 and mask is None
        if is_causal and k.shape[2] > q_len:
            k, v = k[:, :, :q_len], v[:, :, :q_len]
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=0.0, scale=self.scaling, is_causal=is_causal, **extra
        )
        out = out.reshape(out.shape[0], -1, q_len, v.shape[-1]).transpose(1, 2).contiguous()
        return self.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class MLP(nn.Module):
    def __init__(self, c: SimpleNamespace):
        super().__init__()
        self.gate_proj = Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c: SimpleNamespace, layer: int):
        super().__init__()
        self.self_attn = Attention(c, layer)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x, cos, sin, mask, cache):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


def sdpa_mask(padding, q_len: int, offset: int):
    """SDPA's boolean mask for right-padded rows (``padding``: batch x positions, 1 for a token), or None when
    SDPA's own causal flag says the same (no padding, and one query or as many queries as keys)."""
    padding = padding.to(torch.bool)
    kv_len = padding.shape[-1]
    if (q_len == 1 or kv_len == q_len) and bool(padding.all()):
        return None
    if offset == 0 and bool(padding[:, :q_len].all()) and not bool(padding[:, q_len:].any()):
        return None
    queries = torch.arange(q_len, device=padding.device) + offset
    keys = torch.arange(kv_len, device=padding.device)
    causal = keys[None, None, None, :] <= queries[None, None, :, None]
    rows = torch.arange(padding.shape[0], device=padding.device)[:, None, None, None]
    return (causal.new_ones(()) & causal & padding[rows, keys[None, None, None, :]]).expand(
        padding.shape[0], -1, q_len, kv_len
    )


class Recomputed(torch.autograd.Function):
    """A decoder layer whose activations are not kept: its forward pass runs without autograd, and the backward
    pass runs it again with autograd and back-propagates through that (reentrant activation checkpointing).

    ``torch.utils.checkpoint`` would do the same, but its first call imports torch's dynamo compiler and with it
    ``torch.distributed.tensor`` and sympy: about 100 MiB of the fine-tuning process (docs/performance.md). The
    gradients are the same bits either way (tested against transformers, which checkpoints through torch's)."""

    @staticmethod
    def forward(ctx, layer, x, *rest):
        ctx.layer, ctx.rest = layer, rest
        ctx.save_for_backward(x)
        return layer(x, *rest)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_(True)
        with torch.enable_grad():
            out = ctx.layer(x, *ctx.rest)
            # d(sum(out * grad)) / d(out) is grad exactly (times 1.0); torch.autograd.backward(out, grad) would do
            # the same, and import sympy on its first call
            (out * grad).sum().backward()
        return (None, x.grad, *([None] * len(ctx.rest)))


class Decoder(nn.Module):
    inv_freq: torch.Tensor  # a buffer (register_buffer), typed for the checker

    def __init__(self, c: SimpleNamespace):
        super().__init__()
        self.embed_tokens = Embedding(c.vocab_size, c.hidden_size, c.pad_token_id)
        self.layers = nn.ModuleList(DecoderLayer(c, i) for i in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.register_buffer("inv_freq", self.inverse_frequencies(c), persistent=False)
        self.checkpointing = False

    @staticmethod
    def inverse_frequencies(c: SimpleNamespace):
        return 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.float) / c.head_dim))

    def forward(self, input_ids, attention_mask=None, cache: KVCache | None = None, use_cache: bool | None = None):
        x = self.embed_tokens(input_ids)
        past = cache.get_seq_length() if cache is not None else 0
        positions = (torch.arange(x.shape[1], device=x.device) + past).unsqueeze(0)
        mask = None if attention_mask is None else sdpa_mask(attention_mask, x.shape[1], past)
        freqs = positions[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        recompute = self.checkpointing and self.training and torch.is_grad_enabled() and x.requires_grad
        for layer in self.layers:
            if recompute:
                x = Recomputed.apply(layer, x, cos, sin, mask, cache)
            else:
                x = layer(x, cos, sin, mask, cache)
        return SimpleNamespace(last_hidden_state=self.norm(x), cache=cache)


class LlamaLM(nn.Module):
    """The causal LM: the decoder (``model``) and the output layer (``lm_head``, tied to the input embedding when
    the config says so), with the parts of transformers' interface that IFC uses."""

    supports_gradient_checkpointing = True

    def __init__(self, config: Mapping[str, Any]):
        super().__init__()
        reason = unsupported(config)
        if reason is not None:
            raise ValueError(f"not a plain Llama model: {reason}")
        self.raw_config = dict(config)
        c = SimpleNamespace(**config)
        c.head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        c.rope_theta = _rope(config)[1]
        # what transformers' LlamaConfig assumes of a config.json that leaves them out
        c.num_key_value_heads = config.get("num_key_value_heads") or config["num_attention_heads"]
        c.rms_norm_eps = config.get("rms_norm_eps", 1e-6)
        c.pad_token_id = config.get("pad_token_id")
        c.use_cache = config.get("use_cache", True)
        c.tie_word_embeddings = config.get("tie_word_embeddings", False)
        self.config = c
        self.model = Decoder(c)
        self.lm_head = Linear(c.hidden_size, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def get_output_embeddings(self):
        return self.lm_head

    def get_decoder(self):
        return self.model

    def new_cache(self) -> KVCache:
        return KVCache(len(self.model.layers))

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs: Mapping[str, Any] | None = None):
        """Recompute each decoder layer's activations in the backward pass (``Recomputed``; transformers' arguments
        for torch's checkpointing are accepted and have no use here)."""
        self.model.checkpointing = True

    def gradient_checkpointing_disable(self):
        self.model.checkpointing = False

    def forward(
        self,
        input_ids,
        attention_mask=None,
        labels=None,
        cache: KVCache | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int = 0,
    ):
        hidden = self.model(input_ids, attention_mask, cache=cache).last_hidden_state
        logits = self.lm_head(hidden[:, -logits_to_keep:, :] if logits_to_keep else hidden)
        loss = None
        if labels is not None:  # the mean cross-entropy of every labelled next token, as transformers computes it
            targets = F.pad(labels, (0, 1), value=-100)[:, 1:]
            loss = F.cross_entropy(
                logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1).to(logits.device), ignore_index=-100
            )
        return SimpleNamespace(logits=logits, loss=loss, cache=cache)

    def save_pretrained(self, directory: Path | str) -> None:
        """The weights as transformers names them (``model.safetensors``, a tied output layer left out) and the
        config: a directory transformers loads as well."""
        from safetensors.torch import save_file

        directory = Path(directory)
        state = {
            name: tensor.detach().contiguous()
            for name, tensor in self.state_dict().items()
            if not (name == "lm_head.weight" and self.config.tie_word_embeddings)
        }
        save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
        (directory / "config.json").write_text(
            json.dumps(self.raw_config, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )


def read_config(directory: Path | str) -> dict:
    return json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))


def load_llama(directory: Path | str, device: str | torch.device = "cpu") -> LlamaLM:
    """The float32 model saved in ``directory`` (config.json and model.safetensors, as transformers saves them),
    in eval mode on ``device``. The weights are read from a memory map, copied only when they change."""
    from safetensors.torch import load_file

    directory = Path(directory)
    config = read_config(directory)
    model = LlamaLM(config)
    state = {
        name: tensor if tensor.dtype == torch.float32 else tensor.float()
        for name, tensor in load_file(str(directory / "model.safetensors")).items()
    }
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    tied = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ValueError(
            f"{directory / 'model.safetensors'} does not hold this model's weights: "
            f"missing {sorted(set(missing) - tied)[:5]}, unexpected {sorted(unexpected)[:5]}"
        )
    if model.config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    model.to(device)
    model.eval()
    return model
