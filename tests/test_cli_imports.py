"""The command line imports only the module of the command it runs (issue 13 item 1)."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from loopsim.cli.main import COMMANDS


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_table_matches_each_command_module(name):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    importlib.import_module(f"loopsim.cli.commands.{name}").register(sub)
    (action,) = sub._choices_actions
    assert (action.dest, action.help) == (name, COMMANDS[name])


def _command_modules_after(argv: list[str]) -> list[str]:
    code = ("import sys, contextlib, io\nfrom loopsim.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(%r)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('loopsim.cli.commands.')))" % argv)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])


def test_help_imports_no_command_module():
    assert _command_modules_after(["--help"]) == []


def test_a_command_imports_only_its_own_module():
    mods = _command_modules_after(["hardware"])
    assert "loopsim.cli.commands.hardware" in mods
    assert not [m for m in mods if m.split(".")[-1] in COMMANDS and m != "loopsim.cli.commands.hardware"]


@pytest.mark.parametrize("argv", [
    ["entitle", "projection", "--hardware", "trn2-core", "--set", "B=1"],
    # matmul_kouter reads partial sums back: counted from its statements, not from a trace
    ["compare", "matmul", "matmul_kouter", "nki_tutorial/1_tiled", "--hardware", "trn2-core"],
    # programs of several ops: the op graph is validated without networkx, schedules without a trace
    ["entitle", "mlp_fused", "--hardware", "trn2-core"],
    ["compare", "attention_unfused", "mlp_unfused", "swiglu_mlp", "layernorm", "--hardware", "trn2-core"],
])
def test_as_written_answers_import_no_replay_plot_or_graph_library(argv):
    code = ("import sys, contextlib, io\nfrom loopsim.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(%r)\n"
            "print(sorted({m.split('.')[0] for m in sys.modules}))" % argv)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    top = set(eval(out.stdout.strip().splitlines()[-1]))
    assert not top & {"numba", "llvmlite", "matplotlib", "networkx", "hypothesis", "tqdm"}


def _blas_threads_seen(env_value: str | None) -> str:
    """OPENBLAS_NUM_THREADS as a whole-process run (argv from sys.argv) leaves it, and whether
    numpy was imported only after main() set it."""
    import os

    code = ("import sys, os, contextlib, io\nsys.argv = ['loopsim', 'list']\nfrom loopsim.cli.main import main\n"
            "assert 'numpy' not in sys.modules\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main()\n"
            "assert 'numpy' in sys.modules\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return out.stdout.strip()


def test_a_run_starts_no_blas_thread_pool_unless_the_user_asks():
    assert _blas_threads_seen(None) == "1"
    assert _blas_threads_seen("4") == "4"
