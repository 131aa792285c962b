"""Jitted passes that prepare traces for replay (flat integer and bool arrays only).

Both passes give each request its object's rank among the distinct ids (what
``np.unique(obj, return_inverse=True)`` gives) and check, on the way, that an object is always
requested with one size. Like the kernels, this module also loads as a plain-Python twin
(:mod:`loopsim.sim._jit`) for short traces; there the hash's multiply overflows numpy's uint64 on
purpose, so call it under ``np.errstate(over="ignore")``.
"""

import numpy as np

from loopsim.sim._jit import njit

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def densify(obj, size, top, dense):
    """Ranks of ids in [0, top] by a presence map (no hashing, no sort): fills ``dense`` (int32 or
    int64[n]) and returns (object_size int64[n_objects], first request whose size differs from
    its object's first size, or -1). Three sequential passes; the maps hold top + 1 entries."""
    n = obj.shape[0]
    rank = np.zeros(top + 1, dtype=np.int64)  # 1 where present, then the rank + 1
    for i in range(n):
        rank[obj[i]] = 1
    r = 0
    for v in range(top + 1):
        if rank[v]:
            r += 1
            rank[v] = r
    osize = np.zeros(r, dtype=np.int64)
    bad = -1
    for i in range(n):
        d = rank[obj[i]] - 1
        dense[i] = d
        s = np.int64(size[i])
        o = osize[d]
        if o == 0:
            osize[d] = s
        elif o != s and bad < 0:
            bad = i
    return osize, bad


@njit(inline="always")
def _mix(v):
    """A 64-bit mixer (murmur3's finaliser, first half): every input bit moves the top bits, so
    ids that are themselves multiples of a constant (Fibonacci-hashed ids) do not cluster."""
    x = np.uint64(v)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    return x


@njit(**_JIT)
def _hash_pass(obj, size, dense, table, uniq, osz, i, u, bits):
    """Look up (or insert) requests ``i ...`` in the open-addressing table (2**bits slots of two
    int64, id then number, number -1 = empty): ``dense[i]`` gets the id's first-seen number and
    a new id's first size goes to ``osz``. Stops at the end, or before an insert would fill the
    table past half or overflow ``uniq``/``osz`` (the caller grows them and resumes); returns
    (next request, distinct ids so far). No array is reassigned here, so the loop keeps its
    pointers in registers."""
    n = obj.shape[0]
    mask = (1 << bits) - 1
    limit = min(1 << (bits - 1), uniq.shape[0])
    shift = np.uint64(64 - bits)
    while i < n:
        v = np.int64(obj[i])
        h = np.int64(_mix(v) >> shift)
        while True:  # a slot is one 16-byte pair: one cache line per probe
            k = table[2 * h]
            d = table[2 * h + 1]
            if k == v or d < 0:
                break
            h = (h + 1) & mask
        if d < 0:
            if u == limit:
                break
            table[2 * h] = v
            table[2 * h + 1] = u
            uniq[u] = v
            osz[u] = np.int64(size[i])
            d = u
            u += 1
        dense[i] = d
        i += 1
    return i, u


@njit(**_JIT)
def hash_densify(obj, size, dense):
    """Ranks of arbitrary (sparse, e.g. hashed 64-bit) ids in O(n): one pass through an
    open-addressing table numbers each distinct id in first-seen order, the distinct ids (not the
    requests) are sorted, and a second pass turns numbers into ranks and checks sizes. Fills
    ``dense`` (int32 or int64[n]); returns (object_size int64[n_objects], first request whose size
    differs from its object's first size, or -1).

    The table holds (id, number) pairs and is at most half full: 16 bytes per slot, 2 to 4 slots
    per distinct id, so for ~10^5 distinct ids it stays within a few MiB, in cache. It doubles
    as the distinct ids grow, so it stays about their size, not n's.
    """
    n = obj.shape[0]
    bits = 12
    table = np.full(2 << bits, -1, np.int64)
    uniq = np.empty(1024, np.int64)
    osz = np.empty(1024, np.int64)
    i = 0
    u = 0
    while True:
        i, u = _hash_pass(obj, size, dense, table, uniq, osz, i, u, bits)
        if i == n:
            break
        if u == uniq.shape[0]:
            uniq = np.concatenate((uniq, np.empty(u, np.int64)))
            osz = np.concatenate((osz, np.empty(u, np.int64)))
        if 2 * u >= 1 << bits:
            bits += 1
            table = np.full(2 << bits, -1, np.int64)
            mask = (1 << bits) - 1
            for j in range(u):
                h = np.int64(_mix(uniq[j]) >> np.uint64(64 - bits))
                while table[2 * h + 1] >= 0:
                    h = (h + 1) & mask
                table[2 * h] = uniq[j]
                table[2 * h + 1] = j
    order = np.argsort(uniq[:u])
    osize = np.empty(u, np.int64)
    rank_size = np.empty(2 * u, np.int64)  # per first-seen number: (rank, first size), one line
    for r in range(u):
        j = order[r]
        osize[r] = osz[j]
        rank_size[2 * j] = r
        rank_size[2 * j + 1] = osz[j]
    bad = -1
    for i in range(n):
        d = dense[i]
        dense[i] = rank_size[2 * d]
        if np.int64(size[i]) != rank_size[2 * d + 1] and bad < 0:
            bad = i
    return osize, bad
