"""``loopsim clockwork -o FILE.html``: the Tensor Engine clockwork (curriculum Day 3), one
self-contained page (inline SVG and script, nothing fetched) that steps C back-to-back matmul
instructions through the PE array cycle by cycle, with play, pause, step and a cycle slider, and
beside it the numbers: P = PEs x 2 x clock, rows used (K), columns used (M), cycles per
instruction max(N, MM_INIT) x the dtype's slowdown, the effective rate. They come from the model
of ``loopsim ceilings``, run on the spec the page shows. ``--json`` prints them."""

from __future__ import annotations

from loopsim.cli.commands._common import dump_json


def register(sub) -> None:
    p = sub.add_parser("clockwork", help="the Tensor Engine clockwork: an HTML page stepping matmul "
                       "instructions through the PE array cycle by cycle", description=__doc__)
    p.add_argument("--hardware", "-H", default="trn1-core", metavar="NAME",
                   help="hardware sheet name or .toml path (default trn1-core, as Day 3)")
    p.add_argument("--k", type=int, default=128, metavar="K", help="contraction: PE rows used (default 128)")
    p.add_argument("--n", type=int, default=512, metavar="N", help="moving tile free size (default 512)")
    p.add_argument("--m", type=int, default=None, metavar="M",
                   help="stationary free size: PE columns used (default all)")
    p.add_argument("--dtype", default="bf16", help="input dtype (default bf16)")
    p.add_argument("--count", type=int, default=4, metavar="C", help="instructions (default 4)")
    p.add_argument("-o", "--output", default=None, metavar="FILE.html", help="the page to write")
    p.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from loopsim.analyses.clockwork import clockwork
    from loopsim.render.html import short_time
    from loopsim.base.errors import InputError
    from loopsim.targets import hardware

    if args.output is None and not args.json:
        raise InputError("clockwork: give -o FILE.html (the page) or --json (the numbers)")
    if args.output is not None:
        from loopsim.render.html import check_path

        check_path(args.output)  # before any work
    hw = hardware.load(args.hardware)
    cw = clockwork(hw, K=args.k, N=args.n, M=args.m, dtype=args.dtype, count=args.count)
    if args.output is not None:
        from loopsim.render.html import clockwork_page, write

        write(args.output, clockwork_page(cw))
    if args.json:
        dump_json({**cw.as_dict(), **({"output": args.output} if args.output else {})})
    else:
        print(f"wrote {args.output}: {cw.count:,} instructions K={cw.K} M={cw.M} N={cw.N} {cw.dtype} on "
              f"{cw.hardware}: {cw.cycles_per_instruction:,} cycles ({short_time(cw.instruction_s)}) "
              f"per instruction, {cw.rate / 1e12:.3g} TFLOP/s of P = {cw.P / 1e12:.4g}")
    return 0
