"""Command line: ``loopsim COMMAND ...``. A thin shell: parse, call the library, print.

Each command lives in ``loopsim/commands/NAME.py`` with ``register(subparsers)``; errors that a user
can cause print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import LoopsimError

#: command modules, in the order ``loopsim --help`` lists them
COMMANDS = ("list", "entitle", "crossover", "hardware", "replay", "compare", "plot", "capacity", "ceilings", "graph", "formula", "check", "calibrate")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error on one line (no usage dump)."""

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message}\n")


def create_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="loopsim", description="Entitlement and rooflines for tiled Trainium kernels: "
                "W from shapes, Q from the loop nest by SBUF replay.")
    from . import __version__
    p.add_argument("--version", action="version", version=f"loopsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"loopsim.commands.{name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input, other codes per command)."""
    args = create_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LoopsimError as e:
        print(f"loopsim: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
