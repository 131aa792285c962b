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

from loopsim.ir.kernel import ACC, LOAD, STORE

#: requests per chunk (LRU, as-written): arrays of a few tens of MiB, reused
CHUNK = 1 << 22
#: bytes OPT may spend on its per-chunk next-use record; chunks grow to stay within it
OPT_RECORD_BYTES = 512 << 20
#: a trace this long gets a one-line note on stderr with the expected time
NOTE_ABOVE = 1 << 28
#: rough single-core cost per request slot (generation + replay), s: 16384^3 matmul, 32^3 tiles
#: (0.94 G slots) on a 2-vCPU EPYC VM, 2026-12-01 (docs/performance.md): lru 10.9 s, opt 30.8 s
_SECONDS_PER_REQUEST = {"as-written": 4e-9, "lru": 12e-9, "opt": 33e-9}


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
        secs = nest.slots * _SECONDS_PER_REQUEST[policy]
        print(f"loopsim: note: {nest.kernel.name} replays up to {nest.slots:,} requests under "
              f"{policy}, about {secs:,.0f} s on one core", file=sys.stderr, flush=True)
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
