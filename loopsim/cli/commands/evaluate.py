"""``loopsim evaluate --batch FILE.jsonl``: many verdicts in one process, for agent loops. One
request a line (a JSON object: spec or inline toml, hardware, set, policy, dtype, sbuf_bytes,
buffers, lnc, roofs, id), one JSON result a line in the same order (feasible, reasons, T, limit,
W, Q, SBUF and PSUM use, seconds to answer); a bad line gets an error line and the batch goes on.
``-`` reads stdin. A kernel reference PATH.py::FUNCTION in a request EXECUTES that file and is
refused unless --execute-kernels is given. Exit 0 when every line was read (even with error
lines), 2 when the file cannot be read."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="answer a batch of analysis requests (JSON lines in, JSON "
                       "lines out) in one process", description=__doc__)
    p.add_argument("--batch", required=True, metavar="FILE.jsonl",
                   help="requests, one JSON object a line ('-': stdin)")
    p.add_argument("--execute-kernels", action="store_true",
                   help="allow kernel references PATH.py::FUNCTION in requests (EXECUTES them)")
    p.set_defaults(func=run)


def _lines(path: str):
    from loopsim.base.errors import InputError

    if path == "-":
        yield from sys.stdin
        return
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(f"--batch {path}: cannot read ({e.strerror})") from None
    with f:
        yield from f


def run(args) -> int:
    from loopsim.analyses import batch
    from loopsim.render.json import clean

    s = batch.Session(execute_kernels=args.execute_kernels)
    out = sys.stdout
    for n, line in enumerate(_lines(args.batch), 1):
        if not line.strip():
            continue
        if len(line) > batch.MAX_LINE:
            ans = {"id": None, "error": f"line {n}: longer than {batch.MAX_LINE:,} characters"}
        else:
            try:
                req = json.loads(line)
            except (ValueError, RecursionError) as e:
                ans = {"id": None, "error": f"line {n}: not JSON ({str(e).splitlines()[0][:80]})"}
            else:
                ans = batch.evaluate(s, req)
        out.write(json.dumps(clean(ans)) + "\n")
        out.flush()
    return 0
