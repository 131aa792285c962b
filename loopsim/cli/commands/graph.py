"""``loopsim graph SPEC -o graph.png``: draw a spec's op graph, each edge labelled with the bytes
of the tensor it carries and k, the times it crosses HBM (from the replay). The file is written
whole or not at all (a temporary file, then a rename)."""

from __future__ import annotations

from loopsim.base.errors import SpecError
from loopsim.base.outfile import figure_format, write_atomic
from loopsim.cli.commands._common import add_kernel_options, analyze_kw, hardware_of, program_of


def register(sub) -> None:
    p = sub.add_parser("graph", help="draw the op graph of a multi-op spec, edges labelled by bytes and k",
                       description=__doc__)
    add_kernel_options(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="figure file (.png, .svg or .pdf)")
    p.set_defaults(func=run)


def edge_labels(rep) -> dict[str, str]:
    """Tensor name -> its label: size, then what its crossings of HBM are — ``k`` for an
    intermediate (written + read across HBM, over its size), ``r`` (reads over size) for a program
    input, ``written Nx`` for a program output."""
    tc = rep.counts.tensor_map
    inter = set(rep.program.intermediates)
    out = {}
    for t in rep.program.tensors:
        c = tc[t.name]
        if t.name in inter:
            how = f"k={(c.read_bytes + c.write_bytes) / c.bytes:.3g}"
        elif t.output:
            how = f"written {c.write_bytes / c.bytes:.3g}x"
        else:
            how = f"r={c.r:.3g}"
        out[t.name] = f"{t.name}: {t.bytes / 2**20:.4g} MiB, {how}"
    return out


def run(args) -> int:
    figure_format(args.output)
    from loopsim.model import pipeline

    prog = program_of(args)
    if prog.is_single:
        raise SpecError(f"{args.spec}: has no [ops] table, so there is no op graph to draw")
    hw = hardware_of(args)
    rep = pipeline.analyze(prog, hw, **analyze_kw(args))
    e = rep.entitlement
    title = (f"{prog.name} on {hw.name}, {args.policy}: Q = {e.Q:,} bytes, "
             f"T {rep.T * 1e6:.4g} µs ({rep.limit}), T_best {e.T_best * 1e6:.4g} µs")
    from loopsim.ir.graph import draw

    ax = draw(prog.graph, edge_labels(rep), title)
    fig = ax.figure
    fig.tight_layout()
    write_atomic(args.output, lambda tmp: fig.savefig(tmp, format=figure_format(args.output)))
    if args.json:
        from loopsim.cli.commands._common import dump_json
        dump_json({"output": args.output, "edges": edge_labels(rep)})
    else:
        print(f"wrote {args.output}")
    return 0
