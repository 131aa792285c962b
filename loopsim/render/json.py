"""An :class:`loopsim.model.pipeline.Analysis` as plain JSON-ready values (the same numbers the text shows).

Keys carry their units: FLOPs and bytes are integers, times seconds, rates FLOP/s, BW bytes/s.
Non-finite floats become null when printed (:func:`clean`).
"""

from __future__ import annotations

import json
import math


def clean(o):
    """Non-finite floats -> None, tuples -> lists, recursively (strict JSON)."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    return o


def dumps(obj) -> str:
    return json.dumps(clean(obj), indent=2)


def residency_dict(res, buffers=()) -> dict:
    """SBUF use in one vocabulary: per partition on partitioned sheets (``unit`` says which), and
    the whole-SBUF bytes beside it."""
    unit = "bytes per partition" if res.lanes else "bytes"
    return {"fits": res.fits, "unit": unit, "what": res.what, "mode": res.mode,
            "partitions": res.lanes,
            "peak": res.peak_cost, "capacity": res.capacity_cost,
            "working_set": res.needed_cost,
            "largest_buffers": {n: b for n, b in buffers[:5]},
            "peak_bytes": res.peak_bytes, "capacity_bytes": res.capacity_bytes,
            "per_partition_peak_bytes": res.peak_cost if res.lanes else None,
            "per_partition_capacity_bytes": res.capacity_cost if res.lanes else None}


def verdict_dict(a) -> dict:
    v = a.verdict
    return {"T": v.T, "limit": v.limit, "limit_detail": v.detail, "times": dict(v.times),
            "feasible": v.feasible, "infeasible_reasons": list(v.reasons),
            "attainable_rate": a.W / v.T if v.T else None}


def entitlement_dict(e) -> dict:
    return {"W": e.W, "Q": e.Q, "I": e.I if math.isfinite(e.I) else None, "P": e.P, "BW": e.BW,
            "ridge": e.ridge, "T_compute": e.t_compute, "T_memory": e.t_memory,
            "T_best": e.T_best, "T_worst": e.T_worst, "rate": e.rate, "bound": e.bound}


def ceilings_dict(c, hw) -> dict:
    """The lower ceilings, PSUM, LNC and link of one kernel."""
    low = lowest(c)
    d = {"ceilings": [x.as_dict() for x in c.ceilings], "instruction_s": c.instruction_s,
         "lnc": {"cores": c.cores, "split": c.split, "sheet_physical_cores": hw.physical_cores},
         "psum": c.psum.as_dict(), "link": c.link.as_dict() if c.link else None,
         "lowest_ceiling": low}
    if c.work:
        d["engine_work"] = [{**w.as_dict(), "seconds": t} for w, t in c.work]
        d["assumed"] = [{**w.as_dict(), "seconds": t} for w, t in c.work if w.assumed]
    if c.notes:
        d["ceiling_notes"] = list(c.notes)
    return d


def lowest(c) -> str | None:
    """The Tensor Engine ceiling that binds (the lowest rate), or "tie" when every one of them
    is at the peak (none binds)."""
    te = [x for x in c.ceilings if x.factor is not None and x.name != "combined"]
    if not te:
        return c.lowest.name if c.lowest else None
    top = min(x.P for x in te)
    if all(x.factor >= 1 - 1e-12 for x in te):
        return "tie"
    return next(x.name for x in te if x.P <= top * (1 + 1e-12))


def _link_roofs(a, d: dict) -> None:
    """With a link roof, T_best/T_worst/rate/bound are over all three roofs (the curriculum's
    entitlement is the minimum over every roof)."""
    c = a.ceilings
    if c is None or c.link is None:
        d["binding_roof"] = a.entitlement.bound
        return
    e = a.entitlement
    t = {"compute": e.t_compute, "memory": e.t_memory, "link": c.link.T}
    best = max(t.values())
    bound = e.bound if c.link.T <= max(e.t_compute, e.t_memory) else "link"
    d.update({"T_link": c.link.T, "T_best": best, "T_worst": sum(t.values()),
              "rate": e.W / best if best else math.inf, "bound": bound, "binding_roof": bound})


def _role(t, a) -> str:
    """"output" (written to HBM), "input" (read from HBM) or "on-chip" (made and used on chip: a
    PSUM accumulator, an op's intermediate; never crosses the link)."""
    if t.output:
        return "output"
    made = {op.out for op in getattr(a.program, "ops", ())}
    if t.name in made or (t.read_bytes == 0 and t.write_bytes == 0):
        return "on-chip"
    return "input"


def analysis_dict(a) -> dict:
    """Everything ``entitle --json`` prints for an analysis."""
    c, e, hw = a.counts, a.entitlement, a.hardware
    d = {"kernel": c.kernel, "spec_file": a.program.path, "spec_bundled": a.program.bundled,
         "hardware": hw.name, "hardware_file": hw.path, "scope": hw.scope, "roofs": hw.roofs,
         **({"calibrated": dict(hw.calibrated)} if hw.calibrated else {}), "policy": c.policy, "dtype": a.dtype, "params": dict(a.params),
         **entitlement_dict(e),
         **verdict_dict(a),
         "compulsory_Q": c.compulsory_bytes,
         "Q_over_compulsory": c.Q / c.compulsory_bytes if c.compulsory_bytes else None,
         "matmul_instructions": c.instructions,
         "tensors": {t.name: {"bytes": t.bytes, "read_bytes": t.read_bytes,
                              "write_bytes": t.write_bytes, "r": t.r,
                              "role": _role(t, a)} for t in c.tensors},
         "sbuf": residency_dict(c.residency, _worst_buffers(a))}
    lb = a.lower_bound
    d["lower_bound_Q"] = lb.Q if lb is not None else None
    d["Q_over_bound"] = lb.ratio(c.Q) if lb is not None and lb.Q else None
    if a.ceilings is not None:
        d.update(ceilings_dict(a.ceilings, hw))
    else:
        d["psum"] = {"fits": all(s.ceilings.psum.fits for s in a.stages),
                     "kernels": {s.name: s.ceilings.psum.as_dict() for s in a.stages}}
    _link_roofs(a, d)
    tls = [(s.name, getattr(s, "timeline", None)) for s in a.stages]
    if any(t is not None for _, t in tls):  # the engine timeline (docs/timeline.md), per kernel
        d["timeline"] = {n: t.as_dict() for n, t in tls if t is not None}
    # on calibrated roofs: whether T is a prediction (its limit a fitted roof) or still a bound
    from loopsim.model.measured import roof_status

    pred, why = roof_status(hw, a.verdict.limit, a.dtype, a.W, a.Q)
    d["limit_roof_fitted"] = None if hw.roofs != "measured" else pred
    d["T_caveat"] = why or None
    if not a.program.is_single:
        d.update(program_dict(a))
    return d


def _worst_buffers(a):
    worst = max(a.stages, key=lambda s: s.counts.residency.peak_cost)
    return worst.sbuf_buffers


def step_dict(s) -> dict:
    return {"op": s.op, "kind": s.kind, "kernel": s.kernel, "engine": s.engine, "W": s.W,
            "elements": s.elements, "executions": s.executions,
            "engine_seconds": dict(s.engine_seconds), "Q": s.Q,
            "T_compute": s.t_compute, "T_memory": s.t_memory, "T_best": s.T_best,
            "T_worst": s.T_worst, "bound": s.bound, "binding": s.binding}


def intermediate_dict(im) -> dict:
    return {"bytes": im.bytes, "write_bytes": im.write_bytes, "read_bytes": im.read_bytes,
            "k": im.k, "producer": im.producer, "consumers": list(im.consumers),
            "fused": im.fused, "spilled": im.spilled}


def program_dict(a) -> dict:
    """What a schedule of kernels adds: per kernel counts and verdicts, intermediates, steps."""
    d = {"schedule": {s.name: list(s.stage.ops) for s in a.stages},
         "kernels": [{"kernel": s.name, "ops": list(s.stage.ops), "W": s.counts.flops,
                      "Q": s.counts.Q, "T": s.verdict.T, "limit": s.verdict.limit,
                      "feasible": s.verdict.feasible,
                      "sbuf": residency_dict(s.counts.residency, s.sbuf_buffers),
                      "psum": s.ceilings.psum.as_dict(),
                      "times": dict(s.verdict.times)} for s in a.stages],
         "intermediates": {im.name: intermediate_dict(im) for im in a.intermediates},
         "steps": [step_dict(s) for s in a.steps],
         "notes": notes(a)}
    return d


def notes(a) -> list[str]:
    """Spills of fused intermediates, and kernels that cannot run as written."""
    out = []
    for im in a.intermediates:
        if im.spilled:
            out.append(f"{im.name} SPILLED: fused in kernel {a.program.stage_of(im.producer).name} "
                       f"but evicted from SBUF before its last use (k = {im.k:.4g})")
    for s in a.stages:
        r = s.counts.residency
        if not r.fits:
            out.append(f"kernel {s.name}: SBUF {r.verdict()}" + (
                "; as written its intermediates never cross HBM, but the nest cannot run in "
                "this SBUF: replay with --policy lru or opt to see the spill"
                if a.policy == "as-written" and a.intermediates else ""))
    return out


def row_dict(row, rank: int) -> dict:
    """One row of ``compare`` (and ``search``): the tiling, its counts and its verdict."""
    v = row.variant
    d: dict = {"rank": rank, "label": v.label, "spec": v.spec,
               "kernel": v.name, "params": dict(v.params), "varied": dict(v.varied),
               "best": row.best}
    a = row.analysis
    if a is None:
        return {**d, "feasible": False, "fits": False, "error": row.error, "T": None,
                "limit": None, "infeasible_reasons": [row.error], "T_best": None, "T_worst": None}
    c, e = a.counts, a.entitlement
    res = c.residency
    inputs = set(a.program.inputs)  # tensors read from HBM (not on-chip ones such as a PSUM tile)
    psum_needed = max(s.ceilings.psum.needed_banks for s in a.stages)
    out = {**d, "W": e.W, "Q": e.Q,
           "r": {t.name: t.r for t in c.tensors if t.name in inputs},
           "compulsory_Q": c.compulsory_bytes,
           "Q_over_compulsory": e.Q / c.compulsory_bytes if c.compulsory_bytes else None,
           "I": e.I if math.isfinite(e.I) else None,
           **verdict_dict(a),
           "T_best": e.T_best, "T_worst": e.T_worst, "bound": e.bound, "rate": e.rate,
           "dtype": a.dtype,
           "sbuf_peak_bytes": res.peak_bytes, "sbuf_capacity_bytes": res.capacity_bytes,
           "fits": res.fits,
           "psum_banks": psum_needed, "psum_capacity_banks": a.stages[0].ceilings.psum.banks,
           "psum_fits": all(s.ceilings.psum.fits for s in a.stages)}
    lb = a.lower_bound
    out["lower_bound_Q"] = lb.Q if lb else None
    out["Q_over_bound"] = lb.ratio(e.Q) if lb and lb.Q else None
    if a.ceilings is not None:
        low = lowest(a.ceilings)
        lc = next((x for x in a.ceilings.ceilings if x.name == low), None)
        out["lowest_ceiling"] = None if lc is None else {"name": lc.name, "P": lc.P, "T": lc.T}
        if low == "tie":
            out["lowest_ceiling"] = {"name": "tie", "P": None, "T": None}
    _link_roofs(a, out)
    return out
