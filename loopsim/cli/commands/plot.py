"""``loopsim plot``: the roofline of a hardware sheet with one labelled point per kernel / tiling at
(I, attainable rate W/T), tilings that cannot run marked, measured points directly below their
points with the gap annotated. The file's extension picks the format (.png, .svg, .pdf); it is
written whole or not at all."""

from __future__ import annotations

from loopsim.cli.commands._common import add_kernel_options, dump_json, hardware_of
from loopsim.cli.commands._measured import add_option
from loopsim.cli.commands.compare import add_vary_option, analysed_rows


def register(sub) -> None:
    p = sub.add_parser("plot", help="draw the roofline with the kernels' points (png/svg/pdf)",
                       description=__doc__)
    add_kernel_options(p, many=True)
    add_vary_option(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output .png, .svg or .pdf")
    p.add_argument("--title", default=None, help="the figure's title (default: hardware and scope)")
    add_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.render import plot
    from loopsim.base.outfile import figure_format

    figure_format(args.output)  # refuse a bad extension before any work
    hw = hardware_of(args)
    rows, dicts = analysed_rows(args, hw)
    pts = []
    for r, d in zip(rows, dicts):
        a = r.analysis
        if a is None:
            continue
        m = d.get("measured")
        rate = a.W / a.T if a.T else 0.0  # attainable rate: every roof and ceiling
        # the measured point is drawn below this point (the verdict's T), so its gap and
        # percentage are against the same T, not T_best
        pts.append(plot.Point(r.variant.label, a.entitlement.I, rate,
                              m["rate"] if m else None, m["gap_to_predicted"] if m else None,
                              m["fraction_of_predicted"] if m else None, a.feasible))
    dtype = args.dtype or next((r.analysis.dtype for r in rows if r.analysis is not None), "bf16")
    fig = plot.roofline(pts, hw, dtype=dtype, ceilings=ceilings_for(rows, hw, dtype),
                        title=args.title)
    plot.save(fig, args.output)
    if args.json:
        dump_json({"output": args.output, "hardware": hw.name, "dtype": dtype, "rows": dicts})
    else:
        drawn = sum(p.drawable for p in pts)
        failed = [r for r in rows if r.analysis is None]
        print(f"wrote {args.output}: {drawn} point(s) on the {hw.name} {dtype} roofline" +
              (f" ({len(pts) - drawn} with W = 0 named, not drawn)" if drawn < len(pts) else ""))
        for r in failed:
            print(f"  not drawn, cannot run: {r.variant.label}: {r.error}")
        for r in rows:
            if r.analysis is not None and not r.analysis.feasible:
                print(f"  marked, cannot run: {r.variant.label}: {r.analysis.infeasible_reasons[0]}")
    return 0


def ceilings_for(rows, hw, dtype, limit: int = 6) -> list:
    """The kernels' lower ceilings below P (from :mod:`loopsim.targets.neuron.ceilings`), one line per distinct
    (name, rate), with the kernels it holds for (the plot draws it over their intensities)."""
    from loopsim.render.plot import Ceiling

    P = hw.P(dtype)
    seen: dict[float, tuple[list[str], list[str]]] = {}  # rate -> (ceiling names, kernels)
    reps = [r for r in rows if r.analysis is not None and r.analysis.ceilings is not None]
    for r in reps:
        for c in r.analysis.ceilings.ceilings:
            if 0 < c.P < P * 0.999:
                names, who = seen.setdefault(float(f"{c.P:.4g}"), ([], []))
                names.append(c.name) if c.name not in names else None
                who.append(r.variant.label) if r.variant.label not in who else None
    out = []
    for rate, (names, who) in sorted(seen.items(), key=lambda kv: -kv[0])[:limit]:
        out.append(Ceiling(" = ".join(names), rate, "compute", tuple(who)))
    return out
