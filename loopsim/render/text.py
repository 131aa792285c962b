"""Readable tables of an analysis: the ``entitle`` report, the ceilings, the ``compare`` table.

The headline comes first: the attainable time T and what binds it, or, for a kernel that cannot
run, that it cannot and why. Every number here is also in the JSON (:mod:`loopsim.render.json`).
"""

from __future__ import annotations

import math

from loopsim.base.fmt import fmt_time, si
from loopsim.render.json import lowest


def headline(a) -> list[str]:
    """The verdict in two or three lines."""
    v = a.verdict
    from loopsim.model.measured import roof_status

    predicted, why = roof_status(a.hardware, v.limit, a.dtype, a.W, a.Q)
    word = "bound" if not predicted else "predicted" if a.hardware.roofs == "measured" else "attainable"
    lines = []
    if not v.feasible:
        lines.append(f"  CANNOT RUN as written: {v.reasons[0]}")
        lines += [f"               also: {r}" for r in v.reasons[1:]]
        lines.append(f"  T (if it could run)           {fmt_time(v.T):>12}   limit: {v.limit}")
    else:
        rate = f"   ({si(a.W / v.T, 'FLOP/s')}, {a.W / v.T / a.entitlement.P:.1%} of P)" \
            if a.W and v.T else ""
        lines.append(f"  T ({word})             {fmt_time(v.T):>12}   limit: {v.limit}{rate}")
    if why:
        lines.append(f"    {why}")
    if v.detail:
        lines.append(f"    {v.detail}")
    return lines


def analysis_text(a) -> str:
    """The ``entitle`` report."""
    c, e, hw = a.counts, a.entitlement, a.hardware
    params = ", ".join(f"{k}={v}" for k, v in a.params)
    lines = [f"{c.kernel} on {hw.name} ({hw.scope}); policy {c.policy}; {a.dtype}",
             f"  {hw.calibration}" if hw.calibration else None,
             f"  params: {params}" if params else None]
    lines += headline(a)
    lines.append("")
    lines.append(f"  W (Tensor Engine)   {e.W:>20,} FLOPs   ({c.instructions:,} matmul instructions)")
    lines.append("  Q by tensor:")
    lines.append(f"    {'tensor':<10}{'bytes':>16}{'read':>18}{'written':>18}{'r':>9}")
    for t in c.tensors:
        lines.append(f"    {t.name:<10}{t.bytes:>16,}{t.read_bytes:>18,}{t.write_bytes:>18,}{t.r:>9.4g}")
    lines.append(f"  Q                   {e.Q:>20,} bytes")
    over = f"   (Q is {e.Q / c.compulsory_bytes:.3g}x this)" if c.compulsory_bytes else ""
    lines.append(f"  compulsory Q        {c.compulsory_bytes:>20,} bytes{over}")
    lines.append(f"  I = W/Q             {e.I:>20.4g} FLOPs/byte")
    lines.append(f"  P ({a.dtype})          {si(e.P, 'FLOP/s'):>20}")
    lines.append(f"  BW                  {si(e.BW, 'B/s'):>20}")
    lines.append(f"  ridge I* = P/BW     {e.ridge:>20.4g} FLOPs/byte")
    lines.append(f"  W/P                 {fmt_time(e.t_compute):>20}")
    lines.append(f"  Q/BW                {fmt_time(e.t_memory):>20}")
    lines.append(f"  T_best              {fmt_time(e.T_best):>20}   {e.bound}-bound")
    lines.append(f"  T_worst             {fmt_time(e.T_worst):>20}")
    if e.W:
        lines.append(f"  entitled rate       {si(e.rate, 'FLOP/s'):>20}   ({e.rate / e.P:.1%} of P)")
    lines.append(f"  SBUF ({c.residency.what}, {c.residency.mode}): {sbuf_verdict(a)}")
    if a.lower_bound is not None:
        lb = a.lower_bound
        lines.append(f"  I/O lower bound     {lb.Q:>20,} bytes   (Q is {lb.ratio(e.Q):.3g}x this; "
                     f"{lb.binding}, S = {'SBUF + PSUM' if lb.psum_bytes else 'fast memory'} = {lb.fast_bytes:,} bytes)")
    lines.append("  times (every roof and ceiling; T is the largest):")
    for name, t in a.verdict.times:
        mark = "  <- limit" if name == a.verdict.limit else ""
        lines.append(f"    {name:<16}{fmt_time(t):>12}{mark}")
    if a.ceilings is not None:
        lines += roof_lines(a)
        lines.append("  lower ceilings (Tensor Engine, other engines, links):")
        lines += ceilings_lines(a.ceilings, "    ")
    if not a.program.is_single:
        lines += program_lines(a)
    return "\n".join(l for l in lines if l is not None)


def sbuf_verdict(a) -> str:
    """``fits (… of … bytes per partition)`` plus the largest buffers at the peak."""
    res = a.counts.residency
    worst = max(a.stages, key=lambda s: s.counts.residency.peak_cost)
    top = ", ".join(f"{n} {b:,}" for n, b in worst.sbuf_buffers[:3])
    return res.verdict() + (f"; largest: {top}" if top else "")


def roof_lines(a) -> list[str]:
    hw, e, c = a.hardware, a.entitlement, a.ceilings
    lines = [f"  roofs: {hw.roofs}" + (" (measured: from the sheet's [measured] section)"
                                       if hw.roofs == "measured" else " (from the documentation)")]
    if c.link is not None:
        t = [e.t_compute, e.t_memory, c.link.T]
        lines.append(f"  link roof: {c.link.bytes:,} bytes / {c.link.bw:.4g} B/s = {fmt_time(c.link.T)}"
                     f"; over all roofs T_best = {fmt_time(max(t))}, T_worst = {fmt_time(sum(t))}")
    return lines


def ceilings_lines(c, indent: str = "  ") -> list[str]:
    """The ceilings as a table, one line of explanation each."""
    if not c.ceilings and not c.psum.banks:  # a flat target: its roofs are all there is
        return [f"{indent}none: this machine has only its roofs P and BW"] + \
            [f"{indent}note: {n}" for n in c.notes]
    lines = [f"{indent}{'ceiling':<15}{'factor':>8}{'P (FLOP/s)':>14}{'T':>12}  why"]
    for x in c.ceilings:
        fac = f"{x.factor:.4g}" if x.factor is not None else "-"
        t = fmt_time(x.T) if x.T is not None and math.isfinite(x.T) else "-"
        lines.append(f"{indent}{x.name:<15}{fac:>8}{x.P:>14.4g}{t:>12}  {x.explanation}")
    low = lowest(c)
    if low == "tie":
        lines.append(f"{indent}lowest ceiling: none binds (every Tensor Engine factor is 1)")
    elif low is not None:
        lines.append(f"{indent}lowest ceiling: {low}")
    if c.instruction_s is not None:
        lines.append(f"{indent}time per matmul instruction {fmt_time(c.instruction_s)} (mean of "
                     f"{c.instructions:,})")
    if c.cores > 1:
        lines.append(f"{indent}LNC: loop {c.split} split across {c.cores} physical cores (SPMD): each core "
                     "loads its slice of the split dimension and all of every tensor without it")
    lines.append(f"{indent}PSUM: {c.psum.verdict()}")
    if c.psum.engine and c.psum.evacuated_elements:
        lines.append(f"{indent}PSUM evacuation: {c.psum.evacuated_elements:,} elements on "
                     f"{c.psum.engine}, {fmt_time(c.psum.T_evacuate)}, 0 HBM bytes")
    for w, t in c.work:
        if not w.assumed:
            lines.append(f"{indent}engine work: {w}" + (f", {fmt_time(t)}" if t is not None else ""))
    for n in c.notes:
        lines.append(f"{indent}note: {n}")
    return lines


def program_lines(a) -> list[str]:
    """A schedule of kernels: per kernel Q, SBUF, PSUM and T; intermediates; steps."""
    from loopsim.render.json import notes

    lines = ["", "  schedule: " + " | ".join(f"{s.name} [{', '.join(s.stage.ops)}]" for s in a.stages)]
    for s in a.stages:
        lines.append(f"    kernel {s.name:<10} Q {s.counts.Q:>16,} bytes   "
                     f"T {fmt_time(s.verdict.T):>10} ({s.verdict.limit})   "
                     f"SBUF {s.counts.residency.verdict()}; PSUM {s.ceilings.psum.needed_banks} of "
                     f"{s.ceilings.psum.banks} banks")
    if a.intermediates:
        lines.append("  intermediates (k = crossings of HBM / size, from the replay):")
        lines.append(f"    {'name':<10}{'bytes':>16}{'HBM writes':>16}{'HBM reads':>16}{'k':>8}  where")
        for im in a.intermediates:
            where = "fused" if im.fused else "across kernels"
            lines.append(f"    {im.name:<10}{im.bytes:>16,}{im.write_bytes:>16,}{im.read_bytes:>16,}"
                         f"{im.k:>8.4g}  {where}{' SPILLED' if im.spilled else ''}")
    steps = a.steps
    if steps:
        lines.append("  steps (each against its own engine, counted per execution):")
        lines.append(f"    {'op':<10}{'kind':<15}{'engine':<8}{'W (FLOPs)':>16}{'runs':>10}{'Q (bytes)':>14}"
                     f"{'T_compute':>12}{'T_memory':>12}{'T_best':>12}  bound")
        for s in steps:
            lines.append(f"    {s.op:<10}{s.kind:<15}{s.engine:<8}{s.W:>16,}{s.executions:>10,}{s.Q:>14,}"
                         f"{fmt_time(s.t_compute):>12}{fmt_time(s.t_memory):>12}"
                         f"{fmt_time(s.T_best):>12}  {s.bound}")
    lines += [f"  note: {n}" for n in notes(a)]
    return lines


def compare_table(dicts: list[dict], hw, policy: str, inputs: list[str]) -> str:
    """The ``compare`` table: one line per tiling, ranked; a row that cannot run says why."""
    width = max(12, *(len(d["label"]) for d in dicts))
    rw = max(8, *(len(n) + 3 for n in inputs)) if inputs else 8  # r_NAME columns
    head = (f"  {'#':>2}  {'tiling':<{width}} {'T':>10} {'limit':<14}{'Q':>15} "
            + "".join(f"{'r_' + n:>{rw}}" for n in inputs)
            + f" {'Q/Qc':>6} {'Q/LB':>6} {'I':>8} {'T_best':>10}  {'SBUF peak':>13} {'PSUM':>6}")
    lines = [f"{len(dicts)} tilings on {hw.name} ({hw.scope}); policy {policy}; "
             "ranked: can run first, then by T (attainable); ties: transfers' time, instructions, Q, SBUF peak"]
    if hw.calibration:
        lines.append(f"  {hw.calibration}")
    lines.append(head)
    for d in dicts:
        mark = "*" if d["best"] else ("!" if not d["feasible"] else " ")
        if d.get("error"):
            lines.append(f"{mark} {d['rank']:>2}  {d['label']:<{width}} cannot analyse: {d['error']}")
            continue
        qc = f"{d['Q_over_compulsory']:.3g}" if d["Q_over_compulsory"] else "-"
        qb = f"{d['Q_over_bound']:.3g}" if d.get("Q_over_bound") else "-"
        i = f"{d['I']:.4g}" if d["I"] is not None else "inf"
        psum = f"{d['psum_banks']}/{d['psum_capacity_banks']}"
        lines.append(
            f"{mark} {d['rank']:>2}  {d['label']:<{width}} {fmt_time(d['T']):>10} {d['limit']:<14}"
            f"{d['Q']:>15,} "
            + "".join(f"{d['r'][n]:>{rw}.3g}" if n in d["r"] else f"{'-':>{rw}}" for n in inputs)
            + f" {qc:>6} {qb:>6} {i:>8} {fmt_time(d['T_best']):>10}  {d['sbuf_peak_bytes']:>13,} {psum:>6}")
        if not d["feasible"]:
            lines.append(f"        cannot run: {'; '.join(d['infeasible_reasons'])}")
        m = d.get("measured")
        if m:
            mfu = f"MFU {m['MFU']:.1%}, " if d["W"] else ""  # no FLOPs, no MFU (as in entitle)
            pred = (f" and {m['fraction_of_predicted']:.1%} of the predicted {fmt_time(m['T_predicted'])}"
                    if m.get("fraction_of_predicted") is not None else "")
            lines.append(f"      measured {fmt_time(m['T'])}: gap {fmt_time(m['gap'])}, "
                         f"{m['fraction_of_entitlement']:.1%} of entitlement{pred}, {mfu}"
                         f"achieved BW {m['achieved_BW'] / 1e9:.4g} GB/s ({m['BW_share']:.1%} of BW)")
            lines += [f"        {x['line']}" for x in m["disagreements"]]
    lines.append("  * best (can run)   ! cannot run   T: attainable time (max over every roof and "
                 "ceiling)   limit: what sets T   Q/Qc: Q over compulsory Q   Q/LB: Q over the I/O "
                 "lower bound   SBUF peak: bytes over all partitions   PSUM: banks needed/available")
    return "\n".join(lines)
