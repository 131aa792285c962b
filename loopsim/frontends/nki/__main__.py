"""``python -m loopsim.frontends.nki PATH.py::FUNCTION --hardware SHEET [--arg ...] [--kwarg ...] [--grid ...]``
(the kernel reference options of every command: :func:`loopsim.cli.commands._common.add_nki_options`)

Trace an NKI kernel file and print the loop nest loopsim read from it and its report. A thin shell
until the main CLI accepts kernel references.

SAFETY: a kernel reference EXECUTES the Python file, as ``python FILE.py`` would (the NKI modules
are loopsim's recording shim); only point it at files you would run.
"""

from __future__ import annotations

import argparse
import sys

from loopsim.base.errors import LoopsimError
from loopsim.cli.commands._common import add_nki_options, kernel_args

SAFETY = ("A kernel reference EXECUTES the Python file, as 'python FILE.py' would (with loopsim's "
          "recording stand-in for the NKI modules); only point it at files you would run yourself.")


def nest_text(body, indent: int = 0) -> list[str]:
    """The IR nest as loopsim's nest language, one line per loop or statement."""
    out = []
    for n in body:
        if hasattr(n, "var"):
            out.append(" " * indent + f"for {n.var} in {n.extent} by {n.step}:")
            out += nest_text(n.body, indent + 2)
        else:
            out.append(" " * indent + str(n))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m loopsim.frontends.nki", description=__doc__.split("\n\n")[1],
                                epilog=SAFETY)
    p.add_argument("kernel", metavar="PATH.py::FUNCTION")
    p.add_argument("--hardware", "-H", default=None, help="hardware sheet: also print the report")
    add_nki_options(p)
    p.add_argument("--set", action="append", default=[], metavar="NAME=INT", dest="sets",
                   help="bind a dimension name of an --arg, or override a keyword argument")
    a = p.parse_args(argv)
    try:
        from loopsim.targets import hardware
        from loopsim.model import pipeline
        from loopsim.frontends import program, spec
        from loopsim.render.text import analysis_text
        from loopsim.frontends.nki.load import load_reference

        k = load_reference(a.kernel, **kernel_args(a), sets=spec.parse_sets(a.sets))
        kern = k.stages[0].kernel if isinstance(k, program.Program) else k
        print(f"{a.kernel}: " + ", ".join(f"{t.name}{list(t.shape)} {t.dtype}" +
                                          (" (output)" if t.output else "") for t in kern.tensors))
        print("\n".join(nest_text(kern.body, 2)))
        if a.hardware:
            hw = hardware.load(a.hardware)
            prog = k if isinstance(k, program.Program) else program.Program.single(k)
            print()
            print(analysis_text(pipeline.analyze(prog, hw)))
        return 0
    except LoopsimError as e:
        print(f"loopsim: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
