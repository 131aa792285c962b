"""Batch-mode throughput: ``loopsim evaluate --batch`` as an agent loop drives it.

Prints: the machine; the first request's latency in a fresh process (interpreter start, imports,
sheet and spec reads included); warm requests per second on one core, distinct (every request
analysed) and repeated (answered from the session's earlier answers); the whole-process rate of
a 200-line batch. The requests are the bundled specs at shapes an autotuner sweeps. Run:

    python benchmarks/bench_batch.py [--n 200]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time


#: the installed command beside this interpreter (what an agent runs)
LOOPSIM = os.path.join(os.path.dirname(sys.executable), "loopsim")


def machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return f"{model or platform.processor()}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}"


def requests() -> list[dict]:
    out = []
    for M, N, K in itertools.product((512, 1024, 2048), repeat=3):
        out.append({"spec": "matmul", "hardware": "trn2-core", "set": {"M": M, "N": N, "K": K}})
    for B, D in itertools.product((1, 16, 64, 128, 256, 512, 1024, 2048), (2048, 4096)):
        out.append({"spec": "projection", "hardware": "trn2-core", "set": {"B": B, "D": D}})
    for B in (128, 512, 2048):
        out.append({"spec": "mlp_fused", "hardware": "trn2-core", "set": {"B": B}})
        out.append({"spec": "swiglu_mlp", "hardware": "trn2-core", "set": {"B": B}})
    for L in (512, 1024, 2048):
        out.append({"spec": "attention_fused", "hardware": "trn2-core", "set": {"L": L}})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    a = ap.parse_args()
    from loopsim.analyses import batch

    reqs = requests()
    print(f"machine: {machine()}")
    print(f"{len(reqs)} distinct requests (matmul, projection, mlp_fused, swiglu_mlp, "
          "attention_fused on trn2-core)")
    with tempfile.TemporaryDirectory() as d:
        one = os.path.join(d, "one.jsonl")
        with open(one, "w") as f:
            f.write(json.dumps(reqs[0]) + "\n")
        t = time.perf_counter()
        subprocess.run([LOOPSIM, "evaluate", "--batch", one], check=True,
                       capture_output=True)
        print(f"  first request in a fresh process: {time.perf_counter() - t:.3f} s "
              "(interpreter start and imports included)")
        s = batch.Session()
        batch.evaluate(s, {"spec": "copy", "hardware": "trn2-core"})  # warm: imports, numba
        t, c = time.perf_counter(), time.process_time()
        for r in reqs:
            batch.evaluate(s, r)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"  warm, distinct: {len(reqs) / wall:,.0f} requests/s wall, {len(reqs) / cpu:,.0f}/s "
              f"per core CPU ({wall / len(reqs) * 1e3:.2f} ms each)")
        t = time.perf_counter()
        for r in reqs:
            batch.evaluate(s, r)
        wall = time.perf_counter() - t
        print(f"  warm, repeated: {len(reqs) / wall:,.0f} requests/s (answered from the session)")
        many = os.path.join(d, "many.jsonl")
        with open(many, "w") as f:
            for i in range(a.n):
                f.write(json.dumps({**reqs[i % len(reqs)], "id": i}) + "\n")
        t = time.perf_counter()
        subprocess.run([LOOPSIM, "evaluate", "--batch", many], check=True,
                       capture_output=True)
        wall = time.perf_counter() - t
        print(f"  whole process, {a.n} lines: {wall:.2f} s = {a.n / wall:,.0f} requests/s")


if __name__ == "__main__":
    main()
