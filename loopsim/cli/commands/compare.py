"""``loopsim compare``: tilings side by side (specs x ``--vary`` products), one row each with the
attainable time T and what limits it, W, Q, r per input, compulsory Q, I, T_best, SBUF peak and
PSUM banks; ranked: tilings that can run first, then by T, then Q, then SBUF peak; the best row
marked (*), rows that cannot run marked (!) with the reason. A point of ``--vary`` that is not a
valid tiling stays as a row that says why."""

from __future__ import annotations

import csv
import sys

from loopsim.cli.commands._common import add_kernel_options, analyze_kw, dump_json, hardware_of, kernel_args, parse_buffers
from loopsim.cli.commands._measured import add_option, assign, comparison


def register(sub) -> None:
    p = sub.add_parser("compare", help="tilings side by side, ranked by attainable time T",
                       description=__doc__)
    add_kernel_options(p, many=True)
    add_vary_option(p)
    p.add_argument("--csv", action="store_true", help="print the table as CSV")
    from loopsim.analyses.parallel import add_options as add_parallel_options

    add_parallel_options(p)
    add_option(p)
    p.set_defaults(func=run)


def add_vary_option(p) -> None:
    p.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2|LO..HI[:STEP|:x2]",
                   help="analyse every value of a parameter (a list, or a range with a step or "
                        "x2); several --vary expand to their product (repeatable)")


def analysed_rows(args, hw) -> tuple[list, list[dict]]:
    """Rows of the specs x --vary product, ranked, as Row values and as dicts (with ``measured``)."""
    from loopsim.frontends import spec
    from loopsim.analyses import sweep
    from loopsim.render.json import row_dict

    variants = sweep.expand(args.spec, spec.parse_sets(args.sets), sweep.parse_vary(args.vary),
                            lnc_cores=args.lnc, split=args.split, buffers=parse_buffers(args.buffers),
                            kernel_args=kernel_args(args))
    rows = sweep.analyze_all(variants, hw, jobs=getattr(args, "jobs", None),
                             scheduler=getattr(args, "scheduler", None),
                             quiet=getattr(args, "quiet", True), **analyze_kw(args))
    profiles = assign(args.measured, [(r.variant.label, r.variant.spec, r.variant.name) for r in rows],
                      [dict(r.variant.params) for r in rows])
    dicts = []
    for i, r in enumerate(rows):
        d = row_dict(r, i + 1)
        if i in profiles:
            d["measured"] = None if r.analysis is None else comparison(r.analysis, profiles[i]).as_dict()
        dicts.append(d)
    return rows, dicts


CSV_COLUMNS = ["rank", "best", "label", "spec", "feasible", "T", "limit", "W", "Q", "compulsory_Q",
               "lower_bound_Q", "Q_over_bound", "I", "T_best", "T_worst", "bound", "sbuf_peak_bytes",
               "sbuf_capacity_bytes", "psum_banks", "psum_capacity_banks", "measured_T", "gap",
               "fraction_of_entitlement", "error"]


def run(args) -> int:
    from loopsim.render.text import compare_table

    hw = hardware_of(args)
    rows, dicts = analysed_rows(args, hw)
    if args.json:
        dump_json({"hardware": hw.name, "scope": hw.scope,
                   **({"calibrated": dict(hw.calibrated)} if hw.calibrated else {}),
                   "policy": args.policy, "rows": dicts})
        return 0
    inputs = list(dict.fromkeys(n for d in dicts for n in d.get("r", {})))
    if args.csv:
        cols = CSV_COLUMNS[:9] + [f"r_{n}" for n in inputs] + CSV_COLUMNS[9:]
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(cols)
        for d in dicts:
            m = d.get("measured") or {}
            flat = {**d, **{f"r_{n}": v for n, v in d.get("r", {}).items()},
                    "measured_T": m.get("T"), "gap": m.get("gap"),
                    "fraction_of_entitlement": m.get("fraction_of_entitlement")}
            w.writerow(["" if flat.get(c) is None else flat.get(c) for c in cols])
        return 0
    print(compare_table(dicts, hw, args.policy, inputs))
    return 0
