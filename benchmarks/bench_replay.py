"""How fast loopsim.sim.replay is, and how it compares with libCacheSim (if installed).

    /tmp/venv/bin/python benchmarks/bench_replay.py            # ~10.2 M requests
    /tmp/venv/bin/python benchmarks/bench_replay.py --blocks 100   # smaller, quicker

The trace: a blocked matmul C = A·B over a B×B×B grid of tiles, loop order m, n, k, as the NKI
tutorial kernel writes it: for each (m, n) the k loop loads A[k, m] (128×128 bf16, 32 KiB) and
B[k, n] (128×512 bf16, 128 KiB), then C[m, n] (128×512 bf16, 128 KiB) is stored (a write).
Randomness: each (m, n) starts its k loop at a random k (a rotated reduction order), and 2 % of
the requests are replaced by reads of a uniformly random tile (noise from other work). With
B = 172 that is 2·172³ + 172² = 10.2 M requests over 3·172² = 88.7 k objects; capacity is one
SBUF, 24 MiB.

Figures printed (never asserted):
* in-process load_trace of the trace written by write_trace, with its dense ids and with the
  same objects under hashed 64-bit ids (ranking them is the sparse-id pass), best of 3;
* in-process throughput of replay() for lru and opt, best of 3 after a warm-up call, plus the
  first-call time in this process (numba import + loading the cached kernels, or compiling them
  when the cache is cold) and a cold compile in a subprocess with an empty cache;
* libCacheSim's LRU and Belady on the same requests through its C trace reader (oracleGeneral
  binary, which carries each request's next-access time for Belady), in-process, same timing;
* whole process against whole process (CPU seconds): `loopsim replay TRACE.npz --json` (the
  CLI's main()), against `python -c` opening the oracleGeneral file with libCacheSim and replaying
  it — libCacheSim reading its own native format, so it is spared any conversion — with dense ids
  and with the same objects under hashed 64-bit ids, and the previous loopsim (--before) beside;
* whether miss counts agree with libCacheSim (uniform sizes: cost 1 per object, and bytes).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from loopsim.sim.replayfile import load_trace, write_trace  # noqa: E402
from _before import BEFORE, tree  # noqa: E402
from loopsim.sim import next_use, replay  # noqa: E402

SBUF_BYTES = 24 * 2**20
A_BYTES, B_BYTES, C_BYTES = 128 * 128 * 2, 128 * 512 * 2, 128 * 512 * 2

# oracleGeneral: libCacheSim's binary trace record, packed little-endian
ORACLE_GENERAL = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"), ("next_access_vtime", "<i8")])


def matmul_trace(b: int, noise: float = 0.02, seed: int = 0):
    """(obj ids, per-request bytes, write flags) of the blocked matmul described above, vectorised."""
    rng = np.random.default_rng(seed)
    m, n, k = np.meshgrid(np.arange(b), np.arange(b), np.arange(b), indexing="ij")
    k = (k + rng.integers(0, b, size=(b, b, 1))) % b  # rotated k loop per (m, n)
    a_id = k * b + m  # A[k, m]
    b_id = b * b + k * b + n  # B[k, n]
    per_mn = np.stack([a_id, b_id], axis=-1).reshape(b, b, 2 * b)  # A, B, A, B, ... along k
    c_id = (2 * b * b + np.arange(b)[:, None] * b + np.arange(b)[None, :])[..., None]
    obj = np.concatenate([per_mn, c_id], axis=-1).reshape(-1).astype(np.int64)
    write = np.zeros((b, b, 2 * b + 1), bool)
    write[..., -1] = True
    write = write.reshape(-1)
    noisy = rng.random(obj.shape[0]) < noise
    obj[noisy] = rng.integers(0, 3 * b * b, int(noisy.sum()))
    write[noisy] = False
    obj_bytes = np.repeat(np.array([A_BYTES, B_BYTES, C_BYTES], np.int64), b * b)
    return obj, obj_bytes[obj], write


def best_of(f, repeat=3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.process_time()
        out = f()
        best = min(best, time.process_time() - t)
    return best, out


def hashed_ids(obj):
    """Sparse 64-bit ids, as traces from other tools carry: obj * (odd constant) mod 2**63, a
    bijection, so the same objects under ids spread over the whole int64 range."""
    return ((obj.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) & np.uint64(2**63 - 1)).astype(np.int64)


def oracle_general(obj, size_per_req, ids=None):
    nu = next_use(obj)
    rec = np.zeros(obj.shape[0], ORACLE_GENERAL)
    rec["time"] = np.arange(obj.shape[0]) // 1000  # coarse clock; nothing here reads it
    rec["obj_id"] = (obj if ids is None else ids).astype(np.uint64) + np.uint64(1)
    rec["obj_size"] = size_per_req
    rec["next_access_vtime"] = np.where(nu == obj.shape[0], -1, nu)
    return rec


LCS_SCRIPT = """
import sys, libcachesim as lcs
path, cap, policy = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_obj_size=False))
cache = (lcs.LRU if policy == "lru" else lcs.Belady)(cap)
omr, bmr = cache.process_trace(reader)
print(round(omr * reader.get_num_of_req()))
"""

# the command a user runs: `loopsim replay TRACE.npz --capacity C --policy P --json`
LOOPSIM_SCRIPT = """
import sys, json, io, contextlib
from loopsim.cli.main import main
path, cap, policy = sys.argv[1:4]
sys.argv = ["loopsim", "replay", path, "--capacity", cap, "--policy", policy, "--json"]
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = main()  # as the console script calls it: main() reads sys.argv
print(json.loads(buf.getvalue())["misses"])
"""


def run_process(script, *args, env=None):
    """(CPU seconds of the child, user + system; the integer it prints last). The child runs in
    the folder its PYTHONPATH names: ``python -c`` puts its working folder first on sys.path, so
    run from the repository it would import this checkout's loopsim whatever PYTHONPATH says."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cwd = (env or {}).get("PYTHONPATH") or tempfile.gettempdir()
    p = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env,
                       cwd=cwd)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    dt = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode:
        raise SystemExit(p.stderr)
    return dt, int(p.stdout.split()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=172, help="tiles per matmul dimension (default 172: 10.2 M requests)")
    ap.add_argument("--capacity", type=int, default=SBUF_BYTES, help="bytes (default 24 MiB)")
    ap.add_argument("--before", default=BEFORE, help="git revision whose `loopsim replay` is timed "
                    f"beside (default {BEFORE}; '' for none)")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    obj, req_bytes, write = matmul_trace(args.blocks)
    n = obj.shape[0]
    print(f"trace: blocked matmul, {args.blocks}^3 tiles, {n:,} requests, {3 * args.blocks**2:,} objects, "
          f"{write.mean():.1%} writes (made in {time.perf_counter() - t:.2f} s); capacity {args.capacity:,} B")
    size = np.zeros(3 * args.blocks**2, np.int64)
    size[obj] = req_bytes
    cap = args.capacity

    print("\n== in process ==")
    results = {}
    for policy in ("lru", "opt"):
        t = time.perf_counter()
        replay(obj, write, size, cap, policy, size)
        first = time.perf_counter() - t
        dt, r = best_of(lambda: replay(obj, write, size, cap, policy, size))
        results[policy] = (dt, r)
        print(f"loopsim {policy}: {dt * 1e3:8.1f} ms  {n / dt / 1e6:7.1f} M req/s   misses {r.misses:,}  "
              f"miss {r.miss_bytes / 2**30:.2f} GiB  write-back {r.writeback_bytes / 2**30:.2f} GiB  "
              f"peak {r.peak_cost:,} B   (first call {first:.2f} s)")

    with tempfile.TemporaryDirectory() as d:
        row = []
        for label, ids in (("dense ids", obj), ("hashed 64-bit ids", hashed_ids(obj))):
            path = os.path.join(d, "t.npz")
            write_trace(path, ids, req_bytes, write)
            load_trace(path)
            dt, _ = best_of(lambda: load_trace(path))
            row.append(f"{label} {dt * 1e3:.1f} ms ({dt / n * 1e9:.1f} ns per request)")
            os.remove(path)
    print("load_trace (file mapped, ids ranked as np.unique ranks them, sizes checked): " + ",  ".join(row))

    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": ROOT}
        # 2^19 requests: above sim._jit.PLAIN_BUDGET (2^18), so the compiled kernels (not their
        # plain twins)
        small = "import numpy as np; from loopsim.sim import replay; o=np.zeros(1<<19,np.int64); w=np.zeros(1<<19,bool)\n"
        small += "for p in ('lru','opt'): replay(o, w, np.ones(1,np.int64), 1, p)\nprint(0)"
        cold, _ = run_process(small, env=env)
        warm, _ = run_process(small, env=env)
    print(f"tiny replay (both policies, 2^19 requests: compiled kernels) in a fresh process: "
          f"empty numba cache {cold:.2f} s, warm cache {warm:.2f} s")

    try:
        import libcachesim as lcs
    except ImportError:
        print("\nlibcachesim not importable: pip install libcachesim to compare")
        return 0

    with tempfile.TemporaryDirectory() as d:
        npz = os.path.join(d, "trace.npz")
        binf = os.path.join(d, "trace.oracleGeneral.bin")
        write_trace(npz, obj, req_bytes, write)
        oracle_general(obj, req_bytes).tofile(binf)
        npz_h = os.path.join(d, "hashed.npz")
        binf_h = os.path.join(d, "hashed.oracleGeneral.bin")
        ids = hashed_ids(obj)
        write_trace(npz_h, ids, req_bytes, write)
        oracle_general(obj, req_bytes, ids).tofile(binf_h)

        print(f"\n== in process, libCacheSim {getattr(lcs, '__version__', '')} (C reader, oracleGeneral file) ==")
        lcs_misses = {}
        for policy, cls in (("lru", lcs.LRU), ("opt", lcs.Belady)):
            def go(cls=cls, c=cap):
                reader = lcs.TraceReader(binf, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_obj_size=False))
                omr, _ = cls(c).process_trace(reader)
                return round(omr * reader.get_num_of_req())
            go()
            dt, misses = best_of(go)
            lcs_misses[policy] = misses
            ours_dt, ours = results[policy]
            print(f"libCacheSim {cls.__name__:7s}: {dt * 1e3:8.1f} ms  {n / dt / 1e6:7.1f} M req/s   misses {misses:,}"
                  f"   loopsim is {dt / ours_dt:5.1f}x faster   misses {'agree' if misses == ours.misses else 'DISAGREE'}")

        print("\n== miss counts, uniform sizes (cost 1 per object, capacity in objects) ==")
        ones = np.ones_like(size)
        uni = oracle_general(obj, np.ones(n, np.int64))
        uni_bin = os.path.join(d, "uniform.bin")
        uni.tofile(uni_bin)
        for objs in (64, 512, 4096):
            row = []
            for policy, cls in (("lru", lcs.LRU), ("opt", lcs.Belady)):
                ours = replay(obj, write, ones, objs, policy).misses
                reader = lcs.TraceReader(uni_bin, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_obj_size=False))
                theirs = round(cls(objs).process_trace(reader)[0] * n)
                row.append(f"{policy} {ours:,} vs {theirs:,} {'agree' if ours == theirs else 'DISAGREE'}")
            print(f"capacity {objs:5d} objects: " + ";  ".join(row))

        print("\n== whole process against whole process (python -c ..., best of 3 after one warm-up; "
              "CPU seconds, user + system) ==")
        env = {**os.environ, "PYTHONPATH": ROOT}
        old_env = {**os.environ, "PYTHONPATH": tree(args.before)} if args.before else None
        for label, f_npz, f_bin in (("dense ids", npz, binf), ("hashed 64-bit ids", npz_h, binf_h)):
            for policy in ("lru", "opt"):
                run_process(LOOPSIM_SCRIPT, f_npz, cap, policy, env=env)
                run_process(LCS_SCRIPT, f_bin, cap, policy)
                ours_t = min(run_process(LOOPSIM_SCRIPT, f_npz, cap, policy, env=env)[0] for _ in range(3))
                theirs_t = min(run_process(LCS_SCRIPT, f_bin, cap, policy)[0] for _ in range(3))
                line = (f"{label}, {policy}: loopsim replay (CLI: .npz + replay) {ours_t:.2f} s   "
                        f"libCacheSim (oracleGeneral + {'LRU' if policy == 'lru' else 'Belady'}) "
                        f"{theirs_t:.2f} s   libCacheSim / loopsim {theirs_t / ours_t:.1f}x")
                if old_env is not None:
                    run_process(LOOPSIM_SCRIPT, f_npz, cap, policy, env=old_env)
                    old_t = min(run_process(LOOPSIM_SCRIPT, f_npz, cap, policy, env=old_env)[0] for _ in range(3))
                    line += f"   (loopsim {args.before}: {old_t:.2f} s)"
                print(line)
        base = min(run_process("print(0)")[0] for _ in range(3))
        imp_np = min(run_process("import numpy; print(0)")[0] for _ in range(3))
        imp_nb = min(run_process("import numba; print(0)")[0] for _ in range(3))
        imp_lcs = min(run_process("import libcachesim; print(0)")[0] for _ in range(3))
        print(f"fixed costs: python {base:.2f} s, +numpy {imp_np:.2f} s, +numba {imp_nb:.2f} s; libcachesim import {imp_lcs:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
