"""What a short trace costs as plain Python against compiled: the figures behind
``loopsim.sim._jit.PLAIN_BUDGET``.

Prints, over every bundled tiling whose nest has at most 300,000 request slots, the CPU
microseconds per request slot of each plain-Python pass (the walk, an LRU replay, an OPT replay),
and, each in a fresh process, the CPU seconds of loading the compiled walker and LRU kernel: from
a warm numba cache and from an empty one (the compile). A process runs the twins while the slots
it spends stay under the budget; past it, what it would pay instead is the load (warm) or the
compile (cold). Last, the walker's compile alone for a nest without statement-level checks
(matmul: the smaller variant) and one with them (matmul_blocked: the general variant). Asserts
nothing:

    python benchmarks/bench_plain.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# in a fresh process: build a tiny trace of SPEC and replay it under LRU with the compiled kernels
LOAD = """
import json, sys, time
t0 = time.process_time()
from loopsim.sim import _jit, trace, replay
from loopsim.frontends import spec
from loopsim.targets import hardware
_jit.PLAIN_BUDGET = 0
k = spec.load_kernel("SPEC")
t1 = time.process_time()
import numba
t2 = time.process_time()
tr = trace.build(k)
t3 = time.process_time()
replay(tr.obj, tr.write, tr.object_cost(hardware.load("trn2-core")), 1 << 20, "lru")
print(json.dumps({"imports": t1 - t0, "load": time.process_time() - t1, "numba": t2 - t1,
                  "walk": t3 - t2, "lru": time.process_time() - t3}))
"""


def plain_pace() -> dict[str, tuple[float, int]]:
    """{pass: (CPU seconds, request slots)} summed over the bundled tilings, plain Python."""
    from loopsim.frontends import spec
    from loopsim.model import pipeline
    from loopsim.sim import _jit, replay, trace
    from loopsim.targets import hardware

    _jit.PLAIN_BUDGET = 1 << 62
    hw = hardware.load("trn2-core")
    tot = {"walk": [0.0, 0], "lru": [0.0, 0], "opt": [0.0, 0]}
    for name in spec.bundled_names():
        for st in pipeline.load(name).stages:
            ns = trace.compile_nest(st.kernel)
            if ns.slots > 300_000:
                continue
            t0 = time.process_time()
            tr = trace.build(st.kernel, ns)
            t1 = time.process_time()
            cost = tr.object_cost(hw)
            cap = max(4 * int(cost.max()), 1 << 20)
            times = [t1 - t0]
            for policy in ("lru", "opt"):
                t0 = time.process_time()
                replay(tr.obj, tr.write, cost, cap, policy, size=tr.obj_bytes, dead=tr.dead)
                times.append(time.process_time() - t0)
            for key, dt in zip(tot, times):
                tot[key][0] += dt
                tot[key][1] += ns.slots
    assert "numba" not in sys.modules, "the plain passes imported numba"
    return {k: (v[0], v[1]) for k, v in tot.items()}


def load(cache: str | None, kernel: str = "matmul") -> dict:
    env = {**os.environ, "PYTHONPATH": ROOT}
    if cache:
        env["NUMBA_CACHE_DIR"] = cache
    p = subprocess.run([sys.executable, "-c", LOAD.replace("SPEC", kernel)], capture_output=True,
                       text=True, env=env, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    from loopsim.sim import _jit

    budget = _jit.PLAIN_BUDGET
    pace = plain_pace()
    print(f"plain Python, bundled tilings (<= 300,000 slots each); {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    for k, (s, n) in pace.items():
        print(f"  {k:5s} {n:>9,} slots  {s:6.3f} s CPU  {1e6 * s / n:5.2f} us per slot")
    per = max(s / n for s, n in pace.values())
    print(f"PLAIN_BUDGET {budget:,} slots: at most ~{budget * per:.2f} s CPU at the slowest pass's pace")
    with tempfile.TemporaryDirectory() as cold:
        c = load(cold)
        w = load(cold)
    print(f"compiled walker + LRU kernel, fresh process: empty numba cache {c['load']:.2f} s CPU, "
          f"warm cache {w['load']:.2f} s CPU (numba's import included; loopsim's imports "
          f"{w['imports']:.2f} s besides)")
    # the walker's two variants, each compiled alone (loopsim/sim/_gen.py): matmul needs no
    # statement-level checks, matmul_blocked does
    for kernel in ("matmul", "matmul_blocked"):
        with tempfile.TemporaryDirectory() as cold:
            c = load(cold, kernel)
        print(f"  empty cache, {kernel}: numba import {c['numba']:.2f} s, walker compile "
              f"{c['walk']:.2f} s, LRU kernel compile {c['lru']:.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
