"""A timeline: instructions on in-order queues, scheduled as they are issued (a list scheduler).

Machine-free. A target (:mod:`loopsim.targets.neuron.timeline`) turns a kernel into instructions in
program order and adds each here with its queue, its duration in seconds and the times it must
wait for (its producers' ends, plus any latency; the readers of a buffer it overwrites; a resource
freed by another instruction). Every wait points at an earlier instruction, so one pass in program
order schedules them all:

    start = max(ready, the queue's last end)        (each queue runs its instructions in order)
    end   = start + duration

A *pipe* is a bandwidth several queues share (the DMA engines of a core): an instruction that
names one moves its work in the pipe's free stretches from its ready time on, as many as it needs
(later instructions fill earlier gaps: the queues are independent, the bandwidth is not, and it
never idles while a transfer is ready); it ends when its duration is used up.

Each instruction keeps the wait that bound its start (``pred``: the instruction it waited for, or
the previous one on its queue), so the critical path is read back from the last to finish.

Units: seconds. The makespan is the time the last instruction ends (the first may start after 0:
a fixed latency before it is part of the time).
"""

from __future__ import annotations

import bisect
from collections import Counter
import math
from dataclasses import dataclass

#: why an instruction started when it did
DEP, QUEUE, PIPE, FREE = 0, 1, 2, 3


class Scheduler:
    """Instructions added in program order, their times computed as they are added (the timeline's
    compiled walk, :mod:`loopsim.targets.neuron._walk_kernel`, schedules by the same rules and
    fills a Scheduler with its results).

    A wait is ``(by, lag)``: it may not start before ``by``'s end plus ``lag`` (``by`` -1: at
    ``lag``), or a :meth:`slot_wait` (the last of several readers). PSUM-like *bank pools*: an
    instruction with ``need`` takes that many of its pool's free banks (those freed earliest,
    every bank when too few are free) and waits until they are freed; an instruction with
    ``release`` = the index of the one that took them frees them at its end."""

    __slots__ = ("queues", "kinds", "queue", "kind", "start", "end", "pred", "why", "lag",
                 "_qfree", "_qlast", "_pipes", "label", "_pools", "_groups", "shared",
                 "banks", "arrays")

    def __init__(self, banks: int = 0) -> None:
        self.queues: list[str] = []  # queue names, by id
        self.kinds: list[str] = []  # the engine kind of each queue ("dma", "tensor", "vector", ...)
        self.queue: list[int] = []
        self.kind: list[str] = []
        self.start: list[float] = []
        self.end: list[float] = []
        self.pred: list[int] = []  # the instruction whose end (plus lag) set the start, -1 none
        self.why: list[int] = []
        self.lag: list[float] = []  # the latency added after pred's end (fixed cost, fill)
        self.label: list[int] = []  # caller's tag (statement index)
        self._qfree: list[float] = []
        self._qlast: list[int] = []
        self._pipes: dict[str, tuple[list[float], list[float], list[int]]] = {}
        self._pools: dict[int, tuple[list, list]] = {}  # pool -> (bank -> (free from, by), held)
        self._groups: dict[int, list[int]] = {}  # instruction that took banks -> the banks
        self.shared = False  # an instruction needed more banks than were free (they were shared)
        self.banks = banks  # banks in each pool
        # numpy copies of queue, start, end, pred, why, lag where a compiled walk filled the lists
        # (the figures read them vectorised: union_of, idle_of)
        self.arrays: dict | None = None

    def queue_id(self, name: str, kind: str) -> int:
        """The id of queue ``name`` (created on first use) running instructions of ``kind``."""
        try:
            return self.queues.index(name)
        except ValueError:
            self.queues.append(name)
            self.kinds.append(kind)
            self._qfree.append(0.0)
            self._qlast.append(-1)
            return len(self.queues) - 1

    def __len__(self) -> int:
        return len(self.queue)

    def slot_wait(self, readers: list[int], lag: float = 0.0) -> tuple[int, float]:
        """The wait for the last of ``readers`` to end (the first of them to end that late), plus
        ``lag``; a time of 0 when none ends after 0."""
        end = self.end
        t, h = 0.0, -1
        for r in readers:
            if end[r] > t:
                t, h = end[r], r
        return (h, lag)

    def add(self, q: int, duration: float, waits=(), pipe: str | None = None, label: int = -1,
            need: int = 0, pool: int = 0, release: int = -1) -> int:
        """Schedule one instruction on queue ``q`` lasting ``duration`` s after its ``waits`` (see
        the class); ``need`` banks of ``pool``; ``release``: free the banks instruction
        ``release`` took when this one ends. Returns its index."""
        i = len(self.queue)
        self.queue.append(q)
        self.kind.append(self.kinds[q])
        self.label.append(label)
        end = self.end
        ready, by, why, lag = 0.0, -1, FREE, 0.0
        for b, lg in waits:
            t = (end[b] if b >= 0 else 0.0) + lg
            if t > ready:
                ready, by, why, lag = t, b, DEP, lg
        if need:
            free_at, held = self._pools.get(pool) or self._pools.setdefault(
                pool, ([(0.0, -1)] * self.banks, [False] * self.banks))
            free = [b for b in range(self.banks) if not held[b]]
            if len(free) < need:
                self.shared = True
                free = list(range(self.banks))
            free.sort(key=lambda b: free_at[b][0])
            banks = self._groups[i] = free[:need]
            for b in banks:
                t, bb = free_at[b]
                if t > ready:
                    ready, by, why, lag = t, bb, DEP, 0.0
                held[b] = True
        qf = self._qfree[q]
        if qf > ready:
            ready, by, why, lag = qf, self._qlast[q], QUEUE, 0.0
        if pipe is not None and duration > 0:
            pieces, owner = self._fit(pipe, ready, duration)
            start, end_ = pieces[0][0], pieces[-1][1]
            if start > ready:
                by, why, lag = owner, PIPE, 0.0
            for a, b in pieces:
                self._occupy(pipe, a, b, i)
        else:
            start, end_ = ready, ready + duration
        self.start.append(start)
        end.append(end_)
        self.pred.append(by)
        self.why.append(why)
        self.lag.append(lag)
        self._qfree[q] = end_
        self._qlast[q] = i
        if release >= 0:
            free_at, held = self._pools[pool]
            for b in self._groups.pop(release):
                free_at[b] = (end_, i)
                held[b] = False
        return i

    # -- pipes: merged busy stretches, sorted ------------------------------------------------
    def _fit(self, pipe: str, t: float, d: float) -> tuple[list[tuple[float, float]], int]:
        """The free stretches of the pipe from ``t`` on that together last ``d`` seconds (the
        transfer moves its bytes whenever the engines are free: the pipe never idles while a
        transfer is ready), and the instruction whose busy stretch delayed its start (-1 none)."""
        starts, ends, owners = self._pipes.setdefault(pipe, ([], [], []))
        j = bisect.bisect_right(starts, t) - 1
        owner = -1
        if j >= 0 and ends[j] > t:
            t, owner = ends[j], owners[j]
        j += 1
        if j == len(starts):  # nothing busy after t: one stretch (the loop below, taken once)
            return [(t, t + d)], owner
        pieces, need, eps = [], d, d * 1e-12
        while need > eps:
            nxt = starts[j] if j < len(starts) else math.inf
            if nxt > t:
                take = min(nxt - t, need)
                pieces.append((t, t + take))
                need -= take
                t += take
            if need > eps:
                if not pieces:
                    owner = owners[j]
                t = max(t, ends[j])
                j += 1
        return pieces, owner

    def _occupy(self, pipe: str, s: float, e: float, i: int) -> None:
        starts, ends, owners = self._pipes[pipe]
        j = bisect.bisect_right(starts, s)
        # merge with the stretch before (touching) and the one after (touching)
        if j > 0 and abs(ends[j - 1] - s) <= 1e-15 * max(1.0, s):
            ends[j - 1] = e
            owners[j - 1] = i
            if j < len(starts) and abs(starts[j] - e) <= 1e-15 * max(1.0, e):
                ends[j - 1], owners[j - 1] = ends[j], owners[j]
                del starts[j], ends[j], owners[j]
            return
        if j < len(starts) and abs(starts[j] - e) <= 1e-15 * max(1.0, e):
            starts[j] = s
            return
        starts.insert(j, s)
        ends.insert(j, e)
        owners.insert(j, i)

    def pipe_busy(self, pipe: str) -> list[tuple[float, float]]:
        """The pipe's busy stretches (merged), in time order."""
        starts, ends, _ = self._pipes.get(pipe, ([], [], []))
        return list(zip(starts, ends))

    # -- reading it back ------------------------------------------------------------------------
    @property
    def makespan(self) -> float:
        return max(self.end, default=0.0)

    def critical_path(self) -> list[int]:
        """Instructions from the first to the last to finish, each the one its successor waited for."""
        if not self.end:
            return []
        a = self.arrays
        i = int(a["end"].argmax()) if a is not None else self.end.index(max(self.end))  # the first to end last
        out = []
        seen = set()
        while i >= 0 and i not in seen:
            seen.add(i)
            out.append(i)
            i = self.pred[i]
        return out[::-1]

    def busy(self) -> dict[str, float]:
        """Seconds each engine kind is busy: the union of its queues' instructions (a kind whose
        queues share a pipe is busy while the pipe is)."""
        out: dict[str, list[tuple[float, float]]] = {}
        for s, e, k in zip(self.start, self.end, self.kind):
            if e > s:
                out.setdefault(k, []).append((s, e))
        return {k: union_length(v) for k, v in out.items()}

    def counts(self) -> dict[str, int]:
        return dict(Counter(self.kind))  # kinds in order of first use


def union_length(intervals) -> float:
    """Total length of the union of (start, end) intervals, seconds."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def union_of(start, end) -> float:
    """:func:`union_length` of the intervals (start[i], end[i]) (numpy arrays): the same merged
    stretches summed in the same order (a sequential cumulative sum), so the same float."""
    import numpy as np

    if not len(start):
        return 0.0
    o = np.lexsort((end, start))
    _, first, reach = _stretches(start[o], end[o])
    return float(np.cumsum(reach - start[o][first])[-1])


def _stretches(s, e):
    """For intervals sorted by (start, end): the running latest end, the index of each merged
    stretch's first interval and each stretch's end."""
    import numpy as np

    run = np.maximum.accumulate(e)
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > run[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return run, first, run[last]


def idle_of(start, end, idx, makespan: float):
    """:func:`idle_causes` of instructions ``idx`` (numpy arrays) before the causes: (first start,
    busy seconds, seconds after its last end, the instructions that start an idle stretch, the
    stretches' lengths), in the order idle_causes visits them."""
    import numpy as np

    if not len(idx):
        return 0.0, 0.0, makespan, idx[:0], np.zeros(0)
    o = idx[np.lexsort((idx, end[idx], start[idx]))]  # by (start, end), ties in program order
    s = start[o]
    run, first, reach = _stretches(s, end[o])
    busy = float(np.cumsum(reach - s[first])[-1])
    gap_at = first[1:]
    return float(s[0]), busy, makespan - float(run[-1]), o[gap_at], s[gap_at] - run[gap_at - 1]


def idle_causes(sched: Scheduler, kind: str, cause_of) -> tuple[float, float, float, dict[str, float]]:
    """How the time of the instructions of ``kind`` (the reference engine) splits: (first start,
    busy seconds, seconds after its last end, idle seconds inside by cause). An idle stretch
    belongs to the instruction that starts it: ``cause_of(i, gap) -> ((cause, seconds), ...)``."""
    start, end = sched.start, sched.end
    idx = [i for i, k in enumerate(sched.kind) if k == kind and end[i] > start[i]]
    if not idx:
        return 0.0, 0.0, sched.makespan, {}
    idx.sort(key=list(zip(start, end)).__getitem__)  # by (start, end), ties in program order
    first = sched.start[idx[0]]
    causes: dict[str, float] = {}
    busy, cur_s, cur_e = 0.0, first, sched.end[idx[0]]
    for i in idx[1:]:
        s, e = sched.start[i], sched.end[i]
        if s > cur_e:
            busy += cur_e - cur_s
            for c, t in cause_of(i, s - cur_e):
                causes[c] = causes.get(c, 0.0) + t
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    busy += cur_e - cur_s
    return first, busy, sched.makespan - cur_e, causes


# ---------------------------------------------------------------------------------------------
# extrapolation from a few runs of a truncated nest


def multilinear(samples: dict[tuple[int, ...], dict[str, float]], base: tuple[int, ...],
                target: tuple[int, ...]) -> dict[str, float]:
    """Values at ``target`` from values at the corners ``base + {0,1}^j`` of a box (the keys of
    ``samples``), each value affine in every coordinate with the others fixed (a loop in its
    steady state: one more iteration adds one period). The coefficient of the product of the
    coordinates in S is the alternating sum over the corners inside S (a finite difference)."""
    j = len(base)
    keys = set().union(*(v.keys() for v in samples.values()))
    out = {k: 0.0 for k in keys}
    for smask in range(1 << j):
        S = [i for i in range(j) if smask >> i & 1]
        w = math.prod(target[i] - base[i] for i in S)
        if w == 0:
            continue
        for umask in range(1 << j):
            if umask & ~smask:
                continue
            sign = -1.0 if (len(S) - bin(umask).count("1")) % 2 else 1.0
            corner = tuple(base[i] + (umask >> i & 1) for i in range(j))
            vals = samples[corner]
            for k in keys:
                out[k] += sign * w * vals.get(k, 0.0)
    return out


@dataclass(frozen=True, slots=True)
class Interval:
    """One instruction as drawn: queue row, start and end (s), on the critical path or not."""

    row: str
    kind: str
    start: float
    end: float
    critical: bool
