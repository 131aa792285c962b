"""Tracing cost of a loop run iteration by iteration: 10^5 instructions.

``rotated_copy`` (tests/nki_kernels/idioms.py) picks its SBUF buffer with ``bufs[k % 2]``, so
its row loop is traced concretely, one pass per iteration, and re-rolled into one loop. With
R = 128 x 50,000 rows that is 100,000 DMA instructions recorded (a load and a store per
iteration). Prints wall and CPU seconds of the trace (the concrete pass and the retries that
lead to it) and the IR's size; asserts nothing.
Run: python benchmarks/bench_concrete.py [--iterations N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from loopsim.frontends.nki.load import trace_kernel

KERNEL = Path(__file__).resolve().parent.parent / "tests" / "nki_kernels" / "idioms.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=50_000, help="row tiles (2 DMAs each)")
    n = ap.parse_args().iterations
    trace_kernel(str(KERNEL), "rotated_copy", args={"x": ((256, 512), "bf16")})  # imports warm
    w0, c0 = time.perf_counter(), time.process_time()
    k, rec = trace_kernel(str(KERNEL), "rotated_copy", args={"x": ((128 * n, 512), "bf16")})
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    stmts = len(list(k.statements()))
    print(f"rotated_copy, {n:,} iterations = {2 * n:,} DMA instructions traced concretely")
    print(f"  trace: {wall:.2f} s wall, {cpu:.2f} s CPU ({cpu / (2 * n) * 1e6:.1f} µs CPU per "
          f"instruction); IR: {stmts} statements in one loop of {n:,} trips; "
          f"{len(rec.concrete)} loops concrete")


if __name__ == "__main__":
    main()
