"""``loopsim capacity``: Q and r per input as a function of SBUF capacity for lru and opt, from the
smallest capacity that holds one instruction's working tiles up to where Q reaches the compulsory
Q, the sheet's capacity among the samples; a table, ``--json``, and ``-o FILE`` for the plot. The
OPT replays (one per capacity) and the LRU pass run on ``--jobs`` processes (default: every core)."""

from __future__ import annotations

from loopsim.targets import hardware
from loopsim.model import pipeline
from loopsim.frontends import spec
from loopsim.cli.commands._common import add_nki_options, dump_json, kernel_args


def register(sub) -> None:
    p = sub.add_parser("capacity", help="Q against SBUF capacity for lru and opt (table and plot)",
                       description=__doc__)
    p.add_argument("spec", metavar="SPEC", help="a bundled spec name, a .toml path, or an NKI kernel "
                   "PATH.py::FUNCTION (EXECUTES that file, as python FILE.py would)")
    p.add_argument("--hardware", "-H", required=True, metavar="NAME", help="hardware sheet name or .toml path")
    p.add_argument("--set", action="append", default=[], metavar="NAME=INT", dest="sets",
                   help="override a spec parameter (repeatable)")
    p.add_argument("--samples", type=int, default=16, metavar="N",
                   help="capacities sampled geometrically (default 16)")
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="also draw the curve (.png, .svg, .pdf)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    from loopsim.analyses.parallel import add_options as add_parallel_options

    add_parallel_options(p)
    add_nki_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.analyses import capacity
    from loopsim.base.errors import InputError
    from loopsim.base.outfile import figure_format

    if args.output:
        figure_format(args.output)
    from loopsim.base.limits import MAX_SAMPLES

    if not 2 <= args.samples <= MAX_SAMPLES:
        raise InputError(f"--samples={args.samples} must be between 2 and {MAX_SAMPLES:,} (each "
                         "sample is a full lru and opt replay)")
    from loopsim.model import pipeline
    from loopsim.count.formula import refuse_program

    hw = hardware.load(args.hardware)
    sets = spec.parse_sets(args.sets)
    refuse_program(pipeline.read(args.spec, kernel_args(args), sets), "loopsim capacity replays")
    # the one loader: the same validation and [lnc] split as every other command
    prog = pipeline.load(args.spec, sets, kernel_args=kernel_args(args))
    if not prog.is_single:
        raise InputError(f"{args.spec}: its kernel keeps tensors on chip between ops (a program); "
                         "loopsim capacity replays a single nest")
    kernel = prog.stages[0].kernel
    from loopsim.analyses.parallel import Progress

    bars = []

    def progress(total: int):
        bars.append(Progress(total, "capacity", quiet=args.quiet, unit="point"))
        return bars[-1].update

    try:  # a progress bar on stderr after a second, on a terminal
        cv = capacity.curve(kernel, hw, samples=args.samples, progress=progress, jobs=args.jobs,
                            scheduler=args.scheduler)
    finally:
        for b in bars:
            b.close()
    if args.output:
        from loopsim.render import plot

        plot.save(plot.capacity_curve(cv), args.output)
    if args.json:
        dump_json({**cv.as_dict(), "output": args.output})
        return 0
    print(f"{cv.kernel} on {cv.hardware}: Q against SBUF capacity (compulsory Q = "
          f"{cv.compulsory_Q:,} bytes; sheet SBUF = {cv.sheet_capacity_bytes:,} bytes)")
    print(f"  {'capacity':>14}  {'policy':<6}{'Q':>16}{'Q/Qc':>8}{'Q/LB':>8}" +
          "".join(f"{'r_' + n:>9}" for n in cv.inputs))
    for r in cv.rows:
        mark = "  <- sheet" if r.capacity_bytes == cv.sheet_capacity_bytes else ""
        lb = f"{r.Q / r.lower_bound_Q:>8.3g}" if r.lower_bound_Q else f"{'-':>8}"
        print(f"  {r.capacity_bytes:>14,}  {r.policy:<6}{r.Q:>16,}{r.Q_over_compulsory:>8.3g}{lb}" +
              "".join(f"{v:>9.3g}" for _, v in r.r) + mark)
    for p in cv.policies:
        at = cv.reaches_compulsory(p)
        print(f"  {p}: " + (f"compulsory Q from {at:,} bytes" if at else "above compulsory Q at every sampled capacity"))
    if args.output:
        print(f"wrote {args.output}")
    return 0
