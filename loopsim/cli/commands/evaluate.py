"""``loopsim evaluate --batch FILE.jsonl``: many verdicts in one process, for agent loops. One
request a line (a JSON object: spec or inline toml, hardware, set, policy, dtype, sbuf_bytes,
buffers, lnc, roofs, model, id), one JSON result a line in the same order (feasible, reasons, T, limit,
W, Q, SBUF and PSUM use, seconds to answer); a bad line gets an error line and the batch goes on.
``-`` reads stdin. A kernel reference PATH.py::FUNCTION in a request EXECUTES that file and is
refused unless --execute-kernels is given. By default one process answers line by line as they
come; --jobs N (or --scheduler) reads the whole batch and answers it in chunks on N processes (or
a Dask cluster), the lines in the same order with the same answers. Exit 0 when every line was read (even with error
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
    p.add_argument("--model", choices=("timeline", "floor", "roofline"), default="timeline",
                   help="the verdict of a request without its own model: timeline (default: "
                        "entitle's verdict, the engine timeline's predicted time included, tens of "
                        "milliseconds a request), floor (every roof and ceiling and the transfers "
                        "at their sizes' rates, a few milliseconds a request: what search ranks "
                        "by before it confirms), roofline (roofs and ceilings alone)")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="local processes (default 1: answer each line as it comes)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="answer on a Dask distributed cluster, e.g. tcp://127.0.0.1:8786")
    p.set_defaults(func=run)


#: lines per unit of work with --jobs / --scheduler
CHUNK = 32


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

    out = sys.stdout
    if args.jobs == 1 and args.scheduler is None:
        s = batch.Session(execute_kernels=args.execute_kernels, model=args.model)
        for n, line in enumerate(_lines(args.batch), 1):
            if line.strip():
                out.write(json.dumps(clean(batch.answer_line(s, n, line))) + "\n")
                out.flush()
        return 0
    from loopsim.analyses.parallel import Pool, check_jobs

    jobs = None if args.scheduler else check_jobs(args.jobs)
    lines = [(n, line) for n, line in enumerate(_lines(args.batch), 1) if line.strip()]
    chunks = [(args.execute_kernels, args.model, tuple(lines[i:i + CHUNK]))
              for i in range(0, len(lines), CHUNK)]
    with Pool(jobs, args.scheduler) as pool:
        for answers in pool.map(batch.answer_chunk, chunks):
            for ans in answers:
                out.write(json.dumps(clean(ans)) + "\n")
    return 0
