"""Jitted passes that prepare a kernel trace for replay (flat int64/int8 arrays only)."""

import numpy as np
from numba import njit

_ACC = 4
_STORE = 2


@njit(cache=True, nogil=True)
def keep_partial_sums(obj, kind, n_objects):
    """bool[n]: False for an accumulation (kind ACC) that does not follow a store of the same
    object; True for everything else. One forward pass with a last-kind array per object."""
    n = obj.size
    keep = np.ones(n, dtype=np.bool_)
    last = np.zeros(n_objects, dtype=np.int8)  # 0 none, 1 acc, 2 store
    for i in range(n):
        k = kind[i]
        o = obj[i]
        if k == _ACC:
            if last[o] != 2:
                keep[i] = False
            last[o] = 1
        elif k == _STORE:
            last[o] = 2
    return keep
