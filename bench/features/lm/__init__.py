"""The causal language model: the one package that touches torch, transformers and CTranslate2 beyond their public
use, and its one adapter for their internals (``adapter``, tested against the pinned versions).

What the rest of the harness asks of a language model, and where it is done:

- **load**: ``model.load_causal_lm`` and ``model.load_tokenizer`` (the GGUF converted once into a cached
  checkpoint, ``model.converted_checkpoint``): transformers' model classes; CTranslate2 (``ct2``) for the LM
  metrics' scores (``lm.engine``); ``model.thread_choice`` picks the threads; ``settings.LMSettings`` is the typed
  ``lm`` block every function here takes;
- **score**: per-text log-probabilities for metrics (``scores``, the entry point ``textmetric_bench.lm_scorer``),
  batched in worker processes (``workers``);
- **train step**: one fine-tuning epoch over texts (``training.fine_tune_step``: ``torch.optim.AdamW(fused=True)``,
  activations recomputed by transformers' checkpointing on ``torch.utils.checkpoint``);
- **sample**: nucleus sampling with a KV cache (``sampling.sample_rows``) and a corpus of distinct normalised texts
  from it (``sampling.sample_corpus``).

IFC's collection code (``textmetric_bench.collections.ifc_generate``) keeps its plan, its corpora on disk and its
resume, and calls the train step and the sampler; the generated corpora (``textmetric_bench.collections.generated``)
do the same.
"""
