"""``loopsim entitle``: the verdict on one kernel (attainable time T, what limits it, whether it can
run), W, Q per tensor, r, I, roofs, T_best/T_worst, SBUF and PSUM; or the same roofline model for
hand counts (``--flops W --bytes Q``). Exit status: 0 the kernel can run, 3 it cannot (the report
is still printed), 2 bad input."""

from __future__ import annotations

import argparse

from loopsim.cli.commands._common import INFEASIBLE, add_kernel_options, analyze_kw, dump_json, hardware_of, program_of
from loopsim.cli.commands._measured import add_option as add_measured_option, profile_only, single as measured_for


def register(sub) -> None:
    p = sub.add_parser("entitle", help="entitle a kernel spec (or hand counts) against a hardware sheet",
                       description=__doc__)
    add_kernel_options(p)
    p.set_defaults(spec=None)
    p._actions[[a.dest for a in p._actions].index("spec")].nargs = "?"
    p.add_argument("--flops", type=_count, metavar="W", help="hand count of FLOPs (no SPEC)")
    p.add_argument("--bytes", type=_count, metavar="Q", help="hand count of bytes across HBM (no SPEC)")
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
    from loopsim.base.errors import InputError

    hw = hardware_of(args)
    if args.spec is None:
        profile = profile_only(args)  # --measured PROFILE alone: W and Q from the profiler summary
        if profile is None and (args.flops is None or args.bytes is None):
            raise InputError("entitle needs a SPEC, or both --flops and --bytes, or --measured "
                             "PROFILE.json (a profiler summary with FLOPs and HBM bytes)")
        return _hand(args, hw, profile)
    if args.flops is not None or args.bytes is not None:
        raise InputError("give either a SPEC or --flops/--bytes, not both")
    from loopsim.model import pipeline

    a = pipeline.analyze(program_of(args), hw, **analyze_kw(args))
    m = measured_for(args, a.entitlement, a)
    if args.json:
        from loopsim.render.json import analysis_dict

        dump_json({**analysis_dict(a), **({"measured": m.as_dict()} if m is not None else {})})
    else:
        from loopsim.render.text import analysis_text

        print(analysis_text(a) + ("\n" + "\n".join(m.lines()) if m is not None else ""))
    return 0 if a.feasible else INFEASIBLE


def _hand(args, hw, profile=None) -> int:
    """The roofline of hand counts, or of a profiler summary's W and Q: no nest, so no ceilings
    and no feasibility."""
    from loopsim.model import measured
    from loopsim.model.entitle import Entitlement
    from loopsim.base.fmt import fmt_time
    from loopsim.render.json import entitlement_dict

    dt = args.dtype or "bf16"
    how = None
    if profile is not None:
        (W, (Q, how)) = profile.work(), profile.traffic()
    else:
        W, Q = args.flops, args.bytes
    e = Entitlement(W, Q, hw.P(dt), hw.bw)
    d = {"hardware": hw.name, "scope": hw.scope, "dtype": dt, "roofs": hw.roofs, **entitlement_dict(e)}
    if how is not None:
        d["W_from"], d["Q_from"] = "hardware_flops - transpose_flops", how
    m = measured.compare(e, profile) if profile is not None else measured_for(args, e)
    if m is not None:
        d["measured"] = m.as_dict()
    if args.json:
        dump_json(d)
        return 0
    print(f"{'profile ' + profile.source if profile else 'hand count'} on {hw.name} ({hw.scope}), {dt}")
    if how is not None:
        print(f"  W from hardware_flops - transpose_flops; Q from {how}")
    print(f"  W = {e.W:,} FLOPs, Q = {e.Q:,} bytes, I = {e.I:.4g} FLOPs/byte, ridge = {e.ridge:.4g}")
    print(f"  W/P = {fmt_time(e.t_compute)}, Q/BW = {fmt_time(e.t_memory)}")
    why = "W = Q = 0: no work, no rate" if e.bound == "none" else f"{e.bound}-bound"
    print(f"  T_best = {fmt_time(e.T_best)} ({why}), T_worst = {fmt_time(e.T_worst)}")
    if m is not None:
        print("\n".join(m.lines()))
    return 0
