"""``loopsim search``: the tiling to write. Searches tile and block sizes (powers of two within the
sheet's limits, or ``--space``), loop orders and load placements of a spec; ranks feasible tilings
by attainable T, then Q, then SBUF peak; prints the top N with compare's columns. Closed forms and
the I/O lower bound prune; every reported tiling is confirmed by the exact count."""

from __future__ import annotations

from loopsim.base.limits import MAX_TOP, bounded
import sys

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.analyses import sweep
from loopsim.base.errors import InputError
from loopsim.base.fmt import fmt_time
from loopsim.cli.commands._common import add_kernel_options, dump_json


def register(sub) -> None:
    p = sub.add_parser("search", help="find the tiling to write (tiles, blocks, loop orders, hoisting)",
                       description=__doc__)
    add_kernel_options(p, scope=False)
    p.add_argument("--space", action="append", default=[], metavar="NAME=V1,V2,...|LO..HI",
                   help="values of a parameter to search (LO..HI: the powers of two between, and "
                        "both ends); default: powers of two within the sheet's tile limits")
    p.add_argument("--keep-order", action="store_true",
                   help="search parameters only: keep the spec's loop order and load placements")
    p.add_argument("--top", type=bounded("--top", 1, MAX_TOP), default=10, metavar="N",
                   help=f"tilings to show, 1 to {MAX_TOP:,} (default 10)")
    p.add_argument("-o", "--output", default=None, metavar="BEST.toml",
                   help="write the best tiling as a spec file")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw the Pareto fronts (T against SBUF peak and against Q)")
    from loopsim.analyses.parallel import add_options as add_parallel_options

    add_parallel_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.analyses.parallel import Pool, Progress, check_jobs
    from loopsim.analyses.search import engine

    if args.top < 1:
        raise InputError(f"--top {args.top} must be >= 1")
    from loopsim.base.outfile import figure_format, regular_target, require_suffix

    if args.output:
        require_suffix(args.output, (".toml",))
        regular_target(args.output)  # a device, FIFO or folder refused before any work
    if args.plot:
        figure_format(args.plot, "--plot")
    hw = hardware.load(args.hardware)
    problem = engine.Problem(args.spec, tuple(spec.parse_sets(args.sets).items()), args.hardware,
                             tuple(args.space), args.policy, args.sbuf_bytes, args.dtype,
                             not args.keep_order, args.top)
    jobs = None if args.scheduler else check_jobs(args.jobs)
    ctx = engine.context(problem)  # bad spec, --set or --space: one line before any worker starts
    try:
        with Pool(jobs, args.scheduler) as pool, \
                Progress(None, "search", quiet=args.quiet, unit="unit") as bar:
            out = engine.search(problem, pool, bar)
    except KeyboardInterrupt:
        print("loopsim: interrupted before any tiling was found", file=sys.stderr)
        return 130
    rows = [result_row(ctx, c, i + 1) for i, c in enumerate(out.top)]
    if args.output:
        write_best(ctx, out, args.output, hw)
    if args.plot:
        from loopsim.base.outfile import figure_format, write_atomic
        from loopsim.analyses.search.figure import front_figure

        fig = front_figure(out, hw)
        write_atomic(args.plot, lambda tmp: fig.savefig(tmp, format=figure_format(args.plot)),
                     "--plot")
    if args.json:
        dump_json({"spec": args.spec, "hardware": hw.name, "scope": hw.scope,
                   "policy": args.policy, "space": {k: list(v) for k, v in out.values.items()},
                   "structures_searched": out.structures_searched,
                   "space_size": out.space_size, "evaluated": out.evaluated,
                   "verdicts": out.verdicts, "infeasible": out.infeasible,
                   "seconds": out.seconds, "interrupted": out.interrupted,
                   "lower_bound_Q": out.lower_bound_Q, "best": rows[0], "top": rows,
                   "pareto": {"T_vs_sbuf_peak": [result_row(ctx, c, None) for c in out.front_sbuf],
                              "T_vs_Q": [result_row(ctx, c, None) for c in out.front_q]}})
    else:
        print(format_text(ctx, out, rows, hw))
    return 130 if out.interrupted else 0


def label_of(ctx, c) -> str:
    from loopsim.analyses.search import engine

    vals = " ".join(f"{k}={v}" for k, v in c.values)
    s = engine.structure_of(ctx, c)
    if s is None:
        return vals
    loads = " ".join(f"{ld.split()[1].split('[')[0]}@{lv}" for ld, lv in s["loads"].items())
    return f"{vals} | {' '.join(s['order'])}" + (f" | {loads}" if loads else "")


def result_row(ctx, c, rank: int | None) -> dict:
    """A compare row of one tiling, with its attainable T, binding limit, feasibility and
    structure (loop order outer to inner, the loop whose body holds each load)."""
    from loopsim.analyses.search import engine

    from loopsim.render.json import row_dict

    v = c.verdict
    a = v.report
    row = sweep.Row(sweep.Variant(label_of(ctx, c), ctx.problem.spec, a.program, c.values,
                                  a.program.name, a.program.params), a, best=rank == 1)
    d = row_dict(row, rank or 0)
    d.update({"structure": engine.structure_of(ctx, c), "searched": dict(c.values)})
    if rank is None:
        d.pop("rank")
        d.pop("best")
    return d


def best_text(ctx, out, hw) -> str:
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
    return write_spec(ctx.tpl, dict(c.values), kernel, header=header)


def write_best(ctx, out, path: str, hw) -> None:
    from loopsim.base.outfile import write_atomic

    text = best_text(ctx, out, hw)

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    write_atomic(path, write, "-o")


def format_text(ctx, out, rows: list[dict], hw) -> str:
    from loopsim.render.text import compare_table as format_table

    inputs = list(dict.fromkeys(n for d in rows for n in d.get("r", {})))
    best = out.top[0].verdict
    lb = out.lower_bound_Q
    what = "tile/block sizes, loop orders and load placements" if out.structures_searched else \
        "tile/block sizes (loop order as written)"
    lines = [f"search {ctx.problem.spec} on {hw.name}: {what}; "
             f"{out.evaluated:,} candidates evaluated ({out.verdicts:,} in full) of "
             f"{out.space_size:,} in {out.seconds:.2f} s"
             + (" (interrupted: best so far)" if out.interrupted else ""),
             f"best: T = {fmt_time(best.T)} ({best.limit}), Q = {best.Q:,} bytes"
             + (f" = {best.Q / lb:.3g}x the I/O lower bound" if lb else "")
             + f", SBUF peak {best.sbuf_peak_bytes:,} bytes", ""]
    lines.append(format_table(rows, hw, ctx.problem.policy, inputs))
    lines.append("  tiling: searched values | loop order outer to inner | tensor@loop whose body "
                 "holds its load")
    return "\n".join(lines)
