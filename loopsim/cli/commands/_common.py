"""Options and steps shared by the commands: parse the kernel options, load, analyze, print."""

from __future__ import annotations

import argparse

from loopsim.base.limits import MAX_INT, MAX_LNC_CORES, MAX_WORK_S, bounded
from loopsim.count.counts import POLICIES

#: exit status of a kernel that cannot run as written (its report is printed all the same)
INFEASIBLE = 3


def add_kernel_options(p: argparse.ArgumentParser, *, many: bool = False, scope: bool = True) -> None:
    """SPEC, --hardware, --set, --policy, --sbuf-bytes, --dtype, --json and (``scope``) the core
    split, roofs, link and buffer options every analysing command shares."""
    if many:
        p.add_argument("spec", nargs="+", metavar="SPEC", help="bundled spec names, .toml paths or "
                       "NKI kernel references PATH.py::FUNCTION (a kernel reference EXECUTES that file)")
    else:
        p.add_argument("spec", metavar="SPEC", help="a bundled spec name (e.g. matmul), a .toml path, "
                       "or an NKI kernel PATH.py::FUNCTION (EXECUTES that file, as python FILE.py would)")
    p.add_argument("--hardware", "-H", required=True, metavar="NAME", help="hardware sheet name or .toml path")
    p.add_argument("--set", action="append", default=[], metavar="NAME=INT", dest="sets",
                   help="override a spec parameter (repeatable)")
    p.add_argument("--policy", choices=POLICIES, default="as-written",
                   help="as-written (default): Q as the nest states it; lru/opt: what SBUF of "
                        "the given capacity could reach with this loop order")
    p.add_argument("--sbuf-bytes", type=bounded("--sbuf-bytes", 1, MAX_INT), default=None, metavar="N",
                   help="SBUF capacity in bytes, 1 to 2^62 (default: the sheet's)")
    p.add_argument("--dtype", default=None,
                   help="dtype whose Tensor Engine roof applies (default: the kernel's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--model", choices=("timeline", "exact", "roofline"), default="timeline",
                   help="timeline (default): T is the engine timeline's predicted time (never below "
                        "the roofline's; a kernel over 24,000 instructions runs its loops cut and "
                        "extrapolated); exact: the same timeline walking every instruction "
                        "(compiled past 100,000, ~1 s CPU per 10^6 instructions plus a one-time "
                        "compile); roofline: T is the slowest roof or ceiling alone")
    p.add_argument("--replay", action="store_true",
                   help="as written: replay the trace even where the closed form gives Q (slower; "
                        "the two agree)")
    p.add_argument("--force", action="store_true",
                   help=f"run a replay estimated over {MAX_WORK_S:,.0f} s on one core (refused "
                        "otherwise, with the estimate)")
    add_nki_options(p)
    if scope:
        add_scope_options(p)


def add_nki_options(p: argparse.ArgumentParser) -> None:
    """--arg, --kwarg, --grid, --path, --register-value: the inputs of a kernel reference
    PATH.py::FUNCTION."""
    g = p.add_argument_group("NKI kernel references (PATH.py::FUNCTION; reading one EXECUTES the "
                             "file, as python FILE.py would: only files you would run)")
    g.add_argument("--arg", action="append", default=[], metavar="NAME=D0xD1[:dtype]", dest="nki_args",
                   help="an HBM tensor argument; a dimension may be a name given by --set "
                        "(dtype default bf16; repeatable)")
    g.add_argument("--kwarg", action="append", default=[], metavar="NAME=VALUE", dest="nki_kwargs",
                   help="another argument: a Python literal, never executed (repeatable)")
    g.add_argument("--grid", default=None, metavar="G0[xG1...]", dest="nki_grid",
                   help="the SPMD launch grid (kernel[G0, G1](...))")
    g.add_argument("--path", action="append", default=[], metavar="DIR", dest="nki_paths",
                   help="another import root for the kernel's modules, besides its folder and "
                        "its package's root (repeatable)")
    g.add_argument("--register-value", action="append", default=[], metavar="[FILE:LINE=]N",
                   dest="nki_registers",
                   help="what a register read at run time holds (nisa.register_load): N for every "
                        "one, or FILE:LINE=N for the one read at that line; a loop bounded by it "
                        "(nl.dynamic_range) runs accordingly, noted ASSUMED (repeatable)")


def refuse_kernel_reference(ref: str, what: str) -> None:
    """An InputError for a kernel reference given to a command that works on a spec's parameter
    expressions (``what``: the command's job)."""
    from loopsim.base.errors import InputError
    from loopsim.frontends.nki.load import is_reference

    if is_reference(ref):
        raise InputError(f"{ref}: {what} from a spec's parameter expressions, and a traced kernel "
                         "has numbers only; use entitle, compare or crossover on it, or write its "
                         "nest as a spec")


def kernel_args(args) -> dict:
    """The kernel reference options as :func:`loopsim.model.pipeline.load`'s ``kernel_args``."""
    if not any(getattr(args, k, None) for k in ("nki_args", "nki_kwargs", "nki_grid", "nki_paths",
                                                "nki_registers")):
        return {"args": {}, "kwargs": {}, "grid": (), "paths": (), "registers": ()}  # as parse_options gives
    from loopsim.frontends.nki.load import parse_options

    return parse_options(getattr(args, "nki_args", None), getattr(args, "nki_kwargs", None),
                         getattr(args, "nki_grid", None), getattr(args, "nki_paths", None),
                         getattr(args, "nki_registers", None))


def add_scope_options(p: argparse.ArgumentParser) -> None:
    """--lnc, --split, --allow-scope-mismatch, --roofs, --link-bw, --buffers."""
    from loopsim.targets import hardware

    p.add_argument("--lnc", type=bounded("--lnc", 1, MAX_LNC_CORES), default=None, metavar="N",
                   help="run the kernel on N physical cores (LNC=2: --lnc 2), splitting the spec's "
                        "[lnc] split loop, else its token (M / B) loop; --lnc 1 removes a split")
    p.add_argument("--split", default=None, metavar="VAR", help="the loop to split with --lnc")
    p.add_argument("--allow-scope-mismatch", action="store_true",
                   help="entitle against a sheet whose physical cores differ from the kernel's")
    p.add_argument("--roofs", choices=hardware.ROOFS, default="spec",
                   help="spec (default): documented P and BW; measured: the sheet's [measured] roofs")
    p.add_argument("--link-bw", type=bounded("--link-bw", 1, MAX_INT), default=None, metavar="BYTES_PER_S",
                   help="interconnect bandwidth for a spec with [parallel] (default: the sheet's link.bw)")
    p.add_argument("--buffers", default=None, metavar="N|TENSOR=N,...",
                   help="SBUF buffers a load inside a loop rotates through (2: double buffering); "
                        "replaces the spec's [nest] buffers (default 1)")


def parse_buffers(text: str | None):
    """``--buffers 2`` or ``--buffers A=2,B=3`` -> (("*", 2),) or (("A", 2), ("B", 3))."""
    if text is None:
        return None
    from loopsim.base.errors import InputError

    out = []
    for item in text.split(","):
        name, eq, val = item.rpartition("=")
        name = name.strip() if eq else "*"
        try:
            n = int(val.strip())
        except ValueError:
            raise InputError(f"--buffers {text}: '{val.strip()}' is not an integer") from None
        if n <= 0:
            raise InputError(f"--buffers {text}: {n} must be > 0")
        out.append((name, n))
    return tuple(out)


def hardware_of(args):
    """The sheet with the chosen roofs."""
    from loopsim.targets import hardware

    return hardware.load(args.hardware).with_roofs(getattr(args, "roofs", "spec"))


def program_of(args, ref: str | None = None):
    """The program the kernel options name (one SPEC)."""
    from loopsim.model import pipeline
    from loopsim.frontends import spec

    return pipeline.load(ref or args.spec, spec.parse_sets(args.sets),
                         lnc_cores=getattr(args, "lnc", None), split=getattr(args, "split", None),
                         buffers=parse_buffers(getattr(args, "buffers", None)),
                         kernel_args=kernel_args(args))


def analyze_kw(args) -> dict:
    """Keyword arguments of :func:`loopsim.model.pipeline.analyze` from the options."""
    return {"policy": args.policy, "sbuf_bytes": args.sbuf_bytes, "dtype": args.dtype,
            "allow_scope_mismatch": getattr(args, "allow_scope_mismatch", False),
            "link_bw": getattr(args, "link_bw", None), "replay": getattr(args, "replay", False),
            "model": getattr(args, "model", "timeline")}


def dump_json(obj) -> None:
    """Print JSON; non-finite floats become null so the output is strict JSON."""
    from loopsim.render.json import dumps

    print(dumps(obj))
