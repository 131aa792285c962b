"""A search's :class:`loopsim.analyses.search.engine.Outcome` as JSON-ready values, text and a spec file.

The same rows as ``compare`` (:func:`loopsim.render.json.row_dict`) for the top tilings, the Pareto
points and the runner-ups of other kinds; where the space went (evaluated, pruned by which bound,
skipped); the best T against W/P and the I/O lower bound. Times in seconds, bytes as integers.
"""

from __future__ import annotations

from loopsim.model.verdict import transfers_s


def label_of(ctx, c) -> str:
    """``TN=512 TM=128 | mb nb k | A@mb B@nb``: values, loop order outer to inner, load levels."""
    from loopsim.analyses.search import engine

    vals = " ".join(f"{k}={v}" for k, v in c.values)
    s = engine.structure_of(ctx, c)
    if s is None:
        return vals
    split = set(s.get("split", ()))
    def tile(ld: str) -> str:
        text = ld.removeprefix("load ").replace(" ", "")
        return text if ld in split else text.split("[")[0]

    loads = " ".join(f"{tile(ld)}@{lv}" for ld, lv in s["loads"].items())
    order = f" | {' '.join(s['order'])}" if s["order"] else ""  # a program's loops stay as written
    return f"{vals}{order}" + (f" | {loads}" if loads else "")


def result_row(ctx, c, rank: int | None) -> dict:
    """A compare row of one tiling, with its attainable T, binding limit, feasibility and
    structure (loop order outer to inner, the loop whose body holds each load)."""
    from loopsim.analyses import sweep
    from loopsim.analyses.search import engine
    from loopsim.render.json import row_dict

    a = c.verdict.report
    row = sweep.Row(sweep.Variant(label_of(ctx, c), ctx.problem.spec, a.program, c.values,
                                  a.program.name, a.program.params), a, best=rank == 1)
    d = row_dict(row, rank or 0)
    d.update({"structure": engine.structure_of(ctx, c), "searched": dict(c.values),
              "transfers_s": transfers_s(a.verdict)})
    if rank is None:
        d.pop("rank")
        d.pop("best")
    return d


def search_dict(ctx, out, hw) -> dict:
    """Everything ``search --json`` prints."""
    p = out.problem
    rows = [result_row(ctx, c, i + 1) for i, c in enumerate(out.top)]
    best = out.top[0].verdict
    return {"spec": p.spec, "hardware": hw.name, "scope": hw.scope, "policy": p.policy,
            "space": {k: list(v) for k, v in out.values.items()},
            "structures_searched": out.structures_searched,
            "space_size": out.space_size, "evaluated": out.evaluated,
            "verdicts": out.verdicts, "infeasible": out.infeasible,
            "accounting": out.accounting(),
            "seconds": out.seconds, "interrupted": out.interrupted,
            "W_over_P": out.W_over_P, "T_lower_bound_Q": out.T_lower_bound_Q,
            "T_over_W_over_P": best.T / out.W_over_P if out.W_over_P else None,
            "lower_bound_Q": out.lower_bound_Q, "best": rows[0], "top": rows,
            "runner_ups": [result_row(ctx, c, None) for c in out.runner_ups],
            "pareto": {"T_vs_sbuf_peak": [result_row(ctx, c, None) for c in out.front_sbuf],
                       "T_vs_Q": [result_row(ctx, c, None) for c in out.front_q]}}


def best_text(ctx, out, hw, name: str | None = None) -> str:
    """The best tiling as a spec file whose kernel is called ``name`` (default the spec's)."""
    from loopsim.analyses.search import engine
    from loopsim.analyses.search.writer import write_spec

    c = out.top[0]
    v = c.verdict
    lb = out.lower_bound_Q
    over = f" ({v.Q / lb:.3g}x the I/O lower bound)" if lb else ""
    header = (f"Found by loopsim search {ctx.problem.spec} on {hw.name}: T = {v.T:.6g} s "
              f"({v.limit}), Q = {v.Q:,} bytes{over},\nSBUF peak {v.sbuf_peak_bytes:,} bytes; "
              f"best of {out.evaluated:,} candidates.")
    kernel = engine.kernel_of(ctx, c) if ctx.tpl.kernel is not None else None
    placed = engine.kernel_of(ctx, c) if (ctx.moves or ctx.staged) and kernel is None else None
    return write_spec(ctx.tpl, dict(c.values), kernel, header=header, name=name, program=placed)


def accounting_lines(out) -> list[str]:
    """Where the space went, in words."""
    from loopsim.base.fmt import fmt_time

    per = f" x {out.structures:,} structures" if out.structures > 1 else ""
    lines = [f"space: {out.points:,} points{per} = {out.space_size:,} candidates; "
             f"{out.verdicts:,} evaluated in full ({out.infeasible:,} cannot run)"]
    pruned = []
    if out.pruned_floor:
        pruned.append(f"{out.pruned_floor:,} points by their floor (W/P, the I/O lower bound, "
                      "the Tensor Engine floor of their tiles)")
    if out.pruned_structure:
        pruned.append(f"{out.pruned_structure:,} candidates by their Q through HBM and the DMA")
    if pruned:
        lines.append("  pruned (could not beat the reported ones): " + "; ".join(pruned))
    skipped = []
    if out.not_tilings:
        skipped.append(f"{out.not_tilings:,} points that are not tilings (a step above its "
                       "extent, or a default value that does not divide it)")
    if out.unfit:
        skipped.append(f"{out.unfit:,} points whose one instruction's tiles exceed SBUF")
    if out.invalid:
        skipped.append(f"{out.invalid:,} points refused (tiles beyond the sheet's limits, the "
                       "kernel's own checks, or loops that skip work at those values)")
    if skipped:
        lines.append("  skipped: " + "; ".join(skipped))
    b = out.top[0].verdict
    vs = [f"W/P = {fmt_time(out.W_over_P)} (T = {b.T / out.W_over_P:.3g}x)"] if out.W_over_P else []
    if out.T_lower_bound_Q:
        vs.append(f"the I/O lower bound's time {fmt_time(out.T_lower_bound_Q)} "
                  f"(T = {b.T / out.T_lower_bound_Q:.3g}x)")
    if vs:
        lines.append("  best T against " + " and ".join(vs))
    return lines


def format_text(ctx, out, hw) -> str:
    """The text report: the summary, where the space went, the top table, the runner-ups."""
    from loopsim.base.fmt import fmt_time
    from loopsim.render.text import compare_table

    rows = [result_row(ctx, c, i + 1) for i, c in enumerate(out.top)]
    inputs = list(dict.fromkeys(n for d in rows for n in d.get("r", {})))
    best = out.top[0].verdict
    lb = out.lower_bound_Q
    what = ("tile/block sizes and load placements (loops as written)" if ctx.moves and not ctx.staged else
            "tile/block sizes, loop orders and load placements") if out.structures_searched else \
        "tile/block sizes (loop order as written)"
    lines = [f"search {ctx.problem.spec} on {hw.name}: {what}; "
             f"{out.evaluated:,} candidates evaluated ({out.verdicts:,} in full) of "
             f"{out.space_size:,} in {out.seconds:.2f} s"
             + (" (interrupted: best so far)" if out.interrupted else ""),
             f"best: T = {fmt_time(best.T)} ({best.limit}), Q = {best.Q:,} bytes"
             + (f" = {best.Q / lb:.3g}x the I/O lower bound" if lb else "")
             + f", SBUF peak {best.sbuf_peak_bytes:,} bytes", *accounting_lines(out), ""]
    lines.append(compare_table(rows, hw, ctx.problem.policy, inputs))
    lines.append("  tiling: searched values | loop order outer to inner | tensor@loop whose body "
                 "holds its load (tensor[tile]@loop: a ':' tile split by that loop)")
    if out.runner_ups:
        lines.append("runner-ups with other values (the best structure of each):")
        for c in out.runner_ups:
            v = c.verdict
            lines.append(f"  {label_of(ctx, c)}: T = {fmt_time(v.T)} ({v.limit}), "
                         f"transfers {fmt_time(transfers_s(v.verdict))}, Q = {v.Q:,} bytes")
    return "\n".join(lines)


def alternatives_text(ranked, hw) -> str:
    """Several specs of the same work searched (fused against unfused, say): each one's report,
    then their bests side by side, ranked by the same key as the tilings within each."""
    from loopsim.render.text import compare_table

    parts = [format_text(ctx, out, hw) for ctx, out in ranked]
    rows = [result_row(ctx, out.top[0], i + 1) for i, (ctx, out) in enumerate(ranked)]
    for r, (ctx, out) in zip(rows, ranked):
        r["label"] = f"{out.problem.spec}: {r['label']}"
    inputs = list(dict.fromkeys(n for d in rows for n in d.get("r", {})))
    ctx0, out0 = ranked[0]
    return "\n\n".join(parts + [f"the best of each of {len(ranked)} alternatives (the same work), "
                                 f"ranked:\n" + compare_table(rows, hw, out0.problem.policy, inputs)])
