"""``loopsim compare``: tilings side by side (specs x ``--vary`` products), one row each with W, Q,
r per input, compulsory Q, I, T_best, T_worst, SBUF peak and fit; ranked by T_best then T_worst,
the best fitting row marked (*). A row that does not fit SBUF stays, marked (!)."""

from __future__ import annotations

import csv
import sys

from .. import hardware, spec, sweep
from ..report import fmt_time
from ._common import add_kernel_options, dump_json
from ._measured import add_option, assign, comparison


def register(sub) -> None:
    p = sub.add_parser("compare", help="tilings side by side, ranked by T_best", description=__doc__)
    add_kernel_options(p, many=True)
    add_vary_option(p)
    p.add_argument("--csv", action="store_true", help="print the table as CSV")
    p.add_argument("--dtype", default=None, help="dtype whose roof applies (default: each kernel's)")
    add_option(p)
    p.set_defaults(func=run)


def add_vary_option(p) -> None:
    p.add_argument("--vary", action="append", default=[], metavar="NAME=INT,INT,...",
                   help="analyse every listed value of a parameter; several --vary expand to "
                        "their product (repeatable)")


def analysed_rows(args, hw) -> tuple[list[sweep.Row], list[dict]]:
    """Rows of the specs x --vary product, ranked, as Row values and as dicts (with ``measured``)."""
    variants = sweep.expand(args.spec, spec.parse_sets(args.sets), sweep.parse_vary(args.vary))
    rows = sweep.analyze_all(variants, hw, policy=args.policy, sbuf_bytes=args.sbuf_bytes,
                             dtype=args.dtype)
    profiles = assign(args.measured, [(r.variant.label, r.variant.spec, r.variant.kernel.name)
                                      for r in rows])
    dicts = []
    for i, r in enumerate(rows):
        d = sweep.row_dict(r, i + 1)
        if i in profiles:
            if r.report is None:
                d["measured"] = None
            else:
                d["measured"] = comparison(r.report, profiles[i]).as_dict()
        dicts.append(d)
    return rows, dicts


def run(args) -> int:
    hw = hardware.load(args.hardware)
    rows, dicts = analysed_rows(args, hw)
    if args.json:
        dump_json({"hardware": hw.name, "scope": hw.scope, "policy": args.policy, "rows": dicts})
        return 0
    inputs = list(dict.fromkeys(n for d in dicts for n in d.get("r", {})))
    if args.csv:
        cols = ["rank", "best", "label", "spec", "W", "Q", *[f"r_{n}" for n in inputs],
                "compulsory_Q", "lower_bound_Q", "Q_over_bound", "I", "T_best", "T_worst", "bound", "sbuf_peak_bytes",
                "sbuf_capacity_bytes", "fits", "measured_T", "gap", "fraction_of_entitlement",
                "error"]
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(cols)
        for d in dicts:
            m = d.get("measured") or {}
            flat = {**d, **{f"r_{n}": v for n, v in d.get("r", {}).items()},
                    "measured_T": m.get("T"), "gap": m.get("gap"),
                    "fraction_of_entitlement": m.get("fraction_of_entitlement")}
            w.writerow(["" if flat.get(c) is None else flat.get(c) for c in cols])
        return 0
    print(format_table(dicts, hw, args.policy, inputs))
    return 0


def format_table(dicts: list[dict], hw, policy: str, inputs: list[str]) -> str:
    width = max(12, *(len(d["label"]) for d in dicts))
    rw = max(8, *(len(n) + 3 for n in inputs)) if inputs else 8  # r_NAME columns
    head = (f"  {'#':>2}  {'tiling':<{width}} {'W':>16} {'Q':>15} "
            + "".join(f"{'r_' + n:>{rw}}" for n in inputs)
            + f" {'Q/Qc':>6} {'Q/LB':>6} {'I':>8} {'T_best':>11} {'T_worst':>11}  {'bound':<8}{'SBUF peak':>13}")
    lines = [f"{len(dicts)} tilings on {hw.name} ({hw.scope}); policy {policy}; "
             "ranked by T_best, then T_worst", head]
    for d in dicts:
        mark = "*" if d["best"] else ("!" if not d["fits"] else " ")
        if d.get("error"):
            lines.append(f"{mark} {d['rank']:>2}  {d['label']:<{width}} cannot run: {d['error']}")
            continue
        qc = f"{d['Q_over_compulsory']:.3g}" if d["Q_over_compulsory"] else "-"
        qb = f"{d['Q_over_bound']:.3g}" if d.get("Q_over_bound") else "-"
        i = f"{d['I']:.4g}" if d["I"] is not None else "inf"
        lines.append(
            f"{mark} {d['rank']:>2}  {d['label']:<{width}} {d['W']:>16,} {d['Q']:>15,} "
            + "".join(f"{d['r'][n]:>{rw}.3g}" if n in d["r"] else f"{'-':>{rw}}" for n in inputs)
            + f" {qc:>6} {qb:>6} {i:>8} {fmt_time(d['T_best']):>11} {fmt_time(d['T_worst']):>11}  "
              f"{d['bound']:<8}{d['sbuf_peak_bytes']:>13,}" + ("" if d["fits"] else "  does not fit SBUF"))
        m = d.get("measured")
        if m:
            mfu = f"MFU {m['MFU']:.1%}, " if d["W"] else ""  # no FLOPs, no MFU (as in entitle)
            lines.append(f"      measured {fmt_time(m['T'])}: gap {fmt_time(m['gap'])}, "
                         f"{m['fraction_of_entitlement']:.1%} of entitlement, {mfu}"
                         f"achieved BW {m['achieved_BW'] / 1e9:.4g} GB/s ({m['BW_share']:.1%} of BW)")
            lines += [f"        {x['line']}" for x in m["disagreements"]]
    lines.append("  * best (fits SBUF)   ! does not fit SBUF   Q/Qc: Q over compulsory Q   "
                 "Q/LB: Q over the I/O lower bound   SBUF peak: bytes over all partitions")
    return "\n".join(lines)
