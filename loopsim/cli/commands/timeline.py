"""``loopsim timeline SPEC --hardware NAME [-o FILE.png|.svg|.pdf] [--json]``: the predicted run
of the kernel on one NeuronCore (each physical core of an LNC split on its own engines): its
instructions on the DMA queues and the Tensor, Vector, Scalar and GpSimd engines, costed from the
sheet (see ``loopsim hardware NAME``, [timeline]), waiting for their producers and for the readers
of the buffers they overwrite. Prints the predicted T beside the roofline's T_best, each engine's
busy share and the gap T - T_best split into the Day-7 causes; ``-o`` draws the engines' rows
over time with the critical path in red. The same T is the verdict's (``loopsim entitle``)."""

from __future__ import annotations

from loopsim.cli.commands._common import add_kernel_options, analyze_kw, dump_json, hardware_of, program_of


def register(sub) -> None:
    p = sub.add_parser("timeline", help="predicted engine timeline of a kernel: T, busy share per "
                       "engine, the gap's causes, a picture", description=__doc__)
    add_kernel_options(p)
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="draw the timeline to a .png, .svg or .pdf")
    p.add_argument("--title", default=None, help="the figure's title")
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.base.errors import InputError
    from loopsim.base.fmt import fmt_time
    from loopsim.model import pipeline

    if args.output:
        from loopsim.base.outfile import figure_format

        figure_format(args.output)  # refuse a bad extension before any work
    if getattr(args, "model", "timeline") not in ("timeline", "exact"):
        raise InputError("--model roofline: the timeline command shows the timeline model "
                         "(--model exact: every instruction walked)")
    if args.policy != "as-written":
        raise InputError(f"--policy {args.policy}: the timeline runs the nest as written; "
                         "drop --policy (or use entitle for what lru/opt reach)")
    hw = hardware_of(args)
    a = pipeline.analyze(program_of(args), hw, **analyze_kw(args))
    stages = [(st.name, st.timeline) for st in a.stages if st.timeline is not None]
    if not stages:
        raise InputError(f"{a.name}: no timeline on {hw.name} (an op runs on an engine without a "
                         "roof on the sheet)")
    if args.output:
        from loopsim.render import plot, timeline as render

        name, t = max(stages, key=lambda x: x[1].T)
        plot.save(render.figure(t, title=args.title), args.output)
    if args.json:
        dump_json({"kernel": a.name, "hardware": hw.name,
                   **({"calibrated": dict(hw.calibrated)} if hw.calibrated else {}),
                   "T": a.T, "limit": a.limit,
                   "output": args.output,
                   "stages": [{"stage": n, **t.as_dict()} for n, t in stages]})
        return 0
    from loopsim.render import timeline as render

    print(f"{a.name} on {hw.name} ({hw.scope}): T = {fmt_time(a.T)}, limit {a.limit}")
    if hw.calibration:
        print(f"  {hw.calibration}")
    for n, t in stages:
        if len(a.stages) > 1:
            print(f"kernel {n}:")
        print("\n".join("  " + line for line in render.lines(t)))
    if args.output:
        print(f"wrote {args.output}")
    return 0
