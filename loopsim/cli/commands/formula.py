"""``loopsim formula``: Q of a tiling as a closed form in the spec's symbols, evaluated, and checked
against the simulator: as written (exact), and under LRU in the two capacity regimes with closed
forms (only the working tiles fit; everything reused fits), with the regime the SBUF capacity is
in, and the I/O lower bound for matmul-shaped kernels."""

from __future__ import annotations

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.cli.commands._common import add_kernel_options, dump_json, program_of, refuse_kernel_reference


def register(sub) -> None:
    p = sub.add_parser("formula", help="closed-form Q of a tiling (symbolic and evaluated)",
                       description=__doc__)
    add_kernel_options(p, scope=False)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.count.formula import derive
    from loopsim.model.pipeline import analyze_kernel

    refuse_kernel_reference(args.spec, "loopsim formula derives closed forms")
    program_of(args)  # the one loader validates the spec ([parallel], [lnc]) as every command does
    hw = hardware.load(args.hardware)
    d = derive(args.spec, spec.parse_sets(args.sets), hw, sbuf_bytes=args.sbuf_bytes)
    # --policy: also the simulated Q of that policy at this SBUF, beside the closed forms
    q = analyze_kernel(d.kernel, hw, policy=args.policy, sbuf_bytes=args.sbuf_bytes).counts.Q
    if args.json:
        dump_json({"hardware": hw.name, **d.as_dict(), "policy": args.policy, "policy_Q": q})
        return 0
    print(format_text(d, hw))
    print(f"  simulated Q under --policy {args.policy} at this SBUF: {q:,} bytes")
    return 0


def _formula_lines(f, indent: str = "    ") -> list[str]:
    lines = []
    w = max(6, *(len(t.name) for t in f.tensors))
    for t in f.tensors:
        for what, text, value in (("read", t.read_text, t.read_bytes), ("write", t.write_text, t.write_bytes)):
            if text == "0":
                continue
            r = f"   r = {t.r_text}" if what == "read" and t.r_text else ""
            lines.append(f"{indent}{t.name:<{w}} {what:<5} {text} = {value:,} bytes{r}")
    lines.append(f"{indent}Q = {f.q_text}")
    lines.append(f"{indent}  = {f.Q:,} bytes")
    return lines


def format_text(d, hw) -> str:
    aw, reg = d.as_written, d.regimes
    params = ", ".join(f"{k}={v}" for k, v in d.params)
    sim_q = sum(r + w for r, w in d.simulated_as_written.values())
    unit = reg.lanes or 1
    per = " per partition" if reg.lanes else ""
    lines = [f"{d.kernel.name} on {hw.name}", f"  params: {params}", "",
             f"  as written ({'exact' if aw.claimed else 'no closed form claimed: ' + aw.reason}):"]
    lines += _formula_lines(aw)
    lines.append(f"    simulated Q = {sim_q:,} bytes" + (" (agrees)" if sim_q == aw.Q else " (DIFFERS)"))
    lines.append("")
    lines.append(f"  LRU at SBUF {reg.capacity * unit:,} bytes ({reg.capacity:,}{per}): "
                 f"regime '{reg.regime}', simulated Q = {reg.simulated_Q:,} bytes")
    below = "and above" if reg.working_below is None else f"to below {reg.working_below * unit:,}"
    for f, span in ((reg.working, f"from {reg.need * unit:,} bytes {below}"),
                    (reg.all, f"from {reg.all_from * unit:,} bytes")):
        lines.append(f"  {f.title} ({span}" + ("" if f.claimed else f"; not claimed: {f.reason}") + "):")
        lines += _formula_lines(f)
    if reg.regime == "between":
        lines.append("  this capacity lies between the two regimes: partial reuse, no closed form; "
                     "the simulated Q above is exact")
    if d.lower_bound is not None:
        lb = d.lower_bound
        lines.append("")
        lines.append(f"  {lb.describe()}")
        lines.append(f"  as written Q / bound = {lb.ratio(sim_q):.3g}; "
                     f"LRU Q / bound = {lb.ratio(reg.simulated_Q):.3g}")
    return "\n".join(lines)
