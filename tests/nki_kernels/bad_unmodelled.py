"""A kernel calling an NKI instruction loopsim does not model, whose output shape it cannot know
(no dst=, not an instruction that keeps its input's shape): the trace stops (the error test)."""

import nki.isa as nisa
import nki.language as nl


def uses_find_index(x):
    out = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, :])
    d = nisa.nc_find_index8(data=t, vals=t[:, 0:8])
    nl.store(out[0:128, :], value=d)
    return out
