"""The engine timeline's figures on every bundled spec and on seeded random variants of them, kept
in ``tests/data/timeline_golden.json`` so that a change to how the timeline runs (not to what it
models) is shown to give the same schedule to 1e-12 (tests/test_timeline.py).

The file was written by the timeline of main at 8610324 (the Python walker before the speed-ups of
the branch timeline-fast; unchanged to 43a7ca7, whose specs it ran); every figure is the run's
own: makespan, serial sum, busy time per engine and per queue, instruction counts, the gap's
causes, the critical path (its queues and statements, in order), exactness, the number of runs,
the loops cut and the notes. Rewrite it only for a change that means to change the timeline's
answers, and say so in the commit:

    python -m tests.timeline_golden --write

Random variants: each bundled single-nest spec with its sizes drawn (multiples of its tiles and
ragged ones, so edge tiles and skipped executions occur), one to three buffers, from a fixed seed.
"""

from __future__ import annotations

import argparse
import json
import random
import zlib
from pathlib import Path

FILE = Path(__file__).parent / "data" / "timeline_golden.json"
SHEETS = ("trn2-core", "trn1-core")
#: instructions per run: the default budget (cut runs on the larger specs) and a small one (more cuts)
BUDGETS = (24_000, 3_000)
SEED = 20261206
RANDOM = 24  # random variants


def cases() -> list[dict]:
    """(name, sets, buffers, lnc, sheet, budget) of every compared run, as dicts."""
    from loopsim.frontends import spec
    from loopsim.model import pipeline

    out = []
    names = spec.bundled_names()
    for name in names:
        for sheet in SHEETS:
            for budget in BUDGETS:
                out.append(dict(name=name, sets={}, buffers=0, lnc=0, sheet=sheet, budget=budget))
        out.append(dict(name=name, sets={}, buffers=2, lnc=0, sheet="trn2-core", budget=BUDGETS[0]))
        out.append(dict(name=name, sets={}, buffers=0, lnc=2, sheet="trn2-core", budget=BUDGETS[0]))
    rng = random.Random(SEED)
    singles = [n for n in names if "body" in pipeline.read(n).data.get("nest", {})]
    for _ in range(RANDOM):
        name = rng.choice(singles)
        params = pipeline.read(name).params
        tiles = {k: v for k, v in params.items() if k.startswith("T")}
        sets = {}
        for k, v in params.items():
            if k in tiles:
                continue
            unit = max(tiles.values(), default=128)
            sets[k] = rng.choice([unit * rng.randint(1, 6), unit * rng.randint(1, 4) + rng.randint(1, unit - 1),
                                  v])
        out.append(dict(name=name, sets=sets, buffers=rng.randint(1, 3), lnc=0,
                        sheet=rng.choice(SHEETS), budget=rng.choice(BUDGETS)))
    return out


def kernels(case: dict) -> list:
    """The kernels of a case (one per stage); [] when the options do not apply to the spec."""
    from loopsim.base.errors import LoopsimError
    from loopsim.model import pipeline

    kw = {}
    if case["buffers"]:
        kw["buffers"] = (("*", case["buffers"]),)
    if case["lnc"]:
        kw["lnc_cores"] = case["lnc"]
    try:
        prog = pipeline.load(case["name"], case["sets"], **kw)
    except LoopsimError:
        return []
    return [st.kernel for st in prog.stages]


def figures(kernel, hw, budget: int, compiled: bool | None = None) -> dict:
    """What the timeline says of ``kernel``, with ``W_P`` = 1 us and ``Q_BW`` = 2 us (the gap's
    reference engine and its parts follow them), every figure as the run computed it."""
    from loopsim.targets import schedule as tl
    from loopsim.targets.neuron import timeline as ntl

    t = ntl.timeline(kernel, hw, dtype="bf16", W_P=1e-6, Q_BW=2e-6, Q=1000, budget=budget,
                     compiled=compiled)
    s = t.sched
    per_q: dict[str, list] = {}
    for q, a, b in zip(s.queue, s.start, s.end):
        per_q.setdefault(s.queues[q], []).append((a, b))
    return {"T": t.T, "serial": t.serial, "busy": dict(t.busy), "instructions": dict(t.instructions),
            "gap": dict(t.gap), "critical": t.critical, "exact": t.exact, "runs": t.runs,
            "simulated": t.simulated, "queue_busy": {k: tl.union_length(v) for k, v in per_q.items()},
            "critical_path": _path(s),
            "run_makespan": s.makespan, "notes": list(t.notes), "cut": [list(c) for c in t.cut]}


def _path(s) -> dict:
    """The critical path: its length, instructions per queue on it, and a CRC-32 of its
    (queue, statement) sequence in order (the whole path, without storing it)."""
    path = [(s.queues[s.queue[i]], s.label[i]) for i in s.critical_path()]
    per: dict[str, int] = {}
    for q, _ in path:
        per[q] = per.get(q, 0) + 1
    return {"length": len(path), "per_queue": per, "crc32": zlib.crc32(repr(path).encode())}


def snapshot() -> list:
    from loopsim.targets import hardware

    out = []
    for case in cases():
        hw = hardware.load(case["sheet"])
        for n, k in enumerate(kernels(case)):
            out.append({"case": case, "stage": n, "figures": figures(k, hw, case["budget"])})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {FILE.name}")
    a = ap.parse_args()
    snap = snapshot()
    if a.write:
        FILE.write_text(json.dumps(snap, indent=0, sort_keys=True) + "\n")
    print(f"{len(snap)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
