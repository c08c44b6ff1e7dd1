"""One-off experiment behind reports/paper_table3/README.md: CLASSIFIER scored as 004's authors' code did.

Kept with the benchmark's compcor reference, outside the packages (it imports the harness and compcor): a script
that `make regenerate` runs in the checkout's venv, as

    python tests/benchmarks/compcor_classifier_run.py DISTANCES.csv

It rebuilds the KSC collections of the four settings of `distances.csv` (same seeds, same
embedder and cache as the runs) and, for every pair (c_i, c_j), scores what compcor 1.0.6's
`classifier_distance` computes (read, not copied): an RBF `SVC(random_state=1)` on the raw
embeddings, trained on a random 80% of each corpus and scored by the F1 of its predictions on the
other 20%, the second corpus as the positive class. compcor draws the split unseeded; here it is
seeded per (repetition, i, j) so the file can be rebuilt. The rows replace those of metric
`classifier_compcor` in DISTANCES.csv (built by `python -m textmetric_bench.reports.paper_table3.distances`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

SETTINGS = [("clinc150_banking77", 7), ("clinc150_banking77", 12), ("atis_news", 7), ("atis_news", 12)]


def split_f1(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> float:
    """F1 on a held-out 20% of each corpus of an RBF SVM trained on the other 80%."""
    from sklearn.metrics import f1_score
    from sklearn.svm import SVC

    def split(rows):
        order = rng.permutation(len(rows))
        cut = int(0.8 * len(rows))
        return rows[order[:cut]], rows[order[cut:]]

    (x_train, x_test), (y_train, y_test) = split(x), split(y)
    svm = SVC(random_state=1).fit(np.vstack([x_train, y_train]), [0] * len(x_train) + [1] * len(y_train))
    truth = [0] * len(x_test) + [1] * len(y_test)
    return float(f1_score(truth, svm.predict(np.vstack([x_test, y_test]))))


def setting_rows(pair: str, k: int, out_dir: Path) -> list[dict]:
    from textmetric_bench.tasks.config import build_embedder
    from textmetric_bench.running.registry import compose_config
    from textmetric_bench.tasks.ksc import KSCTask
    from textmetric_bench.running.validate import validate_config

    # own_noise.seeds=0: the paper's evaluations only (compcor computes no own noise)
    overrides = [
        f"pair={pair}",
        f"k={k}",
        "n=100",
        "repetitions=5",
        "seed=0",
        "metrics=[classifier]",
        "own_noise.seeds=0",
    ]
    cfg = compose_config(overrides)
    run = validate_config(cfg, out_dir)
    collections = KSCTask().build(run)
    embedder = build_embedder(cfg, cache_dir=run.cache_dir)
    rows = []
    for evaluation in collections.evaluations:
        repetition, i, j = evaluation.fields
        rng = np.random.default_rng([repetition, i, j])
        x = embedder.embed(collections.corpora[evaluation.p])
        y = embedder.embed(collections.corpora[evaluation.q])
        rows.append(
            {
                "pair": pair,
                "k": k,
                "metric": "classifier_compcor",
                "repetition": repetition,
                "i": i,
                "j": j,
                "distance": split_f1(x, y, rng),
            }
        )
    return rows


def main(target: str) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for pair, k in SETTINGS:
            rows += setting_rows(pair, k, Path(scratch))
            print(pair, k, len(rows), flush=True)
    table = pd.read_csv(target)
    table = pd.concat([table[table["metric"] != "classifier_compcor"], pd.DataFrame(rows)], ignore_index=True)
    table.sort_values(["pair", "k", "metric", "repetition", "i", "j"]).to_csv(target, index=False, float_format="%.17g")


if __name__ == "__main__":
    main(sys.argv[1])
