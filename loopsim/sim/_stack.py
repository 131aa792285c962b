"""Jitted Mattson stack-distance pass. Private: call it through :mod:`loopsim.sim.stack`, which validates.

Only ``@njit(cache=True)`` functions over flat int64 / bool arrays, like :mod:`loopsim.sim._kernels`.
The kernels trust their inputs (dense ids in range, non-negative costs, sorted capacities).
"""

import numpy as np
from loopsim.sim._jit import njit

_JIT = dict(cache=True, nogil=True)

#: stack distance of a first access (a cold miss at every capacity)
COLD = np.iinfo(np.int64).max


@njit(**_JIT)
def stack_distance_kernel(obj, cost, n_objects):
    """Byte-weighted LRU stack distance of every request, one pass, O(n log n_objects).

    The distance of request i to object o is cost[o] plus the cost of every *distinct* other object
    requested since the previous request to o; ``COLD`` when o was never requested before. Under
    LRU with capacity C >= every cost, request i hits iff distance <= C (the resident set is always
    the longest prefix of the recency stack that fits).

    A Fenwick tree over time slots holds each object's cost at the slot of its latest request, so
    the distinct cost requested after slot p is ``total - prefix(p)``. Only the latest slot of each
    object is live, so the slots are renumbered (order kept) whenever they run out: the tree stays
    about twice the number of objects, small enough to stay in cache, instead of one slot per
    request.
    """
    n = obj.shape[0]
    slots = 2 * n_objects + 1024
    tree = np.zeros(slots + 1, np.int64)
    pos = np.full(n_objects, -1, np.int64)
    owner = np.full(slots, -1, np.int64)  # object whose latest request sits in a slot
    dist = np.empty(n, np.int64)
    total = 0
    t = 0
    for i in range(n):
        if t == slots:
            t = _compact(tree, pos, owner, cost, slots)
        o = obj[i]
        c = cost[o]
        p = pos[o]
        if p >= 0:
            s = 0
            j = p + 1
            while j > 0:
                s += tree[j]
                j -= j & (-j)
            dist[i] = total - s + c
            j = p + 1
            while j <= slots:
                tree[j] -= c
                j += j & (-j)
            owner[p] = -1
        else:
            dist[i] = COLD
            total += c
        j = t + 1
        while j <= slots:
            tree[j] += c
            j += j & (-j)
        pos[o] = t
        owner[t] = o
        t += 1
    return dist


@njit(**_JIT)
def _compact(tree, pos, owner, cost, slots):
    """Move the live slots to 0..L-1 in order and rebuild the tree; returns L."""
    k = 0
    for s in range(slots):
        o = owner[s]
        if o >= 0:
            owner[s] = -1
            owner[k] = o
            pos[o] = k
            k += 1
    tree[:] = 0
    for s in range(k):
        tree[s + 1] = cost[owner[s]]
    for j in range(1, slots + 1):  # linear-time Fenwick build
        parent = j + (j & (-j))
        if parent <= slots:
            tree[parent] += tree[j]
    return k


@njit(**_JIT)
def _bin(caps, d):
    """Number of capacities strictly below d: request with distance d misses at caps[:k]."""
    return np.searchsorted(caps, d, side="left")


@njit(**_JIT)
def curve_kernel(obj, write, dist, size, group, caps, n_groups):
    """Per sorted capacity: misses, miss bytes, and per group fetch / write-back counts and bytes.

    Accumulates difference arrays over capacity indices (one extra slot) and returns them
    integrated. Write-backs: after a write, an object stays dirty at capacity C while all its later
    requests hit, i.e. while C >= M, the largest distance since that write (0 at the write). It is
    written back before its next request when that request misses (C < d), so each pair of
    consecutive requests adds one write-back over capacities [M, d); a dirty object left at the end
    is flushed once for C >= M.
    """
    n = obj.shape[0]
    k = caps.shape[0]
    n_obj = size.shape[0]
    misses = np.zeros(k + 1, np.int64)
    miss_bytes = np.zeros(k + 1, np.int64)
    fetches = np.zeros((n_groups, k + 1), np.int64)
    fetch_bytes = np.zeros((n_groups, k + 1), np.int64)
    wbs = np.zeros((n_groups, k + 1), np.int64)
    wb_bytes = np.zeros((n_groups, k + 1), np.int64)
    dirty_from = np.full(n_obj, -1, np.int64)  # M per object; -1: not written since last seen clean
    for i in range(n):
        o = obj[i]
        d = dist[i]
        g = group[o]
        s = size[o]
        hi = _bin(caps, d)  # misses at capacity indices [0, hi)
        misses[0] += 1
        misses[hi] -= 1
        miss_bytes[0] += s
        miss_bytes[hi] -= s
        if not write[i]:
            fetches[g, 0] += 1
            fetches[g, hi] -= 1
            fetch_bytes[g, 0] += s
            fetch_bytes[g, hi] -= s
        m = dirty_from[o]
        if m >= 0:
            lo = _bin(caps, m)
            if lo < hi:
                wbs[g, lo] += 1
                wbs[g, hi] -= 1
                wb_bytes[g, lo] += s
                wb_bytes[g, hi] -= s
        if write[i]:
            dirty_from[o] = 0
        elif m >= 0:
            dirty_from[o] = max(m, d)
    for o in range(n_obj):
        m = dirty_from[o]
        if m >= 0:
            lo = _bin(caps, m)
            g = group[o]
            wbs[g, lo] += 1
            wb_bytes[g, lo] += size[o]
    return (np.cumsum(misses)[:k], np.cumsum(miss_bytes)[:k], _cum2(fetches, k),
            _cum2(fetch_bytes, k), _cum2(wbs, k), _cum2(wb_bytes, k))


@njit(**_JIT)
def _cum2(a, k):
    out = np.empty((a.shape[0], k), np.int64)
    for g in range(a.shape[0]):
        s = 0
        for j in range(k):
            s += a[g, j]
            out[g, j] = s
    return out
