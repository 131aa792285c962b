"""A reduction written straight out, the shape of the average-pool tutorial: the sum has no op
statement of its own, so its engine work is charged at the store (loopsim's ``EngineWork``).
Shapes in the docstrings; the tests hold the hand counts."""

import nki
import nki.language as nl


@nki.jit
def row_mean(x):
    """out[p, 0] = mean of x[p, :] for one tile of P x C (one load, the sum and the divide on the
    Vector Engine, one store)."""
    P, C = x.shape
    out = nl.ndarray((P, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nl.sum(t, axis=[1], keepdims=True) / C
    nl.store(out, value=s)
    return out
