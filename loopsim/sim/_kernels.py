"""Jitted replay kernels. Private: call them only through :mod:`loopsim.sim`, which validates.

Everything here is an ``@njit`` function over flat, contiguous int64 / bool arrays and plain
integers: no Python objects, jitclasses or typed containers cross the boundary, so each kernel is
compiled once for one signature and then loaded from numba's on-disk cache (``cache=True``).
The kernels trust their inputs (dense ids in range, non-negative costs, capacity > 0); the
wrapper checks them.

Conventions shared with the plain-Python oracle in ``tests/naive.py``:

* every missed object is admitted, evicting until it fits; an object whose cost exceeds the
  capacity is never admitted (it misses every time, evicts nothing, and a write to it goes
  straight to HBM, counted as one write-back of that object);
* a write request marks the object dirty (on a miss it is admitted without a fetch); evicting a
  dirty object writes it back once; at the end every dirty resident is written back once;
* OPT evicts the resident whose next use is farthest away; "never used again" is next use = n;
  among equal next uses (which only happens at n) the smaller object id is evicted first.
* a request flagged ``dead`` frees its object once served (hit or admitted miss): no write-back,
  however dirty. It marks the last use of an on-chip intermediate that nothing stores.

These run as ordinary Python under ``NUMBA_DISABLE_JIT=1`` (the test suite does this once).
"""

import numpy as np
from loopsim.sim._jit import njit

# One set of flags for every kernel. Integer counting only: no fastmath needed. nogil lets a
# caller replay several traces from threads.
_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def next_use_kernel(obj, base, last, out):
    """``out[i]``: the time of the next request of the same object (request ``base + i``'s
    successor), from one reverse pass. ``last`` (int64[n_objects]) holds, per object, the time
    of its first request after this chunk (the total request count if none); it is left holding
    the first request at or after ``base``."""
    for i in range(obj.shape[0] - 1, -1, -1):
        o = obj[i]
        out[i] = last[o]
        last[o] = base + i


@njit(**_JIT, inline="always")  # inlined by numba: no compile of its own on a cold start
def _lru_unlink(o, link, head, tail):
    """Take resident ``o`` out of the recency list; returns the new (head, tail)."""
    p = link[2 * o]
    q = link[2 * o + 1]
    if p != -1:
        link[2 * p + 1] = q
    else:
        head = q
    if q != -1:
        link[2 * q] = p
    else:
        tail = p
    link[2 * o] = -1
    link[2 * o + 1] = -1
    return head, tail


@njit(**_JIT)
def lru_kernel(obj, write, cost, capacity, dead, miss, writebacks, miss_count, fetch_count,
               link, resident, dirty, st):
    """LRU replay of one chunk of requests, resuming from and leaving its state in the arrays.

    Fills ``miss`` (bool[n]) and adds, per object (int64[n_objects]), ``writebacks``,
    ``miss_count`` (misses) and ``fetch_count`` (read misses). Residents form a doubly linked
    list over dense ids (``link[2 * o]`` the previous, ``link[2 * o + 1]`` the next; -1 ends it:
    an object's two links share a cache line), most recently used at the head, eviction from the
    tail: O(1) per request. ``st`` = (head, tail, occupancy, peak). ``dead`` (bool[n]):
    after request i its object is freed without a write-back (an on-chip intermediate after its
    last use). The caller flushes dirty residents after the last chunk.
    """
    n = obj.shape[0]
    head = st[0]
    tail = st[1]
    occ = st[2]
    peak = st[3]
    for i in range(n):
        o = obj[i]
        w = write[i]
        if resident[o]:
            miss[i] = False
            if dead[i]:
                head, tail = _lru_unlink(o, link, head, tail)
                resident[o] = False
                dirty[o] = False
                occ -= cost[o]
                continue
            if w:
                dirty[o] = True
            if head != o:
                # unlink o (it is not the head, so its previous is not -1) and push it in front
                p = link[2 * o]
                q = link[2 * o + 1]
                link[2 * p + 1] = q
                if q != -1:
                    link[2 * q] = p
                else:
                    tail = p
                link[2 * o] = -1
                link[2 * o + 1] = head
                link[2 * head] = o
                head = o
            continue
        miss[i] = True
        miss_count[o] += 1
        if not w:
            fetch_count[o] += 1
        c = cost[o]
        if c > capacity:
            if w:
                writebacks[o] += 1
            continue
        # compare as c > capacity - occ so that occ + c cannot overflow
        while c > capacity - occ:
            if tail == -1:  # cannot happen while occ tracks the residents; never spin on it
                raise RuntimeError("lru_kernel: occupancy > 0 with no resident left to evict")
            v = tail
            tail = link[2 * v]
            if tail != -1:
                link[2 * tail + 1] = -1
            else:
                head = -1
            link[2 * v] = -1
            resident[v] = False
            occ -= cost[v]
            if dirty[v]:
                writebacks[v] += 1
                dirty[v] = False
        resident[o] = True
        dirty[o] = w
        link[2 * o] = -1
        link[2 * o + 1] = head
        if head != -1:
            link[2 * head] = o
        else:
            tail = o
        head = o
        occ += c
        if occ > peak:
            peak = occ
        if dead[i]:
            head, tail = _lru_unlink(o, link, head, tail)
            resident[o] = False
            dirty[o] = False
            occ -= c
    st[0] = head
    st[1] = tail
    st[2] = occ
    st[3] = peak


# OPT's heap holds one int64 per entry, (next use << shift) | (mask - object), so that a larger
# key is a later next use and, among equal next uses, a smaller id: one integer comparison
# orders entries exactly as the eviction rule wants. The wrapper checks that n << shift fits.
# The heap is 4-ary: half the depth of a binary heap, and a node's four children share a cache
# line, which matters for the pops (root to leaf) that every eviction makes.


@njit(**_JIT)
def _sift_down(h, size, k, key):
    """Place ``key`` at hole ``k``, moving larger children up; the hole ends where key belongs."""
    while True:
        c = 4 * k + 1
        if c >= size:
            break
        best = c
        bk = h[c]
        end = min(c + 4, size)
        for j in range(c + 1, end):
            v = h[j]
            if v > bk:
                bk = v
                best = j
        if key >= bk:
            break
        h[k] = bk
        k = best
    h[k] = key


@njit(**_JIT)
def _heap_push(h, size, key):
    k = size
    while k > 0:
        parent = (k - 1) >> 2
        pk = h[parent]
        if pk >= key:
            break
        h[k] = pk
        k = parent
    h[k] = key
    return size + 1


@njit(**_JIT)
def _heap_pop(h, size):
    """Remove the top entry (the caller has read it); returns the new size."""
    size -= 1
    if size > 0:
        _sift_down(h, size, 0, h[size])
    return size


@njit(**_JIT)
def _heap_compact(h, size, resident, cur, shift):
    """Drop stale entries (keep those of residents whose key matches ``cur``), re-heapify; returns the size."""
    mask = (1 << shift) - 1
    k = 0
    for j in range(size):
        key = h[j]
        o = mask - (key & mask)
        if resident[o] and cur[o] == key >> shift:
            h[k] = key
            k += 1
    for start in range((k - 2) // 4, -1, -1):  # Floyd's bottom-up heapify
        _sift_down(h, k, start, h[start])
    return k


@njit(**_JIT)
def opt_kernel(obj, write, cost, capacity, dead, nu, shift, miss, writebacks, miss_count, fetch_count,
               cur, resident, dirty, h, st):
    """Belady farthest-next-use replay of one chunk; ``nu`` holds each request's next-use time
    (:func:`next_use_kernel`). State in the arrays: ``cur``, ``resident``, ``dirty`` per object,
    the heap ``h`` (room for 2 * n_objects + 128 keys) and ``st`` = (heap size, residents,
    occupancy, peak). Outputs as :func:`lru_kernel`.

    ``shift`` is the bit length of ``n_objects`` (see the key packing above). Max-heap of keys
    with lazy deletion: every access pushes a fresh key and records the object's next use in
    ``cur``; a popped key whose object is no longer resident, or whose next use has moved on
    since, is stale and skipped. O(log n) per request.

    A superseded key holds a past time, below every live key, so it sinks and is rarely popped:
    left alone the heap would grow to n entries and every operation would wander through cold
    memory. So when it holds more than twice the residents (plus slack) it is rebuilt from its
    live entries, O(size) amortised over the pushes that grew it; the heap stays within a few
    times the resident count, in cache (and within the room the caller gives it).
    """
    n = obj.shape[0]
    mask = (1 << shift) - 1
    size = st[0]
    n_resident = st[1]
    occ = st[2]
    peak = st[3]
    for i in range(n):
        if size > 2 * n_resident + 64:
            size = _heap_compact(h, size, resident, cur, shift)
        o = obj[i]
        w = write[i]
        if resident[o]:
            miss[i] = False
            if dead[i]:  # its heap key goes stale with it
                resident[o] = False
                dirty[o] = False
                n_resident -= 1
                occ -= cost[o]
                continue
            if w:
                dirty[o] = True
            cur[o] = nu[i]
            size = _heap_push(h, size, (nu[i] << shift) | (mask - o))
            continue
        miss[i] = True
        miss_count[o] += 1
        if not w:
            fetch_count[o] += 1
        c = cost[o]
        if c > capacity:
            if w:
                writebacks[o] += 1
            continue
        while c > capacity - occ:
            # occ > 0 here, so some resident has a live key in the heap
            if size == 0:
                raise RuntimeError("opt_kernel: occupancy > 0 with no resident left to evict")
            key = h[0]
            size = _heap_pop(h, size)
            v = mask - (key & mask)
            if not resident[v] or cur[v] != key >> shift:
                continue
            resident[v] = False
            n_resident -= 1
            occ -= cost[v]
            if dirty[v]:
                writebacks[v] += 1
                dirty[v] = False
        occ += c
        if occ > peak:
            peak = occ
        if dead[i]:  # admitted and served, then freed at once: never enters the heap
            occ -= c
            continue
        resident[o] = True
        n_resident += 1
        dirty[o] = w
        cur[o] = nu[i]
        size = _heap_push(h, size, (nu[i] << shift) | (mask - o))
    st[0] = size
    st[1] = n_resident
    st[2] = occ
    st[3] = peak
