"""Q as a function of SBUF capacity, for the lru and opt policies (the capacity curve).

Capacities run from the smallest that holds one instruction's working tiles (below it the kernel
cannot run: :func:`loopsim.count.counts.working_set`, or the largest block a DMA moves) up to the first
sampled capacity at which both policies reach the compulsory Q (every input read once, every output
written once), sampled geometrically, with the sheet's own capacity always among them. Capacities
are whole-SBUF bytes (per-partition cost x partitions on partitioned sheets).

LRU's points come from one stack-distance pass (:func:`loopsim.sim.stack.lru_curve`); OPT's
from one replay per capacity (:func:`sweep_policy`, which also serves to check the LRU pass). The
LRU pass and the OPT replays are independent tasks run on ``jobs`` local processes (or a Dask
cluster, :mod:`loopsim.analyses.parallel`); each point is computed by the same code wherever it runs, so the
curve is the same on one core or many.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from loopsim.count.counts import Counts, capacity_units, count, working_set
from loopsim.ir.kernel import Kernel
from loopsim.sim import POLICIES  # the capacity policies: lru, opt


@dataclass(frozen=True, slots=True)
class CapacityRow:
    """One (capacity, policy) point: capacity in bytes, Q in bytes, r per input tensor."""

    capacity_bytes: int
    policy: str
    Q: int
    r: tuple[tuple[str, float], ...]
    compulsory_Q: int
    lower_bound_Q: int | None = None  # loopsim.count.bound, with S = this capacity + PSUM; None if not a matmul

    @property
    def Q_over_compulsory(self) -> float:
        return self.Q / self.compulsory_Q if self.compulsory_Q else float("nan")

    def as_dict(self) -> dict:
        return {"capacity_bytes": self.capacity_bytes, "policy": self.policy, "Q": self.Q,
                "r": dict(self.r), "Q_over_compulsory": self.Q_over_compulsory,
                "lower_bound_Q": self.lower_bound_Q,
                "Q_over_bound": self.Q / self.lower_bound_Q if self.lower_bound_Q else None}


@dataclass(frozen=True, slots=True)
class CapacityCurve:
    kernel: str
    hardware: str
    lanes: int | None  # the target's lanes (SBUF partitions); None: flat
    compulsory_Q: int
    min_capacity_bytes: int
    footprint_bytes: int
    sheet_capacity_bytes: int
    policies: tuple[str, ...]
    inputs: tuple[str, ...]
    rows: tuple[CapacityRow, ...]

    def reaches_compulsory(self, policy: str) -> int | None:
        """Smallest sampled capacity (bytes) at which ``policy`` moves only the compulsory Q."""
        return next((r.capacity_bytes for r in self.rows
                     if r.policy == policy and r.Q <= r.compulsory_Q), None)

    def as_dict(self) -> dict:
        return {"kernel": self.kernel, "hardware": self.hardware, "partitions": self.lanes,
                "compulsory_Q": self.compulsory_Q, "min_capacity_bytes": self.min_capacity_bytes,
                "footprint_bytes": self.footprint_bytes,
                "sheet_capacity_bytes": self.sheet_capacity_bytes,
                "reaches_compulsory_bytes": {p: self.reaches_compulsory(p) for p in self.policies},
                "rows": [r.as_dict() for r in self.rows]}


def sweep_policy(kernel: Kernel, policy: str, capacities: list[int], target,
                 trace, tick=None) -> list[Counts]:
    """Counts at each capacity (cost units: bytes per partition, or bytes), by one replay each;
    ``tick()`` after each (a progress bar's)."""
    out = []
    for c in capacities:
        out.append(count(kernel, policy=policy, capacity=c, target=target, trace=trace))
        if tick is not None:
            tick()
    return out


def points(kernel: Kernel, policy: str, capacities: list[int], target,
           trace, tick=None) -> list[tuple[int, dict[str, int]]]:
    """(Q bytes, read bytes per tensor) at each capacity (cost units). LRU from one
    stack-distance pass (:func:`loopsim.sim.stack.lru_curve`), other policies by replay; a nest
    split across cores ([lnc] split) by one replay per core, each with its own SBUF."""
    from loopsim.count.lnc import count_split, split_loop

    if split_loop(kernel) is not None:
        out = []
        for cap in capacities:
            c = count_split(kernel, policy=policy, capacity=cap, target=target)
            out.append((c.Q, {t.name: t.read_bytes for t in c.tensors}))
            if tick is not None:
                tick()
        return out
    if policy == "lru":
        from loopsim.sim.stack import lru_curve

        cv = lru_curve(trace.obj, trace.write, trace.object_cost(target), capacities,
                       size=trace.obj_bytes, group=trace.obj_tensor)
        for _ in capacities if tick is not None else ():
            tick()
        names = trace.tensor_names
        return [(int(cv.Q[j]),
                 {n: int(cv.fetch_bytes[i, j]) if i < cv.fetch_bytes.shape[0] else 0
                  for i, n in enumerate(names)}) for j in range(len(capacities))]
    return [(c.Q, {t.name: t.read_bytes for t in c.tensors})
            for c in sweep_policy(kernel, policy, capacities, target, trace, tick)]


def _samples(lo: int, hi: int, n: int, extra: int) -> list[int]:
    """``n`` geometrically spaced integers from lo to hi inclusive, plus ``extra`` if in range."""
    if hi <= lo:
        return sorted({lo, extra} if extra >= lo else {lo})
    out = {lo, hi}
    for i in range(1, n - 1):
        out.add(round(lo * (hi / lo) ** (i / (n - 1))))
    if lo <= extra:
        out.add(extra)
    return sorted(out)


def _tasks(kernel: Kernel, policies, caps: list[int]) -> list[tuple[str, tuple[int, ...]]]:
    """The independent pieces of work: (policy, capacities) -- the LRU stack-distance pass takes
    every capacity at once (last: the longest), every other point (and every point of a split
    nest) is one replay."""
    from loopsim.count.lnc import split_loop

    split = split_loop(kernel) is not None
    stack = [(p, tuple(caps)) for p in policies if p == "lru" and not split]
    return [(p, (c,)) for p in policies if (p, tuple(caps)) not in stack for c in caps] + stack


#: the trace the last task used, (kernel, trace): a worker replays many capacities of one kernel
_TRACE: list = []


def _trace_of(kernel: Kernel):
    """The kernel's trace, built once per process (a forked worker inherits the parent's)."""
    from loopsim.sim import trace as trace_mod

    if not _TRACE or _TRACE[0][0] != kernel:
        _TRACE[:] = [(kernel, trace_mod.build(kernel))]
    return _TRACE[0][1]


def _task_points(task: tuple[str, tuple[int, ...]], kernel: Kernel, target
                 ) -> list[tuple[int, dict[str, int]]]:
    """:func:`points` of one task (run by a worker)."""
    policy, caps = task
    return points(kernel, policy, list(caps), target, _trace_of(kernel))


class _Ticks:
    """A progress object for :meth:`loopsim.analyses.parallel.Pool.map` over a ``tick(n)`` callback."""

    def __init__(self, tick):
        self.tick = tick

    def update(self, n: int = 1, note=None) -> None:
        self.tick(n)


def curve(kernel: Kernel, hw, *, samples: int = 16, policies=POLICIES,
          sbuf_bytes: int | None = None, progress=None, jobs: int | None = 1,
          scheduler: str | None = None) -> CapacityCurve:
    """The capacity curve of ``kernel`` on ``hw`` (see the module docstring). ``progress``: called
    with the number of points once they are known, returns ``tick(n)`` for points done. The
    points run on ``jobs`` local processes (None: every core once the curve is long enough to
    gain from them, :func:`loopsim.analyses.parallel.here_s`) or the Dask cluster at ``scheduler``; the
    curve is the same whatever runs them."""
    from loopsim.count.bound import lower_bound
    from loopsim.analyses.parallel import Pool, here_s

    tr = _trace_of(kernel)  # built here once; workers forked from this process inherit it
    cost = tr.object_cost(hw)
    lo = max(working_set(kernel, hw), int(cost.max()))
    footprint = int(cost.sum())
    sheet = capacity_units(hw, sbuf_bytes)
    caps = _samples(lo, max(lo, footprint), samples, sheet)
    per = hw.lanes or 1
    inputs = tuple(t.name for t in kernel.inputs)
    tbytes = {t.name: t.bytes for t in kernel.tensors}
    tick = progress(len(caps) * len(policies)) if progress is not None else None
    tasks = _tasks(kernel, policies, caps)
    try:
        with Pool(jobs, scheduler) as pool:
            done = pool.map(partial(_task_points, kernel=kernel, target=hw), tasks,
                            progress=_Ticks(tick) if tick else None, weight=lambda t: len(t[1]),
                            here_s=here_s(jobs))
    finally:
        _TRACE.clear()  # do not keep the trace alive after the curve
    got = {(p, c): pt for (p, cs), pts in zip(tasks, done) for c, pt in zip(cs, pts)}
    rows = []
    for policy in policies:
        for cap in caps:
            q, reads = got[policy, cap]
            lb = lower_bound(kernel, hw, cap * per)
            rows.append(CapacityRow(cap * per, policy, q,
                                    tuple((n, reads[n] / tbytes[n]) for n in inputs),
                                    kernel.compulsory_bytes, lb.Q if lb else None))
    # keep the curve up to the first capacity where every policy is at compulsory Q (and the sheet's)
    done = max((next((r.capacity_bytes for r in rows if r.policy == p and r.Q <= r.compulsory_Q),
                     caps[-1] * per) for p in policies), default=caps[-1] * per)
    limit = max(done, sheet * per if sheet <= footprint else done)
    rows = [r for r in rows if r.capacity_bytes <= limit]
    return CapacityCurve(kernel.name, hw.name, hw.lanes, kernel.compulsory_bytes, lo * per,
                         footprint * per, sheet * per, tuple(policies), inputs, tuple(rows))
