"""CPU numerics that do not depend on the machine: the switches that pin the float32 kernels to one instruction set.

Math libraries pick their kernels by the CPU they run on (MKL's GEMM, PyTorch's vectorised ATen kernels and the
oneDNN ones it calls, OpenBLAS's under numpy and scipy; AVX2 or AVX-512, Intel or AMD), and each kernel sums in its
own order: the same text embedded on two of our machines differed by ~1e-7, which MAUVE's k-means and CLASSIFIER's
split amplify into a different table. The embedder's matrix products are therefore exact
(textmetric_bench.features.exact_gemm), which no BLAS can reorder; what remains are elementwise kernels and
reductions, pinned here by each library's documented switch: ATen's capability cap (``ATEN_CPU_CAPABILITY``),
oneDNN's ISA cap (``ONEDNN_MAX_CPU_ISA``), OpenBLAS's core type (``OPENBLAS_CORETYPE``, for numpy and scipy) and
MKL's conditional numerical reproducibility (``MKL_CBWR``: its AVX2 branch, ``STRICT`` so that thread counts do
not matter; guaranteed by MKL on Intel CPUs only, and used by the language model, not by the embedder). They are
read when each library first loads or computes, so the package sets them when it is imported (a value the user
set is kept; docs/reproducibility.md).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

#: The switches and the values that make float32 CPU results the same on every AVX2 or AVX-512 machine.
PINNED = {
    "MKL_CBWR": "AVX2,STRICT",
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
}
#: ``BENCH_CPU_NUMERICS=native`` leaves every library its own choice (faster on AVX-512, machine-dependent).
OPT_OUT = "BENCH_CPU_NUMERICS"
PINNED_LABEL, NATIVE_LABEL = "avx2-exact", "native"
#: Part of a pinned embedding's cache key: the version of the embedder's exact products
#: (textmetric_bench.features.exact_gemm); vectors of another version are never mixed in.
EXACT_PRODUCTS = "exact-gemm/1"
#: OpenBLAS's name of the core type pinned above, as threadpoolctl reports it.
OPENBLAS_PINNED = "Haswell"


@lru_cache(maxsize=None)
def _cpuinfo(field: str) -> str:
    """The value of ``field`` in Linux's /proc/cpuinfo (its first processor), '' where it cannot be read."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":")[0].strip() == field:
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return ""


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this CPU (empty where /proc/cpuinfo cannot be read)."""
    return frozenset(_cpuinfo("flags").split())


def cpu_vendor() -> str:
    """``GenuineIntel``, ``AuthenticAMD``, ... ('' where /proc/cpuinfo cannot be read)."""
    return _cpuinfo("vendor_id")


def pin_cpu_numerics() -> None:
    """Set the switches of PINNED that the user did not set (on x86 CPUs with AVX2 and FMA, unless opted out)."""
    if os.environ.get(OPT_OUT, "").strip().lower() == NATIVE_LABEL or not {"avx2", "fma"} <= cpu_flags():
        return
    for name, value in PINNED.items():
        os.environ.setdefault(name, value)


#: CTranslate2's own switches (``lm.engine=ctranslate2``, textmetric_bench.features.lm.ct2): its kernels (softmax,
#: layer norm, ...) dispatch by ``CT2_FORCE_CPU_ISA``, and its float32 GEMM goes to MKL only on Intel CPUs unless
#: ``CT2_USE_MKL=1`` (elsewhere to its bundled oneDNN). Forcing MKL everywhere lets ``MKL_CBWR`` above pin the GEMM
#: too; oneDNN, where a build lacks MKL, is capped by ``ONEDNN_MAX_CPU_ISA``. Not part of ``numerics_label``:
#: they change LM scores only when that engine is chosen, and its scores are cached under its own key.
CT2_PINNED = {"CT2_FORCE_CPU_ISA": "AVX2", "CT2_USE_MKL": "1"}


def pin_ctranslate2_numerics() -> None:
    """Set the switches of CT2_PINNED the user did not set, when torch's are pinned (``numerics_label``).

    CTranslate2 reads them once, on its first computation, so this runs before it is imported. Why: its PyPI
    wheel picks AVX-512 kernels and, off Intel, oneDNN's GEMM by itself, so the same text would score
    differently on our AMD and Intel machines; pinned, it computes what it computes on an AVX2 Intel CPU.
    """
    if numerics_label() == PINNED_LABEL and holds_pin("MKL_CBWR"):
        for name, value in CT2_PINNED.items():
            os.environ.setdefault(name, value)


#: The switches an embedding depends on. Not MKL_CBWR: the embedder's products are exact, whatever MKL's branch.
EMBEDDING_SWITCHES = tuple(name for name in PINNED if name != "MKL_CBWR")


def holds_pin(name: str) -> bool:
    """Whether the switch ``name`` of PINNED holds its pinned value (spaces and case aside)."""
    return os.environ.get(name, "").replace(" ", "").upper() == PINNED[name].upper()


def numerics_label() -> str:
    """``avx2-exact`` when every switch an embedding depends on holds its pinned value, else ``native``: part of
    an embedding's cache key and of the gate's baseline."""
    return PINNED_LABEL if all(holds_pin(name) for name in EMBEDDING_SWITCHES) else NATIVE_LABEL


def torch_follows_the_switches() -> str | None:
    """None if torch computes with the pinned kernels (or none are pinned), else what is wrong.

    ATen reads its cap when it first dispatches a kernel: a process that computed with torch before this package
    was imported keeps the machine's own kernels whatever the environment says now.
    """
    if numerics_label() != PINNED_LABEL:
        return None
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    if capability.upper() != "AVX2":
        return (
            f"torch computes with its {capability} kernels, not the pinned AVX2 ones: it ran before "
            f"textmetric_bench was imported. Import textmetric_bench first (or set {', '.join(PINNED)} in the "
            f"environment before Python starts), or set {OPT_OUT}=native to accept machine-dependent vectors"
        )
    return None


def openblas_follows_the_switches() -> str | None:
    """None if every OpenBLAS loaded in this process computes with the pinned core type, else what is wrong.

    OpenBLAS reads ``OPENBLAS_CORETYPE`` when it is loaded: a process that imported numpy or scipy before this
    package keeps the core type of its CPU (SkylakeX on an AVX-512 Intel CPU, Haswell on our AMD EPYC).
    """
    if numerics_label() != PINNED_LABEL:
        return None
    from threadpoolctl import threadpool_info

    found = {info.get("architecture") for info in threadpool_info() if info.get("internal_api") == "openblas"}
    other = sorted(str(a) for a in found if str(a).lower() != OPENBLAS_PINNED.lower())
    if other:
        return (
            f"OpenBLAS computes with its {', '.join(other)} kernels, not the pinned {OPENBLAS_PINNED} ones: numpy "
            "or scipy was loaded before textmetric_bench was imported. Import textmetric_bench first (or set "
            f"OPENBLAS_CORETYPE={OPENBLAS_PINNED} in the environment before Python starts)"
        )
    return None


def bit_for_bit() -> bool:
    """Whether this process computes what the shipped results were computed with, bit for bit: the pinned
    switches, in force (torch's and OpenBLAS's kernels), on any CPU with AVX2 and FMA, Intel or AMD. The embedder's
    products are exact (textmetric_bench.features.exact_gemm), so MKL's vendor-dependent dispatch does not enter."""
    return (
        numerics_label() == PINNED_LABEL
        and torch_follows_the_switches() is None
        and openblas_follows_the_switches() is None
    )


def mkl_branch_pinned() -> bool:
    """Whether MKL's own float32 GEMM (the language model's, CTranslate2's) computes on its pinned AVX2 branch:
    pinned switches on an Intel CPU. MKL guarantees that branch on Intel CPUs only; elsewhere it picks its own."""
    return numerics_label() == PINNED_LABEL and holds_pin("MKL_CBWR") and cpu_vendor() == "GenuineIntel"
