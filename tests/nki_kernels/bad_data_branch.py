"""A kernel whose control flow depends on tensor values (for the error test)."""

import nki.language as nl


def branches_on_data(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, :])
    if nl.max(t, axis=1) > 0:
        t = nl.exp(t)
    nl.store(out[0:128, :], value=t)
    return out


def branches_on_index(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        if i == 0:
            t = nl.exp(t)
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


def loads_differ_by_index(x):
    """Iteration 0 loads a second tile that the others do not: the iterations move different
    tiles, so the loop stays unrolled (statements at constant offsets)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        if i == 0:
            t = nl.load(x[128:256, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out
