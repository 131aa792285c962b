"""One stack-distance pass (loopsim.sim.stack.lru_curve) against one LRU replay per capacity.

    /tmp/venv/bin/python benchmarks/bench_stack.py                 # ~10.4 M accesses, 16 capacities
    /tmp/venv/bin/python benchmarks/bench_stack.py --size 2048     # smaller, quicker

The trace is loopsim's own: the NKI tutorial matmul (tilings/matmul.toml, loops m, n, k, both
operand tiles loaded inside k) at M = N = K = 8192 with TM = 128, TK = 32, TN = 52 (a ragged last
N tile), built by loopsim.sim.trace: 64 x 158 x 256 iterations of (load A, load B, use A, use B) plus
the stores, 10.36 M requests. Capacities: ``--capacities`` points spaced geometrically from the
smallest that runs the kernel to the whole footprint, in bytes per partition of trn2-core.

Figures printed (never asserted): the time to build the trace, the stack-distance pass alone, the
whole curve (pass + counting per capacity), the same capacities by separate
loopsim.sim.replay(..., "lru") calls (after a warm-up call, so no compilation is timed), the
speed-up, and whether misses and bytes agree at every capacity.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from loopsim.frontends import spec  # noqa: E402
from loopsim.sim import trace  # noqa: E402
from loopsim.count.counts import working_set  # noqa: E402
from loopsim.sim import replay  # noqa: E402
from loopsim.sim.stack import lru_curve, stack_distances  # noqa: E402

from loopsim.targets import hardware  # noqa: E402

TARGET = hardware.load("trn2-core")  # 128 SBUF partitions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=8192, help="M = N = K (default 8192)")
    ap.add_argument("--tn", type=int, default=52, help="TN (default 52: 10.36 M requests at 8192)")
    ap.add_argument("--tk", type=int, default=32, help="TK (default 32)")
    ap.add_argument("--capacities", type=int, default=16, help="capacities (default 16)")
    a = ap.parse_args(argv)

    kern = spec.load_kernel("matmul", {"M": a.size, "N": a.size, "K": a.size, "TK": a.tk, "TN": a.tn})
    t = time.perf_counter()
    tr = trace.build(kern)
    t_build = time.perf_counter() - t
    cost = tr.object_cost(TARGET)
    lo = max(working_set(kern, TARGET), int(cost.max()))
    hi = int(cost.sum())
    caps = sorted({int(round(lo * (hi / lo) ** (i / (a.capacities - 1)))) for i in range(a.capacities)})
    print(f"trace: {tr.n:,} requests over {tr.obj_bytes.size:,} objects (built in {t_build:.2f} s); "
          f"{len(caps)} capacities from {lo:,} to {hi:,} bytes per partition")

    # warm up both (numba loads its cached kernels, or compiles them once)
    small = np.array([0, 1, 0]), np.zeros(3, bool), np.array([1, 1])
    lru_curve(*small, [2])
    replay(*small, 2, "lru")

    t = time.perf_counter()
    dist = stack_distances(tr.obj, cost)
    t_pass = time.perf_counter() - t
    t = time.perf_counter()
    curve = lru_curve(tr.obj, tr.write, cost, caps, tr.obj_bytes, tr.obj_tensor)
    t_curve = time.perf_counter() - t
    t = time.perf_counter()
    reps = [replay(tr.obj, tr.write, cost, c, "lru", size=tr.obj_bytes) for c in caps]
    t_replays = time.perf_counter() - t

    agree = all(int(curve.misses[j]) == r.misses and int(curve.Q[j]) == r.fetch_bytes + r.writeback_bytes
                for j, r in enumerate(reps))
    print(f"stack-distance pass alone      {t_pass:8.3f} s   ({tr.n / t_pass / 1e6:.1f} M requests/s)")
    print(f"lru_curve, {len(caps):>2} capacities       {t_curve:8.3f} s   (one pass + counting)")
    print(f"replay(lru) x {len(caps):>2}               {t_replays:8.3f} s   ({t_replays / len(caps):.3f} s each)")
    print(f"speed-up                       {t_replays / t_curve:8.2f} x   (break-even at about "
          f"{t_curve / (t_replays / len(caps)):.0f} capacities)")
    print(f"misses and Q agree at every capacity: {agree}")
    for j, c in enumerate(caps):
        print(f"  capacity {c:>10,} B/partition   misses {int(curve.misses[j]):>12,}   "
              f"Q {int(curve.Q[j]):>16,} bytes")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
