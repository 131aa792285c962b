"""Jitted passes that prepare traces for replay (flat integer and bool arrays only)."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def densify(obj, size, top):
    """Dense ids (rank of each id among the distinct ids) and the size of each dense object, in
    two passes over the requests. ``obj`` holds ids in [0, top], ``size`` bytes per request.
    Returns (dense int64[n], object_size int64[n_objects], first request whose size differs from
    its object's first size, or -1)."""
    n = obj.size
    present = np.zeros(top + 1, dtype=np.bool_)
    for i in range(n):
        present[obj[i]] = True
    rank = np.empty(top + 1, dtype=np.int64)
    r = 0
    for v in range(top + 1):
        if present[v]:
            rank[v] = r
            r += 1
        else:
            rank[v] = -1
    dense = np.empty(n, dtype=np.int64)
    osize = np.zeros(r, dtype=np.int64)
    bad = -1
    for i in range(n):
        d = rank[obj[i]]
        dense[i] = d
        s = np.int64(size[i])
        if osize[d] == 0:
            osize[d] = s
        elif osize[d] != s and bad < 0:
            bad = i
    return dense, osize, bad


@njit(cache=True, nogil=True)
def _slot(v, bits):
    # Fibonacci hashing: the top bits of v times 2**64 / golden ratio
    return np.int64((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))


@njit(cache=True, nogil=True)
def _grow(table, bits):
    """The open-addressing table at twice the size, every entry re-placed."""
    nb = bits + 1
    cap = 1 << nb
    t2 = np.full((cap, 4), -1, np.int64)
    for j in range(table.shape[0]):
        if table[j, 1] >= 0:
            h = _slot(table[j, 0], nb)
            while t2[h, 1] >= 0:
                h = (h + 1) & (cap - 1)
            t2[h, 0] = table[j, 0]
            t2[h, 1] = table[j, 1]
            t2[h, 2] = table[j, 2]
    return t2, nb


@njit(cache=True, nogil=True)
def hash_densify(obj, size, dense):
    """Dense ids for arbitrary (sparse, e.g. hashed 64-bit) ids in O(n): one pass through an
    open-addressing hash table gives each distinct id a slot in first-seen order, then the
    distinct ids (not the requests) are sorted so that ``dense`` holds each id's rank among the
    distinct ids, as np.unique(return_inverse=True) gives. Fills ``dense`` (int32 or int64[n]);
    returns (object_size int64[n_objects], first request whose size differs from its object's
    first size, or -1).

    A table entry is one 32-byte row (id, slot, size, -): a lookup touches one cache line. The
    table doubles when half full, so it stays about the size of the distinct ids, not of n.
    """
    n = obj.shape[0]
    bits = 12
    table = np.full((1 << bits, 4), -1, np.int64)
    mask = (1 << bits) - 1
    uniq = np.empty(1024, np.int64)
    u = 0
    bad = -1
    for i in range(n):
        v = np.int64(obj[i])
        h = _slot(v, bits)
        while table[h, 1] >= 0 and table[h, 0] != v:
            h = (h + 1) & mask
        if table[h, 1] < 0:
            if 2 * (u + 1) > mask + 1:  # keep the load at most one half
                table, bits = _grow(table, bits)
                mask = (1 << bits) - 1
                h = _slot(v, bits)
                while table[h, 1] >= 0:
                    h = (h + 1) & mask
            if u == uniq.shape[0]:
                uniq = np.concatenate((uniq, np.empty(u, np.int64)))
            table[h, 0] = v
            table[h, 1] = u
            table[h, 2] = size[i]
            uniq[u] = v
            u += 1
        dense[i] = table[h, 1]
        if size[i] != table[h, 2] and bad < 0:
            bad = i
    order = np.argsort(uniq[:u])
    rank = np.empty(u, np.int64)
    for r in range(u):
        rank[order[r]] = r
    osize = np.empty(u, np.int64)
    for j in range(mask + 1):
        if table[j, 1] >= 0:
            osize[rank[table[j, 1]]] = table[j, 2]
    for i in range(n):
        dense[i] = rank[dense[i]]
    return osize, bad
