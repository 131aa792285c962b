"""Trace expansion and replay throughput on a >= 10-million-access matmul nest.

Prints figures; asserts nothing (machines are shared and noisy: compare ratios within one run).
Run: python benchmarks/bench_trace.py [--scale S]
"""

from __future__ import annotations

import argparse
import time

from loopsim import spec, trace
from loopsim.counts import count
from loopsim.sim import replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--M", type=int, default=5120)
    ap.add_argument("--N", type=int, default=4096)
    ap.add_argument("--K", type=int, default=4096)
    args = ap.parse_args()
    # the tutorial's loop order with small tiles: (M/32)(N/32)(K/32) instructions, each with two
    # loads and two operand uses (the accumulations stay in PSUM and are dropped)
    k = spec.load_kernel("matmul", {"M": args.M, "N": args.N, "K": args.K, "TM": 32, "TK": 32, "TN": 32})
    trace.build(spec.load_kernel("matmul"))  # warm-up: imports
    t0 = time.perf_counter()
    tr = trace.build(k)
    t_build = time.perf_counter() - t0
    n = tr.n
    print(f"nest: matmul {args.M}x{args.N}x{args.K}, tiles 32x32x32: {tr.instructions:,} instructions, "
          f"{n:,} accesses, {tr.obj_bytes.size:,} objects")
    print(f"trace expansion: {t_build:.3f} s  ({n / t_build / 1e6:.1f} M accesses/s)")
    t0 = time.perf_counter()
    c = count(k, policy="as-written", capacity=10**9, trace=tr)
    print(f"as-written count: {time.perf_counter() - t0:.3f} s  (Q = {c.hbm_bytes:,} bytes)")
    cost = tr.object_cost(128)
    write = tr.write
    cap = 64 * 1024  # bytes per partition: far less than the operands, so both policies evict
    for policy in ("lru", "opt"):
        t0 = time.perf_counter()
        replay(tr.obj[:1000], write[:1000], cost, cap, policy)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = replay(tr.obj, write, cost, cap, policy)
        dt = time.perf_counter() - t0
        print(f"replay {policy}: {dt:.3f} s  ({n / dt / 1e6:.1f} M accesses/s; first call incl. "
              f"compile or cache load {first:.3f} s); misses {r.misses:,}")


if __name__ == "__main__":
    main()
