"""How the command line is read before Hydra runs (bench/__main__.py): with a parser of our own, since Hydra keeps
its own private, which must know the very flags Hydra's ``--hydra-help`` lists."""

import re
import subprocess
import sys

from textmetric_bench.__main__ import HYDRA_FLAGS, command_line, run_dir_problem


def test_the_parser_knows_exactly_the_flags_hydra_lists():
    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench", "--hydra-help"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    flags = proc.stdout.split("== Flags ==")[1].split("== ")[0]
    hydra = {
        flag for line in flags.splitlines() if (m := re.match(r"(-[\w,-]+) : ", line)) for flag in m.group(1).split(",")
    }
    ours = set(HYDRA_FLAGS)
    assert len(hydra) > 15 and ours == hydra


def test_overrides_are_read_without_the_flags_and_their_values():
    read = command_line(["-m", "--cfg", "job", "-cn", "other", "pair=atis_news", "k=7", "n=5"])
    assert read.overrides == ["pair=atis_news", "k=7", "n=5"] and read.cfg == "job"
    assert command_line(["--info"]).info == "all" and command_line(["-i", "plugins"]).info == "plugins"
    assert command_line(["--version"]).version  # read, not acted on: no exit here


def test_a_run_directory_that_cannot_be_made_is_named_before_hydra_runs(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert "hydra.run.dir" in run_dir_problem([f"hydra.run.dir={blocked / 'run'}"])
    assert "hydra.sweep.dir" in run_dir_problem(["-m", f"hydra.sweep.dir={blocked / 'sweep'}", "k=3,7"])
    assert run_dir_problem(["--cfg", "job", f"hydra.run.dir={blocked / 'run'}"]) is None  # writes nothing
    assert run_dir_problem([f"hydra.run.dir={tmp_path / 'fine'}"]) is None
