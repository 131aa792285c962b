"""``loopsim crossover``: the smallest value of one dimension at which the kernel is compute-bound,
using the simulated Q at each candidate (``--compulsory``: the textbook Q instead). The candidates
are analysed on ``--jobs`` processes (default: every core), with the same answer as on one."""

from __future__ import annotations

from loopsim.base.limits import MAX_INT, bounded
from loopsim.cli.commands._common import add_kernel_options, analyze_kw, dump_json, hardware_of, kernel_args, parse_buffers


def register(sub) -> None:
    p = sub.add_parser("crossover", help="smallest value of a dimension at which the kernel is compute-bound",
                       description=__doc__)
    add_kernel_options(p)
    p.add_argument("--dim", required=True, metavar="NAME", help="the parameter to vary (e.g. B)")
    p.add_argument("--multiple-of", type=bounded("--multiple-of", 1, MAX_INT), default=1, metavar="N", dest="multiple",
                   help="search only multiples of N (a traced kernel's dimension usually must be a "
                        "multiple of its tile, e.g. --multiple-of 128 for a K split in 128-row "
                        "tiles); default 1")
    p.add_argument("--compulsory", action="store_true",
                   help="use the compulsory Q (each input read once) instead of the simulated Q")
    from loopsim.analyses.parallel import add_options as add_parallel_options

    add_parallel_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.model import pipeline
    from loopsim.frontends import spec
    from loopsim.model.entitle import Entitlement
    from loopsim.base.errors import InputError, SpecError, TraceTooLarge

    hw = hardware_of(args)
    sets = spec.parse_sets(args.sets)
    sf = pipeline.read(args.spec, kernel_args(args), sets)
    if args.dim not in sf.params:
        raise SpecError(f"--dim {args.dim}: {sf.path} has no parameter {args.dim}; "
                        f"it has: {', '.join(sf.params)}")
    from dataclasses import replace

    from loopsim.analyses.crossover import Point, search
    from loopsim.analyses.parallel import Progress

    point = Point(sf, tuple(sets.items()), args.dim, hw, tuple(analyze_kw(args).items()),
                  args.lnc, args.split, parse_buffers(args.buffers), args.compulsory, args.multiple)
    try:
        dtype = point.analysis(1).dtype
    except SpecError as e:
        hint = ("; a traced kernel's dimension usually must be a multiple of its tile: give "
                "--multiple-of N" if args.multiple == 1 and sf.tracer is not None else "")
        raise SpecError(f"--dim {args.dim}={args.multiple}, where the search starts: {e}{hint}") from None
    point = replace(point, kw=tuple({**dict(point.kw), "dtype": dtype}.items()))
    P = hw.P(dtype)
    tried: list[tuple[int, int, int]] = []
    try:
        with Progress(None, f"crossover of {args.dim}", quiet=args.quiet, unit="value") as bar:
            value, seen = search(point, P, hw.bw, jobs=args.jobs, scheduler=args.scheduler,
                                 progress=bar, note=lambda v: f"{args.dim}={v * args.multiple:,}",
                                 tried=tried)
        value, seen = value * args.multiple, [(v * args.multiple, w, q) for v, w, q in seen]
    except TraceTooLarge:
        v, w, q = tried[-1]
        v *= args.multiple
        raise InputError(
            f"no crossover found: {args.dim} is memory-bound at every value tried up to {v:,} "
            f"(there I = W/Q = {w / q:.4g} < ridge {P / hw.bw:.4g}); larger values expand beyond "
            "what loopsim replays") from None
    rows = []
    for v, w, q in sorted(set(seen)):
        e = Entitlement(w, q, P, hw.bw)
        rows.append({"value": v, "W": w, "Q": q, "I": e.I, "T_compute": e.t_compute,
                     "T_memory": e.t_memory, "bound": e.bound})
    q_kind = "compulsory Q" if args.compulsory else f"simulated Q ({args.policy})"
    if args.json:
        dump_json({"kernel": sf.path, "hardware": hw.name, "dim": args.dim, "value": value,
                   "dtype": dtype, "P": P, "BW": hw.bw, "ridge": P / hw.bw, "q": q_kind,
                   "evaluated": rows})
        return 0
    print(f"crossover of {args.dim} for {sf.path} on {hw.name} ({dtype}, {q_kind})")
    print(f"  compute-bound when W/P >= Q/BW, i.e. I = W/Q >= ridge P/BW = {P / hw.bw:.4g} FLOPs/byte")
    print(f"  {args.dim:>10} {'W':>18} {'Q':>16} {'I':>10} {'W/P (s)':>12} {'Q/BW (s)':>12}  bound")
    for r in rows:
        print(f"  {r['value']:>10} {r['W']:>18,} {r['Q']:>16,} {r['I']:>10.4g} "
              f"{r['T_compute']:>12.4e} {r['T_memory']:>12.4e}  {r['bound']}")
    print(f"  => smallest compute-bound {args.dim} = {value}")
    return 0
