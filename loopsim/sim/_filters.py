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
