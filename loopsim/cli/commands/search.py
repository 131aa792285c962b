"""``loopsim search``: the tiling to write. Searches a spec's tile and block sizes (powers of two
within the sheet's limits, or ``--space``), loop orders and load placements; a program of several
ops over its parameters; a kernel reference PATH.py::FUNCTION over its integer keyword parameters
(EXECUTES that file, once per point). Ranks by the verdict ``entitle`` prints: feasible first,
then attainable T, ties broken by the transfers' time at their sizes, instructions, Q and SBUF
peak; prints the top N
with compare's columns, where the space went and the runner-ups of other values. Closed forms
and lower bounds prune; every reported tiling is confirmed by the exact count."""

from __future__ import annotations

from loopsim.base.limits import MAX_TOP, bounded
import sys

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.base.errors import InputError
from loopsim.cli.commands._common import add_kernel_options, dump_json, parse_buffers


def register(sub) -> None:
    p = sub.add_parser("search", help="find the tiling to write (tiles, blocks, loop orders, hoisting)",
                       description=__doc__)
    add_kernel_options(p, many=True, scope=False)
    p.add_argument("--space", action="append", default=[], metavar="NAME=V1,V2,...|LO..HI[:STEP|:x2]",
                   help="values of a parameter to search, in compare --vary's grammar: a list, "
                        "LO..HI:x2 (LO, 2 LO, ...) or LO..HI:STEP (a bare LO..HI, every integer, is "
                        "refused as a search space); NAME 'buffers': SBUF buffers per load); default: powers of two "
                        "within the sheet's tile limits (a kernel reference: default/8 .. default*8)")
    p.add_argument("--buffers", default=None, metavar="N|TENSOR=N,...",
                   help="SBUF buffers a load inside a loop rotates through, for every point "
                        "(2: double buffering); --space buffers=1,2 searches it instead")
    p.add_argument("--keep-order", action="store_true",
                   help="search parameters only: keep the spec's loop order and load placements")
    p.add_argument("--top", type=bounded("--top", 1, MAX_TOP), default=10, metavar="N",
                   help=f"tilings to show, 1 to {MAX_TOP:,} (default 10)")
    p.add_argument("-o", "--output", default=None, metavar="BEST.toml",
                   help="write the best tiling as a spec file (its kernel named after the file)")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw the Pareto fronts (T against SBUF peak and against Q)")
    from loopsim.analyses.parallel import add_options as add_parallel_options

    add_parallel_options(p)
    p.set_defaults(func=run)


def problem_of(args, ref: str | None = None, sets: dict | None = None,
               space_items: tuple | None = None):
    """The :class:`loopsim.analyses.search.engine.Problem` the options describe (for ``ref``,
    with ``sets`` and ``space_items`` when given: one alternative of several)."""
    from loopsim.analyses.search import engine

    kargs = (tuple(args.nki_args), tuple(args.nki_kwargs), args.nki_grid, tuple(args.nki_paths),
             tuple(args.nki_registers))
    sets = spec.parse_sets(args.sets) if sets is None else sets
    return engine.Problem(ref or args.spec[0], tuple(sets.items()), args.hardware,
                          tuple(args.space) if space_items is None else space_items, args.policy,
                          args.sbuf_bytes, args.dtype, not args.keep_order, args.top, kargs,
                          parse_buffers(args.buffers))


def alternatives(args) -> list:
    """One problem per SPEC: each gets the --set and --space items naming its parameters (every
    item must name a parameter of some SPEC)."""
    from loopsim.analyses.search.space import BUFFERS
    from loopsim.model import pipeline

    sets = spec.parse_sets(args.sets)
    kargs = None
    if args.nki_args or args.nki_kwargs or args.nki_grid or args.nki_paths or args.nki_registers:
        from loopsim.frontends.nki.load import parse_options

        kargs = parse_options(args.nki_args, args.nki_kwargs, args.nki_grid, args.nki_paths,
                              args.nki_registers)
    params = {ref: set(pipeline.read(ref, kargs, sets).params) for ref in args.spec}
    names = [item.partition("=")[0].strip() for item in args.space]
    for what, items in (("--set", list(sets)), ("--space", names)):
        for n in items:
            if n != BUFFERS and not any(n in ps for ps in params.values()):
                raise InputError(f"{what} {n}: none of {', '.join(args.spec)} has a parameter {n}")
    out = []
    for ref in args.spec:
        own = {k: v for k, v in sets.items() if k in params[ref]}
        items = tuple(i for i, n in zip(args.space, names) if n in params[ref] or n == BUFFERS)
        out.append(problem_of(args, ref, own, items))
    return out


def run(args) -> int:
    from loopsim.analyses.parallel import Pool, Progress, check_jobs
    from loopsim.analyses.search import engine
    from loopsim.base.outfile import figure_format, regular_target, require_suffix
    from loopsim.render import search as report

    if args.output:
        require_suffix(args.output, (".toml",))
        regular_target(args.output)  # a device, FIFO or folder refused before any work
    if args.plot:
        figure_format(args.plot, "--plot")
    problems = [problem_of(args)] if len(args.spec) == 1 else alternatives(args)
    hw = hardware.load(args.hardware)
    jobs = None if args.scheduler else check_jobs(args.jobs)
    for problem in problems:  # bad spec, --set or --space: one line before any worker starts
        engine.Context(problem)
    found = []
    try:
        with Pool(jobs, args.scheduler) as pool, \
                Progress(None, "search", quiet=args.quiet, unit="unit") as bar:
            for problem in problems:
                out = engine.search(problem, pool, bar)
                found.append((engine.context(problem), out))
    except KeyboardInterrupt:
        print("loopsim: interrupted before any tiling was found", file=sys.stderr)
        return 130
    if len(found) > 1:
        return _alternatives_report(args, found, hw)
    ctx, out = found[0]
    if args.output:
        write_best(ctx, out, args.output, hw)
    if args.plot:
        from loopsim.base.outfile import figure_format, write_atomic
        from loopsim.analyses.search.figure import front_figure

        fig = front_figure(out, hw)
        write_atomic(args.plot, lambda tmp: fig.savefig(tmp, format=figure_format(args.plot)),
                     "--plot")
    if args.json:
        dump_json(report.search_dict(ctx, out, hw))
    else:
        print(report.format_text(ctx, out, hw))
    return 130 if out.interrupted else 0


def _alternatives_report(args, found, hw) -> int:
    """Several SPECs searched: each one's best, ranked by the same key; -o writes the winner."""
    from loopsim.render import search as report

    works = {out.problem.spec: out.top[0].verdict.W for _, out in found}
    if len(set(works.values())) > 1:
        raise InputError("the SPECs do not do the same work, so their tilings are not alternatives: "
                         + ", ".join(f"{k} W = {w:,} FLOPs" for k, w in works.items()))
    ranked = sorted(found, key=lambda co: co[1].top[0].key[:-2])
    ctx, out = ranked[0]
    if args.output:
        write_best(ctx, out, args.output, hw)
    if args.json:
        dump_json({"hardware": hw.name, "alternatives": [report.search_dict(c, o, hw) for c, o in ranked],
                   "ranking": [o.problem.spec for _, o in ranked],
                   "best": report.result_row(ctx, out.top[0], 1)})
    else:
        print(report.alternatives_text(ranked, hw))
    return 130 if any(o.interrupted for _, o in ranked) else 0


def write_best(ctx, out, path: str, hw) -> None:
    """The best tiling as a spec file at ``path``; its kernel is named after the file."""
    from pathlib import Path

    from loopsim.base.outfile import write_atomic
    from loopsim.render.search import best_text

    stem = Path(path).stem
    name = stem if stem.isidentifier() else None
    text = best_text(ctx, out, hw, name)

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    write_atomic(path, write, "-o")
