"""``loopsim ceilings SPEC --hardware NAME``: the lower ceilings under the roof, one line each —
Tensor Engine partition fill, column fill, issue rate, dtype and their product, PSUM evacuation on
the Vector/Scalar engine, the interconnect of a spec split across chips — with the PSUM verdict and
the LNC scope."""

from __future__ import annotations

import argparse

from .. import ceilings, hardware, lnc, program, spec
from ..ceilings import format_lines
from ..report import analyze, fmt_time, kernel_dtype
from ._common import add_kernel_options, dump_json


def register(sub) -> None:
    p = sub.add_parser("ceilings", help="lower ceilings (Tensor Engine fill, issue rate, dtype, "
                       "PSUM, engines, link) of a kernel spec", description=__doc__)
    add_kernel_options(p)
    p.add_argument("--dtype", default=None, help="dtype whose roof applies (default: the kernel's)")
    add_scope_options(p)
    p.set_defaults(func=run)


def add_scope_options(p: argparse.ArgumentParser) -> None:
    """--lnc, --split, --allow-scope-mismatch, --roofs, --link-bw (shared with ``entitle``)."""
    p.add_argument("--lnc", type=int, default=None, metavar="N",
                   help="run the kernel on N physical cores (LNC=2: --lnc 2), splitting the spec's "
                        "[lnc] split loop, else its token (M / B) loop; --lnc 1 removes a split")
    p.add_argument("--split", default=None, metavar="VAR", help="the loop to split with --lnc")
    p.add_argument("--allow-scope-mismatch", action="store_true",
                   help="entitle against a sheet whose physical cores differ from the kernel's")
    p.add_argument("--roofs", choices=hardware.ROOFS, default="spec",
                   help="spec (default): documented P and BW; measured: the sheet's [measured] roofs")
    p.add_argument("--link-bw", type=int, default=None, metavar="BYTES_PER_S",
                   help="interconnect bandwidth for a spec with [parallel] (default: the sheet's link.bw)")


def load(args):
    """(kernel with the LNC split applied, sheet with the chosen roofs, parallel split or None)."""
    hw = hardware.load(args.hardware).with_roofs(args.roofs)
    sf = spec.read(args.spec)
    kernel = spec.kernel_from(sf, spec.bind_params(sf, spec.parse_sets(args.sets)))
    if args.split is not None and args.lnc is None:
        kernel = lnc.with_split(kernel, hw.physical_cores if hw.physical_cores > 1 else 2, args.split)
    elif args.lnc is not None:
        kernel = lnc.with_split(kernel, args.lnc, args.split)
    return kernel, hw, ceilings.parallel_from(sf)


def report(args):
    kernel, hw, par = load(args)
    return analyze(kernel, hw, policy=args.policy, sbuf_bytes=args.sbuf_bytes, dtype=args.dtype,
                   allow_scope_mismatch=args.allow_scope_mismatch, parallel=par,
                   link_bw=args.link_bw)


def run(args) -> int:
    from . import _program

    if _program.is_program_spec(args.spec):
        return _run_program(args, _program)
    kernel, hw, par = load(args)
    # strict: a sheet lacking what a ceiling needs is an error here
    ceilings.compute(kernel, hw, dtype=args.dtype or kernel_dtype(kernel), parallel=par,
                     link_bw=args.link_bw, strict=True)
    rep = report(args)
    c = rep.ceilings
    if args.json:
        d = rep.as_dict()
        keep = ("kernel", "hardware", "scope", "dtype", "params", "W", "P", "BW", "T_compute",
                "T_memory", "T_best", "bound", "matmul_instructions", "ceilings", "instruction_s",
                "roofs", "lnc", "psum", "link", "binding_roof", "lowest_ceiling", "ceiling_notes")
        dump_json({k: d[k] for k in keep if k in d})
        return 0
    e = rep.entitlement
    print(f"{kernel.name} on {hw.name} ({hw.scope}); {rep.dtype}; roofs {hw.roofs}")
    print(f"  W = {e.W:,} FLOPs in {c.instructions:,} matmul instructions; roof P = {e.P:.4g} FLOP/s, "
          f"W/P = {fmt_time(e.t_compute)}; Q/BW = {fmt_time(e.t_memory)}; binding roof: "
          f"{ceilings.binding_roof(c, e)}")
    print("\n".join(format_lines(c)))
    return 0



def _run_program(args, _program) -> int:
    """A spec with several ops: the ceilings of each kernel of its schedule (one core each)."""
    from ..errors import InputError

    for flag, dest in (("--lnc", "lnc"), ("--split", "split"), ("--link-bw", "link_bw")):
        if getattr(args, dest) is not None:
            raise InputError(f"{flag}: not supported for a spec with several ops ({args.spec}); "
                             "each of its kernels runs on one physical core")
    prog, hw = _program.load(args)
    stages = []
    for st in prog.stages:
        program.check_scope(hw, allow=args.allow_scope_mismatch)
        c = ceilings.compute(st.kernel, hw, dtype=args.dtype or kernel_dtype(st.kernel), strict=True)
        stages.append((st, c))
    if args.json:
        dump_json({"kernel": prog.name, "hardware": hw.name, "scope": hw.scope, "roofs": hw.roofs,
                   "stages": [{"stage": st.name, "ops": list(st.ops), "dtype": c.dtype, "W": c.W,
                               "matmul_instructions": c.instructions,
                               "ceilings": [x.as_dict() for x in c.ceilings],
                               "instruction_s": c.instruction_s, "psum": c.psum.as_dict(),
                               "lowest_ceiling": c.lowest.name if c.lowest else None}
                              for st, c in stages]})
        return 0
    print(f"{prog.name} on {hw.name} ({hw.scope}); roofs {hw.roofs}; {len(stages)} kernel(s)")
    for st, c in stages:
        print(f"kernel {st.name} (ops {', '.join(st.ops)}); {c.dtype}; W = {c.W:,} FLOPs")
        print("\n".join(format_lines(c)))
    return 0
