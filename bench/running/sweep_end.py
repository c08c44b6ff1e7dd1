"""The last lines of a sweep (Hydra multirun): where its jobs are, and the command that summarises them.

A Hydra callback (``hydra.callbacks`` in ``conf/config.yaml``), run in the process that launched the sweep once every
job has ended; kept apart from the sweep's exit status (``textmetric_bench.running.exit_status``) so other end-of-sweep
steps can be added beside it.
"""

from __future__ import annotations

from pathlib import Path

from hydra.experimental.callback import Callback

from textmetric_bench.console import command


def sweep_end_lines(sweep_dir: Path) -> list[str]:
    """The sweep's directory and how to summarise it, with the program named as the user started this one."""
    return [
        f"sweep directory: {sweep_dir}",
        f"summarise its jobs (sweep_table.md, sweep_summary.csv): {command('textmetric-bench-aggregate')} {sweep_dir}",
    ]


class SweepEndNote(Callback):
    """Prints :func:`sweep_end_lines` when a sweep ends."""

    def on_multirun_end(self, config, **kwargs) -> None:
        print("\n".join(sweep_end_lines(Path(str(config.hydra.sweep.dir)).absolute())), flush=True)
