"""Tracing an NKI kernel file: a tiled matmul making over a million DMA and matmul calls.

The shim runs each loop body once with symbolic indices, so tracing costs the same whatever the
trip counts; the IR it returns is then counted like any spec. Prints figures; asserts nothing.
Run: python benchmarks/bench_nki.py [--size N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from loopsim.targets import hardware
from loopsim.model import pipeline
from loopsim.frontends.nki.load import load_kernel

KERNEL = Path(__file__).resolve().parent.parent / "tests" / "nki_kernels" / "matmul_isa.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=16384, help="M = N = K (elements)")
    n = ap.parse_args().size
    args = {"lhsT": ((n, n), "bf16"), "rhs": ((n, n), "bf16")}
    load_kernel(str(KERNEL), "tiled", args={"lhsT": ((256, 256), "bf16"), "rhs": ((256, 512), "bf16")})
    t0 = time.perf_counter()
    k = load_kernel(str(KERNEL), "tiled", args=args)
    t_trace = time.perf_counter() - t0
    iters = (n // 128) * (n // 512) * (n // 128)
    calls = 3 * iters + 2 * (n // 128) * (n // 512)  # 2 dma_copy + nc_matmul per k; copy + store per (m, n)
    print(f"kernel: {KERNEL.name}::tiled at M = N = K = {n}: {calls:,} NKI calls as the kernel "
          f"runs ({2 * iters:,} DMA loads, {iters:,} nc_matmul)")
    print(f"trace (execute the file against the shim, lower to IR): {t_trace * 1e3:.1f} ms")
    hw = hardware.load("trn2-core")
    t0 = time.perf_counter()
    rep = pipeline.analyze_kernel(k, hw)
    t_count = time.perf_counter() - t0
    print(f"analysis as written (pipeline.analyze_kernel: counts, ceilings, verdict): {t_count:.2f} s  "
          f"(W = {rep.counts.flops:,} FLOPs, Q = {rep.counts.Q:,} bytes)")
    print(f"total: {t_trace + t_count:.2f} s for {calls / (t_trace + t_count) / 1e6:.1f} M NKI calls/s")


if __name__ == "__main__":
    main()
