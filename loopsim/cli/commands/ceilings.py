"""``loopsim ceilings SPEC --hardware NAME``: the lower ceilings under the roof, one line each —
Tensor Engine partition fill, column fill, issue rate, dtype and their product, PSUM evacuation on
the Vector/Scalar engine, the interconnect of a spec split across chips — with the PSUM verdict,
the LNC scope and the verdict (T and its limit). A spec with several ops: per kernel. Exit status
as ``entitle``: 0, or 3 when the kernel cannot run as written."""

from __future__ import annotations

from loopsim.cli.commands._common import INFEASIBLE, add_kernel_options, analyze_kw, dump_json, hardware_of, program_of


def register(sub) -> None:
    p = sub.add_parser("ceilings", help="lower ceilings (Tensor Engine fill, issue rate, dtype, "
                       "PSUM, engines, link) of a kernel spec", description=__doc__)
    add_kernel_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.model import pipeline
    from loopsim.base.fmt import fmt_time
    from loopsim.render.json import ceilings_dict, verdict_dict
    from loopsim.render.text import ceilings_lines, headline

    hw = hardware_of(args)
    prog = program_of(args)
    # strict: a sheet lacking what a ceiling needs is an error here (entitle notes it)
    a = pipeline.analyze(prog, hw, strict=True, **analyze_kw(args))
    e = a.entitlement
    if args.json:
        d = {"kernel": a.name, "hardware": hw.name, "scope": hw.scope, "dtype": a.dtype,
             "roofs": hw.roofs, "params": dict(a.params), "W": e.W, "P": e.P, "BW": e.BW,
             "T_compute": e.t_compute, "T_memory": e.t_memory, "T_best": e.T_best,
             "bound": e.bound, "matmul_instructions": a.counts.instructions, **verdict_dict(a)}
        if prog.is_single:
            d.update(ceilings_dict(a.ceilings, hw))
            d["binding_roof"] = e.bound if a.ceilings.link is None or \
                a.ceilings.link.T <= e.T_best else "link"
        else:
            d["stages"] = [{"stage": s.name, "ops": list(s.stage.ops), "dtype": a.dtype,
                            "W": s.counts.flops, "matmul_instructions": s.ceilings.instructions,
                            "T": s.verdict.T, "limit": s.verdict.limit,
                            **ceilings_dict(s.ceilings, hw)} for s in a.stages]
        dump_json(d)
        return 0 if a.feasible else INFEASIBLE
    print(f"{a.name} on {hw.name} ({hw.scope}); {a.dtype}; roofs {hw.roofs}")
    print("\n".join(headline(a)))
    if prog.is_single:
        print(f"  W = {e.W:,} FLOPs in {a.counts.instructions:,} matmul instructions; roof P = "
              f"{e.P:.4g} FLOP/s, W/P = {fmt_time(e.t_compute)}; Q/BW = {fmt_time(e.t_memory)}")
        print("\n".join(ceilings_lines(a.ceilings)))
        return 0 if a.feasible else INFEASIBLE
    for s in a.stages:
        print(f"kernel {s.name} (ops {', '.join(s.stage.ops)}); {a.dtype}; W = {s.counts.flops:,} FLOPs; "
              f"T {fmt_time(s.verdict.T)} ({s.verdict.limit})")
        print("\n".join(ceilings_lines(s.ceilings)))
    return 0 if a.feasible else INFEASIBLE
