"""Search speed on the 4096^3 bf16 matmul (matmul_blocked, trn2-core, default space).

Prints: the machine, the whole search on one process and on every core (seconds, candidates
evaluated per second), and where one process spends its time (planning the space, binding
parameters, building the closed-form models, closed-form Q per structure, full verdicts from the
closed forms, and the exact counts that confirm the reported tilings). Run:

    python benchmarks/bench_search.py [--shape 4096] [--repeat 3] [--before REV]

``--before REV`` first runs the one-process search under REV's loopsim and this tree's, each in a
fresh process, alternating, and prints both medians (CPU seconds, candidates per CPU second): the
ratio holds on a shared machine where the absolute figures drift.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _before import ROOT, run_json, tree  # noqa: E402

from loopsim.analyses.parallel import Pool, default_jobs
from loopsim.analyses.search import engine, space
from loopsim.analyses.search import evaluate as ev


def machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return f"{model or platform.processor()}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}"


def timed(fn, repeat: int):
    """(median wall seconds, median CPU seconds of this process, the last result)."""
    ts, cs, out = [], [], None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    return statistics.median(ts), statistics.median(cs), out


def per_call(fn, items, repeat: int = 3) -> float:
    """CPU seconds per call (best of ``repeat``; CPU time, so other jobs on the machine do not
    count)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for x in items:
            fn(x)
        best = min(best, (time.process_time() - t) / len(items))
    return best


# one search on one process, in a fresh interpreter: CPU seconds and candidates evaluated
ONE = """
import json, time
from loopsim.analyses.parallel import Pool
from loopsim.analyses.search import engine
p = engine.Problem("matmul_blocked", (("M", {n}), ("N", {n}), ("K", {n})), "trn2-core")
engine.context(p)
t = time.process_time()
with Pool(1) as pool:
    out = engine.search(p, pool)
print(json.dumps({{"cpu": time.process_time() - t, "evaluated": out.evaluated}}))
"""


def before_after(rev: str, n: int, repeat: int) -> None:
    old = tree(rev)
    runs = {"before": [], "after": []}
    for _ in range(repeat):
        for name, root in (("before", old), ("after", ROOT)):
            runs[name].append(run_json(ONE.format(n=n), root))
    print(f"  one process, fresh interpreter, median of {repeat} alternating runs; load average "
          f"{os.getloadavg()[0]:.1f}; before = {rev}, after = working tree")
    med = {}
    for name, rs in runs.items():
        cpu = statistics.median(r["cpu"] for r in rs)
        med[name] = cpu
        print(f"    {name:6s} {cpu:6.2f} s CPU, {rs[0]['evaluated']:,} candidates -> "
              f"{rs[0]['evaluated'] / cpu:,.0f} candidates/s per core")
    print(f"    after/before CPU {med['after'] / med['before']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", help="a git revision to compare with, in the same run")
    a = ap.parse_args()
    n = a.shape
    if a.before:
        print(f"machine: {machine()}")
        before_after(a.before, n, a.repeat)
        return
    p = engine.Problem("matmul_blocked", (("M", n), ("N", n), ("K", n)), "trn2-core")
    print(f"machine: {machine()}")
    print(f"search matmul_blocked {n}^3 bf16 on trn2-core, default space, top 10")
    engine.context(p)  # read the spec and the sheet once (as the command does before searching)
    for jobs in sorted({1, default_jobs()}):
        def run():
            with Pool(jobs) as pool:
                return engine.search(p, pool)
        secs, cpu, out = timed(run, a.repeat)
        cpu_note = f", {cpu:.2f} s CPU of this process ({out.evaluated / cpu:,.0f}/s per core)" \
            if jobs == 1 else ""
        print(f"  jobs={jobs}: {secs:.2f} s wall (median of {a.repeat}, pool start included)"
              f"{cpu_note}; {out.evaluated:,} candidates evaluated ({out.verdicts:,} full verdicts, "
              f"{out.units:,} bindings) of {out.space_size:,} -> {out.evaluated / secs:,.0f} "
              f"candidates/s wall; best T {out.top[0].verdict.T:.6g} s, Q {out.top[0].verdict.Q:,}")
    # where one process spends its time
    ctx = engine.context(p)
    t = time.process_time()
    groups, blocks = engine.plan(ctx)
    t_plan = time.process_time() - t
    confirmed, confirm = [0], engine.confirm
    engine.confirm = lambda ctx, c: confirmed.__setitem__(0, confirmed[0] + 1) or confirm(ctx, c)
    with Pool(1) as pool:
        out = engine.search(p, pool)
    engine.confirm = confirm
    t = time.process_time()
    units = list(itertools.islice(engine.units(ctx, groups, blocks), out.units))
    t_units = (time.process_time() - t) / len(units)
    sample = units[: min(len(units), 24)]
    kernels = [ctx.kernel(u.values) for u in sample]
    t_bind = per_call(lambda u: ctx.kernel(u.values), sample)
    models = [ev.chain_model(ctx.chain, k, ctx.hw) for k in kernels]
    t_model = per_call(lambda k: ev.chain_model(ctx.chain, k, ctx.hw), kernels[:6], 1)
    m = models[0]
    t_q = per_call(lambda s: ev.chain_q(m, s), ctx.structs)
    t_v = per_call(lambda s: ev.model_verdict(m, s), ctx.structs[:300])
    c = out.top[0]
    mv = ev.model_verdict(ev.chain_model(ctx.chain, ctx.kernel(c.values), ctx.hw),
                          ctx.structs[c.structure])  # the closed-form verdict confirm checks
    t_exact = per_call(lambda c: engine.confirm(ctx, engine.Cand(c.unit, c.structure, c.values,
                                                                  mv, c.shape)), [c], 3)
    rows = [("plan: tile-size groups in bound order", t_plan, 1),
            ("enumerate and screen bindings (per binding)", t_units, out.units),
            ("bind parameters (per binding evaluated)", t_bind, out.units),
            ("closed-form model (ceilings once per binding)", t_model, out.units),
            ("closed-form Q (per structure)", t_q, out.evaluated),
            ("full verdict from the closed forms", t_v, out.verdicts),
            ("exact count and timeline confirming a tiling", t_exact, confirmed[0])]
    total = sum(t * k for _, t, k in rows)
    print(f"  where one process spends its time (CPU per call x calls; sum {total:.2f} s):")
    for name, t, k in rows:
        print(f"    {name:<50} {t * 1e6:>10.1f} us x {k:>8,} = {t * k:6.3f} s")


if __name__ == "__main__":
    main()
