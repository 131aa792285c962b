"""A kernel calling an NKI instruction loopsim does not model (for the error test)."""

import nki.isa as nisa
import nki.language as nl


def uses_dropout(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, :])
    d = nisa.dropout(t, prob=0.1)
    nl.store(out[0:128, :], value=d)
    return out
