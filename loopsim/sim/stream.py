"""Replay a kernel's trace in chunks, generating each chunk as it is needed: memory bounded by
the chunk and the per-object state, whatever the trace's length.

LRU and as-written make one forward pass. OPT needs each request's next use, which lies in the
future: a first forward pass checkpoints the walker at every chunk start, a reverse pass over the
chunks records, per chunk, the first request of every object after it (one int64 per object per
chunk), and the forward replay then computes each chunk's next uses from that record. A kernel
with on-chip intermediates gets one more forward pass, for the last request of each of their
objects (where the replay frees them).

The counts equal those of one replay of the whole trace (tests compare them on random nests).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from loopsim.base.errors import TraceTooLarge
from loopsim.base.limits import check_work
from loopsim.ir.kernel import ACC, LOAD, STORE

#: requests per chunk (LRU, as-written): arrays of a few tens of MiB, reused
CHUNK = 1 << 22
#: bytes OPT may spend on its per-chunk next-use record; chunks grow to stay within it
OPT_RECORD_BYTES = 512 << 20
#: a trace this long gets a one-line note on stderr with the expected time, measured first
NOTE_ABOVE = 1 << 28
#: requests of the trace's start replayed to measure this machine's cost per request
SAMPLE = 1 << 20


@dataclass(frozen=True, slots=True)
class Streamed:
    """What a streamed replay counted: per object reads (fetches) and writes (write-backs or,
    as written, stores), the peak occupancy (None as written), requests, FLOPs, instructions."""

    reads: np.ndarray
    writes: np.ndarray
    peak_cost: int | None
    requests: int
    flops: int
    instructions: int


def seconds_per_request(nest, policy: str, cost: np.ndarray, capacity: int) -> float:
    """This machine's cost of one request slot of ``stream`` (its walks and replay passes), s,
    measured on the second :data:`SAMPLE` requests of ``nest`` (the first load the compiled
    kernels and touch the buffers' pages, which the long run pays once): as written one walk and a
    count; lru one walk and the replay; opt three walks, two next-use passes and the replay
    (:func:`stream`'s passes)."""
    import time

    from loopsim.sim.trace import Walker
    from loopsim.sim import State, _gen

    n = SAMPLE
    obj, kind = np.empty(n, nest.id_dtype), np.empty(n, np.int8)
    write, dead, miss = np.empty(n, np.bool_), np.zeros(n, np.bool_), np.empty(n, np.bool_)
    nu = np.empty(n, np.int64) if policy == "opt" else None
    nxt = np.full(nest.n_objects, nest.slots, np.int64) if policy == "opt" else None
    st = None if policy == "as-written" else (
        State("opt", cost, capacity, nest.slots) if policy == "opt" else State("lru", cost, capacity))
    w = Walker(nest)
    t = {}
    base = 0
    for rnd in (0, 1):  # round 0 warms up; round 1 is timed
        if nxt is not None:  # each round's next uses as if the trace ended after it
            nxt[:] = nest.slots
        t0 = time.perf_counter()
        m = w.fill(obj, kind)
        t["walk"] = time.perf_counter() - t0
        if m == 0:
            return 0.0
        o = obj[:m]
        t0 = time.perf_counter()
        if st is None:
            np.bincount(o[kind[:m] == LOAD], minlength=nest.n_objects)
        else:
            _gen.write_flags(kind[:m], write[:m])
            if nu is not None:
                st.next_uses(o, base, nxt, nu[:m])
                t["nu"] = time.perf_counter() - t0
                t0 = time.perf_counter()
            st.feed(o, write[:m], dead[:m], miss[:m], None if nu is None else nu[:m])
        t["feed"] = time.perf_counter() - t0
        base += m
    if policy == "opt":
        return (3 * t["walk"] + 2 * t["nu"] + t["feed"]) / m
    return (t["walk"] + t["feed"]) / m


def stream(nest, policy: str, cost: np.ndarray, capacity: int, chunk: int | None = None) -> Streamed:
    """Replay ``nest`` (a :class:`loopsim.sim.trace.Nest`) under ``policy`` with ``chunk`` requests per
    chunk (default :data:`CHUNK`; for OPT at least enough to keep its record within
    :data:`OPT_RECORD_BYTES`)."""
    from loopsim.sim.trace import Walker
    from loopsim.sim import _gen, opt_chunk

    n_obj = nest.n_objects
    if chunk is None:
        chunk = CHUNK
        if policy == "opt":
            chunk = opt_chunk(chunk, nest.slots, n_obj, OPT_RECORD_BYTES)
    chunk = max(int(chunk), nest.max_events, 1)
    if nest.slots > NOTE_ABOVE:
        per = seconds_per_request(nest, policy, cost, capacity)
        check_work(nest.slots * per, f"{nest.kernel.source or nest.kernel.name}: the {policy} "
                   f"replay of {nest.slots:,} requests", TraceTooLarge)
        print(f"loopsim: note: {nest.kernel.name} replays up to {nest.slots:,} requests under "
              f"{policy}, about {nest.slots * per:,.0f} s on one core ({per * 1e9:.1f} ns per "
              f"request, measured on this machine)", file=sys.stderr, flush=True)
    obj = np.empty(chunk, nest.id_dtype)
    kind = np.empty(chunk, np.int8)

    if policy == "as-written":
        reads = np.zeros(n_obj, np.int64)
        writes = np.zeros(n_obj, np.int64)
        w = Walker(nest)
        total = 0
        while not w.done:
            m = w.fill(obj, kind)
            o, k = obj[:m], kind[:m]
            reads += np.bincount(o[(k == LOAD) | (k == ACC)], minlength=n_obj)
            writes += np.bincount(o[k == STORE], minlength=n_obj)
            total += m
        return Streamed(reads, writes, None, total, w.flops, w.instructions)

    # pass 1 (when needed): checkpoints for OPT, last requests of on-chip intermediates
    need_first = policy == "opt" or nest.temp is not None
    checkpoints, bases, last = [], [], None
    total = 0
    if need_first:
        if nest.temp is not None:
            last = np.full(n_obj, -1, np.int64)
        w = Walker(nest)
        while not w.done:
            if policy == "opt":
                checkpoints.append(w.checkpoint())
                bases.append(total)
            m = w.fill(obj, kind)
            if last is not None:
                _gen.last_index(obj[:m], n_obj, total, last)
            total += m

    from loopsim.sim import State

    record = nu = None
    if policy == "opt":
        # pass 2, chunks in reverse: record[c][o] = first request of o after chunk c (or total)
        record = [None] * len(checkpoints)
        nxt = np.full(n_obj, total, np.int64)
        nu = np.empty(chunk, np.int64)
        st = State("opt", cost, capacity, total)
        w = Walker(nest)
        for c in range(len(checkpoints) - 1, -1, -1):
            record[c] = nxt.copy()
            w.restore(checkpoints[c])
            m = w.fill(obj, kind)
            st.next_uses(obj[:m], bases[c], nxt, nu[:m])
        del nxt, checkpoints
    else:
        st = State("lru", cost, capacity)

    # the replay, forward
    write = np.empty(chunk, np.bool_)
    dead = np.zeros(chunk, np.bool_)
    miss = np.empty(chunk, np.bool_)
    w = Walker(nest)
    base = 0
    c = 0
    while not w.done:
        m = w.fill(obj, kind)
        o = obj[:m]
        _gen.write_flags(kind[:m], write[:m])
        if last is not None:
            _gen.dead_flags(o, base, last, nest.temp, dead[:m])
        if record is not None:
            st.next_uses(o, base, record[c], nu[:m])
            record[c] = None
        st.feed(o, write[:m], dead[:m], miss[:m], None if nu is None else nu[:m])
        base += m
        c += 1
    rep = st.result(cost)
    return Streamed(rep.fetches, rep.writebacks, rep.peak_cost, base, w.flops, w.instructions)
