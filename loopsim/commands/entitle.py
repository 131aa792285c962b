"""``loopsim entitle``: W, Q per tensor, r, I, roofs, T_best/T_worst and residency of a spec, or the
same model for hand counts (``--flops W --bytes Q``)."""

from __future__ import annotations

import argparse

from .. import hardware, spec
from ..entitle import Entitlement
from ..errors import InputError
from ..report import analyze, format_text, fmt_time
from ._common import add_kernel_options, dump_json
from .ceilings import add_scope_options, report as ceilings_report
from .. import measured
from ._measured import add_option as add_measured_option, profile_only, single as measured_for


def register(sub) -> None:
    p = sub.add_parser("entitle", help="entitle a kernel spec (or hand counts) against a hardware sheet",
                       description=__doc__)
    add_kernel_options(p)
    p.set_defaults(spec=None)
    p._actions[[a.dest for a in p._actions].index("spec")].nargs = "?"
    p.add_argument("--flops", type=_count, metavar="W", help="hand count of FLOPs (no SPEC)")
    p.add_argument("--bytes", type=_count, metavar="Q", help="hand count of bytes across HBM (no SPEC)")
    p.add_argument("--dtype", default=None, help="dtype whose Tensor Engine roof applies (default: the kernel's, bf16 for hand counts)")
    add_scope_options(p)
    add_measured_option(p)
    p.set_defaults(func=run)


def _count(text: str) -> int:
    """An integer count; scientific notation allowed when it is exactly an integer (1e12)."""
    try:
        v = float(text) if any(c in text for c in ".eE") else int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if isinstance(v, float):
        if not v.is_integer():
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        v = int(v)
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return v


def run(args) -> int:
    hw = hardware.load(args.hardware).with_roofs(args.roofs)
    if args.spec is None:
        profile = profile_only(args)  # --measured PROFILE alone: W and Q from the profiler summary
        if profile is None and (args.flops is None or args.bytes is None):
            raise InputError("entitle needs a SPEC, or both --flops and --bytes, or --measured "
                             "PROFILE.json (a profiler summary with FLOPs and HBM bytes)")
        dt = args.dtype or "bf16"
        how = None
        if profile is not None:
            (W, (Q, how)) = profile.work(), profile.traffic()
        else:
            W, Q = args.flops, args.bytes
        e = Entitlement(W, Q, hw.P(dt), hw.bw)
        d = {"hardware": hw.name, "scope": hw.scope, "dtype": dt, "roofs": hw.roofs, **e.as_dict()}
        if how is not None:
            d["W_from"], d["Q_from"] = "hardware_flops - transpose_flops", how
        m = measured.compare(e, profile) if profile is not None else measured_for(args, e)
        if m is not None:
            d["measured"] = m.as_dict()
        if args.json:
            dump_json(d)
        else:
            print(f"{'profile ' + profile.source if profile else 'hand count'} on {hw.name} "
                  f"({hw.scope}), {dt}")
            if how is not None:
                print(f"  W from hardware_flops - transpose_flops; Q from {how}")
            print(f"  W = {e.W:,} FLOPs, Q = {e.Q:,} bytes, I = {e.I:.4g} FLOPs/byte, "
                  f"ridge = {e.ridge:.4g}")
            print(f"  W/P = {fmt_time(e.t_compute)}, Q/BW = {fmt_time(e.t_memory)}")
            print(f"  T_best = {fmt_time(e.T_best)} ({e.bound}-bound), T_worst = {fmt_time(e.T_worst)}")
            if m is not None:
                print("\n".join(m.lines()))
        return 0
    if args.flops is not None or args.bytes is not None:
        raise InputError("give either a SPEC or --flops/--bytes, not both")
    from . import _program  # a spec with [ops]: a schedule of kernels (loopsim/program.py)
    if _program.is_program_spec(args.spec):
        return _program.run_entitle(args)
    rep = ceilings_report(args)  # LNC split, scope check, roofs, [parallel] link roof, ceilings
    m = measured_for(args, rep.entitlement, rep)
    if args.json:
        dump_json({**rep.as_dict(), **({"measured": m.as_dict()} if m is not None else {})})
    else:
        print(format_text(rep) + ("\n" + "\n".join(m.lines()) if m is not None else ""))
    return 0
