"""The seeds of a run: one independent stream per repetition and purpose, from the run's one seed."""

from __future__ import annotations

import numpy as np


def repetition_seed(seed: int, repetition: int, stream: int) -> np.random.SeedSequence:
    """Independent seed of one repetition; stream 0 draws the collection, stream 1 seeds metrics.

    Depends only on (seed, repetition), so adding repetitions never changes earlier ones.
    """
    return np.random.SeedSequence([int(seed), int(repetition), int(stream)])


def metric_seed(seed: int, repetition: int) -> int:
    """The integer seed handed to every metric call in one repetition."""
    return int(repetition_seed(seed, repetition, 1).generate_state(1)[0])
