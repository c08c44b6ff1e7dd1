"""The sentence-transformers model, loaded and run by a spec that a helper process can carry out as well.

Why a helper process: the language model needs MKL's conditional numerical reproducibility
(``MKL_CBWR=AVX2,STRICT``, textmetric_bench.numerics), which MKL reads once per process, and that pin costs the
embedder's float64 products a third of their speed on an AVX-512 CPU. The embedder's products are exact
(textmetric_bench.features.exact_gemm), so MKL's branch cannot change a vector: in a process of its own, started
without that pin, MKL takes its fastest branch and the vectors are the same bits (tests/test_embedding_process.py).
Everything else the vectors depend on (ATen's and oneDNN's AVX2 caps) is inherited unchanged.

Measured on the 2-core Intel Xeon (AVX-512), 1,500 texts each, the same vectors bit for bit, two runs each:
fortunes 79-91 -> 106-128 texts/s, clinc150 intents 182-220 -> 276-323 (in-process with the pin against the
helper; docs/reproducibility.md).

One helper serves every embedder of a process (it keeps each model it loaded), started on the first text to
embed, so a fully cached run never starts it. It is a new interpreter reading calls from a pipe (not a
multiprocessing child, which would import the caller's ``__main__`` again: a script without a main guard would
run twice), and it ends when the pipe closes, so with the process that started it, however that one ends.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable

import numpy as np

from textmetric_bench.errors import EmbeddingError
from textmetric_bench.numerics import holds_pin

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSpec:
    """What loading and running a sentence-transformers model takes (picklable: a helper process gets it)."""

    model: str  # the name the user gave, for messages
    path: str
    device: str
    batch_size: int
    exact: bool  # the products made exact (textmetric_bench.features.exact_gemm)
    window: int | None
    long_texts: str
    show_progress: bool = False


_LOADED: dict[ModelSpec, tuple[Any, Any]] = {}  # spec -> (model, tokenizer), in the process that encodes


def loaded(spec: ModelSpec) -> tuple[Any, Any]:
    """The model of ``spec`` and its word-piece tokenizer, loaded once per process."""
    if spec not in _LOADED:
        from sentence_transformers import SentenceTransformer

        from textmetric_bench.console import adopt_library_loggers
        from textmetric_bench.features.long_texts import word_piece_tokenizer
        from textmetric_bench.numerics import torch_follows_the_switches

        problem = torch_follows_the_switches() if spec.device.split(":")[0] == "cpu" else None
        if problem:
            raise EmbeddingError(f"embedder {spec.model!r}: {problem}")
        model = quietly_loaded(SentenceTransformer, spec.path, device=spec.device)
        if spec.exact:
            from textmetric_bench.features.exact_gemm import make_exact

            try:
                make_exact(model)
            except TypeError as exc:
                raise EmbeddingError(
                    f"embedder {spec.model!r}: its products cannot be made exact ({exc}); set "
                    "BENCH_CPU_NUMERICS=native to embed with the BLAS's own"
                ) from exc
        if spec.window is not None and model.max_seq_length != spec.window:
            raise EmbeddingError(
                f"embedder {spec.model!r}: the model reads {model.max_seq_length} word pieces, its "
                f"sentence_bert_config.json says {spec.window}; make them agree"
            )
        _LOADED[spec] = (model, word_piece_tokenizer(spec.path))
        adopt_library_loggers()  # transformers, imported just now, prints through its own handler
    return _LOADED[spec]


def quietly_loaded(load: Any, *args: Any, **kwargs: Any) -> Any:
    """``load(*args, **kwargs)`` without transformers' "Loading weights" bar: a local model loads in a second, and
    the bar was a stray line on the console of every first run (the run's own bars are its progress)."""
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        return load(*args, **kwargs)
    finally:
        if shown:
            transformers_logging.enable_progress_bar()


def encode_by_length(model, texts: list[str], *, batch_size: int, show_progress: bool = False) -> np.ndarray:
    """Vectors of ``texts``, each computed in a batch of texts of its own token length.

    A padded batch changes the shapes every kernel sees, and with them the order of its sums: the same text
    came out ~1e-7 different beside a longer one. Without padding, with the kernels pinned
    (textmetric_bench.numerics) and the products exact (exact_gemm), a text's vector is the same bit for bit
    alone, in any batch, with any number of threads and on any CPU (docs/reproducibility.md).
    """
    by_length: dict[int, list[int]] = {}
    tokenize = model.preprocess if hasattr(model, "preprocess") else model.tokenize  # tokenize: before version 6
    lengths = tokenize(texts)["attention_mask"].sum(dim=1).tolist() if texts else []  # padding is not counted
    for index, length in enumerate(lengths):
        by_length.setdefault(int(length), []).append(index)
    vectors: np.ndarray | None = None
    for indices in by_length.values():
        for start in range(0, len(indices), batch_size):
            chunk = indices[start : start + batch_size]
            batch = model.encode(
                [texts[i] for i in chunk], batch_size=len(chunk), show_progress_bar=show_progress, convert_to_numpy=True
            )
            if vectors is None:
                vectors = np.empty((len(texts), batch.shape[1]), dtype=batch.dtype)
            vectors[chunk] = batch
    return vectors if vectors is not None else np.zeros((0, 0), dtype=np.float32)


def encode_texts(spec: ModelSpec, texts: list[str]) -> np.ndarray:
    """Vectors of ``texts`` by the model of ``spec``: a text longer than the window cut there, or as windows."""
    from textmetric_bench.features.long_texts import encode_windowing_long

    model, tokenizer = loaded(spec)

    def whole(some: list[str]) -> np.ndarray:
        return encode_by_length(model, some, batch_size=spec.batch_size, show_progress=spec.show_progress)

    if spec.long_texts != "windows":
        return whole(texts)
    return encode_windowing_long(
        model, tokenizer, texts, window=spec.window, batch_size=spec.batch_size, encode_whole=whole
    )


def numerics_here() -> dict[str, str | None]:
    """What this process computes with: torch's kernel capability and MKL's branch switch (for tests and logs)."""
    import torch

    return {
        "capability": torch.backends.cpu.get_cpu_capability(),
        "MKL_CBWR": os.environ.get("MKL_CBWR"),
        "threads": str(torch.get_num_threads()),
        "pid": str(os.getpid()),
    }


def gains_from_a_helper(spec: ModelSpec) -> bool:
    """Whether ``spec`` embeds faster in a helper process: exact products on the CPU in a process whose MKL is
    pinned to its AVX2 branch (for the language model's sake). Another branch the user chose is kept."""
    return spec.exact and spec.device.split(":")[0] == "cpu" and holds_pin("MKL_CBWR")


def load_model(spec: ModelSpec) -> None:
    """Load ``spec``'s model in this process (``loaded``), so that its first ``encode_texts`` finds it ready."""
    loaded(spec)


def import_libraries() -> None:
    """Import what loading any model takes (sentence-transformers, torch, transformers: about 5 s in a new
    interpreter), before the model is known (``start_ahead``)."""
    import sentence_transformers  # noqa: F401

    import textmetric_bench.features.exact_gemm  # noqa: F401


#: What the helper process can be asked to do, by name.
CALLS: dict[str, Callable[..., Any]] = {
    "encode": encode_texts,
    "numerics": numerics_here,
    "load": load_model,
    "import": import_libraries,
}


def _send(stream: BinaryIO, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the other end of the pipe closed")
    size = struct.unpack("<Q", head)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other end of the pipe closed mid-message")
    return pickle.loads(data)


#: The helper's program. Ctrl-C in a terminal reaches the whole process group: the parent says "interrupted" once,
#: and the helper ends at once and without a traceback, even while it imports (the parent's exit waits for it).
HELPER_COMMAND = (
    "from textmetric_bench.errors import exit_quietly_on_sigint; exit_quietly_on_sigint(); "
    "from textmetric_bench.features.embedding_process import serve; serve()"
)


def serve() -> None:
    """The helper process: answer calls from standard input until it closes (the parent ended or was killed).

    Messages are length-prefixed pickles; the answers go out on the original standard output, and anything a
    library prints goes to standard error. MKL may take its own branch here (the products are exact).
    """
    if holds_pin("MKL_CBWR"):
        del os.environ["MKL_CBWR"]  # before torch first computes, which is when MKL reads it
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    calls = sys.stdin.buffer
    while True:
        try:
            name, args = _receive(calls)
        except EOFError:  # the caller closed the pipe: end now (an interpreter's teardown with torch takes a second)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        try:
            answer: tuple = (True, CALLS[name](*args))
        except BaseException as exc:  # noqa: B036 - every failure goes back to the caller, which raises it
            answer = (False, exc, traceback.format_exc())
        try:
            try:
                _send(answers, answer)
            except (pickle.PicklingError, TypeError, AttributeError):  # an exception that cannot travel: its text
                _send(answers, (False, EmbeddingError(f"{type(answer[1]).__name__}: {answer[1]}"), answer[2]))
        except BrokenPipeError:  # the caller ended while this call ran: nobody to answer
            os._exit(0)


class EmbeddingHelper:
    """One helper process (a new interpreter: none of this process's torch state, no import of its ``__main__``)
    that runs ``CALLS``; it ends when this process closes the pipe, exits or is killed."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HELPER_COMMAND],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.lock = threading.Lock()
        self.broken = False
        self.unanswered = 0  # calls sent by ``start_call`` whose answers are not read yet
        self.ahead = False  # started by ``start_ahead`` and not asked for a model or a vector since

    def call(self, name: str, *args: Any) -> Any:
        with self.lock:
            self.ahead = False
            try:
                while self.unanswered:  # a background load's answer; whatever it met recurs in this call
                    _receive(self.process.stdout)
                    self.unanswered -= 1
                _send(self.process.stdin, (name, args))
                answer = _receive(self.process.stdout)
            except (EOFError, BrokenPipeError, OSError) as exc:
                self.broken = True
                code = self.process.wait()
                raise EmbeddingError(
                    f"the embedding process ended abruptly (exit code {code}: {exc}); was it "
                    "killed, for example out of memory?"
                ) from exc
            except BaseException:  # Ctrl-C: the answer, or a part of it, is left in the pipe; the next call needs
                self.broken = True  # a new helper, and this one, busy for nobody, is ended (``close``)
                raise
        if not answer[0]:
            error = answer[1]
            error.add_note(f"in the embedding helper process (pid {self.process.pid}):\n{answer[2]}")
            raise error
        return answer[1]

    def encode(self, spec: ModelSpec, texts: list[str]) -> np.ndarray:
        try:
            return self.call("encode", spec, texts)
        except EmbeddingError as exc:
            if self.broken:
                raise EmbeddingError(f"embedder {spec.model!r}: {exc}") from exc
            raise

    def start_call(self, name: str, *args: Any) -> None:
        """Send the call ``name`` and return at once; the next ``call`` reads its answer first."""
        with self.lock:
            self.ahead = self.ahead and name == "import"
            try:
                _send(self.process.stdin, (name, args))
                self.unanswered += 1
            except (BrokenPipeError, OSError):
                self.broken = True

    def numerics(self) -> dict[str, str | None]:
        """``numerics_here`` of the helper process."""
        return self.call("numerics")

    def close(self) -> None:
        """Close the pipe (the helper returns) and wait for it; a helper still busy with a call nobody will read the
        answer of (a model loading for a run that stopped before its first text, texts of an interrupted run) is
        ended at once."""
        with self.lock:
            if self.process.stdin is not None and not self.process.stdin.closed:
                self.process.stdin.close()
            try:
                self.process.wait(timeout=0 if self.unanswered or self.broken else 30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()


_HELPER: EmbeddingHelper | None = None
_LOCK = threading.Lock()


def helper() -> EmbeddingHelper:
    """This process's embedding helper, started on first use (a broken one is replaced)."""
    global _HELPER
    with _LOCK:
        if _HELPER is None or _HELPER.broken:
            if _HELPER is not None:
                _HELPER.close()
            _HELPER = EmbeddingHelper()
        return _HELPER


def close_helper() -> None:
    """End the helper process, if one was started (a later embedding starts a new one)."""
    global _HELPER
    with _LOCK:
        if _HELPER is not None:
            _HELPER.close()
            _HELPER = None


atexit.register(close_helper)


def start_loading(spec: ModelSpec) -> None:
    """Start the helper process and its loading of ``spec``'s model in the background, where a helper embeds
    (``gains_from_a_helper``), so that both overlap the caller's work before its first text. Best effort: a helper
    that cannot start is started again, and reports why, at the first ``encode``. Where ``spec`` embeds in this
    process, a helper started ahead (``start_ahead``) for nothing is ended."""
    if not gains_from_a_helper(spec):
        end_if_started_ahead()
        return
    try:
        helper().start_call("load", spec)
    except Exception as exc:  # noqa: BLE001 - the first encode starts it again and says what is wrong
        log.debug("the embedding helper was not started ahead: %s", exc)


def start_ahead() -> None:
    """Start the helper process and its imports before any model is chosen (``import_libraries``, about 5 s), for
    a command line that will likely embed every text (textmetric_bench.running.ahead); ``start_loading`` and the
    first ``encode`` then find it ready. A helper already there is left alone. Best effort, like ``start_loading``."""
    try:
        with _LOCK:
            if _HELPER is not None and not _HELPER.broken:
                return
        started = helper()
        started.ahead = True
        started.start_call("import")
    except Exception as exc:  # noqa: BLE001 - the first encode starts one and says what is wrong
        log.debug("the embedding helper was not started ahead: %s", exc)


def end_if_started_ahead() -> None:
    """End the helper if ``start_ahead`` started it and nothing asked it for a model or a vector since: the run
    does not embed there (its cache holds the vectors, its task or its metrics need none, or it embeds in this
    process)."""
    with _LOCK:
        unused = _HELPER is not None and _HELPER.ahead
    if unused:
        close_helper()


def encode(spec: ModelSpec, texts: list[str]) -> np.ndarray:
    """``encode_texts`` in a helper process where that is faster (``gains_from_a_helper``), else here."""
    if gains_from_a_helper(spec):
        return helper().encode(spec, texts)
    return encode_texts(spec, texts)
