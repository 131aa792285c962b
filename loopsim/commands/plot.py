"""``loopsim plot``: the roofline of a hardware sheet with one labelled point per kernel / tiling at
(I, entitled rate), measured points directly below their entitlement points with the gap annotated.
The file's extension picks the format (.png, .svg, .pdf); it is written whole or not at all."""

from __future__ import annotations

from .. import hardware
from ._common import add_kernel_options, dump_json
from ._measured import add_option
from .compare import add_vary_option, analysed_rows


def register(sub) -> None:
    p = sub.add_parser("plot", help="draw the roofline with the kernels' points (png/svg/pdf)",
                       description=__doc__)
    add_kernel_options(p, many=True)
    add_vary_option(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output .png, .svg or .pdf")
    p.add_argument("--dtype", default=None, help="dtype whose roof is drawn (default: the first kernel's)")
    p.add_argument("--title", default=None, help="the figure's title (default: hardware and scope)")
    add_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from .. import plot
    from ..outfile import figure_format

    figure_format(args.output)  # refuse a bad extension before any work
    hw = hardware.load(args.hardware)
    rows, dicts = analysed_rows(args, hw)
    pts = []
    for r, d in zip(rows, dicts):
        if r.report is None:
            continue
        m = d.get("measured")
        base = plot.Point.from_report(r.report, label=r.variant.label)
        if m:
            base = plot.Point(base.label, base.I, base.rate, m["rate"], m["gap"],
                              m["fraction_of_entitlement"], base.fits)
        pts.append(base)
    dtype = args.dtype or next((r.report.dtype for r in rows if r.report is not None), "bf16")
    fig = plot.roofline(pts, hw, dtype=dtype, ceilings=ceilings_for(rows, hw, dtype),
                        title=args.title)
    plot.save(fig, args.output)
    if args.json:
        dump_json({"output": args.output, "hardware": hw.name, "dtype": dtype, "rows": dicts})
    else:
        drawn = sum(p.drawable for p in pts)
        failed = [r for r in rows if r.report is None]
        print(f"wrote {args.output}: {drawn} point(s) on the {hw.name} {dtype} roofline" +
              (f" ({len(pts) - drawn} with W = 0 named, not drawn)" if drawn < len(pts) else ""))
        for r in failed:
            print(f"  not drawn, cannot run: {r.variant.label}: {r.error}")
    return 0


def ceilings_for(rows, hw, dtype, limit: int = 6) -> list:
    """The kernels' lower ceilings below P (from :mod:`loopsim.ceilings`), one line per distinct
    (name, rate), with the kernels it holds for (the plot draws it over their intensities)."""
    from ..plot import Ceiling

    P = hw.P(dtype)
    seen: dict[float, tuple[list[str], list[str]]] = {}  # rate -> (ceiling names, kernels)
    reps = [r for r in rows if r.report is not None and r.report.ceilings is not None]
    for r in reps:
        for c in r.report.ceilings.ceilings:
            if 0 < c.P < P * 0.999:
                names, who = seen.setdefault(float(f"{c.P:.4g}"), ([], []))
                names.append(c.name) if c.name not in names else None
                who.append(r.variant.label) if r.variant.label not in who else None
    out = []
    for rate, (names, who) in sorted(seen.items(), key=lambda kv: -kv[0])[:limit]:
        out.append(Ceiling(" = ".join(names), rate, "compute", tuple(who)))
    return out
