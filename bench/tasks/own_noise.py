"""The KSC task's own-noise evaluations: each stochastic metric again on fixed corpora with other seeds.

On repetition 0's collection, the pairs (c_1, c_k) and (c_1, c_m), m = 1 + (k - 1) // 2 (the widest and a
middle gap), are evaluated by every stochastic metric of the run (``stochastic=True`` on ``@metric``)
with ``own_noise.seeds`` seeds of their own (0 disables). The KSC task plans them in its ``build``
beside the main evaluations, marked ``aside`` and for the stochastic metrics ``only``; the skeleton
runs them on the engine like every evaluation, logged in the run's ``evaluations.jsonl`` (so resumed
and cached), under keys whose repetition is -1 - s for seed s, and hands them to ``score`` apart from
the distance table. ``textmetric_bench.measures.own_noise`` turns them into ``own_noise.csv``.
"""

from __future__ import annotations

from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.tasks.skeleton import Evaluation

OWN_NOISE_STREAM = 5  # seed stream of the metric seeds (0 collections, 1 metric seeds, 2-4 robustness curves)


def own_noise_pairs(k: int) -> list[tuple[int, int]]:
    """(1, k) and (1, 1 + (k - 1) // 2): the widest gap and a middle one."""
    return sorted({(1, k), (1, 1 + (k - 1) // 2)})


def own_seed(seed: int, s: int) -> int:
    """The s-th own-noise metric seed of a run: a stream of its own, apart from the repetitions'."""
    return int(repetition_seed(seed, s, OWN_NOISE_STREAM).generate_state(1)[0])


def own_noise_evaluations(k: int, seeds: int, run_seed: int, stochastic: frozenset[str]) -> list[Evaluation]:
    """The own-noise evaluations of a KSC run with ``k`` corpora a collection: ``seeds`` per pair, for the
    ``stochastic`` metrics only, with fields (-1 - s, i, j)."""
    if not seeds or not stochastic:
        return []
    return [
        Evaluation((-1 - s, i, j), f"r0c{i}", f"r0c{j}", 0, only=stochastic, seed=own_seed(run_seed, s), aside=True)
        for s in range(seeds)
        for i, j in own_noise_pairs(k)
    ]
