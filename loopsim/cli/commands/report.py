"""``loopsim report SPEC|KERNEL -H NAME [--measured FILE] -o FILE.html``: one self-contained page
for a kernel (a design review's handout): the verdict and why, W and Q by tensor with r, the
roofline with the kernel's point (and the measured point), the lower ceilings, SBUF and PSUM use
with the largest buffers, the DMA transfers by size, the predicted timeline (numbers and picture), and the
gap table when a measurement is given. Its numbers are those of ``entitle --json`` and ``dma
--json`` with the same options (``--json`` prints them). It prints on A4 or Letter. Exit status as
``entitle``: 0, or 3 when the kernel cannot run as written (the page is still written)."""

from __future__ import annotations

from loopsim.cli.commands._common import INFEASIBLE, add_kernel_options, analyze_kw, dump_json, hardware_of, program_of
from loopsim.cli.commands._measured import single as measured_for


def register(sub) -> None:
    p = sub.add_parser("report", help="one self-contained HTML page for a kernel: verdict, W and Q, "
                       "roofline, ceilings, SBUF/PSUM, DMA, gap", description=__doc__)
    add_kernel_options(p)
    p.add_argument("--measured", action="append", default=[], metavar="FILE.json",
                   help="a measured time (JSON with time_s, or the Neuron profiler's summary): "
                        "the measured point and the gap table")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html", help="the page to write")
    p.set_defaults(func=run)


def run(args) -> int:
    from types import SimpleNamespace

    from loopsim.model import pipeline
    from loopsim.render import html, plot
    from loopsim.render.json import analysis_dict
    from loopsim.targets.neuron import dma
    from loopsim.cli.commands.plot import ceilings_for

    html.check_path(args.output)  # before any work
    hw = hardware_of(args)
    prog = program_of(args)
    a = pipeline.analyze(prog, hw, **analyze_kw(args))
    m = measured_for(args, a.entitlement, a)
    d = {**analysis_dict(a), **({"measured": m.as_dict()} if m is not None else {})}
    dmas = [{"stage": st.name, **dma.report(st.kernel, hw).as_dict()} for st in prog.stages]
    point = plot.Point.from_report(a, m)
    row = SimpleNamespace(analysis=a, variant=SimpleNamespace(label=point.label))  # as compare's rows
    fig = plot.roofline([point], hw, dtype=a.dtype, ceilings=ceilings_for([row], hw, a.dtype))
    stages = () if prog.is_single else [(s.name, [c.as_dict() for c in s.ceilings.ceilings]) for s in a.stages]
    page = html.report_page(d, dmas, html.figure_svg(fig), ceilings_of_stages=stages,
                            timeline_figures=timeline_figures(a, hw),
                            measured_lines=m.lines() if m is not None else ())
    html.write(args.output, page)
    if args.json:
        dump_json({**d, "dma": {"kernels": dmas}, "output": args.output})
    else:
        from loopsim.base.fmt import fmt_time

        print(f"wrote {args.output}: {a.name} on {hw.name}, T {fmt_time(a.T)} ({a.limit})"
              + ("" if a.feasible else "; cannot run as written"))
    return 0 if a.feasible else INFEASIBLE


def timeline_figures(a, hw) -> dict[str, str]:
    """Each kernel's timeline picture (``loopsim timeline``'s figure) as inline SVG, by stage
    name; only the kernels the analysis predicted a timeline for."""
    from loopsim.render import html, timeline as render

    out = {}
    for st in a.stages:
        if st.timeline is not None:
            title = f"{a.name} on {hw.name}" + (f", kernel {st.name}" if len(a.stages) > 1 else "")
            out[st.name] = html.figure_svg(render.figure(st.timeline, title=title))
    return out
