"""Command line: ``loopsim COMMAND ...``. A thin shell: parse, call the library, print.

Each command lives in ``loopsim/commands/NAME.py`` with ``register(subparsers)``; errors that a user
can cause print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from loopsim.base.errors import LoopsimError

#: command modules, in the order ``loopsim --help`` lists them, with their one-line help (the
#: same text each module's register() gives; a test checks): a run imports only its own command's
#: module, and ``loopsim --help`` none
COMMANDS = {
    "list": "list the bundled specs and hardware sheets, one line each",
    "entitle": "entitle a kernel spec (or hand counts) against a hardware sheet",
    "crossover": "smallest value of a dimension at which the kernel is compute-bound",
    "hardware": "list hardware sheets or show one with its sources",
    "replay": "replay a captured access trace (.npz) with lru or opt",
    "compare": "tilings side by side, ranked by attainable time T",
    "plot": "draw the roofline with the kernels' points (png/svg/pdf)",
    "capacity": "Q against SBUF capacity for lru and opt (table and plot)",
    "ceilings": "lower ceilings (Tensor Engine fill, issue rate, dtype, PSUM, engines, link) of a "
                "kernel spec",
    "graph": "draw the op graph of a multi-op spec, edges labelled by bytes and k",
    "formula": "closed-form Q of a tiling (symbolic and evaluated)",
    "check": "property-test a Q formula against the simulator",
    "calibrate": "fit measured roofs (HBM bandwidth, Tensor Engine rate) to measured kernel times "
                 "and write a calibrated hardware sheet",
    "dma": "DMA transfers of a kernel spec: count, bytes per partition, small-transfer share, the "
           "DMA engines' ceiling",
    "search": "find the tiling to write (tiles, blocks, loop orders, hoisting)",
    "clockwork": "the Tensor Engine clockwork: an HTML page stepping matmul instructions through "
                 "the PE array cycle by cycle",
    "report": "one self-contained HTML page for a kernel: verdict, W and Q, roofline, ceilings, "
              "SBUF/PSUM, DMA, gap",
    "timeline": "predicted engine timeline of a kernel: T, busy share per engine, the gap's causes, "
                "a picture",
    "evaluate": "answer a batch of analysis requests (JSON lines in, JSON lines out) in one process",
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error on one line (no usage dump)."""

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def create_parser(only: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The whole parser; with ``lazy``, only command ``only`` (if any) is registered by its module
    and every other appears by name and help alone (nothing imported for it)."""
    p = _Parser(prog="loopsim", description="Entitlement and rooflines for tiled Trainium kernels: "
                "W from shapes, Q from the loop nest by SBUF replay.")
    from loopsim import __version__
    p.add_argument("--version", action="version", version=f"loopsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, text in COMMANDS.items():
        if lazy and name != only:
            sub.add_parser(name, help=text, add_help=False)
        else:
            importlib.import_module(f"loopsim.cli.commands.{name}").register(sub)
    return p


def _command_of(argv: list[str]) -> str | None:
    """The command word of a command line (the first argument not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (docs/errors.md): 0 ok, 1 a check that failed (a formula
    that does not match; calibrate --strict that warned), 2 an error on one line (bad input, or a failure of the environment: out
    of memory, a full disk), 3 entitle of a kernel that cannot run, 130 interrupted. A reader that
    stops reading (a broken pipe) ends the run quietly with 0."""
    import errno

    from loopsim.base.streams import ascii_fallback, silence_stdout

    if sys.stdout is None:  # started with stdout closed (loopsim list >&-): nowhere to print
        if sys.stderr is not None:
            print("loopsim: error: cannot write the output (stdout is closed)", file=sys.stderr)
        return 2
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot print µ × ≥ gets us x >=
        ascii_fallback(stream)

    def fail(msg: str) -> int:
        print(f"loopsim: error: {one_line(msg)}", file=sys.stderr)
        return 2

    whole_process = argv is None
    swallowed: list[BaseException] = []  # Ctrl-C raised where Python could only ignore it
    if whole_process:
        sys.unraisablehook = _keep_interrupts(swallowed, sys.unraisablehook)
    if whole_process and "numpy" not in sys.modules:
        # loopsim does no floating-point linear algebra (its few dot products are on integers,
        # which numpy does without BLAS), and sweeps run on processes (--jobs): OpenBLAS's thread
        # pool, started at numpy's import, only costs CPU (~0.08 s a run on 2 cores). A value the
        # user set is kept.
        import os

        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = create_parser(_command_of(argv), lazy=True).parse_args(argv)
        from loopsim.base import limits

        limits.force_long_work(getattr(args, "force", False))  # this run's --force, not a past one's
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a full device fails here, not in the interpreter's exit
        if whole_process and "numba" in sys.modules:
            # The process ends next. numba left hundreds of thousands of objects (its typing
            # tables) that the interpreter's final collections would walk (~0.15 s); frozen,
            # they are skipped. Not when called in-process (tests): their garbage stays collectable.
            import gc

            gc.freeze()
        return status
    except LoopsimError as e:
        if swallowed:  # Ctrl-C inside numba's compiler callback: the error that followed is its echo
            print("loopsim: interrupted", file=sys.stderr)
            return 130
        return fail(str(e))
    except BrokenPipeError:
        silence_stdout()
        return 0
    except MemoryError as e:  # numpy's _ArrayMemoryError says how much it asked for
        asked = " ".join(str(e).split()) or "a memory allocation failed"
        return fail(f"out of memory: {asked}; use larger tiles (fewer tile accesses) or smaller "
                    "parameters (--set), or run where more memory is free")
    except ValueError as e:  # numpy refusing an array past the address space: memory, not a bug
        if not any(m in str(e) for m in _TOO_BIG):
            raise
        return fail(f"out of memory: numpy cannot allocate an array that large ({one_line(str(e))}); "
                    "use larger tiles (fewer tile accesses) or smaller parameters (--set)")
    except KeyboardInterrupt:
        print("loopsim: interrupted", file=sys.stderr)
        return 130
    except SystemError as e:  # Ctrl-C inside a compiled (numba) call surfaces as a SystemError
        if not _interrupted(e):
            raise
        print("loopsim: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        if e.errno == errno.EPIPE:
            silence_stdout()
            return 0
        if sys.stdout.closed or _is_stdout_error(e):
            silence_stdout()
            return fail(f"cannot write the output ({e.strerror or e})")
        raise


#: numpy's words for an array larger than the address space (np.arange / np.empty of > 2^63 bytes)
_TOO_BIG = ("array is too big", "Maximum allowed size exceeded")


def _keep_interrupts(swallowed: list, hook):
    """An ``sys.unraisablehook`` that keeps, silently, a KeyboardInterrupt raised where Python
    could only ignore it (Ctrl-C while numba's compiler is inside a ctypes callback: Python prints
    "Exception ignored ... Traceback" and numba then fails with another error), so the run ends as
    interrupted (130) instead; anything else goes to ``hook``."""
    def keep(u):
        if isinstance(u.exc_value, KeyboardInterrupt):
            swallowed.append(u.exc_value)
        else:
            hook(u)
    return keep


def _interrupted(e: BaseException) -> bool:
    """Whether ``e`` was caused by a KeyboardInterrupt (its cause or context chain)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def one_line(msg: str) -> str:
    """An error message on one line: line breaks a user's text brought in are shown escaped."""
    return msg.replace("\r", "\\r").replace("\n", "\\n")


def _is_stdout_error(e: OSError) -> bool:
    """Whether an OSError came from writing to stdout (a full device, an I/O error)."""
    import errno

    return e.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF)


if __name__ == "__main__":
    sys.exit(main())
