"""The engine timeline: what it predicts for the curriculum's kernels, and what it costs to run.

    python benchmarks/bench_timeline.py [--quick]

1. Predictions: the four NKI matmul tutorial kernels at [4096, 8192] @ [8192, 8192] (bf16) on
   trn1-core, the fully optimized one double-buffered too, the Day-2 decode projection (B = 1) on
   trn2-core, a decode RMSNorm (B = 4, D = 4096: Q = 73,728 bytes) and the bundled matmul at
   M = 4096 on trn2-core, one and two buffers: T_best, the roofline's T, the timeline's T, where
   the critical path runs and the gap's parts.
2. Cost: the timeline of the bundled matmul (loads inside k) from 416 to ~4 x 10^8 instructions:
   instructions, instructions simulated, runs, seconds. Past the budget the nest is cut and
   extrapolated, so the time grows with the loop structure, not the trip count.
3. An exact run's rate: matmul 4096 x 4096 x 2048 (12,800 instructions) and, without --quick,
   16384 x 16384 x 10240 (991,232 instructions, the issue's 10^6), in CPU and wall seconds, with
   the Python walk and the compiled walk (``timeline(compiled=True)``), the compiled one twice:
   the first compiled run in the process includes numba's import and compiling the walk (an
   empty ``NUMBA_CACHE_DIR``: cold) or loading it from the cache (warm); the second is the walk
   alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from loopsim.base.fmt import fmt_time  # noqa: E402
from loopsim.frontends import spec  # noqa: E402
from loopsim.model import pipeline  # noqa: E402
from loopsim.targets import hardware  # noqa: E402
from loopsim.targets.neuron import timeline as ntl  # noqa: E402

RMSNORM = """[kernel]
name = "rmsnorm_decode"
about = "decode-time RMSNorm: 4 tokens of width 4096 (bf16), gamma loaded once"
[params]
B = 4
D = 4096
[tensors]
x = { shape = ["B", "D"], dtype = "bf16" }
gamma = { shape = ["D"], dtype = "bf16" }
y = { shape = ["B", "D"], dtype = "bf16", output = true }
[nest]
body = '''
load gamma[:]
load x[:, :]
rmsnorm y[:, :] = x[:, :], gamma[:]
store y[:, :]
'''
"""


def row(label, ref, hw_name, sets=None, buffers=None):
    hw = hardware.load(hw_name)
    prog = pipeline.load(ref, sets or {}, buffers=buffers)
    t0 = time.perf_counter()
    a = pipeline.analyze(prog, hw)
    dt = time.perf_counter() - t0
    r = pipeline.analyze(prog, hw, model="roofline")
    t = a.stages[0].timeline
    gap = ", ".join(f"{k} {v / (t.T - t.T_best):.0%}" for k, v in t.gap
                    if t.T > t.T_best and abs(v) >= 0.01 * (t.T - t.T_best))
    busy = ", ".join(f"{k} {v / t.T:.0%}" for k, v in t.busy)
    print(f"| {label} | {hw_name} | {fmt_time(a.entitlement.T_best)} | {fmt_time(r.T)} ({r.limit}) | "
          f"{fmt_time(a.T)} | {t.critical} | {busy} | {gap} | {dt:.2f} s |")


def predictions() -> None:
    tut = str(spec.locate("nki_tutorial/1_tiled").parent)
    shape = dict(M=4096, N=8192, K=8192)
    print("| kernel | sheet | T_best | roofline T (limit) | timeline T | critical path | busy | gap T - T_best | analyze |")
    print("|---|---|---|---|---|---|---|---|---|")
    for f in ("1_tiled", "2_hoist_load", "3_block_free_dimension", "4_fully_optimized"):
        row(f"tutorial {f}", f"{tut}/{f}.toml", "trn1-core", shape)
    row("tutorial 4_fully_optimized, 2 buffers", f"{tut}/4_fully_optimized.toml", "trn1-core", shape,
        (("*", 2),))
    row("projection B=1 (Day 2 decode)", "projection", "trn2-core", dict(B=1))
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "rmsnorm_decode.toml")
        with open(p, "w") as f:
            f.write(RMSNORM)
        row("decode RMSNorm (Q = 73,728 B)", p, "trn2-core")
    row("matmul M=4096, 1 buffer", "matmul", "trn2-core", dict(M=4096))
    row("matmul M=4096, 2 buffers", "matmul", "trn2-core", dict(M=4096), (("*", 2),))
    row("matmul_blocked M=4096, 2 buffers", "matmul_blocked", "trn2-core", dict(M=4096), (("*", 2),))


def cost(quick: bool) -> None:
    hw = hardware.load("trn2-core")
    print("\n| matmul M=N=K | instructions | simulated | runs | exact | T | seconds |")
    print("|---|---|---|---|---|---|---|")
    sizes = (1024, 4096, 16384) if quick else (1024, 4096, 16384, 65536, 131072)
    for n in sizes:
        k = spec.load_kernel("matmul", dict(M=n, N=n, K=n))
        W = 2 * n ** 3
        Q = 2 * (n * n * (n // 512) + n * n * (n // 128) + n * n)
        t0 = time.perf_counter()
        t = ntl.timeline(k, hw, dtype="bf16", W_P=W / hw.P("bf16"), Q_BW=Q / hw.bw, Q=Q)
        dt = time.perf_counter() - t0
        print(f"| {n} | {t.count:,} | {t.simulated:,} | {t.runs} | {t.exact} | {fmt_time(t.T)} | {dt:.2f} |")
    # an exact run's rate: CPU seconds (the box is shared), wall beside them
    exact = [(4096, 4096, 2048)] + ([] if quick else [(16384, 16384, 10240)])
    # compiled: its first use in the process pays numba's import and the compile (empty cache) or
    # the load from its cache; then the walk alone
    print("\n| exact run of matmul M x N x K | walk | instructions | CPU s | wall s | instructions / CPU s |")
    print("|---|---|---|---|---|---|")
    first = True
    for m, n, kk in exact:
        k = spec.load_kernel("matmul", dict(M=m, N=n, K=kk))
        for compiled in (False, True, True):
            c0, t0 = time.process_time(), time.perf_counter()
            t = ntl.timeline(k, hw, dtype="bf16", W_P=1.0, Q_BW=1.0, Q=1, budget=10 ** 7, compiled=compiled)
            cpu, dt = time.process_time() - c0, time.perf_counter() - t0
            assert t.exact
            how = "Python" if not compiled else "compiled, first in the process" if first else "compiled"
            first = first and not compiled
            print(f"| {m} x {n} x {kk} | {how} | {t.count:,} | {cpu:.2f} | {dt:.2f} | {t.count / cpu:,.0f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    a = ap.parse_args()
    predictions()
    cost(a.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
