"""Trace build, count and replay on a ~10-million-request matmul nest, before and after.

Prints figures; asserts nothing (machines are shared and noisy: compare ratios within one run).
Both revisions run here, one after the other, each in a fresh process (see _before.py):

    python benchmarks/bench_trace.py                 # before = benchmarks/_before.BEFORE
    python benchmarks/bench_trace.py --before REF    # any git revision
    python benchmarks/bench_trace.py --big           # also the 16384^3 / 32^3 LRU and OPT counts

Figures: the trace build in ns per request (best of 3) and its peak memory in bytes per request
(tracemalloc: every numpy array allocated while building), count() as written and under LRU
(whole calls), the in-process replay of the built trace (LRU and OPT, ns per request), and the
first LRU count() of a fresh process with an empty numba cache (numba's import and the compiles
of the walker and the LRU kernel, then the count: what a first run after install pays for a
trace too long for the plain-Python twins). Times
are CPU seconds of the process (time.process_time): on a shared machine wall time mostly
measures the other tenants.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _before import BEFORE, ROOT, run_json, table, tree  # noqa: E402

CHILD = r"""
import json, time, tracemalloc
from loopsim.frontends import spec
from loopsim.sim import trace
from loopsim.count.counts import count
from loopsim.sim import replay
M, N, K = %d, %d, %d
k = spec.load_kernel("matmul", {"M": M, "N": N, "K": K, "TM": 32, "TK": 32, "TN": 32})
trace.build(spec.load_kernel("matmul"))  # imports and jit caches loaded
try:  # the target protocol (issue 19); a revision before it took the partition count
    from loopsim.targets import hardware as _hw_sheets
    TRN = _hw_sheets.load("trn2-core")  # 128 SBUF partitions: costs per partition
    count(spec.load_kernel("matmul"), policy="as-written", capacity=1 << 16, target=TRN)
    WHERE = {"target": TRN}
except TypeError:
    TRN, WHERE = 128, {"partitions": 128}
def best(f, r=3):
    b, out = 1e9, None
    for _ in range(r):
        t = time.process_time(); out = f(); b = min(b, time.process_time() - t)
    return b, out
t_build, tr = best(lambda: trace.build(k))
n = tr.n
del tr
tracemalloc.start()
tr = trace.build(k)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
cap = 64 * 1024  # bytes per partition: far below the operands, so both policies evict
t_aw, c = best(lambda: count(k, policy="as-written", capacity=cap, **WHERE))
t_lru, _ = best(lambda: count(k, policy="lru", capacity=cap, **WHERE), 2)
cost, write = tr.object_cost(TRN), tr.write
out = {"n": n, "build_ns": t_build / n * 1e9, "build_bytes": peak / n, "count_aw_s": t_aw,
       "count_lru_s": t_lru, "Q_aw": getattr(c, "Q", None) or c.hbm_bytes}
for policy in ("lru", "opt"):
    replay(tr.obj[:1000], write[:1000], cost, cap, policy)
    dt, r = best(lambda: replay(tr.obj, write, cost, cap, policy))
    out[policy + "_ns"] = dt / n * 1e9
    out[policy + "_misses"] = r.misses
print(json.dumps(out))
"""


COLD = r"""
import json, time
from loopsim.frontends import spec
from loopsim.count.counts import count
import inspect
k = spec.load_kernel("matmul", {"M": %d, "N": %d, "K": %d, "TM": 32, "TK": 32, "TN": 32})
if "target" in inspect.signature(count).parameters:  # the target protocol (issue 19)
    from loopsim.targets import hardware as _hw_sheets
    WHERE = {"target": _hw_sheets.load("trn2-core")}
else:
    WHERE = {"partitions": 128}
t = time.process_time()
count(k, policy="lru", capacity=64 * 1024, **WHERE)
print(json.dumps({"first_lru_s": time.process_time() - t}))
"""


def cold(code: str, root: str) -> dict:
    """``code`` in a fresh process with an empty numba cache (what the first run after install
    compiles)."""
    with tempfile.TemporaryDirectory() as d:
        return run_json(code, root, {"NUMBA_CACHE_DIR": d})


def big(policy: str) -> None:
    """The 16384^3 matmul with 32^3 tiles through the CLI: time and peak memory of the process."""
    cmd = ["/usr/bin/time", "-f", "%e %M %U", sys.executable, "-c",
           "import sys; from loopsim.cli.main import main; sys.exit(main(sys.argv[1:]))",
           "entitle", "matmul", "--hardware", "trn2-core", "--set", "M=16384", "--set", "N=16384",
           "--set", "K=16384", "--set", "TM=32", "--set", "TK=32", "--set", "TN=32", "--policy",
           policy, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    secs, kb, user = p.stderr.strip().splitlines()[-1].split()
    q = __import__("json").loads(p.stdout)["Q"] if p.stdout.strip() else None
    print(f"16384^3 / 32^3 matmul --policy {policy}: exit {p.returncode}, {float(secs):.1f} s wall "
          f"({float(user):.1f} s user), peak {int(kb) / 2**20:.2f} GiB, Q = {q:,}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=BEFORE, help=f"git revision to compare with (default {BEFORE})")
    ap.add_argument("--M", type=int, default=5120)
    ap.add_argument("--N", type=int, default=4096)
    ap.add_argument("--K", type=int, default=4096)
    ap.add_argument("--big", action="store_true", help="also run the 16384^3 LRU and OPT counts")
    args = ap.parse_args()
    code = CHILD % (args.M, args.N, args.K)
    t = time.perf_counter()
    old = tree(args.before)
    before = run_json(code, old)
    after = run_json(code, ROOT)
    cold_code = COLD % (args.M, args.N, args.K)
    before |= cold(cold_code, old)
    after |= cold(cold_code, ROOT)
    print(f"matmul {args.M}x{args.N}x{args.K}, 32^3 tiles: {after['n']:,} requests "
          f"(before: {before['n']:,}); {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}; before = {args.before}, after = working tree")
    table([
        ("trace build", before["build_ns"], after["build_ns"], "ns per request"),
        ("trace build peak memory", before["build_bytes"], after["build_bytes"], "bytes per request"),
        ("count() as written", before["count_aw_s"], after["count_aw_s"], "s"),
        ("count() lru (trace + replay)", before["count_lru_s"], after["count_lru_s"], "s"),
        ("replay lru", before["lru_ns"], after["lru_ns"], "ns per request"),
        ("replay opt", before["opt_ns"], after["opt_ns"], "ns per request"),
        ("count() lru, first call, empty numba cache", before["first_lru_s"], after["first_lru_s"], "s"),
    ])
    print(f"Q as written identical: {before['Q_aw'] == after['Q_aw']}; misses lru "
          f"{before['lru_misses']:,} -> {after['lru_misses']:,}, opt {before['opt_misses']:,} -> "
          f"{after['opt_misses']:,} (equal unless the trace's semantics changed between the two)")
    print(f"({time.perf_counter() - t:.0f} s)")
    if args.big:
        for policy in ("lru", "opt"):
            big(policy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
