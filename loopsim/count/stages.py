"""Counting one kernel of a program (a schedule of ops): on its own, from an empty SBUF, with the
live ranges of the intermediates its ops produce on chip added to its as-written residency.

Units: bytes, and fast-memory cost units as in :func:`loopsim.count.counts.count`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from loopsim.base.errors import HardwareError
from loopsim.count.counts import Counts, count, live_peak
from loopsim.ir.kernel import PRODUCE


def produced_peak(trace, target) -> int:
    """Peak SBUF cost of blocks an op produced, each live from its first event to its last
    (cost units as in :func:`loopsim.count.counts.count`)."""
    if trace.n == 0:
        return 0
    cost = trace.object_cost(target)
    made = np.unique(trace.obj[trace.kind == PRODUCE])
    if made.size == 0:
        return 0
    obj = trace.obj
    n = obj.size
    _, first = np.unique(obj, return_index=True)
    uniq_rev, last_rev = np.unique(obj[::-1], return_index=True)
    first_of = dict(zip(np.unique(obj).tolist(), first.tolist()))
    last_of = dict(zip(uniq_rev.tolist(), (n - 1 - last_rev).tolist()))
    delta = np.zeros(n + 1, dtype=np.int64)
    for o in made.tolist():
        delta[first_of[o]] += cost[o]
        delta[last_of[o] + 1] -= cost[o]
    return int(np.cumsum(delta).max())


def check_scope(hw, *, allow: bool = False) -> None:
    """Every kernel of a program runs on one physical core: refuse a sheet of several, unless
    ``allow`` (a program takes no --lnc, so the advice is the sheet or the flag)."""
    h = hw.physical_cores
    if h != 1 and not allow:
        raise HardwareError(
            f"--hardware {hw.name}: the sheet covers {h} physical cores ({hw.scope}) but each kernel "
            f"of a spec with several ops runs on one, so its roofs would be {h}x too high: use a "
            "1-core sheet, or pass --allow-scope-mismatch")


def count_stage(stage, hw, *, policy: str, capacity: int) -> Counts:
    """One kernel of a schedule, on its own, from an empty SBUF. As written, the residency adds
    the produced intermediates' live ranges to the nest's buffers (an upper bound)."""
    from loopsim.sim import trace as trace_mod
    from loopsim.count.readback import produced_peak as produced_peak_of_nest

    k = stage.kernel
    if policy == "as-written":  # from the statements (the trace only where they decline)
        c = count(k, policy=policy, capacity=capacity, target=hw)
        extra = produced_peak_of_nest(k, hw)
        if extra is None:
            extra = produced_peak(trace_mod.build(k), hw)
    else:
        c = count(k, policy=policy, capacity=capacity, target=hw,
                  trace=trace_mod.build(k))
    if policy == "as-written":
        if extra:
            r = c.residency
            # the nest's loaded and staged buffers, plus every op output over its live range:
            # each peak at its own time, so their sum bounds the true peak from above
            c = replace(c, residency=replace(r, peak_cost=live_peak(k, hw, op_outputs=False)
                                             + extra,
                                             what="live buffers as written + op outputs from "
                                                  "produce to last use"))
    return c
