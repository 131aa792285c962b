"""``loopsim dma SPEC --hardware NAME``: the kernel's DMA transfers as written — how many, their
bytes per SBUF partition (a distribution, in the size bands of the Neuron DMA guidance), the share
of bytes in transfers below 2 KiB per partition — and the DMA engines' ceiling T_dma (bytes over the
scope's aggregate DMA bandwidth, sourced per sheet; see ``loopsim hardware NAME``)."""

from __future__ import annotations

from loopsim.base.limits import MAX_LNC_CORES, bounded
from loopsim.cli.commands._common import add_nki_options, dump_json, hardware_of, program_of


def register(sub) -> None:
    p = sub.add_parser("dma", help="DMA transfers of a kernel spec: count, bytes per partition, "
                       "small-transfer share, the DMA engines' ceiling", description=__doc__)
    p.add_argument("spec", metavar="SPEC", help="a bundled spec name, a .toml path, or an NKI "
                   "kernel PATH.py::FUNCTION (EXECUTES that file, as python FILE.py would)")
    p.add_argument("--hardware", "-H", required=True, metavar="NAME",
                   help="hardware sheet name or .toml path")
    p.add_argument("--set", action="append", default=[], metavar="NAME=INT", dest="sets",
                   help="override a spec parameter (repeatable)")
    p.add_argument("--lnc", type=bounded("--lnc", 1, MAX_LNC_CORES), default=None, metavar="N",
                   help="run the kernel on N physical cores (each core's transfers counted)")
    p.add_argument("--split", default=None, metavar="VAR", help="the loop to split with --lnc")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_nki_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.targets.neuron import dma
    from loopsim.base.fmt import fmt_time

    hw = hardware_of(args)
    prog = program_of(args)
    reports = [(st.name, dma.report(st.kernel, hw)) for st in prog.stages]
    if args.json:
        dump_json({"hardware": hw.name, "scope": hw.scope,
                   "kernels": [{"stage": n, **r.as_dict()} for n, r in reports]})
        return 0
    for name, r in reports:
        print(f"{r.kernel} on {hw.name} ({hw.scope})" + (f", kernel {name}" if len(reports) > 1 else ""))
        print("\n".join("  " + line for line in r.lines(fmt_time)))
        for s in r.statements:
            sizes = ", ".join(f"{n:,} x {b:,} B" for b, n in s.partition_bytes)
            print(f"    {s.text:<44} {s.transfers:>10,} transfers  per partition: {sizes}")
    return 0
