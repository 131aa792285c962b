"""Kernels for the timeline's costs: a reduction written straight out (the shape of the
average-pool tutorial: the sum has no op statement of its own, so its engine work is charged at
the store as loopsim's ``EngineWork``), and a DMA transpose beside a plain copy of the same bytes.
Shapes in the docstrings; the tests hold the hand counts."""

import nki
import nki.isa as nisa
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


@nki.jit
def transposed_copy(x):
    """out = x.T for x of K x P in HBM: one DMA transpose into a P x K SBUF tile (K on the free
    axis), one store."""
    K, P = x.shape
    out = nl.ndarray((P, K), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nisa.dma_transpose(x)
    nl.store(out, value=t)
    return out


@nki.jit
def plain_copy(x):
    """out = x for x of P x K in HBM: one load into a P x K SBUF tile, one store (the same bytes
    as ``transposed_copy``, moved by a plain DMA)."""
    P, K = x.shape
    out = nl.ndarray((P, K), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t)
    return out
