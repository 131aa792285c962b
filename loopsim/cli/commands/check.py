"""``loopsim check``: property-test a hand-written Q formula (bytes, in the spec's parameter names)
against the simulated Q with hypothesis. Exit 0 when it held on every example, 1 when a
counterexample was found (the smallest one is printed with each tensor's simulated r), 2 on bad
input. The examples are simulated on ``--jobs`` processes (default: every core) with the same
result as on one: see :func:`loopsim.analyses.checkformula.check_formula`."""

from __future__ import annotations

from loopsim.base.limits import MAX_EXAMPLES, MAX_INT, bounded
from loopsim.frontends import spec
from loopsim.cli.commands._common import add_kernel_options, dump_json, refuse_kernel_reference


def register(sub) -> None:
    p = sub.add_parser("check", help="property-test a Q formula against the simulator",
                       description=__doc__)
    add_kernel_options(p, scope=False)
    p.add_argument("--formula", required=True, metavar="EXPR",
                   help='Q in bytes, e.g. "2*(ceil(N/TN)*M*K + ceil(M/TM)*K*N + M*N)": numbers, '
                        "parameter names, + - * / // %% **, parentheses, min, max, ceil, floor")
    p.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2|LO..HI[:STEP|:x2]",
                   help="range or list of values to draw a parameter from (repeatable); default: "
                        "1..spec value, tiles: powers of two from spec value/16 to the spec value")
    p.add_argument("--examples", type=bounded("--examples", 1, MAX_EXAMPLES), default=100,
                   metavar="N", help=f"examples to draw, 1 to {MAX_EXAMPLES:,} (default 100)")
    p.add_argument("--seed", type=bounded("--seed", 0, MAX_INT), default=None, help="random seed (default: deterministic)")
    from loopsim.analyses.parallel import add_options as add_parallel_options

    add_parallel_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.analyses.checkformula import check_formula

    refuse_kernel_reference(args.spec, "loopsim check tests a formula's parameters")
    res = check_formula(args.spec, args.formula, hardware=args.hardware, policy=args.policy,
                        sets=spec.parse_sets(args.sets), vary=args.vary, examples=args.examples,
                        sbuf_bytes=args.sbuf_bytes, seed=args.seed, jobs=args.jobs,
                        scheduler=args.scheduler, quiet=args.quiet)
    if args.json:
        dump_json(res.as_dict())
    else:
        print(res.message())
    return 0 if res.held else 1
